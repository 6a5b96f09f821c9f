package vswitchd

import (
	"bytes"
	"fmt"
	"net"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// promptStep is one change made with ovs-ofctl (which waits for the
// barrier reply), what it should do to the very next UDP datagram from h1
// to h2 (sent from this process microseconds after ovs-ofctl exits, so no
// periodic revalidator pass can come between) and to a 3-packet ping
// after it, and what happened.
type promptStep struct {
	args       []string // ovs-ofctl command and its arguments, without the switch
	udpDropped bool     // the next datagram must be dropped
	icmpLost   int      // pings of 3 lost
	gotUDP     bool
	gotLost    int
}

// promptSteps are the changes: drop rules over established flows, their
// deletion, and a rule whose actions mod-flows turns into drop and back.
func promptSteps() []promptStep {
	return []promptStep{
		{args: []string{"add-flow", "priority=40000,icmp,actions=drop"}, icmpLost: 3},
		{args: []string{"del-flows", "icmp"}},
		{args: []string{"add-flow", "priority=40000,udp,actions=drop"}, udpDropped: true},
		{args: []string{"del-flows", "udp"}},
		{args: []string{"add-flow", "priority=100,in_port=1,actions=NORMAL"}},
		{args: []string{"mod-flows", "in_port=1,actions=drop"}, udpDropped: true, icmpLost: 3},
		{args: []string{"mod-flows", "in_port=1,actions=NORMAL"}},
		{args: []string{"del-flows", "in_port=1"}},
	}
}

// udpProbe sends one datagram from h1 to h2's listener and reports
// whether it arrived within a second.
func udpProbe(t *testing.T, b *bed, ln net.PacketConn, seq int) bool {
	t.Helper()
	msg := []byte(fmt.Sprintf("probe %d", seq))
	err := b.h1.Do(func() error {
		c, err := net.Dial("udp", "10.0.0.2:9999")
		if err != nil {
			return err
		}
		defer c.Close()
		_, err = c.Write(msg)
		return err
	})
	if err != nil {
		t.Fatalf("udp probe: %v", err)
	}
	buf := make([]byte, 64)
	ln.SetReadDeadline(time.Now().Add(time.Second))
	for {
		n, _, err := ln.ReadFrom(buf)
		if err != nil {
			return false
		}
		if bytes.Equal(buf[:n], msg) {
			return true
		}
	}
}

// runPromptSteps warms the datapath with pings and datagrams, then runs
// the steps against the switch whose OpenFlow management socket is mgmt.
func runPromptSteps(t *testing.T, b *bed, mgmt, dpName string) []promptStep {
	t.Helper()
	var ln net.PacketConn
	if err := b.h2.Do(func() (err error) { ln, err = net.ListenPacket("udp", "10.0.0.2:9999"); return }); err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	if loss := b.ping(t, 3); loss != 0 {
		t.Fatalf("baseline: lost %d of 3 pings", loss)
	}
	if !udpProbe(t, b, ln, 0) || !udpProbe(t, b, ln, 1) {
		t.Fatal("baseline: udp datagram not delivered")
	}
	steps := promptSteps()
	for i := range steps {
		s := &steps[i]
		// Datapath flows for the traffic are in place before the change
		// (the point is that they are fixed, not that new ones are right):
		// an IPv4 flow that forwards to port 2.
		out, _ := exec.Command("ovs-dpctl", "dump-flows", dpName).CombinedOutput()
		if !strings.Contains(string(out), "eth_type(0x0800)") || !strings.Contains(string(out), "actions:2") {
			t.Logf("before %q: no forwarding IPv4 datapath flow in %s:\n%s", s.args, dpName, out)
		}
		full := append([]string{s.args[0], "unix:" + mgmt}, s.args[1:]...)
		if out, err := exec.Command("ovs-ofctl", full...).CombinedOutput(); err != nil {
			t.Fatalf("ovs-ofctl %s: %v\n%s", strings.Join(full, " "), err, out)
		}
		s.gotUDP = udpProbe(t, b, ln, 100+i)
		s.gotLost = b.ping(t, 3)
		// The next step starts with the datapath flows this traffic made.
		udpProbe(t, b, ln, 200+i)
	}
	return steps
}

// TestIntegrationRulesTakeEffectAtOnce: once ovs-ofctl has its barrier
// reply for a flow_mod, the next packet is forwarded by the new rules,
// even though datapath flows made under the old ones were in place — a
// drop rule drops the very first ping. ovs-vswitchd 3.1 runs the same
// steps first in the same boot, as the reference; what it does is logged,
// and govswitchd must get every step right. (In UML, ovs-vswitchd 3.1 let
// the next datagram through a fresh udp drop rule and a mod-flows to drop
// in one run of two, and dropped the one after del-flows udp in the
// other: its barrier reply does not wait for its revalidators.)
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
		t.Logf("ovs-vswitchd 3.1: ovs-ofctl %s, then the next datagram delivered=%v (at once: %v), %d of 3 pings lost (at once: %d)",
			strings.Join(s.args, " "), s.gotUDP, !s.udpDropped, s.gotLost, s.icmpLost)
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
	gov := runPromptSteps(t, b, filepath.Join(b.rundir, b.name+".mgmt"), "system@ovs-system")
	st := b.d.Bridge(b.name).Udpif.Stats()
	for _, s := range gov {
		cmd := strings.Join(s.args, " ")
		t.Logf("govswitchd: ovs-ofctl %s, then the next datagram delivered=%v, %d of 3 pings lost", cmd, s.gotUDP, s.gotLost)
		if s.gotUDP == s.udpDropped {
			t.Errorf("govswitchd: after ovs-ofctl %s, the next datagram delivered=%v, want %v", cmd, s.gotUDP, !s.udpDropped)
		}
		if s.gotLost != s.icmpLost {
			t.Errorf("govswitchd: after ovs-ofctl %s, lost %d of 3 pings, want %d", cmd, s.gotLost, s.icmpLost)
		}
	}
	t.Logf("govswitchd: %d dumps, %d flows modified, %d deleted", st.Dumps, st.FlowsModified, st.FlowsDeleted)
}
