package vswitchd

import (
	"context"
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
)

// TestIntegrationFlowRestoreWait is Debian's `ovs-ctl restart` under a
// ping, first with ovs-vswitchd 3.1, then with govswitchd in its place:
// ovs-ctl saves the bridge's OpenFlow tables with ovs-save, restarts
// ovsdb-server, stops the switch, sets other_config:flow-restore-wait,
// starts the switch, runs the saved ovs-ofctl script and removes the key.
// The bridge is fail-mode=secure with one rule each way between two
// namespaced hosts, so a switch that forgot its tables, or that threw
// away the kernel's flows before the tables were back, drops the ping.
// The tables must come back as they were, and govswitchd may lose no
// more pings than ovs-vswitchd does (one more, for scheduling jitter in
// a one-CPU bed).
func TestIntegrationFlowRestoreWait(t *testing.T) {
	testbed.Require(t)
	if _, err := os.Stat(ovsCtl); err != nil {
		t.Fatalf("Debian's ovs-ctl: %v (apt-get install openvswitch-switch)", err)
	}
	self, _ := filepath.Abs(os.Args[0])
	testbed.WaitUptime(t, testbed.VswitchdMinUptime)
	ovsLoss, ovsSent := restartUnderPing(t, "ovs-vswitchd", "/usr/sbin/ovs-vswitchd")
	govLoss, govSent := restartUnderPing(t, "govswitchd", self)
	t.Logf("UML bed, ovs-ctl restart under ping -i 0.1: ovs-vswitchd 3.1 lost %d of %d, govswitchd lost %d of %d",
		ovsLoss, ovsSent, govLoss, govSent)
	if govLoss > ovsLoss+1 {
		t.Errorf("govswitchd lost %d pings across ovs-ctl restart, ovs-vswitchd %d", govLoss, ovsLoss)
	}
}

var pingSentRE = regexp.MustCompile(`(\d+) packets transmitted, (\d+) received`)

// restartUnderPing runs one switch binary (impl, started by ovs-ctl as
// ovs-vswitchd) through ovs-ctl start, the bridge's setup, and ovs-ctl
// restart while h1 pings h2, and returns the pings lost and sent.
func restartUnderPing(t *testing.T, who, impl string) (lost, sent int) {
	t.Helper()
	b := newBed(t)
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
	if err := os.Symlink(impl, filepath.Join(dir, "sbin", "ovs-vswitchd")); err != nil {
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
		t.Logf("%s: %s %s (%v, %v):\n%s", who, filepath.Base(name), strings.Join(args, " "),
			time.Since(start).Round(time.Millisecond), err, out)
		return string(out), err
	}
	must := func(name string, args ...string) string {
		t.Helper()
		out, err := run(name, args...)
		if err != nil {
			t.Fatalf("%s: %s %s: %v\n%s", who, name, strings.Join(args, " "), err, out)
		}
		return out
	}
	ctl := func(args ...string) string {
		t.Helper()
		return must(ovsCtl, append([]string{"--daemon-cwd=" + dir, "--system-id=random"}, args...)...)
	}
	rundir, logdir := filepath.Join(dir, "run"), filepath.Join(dir, "log")
	// Stopped before the next switch's turn (t.Fatal runs defers too).
	defer func() {
		run(ovsCtl, "--daemon-cwd="+dir, "stop")
		for _, d := range []string{"ovs-vswitchd", "ovsdb-server"} {
			if bs, err := os.ReadFile(filepath.Join(rundir, d+".pid")); err == nil {
				if pid, _ := strconv.Atoi(strings.TrimSpace(string(bs))); pid > 0 {
					syscall.Kill(pid, syscall.SIGKILL)
				}
			}
		}
		run("ovs-dpctl", "del-dp", "ovs-system")
		if t.Failed() {
			log, _ := os.ReadFile(filepath.Join(logdir, "ovs-vswitchd.log"))
			t.Logf("%s: ovs-vswitchd.log:\n%s", who, log)
		}
	}()

	ctl("--no-ovs-vswitchd", "start")
	ctl("--no-ovsdb-server", "start")
	must("ovs-vsctl", "--timeout=60", "add-br", b.name, "--", "set", "bridge", b.name, "fail-mode=secure",
		"--", "add-port", b.name, b.v1, "--", "set", "interface", b.v1, "ofport_request=1",
		"--", "add-port", b.name, b.v2, "--", "set", "interface", b.v2, "ofport_request=2")
	for _, f := range []string{"priority=10,in_port=1,actions=output:2", "priority=10,in_port=2,actions=output:1"} {
		must("ovs-ofctl", "add-flow", b.name, f)
	}
	dump := func() string {
		t.Helper()
		out := must("ovs-ofctl", "dump-flows", "--no-stats", b.name)
		var rows []string
		for _, l := range strings.Split(out, "\n") {
			if l = strings.TrimSpace(l); l != "" && !strings.Contains(l, "_FLOW reply") {
				rows = append(rows, l)
			}
		}
		return strings.Join(rows, "\n")
	}
	before := dump()
	if strings.Count(before, "\n") != 1 {
		t.Fatalf("%s: want the two rules before the restart:\n%s", who, before)
	}
	if loss := b.ping(t, 3); loss == 3 {
		t.Fatalf("%s: no ping through the bridge before the restart", who)
	}

	// The ping runs for 20 s; the restart starts a second in.
	pingDone := make(chan string, 1)
	go func() {
		out, _ := b.h1.Exec("ping", "-i", "0.1", "-w", "20", "-W", "1", "10.0.0.2")
		pingDone <- out
	}()
	time.Sleep(time.Second)
	start := time.Now()
	ctl("restart")
	t.Logf("%s: ovs-ctl restart took %v", who, time.Since(start).Round(time.Millisecond))
	if out := must("ovs-vsctl", "--timeout=60", "get", "Open_vSwitch", ".", "other_config"); strings.Contains(out, "flow-restore-wait") {
		t.Errorf("%s: ovs-ctl left flow-restore-wait set: %s", who, out)
	}
	out := <-pingDone
	m := pingSentRE.FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("%s: no ping summary in:\n%s", who, out)
	}
	sent, _ = strconv.Atoi(m[1])
	recv, _ := strconv.Atoi(m[2])
	if after := dump(); after != before {
		t.Errorf("%s: OpenFlow table after ovs-ctl restart:\n%s\nwant (before):\n%s", who, after, before)
	}
	// New flows after the restore: a fresh miss must be translated by the
	// restored tables (the datapath's flows were flushed when the key went).
	must("ovs-dpctl", "del-flows", "system@ovs-system")
	if loss := b.ping(t, 3); loss == 3 {
		t.Errorf("%s: no ping through the bridge after the restore, once the datapath's flows were deleted", who)
	}
	return sent - recv, sent
}
