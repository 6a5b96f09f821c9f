package vswitchd

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// promptStep is one change made with ovs-ofctl (which waits for the
// barrier reply) and the pings lost right after it.
type promptStep struct {
	args []string // ovs-ofctl command and its arguments, without the switch
	want int      // pings of 3 lost right after it
	lost int
}

// promptSteps are the changes: a drop rule over established ICMP flows,
// its deletion, and a rule whose actions mod-flows turns into drop and
// back. Each is followed at once by a 3-packet ping.
func promptSteps() []promptStep {
	return []promptStep{
		{args: []string{"add-flow", "priority=40000,icmp,actions=drop"}, want: 3},
		{args: []string{"del-flows", "icmp"}, want: 0},
		{args: []string{"add-flow", "priority=100,in_port=1,actions=NORMAL"}, want: 0},
		{args: []string{"mod-flows", "in_port=1,actions=drop"}, want: 3},
		{args: []string{"mod-flows", "in_port=1,actions=NORMAL"}, want: 0},
		{args: []string{"del-flows", "in_port=1"}, want: 0},
	}
}

// runPromptSteps warms the datapath with pings, then runs the steps
// against the switch whose OpenFlow management socket is mgmt.
func runPromptSteps(t *testing.T, b *bed, mgmt, dpName string) []promptStep {
	t.Helper()
	if loss := b.ping(t, 3); loss != 0 {
		t.Fatalf("baseline: lost %d of 3 pings", loss)
	}
	steps := promptSteps()
	for i := range steps {
		s := &steps[i]
		// Datapath flows for the pings are in place before the change
		// (the point is that they are fixed, not that new ones are right):
		// an IPv4 flow from port 1 that forwards.
		out, _ := exec.Command("ovs-dpctl", "dump-flows", dpName).CombinedOutput()
		if !strings.Contains(string(out), "eth_type(0x0800)") || !strings.Contains(string(out), "actions:2") {
			t.Logf("before %q: no forwarding IPv4 datapath flow in %s:\n%s", s.args, dpName, out)
		}
		full := append([]string{s.args[0], "unix:" + mgmt}, s.args[1:]...)
		if out, err := exec.Command("ovs-ofctl", full...).CombinedOutput(); err != nil {
			t.Fatalf("ovs-ofctl %s: %v\n%s", strings.Join(full, " "), err, out)
		}
		s.lost = b.ping(t, 3)
	}
	return steps
}

// TestIntegrationRulesTakeEffectAtOnce: once ovs-ofctl has its barrier
// reply for a flow_mod, the next packet is forwarded by the new rules,
// even though datapath flows made under the old ones were in place — a
// drop rule drops the very first ping. ovs-vswitchd 3.1 runs the same
// steps first in the same boot, as the reference; what it does is logged,
// and govswitchd must get every step right.
func TestIntegrationRulesTakeEffectAtOnce(t *testing.T) {
	b := newBed(t)

	o := startOVS(t)
	o.must(t, "ovs-vsctl", "add-br", b.name, "--", "add-port", b.name, b.v1, "--", "add-port", b.name, b.v2,
		"--", "set", "interface", b.v1, "ofport_request=1", "--", "set", "interface", b.v2, "ofport_request=2")
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if _, err := exec.Command("ovs-ofctl", "show", "unix:"+filepath.Join(o.dir, b.name+".mgmt")).CombinedOutput(); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("ovs-vswitchd made no OpenFlow socket for %s within 10s", b.name)
		}
	}
	ovs := runPromptSteps(t, b, filepath.Join(o.dir, b.name+".mgmt"), "system@ovs-system")
	for _, s := range ovs {
		t.Logf("ovs-vswitchd 3.1: ovs-ofctl %s, then lost %d of 3 pings (a switch that applies it at once: %d)",
			strings.Join(s.args, " "), s.lost, s.want)
	}
	if r := appctlAt(t, o.ctl, "exit", "--cleanup"); r.code != 0 {
		t.Fatalf("ovs-vswitchd exit --cleanup: %d %s", r.code, r.err)
	}
	for deadline := time.Now().Add(5 * time.Second); linkExists(b.name); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("ovs-vswitchd's exit --cleanup left %s for 5 s", b.name)
		}
	}

	b.start(t)
	gov := runPromptSteps(t, b, filepath.Join(b.rundir, b.name+".mgmt"), "system@"+b.name)
	st := b.d.Bridge(b.name).Udpif.Stats()
	for _, s := range gov {
		t.Logf("govswitchd: ovs-ofctl %s, then lost %d of 3 pings", strings.Join(s.args, " "), s.lost)
		if s.lost != s.want {
			t.Errorf("govswitchd: after ovs-ofctl %s, lost %d of 3 pings, want %d", strings.Join(s.args, " "), s.lost, s.want)
		}
	}
	t.Logf("govswitchd: %d dumps, %d flows modified, %d deleted", st.Dumps, st.FlowsModified, st.FlowsDeleted)
}
