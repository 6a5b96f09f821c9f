package testbed

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// vswitchd is an ovsdb-server and ovs-vswitchd 3.1 pair running in a
// temporary folder, the baseline the benchmarks compare against.
type vswitchd struct {
	dir string
	env []string
}

// startVswitchd starts both daemons as children of the test and stops them,
// removing the kernel datapath, in tb.Cleanup.
func startVswitchd(t *testing.T) *vswitchd {
	t.Helper()
	WaitUptime(t, VswitchdMinUptime)
	dir := t.TempDir()
	v := &vswitchd{dir: dir, env: append(os.Environ(),
		"OVS_RUNDIR="+dir, "OVS_LOGDIR="+dir, "OVS_DBDIR="+dir)}
	db := filepath.Join(dir, "conf.db")
	if out, err := v.cmd("ovsdb-tool", "create", db, "/usr/share/openvswitch/vswitch.ovsschema").CombinedOutput(); err != nil {
		t.Fatalf("ovsdb-tool create: %v: %s", err, out)
	}
	sock := filepath.Join(dir, "db.sock")
	v.daemon(t, "ovsdb-server", db, "--remote=punix:"+sock,
		"--unixctl="+filepath.Join(dir, "ovsdb-server.ctl"), "--log-file="+filepath.Join(dir, "ovsdb-server.log"))
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, err := os.Stat(sock); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("ovsdb-server made no %s within 10s", sock)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if _, err := v.run("ovs-vsctl", "--no-wait", "init"); err != nil {
		t.Fatal(err)
	}
	v.daemon(t, "ovs-vswitchd", "unix:"+sock,
		"--unixctl="+filepath.Join(dir, "ovs-vswitchd.ctl"), "--log-file="+filepath.Join(dir, "ovs-vswitchd.log"))
	t.Cleanup(func() {
		// --cleanup removes the kernel datapath too; without it the
		// datapath outlives the daemon.
		v.run("ovs-appctl", "-t", filepath.Join(dir, "ovs-vswitchd.ctl"), "exit", "--cleanup")
		if t.Failed() {
			log, _ := os.ReadFile(filepath.Join(dir, "ovs-vswitchd.log"))
			t.Logf("ovs-vswitchd.log:\n%s", log)
		}
	})
	return v
}

func (v *vswitchd) cmd(name string, args ...string) *exec.Cmd {
	c := exec.Command(name, args...)
	c.Env = v.env
	return c
}

// run runs an ovs tool against these daemons and returns its combined
// output.
func (v *vswitchd) run(name string, args ...string) (string, error) {
	if name == "ovs-vsctl" {
		args = append([]string{"--db=unix:" + filepath.Join(v.dir, "db.sock"), "--timeout=30"}, args...)
	}
	out, err := v.cmd(name, args...).CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("%s %s: %w: %s", name, strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return string(out), nil
}

// daemon starts a child that runs until the test's cleanup kills it.
func (v *vswitchd) daemon(t *testing.T, name string, args ...string) {
	t.Helper()
	c := v.cmd(name, args...)
	if err := c.Start(); err != nil {
		t.Fatalf("start %s: %v", name, err)
	}
	t.Cleanup(func() {
		c.Process.Kill()
		c.Wait()
	})
}

var lostRE = regexp.MustCompile(`lookups: hit:(\d+) missed:(\d+) lost:(\d+)`)

// TestIntegrationVswitchdBaseline runs ovs-vswitchd 3.1 in the bed and
// pings through it between two namespaces: the benchmarks' baseline must
// work here, and WaitUptime must keep it from losing its upcalls.
func TestIntegrationVswitchdBaseline(t *testing.T) {
	Require(t)
	if _, err := exec.LookPath("ovs-vswitchd"); err != nil {
		t.Fatalf("ovs-vswitchd not installed (scripts/install-deps --test installs it): %v", err)
	}
	v := startVswitchd(t)
	a, b := NewNetns(t), NewNetns(t)
	Veth(t, "gvsvsa", a, "eth0", "10.98.0.1/24")
	Veth(t, "gvsvsb", b, "eth0", "10.98.0.2/24")
	if _, err := v.run("ovs-vsctl", "add-br", "gvsbr0",
		"--", "add-port", "gvsbr0", "gvsvsa", "--", "add-port", "gvsbr0", "gvsvsb"); err != nil {
		t.Fatal(err)
	}

	if out, err := a.Exec("ping", "-c", "3", "-i", "0.2", "-W", "2", "10.98.0.2"); err != nil {
		t.Errorf("ping through ovs-vswitchd: %v\n%s", err, out)
	}
	show, err := v.run("ovs-dpctl", "show")
	if err != nil {
		t.Fatal(err)
	}
	m := lostRE.FindStringSubmatch(show)
	if m == nil {
		t.Fatalf("no lookup counters in ovs-dpctl show:\n%s", show)
	}
	t.Logf("datapath lookups: hit %s, missed %s, lost %s", m[1], m[2], m[3])
	if m[2] == "0" {
		t.Errorf("no misses: the pings did not reach the datapath")
	}
	if m[3] != "0" {
		t.Errorf("%s upcalls lost: ovs-vswitchd has no upcall handler\n%s", m[3], show)
	}
	flows, err := v.run("ovs-dpctl", "dump-flows")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(flows, "actions:") {
		t.Errorf("ovs-vswitchd installed no datapath flow:\n%s", flows)
	}
}
