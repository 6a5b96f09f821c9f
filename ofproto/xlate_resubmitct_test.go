package ofproto

import (
	"errors"
	"testing"

	"github.com/govswitch/govswitch/datapath"
	"github.com/govswitch/govswitch/flow"
	"github.com/govswitch/govswitch/ofproto/openflow"
)

func resubmitCt(table uint8) openflow.Action {
	return openflow.Action{Type: openflow.ActResubmit, Port: openflow.PortInPort, Table: table, CtOrig: true}
}

// ctOrigACL is the shape of OVS's "FTP SNAT orig tuple" pipeline: a
// tracked reply packet is judged (table 3) by its connection's
// original-direction tuple, then forwarded on the verdict (table 4).
// Table 3 accepts connections that began from 10.1.1.1 to port 21; its
// actions run on the packet's own headers (it copies nw_src to reg5),
// and so does its goto_table:5 (table 5 copies nw_src to reg6).
func ctOrigACL(t *testing.T, x *Xlator) {
	t.Helper()
	ip := func(k *flow.Key, m *flow.Mask) { k.EthType, m.EthType = flow.EthTypeIPv4, 0xffff }
	reg := func(n int, v uint32) func(k *flow.Key, m *flow.Mask) {
		return func(k *flow.Key, m *flow.Mask) { k.Regs[n], m.Regs[n] = v, ^uint32(0) }
	}
	mustAdd(t, x, 0, func(k *flow.Key, m *flow.Mask) {
		ip(k, m)
		k.CtState = flow.CtTracked | flow.CtReplyDir
		m.CtState = flow.CtTracked | flow.CtReplyDir | flow.CtInvalid | flow.CtRelated
	}, 10, apply(resubmitCt(3), openflow.Resubmit(openflow.PortInPort, 4)))
	mustAdd(t, x, 3, func(k *flow.Key, m *flow.Mask) {
		ip(k, m)
		k.IPv4Src, m.IPv4Src = [4]byte{10, 1, 1, 1}, [4]byte{255, 255, 255, 255}
		k.NwProto, m.NwProto = flow.IPProtoTCP, 0xff
		k.TpDst, m.TpDst = 21, 0xffff
	}, 10, openflow.Instructions{
		Apply:     []openflow.Action{{Type: openflow.ActRegLoad, Field: openflow.FieldReg2, NBits: 32, Load: 1}, {Type: openflow.ActRegMove, Src: openflow.FieldIPv4Src, Field: openflow.FieldReg5, NBits: 32}},
		GotoTable: true, Table: 5,
	})
	mustAdd(t, x, 5, func(k *flow.Key, m *flow.Mask) { ip(k, m) }, 1,
		apply(openflow.Action{Type: openflow.ActRegMove, Src: openflow.FieldIPv4Src, Field: openflow.FieldReg6, NBits: 32}))
	// Verdict: accepted with both addresses as expected, else dropped.
	mustAdd(t, x, 4, func(k *flow.Key, m *flow.Mask) {
		reg(2, 1)(k, m)
		reg(5, 0x0a010102)(k, m)
		reg(6, 0x0a010102)(k, m)
	}, 10, apply(openflow.Output(1, 0)))
	mustAdd(t, x, 4, func(*flow.Key, *flow.Mask) {}, 0, apply())
}

// ftpReply is the server's reply 10.1.1.2:21 -> 10.1.1.1:40000 of a
// connection 10.1.1.1:40000 -> 10.1.1.2:21, arriving on port 2.
func ftpReply() flow.Key {
	k := pkt(12)
	k.IPv4Src, k.IPv4Dst = [4]byte{10, 1, 1, 2}, [4]byte{10, 1, 1, 1}
	k.TpSrc, k.TpDst = 21, 40000
	k.CtState = flow.CtTracked | flow.CtEstablished | flow.CtReplyDir
	k.CtOrig = flow.CtTuple{IPv4Src: [4]byte{10, 1, 1, 1}, IPv4Dst: [4]byte{10, 1, 1, 2}, TpSrc: 40000, TpDst: 21, Proto: flow.IPProtoTCP}
	return k
}

// TestXlateResubmitCt: resubmit(,3,ct) looks table 3 up by the tuple,
// the rule found and what it goes to see the packet's own headers, and
// the megaflow matches the tuple fields the lookup read (ct_nw_src,
// ct_nw_proto, ct_tp_dst) rather than the packet's.
func TestXlateResubmitCt(t *testing.T) {
	x := testBridge(t)
	ctOrigACL(t, x)
	k := ftpReply()
	orig := k
	var out Out
	x.Translate(&k, t0, true, &out)
	if got := datapath.FormatActions(out.Actions); got != "11" {
		t.Fatalf("reply: actions %q (dropped %q), want 11", got, out.Dropped)
	}
	if k != orig {
		t.Errorf("key changed: %+v", k)
	}
	if f := out.ctx.flow; f.IPv4Src != orig.IPv4Src || f.CtOrig != orig.CtOrig || f.TpDst != orig.TpDst || f.NwProto != orig.NwProto {
		t.Errorf("final flow has swapped fields: %+v", f)
	}
	wc := out.WC
	if wc.CtOrig.IPv4Src != [4]byte{255, 255, 255, 255} || wc.CtOrig.TpDst != 0xffff || wc.CtOrig.Proto != 0xff {
		t.Errorf("megaflow tuple mask %+v, want ct_nw_src, ct_nw_proto and ct_tp_dst", wc.CtOrig)
	}
	// The packet's nw_src is read by move in tables 3 and 5 (both
	// unswapped), its tp_dst by nothing.
	if wc.IPv4Src != [4]byte{255, 255, 255, 255} || wc.TpDst != 0 {
		t.Errorf("megaflow packet mask nw_src %v tp_dst %#x", wc.IPv4Src, wc.TpDst)
	}

	// The tuple of another connection: table 3 misses, the verdict drops.
	k = ftpReply()
	k.CtOrig.IPv4Src = [4]byte{10, 1, 1, 9}
	var o2 Out
	x.Translate(&k, t0, true, &o2)
	if got := datapath.FormatActions(o2.Actions); got != "drop" && got != "" {
		t.Errorf("other connection: actions %q, want a drop", got)
	}
	// The packet's own headers are what a plain resubmit would see: with
	// its addresses swapped into the tuple the ct lookup must miss.
	k = ftpReply()
	k.IPv4Src, k.CtOrig.IPv4Src = k.CtOrig.IPv4Src, k.IPv4Src
	var o3 Out
	x.Translate(&k, t0, true, &o3)
	if got := datapath.FormatActions(o3.Actions); got != "drop" && got != "" {
		t.Errorf("swapped packet: actions %q, want a drop", got)
	}
}

// TestXlateResubmitCtNoTuple: a packet without a tuple (here a rule
// without a ct prerequisite is impossible, so a tracked one whose tuple
// the datapath left out) looks nothing up and the translation goes on,
// as ovs-vswitchd's "resubmit(ct) with non-tracked or non-IP packet!".
func TestXlateResubmitCtNoTuple(t *testing.T) {
	x := testBridge(t)
	ctOrigACL(t, x)
	k := ftpReply()
	k.CtOrig = flow.CtTuple{}
	var out Out
	x.Translate(&k, t0, true, &out)
	if out.Dropped != "" || out.WC.CtOrig != (flow.CtTuple{}) {
		t.Errorf("no tuple: dropped %q, tuple mask %+v", out.Dropped, out.WC.CtOrig)
	}
	if got := datapath.FormatActions(out.Actions); got != "drop" && got != "" {
		t.Errorf("no tuple: actions %q, want a drop (table 3 not reached)", got)
	}
}

// TestXlateResubmitCtIPv6 swaps the IPv6 addresses of an IPv6 packet.
func TestXlateResubmitCtIPv6(t *testing.T) {
	x := testBridge(t)
	a1 := [16]byte{0xfd, 15: 1}
	a2 := [16]byte{0xfd, 15: 2}
	ones := [16]byte{}
	for i := range ones {
		ones[i] = 0xff
	}
	mustAdd(t, x, 0, func(k *flow.Key, m *flow.Mask) {
		k.EthType, m.EthType = flow.EthTypeIPv6, 0xffff
		k.CtState, m.CtState = flow.CtTracked, flow.CtTracked|flow.CtInvalid
	}, 10, apply(resubmitCt(3)))
	mustAdd(t, x, 3, func(k *flow.Key, m *flow.Mask) {
		k.EthType, m.EthType = flow.EthTypeIPv6, 0xffff
		k.IPv6Src, m.IPv6Src = a1, ones
		k.NwProto, m.NwProto = flow.IPProtoUDP, 0xff
	}, 10, apply(openflow.Output(1, 0)))
	k := flow.Key{InPort: 12, EthSrc: macA, EthDst: macB, EthType: flow.EthTypeIPv6,
		IPv6Src: a2, IPv6Dst: a1, NwProto: flow.IPProtoUDP, NwTTL: 64, TpSrc: 53, TpDst: 5353,
		CtState: flow.CtTracked | flow.CtEstablished | flow.CtReplyDir,
		CtOrig:  flow.CtTuple{IPv6Src: a1, IPv6Dst: a2, TpSrc: 5353, TpDst: 53, Proto: flow.IPProtoUDP}}
	var out Out
	x.Translate(&k, t0, true, &out)
	if got := datapath.FormatActions(out.Actions); got != "11" {
		t.Fatalf("actions %q (dropped %q), want 11", got, out.Dropped)
	}
	if out.WC.CtOrig.IPv6Src != ones || out.WC.IPv6Src != ([16]byte{}) {
		t.Errorf("mask: ct_ipv6_src %x ipv6_src %x", out.WC.CtOrig.IPv6Src, out.WC.IPv6Src)
	}
}

// TestResubmitCtChecks: resubmit(,table,ct) needs a match that pins down
// a valid connection (OFPBAC_MATCH_INCONSISTENT otherwise, in a clone
// too), as ovs-ofctl's own check says; a packet-out has none.
func TestResubmitCtChecks(t *testing.T) {
	x := testBridge(t)
	for _, tc := range []struct {
		name  string
		state uint32
		mask  uint32
		acts  []openflow.Action
		ok    bool
	}{
		{"rpl", flow.CtReplyDir, flow.CtReplyDir, []openflow.Action{resubmitCt(3)}, true},
		{"+trk-inv", flow.CtTracked, flow.CtTracked | flow.CtInvalid, []openflow.Action{resubmitCt(3)}, true},
		{"+rel", flow.CtRelated | flow.CtTracked, flow.CtRelated | flow.CtTracked | flow.CtInvalid, []openflow.Action{resubmitCt(3)}, true},
		{"+trk alone", flow.CtTracked, flow.CtTracked, []openflow.Action{resubmitCt(3)}, false},
		{"-rpl", 0, flow.CtReplyDir, []openflow.Action{resubmitCt(3)}, false},
		{"none", 0, 0, []openflow.Action{resubmitCt(3)}, false},
		{"in clone", 0, 0, []openflow.Action{{Type: openflow.ActClone, Nested: []openflow.Action{resubmitCt(3)}}}, false},
		{"plain resubmit", 0, 0, []openflow.Action{openflow.Resubmit(openflow.PortInPort, 3)}, true},
	} {
		fm := FlowMod{Command: CmdAdd, Table: 0, Priority: 1, OutPort: openflow.PortAny,
			Match: match(func(k *flow.Key, m *flow.Mask) {
				k.EthType, m.EthType = flow.EthTypeIPv4, 0xffff
				k.CtState, m.CtState = tc.state, tc.mask
			}),
			Instructions: apply(tc.acts...)}
		err := x.Tables.Apply(&fm, t0)
		if tc.ok != (err == nil) {
			t.Errorf("%s: err %v, want ok %v", tc.name, err, tc.ok)
		}
		if err != nil && ErrKind(err) != ErrMatchInconsistent {
			t.Errorf("%s: err %v, want ErrMatchInconsistent", tc.name, err)
		}
	}
	if err := checkResubmitCt([]openflow.Action{resubmitCt(3)}, nil); ErrKind(err) != ErrMatchInconsistent {
		t.Errorf("packet-out: %v", err)
	}
	var e *Error
	if err := checkResubmitCt([]openflow.Action{resubmitCt(3)}, nil); !errors.As(err, &e) {
		t.Errorf("packet-out: %T", err)
	}
}

// TestXlateResubmitCtAllocs: the swapped lookup allocates nothing.
func TestXlateResubmitCtAllocs(t *testing.T) {
	x := testBridge(t)
	ctOrigACL(t, x)
	out := Out{Actions: make([]byte, 0, 1024)}
	k := ftpReply()
	x.Translate(&k, t0, true, &out)
	n := testing.AllocsPerRun(1000, func() {
		k.TpDst++
		x.Translate(&k, t0, true, &out)
	})
	if n != 0 {
		t.Errorf("resubmit(ct) translation allocates %v per packet", n)
	}
}
