package ofproto

import (
	"strings"
	"testing"

	"github.com/govswitch/govswitch/flow"
	"github.com/govswitch/govswitch/ofproto/openflow"
)

// TestPinCtMetadataOvsOfctl encodes the packet-in2s of OVS's tests
// "conntrack - controller" and "conntrack - force commit" from the upcall
// keys the kernel gives for them, and checks that ovs-ofctl prints them as
// those tests expect of ovs-vswitchd.
func TestPinCtMetadataOvsOfctl(t *testing.T) {
	needTool(t, "ovs-ofctl")
	udp := func(src, dst [4]byte, sp, dp uint16) flow.Key {
		return flow.Key{EthType: flow.EthTypeIPv4, IPv4Src: src, IPv4Dst: dst, NwProto: flow.IPProtoUDP, TpSrc: sp, TpDst: dp}
	}
	a, b := [4]byte{10, 1, 1, 1}, [4]byte{10, 1, 1, 2}
	reply := udp(b, a, 2, 1)
	reply.CtState = flow.CtTracked | flow.CtEstablished | flow.CtReplyDir
	reply.CtOrig = flow.CtTuple{IPv4Src: a, IPv4Dst: b, TpSrc: 1, TpDst: 2, Proto: flow.IPProtoUDP}
	forced := udp(b, a, 2, 1)
	forced.CtState = flow.CtTracked | flow.CtNew
	forced.CtOrig = flow.CtTuple{IPv4Src: b, IPv4Dst: a, TpSrc: 2, TpDst: 1, Proto: flow.IPProtoUDP}
	v6 := flow.Key{EthType: flow.EthTypeIPv6, NwProto: flow.IPProtoTCP, CtState: flow.CtTracked | flow.CtNew, CtZone: 3,
		CtMark: 9, CtLabels: [16]byte{0: 1},
		CtOrig: flow.CtTuple{IPv6Src: [16]byte{0xfc, 15: 1}, IPv6Dst: [16]byte{0xfc, 15: 2}, TpSrc: 5000, TpDst: 80, Proto: 6}}
	invalid := udp(a, b, 1, 2)
	invalid.CtState = flow.CtTracked | flow.CtInvalid
	invalid.CtOrig = reply.CtOrig // a valid state is what reports it
	tests := []struct {
		name  string
		key   flow.Key
		table uint8
		want  string
	}{
		{"controller reply", reply, 0, "cookie=0x0 total_len=42 ct_state=est|rpl|trk,ct_nw_src=10.1.1.1,ct_nw_dst=10.1.1.2," +
			"ct_nw_proto=17,ct_tp_src=1,ct_tp_dst=2,ip,in_port=2 (via action)"},
		{"force commit", forced, 1, "table_id=1 cookie=0x0 total_len=42 ct_state=new|trk,ct_nw_src=10.1.1.2,ct_nw_dst=10.1.1.1," +
			"ct_nw_proto=17,ct_tp_src=2,ct_tp_dst=1,ip,in_port=2 (via action)"},
		{"ipv6 zone mark label", v6, 0, "ct_state=new|trk,ct_zone=3,ct_mark=0x9,ct_label=0x1,ct_ipv6_src=fc00::1," +
			"ct_ipv6_dst=fc00::2,ct_nw_proto=6,ct_tp_src=5000,ct_tp_dst=80,ipv6,in_port=2"},
		{"invalid", invalid, 0, "ct_state=inv|trk,ip,in_port=2 (via action)"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var md openflow.Match
			md.Key.InPort, md.Mask.InPort = 2, ^uint32(0)
			pinCtMetadata(&md, &tc.key)
			pkt := make([]byte, 42)
			m := openflow.PacketIn2{Envelope: openflow.Envelope{Version: openflow.Version10}, BufferID: openflow.NoBuffer,
				Packet: pkt, TableID: tc.table, Reason: openflow.PacketInAction, Metadata: md}
			raw, err := m.Append(nil)
			if err != nil {
				t.Fatal(err)
			}
			if got := ofpPrint(t, raw); !strings.Contains(got, tc.want) {
				t.Errorf("ovs-ofctl ofp-print lacks %q:\n%s", tc.want, got)
			}
		})
	}
}

func TestPinCtMetadataAllocs(t *testing.T) {
	k := flow.Key{EthType: flow.EthTypeIPv4, CtState: flow.CtTracked | flow.CtEstablished, CtMark: 1,
		CtOrig: flow.CtTuple{Proto: 17, TpSrc: 1}}
	var md openflow.Match
	if n := testing.AllocsPerRun(100, func() { pinCtMetadata(&md, &k) }); n != 0 {
		t.Errorf("pinCtMetadata: %v allocations, want 0", n)
	}
}

// TestCtTupleTrace: a rule matching the conntrack tuple, added by
// ovs-ofctl, shows in dump-flows as ovs-vswitchd shows it, and
// ofproto/trace of a recirculated packet of that connection (given in
// ovs-ofctl's flow syntax) matches it, prints the tuple in its Flow line
// and puts the matched tuple bits in the megaflow.
func TestCtTupleTrace(t *testing.T) {
	needTool(t, "ovs-ofctl")
	s := newTestSwitch(t, 2, BridgeConfig{FailMode: FailSecure}, ConnConfig{})
	s.ofctl(t, nil, "add-flow", "priority=10,ct_state=+trk+est,udp,ct_nw_src=10.1.1.0/24,ct_nw_proto=17,ct_tp_dst=2,actions=output:2")
	dump := s.ofctl(t, nil, "dump-flows")
	if want := "priority=10,ct_state=+est+trk,ct_nw_src=10.1.1.0/24,ct_nw_proto=17,ct_tp_dst=2,udp actions=output:2"; !strings.Contains(dump, want) {
		t.Fatalf("dump-flows lacks %q:\n%s", want, dump)
	}
	k, err := openflow.ParseFlowText("in_port=1,ct_state=est|rpl|trk,ct_nw_src=10.1.1.1,ct_nw_dst=10.1.1.2,ct_nw_proto=17,"+
		"ct_tp_src=1,ct_tp_dst=2,udp,nw_src=10.1.1.2,nw_dst=10.1.1.1,tp_src=2,tp_dst=1", nil)
	if err != nil {
		t.Fatal(err)
	}
	if k.CtOrig.Proto != 17 || k.CtOrig.TpDst != 2 || k.CtState != flow.CtEstablished|flow.CtReplyDir|flow.CtTracked {
		t.Fatalf("parsed %+v", k)
	}
	k.InPort = s.b.Ports.Snapshot().ByOF(1).DPPort
	tr := s.b.Trace(&k)
	for _, want := range []string{
		"Flow: ct_state=est|rpl|trk,ct_nw_src=10.1.1.1,ct_nw_dst=10.1.1.2,ct_nw_proto=17,ct_tp_src=1,ct_tp_dst=2,udp,in_port=1,",
		" 0. ct_state=+est+trk,ct_nw_src=10.1.1.0/24,ct_nw_proto=17,ct_tp_dst=2,udp, priority 10\n",
		"Megaflow: recirc_id=0,ct_state=+est+trk,ct_nw_src=10.1.1.0/24,ct_nw_proto=17,ct_tp_dst=2,eth,",
	} {
		if !strings.Contains(tr, want) {
			t.Errorf("trace lacks %q:\n%s", want, tr)
		}
	}
}
