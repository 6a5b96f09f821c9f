package vswitchd

import (
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// modPortStep is one ovs-ofctl mod-port and what followed.
type modPortStep struct {
	args   string
	loss   int    // of 2 pings h1 -> h2
	link   string // ip link's state word for v2 ("UP" or "DOWN" in its flags)
	config string // ovs-ofctl show's config line for the port
}

// modPortSteps runs ovs-ofctl mod-port on b's bridge (OpenFlow socket
// mgmt) and pings after each: v2 down and up, no-forward and forward on
// v2, no-receive and receive on v1.
func modPortSteps(t *testing.T, b *bed, mgmt string) []modPortStep {
	t.Helper()
	ofctl := func(args ...string) string {
		t.Helper()
		full := append([]string{args[0], "unix:" + mgmt}, args[1:]...)
		out, err := exec.Command("ovs-ofctl", full...).CombinedOutput()
		if err != nil {
			t.Fatalf("ovs-ofctl %s: %v\n%s", strings.Join(full, " "), err, out)
		}
		return string(out)
	}
	if loss := b.ping(t, 3); loss != 0 {
		t.Fatalf("lost %d of 3 pings before any mod-port", loss)
	}
	var steps []modPortStep
	for _, s := range []struct{ port, what string }{
		{b.v2, "down"}, {b.v2, "up"}, {b.v2, "no-forward"}, {b.v2, "forward"}, {b.v1, "no-receive"}, {b.v1, "receive"},
	} {
		ofctl("mod-port", s.port, s.what)
		// ovs-ofctl mod-port waits for nothing; a barrier-backed request
		// (ovs-ofctl show) is still no promise that flows changed: let
		// both switches' revalidators run (OVS's runs on its own
		// schedule).
		time.Sleep(time.Second)
		st := modPortStep{args: s.port + " " + s.what}
		if s.what == "up" {
			// A device coming up takes the kernel a moment (carrier,
			// IPv6 DAD) in both cases.
			time.Sleep(2 * time.Second)
		}
		st.loss = b.ping(t, 2)
		out, _ := exec.Command("ip", "-o", "link", "show", s.port).CombinedOutput()
		if f, _, ok := strings.Cut(string(out), ">"); ok {
			if strings.Contains(f, ",UP") || strings.Contains(f, "<UP") {
				st.link = "UP"
			} else {
				st.link = "DOWN"
			}
		}
		for _, l := range strings.Split(ofctl("show"), "\n") {
			if strings.Contains(l, "("+s.port+"):") {
				st.config = "?"
			}
			if st.config == "?" && strings.HasPrefix(strings.TrimSpace(l), "config:") {
				st.config = strings.Join(strings.Fields(l)[1:], " ")
			}
		}
		steps = append(steps, st)
	}
	return steps
}

// TestIntegrationModPort: ovs-ofctl mod-port down/up, no-forward and
// no-receive stop and restore real traffic through govswitchd as they do
// through ovs-vswitchd 3.1 in the same boot, down/up setting the device's
// administrative state as OVS does, and ovs-ofctl show reports the same
// config.
func TestIntegrationModPort(t *testing.T) {
	b := newBed(t)
	o := startOVS(t)
	o.must(t, "ovs-vsctl", "add-br", b.name, "--", "add-port", b.name, b.v1, "--", "add-port", b.name, b.v2)
	ovs := modPortSteps(t, b, filepath.Join(o.dir, b.name+".mgmt"))
	if r := appctlAt(t, o.ctl, "exit", "--cleanup"); r.code != 0 {
		t.Fatalf("ovs-vswitchd exit --cleanup: %d %s", r.code, r.err)
	}
	for deadline := time.Now().Add(5 * time.Second); linkExists(b.name); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("ovs-vswitchd's exit --cleanup left %s for 5 s", b.name)
		}
	}
	b.start(t)
	gov := modPortSteps(t, b, filepath.Join(b.rundir, b.name+".mgmt"))
	want := map[string]int{"down": 2, "up": 0, "no-forward": 2, "forward": 0, "no-receive": 2, "receive": 0}
	for i := range gov {
		o, g := ovs[i], gov[i]
		t.Logf("mod-port %s: ovs-vswitchd lost %d, link %s, config %q; govswitchd lost %d, link %s, config %q",
			g.args, o.loss, o.link, o.config, g.loss, g.link, g.config)
		what := g.args[strings.LastIndexByte(g.args, ' ')+1:]
		if g.loss != want[what] {
			t.Errorf("govswitchd: after mod-port %s lost %d of 2 pings, want %d", g.args, g.loss, want[what])
		}
		if fmt.Sprint(o.loss, o.link, o.config) != fmt.Sprint(g.loss, g.link, g.config) {
			t.Errorf("mod-port %s: ovs-vswitchd lost %d, link %s, config %q; govswitchd lost %d, link %s, config %q",
				g.args, o.loss, o.link, o.config, g.loss, g.link, g.config)
		}
	}
}
