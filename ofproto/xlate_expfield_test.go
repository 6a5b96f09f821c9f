package ofproto

import (
	"encoding/hex"
	"strings"
	"testing"
	"time"

	"github.com/govswitch/govswitch/datapath"
	"github.com/govswitch/govswitch/flow"
	"github.com/govswitch/govswitch/ofproto/openflow"
)

// The experimenter fields (tun_erspan_*, nsh_*) as move, load and pop
// destinations and move and push sources: the same datapath actions as
// set_field of the same values.

func regLoad(f openflow.Field, ofs, n uint16, v uint64) openflow.Action {
	return openflow.Action{Type: openflow.ActRegLoad, Field: f, Ofs: ofs, NBits: n, Load: v}
}

func regMove(src openflow.Field, srcOfs uint16, dst openflow.Field, ofs, n uint16) openflow.Action {
	return openflow.Action{Type: openflow.ActRegMove, Src: src, SrcOfs: srcOfs, Field: dst, Ofs: ofs, NBits: n}
}

func stackOp(typ openflow.ActionType, f openflow.Field, ofs, n uint16) openflow.Action {
	return openflow.Action{Type: typ, Field: f, Ofs: ofs, NBits: n}
}

// TestTunnelXlateErspanMove: on an erspan_ver=flow port, a move or a
// pop into tun_erspan_idx, and the masked set_field ovs-ofctl sends for
// load:...->tun_erspan_hwid[], give the set(tunnel(erspan(...))) the
// set_field of the same value gives; a move from tun_erspan_idx reads
// the received packet's index and puts it in the megaflow.
func TestTunnelXlateErspanMove(t *testing.T) {
	bk, br0, _, prov := sharedBridges(t, UpcallConfig{})
	if _, err := prov.AddNetdev("erspan_sys"); err != nil {
		t.Fatal(err)
	}
	if _, err := bk.DP.AddVport(datapath.VportSpec{Name: "erspan_sys", Type: datapath.VportNetdev}); err != nil {
		t.Fatal(err)
	}
	c, err := ParseTunnelConfig("ef", "erspan", map[string]string{"remote_ip": "172.31.1.100", "key": "1", "erspan_ver": "flow"})
	if err != nil {
		t.Fatal(err)
	}
	ef, err := br0.AddTunnelPort("ef", c, 0, PortVLAN{})
	if err != nil {
		t.Fatal(err)
	}
	p1 := br0.Ports.byName("p1")
	out := Out{Actions: make([]byte, 0, 1024)}
	run := func(acts ...openflow.Action) string {
		t.Helper()
		addRule(t, br0, p1.OFPort, 0, append(acts, openflow.Output(ef.OFPort, 0))...)
		var key flow.Key
		flow.ExtractInto(&key, synFrame(6), &flow.Metadata{InPort: p1.DPPort})
		bk.Translate(&key, time.Now(), true, &out)
		// The text shows hwid's low four bits only, as OVS prints it:
		// the bytes too.
		return datapath.FormatActions(out.Actions) + " " + hex.EncodeToString(out.Actions)
	}
	var set flow.Key
	set.Tunnel.ErspanVer, set.Tunnel.ErspanIdx = 1, 0xabcde
	ver := openflow.SetField(openflow.FieldTunErspanVer, &set)
	want := run(ver, openflow.SetField(openflow.FieldTunErspanIdx, &set))
	if !strings.Contains(want, "erspan(ver=1,idx=0xabcde)") {
		t.Fatalf("set_field tun_erspan_idx: %s", want)
	}
	for name, acts := range map[string][]openflow.Action{
		"move": {ver, regLoad(openflow.FieldReg0, 0, 20, 0xabcde), regMove(openflow.FieldReg0, 0, openflow.FieldTunErspanIdx, 0, 20)},
		"move in two": {ver, regLoad(openflow.FieldReg3, 8, 20, 0xabcde),
			regMove(openflow.FieldReg3, 8, openflow.FieldTunErspanIdx, 0, 10), regMove(openflow.FieldReg3, 18, openflow.FieldTunErspanIdx, 10, 10)},
		"push/pop": {ver, regLoad(openflow.FieldReg2, 0, 20, 0xabcde),
			stackOp(openflow.ActStackPush, openflow.FieldReg2, 0, 20), stackOp(openflow.ActStackPop, openflow.FieldTunErspanIdx, 0, 20)},
		"masked set_field (load)": {ver,
			{Type: openflow.ActSetField, Field: openflow.FieldTunErspanIdx, Value: [16]byte{0, 0x0a, 0xbc, 0xde}, Mask: [16]byte{0, 0x0f, 0xff, 0xff}, Masked: true}},
	} {
		if got := run(acts...); got != want {
			t.Errorf("%s into tun_erspan_idx: %s, want %s", name, got, want)
		}
	}
	// Version 2: hardware ID and direction by move and by ovs-ofctl's
	// load (a set_field masked to the field's 6 bits).
	set.Tunnel.ErspanVer, set.Tunnel.ErspanHwid, set.Tunnel.ErspanDir = 2, 0x15, 1
	ver = openflow.SetField(openflow.FieldTunErspanVer, &set)
	want = run(ver, openflow.SetField(openflow.FieldTunErspanHwid, &set), openflow.SetField(openflow.FieldTunErspanDir, &set))
	if !strings.Contains(want, "erspan(ver=2,dir=1,hwid=0x5)") {
		t.Fatalf("set_field tun_erspan_hwid: %s", want)
	}
	got := run(ver, regLoad(openflow.FieldReg0, 0, 7, 0x15|0x40),
		regMove(openflow.FieldReg0, 0, openflow.FieldTunErspanHwid, 0, 6), regMove(openflow.FieldReg0, 6, openflow.FieldTunErspanDir, 0, 1))
	if got != want {
		t.Errorf("move into tun_erspan_hwid and _dir: %s, want %s", got, want)
	}
	got = run(ver, openflow.Action{Type: openflow.ActSetField, Field: openflow.FieldTunErspanHwid, Value: [16]byte{0x15}, Mask: [16]byte{0x3f}, Masked: true},
		openflow.Action{Type: openflow.ActSetField, Field: openflow.FieldTunErspanDir, Value: [16]byte{1}, Mask: [16]byte{1}, Masked: true})
	if got != want {
		t.Errorf("load into tun_erspan_hwid and _dir: %s, want %s", got, want)
	}

	// The source end: the received index into pkt_mark.
	addRule(t, br0, ef.OFPort, 0, regMove(openflow.FieldTunErspanIdx, 0, openflow.FieldPktMark, 0, 20), openflow.Output(p1.OFPort, 0))
	rx := flow.Metadata{InPort: ef.DPPort, Tunnel: flow.Tunnel{ID: 1, IPv4Src: [4]byte{172, 31, 1, 100}, IPv4Dst: [4]byte{172, 31, 1, 1},
		TTL: 64, Flags: flow.TunnelKey, ErspanVer: 1, ErspanIdx: 0x12345}}
	var key flow.Key
	flow.ExtractInto(&key, synFrame(8), &rx)
	bk.Translate(&key, time.Now(), true, &out)
	if got, want := datapath.FormatActions(out.Actions), "set(skb_mark(0x12345)),"+u32s(p1.DPPort); got != want {
		t.Errorf("move from tun_erspan_idx: %s, want %s (%s)", got, want, out.Dropped)
	}
	if out.WC.Tunnel.ErspanIdx == 0 {
		t.Errorf("megaflow lacks tun_erspan_idx: %+v", out.WC.Tunnel)
	}
}

// TestXlateNSHMove: between encap(nsh) and the next encap, a move or
// pop into nsh_spi and nsh_c1 fills push_nsh as set_field does; a move
// from nsh_c1 reads the packet's context word; a pop into an NSH field of
// a packet that already has its NSH header is refused at flow_mod, as
// set_field and move are (the kernel takes no set(nsh)).
func TestXlateNSHMove(t *testing.T) {
	ip := func(k *flow.Key, m *flow.Mask) { k.EthType, m.EthType = flow.EthTypeIPv4, 0xffff }
	run := func(acts ...openflow.Action) string {
		t.Helper()
		x := testBridge(t)
		in := apply(append(append([]openflow.Action{encapNSH1}, acts...), encapEth, openflow.Output(2, 0))...)
		m := match(ip)
		if err := checkActions(&in, &m); err != nil {
			t.Fatal(err)
		}
		mustAdd(t, x, 0, ip, 100, in)
		return datapath.FormatActions(translate(x, pkt(11)).Actions)
	}
	want := run(nshSet(openflow.FieldNSHSPI, 0x12, 0x34), nshSet(openflow.FieldNSHC1, 0x11, 0x22, 0x33, 0x44))
	if !strings.Contains(want, "spi=0x1234,si=255,c1=0x11223344") {
		t.Fatalf("set_field: %s", want)
	}
	if got := run(regLoad(openflow.FieldReg0, 0, 32, 0x11223344), regLoad(openflow.FieldReg1, 0, 24, 0x1234),
		regMove(openflow.FieldReg1, 0, openflow.FieldNSHSPI, 0, 24), regMove(openflow.FieldReg0, 0, openflow.FieldNSHC1, 0, 32)); got != want {
		t.Errorf("move: %s\n  want %s", got, want)
	}
	if got := run(regLoad(openflow.FieldReg0, 0, 32, 0x11223344), regLoad(openflow.FieldReg1, 0, 24, 0x1234),
		stackOp(openflow.ActStackPush, openflow.FieldReg0, 0, 32), stackOp(openflow.ActStackPush, openflow.FieldReg1, 0, 24),
		stackOp(openflow.ActStackPop, openflow.FieldNSHSPI, 0, 24), stackOp(openflow.ActStackPop, openflow.FieldNSHC1, 0, 32)); got != want {
		t.Errorf("push/pop: %s\n  want %s", got, want)
	}

	x := testBridge(t)
	nsh := func(k *flow.Key, m *flow.Mask) { k.EthType, m.EthType = flow.EthTypeNSH, 0xffff }
	in := apply(regMove(openflow.FieldNSHC1, 0, openflow.FieldPktMark, 0, 32), stackOp(openflow.ActStackPush, openflow.FieldNSHC2, 0, 32),
		stackOp(openflow.ActStackPop, openflow.FieldReg0, 0, 32), openflow.Output(2, 0))
	m := match(nsh)
	if err := checkActions(&in, &m); err != nil {
		t.Fatal(err)
	}
	mustAdd(t, x, 0, nsh, 100, in)
	out := translate(x, nshPkt(11, 0x100, 3))
	if got, want := datapath.FormatActions(out.Actions), "set(skb_mark(0x1020304)),12"; got != want {
		t.Errorf("move from nsh_c1: %s, want %s (%s)", got, want, out.Dropped)
	}
	if out.WC.NSH.C[0] != ^uint32(0) || out.WC.NSH.C[1] != ^uint32(0) {
		t.Errorf("megaflow lacks nsh_c1 and nsh_c2: %+v", out.WC.NSH)
	}
	for name, a := range map[string]openflow.Action{
		"move": regMove(openflow.FieldReg0, 0, openflow.FieldNSHC3, 0, 32),
		"pop":  stackOp(openflow.ActStackPop, openflow.FieldNSHC3, 0, 32),
	} {
		in := apply(stackOp(openflow.ActStackPush, openflow.FieldReg0, 0, 32), a, openflow.Output(2, 0))
		if err := checkActions(&in, &m); err == nil {
			t.Errorf("%s into nsh_c3 of an NSH packet accepted", name)
		}
	}
}
