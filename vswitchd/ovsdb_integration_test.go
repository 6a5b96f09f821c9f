package vswitchd

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/govswitch/govswitch/ovsdb/ovsdbtest"
)

// TestIntegrationOVSDB builds a switch on the kernel datapath with
// ordinary ovs-vsctl commands against a real ovsdb-server, as a user
// replacing ovs-vswitchd would: the hosts ping through it, ovs-vsctl never
// hangs and reports the ofports, a missing device is reported as
// ovs-vswitchd reports it, and removing a port stops its traffic.
func TestIntegrationOVSDB(t *testing.T) {
	b := newBed(t)
	srv := ovsdbtest.Start(t)
	d, err := NewForOVSDB(Config{Datapath: "system", Rundir: b.rundir, Pidfile: "-", Handlers: 1}, nil, testLog{t})
	if err != nil {
		t.Fatal(err)
	}
	defer runOVSDB(t, d, srv.Remote, 15*time.Second)()
	// UML's syscalls are slow; still, a command that waits for the
	// switch must come back in seconds.
	const limit = 15 * time.Second
	vsctl := func(args ...string) (string, error) {
		t.Helper()
		start := time.Now()
		out, err := srv.Vsctl(limit, args...)
		if el := time.Since(start); el >= limit || strings.Contains(out, "timed out") {
			t.Fatalf("ovs-vsctl %s did not return in %v: %s", strings.Join(args, " "), limit, out)
		}
		t.Logf("ovs-vsctl %s (%v): %s", strings.Join(args, " "), time.Since(start).Round(time.Millisecond), out)
		return out, err
	}
	must := func(args ...string) string {
		t.Helper()
		out, err := vsctl(args...)
		if err != nil {
			t.Fatalf("ovs-vsctl %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return out
	}

	must("add-br", b.name)
	must("add-port", b.name, b.v1)
	must("add-port", b.name, b.v2, "--", "set", "Interface", b.v2, "ofport_request=5")
	if loss := b.ping(t, 3); loss != 0 {
		t.Fatalf("lost %d of 3 pings through a bridge built with ovs-vsctl", loss)
	}
	ofports := must("--columns=name,ofport", "--format=csv", "--no-headings", "list", "Interface")
	for _, want := range []string{b.name + ",65534", b.v1 + ",1", b.v2 + ",5"} {
		if !strings.Contains(ofports, want) {
			t.Errorf("Interface ofports lack %q:\n%s", want, ofports)
		}
	}
	// The host devices' state is written back.
	if got := must("get", "Interface", b.v1, "ifindex"); got == "0" || got == "[]" {
		t.Errorf("%s ifindex = %s", b.v1, got)
	}
	if got := must("get", "Interface", b.v1, "link_state"); got != "up" {
		t.Errorf("%s link_state = %s, want up", b.v1, got)
	}
	if got := must("get", "Interface", b.v1, "mac_in_use"); len(got) != len(`"00:00:00:00:00:00"`) {
		t.Errorf("%s mac_in_use = %s", b.v1, got)
	}
	show := must("show")
	for _, want := range []string{"Bridge " + b.name, "Port " + b.v1, "Port " + b.v2} {
		if !strings.Contains(show, want) {
			t.Errorf("ovs-vsctl show lacks %q:\n%s", want, show)
		}
	}
	// ovs-ofctl reaches the bridge through the mgmt socket.
	if _, err := os.Stat(filepath.Join(b.rundir, b.name+".mgmt")); err != nil {
		t.Errorf("no mgmt socket: %v", err)
	}

	out, _ := vsctl("add-port", b.name, "gsnodev0")
	if !strings.Contains(out, "Error detected while setting up 'gsnodev0'") {
		t.Errorf("add-port of a missing device: ovs-vsctl said %q", out)
	}
	if got := must("get", "Interface", "gsnodev0", "ofport"); got != "-1" {
		t.Errorf("gsnodev0 ofport = %s, want -1", got)
	}
	must("del-port", b.name, "gsnodev0")

	// Removing a port stops its traffic; adding it back restores it.
	must("del-port", b.name, b.v2)
	if loss := b.ping(t, 3); loss != 3 {
		t.Errorf("after del-port %s: %d of 3 pings lost, want all", b.v2, loss)
	}
	must("add-port", b.name, b.v2)
	pingsResume(t, b, "after add-port "+b.v2+" again")

	// secure fail mode without a controller forwards nothing.
	must("set-fail-mode", b.name, "secure")
	if loss := b.ping(t, 2); loss != 2 {
		t.Errorf("secure bridge without controller: %d of 2 pings lost, want all", loss)
	}
	must("del-fail-mode", b.name)
	pingsResume(t, b, "back to standalone")

	must("del-br", b.name)
	if _, err := os.Stat("/sys/class/net/" + b.name); err == nil {
		t.Errorf("del-br left the datapath's device %s", b.name)
	}
}

// pingsResume waits (up to 10 s) for a ping to get through, then wants 3
// in a row: after a port or fail-mode change, datapath flows translated
// for the old configuration are revalidated within the revalidator's
// interval (500 ms, slower in UML), as with ovs-vswitchd.
func pingsResume(t *testing.T, b *bed, what string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	start := time.Now()
	for b.ping(t, 1) != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("%s: no ping got through in 10 s", what)
		}
	}
	t.Logf("%s: pings resumed after %v", what, time.Since(start).Round(time.Millisecond))
	if loss := b.ping(t, 3); loss != 0 {
		t.Errorf("%s: lost %d of 3 pings once they resumed", what, loss)
	}
}
