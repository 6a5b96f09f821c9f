package ofproto

import (
	"encoding/hex"
	"strings"
	"testing"
)

// TestOfctlRefusesUnimplemented adds, through the real ovs-ofctl, flows
// whose actions decode but that the switch cannot carry out: each add
// must fail with the error named, and leave the tables as they were,
// instead of installing a flow that drops what it says to forward.
func TestOfctlRefusesUnimplemented(t *testing.T) {
	needTool(t, "ovs-ofctl")
	s := newTestSwitch(t, 2, BridgeConfig{FailMode: FailSecure}, ConnConfig{})
	of13 := []string{"-O", "OpenFlow13"}
	for _, tc := range []struct {
		name string
		opts []string
		flow string
		want string // the error ovs-ofctl prints
	}{
		// delete_field is implemented (tun_metadata.go); of an unmapped
		// tun_metadata field it is refused as ovs-vswitchd refuses it.
		{"delete_field unmapped", nil, "actions=delete_field:tun_metadata0,output:2", "NXFMFC_INVALID_TLV_FIELD"},
		// push and pop are implemented (xlate_stack.go); popping into an ARP
		// field is not (ARP rewrites need the slow path).
		// ovs-vswitchd 3.1 answers a meter that does not exist so (seen in
		// the bed); the dummy datapath has no meters at all.
		{"meter 1.3", of13, "actions=meter:1,output:2", "OFPMMFC_INVALID_METER"},
		// In 1.5 meter is an action (OFPAT_METER); a missing meter is
		// refused as in 1.3.
		{"meter 1.5", []string{"-O", "OpenFlow15"}, "actions=meter:1,output:2", "OFPMMFC_INVALID_METER"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := s.ofctlErr(tc.opts, "add-flow", tc.flow)
			if err == nil {
				t.Fatalf("add-flow %q succeeded:\n%s", tc.flow, out)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("add-flow %q: want %s, got %v", tc.flow, tc.want, err)
			}
			if n := s.b.Tables.Len(); n != 0 {
				t.Errorf("%d flows in the tables after a refused add", n)
			}
			if d := parseFlows(t, s.ofctl(t, tc.opts, "dump-flows")); len(d) != 0 {
				t.Errorf("dump-flows after a refused add: %+v", d)
			}
		})
	}

	// What the switch does carry out is still accepted, with the same
	// actions dumped back.
	for _, flow := range []string{
		"actions=set_queue:1,output:2",
		"ip,actions=set_field:10.0.0.1->ip_dst,output:2",
		"tcp,actions=set_field:80->tcp_dst,output:2",
		"udp,actions=note:01.02,output:2",
		"icmp,actions=controller(userdata=01.02.03,pause),output:2",
		"ip,nw_src=10.0.0.5,actions=clone(set_field:10.0.0.1->ip_dst,output:2),output(port=2,max_len=100),check_pkt_larger(100)->NXM_NX_REG0[1]",
		"mpls,actions=set_field:5->mpls_label,set_mpls_ttl:5,dec_mpls_ttl,pop_mpls:0x0800,output:2",
		"ip,nw_src=10.0.0.6,actions=push_mpls:0x8847,set_mpls_label:7,output:2",
	} {
		s.ofctl(t, of13, "add-flow", flow)
	}
	if n := s.b.Tables.Len(); n != 8 {
		t.Errorf("%d flows after 8 supported adds, want 8", n)
	}
	s.ofctl(t, nil, "del-flows")

	// A packet-out with an unimplemented action is refused the same way.
	fr := make([]byte, 60)
	copy(fr, []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 2, 0, 0, 0, 0, 1, 0x88, 0xb5})
	_, err := s.ofctlErr(of13, "packet-out", "in_port=controller packet="+hex.EncodeToString(fr)+" actions=delete_field:tun_metadata0")
	if err == nil || !strings.Contains(err.Error(), "NXFMFC_INVALID_TLV_FIELD") {
		t.Errorf("packet-out with delete_field of an unmapped field: want NXFMFC_INVALID_TLV_FIELD, got %v", err)
	}
}
