package vswitchd

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/govswitch/govswitch/internal/testbed"
	"github.com/govswitch/govswitch/unixctl"
)

const (
	ovsCtl    = "/usr/share/openvswitch/scripts/ovs-ctl"
	br0Module = "bridge"
)

// TestIntegrationOVSCtl is govswitchd on a Debian box as the service
// starts it: Debian's own ovs-ctl (what `systemctl start
// openvswitch-switch` runs) starts ovsdb-server, then govswitchd in
// ovs-vswitchd's place with ovs-vswitchd's command line (--detach
// --monitor --pidfile --log-file --mlockall -vconsole:emer -vsyslog:err
// -vfile:info unix:DB), reports it running, and stops it. ovs-ctl finds
// ovs-vswitchd on PATH with $OVS_SBINDIR first; a symlink named
// ovs-vswitchd to this test binary is govswitchd there (TestMain). Every
// directory ovs-ctl writes (OVS_RUNDIR, OVS_LOGDIR, OVS_DBDIR,
// OVS_SYSCONFDIR, --daemon-cwd) is in the test's temporary directory: the
// bed's / is the host's.
func TestIntegrationOVSCtl(t *testing.T) {
	testbed.Require(t)
	if _, err := os.Stat(ovsCtl); err != nil {
		t.Fatalf("Debian's ovs-ctl: %v (apt-get install openvswitch-switch)", err)
	}
	dir := t.TempDir()
	env := os.Environ()
	for k, sub := range map[string]string{"OVS_RUNDIR": "run", "OVS_LOGDIR": "log", "OVS_DBDIR": "db",
		"OVS_SYSCONFDIR": "etc", "OVS_SBINDIR": "sbin"} {
		p := filepath.Join(dir, sub)
		if err := os.MkdirAll(p, 0o755); err != nil {
			t.Fatal(err)
		}
		env = append(env, k+"="+p)
	}
	if err := os.MkdirAll(filepath.Join(dir, "etc", "openvswitch"), 0o755); err != nil {
		t.Fatal(err)
	}
	self, _ := filepath.Abs(os.Args[0])
	if err := os.Symlink(self, filepath.Join(dir, "sbin", "ovs-vswitchd")); err != nil {
		t.Fatal(err)
	}
	run := func(name string, args ...string) (string, error) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, name, args...)
		cmd.Env, cmd.Dir = env, dir
		start := time.Now()
		out, err := cmd.CombinedOutput()
		t.Logf("%s %s (%v, %v):\n%s", filepath.Base(name), strings.Join(args, " "),
			time.Since(start).Round(time.Millisecond), err, out)
		return string(out), err
	}
	ctl := func(args ...string) (string, error) {
		return run(ovsCtl, append([]string{"--daemon-cwd=" + dir, "--system-id=random"}, args...)...)
	}
	rundir, logdir := filepath.Join(dir, "run"), filepath.Join(dir, "log")
	pidfile := filepath.Join(rundir, "ovs-vswitchd.pid")
	const br = "brctl0"
	t.Cleanup(func() {
		ctl("stop")
		for _, d := range []string{"ovs-vswitchd", "ovsdb-server"} {
			if b, err := os.ReadFile(filepath.Join(rundir, d+".pid")); err == nil {
				if pid, _ := strconv.Atoi(strings.TrimSpace(string(b))); pid > 0 {
					syscall.Kill(pid, syscall.SIGKILL)
				}
			}
		}
		run("ovs-dpctl", "del-dp", "ovs-system")
		if t.Failed() {
			log, _ := os.ReadFile(filepath.Join(logdir, "ovs-vswitchd.log"))
			t.Logf("ovs-vswitchd.log:\n%s", log)
		}
	})

	if out, err := ctl("--no-ovs-vswitchd", "start"); err != nil {
		t.Fatalf("ovs-ctl --no-ovs-vswitchd start: %v\n%s", err, out)
	}
	if out, err := ctl("--no-ovsdb-server", "start"); err != nil {
		t.Fatalf("ovs-ctl --no-ovsdb-server start: %v\n%s", err, out)
	}
	// ovs-ctl returned: --detach promised the daemon serves by now.
	pid, err := unixctl.ReadPidfile(pidfile)
	if err != nil {
		t.Fatalf("after ovs-ctl start: %v", err)
	}
	comm, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/comm")
	if strings.TrimSpace(string(comm)) != "ovs-vswitchd" {
		t.Errorf("/proc/%d/comm = %q", pid, comm)
	}
	if out, err := run("ovs-appctl", "version"); err != nil || !strings.HasPrefix(out, Version) {
		t.Errorf("ovs-appctl version: %v: %q", err, out)
	}
	if out, err := ctl("status"); err != nil || !strings.Contains(out, "ovs-vswitchd is running with pid "+strconv.Itoa(pid)) {
		t.Errorf("ovs-ctl status: %v: %q", err, out)
	}
	if out, err := run("ovs-vsctl", "--timeout=60", "add-br", br); err != nil {
		t.Fatalf("ovs-vsctl add-br: %v\n%s", err, out)
	}
	if out, err := run("ovs-dpctl", "show", "system@ovs-system"); err != nil || !regexp.MustCompile(`(?m)^  port \d+: `+br+` \(internal\)$`).MatchString(out) {
		t.Errorf("ovs-dpctl show: the bridge's datapath is not in the kernel: %v\n%s", err, out)
	}
	if out, err := run("ovs-appctl", "vlog/list"); err != nil || !strings.Contains(out, "\n"+fmt.Sprintf("%-16s %5s %10s %10s", br0Module, "EMER", "ERR", "INFO")+"\n") {
		t.Errorf("vlog/list does not show ovs-ctl's -vconsole:emer -vsyslog:err -vfile:info: %v\n%s", err, out)
	}
	log := readVlogFile(t, filepath.Join(logdir, "ovs-vswitchd.log"))
	if !strings.Contains(string(log), "|bridge|INFO|bridge "+br+": added") {
		t.Errorf("the log does not record the bridge:\n%s", log)
	}

	if out, err := ctl("--no-ovsdb-server", "stop"); err != nil {
		t.Fatalf("ovs-ctl --no-ovsdb-server stop: %v\n%s", err, out)
	}
	if !gone(pid) {
		t.Errorf("pid %d still alive after ovs-ctl stop", pid)
	}
	if out, _ := ctl("status"); !strings.Contains(out, "ovs-vswitchd is not running") {
		t.Errorf("ovs-ctl status after stop: %q", out)
	}
	log, _ = os.ReadFile(filepath.Join(logdir, "ovs-vswitchd.log"))
	if !strings.Contains(string(log), "|bridge|INFO|govswitchd stopped") {
		t.Errorf("no orderly stop in the log:\n%s", log)
	}
	t.Logf("ovs-vswitchd.log:\n%s", log)
}
