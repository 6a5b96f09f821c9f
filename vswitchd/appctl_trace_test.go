package vswitchd

import (
	"strings"
	"testing"
)

// TestTraceOpenFlowSyntax: ofproto/trace takes ovs-ofctl's flow syntax
// after the bridge's name, -generate learns as a packet would, and the
// last lines are in ovs-vswitchd's shape.
func TestTraceOpenFlowSyntax(t *testing.T) {
	s := startSwitch(t, nil, t.TempDir())
	defer s.d.Stop()
	last := func(out string) string {
		lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
		return lines[len(lines)-1]
	}
	// Nothing learned yet: NORMAL floods to LOCAL and the other port.
	out := s.appctl(t, "ofproto/trace", "br0", "in_port=p1,dl_src=02:00:00:00:00:01,dl_dst=02:00:00:00:00:02")
	if got := last(out); got != "Datapath actions: 1,3" {
		t.Errorf("last line %q, want flooding:\n%s", got, out)
	}
	if !strings.Contains(out, "Flow: in_port=1,vlan_tci=0x0000,dl_src=02:00:00:00:00:01,dl_dst=02:00:00:00:00:02,dl_type=0x0000\n") {
		t.Errorf("Flow line not in OVS's shape:\n%s", out)
	}
	// Without -generate nothing is learned: the reverse still floods.
	rev := "in_port=2,dl_src=02:00:00:00:00:02,dl_dst=02:00:00:00:00:01"
	if got := last(s.appctl(t, "ofproto/trace", "br0", rev)); got != "Datapath actions: 1,2" {
		t.Errorf("reverse before learning: %q, want 1,2", got)
	}
	s.appctl(t, "ofproto/trace", "br0", "in_port=1,dl_src=02:00:00:00:00:01,dl_dst=02:00:00:00:00:02", "-generate")
	if got := last(s.appctl(t, "ofproto/trace", "br0", rev)); got != "Datapath actions: 2" {
		t.Errorf("reverse after -generate learned 01 on port 1 (datapath port 2): %q, want 2", got)
	}
	// The datapath syntax still works, with the datapath's name too.
	odp := "in_port(2),eth(src=02:00:00:00:00:02,dst=02:00:00:00:00:01),eth_type(0x0800),ipv4(src=10.0.0.2,dst=10.0.0.1,proto=1,tos=0,ttl=64,frag=no),icmp(type=8,code=0)"
	for _, args := range [][]string{{odp}, {"dummy@ovs-system", odp}, {"ovs-system", odp}, {"br0", odp}} {
		if got := last(s.appctl(t, "ofproto/trace", args...)); got != "Datapath actions: drop" {
			t.Errorf("%v: %q, want drop (01 is on the input port)", args, got)
		}
	}
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"nobr", "in_port=1"}, "nobr: unknown bridge"},
		{[]string{"br0", "in_port=p9"}, "Bad openflow flow syntax: in_port=p9: bad value for in_port"},
		{[]string{"br0", "nosuchfield=1"}, "Bad openflow flow syntax: nosuchfield=1: unknown field nosuchfield"},
		{[]string{"br0", "in_port=7"}, "no such port"},
		{[]string{"in_port=1"}, "needs its bridge"},
		{[]string{"br0", "in_port=1", "-consistent"}, "option -consistent is not supported"},
		{[]string{"br0", "in_port=1", "0a0b0c"}, "tracing a given packet is not supported"},
	} {
		_, err := s.d.ctl.Run("ofproto/trace", tt.args)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%v: error %v, want %q", tt.args, err, tt.want)
		}
	}
}
