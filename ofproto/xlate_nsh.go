package ofproto

import (
	"github.com/govswitch/govswitch/datapath"
	"github.com/govswitch/govswitch/flow"
	"github.com/govswitch/govswitch/ofproto/openflow"
)

// Translation of NSH (RFC 8300), as ofproto-dpif-xlate.c's
// rewrite_flow_encap_nsh and xlate_generic_decap with the datapath's
// push_nsh, pop_nsh and masked set(nsh):
//
//   - encap(nsh(md_type=1|2,...)) of an Ethernet frame (next protocol
//     Ethernet) or of a bare IPv4, IPv6, MPLS or NSH packet makes the
//     packet an NSH packet without Ethernet: flags 0, ttl 63, spi 0,
//     si 255, zero context (MD type 1) or the tlv properties as MD type 2
//     metadata. The push_nsh is emitted at the next commit, so the
//     set_field nsh_* in between land in it, as OVS's pending encap;
//   - decap() of an NSH packet (after a decap() of its Ethernet header)
//     is pop_nsh; the next protocol becomes exact in the megaflow (the
//     kernel checks pop_nsh against it). Under an Ethernet next protocol
//     the inner frame is parsed after a recirculation, as OVS does; other
//     next protocols leave a bare L3 packet, which this switch's tables do
//     not see, and the translation ends in a drop;
//   - set_field of nsh_flags, nsh_ttl, nsh_spi, nsh_si, nsh_c1..c4 is
//     carried out between an encap(nsh) and the next encap, in push_nsh.
//     On an NSH packet the datapath already has it would be a masked
//     set(nsh(...)), which the kernel refuses: such flows are refused
//     (commitSetNSH, nshSetCheck).

// nshEncap is the NSH part of encapState: a pending push_nsh.
type nshEncap struct {
	push bool
	md2  string // MD type 2 metadata of the pending push (a string keeps encapState comparable)
}

func (c *xctx) encapNSH(a *openflow.Action) {
	f, e, wc := &c.flow, &c.encap, &c.out.WC
	var np uint8
	switch {
	case !e.noEth:
		wc.VLANs[0].TCI |= flow.VLANPresent
		if f.VLANs[0].TCI&flow.VLANPresent != 0 {
			c.unsupportedHere("encap(nsh) of a VLAN-tagged frame")
			return
		}
		np = flow.NSHNextEthernet
	case f.EthType == flow.EthTypeIPv4:
		np = flow.NSHNextIPv4
	case f.EthType == flow.EthTypeIPv6:
		np = flow.NSHNextIPv6
	case isMPLS(f.EthType):
		np = flow.NSHNextMPLS
	case f.EthType == flow.EthTypeNSH:
		np = flow.NSHNextNSH
	default:
		c.unsupportedHere("encap(nsh) of this packet type")
		return
	}
	md := a.NSHMDType
	if md == 0 {
		md = flow.NSHMDType1
	}
	wc.EthType = 0xffff
	f.NSH = flow.NSH{TTL: 63, MDType: md, NP: np, SI: 255}
	e.nsh = nshEncap{push: true}
	if md == flow.NSHMDType2 {
		e.nsh.md2 = string(a.Data)
	}
	f.EthType = flow.EthTypeNSH
	f.EthSrc, f.EthDst = [6]byte{}, [6]byte{}
	e.noEth = true
}

// decapNSH pops the NSH header of a packet without Ethernet.
func (c *xctx) decapNSH(a *openflow.Action) {
	f, e, wc := &c.flow, &c.encap, &c.out.WC
	if pt := uint32(a.Load); pt != openflow.PacketTypeNextProto && pt != openflow.PacketTypeEthernet {
		c.unsupportedHere("decap of an NSH packet to a packet type other than its next protocol")
		return
	}
	wc.NSH.NP = 0xff
	if f.NSH.NP != flow.NSHNextEthernet {
		c.unsupportedHere("decap of an NSH packet whose next protocol is not Ethernet")
		return
	}
	c.out.Actions = datapath.AppendPopNSH(c.out.Actions)
	f.EthType, f.NSH = ethTypeTEB, flow.NSH{}
	c.base.EthType, c.base.NSH = ethTypeTEB, flow.NSH{}
	e.noEth, e.baseNoEth = false, false
	e.freezeNext = true
}

// commitPushNSH emits a pending push_nsh of the flow's header.
func (c *xctx) commitPushNSH(acts []byte) []byte {
	f, b, e := &c.flow, &c.base, &c.encap
	acts = datapath.AppendPushNSH(acts, &f.NSH, []byte(e.nsh.md2))
	b.EthType, b.NSH = f.EthType, f.NSH
	b.EthSrc, b.EthDst = [6]byte{}, [6]byte{}
	e.baseNoEth = true
	e.nsh = nshEncap{}
	return acts
}

// commitSetNSH is a set_field of NSH fields on an NSH packet the
// datapath already has. OVS emits a masked set(nsh) for it, which kernel
// 6.1 refuses (validate_set checks each nested attribute against the
// unmasked length, so a masked one never passes; later kernels dropped
// set(nsh) altogether), so the translation ends in a drop instead, naming
// why; checkNSHSet refuses such flows at flow_mod time where it can.
func (c *xctx) commitSetNSH(acts []byte) []byte {
	c.unsupportedHere("set_field of nsh_* on an NSH packet (the kernel datapath takes no set(nsh))")
	return c.out.Actions
}

// nshSetCheck is the flow_mod check of set_field, load, move and pop into
// nsh_*: it is carried out only inside a pending encap(nsh), whose
// push_nsh takes the values.
type nshSetCheck struct{ pending bool }

func (s *nshSetCheck) action(a *openflow.Action) error {
	switch a.Type {
	case openflow.ActEncap:
		s.pending = uint32(a.Load) == openflow.PacketTypeNSH
		return nil
	case openflow.ActSetField, openflow.ActRegLoad, openflow.ActRegMove, openflow.ActStackPop:
		if a.Field >= openflow.FieldNSHFlags && a.Field <= openflow.FieldNSHC4 && !s.pending {
			return errorf(ErrUnsupportedSetField, "%s into %s of an NSH packet is not implemented "+
				"(the kernel datapath takes no set(nsh)); it works between encap(nsh) and the next encap", a.Type, a.Field)
		}
		return nil
	case openflow.ActStackPush:
		return nil // reads a field, commits nothing
	}
	s.pending = false
	return nil
}

// nshCheckAction is the flow_mod view of an NSH encap or decap: the
// packet later actions see (their set_field prerequisites), as
// mplsCheckAction's. noEth says the packet has no Ethernet header before
// a.
func nshCheckAction(a *openflow.Action, noEth bool, k *flow.Key, m *flow.Mask) {
	switch {
	case a.Type == openflow.ActEncap && uint32(a.Load) == openflow.PacketTypeNSH:
		k.EthType, m.EthType = flow.EthTypeNSH, 0xffff
		k.NwProto, m.NwProto = 0, 0
	case a.Type == openflow.ActDecap && noEth && m.EthType == 0xffff && k.EthType == flow.EthTypeNSH:
		// What is under it is parsed after a recirculation.
		k.EthType, m.EthType = 0, 0
	}
}
