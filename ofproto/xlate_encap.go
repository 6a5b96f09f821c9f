package ofproto

import (
	"github.com/govswitch/govswitch/datapath"
	"github.com/govswitch/govswitch/flow"
	"github.com/govswitch/govswitch/ofproto/openflow"
)

// Translation of encap(mpls), encap(mpls_mc), encap(ethernet) and
// decap() for MPLS, as ofproto-dpif-xlate.c's xlate_generic_encap_action
// and xlate_generic_decap_action with the datapath's add_mpls, push_eth
// and pop_eth:
//
//   - encap(mpls) puts a label stack entry in front of the whole frame
//     (Ethernet over MPLS): the packet has no Ethernet header until an
//     encap(ethernet), and the datapath's add_mpls (with no L3 tunnel
//     flag) is emitted at the next commit, so that set_mpls_label and
//     friends in between land in it;
//   - encap(ethernet) on such a packet is push_eth, likewise deferred so
//     that set_field on eth_src/eth_dst land in it;
//   - decap() of an Ethernet frame is pop_eth (an MPLS frame becomes a
//     bare MPLS packet); decap(packet_type(ns=0,type=0)) of a bare MPLS
//     packet with one label is pop_mpls to ETH_P_TEB, and, as in OVS,
//     the translation then recirculates so that the inner frame is
//     parsed (mplsFreeze);
//   - decap(packet_type(ns=1,type=0x800)) (or 0x86dd) of a bare MPLS
//     packet with one label is pop_mpls to that ethertype, which leaves a
//     bare IP packet whose header only the datapath has seen. OVS
//     recirculates at once, with a flow key that has no Ethernet header;
//     this switch's tables never see such a packet (flow.Key.L3 is the
//     datapath's, for a legacy_l3 port's input, which l3Input gives a
//     dummy Ethernet header at once), so the translation goes on as
//     after a pop_mpls (wasMPLS): actions that need the IP header freeze
//     it, and those that do not run first, encap(ethernet) among them.
//     The packet recirculates once push_eth has made it an Ethernet frame
//     again, and what would recirculate it before that is refused
//     (encapCheck at flow_mod time, mplsFreeze in translation).
//
// A bare L3 packet is not otherwise a packet this switch models (the
// tables have no packet_type): it is never recirculated or looked up,
// and encap or decap of anything else is refused at flow_mod time
// (checkSupported) or ends the translation in a drop. A legacy_l3 port's
// packets are Ethernet frames to the tables: l3Input, beginL3Output.

// encapState is the packet-type part of a translation.
type encapState struct {
	noEth, baseNoEth bool // the flow's packet, and the datapath's, have no Ethernet header
	addMPLS          bool // an encap(mpls) the next commit emits as add_mpls
	pushEth          bool // an encap(ethernet) the next commit emits as push_eth
	freezeNext       bool // a decap that needs the inner packet parsed: recirculate before the next action
	lseUnknown       bool // a decap popped a label that was not the last: the new top entry is the datapath's
	nsh              nshEncap
}

const ethTypeTEB = 0x6558 // transparent Ethernet bridging: pop_mpls to an Ethernet frame

// encapSupported reports whether translation carries out encap/decap a.
func encapSupported(a *openflow.Action) bool {
	switch uint32(a.Load) {
	case openflow.PacketTypeEthernet:
		return true
	case openflow.PacketTypeMPLS, openflow.PacketTypeMPLSMC:
		return true
	case openflow.PacketTypeNextProto, openflow.PacketTypeIPv4, openflow.PacketTypeIPv6:
		return a.Type == openflow.ActDecap
	case openflow.PacketTypeNSH: // xlate_nsh.go
		md := a.NSHMDType
		// MD type 2 needs a tlv: the kernel takes no push_nsh without
		// metadata.
		return a.Type == openflow.ActEncap && (md <= flow.NSHMDType1 && len(a.Data) == 0 ||
			md == flow.NSHMDType2 && len(a.Data) > 0 && len(a.Data) <= datapath.NSHMD2MaxLen)
	}
	return false
}

// encapCheck is the flow_mod check of the packet types one action list
// leaves, the packet at its start taken to be an Ethernet frame: after a
// pop of the last label of a bare MPLS packet to IP (a decap to IP, or a
// pop_mpls) the packet has no Ethernet header until an encap(ethernet),
// and an action that needs its IP header (one that mplsNeedsRecirc names)
// would recirculate it so, which this switch does not do: its tables see
// Ethernet frames only. Where the list starts on a bare packet
// (after a resubmit), translation refuses it instead (mplsFreeze).
type encapCheck struct {
	noEth  bool // a decap or encap(mpls), and no encap(ethernet) since
	bareIP bool // and a pop to IP since
}

func (s *encapCheck) action(a *openflow.Action) error {
	pt := uint32(a.Load)
	switch a.Type {
	case openflow.ActDecap:
		switch {
		case s.bareIP:
			return errorf(ErrUnsupportedNXAction, "decap of a bare IP packet is not implemented")
		case !s.noEth:
			s.noEth = true // pop_eth
		case pt == openflow.PacketTypeIPv4 || pt == openflow.PacketTypeIPv6:
			s.bareIP = true
		case pt == openflow.PacketTypeEthernet:
			s.noEth = false // the inner frame, after a recirculation
		}
		return nil
	case openflow.ActEncap:
		if pt == openflow.PacketTypeEthernet {
			s.noEth, s.bareIP = false, false
			return nil
		}
		s.noEth = true
	case openflow.ActPopMPLS:
		if s.noEth && !isMPLS(a.EthType) {
			s.bareIP = true
			return nil
		}
	}
	if s.bareIP && mplsNeedsRecirc(a) {
		return errorf(ErrUnsupportedNXAction, "%s after a pop to IP and before an encap(ethernet) is not implemented "+
			"(the packet would recirculate without an Ethernet header)", a.Type)
	}
	return nil
}

// end checks what runs after the list: in's other instructions, which
// recirculate a packet popped to IP as mplsNeedsRecirc's actions do.
func (s *encapCheck) end(in *openflow.Instructions) error {
	if s.bareIP && (in.Clear || in.Write != nil || in.WriteMetadata || in.GotoTable) {
		return errorf(ErrUnsupportedNXAction, "a pop to IP with no encap(ethernet) before the next instruction is not implemented "+
			"(the packet would recirculate without an Ethernet header)")
	}
	return nil
}

func (c *xctx) doEncap(a *openflow.Action) {
	f, e, wc := &c.flow, &c.encap, &c.out.WC
	// What was pending belongs to the packet being encapsulated.
	c.commit()
	switch pt := uint32(a.Load); pt {
	case openflow.PacketTypeMPLS, openflow.PacketTypeMPLSMC:
		wc.VLANs[0].TCI |= flow.VLANPresent
		ethType := uint16(pt)
		if isMPLS(f.EthType) && e.noEth && !e.lseUnknown {
			// Onto a bare MPLS packet: a copy of the top entry, as OVS's
			// flow_push_mpls.
			wc.MPLSLSE = ^uint32(0)
			f.MPLSLSE &^= mplsBoSMask
			f.EthType = ethType
			e.addMPLS = true
			return
		}
		if !e.noEth && f.VLANs[0].TCI&flow.VLANPresent != 0 || isMPLS(f.EthType) {
			c.unsupportedHere("encap(mpls) of a VLAN-tagged or MPLS frame")
			return
		}
		label, tc, ttl := uint32(0), uint32(0), uint32(64)
		if f.EthType == flow.EthTypeIPv6 {
			label = 2
		}
		if f.EthType == flow.EthTypeIPv4 || f.EthType == flow.EthTypeIPv6 {
			tc = uint32(f.NwTos&0xfc) >> 2
			wc.NwTos |= 0xfc
			wc.NwTTL = 0xff
			if f.NwTTL != 0 {
				ttl = uint32(f.NwTTL)
			}
		}
		f.MPLSLSE = label<<12 | tc<<9&mplsTCMask | mplsBoSMask | ttl
		f.EthType = ethType
		f.EthSrc, f.EthDst = [6]byte{}, [6]byte{}
		e.noEth, e.addMPLS = true, true
	case openflow.PacketTypeNSH:
		c.encapNSH(a) // xlate_nsh.go
	case openflow.PacketTypeEthernet:
		if !e.noEth {
			c.unsupportedHere("encap(ethernet) of an Ethernet frame")
			return
		}
		f.EthSrc, f.EthDst = [6]byte{}, [6]byte{}
		e.noEth, e.pushEth = false, true
	default:
		c.unsupportedHere("encap of this packet type")
	}
}

func (c *xctx) doDecap(a *openflow.Action) {
	f, e, wc := &c.flow, &c.encap, &c.out.WC
	c.commit()
	if !e.noEth {
		// Pop the Ethernet header: the packet becomes a bare packet of
		// its ethertype.
		wc.VLANs[0].TCI |= flow.VLANPresent
		if f.VLANs[0].TCI&flow.VLANPresent != 0 {
			c.unsupportedHere("decap of a VLAN-tagged frame")
			return
		}
		// The packet becomes a bare packet of its ethertype (OVS does not
		// recirculate here either: the L3 header is the one it had).
		f.EthSrc, f.EthDst = [6]byte{}, [6]byte{}
		e.noEth = true
		return
	}
	if f.EthType == flow.EthTypeNSH {
		c.decapNSH(a) // xlate_nsh.go
		return
	}
	pt := uint32(a.Load)
	toIP := pt == openflow.PacketTypeIPv4 || pt == openflow.PacketTypeIPv6
	if !isMPLS(f.EthType) || pt != openflow.PacketTypeEthernet && pt != openflow.PacketTypeMPLS && pt != openflow.PacketTypeMPLSMC && !toIP {
		c.unsupportedHere("decap of this packet to this packet type")
		return
	}
	if !e.lseUnknown {
		wc.MPLSLSE |= mplsBoSMask
	}
	bos := f.MPLSLSE&mplsBoSMask != 0
	if toIP {
		if !bos && !e.lseUnknown {
			c.unsupportedHere("decap to IP of a packet with more than one label")
			return
		}
		// The last label goes, now: what is under it is an IP header
		// the datapath parses only after a recirculation, which must
		// wait for an encap(ethernet) (mplsFreeze refuses a packet
		// without one). The kernel pops the label of a packet without
		// Ethernet to any ethertype.
		c.out.Actions = datapath.AppendPopMPLS(c.out.Actions, uint16(pt))
		c.slowIfOff(FeatureAddMPLS)
		f.EthType, f.MPLSLSE = uint16(pt), 0
		c.base.EthType, c.base.MPLSLSE = uint16(pt), 0
		e.lseUnknown = false
		c.wasMPLS = true
		return
	}
	if pt != openflow.PacketTypeEthernet {
		// To MPLS: a label that is not the last goes, and the packet
		// stays a bare MPLS packet whose new top entry the datapath
		// knows (OVS does not recirculate for it either).
		if bos || e.lseUnknown {
			c.unsupportedHere("decap to MPLS of the last label")
			return
		}
		c.out.Actions = datapath.AppendPopMPLS(c.out.Actions, uint16(pt))
		c.slowIfOff(FeatureAddMPLS) // backer_features.go
		f.EthType, f.MPLSLSE = uint16(pt), 0
		c.base.EthType, c.base.MPLSLSE = uint16(pt), 0
		e.lseUnknown = true
		return
	}
	if !bos && !e.lseUnknown {
		c.unsupportedHere("decap to Ethernet of a packet with more than one label")
		return
	}
	// The last label goes: what is under it is an Ethernet frame the
	// datapath parses after a recirculation.
	c.out.Actions = datapath.AppendPopMPLS(c.out.Actions, ethTypeTEB)
	c.slowIfOff(FeatureAddMPLS)
	f.EthType, f.MPLSLSE = ethTypeTEB, 0
	c.base.EthType, c.base.MPLSLSE = ethTypeTEB, 0
	e.noEth, e.baseNoEth, e.lseUnknown = false, false, false
	e.freezeNext = true
}

// commitEncap is commit's first step: the pending encaps, then a pending
// pop_eth.
func (c *xctx) commitEncap(acts []byte) []byte {
	f, b, e := &c.flow, &c.base, &c.encap
	if e.addMPLS {
		acts = datapath.AppendAddMPLS(acts, f.MPLSLSE, f.EthType, 0)
		c.slowIfOff(FeatureAddMPLS)
		b.EthType, b.MPLSLSE = f.EthType, f.MPLSLSE
		b.EthSrc, b.EthDst = [6]byte{}, [6]byte{}
		e.baseNoEth, e.addMPLS = true, false
	}
	if e.nsh.push {
		acts = c.commitPushNSH(acts) // xlate_nsh.go
	}
	if e.pushEth {
		acts = datapath.AppendPushEth(acts, f.EthSrc, f.EthDst)
		b.EthSrc, b.EthDst = f.EthSrc, f.EthDst
		e.baseNoEth, e.pushEth = false, false
	}
	if e.noEth && !e.baseNoEth {
		acts = datapath.AppendPopEth(acts)
		b.EthSrc, b.EthDst = [6]byte{}, [6]byte{}
		e.baseNoEth = true
	}
	return acts
}

// l3Input starts the translation of a packet without Ethernet, from a
// legacy_l3 port, as ovs-vswitchd's xlate_actions: the tables see it
// with a dummy Ethernet header (zero addresses), which the first output
// to a port that takes Ethernet frames pushes, with the addresses the
// actions set by then.
func (c *xctx) l3Input() {
	c.flow.L3 = false
	c.encap.baseNoEth, c.encap.pushEth = true, true
}

// l3Output is what beginL3Output saved for endL3Output.
type l3Output struct {
	ethSrc, ethDst [6]byte
	noEth          bool
}

// beginL3Output commits the packet for an output to a legacy_l3 port:
// without its Ethernet header (pop_eth, or no push_eth if it was not
// pushed yet), as ovs-vswitchd's compose_output_action. It reports false
// (and outputs nothing) for a VLAN-tagged frame, whose header the
// datapath does not pop.
func (c *xctx) beginL3Output(s *l3Output) bool {
	f, e := &c.flow, &c.encap
	*s = l3Output{ethSrc: f.EthSrc, ethDst: f.EthDst, noEth: e.noEth}
	if !e.noEth {
		c.out.WC.VLANs[0].TCI |= flow.VLANPresent
		if f.VLANs[0].TCI&flow.VLANPresent != 0 {
			return false
		}
		f.EthSrc, f.EthDst = [6]byte{}, [6]byte{}
		e.noEth, e.pushEth = true, false
	}
	c.commit()
	return true
}

// endL3Output makes the flow again what it was before beginL3Output: a
// frame whose Ethernet header the datapath's packet no longer has, and
// which the next output to an Ethernet port pushes again.
func (c *xctx) endL3Output(s *l3Output) {
	if s.noEth {
		return
	}
	c.flow.EthSrc, c.flow.EthDst = s.ethSrc, s.ethDst
	c.encap.noEth, c.encap.pushEth = false, true
}

// unsupportedHere ends the translation in a drop, naming why.
func (c *xctx) unsupportedHere(why string) {
	c.out.Actions = c.out.Actions[:0]
	c.out.Dropped = why + " is not implemented"
	c.exit = true
}
