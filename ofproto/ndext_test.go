package ofproto

import (
	"encoding/binary"
	"testing"
	"time"

	"github.com/govswitch/govswitch/classifier"
	"github.com/govswitch/govswitch/flow"
	"github.com/govswitch/govswitch/ofproto/openflow"
)

// ndFrame is an ICMPv6 neighbour solicitation (typ 135) or advertisement
// (136) whose reserved word is reserved, with one 8-byte link-layer
// address option of type opt (0: none). The checksum is not computed: the
// switch does not check it.
func ndFrame(typ uint8, reserved uint32, opt uint8) []byte {
	n := 24
	if opt != 0 {
		n += 8
	}
	b := make([]byte, 14+40+n)
	copy(b[0:], macB[:])
	copy(b[6:], macA[:])
	binary.BigEndian.PutUint16(b[12:], flow.EthTypeIPv6)
	ip := b[14:]
	ip[0] = 0x60
	binary.BigEndian.PutUint16(ip[4:], uint16(n))
	ip[6], ip[7] = flow.IPProtoICMPv6, 255
	ip[8], ip[23] = 0xfe, 1
	ip[24], ip[39] = 0xfe, 2
	icmp := ip[40:]
	icmp[0] = typ
	binary.BigEndian.PutUint32(icmp[4:], reserved)
	icmp[8], icmp[23] = 0xfe, 9
	if opt != 0 {
		icmp[24], icmp[25] = opt, 1
		copy(icmp[26:], macA[:])
	}
	return b
}

// TestNDExtEndToEnd: rules on nd_reserved and nd_options_type match the
// ND messages' own bytes (the datapath key has neither), the matching
// ones are forwarded and the others not, and no datapath flow is
// installed for any of them, as ovs-vswitchd does on the Linux datapath.
func TestNDExtEndToEnd(t *testing.T) {
	b, prov := dummyBridge(t, UpcallConfig{RevalidateInterval: time.Hour})
	nd := func(typ uint16) classifier.Match {
		var m classifier.Match
		m.Key.EthType, m.Mask.EthType = flow.EthTypeIPv6, 0xffff
		m.Key.NwProto, m.Mask.NwProto = flow.IPProtoICMPv6, 0xff
		m.Key.TpSrc, m.Mask.TpSrc = typ, 0xffff
		return m
	}
	na, ns := nd(136), nd(135)
	na.Key.NDReserved, na.Mask.NDReserved = 0x60000000, 0xffffffff
	ns.Key.NDOptionsType, ns.Mask.NDOptionsType = 1, 0xff
	drop := classifier.Match{}
	drop.Key.EthType, drop.Mask.EthType = flow.EthTypeIPv6, 0xffff
	for _, fm := range []FlowMod{
		{Command: CmdAdd, Priority: 100, Match: na, OutPort: openflow.PortAny,
			Instructions: openflow.Instructions{Apply: []openflow.Action{openflow.Output(2, 0)}}},
		{Command: CmdAdd, Priority: 100, Match: ns, OutPort: openflow.PortAny,
			Instructions: openflow.Instructions{Apply: []openflow.Action{openflow.Output(2, 0)}}},
		{Command: CmdAdd, Priority: 50, Match: drop, OutPort: openflow.PortAny},
	} {
		if err := b.Tables.Apply(&fm, time.Now()); err != nil {
			t.Fatal(err)
		}
	}
	b.Start()
	defer b.Stop()
	p1, p2 := prov.Netdev("p1"), prov.Netdev("p2")
	for _, c := range []struct {
		name     string
		frame    []byte
		forwards bool
	}{
		{"solicited override NA", ndFrame(136, 0x60000000, 2), true},
		{"solicited NA", ndFrame(136, 0x40000000, 2), false},
		{"NS with source LL", ndFrame(135, 0, 1), true},
		{"NS without options", ndFrame(135, 0, 0), false},
		{"solicited override NA again", ndFrame(136, 0x60000000, 0), true},
	} {
		p1.Send(c.frame)
		_, err := p2.Recv(300 * time.Millisecond)
		if c.forwards && err != nil {
			t.Errorf("%s: not forwarded: %v", c.name, err)
		}
		if !c.forwards && err == nil {
			t.Errorf("%s: forwarded", c.name)
		}
	}
	st := b.Udpif.Stats()
	if st.Misses != 5 || st.NDExtExecutes != 5 || st.FlowsInstalled != 0 {
		t.Errorf("misses %d, nd_ext executes %d, flows installed %d; want 5, 5, 0", st.Misses, st.NDExtExecutes, st.FlowsInstalled)
	}
	if dps, _ := b.DP.Stats(); dps.Flows != 0 {
		t.Errorf("%d datapath flows, want none", dps.Flows)
	}
}

// TestNeedsNDExt: a megaflow that un-wildcards either ND extension field
// (or, exact-match, any ND packet's) is never a datapath flow.
func TestNeedsNDExt(t *testing.T) {
	k := flow.Extract(ndFrame(136, 0, 0), flow.Metadata{})
	if needsNDExt(&k, &flow.Mask{}, false) {
		t.Error("empty mask")
	}
	if !needsNDExt(&k, &flow.Mask{NDReserved: 1}, false) || !needsNDExt(&k, &flow.Mask{NDOptionsType: 1}, false) {
		t.Error("mask with ND extension bits")
	}
	if !needsNDExt(&k, &flow.Mask{}, true) {
		t.Error("exact-match ND packet")
	}
	s := flow.Extract(synFrame(1), flow.Metadata{})
	if needsNDExt(&s, &flow.Mask{}, true) {
		t.Error("exact-match TCP packet")
	}
}
