package ofproto

import (
	"strings"
	"testing"

	"github.com/govswitch/govswitch/datapath"
	"github.com/govswitch/govswitch/flow"
	"github.com/govswitch/govswitch/ofproto/openflow"
)

func nshSet(f openflow.Field, v ...byte) openflow.Action {
	a := openflow.Action{Type: openflow.ActSetField, Field: f}
	copy(a.Value[f.Size()-len(v):], v)
	return a
}

var (
	encapNSH1 = openflow.Action{Type: openflow.ActEncap, Load: uint64(openflow.PacketTypeNSH), NSHMDType: 1}
	encapEth  = openflow.Action{Type: openflow.ActEncap, Load: uint64(openflow.PacketTypeEthernet)}
	decapNext = openflow.Action{Type: openflow.ActDecap, Load: uint64(openflow.PacketTypeNextProto)}
)

// nshPkt is an MD type 1 NSH frame carrying an Ethernet frame, as OVS's
// nsh tests send.
func nshPkt(dp, spi uint32, si uint8) flow.Key {
	return flow.Key{InPort: dp, EthSrc: macA, EthDst: macB, EthType: flow.EthTypeNSH,
		NSH: flow.NSH{TTL: 8, MDType: 1, NP: flow.NSHNextEthernet, SPI: spi, SI: si,
			C: [4]uint32{0x01020304, 0x05060708, 0x090a0b0c, 0x0d0e0f10}}}
}

func recircID(acts []byte) uint32 {
	var id uint32
	datapath.WalkActions(acts, func(a *datapath.Action) error {
		if a.Type == datapath.ActionRecirc {
			id = a.ID
		}
		return nil
	})
	return id
}

// TestXlateNSHEncap: OVS's "nsh - encap header" flow. The sets after
// encap(nsh) land in push_nsh, those after encap(ethernet) in push_eth.
func TestXlateNSHEncap(t *testing.T) {
	x := testBridge(t)
	in := apply(encapNSH1, nshSet(openflow.FieldNSHSPI, 0x12, 0x34), nshSet(openflow.FieldNSHC1, 0x11, 0x22, 0x33, 0x44),
		encapEth, setEthDst([6]byte{0xf2, 0xff, 0, 0, 0, 2}), openflow.Output(2, 0))
	m := match(func(k *flow.Key, m *flow.Mask) { k.EthType, m.EthType = flow.EthTypeIPv4, 0xffff })
	if err := checkActions(&in, &m); err != nil {
		t.Fatal(err)
	}
	mustAdd(t, x, 0, func(k *flow.Key, m *flow.Mask) { k.EthType, m.EthType = flow.EthTypeIPv4, 0xffff }, 100, in)
	out := translate(x, pkt(11))
	want := "push_nsh(flags=0,ttl=63,mdtype=1,np=3,spi=0x1234,si=255,c1=0x11223344,c2=0x0,c3=0x0,c4=0x0)," +
		"push_eth(src=00:00:00:00:00:00,dst=f2:ff:00:00:00:02),12"
	if got := datapath.FormatActions(out.Actions); got != want {
		t.Errorf("encap: %s\n  want %s", got, want)
	}
}

// TestXlateNSHSetFieldPrereq: set_field nsh_spi needs an NSH packet: the
// match's, or one an encap(nsh) made.
func TestXlateNSHSetFieldPrereq(t *testing.T) {
	in := apply(nshSet(openflow.FieldNSHSPI, 1), openflow.Output(2, 0))
	m := match(func(k *flow.Key, m *flow.Mask) { k.EthType, m.EthType = flow.EthTypeIPv4, 0xffff })
	if err := checkActions(&in, &m); err == nil {
		t.Error("set_field nsh_spi on an IPv4 match accepted")
	}
	in = apply(nshSet(openflow.FieldNSHMDType, 2), openflow.Output(2, 0))
	m = match(func(k *flow.Key, m *flow.Mask) { k.EthType, m.EthType = flow.EthTypeNSH, 0xffff })
	if err := checkActions(&in, &m); err == nil {
		t.Error("set_field nsh_mdtype (read-only) accepted")
	}
}

// TestXlateNSHReplace: OVS's "nsh - decap header" and "nsh - replace
// header" flows. pop_eth and pop_nsh, with the next protocol exact in
// the megaflow, then a recirculation; the second pass encapsulates
// again.
func TestXlateNSHReplace(t *testing.T) {
	x := testBridge(t)
	in := apply(decapNext, decapNext, encapNSH1, nshSet(openflow.FieldNSHTTL, 7), nshSet(openflow.FieldNSHSPI, 1, 1),
		nshSet(openflow.FieldNSHSI, 4), nshSet(openflow.FieldNSHC4, 4, 3, 2, 1), encapEth, openflow.Output(2, 0))
	mf := func(k *flow.Key, m *flow.Mask) {
		k.EthType, m.EthType = flow.EthTypeNSH, 0xffff
		k.NSH.SPI, m.NSH.SPI = 0x100, flow.NSHSPIMask
		k.NSH.SI, m.NSH.SI = 3, 0xff
	}
	m := match(mf)
	if err := checkActions(&in, &m); err != nil {
		t.Fatal(err)
	}
	mustAdd(t, x, 0, mf, 100, in)
	out := translate(x, nshPkt(11, 0x100, 3))
	got := datapath.FormatActions(out.Actions)
	if !strings.HasPrefix(got, "pop_eth,pop_nsh(),recirc(") {
		t.Fatalf("first pass: %s", got)
	}
	if out.WC.NSH.NP != 0xff || out.WC.NSH.SPI != flow.NSHSPIMask || out.WC.NSH.SI != 0xff || out.WC.EthType != 0xffff {
		t.Errorf("first pass megaflow: %+v", out.WC.NSH)
	}
	k := pkt(11)
	k.RecircID = recircID(out.Actions)
	want := "push_nsh(flags=0,ttl=7,mdtype=1,np=3,spi=0x101,si=4,c1=0x0,c2=0x0,c3=0x0,c4=0x4030201)," +
		"push_eth(src=00:00:00:00:00:00,dst=00:00:00:00:00:00),12"
	if got := datapath.FormatActions(translate(x, k).Actions); got != want {
		t.Errorf("second pass: %s\n  want %s", got, want)
	}
	// A next protocol other than Ethernet leaves a bare packet: refused.
	k = nshPkt(11, 0x100, 3)
	k.NSH.NP = flow.NSHNextIPv4
	if out := translate(x, k); len(out.Actions) != 0 || out.Dropped == "" || out.WC.NSH.NP != 0xff {
		t.Errorf("decap to IPv4: %s, dropped %q", datapath.FormatActions(out.Actions), out.Dropped)
	}
}

// TestXlateNSHForward: OVS's "nsh - forward" flows. A set_field on an
// NSH packet the datapath has would be a set(nsh), which the kernel
// refuses: refused at flow_mod (and a drop in translation, commitSetNSH).
func TestXlateNSHForward(t *testing.T) {
	x := testBridge(t)
	for si, port := range map[uint8]uint32{2: 1, 1: 2} {
		si := si
		mustAdd(t, x, 0, func(k *flow.Key, m *flow.Mask) {
			k.EthType, m.EthType = flow.EthTypeNSH, 0xffff
			k.NSH.SPI, m.NSH.SPI = 0x100, flow.NSHSPIMask
			k.NSH.SI, m.NSH.SI = si, 0xff
		}, 100, apply(openflow.Output(port, 0)))
	}
	for _, tc := range []struct {
		spi  uint32
		si   uint8
		want string
	}{
		{0x100, 2, "11"},
		{0x100, 1, "12"},
	} {
		out := translate(x, nshPkt(13, tc.spi, tc.si))
		if got := datapath.FormatActions(out.Actions); got != tc.want {
			t.Errorf("spi %#x si %d: %s, want %s", tc.spi, tc.si, got, tc.want)
		}
		if out.WC.NSH.SPI != flow.NSHSPIMask || out.WC.NSH.SI != 0xff {
			t.Errorf("megaflow does not match spi and si: %+v", out.WC.NSH)
		}
	}
	mf := func(k *flow.Key, m *flow.Mask) { k.EthType, m.EthType = flow.EthTypeNSH, 0xffff }
	in := apply(nshSet(openflow.FieldNSHSI, 9), openflow.Output(1, 0))
	m := match(mf)
	if err := checkActions(&in, &m); err == nil {
		t.Error("set_field nsh_si on an NSH packet accepted")
	}
	in = apply(encapNSH1, encapEth, nshSet(openflow.FieldNSHSI, 9), openflow.Output(1, 0))
	if err := checkActions(&in, &m); err == nil {
		t.Error("set_field nsh_si after the encap(nsh) was committed accepted")
	}
}

// TestXlateNSHEncapMD2: encap(nsh(md_type=2,tlv(...))) carries the tlvs
// as push_nsh's MD type 2 metadata, as OVS's nsh.at shows; MD type 2
// without a tlv is refused (the kernel takes no push_nsh without
// metadata), and so are other MD types.
func TestXlateNSHEncapMD2(t *testing.T) {
	x := testBridge(t)
	md2 := openflow.Action{Type: openflow.ActEncap, Load: uint64(openflow.PacketTypeNSH), NSHMDType: 2,
		Data: []byte{0x10, 0x00, 0x0a, 0x04, 0x12, 0x34, 0x56, 0x78, 0x20, 0x00, 0x14, 0x08,
			0xfe, 0xdc, 0xba, 0x98, 0x76, 0x54, 0x32, 0x10}}
	in := apply(md2, nshSet(openflow.FieldNSHSPI, 0x12, 0x34), encapEth, openflow.Output(2, 0))
	m := match(func(k *flow.Key, m *flow.Mask) { k.EthType, m.EthType = flow.EthTypeIPv4, 0xffff })
	if err := checkActions(&in, &m); err != nil {
		t.Fatal(err)
	}
	mustAdd(t, x, 0, func(k *flow.Key, m *flow.Mask) { k.EthType, m.EthType = flow.EthTypeIPv4, 0xffff }, 100, in)
	want := "push_nsh(flags=0,ttl=63,mdtype=2,np=3,spi=0x1234,si=255,md2=0x10000a041234567820001408fedcba9876543210)," +
		"push_eth(src=00:00:00:00:00:00,dst=00:00:00:00:00:00),12"
	if got := datapath.FormatActions(translate(x, pkt(11)).Actions); got != want {
		t.Errorf("encap md2: %s\n  want %s", got, want)
	}
	for _, bad := range []openflow.Action{
		{Type: openflow.ActEncap, Load: uint64(openflow.PacketTypeNSH), NSHMDType: 2},
		{Type: openflow.ActEncap, Load: uint64(openflow.PacketTypeNSH), NSHMDType: 3},
	} {
		in := apply(bad, encapEth, openflow.Output(2, 0))
		if err := checkActions(&in, &m); err == nil {
			t.Errorf("encap(nsh(md_type=%d)) with %d bytes of tlvs accepted", bad.NSHMDType, len(bad.Data))
		}
	}
}
