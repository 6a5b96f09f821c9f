package ofproto

import (
	"strings"
	"testing"

	"github.com/govswitch/govswitch/datapath"
	"github.com/govswitch/govswitch/flow"
	"github.com/govswitch/govswitch/ofproto/openflow"
)

// mplsPkt is an MPLS packet with one label (label, TC 0, BoS, TTL 64)
// from macA to macB on datapath port dp.
func mplsPkt(dp uint32, label uint32) flow.Key {
	return flow.Key{InPort: dp, EthSrc: macA, EthDst: macB, EthType: flow.EthTypeMPLS,
		MPLSLSE: label<<12 | mplsBoSMask | 64}
}

func TestXlateMPLS(t *testing.T) {
	tests := []struct {
		name string
		k    flow.Key
		acts []openflow.Action
		want string
	}{
		{"push and label", pkt(11), []openflow.Action{{Type: openflow.ActPushMPLS, EthType: flow.EthTypeMPLS},
			{Type: openflow.ActSetMPLSLabel, Load: 3}, openflow.Output(2, 0)},
			"push_mpls(label=3,tc=0,ttl=64,bos=1,eth_type=0x8847),12"},
		{"set ip then push", pkt(11), []openflow.Action{func() openflow.Action {
			a := openflow.Action{Type: openflow.ActSetField, Field: openflow.FieldIPv4Dst}
			copy(a.Value[:], []byte{10, 0, 0, 9})
			return a
		}(), {Type: openflow.ActPushMPLS, EthType: flow.EthTypeMPLSM}, {Type: openflow.ActSetMPLSTC, VLANPCP: 5},
			{Type: openflow.ActDecMPLSTTL}, openflow.Output(2, 0)},
			"set(ipv4(dst=10.0.0.9)),push_mpls(label=0,tc=5,ttl=63,bos=1,eth_type=0x8848),12"},
		{"pop and output", mplsPkt(11, 3), []openflow.Action{{Type: openflow.ActPopMPLS, EthType: flow.EthTypeIPv4},
			openflow.Output(2, 0)},
			"pop_mpls(eth_type=0x800),12"},
		{"set label", mplsPkt(11, 3), []openflow.Action{{Type: openflow.ActSetMPLSLabel, Load: 7},
			{Type: openflow.ActSetMPLSTTL, TTL: 9}, openflow.Output(2, 0)},
			"set(mpls(label=7,tc=0,ttl=9,bos=1)),12"},
		{"ttl expired", mplsPkt(11, 3), []openflow.Action{{Type: openflow.ActSetMPLSTTL, TTL: 1},
			{Type: openflow.ActDecMPLSTTL}, openflow.Output(2, 0)}, "drop"},
		{"push on a label", mplsPkt(11, 3), []openflow.Action{{Type: openflow.ActPushMPLS, EthType: flow.EthTypeMPLS},
			{Type: openflow.ActSetMPLSLabel, Load: 4}, openflow.Output(2, 0)},
			"push_mpls(label=3,tc=0,ttl=64,bos=0,eth_type=0x8847),set(mpls(label=4,tc=0,ttl=64,bos=0)),12"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			x := testBridge(t)
			if err := checkSupported(tc.acts); err != nil {
				t.Fatal(err)
			}
			et := tc.k.EthType
			m := func(k *flow.Key, m *flow.Mask) { k.EthType, m.EthType = et, 0xffff }
			mustAdd(t, x, 0, m, 1, apply(tc.acts...))
			out := translate(x, tc.k)
			if got := datapath.FormatActions(out.Actions); got != tc.want {
				t.Errorf("actions %s\n         want %s", got, tc.want)
			}
		})
	}
}

// TestXlateMPLSRecirc: after a pop to IP, a resubmit needs the IP header
// the datapath has not parsed: the translation recirculates and the
// packet, back with the new key, resumes at the resubmit.
func TestXlateMPLSRecirc(t *testing.T) {
	x := testBridge(t)
	mustAdd(t, x, 0, func(k *flow.Key, m *flow.Mask) {
		k.EthType, m.EthType = flow.EthTypeMPLS, 0xffff
		k.MPLSLSE, m.MPLSLSE = 3<<12, mplsLabelMask
	}, 100, apply(openflow.Action{Type: openflow.ActPopMPLS, EthType: flow.EthTypeIPv4}, openflow.Resubmit(openflow.PortInPort, 1)))
	mustAdd(t, x, 1, func(k *flow.Key, m *flow.Mask) {
		k.EthType, m.EthType = flow.EthTypeIPv4, 0xffff
		k.IPv4Dst, m.IPv4Dst = [4]byte{10, 0, 0, 2}, [4]byte{255, 255, 255, 255}
	}, 10, apply(openflow.Output(2, 0)))
	out := translate(x, mplsPkt(11, 3))
	got := datapath.FormatActions(out.Actions)
	if !strings.HasPrefix(got, "pop_mpls(eth_type=0x800),recirc(") {
		t.Fatalf("first pass: %s", got)
	}
	if out.WC.MPLSLSE != mplsLabelMask|mplsBoSMask {
		t.Errorf("first pass megaflow MPLS mask %#x", out.WC.MPLSLSE)
	}
	var id uint32
	if err := datapath.WalkActions(out.Actions, func(a *datapath.Action) error {
		if a.Type == datapath.ActionRecirc {
			id = a.ID
		}
		return nil
	}); err != nil || id == 0 {
		t.Fatalf("no recirc id: %v", err)
	}
	k := pkt(11)
	k.RecircID = id
	if got := datapath.FormatActions(translate(x, k).Actions); got != "12" {
		t.Errorf("second pass: %s, want 12", got)
	}
	// A pop then a goto_table recirculates at the end of the actions.
	x2 := testBridge(t)
	mustAdd(t, x2, 0, func(k *flow.Key, m *flow.Mask) { k.EthType, m.EthType = flow.EthTypeMPLS, 0xffff }, 1, openflow.Instructions{
		Apply: []openflow.Action{{Type: openflow.ActPopMPLS, EthType: flow.EthTypeIPv4}}, GotoTable: true, Table: 1})
	mustAdd(t, x2, 1, func(*flow.Key, *flow.Mask) {}, 1, apply(openflow.Output(3, 0)))
	out = translate(x2, mplsPkt(11, 3))
	if got := datapath.FormatActions(out.Actions); !strings.HasPrefix(got, "pop_mpls(eth_type=0x800),recirc(") {
		t.Fatalf("goto: first pass %s", got)
	}
}

// TestXlateMPLSRecircInResubmit: a pop to IP inside a resubmit, then a
// resubmit that needs the IP header: the translation freezes as a
// continuation (the inner level's rest, then the outer rule's), the
// packet recirculates, and back with the new key it resumes at the inner
// resubmit and then runs what the outer rule had left (OVS test 32's
// label-by-label pops).
func TestXlateMPLSRecircInResubmit(t *testing.T) {
	x := testBridge(t)
	mustAdd(t, x, 0, func(k *flow.Key, m *flow.Mask) {
		k.EthType, m.EthType = flow.EthTypeMPLS, 0xffff
	}, 100, apply(openflow.Resubmit(openflow.PortInPort, 1), openflow.Output(3, 0)))
	mustAdd(t, x, 1, func(k *flow.Key, m *flow.Mask) {
		k.EthType, m.EthType = flow.EthTypeMPLS, 0xffff
	}, 100, apply(openflow.Action{Type: openflow.ActPopMPLS, EthType: flow.EthTypeIPv4}, openflow.Resubmit(openflow.PortInPort, 2)))
	mustAdd(t, x, 2, func(k *flow.Key, m *flow.Mask) {
		k.EthType, m.EthType = flow.EthTypeIPv4, 0xffff
		k.IPv4Dst, m.IPv4Dst = [4]byte{10, 0, 0, 2}, [4]byte{255, 255, 255, 255}
	}, 10, apply(openflow.Output(2, 0)))
	out := translate(x, mplsPkt(11, 3))
	got := datapath.FormatActions(out.Actions)
	if !strings.HasPrefix(got, "pop_mpls(eth_type=0x800),recirc(") || out.Dropped != "" {
		t.Fatalf("first pass: %s (dropped %q)", got, out.Dropped)
	}
	var id uint32
	datapath.WalkActions(out.Actions, func(a *datapath.Action) error {
		if a.Type == datapath.ActionRecirc {
			id = a.ID
		}
		return nil
	})
	// The same freeze again shares the id.
	if again := datapath.FormatActions(translate(x, mplsPkt(11, 3)).Actions); again != got {
		t.Errorf("second packet: %s, want %s", again, got)
	}
	k := pkt(11)
	k.RecircID = id
	if got := datapath.FormatActions(translate(x, k).Actions); got != "12,13" {
		t.Errorf("resumed: %s, want 12,13 (table 2's output, then the outer rule's)", got)
	}
}

func TestXlateMPLSAllocs(t *testing.T) {
	x := testBridge(t)
	mustAdd(t, x, 0, func(k *flow.Key, m *flow.Mask) { k.EthType, m.EthType = flow.EthTypeIPv4, 0xffff }, 1, apply(openflow.Action{Type: openflow.ActPushMPLS, EthType: flow.EthTypeMPLS},
		openflow.Action{Type: openflow.ActSetMPLSLabel, Load: 3}, openflow.Action{Type: openflow.ActDecMPLSTTL}, openflow.Output(2, 0)))
	k := pkt(11)
	var out Out
	x.Translate(&k, t0, false, &out)
	if n := testing.AllocsPerRun(100, func() { x.Translate(&k, t0, false, &out) }); n != 0 {
		t.Errorf("%v allocations per translation", n)
	}
}

// TestXlateEncapDecapMPLS: OVS test 33's flows. Encap side: add_mpls with
// the label set after it, then push_eth with the addresses set after
// it. Decap side: pop_eth, pop_mpls to Ethernet, recirculate, and output
// in the second pass.
func TestXlateEncapDecapMPLS(t *testing.T) {
	x := testBridge(t)
	dst, src := setEthDst([6]byte{0, 0, 0, 0, 0, 2}), openflow.Action{Type: openflow.ActSetField, Field: openflow.FieldEthSrc}
	src.Value[5] = 1
	encap := []openflow.Action{{Type: openflow.ActEncap, Load: uint64(openflow.PacketTypeMPLS)},
		{Type: openflow.ActSetMPLSLabel, Load: 2}, {Type: openflow.ActEncap, Load: uint64(openflow.PacketTypeEthernet)},
		dst, src, openflow.Output(2, 0)}
	in := openflow.Instructions{Apply: encap}
	m := match(func(k *flow.Key, m *flow.Mask) { k.InPort, m.InPort = 1, ^uint32(0) })
	if err := checkActions(&in, &m); err != nil {
		t.Fatal(err)
	}
	mustAdd(t, x, 0, func(k *flow.Key, m *flow.Mask) { k.InPort, m.InPort = 1, ^uint32(0) }, 100, in)
	decap := []openflow.Action{{Type: openflow.ActDecap, Load: uint64(openflow.PacketTypeNextProto)},
		{Type: openflow.ActDecap, Load: uint64(openflow.PacketTypeEthernet)}, openflow.Output(1, 0)}
	in = openflow.Instructions{Apply: decap}
	m = match(func(k *flow.Key, m *flow.Mask) {
		k.EthType, m.EthType = flow.EthTypeMPLS, 0xffff
		k.MPLSLSE, m.MPLSLSE = 2<<12, mplsLabelMask
	})
	if err := checkActions(&in, &m); err != nil {
		t.Fatal(err)
	}
	mustAdd(t, x, 0, func(k *flow.Key, m *flow.Mask) {
		k.EthType, m.EthType = flow.EthTypeMPLS, 0xffff
		k.MPLSLSE, m.MPLSLSE = 2<<12, mplsLabelMask
	}, 100, in)

	out := translate(x, pkt(11))
	want := "add_mpls(label=2,tc=0,ttl=64,bos=1,eth_type=0x8847),push_eth(src=00:00:00:00:00:01,dst=00:00:00:00:00:02),12"
	if got := datapath.FormatActions(out.Actions); got != want {
		t.Errorf("encap: %s\n  want %s", got, want)
	}
	out = translate(x, mplsPkt(12, 2))
	got := datapath.FormatActions(out.Actions)
	if !strings.HasPrefix(got, "pop_eth,pop_mpls(eth_type=0x6558),recirc(") {
		t.Fatalf("decap first pass: %s", got)
	}
	var id uint32
	datapath.WalkActions(out.Actions, func(a *datapath.Action) error {
		if a.Type == datapath.ActionRecirc {
			id = a.ID
		}
		return nil
	})
	k := pkt(12)
	k.RecircID = id
	if got := datapath.FormatActions(translate(x, k).Actions); got != "11" {
		t.Errorf("decap second pass: %s, want 11", got)
	}
}

// TestXlateEncapDecapTwoLabels: OVS test 35's flows: two encap(mpls),
// then decap(), a decap to MPLS that pops the outer label, and a decap to
// Ethernet that pops the inner one and recirculates.
func TestXlateEncapDecapTwoLabels(t *testing.T) {
	x := testBridge(t)
	mustAdd(t, x, 0, func(k *flow.Key, m *flow.Mask) { k.InPort, m.InPort = 1, ^uint32(0) }, 100, apply(
		openflow.Action{Type: openflow.ActEncap, Load: uint64(openflow.PacketTypeMPLS)},
		openflow.Action{Type: openflow.ActSetMPLSLabel, Load: 3},
		openflow.Action{Type: openflow.ActEncap, Load: uint64(openflow.PacketTypeMPLS)},
		openflow.Action{Type: openflow.ActSetMPLSLabel, Load: 2},
		openflow.Action{Type: openflow.ActEncap, Load: uint64(openflow.PacketTypeEthernet)},
		openflow.Output(2, 0)))
	mustAdd(t, x, 0, func(k *flow.Key, m *flow.Mask) {
		k.EthType, m.EthType = flow.EthTypeMPLS, 0xffff
		k.MPLSLSE, m.MPLSLSE = 2<<12, mplsLabelMask
	}, 100, apply(openflow.Action{Type: openflow.ActDecap, Load: uint64(openflow.PacketTypeNextProto)},
		openflow.Action{Type: openflow.ActDecap, Load: uint64(openflow.PacketTypeMPLS)},
		openflow.Action{Type: openflow.ActDecap, Load: uint64(openflow.PacketTypeEthernet)},
		openflow.Output(1, 0)))
	want := "add_mpls(label=3,tc=0,ttl=64,bos=1,eth_type=0x8847),add_mpls(label=2,tc=0,ttl=64,bos=0,eth_type=0x8847)," +
		"push_eth(src=00:00:00:00:00:00,dst=00:00:00:00:00:00),12"
	if got := datapath.FormatActions(translate(x, pkt(11)).Actions); got != want {
		t.Errorf("encap: %s\n  want %s", got, want)
	}
	k := mplsPkt(12, 2)
	k.MPLSLSE &^= mplsBoSMask
	if got := datapath.FormatActions(translate(x, k).Actions); !strings.HasPrefix(got, "pop_eth,pop_mpls(eth_type=0x8847),pop_mpls(eth_type=0x6558),recirc(") {
		t.Errorf("decap: %s", got)
	}
}

// TestXlateDecapToIP: OVS test 38's decap side. decap() pops the
// Ethernet header, decap to IPv4 pops the only label, encap(ethernet)
// and the address sets need no IP header and go into push_eth, and the
// resubmit, which does, recirculates an Ethernet frame.
func TestXlateDecapToIP(t *testing.T) {
	x := testBridge(t)
	src := openflow.Action{Type: openflow.ActSetField, Field: openflow.FieldEthSrc}
	src.Value[5] = 1
	in := apply(openflow.Action{Type: openflow.ActDecap, Load: uint64(openflow.PacketTypeNextProto)},
		openflow.Action{Type: openflow.ActDecap, Load: uint64(openflow.PacketTypeIPv4)},
		openflow.Action{Type: openflow.ActEncap, Load: uint64(openflow.PacketTypeEthernet)},
		setEthDst([6]byte{0, 0, 0, 0, 0, 2}), src, openflow.Resubmit(openflow.PortInPort, 3))
	mustAdd(t, x, 0, func(k *flow.Key, m *flow.Mask) {
		k.EthType, m.EthType = flow.EthTypeMPLS, 0xffff
		k.MPLSLSE, m.MPLSLSE = 2<<12, mplsLabelMask
	}, 100, in)
	mustAdd(t, x, 3, func(k *flow.Key, m *flow.Mask) {
		k.EthType, m.EthType = flow.EthTypeIPv4, 0xffff
		k.EthDst, m.EthDst = [6]byte{0, 0, 0, 0, 0, 2}, ones6
		k.IPv4Dst, m.IPv4Dst = [4]byte{10, 0, 0, 2}, [4]byte{255, 255, 255, 255}
	}, 10, apply(openflow.Output(1, 0)))

	out := translate(x, mplsPkt(12, 2))
	got := datapath.FormatActions(out.Actions)
	if want := "pop_eth,pop_mpls(eth_type=0x800),push_eth(src=00:00:00:00:00:01,dst=00:00:00:00:00:02),recirc("; !strings.HasPrefix(got, want) || out.Dropped != "" {
		t.Fatalf("first pass: %s (dropped %q)\n      want %s...", got, out.Dropped, want)
	}
	if out.WC.MPLSLSE != mplsLabelMask|mplsBoSMask {
		t.Errorf("first pass megaflow MPLS mask %#x", out.WC.MPLSLSE)
	}
	var id uint32
	datapath.WalkActions(out.Actions, func(a *datapath.Action) error {
		if a.Type == datapath.ActionRecirc {
			id = a.ID
		}
		return nil
	})
	// Back from the datapath: the Ethernet/IPv4 frame push_eth made.
	k := pkt(12)
	k.EthSrc, k.EthDst = [6]byte{0, 0, 0, 0, 0, 1}, [6]byte{0, 0, 0, 0, 0, 2}
	k.RecircID = id
	if got := datapath.FormatActions(translate(x, k).Actions); got != "11" {
		t.Errorf("second pass: %s, want 11", got)
	}

	// A label that is not the last cannot go to IP.
	k = mplsPkt(12, 2)
	k.MPLSLSE &^= mplsBoSMask
	if out := translate(x, k); out.Dropped == "" {
		t.Errorf("two labels: %s, want a drop", datapath.FormatActions(out.Actions))
	}
}

// TestXlateDecapToIPRefused: what would recirculate a packet popped to
// IP before an encap(ethernet) gave it an Ethernet header is refused at
// flow_mod time, or, where the flow_mod check cannot see it (the bare
// packet came from another table), dropped in translation.
func TestXlateDecapToIPRefused(t *testing.T) {
	decap := openflow.Action{Type: openflow.ActDecap, Load: uint64(openflow.PacketTypeNextProto)}
	toIP := openflow.Action{Type: openflow.ActDecap, Load: uint64(openflow.PacketTypeIPv4)}
	ethEncap := openflow.Action{Type: openflow.ActEncap, Load: uint64(openflow.PacketTypeEthernet)}
	popIP := openflow.Action{Type: openflow.ActPopMPLS, EthType: flow.EthTypeIPv4}
	setIP := openflow.Action{Type: openflow.ActSetField, Field: openflow.FieldIPv4Dst}
	copy(setIP.Value[:], []byte{10, 0, 0, 9})
	mplsMatch := match(func(k *flow.Key, m *flow.Mask) { k.EthType, m.EthType = flow.EthTypeMPLS, 0xffff })
	tests := []struct {
		name string
		in   openflow.Instructions
		ok   bool
	}{
		{"encap then resubmit", apply(decap, toIP, ethEncap, openflow.Resubmit(openflow.PortInPort, 3)), true},
		{"encap then set ip", apply(decap, toIP, ethEncap, setIP, openflow.Output(1, 0)), true},
		{"output only", apply(decap, toIP, openflow.Output(1, 0)), true},
		{"resubmit", apply(decap, toIP, openflow.Resubmit(openflow.PortInPort, 3)), false},
		{"set ip", apply(decap, toIP, setIP, ethEncap, openflow.Output(1, 0)), false},
		{"decap again", apply(decap, toIP, decap), false},
		{"pop_mpls then resubmit", apply(decap, popIP, openflow.Resubmit(openflow.PortInPort, 3)), false},
		{"pop_mpls, encap, resubmit", apply(decap, popIP, ethEncap, openflow.Resubmit(openflow.PortInPort, 3)), true},
		{"goto", openflow.Instructions{Apply: []openflow.Action{decap, toIP}, GotoTable: true, Table: 3}, false},
		{"encap then goto", openflow.Instructions{Apply: []openflow.Action{decap, toIP, ethEncap}, GotoTable: true, Table: 3}, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := mplsMatch
			err := checkActions(&tc.in, &m)
			if tc.ok && err != nil {
				t.Fatalf("refused: %v", err)
			}
			if !tc.ok && ErrKind(err) != ErrUnsupportedNXAction {
				t.Fatalf("got %v, want an ErrUnsupportedNXAction refusal", err)
			}
		})
	}

	// decap() in one table, the pop to IP and a resubmit in the next:
	// the flow_mod check takes the second table's packet for an
	// Ethernet frame, translation sees it is not.
	x := testBridge(t)
	mustAdd(t, x, 0, func(k *flow.Key, m *flow.Mask) { k.EthType, m.EthType = flow.EthTypeMPLS, 0xffff }, 1,
		apply(decap, openflow.Resubmit(openflow.PortInPort, 1)))
	mustAdd(t, x, 1, func(k *flow.Key, m *flow.Mask) { k.EthType, m.EthType = flow.EthTypeMPLS, 0xffff }, 1,
		apply(toIP, openflow.Resubmit(openflow.PortInPort, 2)))
	out := translate(x, mplsPkt(12, 2))
	if !strings.Contains(out.Dropped, "without an Ethernet header") {
		t.Errorf("got %s (dropped %q), want a drop naming the missing Ethernet header", datapath.FormatActions(out.Actions), out.Dropped)
	}
}
