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
	}
	return nil
}
