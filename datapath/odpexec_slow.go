package datapath

import (
	"encoding/binary"

	"github.com/govswitch/govswitch/flow"
)

// RunOn runs actions on a copy of pkt, as Execute does, except that md is
// the packet's metadata itself (set actions of skb_mark, priority and
// conntrack fields change it in place) and the packet as the actions leave
// it is returned. The result is the Executor's scratch buffer: valid until
// its next run. It allocates nothing once the scratch buffers have grown.
func (e *Executor) RunOn(pkt []byte, md *flow.Key, actions []byte) ([]byte, error) {
	e.bufs[0] = append(e.bufs[0][:0], pkt...)
	e.l3[0] = 0
	if md.L3 {
		e.l3[0] = md.EthType
	}
	err := e.run(0, md, actions)
	return e.bufs[0], err
}

// applySlowSet writes an ARP or ICMP set into pkt, as OVS's odp-execute
// does in userspace: the ARP fields of an Ethernet/IPv4 ARP packet; an
// ICMP or ICMPv6 type and code, with the checksum updated.
func applySlowSet(pkt []byte, l *pktLayout, attr KeyAttr, val, mask []byte) error {
	switch attr {
	case KeyAttrARP:
		off := l.etOff + 2
		if !l.eth || l.ethType != flow.EthTypeARP && l.ethType != flow.EthTypeRARP || len(pkt) < off+28 ||
			binary.BigEndian.Uint16(pkt[off:]) != 1 || binary.BigEndian.Uint16(pkt[off+2:]) != flow.EthTypeIPv4 ||
			pkt[off+4] != 6 || pkt[off+5] != 4 {
			return actionErr("set arp on a packet without an Ethernet/IPv4 ARP header")
		}
		h := pkt[off:]
		maskedWrite(h[6:8], val[8:10], mask[8:10])     // op
		maskedWrite(h[8:14], val[10:16], mask[10:16])  // sha
		maskedWrite(h[14:18], val[0:4], mask[0:4])     // spa
		maskedWrite(h[18:24], val[16:22], mask[16:22]) // tha
		maskedWrite(h[24:28], val[4:8], mask[4:8])     // tpa
	case KeyAttrICMP, KeyAttrICMPv6:
		want, v6 := flow.IPProtoICMP, false
		if attr == KeyAttrICMPv6 {
			want, v6 = flow.IPProtoICMPv6, true
		}
		if l.l4 == 0 || l.proto != want || v6 != (l.ethType == flow.EthTypeIPv6) || len(pkt) < l.l4+4 {
			return actionErr("set of ICMP type and code on a packet without that protocol")
		}
		h := pkt[l.l4 : l.l4+4]
		var old [2]byte
		copy(old[:], h[:2])
		maskedWrite(h[:2], val[:2], mask[:2])
		binary.BigEndian.PutUint16(h[2:], csumReplace(binary.BigEndian.Uint16(h[2:]), old[:], h[:2]))
	case KeyAttrND:
		return setND(pkt, l, val, mask)
	}
	return nil
}

// setND writes an ND set into a neighbour solicitation or advertisement,
// as OVS's odp_set_nd and packet_set_nd: the target address, and the
// address of the first source or target link-layer address option (the
// SLL in a solicitation's, the TLL in an advertisement's; a packet
// without one gains none), the ICMPv6 checksum updated. A packet that is
// no ND message is left alone, as OVS leaves it.
func setND(pkt []byte, l *pktLayout, val, mask []byte) error {
	if l.l4 == 0 || l.proto != flow.IPProtoICMPv6 || l.ethType != flow.EthTypeIPv6 || len(pkt) < l.l4+24 ||
		pkt[l.l4] != 135 && pkt[l.l4] != 136 || pkt[l.l4+1] != 0 {
		return nil
	}
	h := pkt[l.l4:]
	sum := binary.BigEndian.Uint16(h[2:])
	var old [16]byte
	copy(old[:], h[8:24])
	maskedWrite(h[8:24], val[0:16], mask[0:16])
	sum = csumReplace(sum, old[:], h[8:24])
	for at := 24; at+8 <= len(h); {
		n := int(h[at+1]) * 8
		if n == 0 {
			break
		}
		if (h[at] == 1 || h[at] == 2) && n == 8 {
			off := 16 // nd_sll
			if h[at] == 2 {
				off = 22 // nd_tll
			}
			copy(old[:6], h[at+2:at+8])
			maskedWrite(h[at+2:at+8], val[off:off+6], mask[off:off+6])
			sum = csumReplace(sum, old[:6], h[at+2:at+8])
			break // one SLL or TLL option, as OVS writes
		}
		at += n
	}
	binary.BigEndian.PutUint16(h[2:], sum)
	return nil
}

// packetType runs an action that changes what the packet starts with, as
// the kernel's: add_mpls (without MPLSL3Tunnel) puts the label stack entry
// at the very start, leaving an MPLS packet with no Ethernet header;
// push_eth puts an Ethernet header before a packet without one, its
// ethertype the packet's; pop_eth takes it off; pop_mpls of a packet
// without Ethernet takes the entry at its start, and the packet is an
// Ethernet frame again when the new type is TEB.
func (e *Executor) packetType(depth int, a *Action) error {
	pkt := e.bufs[depth]
	switch a.Type {
	case ActionAddMPLS:
		at := 0
		if a.MPLSFlags&MPLSL3Tunnel != 0 && e.l3[depth] == 0 {
			// After the Ethernet header, which stays, with the new
			// ethertype.
			l := layoutOf(pkt)
			if !l.eth {
				return actionErr("add_mpls on a %d-byte packet", len(pkt))
			}
			at = l.etOff + 2
			binary.BigEndian.PutUint16(pkt[l.etOff:], a.EthType)
		}
		pkt = append(pkt, 0, 0, 0, 0)
		copy(pkt[at+4:], pkt[at:len(pkt)-4])
		binary.BigEndian.PutUint32(pkt[at:], a.MPLSLSE)
		if at == 0 {
			e.l3[depth] = a.EthType
		}
	case ActionPushEth:
		if e.l3[depth] == 0 {
			return actionErr("push_eth on an Ethernet packet")
		}
		pkt = append(pkt, make14[:]...)
		copy(pkt[14:], pkt[:len(pkt)-14])
		copy(pkt[0:6], a.EthDst[:])
		copy(pkt[6:12], a.EthSrc[:])
		binary.BigEndian.PutUint16(pkt[12:], e.l3[depth])
		e.l3[depth] = 0
	case ActionPopEth:
		if e.l3[depth] != 0 {
			return nil
		}
		l := layoutOf(pkt)
		if !l.eth {
			return actionErr("pop_eth on a %d-byte packet", len(pkt))
		}
		n := l.etOff + 2
		copy(pkt, pkt[n:])
		pkt = pkt[:len(pkt)-n]
		e.l3[depth] = l.ethType
	case ActionPopMPLS:
		if len(pkt) < 4 || !isMPLSType(e.l3[depth]) {
			return actionErr("pop_mpls on a packet without MPLS")
		}
		copy(pkt, pkt[4:])
		pkt = pkt[:len(pkt)-4]
		e.l3[depth] = a.EthType
		if a.EthType == ethTypeTEB {
			e.l3[depth] = 0
		}
	}
	e.bufs[depth] = pkt
	return nil
}

// ethTypeTEB is transparent Ethernet bridging: what follows is a frame.
const ethTypeTEB = 0x6558

var make14 [14]byte
