package vswitchd

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/govswitch/govswitch/ovsdb/ovsdbtest"
)

// The helpers here are the two halves every "same steps against
// ovs-vswitchd 3.1, then govswitchd, in one boot" bed test shares: ending
// ovs-vswitchd so that it takes its datapath and bridges with it, and
// starting govswitchd from its own ovsdb-server.

// exitCleanup ends ovs-vswitchd with `exit --cleanup` and waits until the
// bridge's internal device is gone, so govswitchd starts on a kernel
// without ovs-vswitchd's datapath.
func (o *ovsSwitch) exitCleanup(t *testing.T, bridge string) {
	t.Helper()
	if r := appctlAt(t, o.ctl, "exit", "--cleanup"); r.code != 0 {
		t.Fatalf("ovs-vswitchd exit --cleanup: %d %s", r.code, r.err)
	}
	for deadline := time.Now().Add(5 * time.Second); linkExists(bridge); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("ovs-vswitchd's exit --cleanup left %s for 5 s", bridge)
		}
	}
}

// govSwitch is govswitchd on the kernel datapath, driven from its own
// ovsdb-server, with its run directory and unixctl socket in rundir.
type govSwitch struct {
	srv    *ovsdbtest.Server
	d      *Daemon
	rundir string
	ctl    string
}

// startGovSwitch starts govswitchd with one handler; it stops with the test.
func startGovSwitch(t *testing.T, rundir string) *govSwitch {
	t.Helper()
	g := &govSwitch{srv: ovsdbtest.Start(t), rundir: rundir, ctl: filepath.Join(rundir, "gov.ctl")}
	d, err := NewForOVSDB(Config{Datapath: "system", Rundir: rundir, Pidfile: "-", Handlers: 1,
		Unixctl: g.ctl}, nil, testLog{t})
	if err != nil {
		t.Fatal(err)
	}
	g.d = d
	t.Cleanup(runOVSDB(t, d, g.srv.Remote, 15*time.Second))
	return g
}

// vsctl runs ovs-vsctl against govswitchd's database and fails the test
// on an error.
func (g *govSwitch) vsctl(t *testing.T, args ...string) string {
	t.Helper()
	out, err := g.srv.Vsctl(15*time.Second, args...)
	if err != nil {
		t.Fatalf("ovs-vsctl %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

// mgmt waits until govswitchd answers OpenFlow on bridge's management
// socket and returns the socket's path.
func (g *govSwitch) mgmt(t *testing.T, bridge string) string {
	t.Helper()
	path := filepath.Join(g.rundir, bridge+".mgmt")
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if _, err := ofctlAt(path, "show"); err == nil {
			return path
		}
		if time.Now().After(deadline) {
			t.Fatalf("govswitchd's %s does not answer", path)
		}
	}
}
