package datapath

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"math"
	"math/rand/v2"

	"github.com/govswitch/govswitch/flow"
)

// Running actions on packet bytes, as the kernel datapath does, for the
// in-memory datapath (datapath/dummy) and for tests.

// ErrActionUnsupported is returned by Executor for actions it does not
// implement: ct, hash, push_nsh/pop_nsh, meter, dec_ttl and a set of the
// tunnel or of conntrack fields.
var ErrActionUnsupported = errors.New("datapath action not supported by the executor")

// maxExecDepth bounds nested action lists (clone, sample, check_pkt_len),
// as the kernel bounds recursion.
const maxExecDepth = 8

// Executor runs datapath actions on packets. Its callbacks receive what
// the actions send out; a nil callback drops what it would receive. The
// Executor keeps scratch buffers between runs, so that steady-state runs
// allocate nothing: reuse one per goroutine. It is not safe for concurrent
// use.
type Executor struct {
	// Output receives each packet an output action sends to port. pkt is
	// a scratch buffer, valid only during the call.
	Output func(port uint32, pkt []byte)
	// Userspace receives each packet a userspace action sends up, with
	// the packet's metadata at that point (skb mark, priority... as set
	// actions left them). pkt, and u.Userdata, are valid only during the
	// call. Arguments are values so that running actions allocates
	// nothing.
	Userspace func(u Userspace, md flow.Key, pkt []byte)
	// Recirc receives the packet of a recirc action with md.RecircID set
	// to the action's ID. A nil Recirc makes recirc an error.
	Recirc func(md flow.Key, pkt []byte)
	// Sample decides whether a sample action with probability p (in
	// units of 1/0xffffffff) runs. nil: a random draw.
	Sample func(p uint32) bool

	bufs [maxExecDepth + 1][]byte
	// l3 is the ethertype of a packet without an Ethernet header at each
	// depth (after add_mpls or pop_eth), 0 for an Ethernet frame
	// (odpexec_slow.go).
	l3 [maxExecDepth + 1]uint16
}

// Execute runs actions on a copy of pkt (pkt itself is not modified) whose
// metadata is md: only the metadata fields of md (in_port, marks, tunnel,
// conntrack, recirc_id) are read, and, for a packet without Ethernet
// (md.L3), its ethertype. It stops at the first action it cannot
// run and returns an error wrapping ErrAction (malformed) or
// ErrActionUnsupported.
func (e *Executor) Execute(pkt []byte, md *flow.Key, actions []byte) error {
	e.bufs[0] = append(e.bufs[0][:0], pkt...)
	e.l3[0] = 0
	if md.L3 {
		e.l3[0] = md.EthType
	}
	meta := *md
	return e.run(0, &meta, actions)
}

// run executes actions on e.bufs[depth] with metadata md.
func (e *Executor) run(depth int, md *flow.Key, actions []byte) error {
	cutlen := 0
	it := NewActionIter(actions)
	for it.Next() {
		a := it.Action()
		pkt := e.bufs[depth]
		switch a.Type {
		case ActionOutput:
			if e.Output != nil {
				e.Output(a.Port, truncated(pkt, cutlen))
			}
			cutlen = 0
		case ActionUserspace:
			if e.Userspace != nil {
				e.Userspace(a.Userspace, *md, truncated(pkt, cutlen))
			}
			cutlen = 0
		case ActionTrunc:
			if a.MaxLen < 14 {
				return actionErr("trunc to %d bytes", a.MaxLen)
			}
			cutlen = int(min(a.MaxLen, math.MaxInt32))
		case ActionPushVLAN:
			if len(pkt) < 14 {
				return actionErr("push_vlan on a %d-byte packet", len(pkt))
			}
			pkt = append(pkt, 0, 0, 0, 0)
			copy(pkt[16:], pkt[12:len(pkt)-4])
			binary.BigEndian.PutUint16(pkt[12:], a.VLAN.TPID)
			binary.BigEndian.PutUint16(pkt[14:], a.VLAN.TCI&^flow.VLANPresent)
			e.bufs[depth] = pkt
		case ActionPopVLAN:
			if len(pkt) >= 18 && isVLANType(binary.BigEndian.Uint16(pkt[12:])) {
				copy(pkt[12:], pkt[16:])
				e.bufs[depth] = pkt[:len(pkt)-4]
			}
		case ActionPushMPLS:
			l := layoutOf(pkt)
			if !l.eth {
				return actionErr("push_mpls on a non-Ethernet packet")
			}
			at := l.etOff + 2
			pkt = append(pkt, 0, 0, 0, 0)
			copy(pkt[at+4:], pkt[at:len(pkt)-4])
			binary.BigEndian.PutUint32(pkt[at:], a.MPLSLSE)
			binary.BigEndian.PutUint16(pkt[l.etOff:], a.EthType)
			e.bufs[depth] = pkt
		case ActionAddMPLS, ActionPushEth, ActionPopEth:
			if err := e.packetType(depth, a); err != nil { // odpexec_slow.go
				return err
			}
		case ActionPopMPLS:
			if e.l3[depth] != 0 {
				if err := e.packetType(depth, a); err != nil {
					return err
				}
				break
			}
			l := layoutOf(pkt)
			if l.eth && isMPLSType(l.ethType) && len(pkt) >= l.etOff+6 {
				at := l.etOff + 2
				copy(pkt[at:], pkt[at+4:])
				binary.BigEndian.PutUint16(pkt[l.etOff:], a.EthType)
				e.bufs[depth] = pkt[:len(pkt)-4]
			}
		case ActionSet, ActionSetMasked:
			if err := applySet(pkt, md, a); err != nil {
				return err
			}
		case ActionRecirc:
			if e.Recirc == nil {
				return fmt.Errorf("%w: recirc without a Recirc callback", ErrActionUnsupported)
			}
			rmd := *md
			rmd.RecircID = a.ID
			e.Recirc(rmd, pkt)
		case ActionCTClear:
			md.CtState, md.CtZone, md.CtMark, md.CtLabels, md.CtOrig = 0, 0, 0, [16]byte{}, flow.CtTuple{}
		case ActionSample:
			run := a.Prob == math.MaxUint32
			if e.Sample != nil {
				run = e.Sample(a.Prob)
			} else if !run {
				run = rand.Uint32() < a.Prob
			}
			if run {
				if err := e.nested(depth, md, a.Actions); err != nil {
					return err
				}
			}
		case ActionClone:
			if err := e.nested(depth, md, a.Actions); err != nil {
				return err
			}
		case ActionCheckPktLen:
			acts := a.IfLessEq
			if len(pkt) > int(a.PktLen) {
				acts = a.IfGreater
			}
			if err := e.nested(depth, md, acts); err != nil {
				return err
			}
		default:
			return fmt.Errorf("%w: action %d", ErrActionUnsupported, a.Type)
		}
	}
	return it.Err()
}

// nested runs actions on a copy of the packet at depth and of md.
func (e *Executor) nested(depth int, md *flow.Key, actions []byte) error {
	if depth+1 > maxExecDepth {
		return actionErr("actions nested more than %d deep", maxExecDepth)
	}
	e.bufs[depth+1] = append(e.bufs[depth+1][:0], e.bufs[depth]...)
	e.l3[depth+1] = e.l3[depth]
	meta := *md
	return e.run(depth+1, &meta, actions)
}

func truncated(pkt []byte, cutlen int) []byte {
	if cutlen > 0 && cutlen < len(pkt) {
		return pkt[:cutlen]
	}
	return pkt
}

// pktLayout locates the headers of an Ethernet frame.
type pktLayout struct {
	eth     bool   // at least an Ethernet header
	etOff   int    // offset of the ethertype after the VLAN tags
	ethType uint16 // that ethertype
	l3      int    // offset of the L3 header; 0 if not IPv4/IPv6
	l4      int    // offset of the L4 header; 0 if none or a later fragment
	proto   uint8  // IP protocol of the L4 header
}

func layoutOf(pkt []byte) pktLayout {
	var l pktLayout
	if len(pkt) < 14 {
		return l
	}
	l.eth = true
	l.etOff = 12
	for len(pkt) >= l.etOff+6 && isVLANType(binary.BigEndian.Uint16(pkt[l.etOff:])) {
		l.etOff += 4
	}
	l.ethType = binary.BigEndian.Uint16(pkt[l.etOff:])
	off := l.etOff + 2
	switch l.ethType {
	case flow.EthTypeIPv4:
		if len(pkt) < off+20 || pkt[off]&0xf < 5 || len(pkt) < off+int(pkt[off]&0xf)*4 {
			return l
		}
		l.l3 = off
		l.proto = pkt[off+9]
		if binary.BigEndian.Uint16(pkt[off+6:])&0x1fff == 0 {
			l.l4 = off + int(pkt[off]&0xf)*4
		}
	case flow.EthTypeIPv6:
		if len(pkt) < off+40 {
			return l
		}
		l.l3 = off
		next, at := pkt[off+6], off+40
		for {
			switch next {
			case 0, 43, 60: // hop-by-hop, routing, destination options
				if len(pkt) < at+8 {
					return l
				}
				next, at = pkt[at], at+8*(int(pkt[at+1])+1)
				continue
			case 44: // fragment
				if len(pkt) < at+8 || binary.BigEndian.Uint16(pkt[at+2:])&0xfff8 != 0 {
					return l
				}
				next, at = pkt[at], at+8
				continue
			}
			break
		}
		l.proto = next
		if at <= len(pkt) {
			l.l4 = at
		}
	}
	return l
}

// csumReplace updates internet checksum sum for the 16-bit words old
// replaced by new (RFC 1624, eqn. 3). old and new have equal, even length.
func csumReplace(sum uint16, old, new []byte) uint16 {
	s := uint32(^sum)
	for i := 0; i+1 < len(old); i += 2 {
		s += uint32(^binary.BigEndian.Uint16(old[i:]))
		s += uint32(binary.BigEndian.Uint16(new[i:]))
	}
	for s>>16 != 0 {
		s = s&0xffff + s>>16
	}
	return ^uint16(s)
}

// ipv4HeaderSum computes the header checksum of the IPv4 header h.
func ipv4HeaderSum(h []byte) uint16 {
	var s uint32
	for i := 0; i+1 < len(h); i += 2 {
		if i != 10 {
			s += uint32(binary.BigEndian.Uint16(h[i:]))
		}
	}
	for s>>16 != 0 {
		s = s&0xffff + s>>16
	}
	return ^uint16(s)
}

// l4CsumOff returns the offset of the L4 checksum covering the pseudo
// header within the L4 header, or -1.
func l4CsumOff(proto uint8) int {
	switch proto {
	case flow.IPProtoTCP:
		return 16
	case flow.IPProtoUDP:
		return 6
	case flow.IPProtoICMPv6:
		return 2
	}
	return -1
}

// fixL4Csum updates the L4 checksum at l for old replaced by new in the
// pseudo header or the L4 header itself.
func fixL4Csum(pkt []byte, l *pktLayout, old, new []byte, ipv6 bool) {
	off := l4CsumOff(l.proto)
	if l.l4 == 0 || off < 0 || (l.proto == flow.IPProtoICMPv6 && !ipv6) || len(pkt) < l.l4+off+2 {
		return
	}
	c := binary.BigEndian.Uint16(pkt[l.l4+off:])
	if l.proto == flow.IPProtoUDP && c == 0 && !ipv6 {
		return // no UDP checksum over IPv4
	}
	c = csumReplace(c, old, new)
	if l.proto == flow.IPProtoUDP && c == 0 {
		c = 0xffff
	}
	binary.BigEndian.PutUint16(pkt[l.l4+off:], c)
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// maskedWrite sets the bits of dst that mask selects to those of value.
func maskedWrite(dst, value, mask []byte) {
	for i := range dst {
		dst[i] = dst[i]&^mask[i] | value[i]&mask[i]
	}
}

// applySet runs a set or masked set action on pkt and md.
func applySet(pkt []byte, md *flow.Key, a *Action) error {
	val := a.SetKey
	mask := a.SetMask
	if mask == nil {
		var ones [sizeIPv6]byte
		for i := range ones {
			ones[i] = 0xff
		}
		if a.SetAttr != KeyAttrTunnel {
			mask = ones[:len(val)]
			if a.SetAttr == KeyAttrIPv4 || a.SetAttr == KeyAttrIPv6 {
				// A plain set never changes the protocol or fragment
				// type (the kernel checks they equal the flow's).
				mask[len(mask)-4], mask[len(mask)-1] = 0, 0
			}
			if a.SetAttr == KeyAttrIPv6 {
				binary.BigEndian.PutUint32(mask[32:], 0x000fffff)
			}
		}
	}
	l := layoutOf(pkt)
	var scratch [16]byte
	switch a.SetAttr {
	case KeyAttrPriority, KeyAttrSkbMark, KeyAttrCtMark:
		p := &md.Priority
		switch a.SetAttr {
		case KeyAttrSkbMark:
			p = &md.Mark
		case KeyAttrCtMark:
			p = &md.CtMark
		}
		v, m := binary.NativeEndian.Uint32(val), binary.NativeEndian.Uint32(mask)
		*p = *p&^m | v&m
	case KeyAttrCtLabels:
		maskedWrite(md.CtLabels[:], val, mask)
	case KeyAttrEthernet:
		if !l.eth {
			return actionErr("set eth on a non-Ethernet packet")
		}
		maskedWrite(pkt[6:12], val[0:6], mask[0:6])
		maskedWrite(pkt[0:6], val[6:12], mask[6:12])
	case KeyAttrIPv4:
		if l.l3 == 0 || l.ethType != flow.EthTypeIPv4 {
			return actionErr("set ipv4 on a packet without IPv4")
		}
		h := pkt[l.l3:]
		for i, off := range [2]int{12, 16} {
			addr := h[off : off+4]
			old := scratch[:4]
			copy(old, addr)
			maskedWrite(addr, val[4*i:4*i+4], mask[4*i:4*i+4])
			fixL4Csum(pkt, &l, old, addr, false)
		}
		h[1] = h[1]&^mask[9] | val[9]&mask[9] // tos
		h[8] = h[8]&^mask[10] | val[10]&mask[10]
		ihl := int(h[0]&0xf) * 4
		binary.BigEndian.PutUint16(h[10:], ipv4HeaderSum(h[:ihl]))
	case KeyAttrIPv6:
		if l.l3 == 0 || l.ethType != flow.EthTypeIPv6 {
			return actionErr("set ipv6 on a packet without IPv6")
		}
		h := pkt[l.l3:]
		for i, off := range [2]int{8, 24} {
			addr := h[off : off+16]
			old := scratch[:16]
			copy(old, addr)
			maskedWrite(addr, val[16*i:16*i+16], mask[16*i:16*i+16])
			fixL4Csum(pkt, &l, old, addr, true)
		}
		w := binary.BigEndian.Uint32(h)
		label, lm := binary.BigEndian.Uint32(val[32:]), binary.BigEndian.Uint32(mask[32:])&0xfffff
		w = w&^lm | label&lm
		tc, tm := uint32(val[37]), uint32(mask[37])
		w = w&^(tm<<20) | (tc&tm)<<20
		binary.BigEndian.PutUint32(h, w)
		h[7] = h[7]&^mask[38] | val[38]&mask[38]
	case KeyAttrTCP, KeyAttrUDP, KeyAttrSCTP:
		want := flow.IPProtoTCP
		switch a.SetAttr {
		case KeyAttrUDP:
			want = flow.IPProtoUDP
		case KeyAttrSCTP:
			want = flow.IPProtoSCTP
		}
		if l.l4 == 0 || l.proto != want || len(pkt) < l.l4+4 {
			return actionErr("set of L4 ports on a packet without that protocol")
		}
		ports := pkt[l.l4 : l.l4+4]
		old := scratch[:4]
		copy(old, ports)
		maskedWrite(ports, val, mask)
		if a.SetAttr == KeyAttrSCTP {
			if len(pkt) >= l.l4+12 {
				clear(pkt[l.l4+8 : l.l4+12])
				binary.LittleEndian.PutUint32(pkt[l.l4+8:], crc32.Checksum(pkt[l.l4:], castagnoli))
			}
		} else {
			fixL4Csum(pkt, &l, old, ports, l.ethType == flow.EthTypeIPv6)
		}
	case KeyAttrMPLS:
		if !isMPLSType(l.ethType) || len(pkt) < l.etOff+6 {
			return actionErr("set mpls on a packet without MPLS")
		}
		maskedWrite(pkt[l.etOff+2:l.etOff+6], val, mask)
	case KeyAttrARP, KeyAttrICMP, KeyAttrICMPv6, KeyAttrND:
		return applySlowSet(pkt, &l, a.SetAttr, val, mask) // odpexec_slow.go
	case KeyAttrTunnel:
		// The tunnel to encapsulate in on a later output: metadata only.
		// The kernel keeps none of an execute's tunnel key, so whoever
		// sends the output on must set it again (TunnelDstSet).
		var t flow.Tunnel
		if err := decodeTunnel(val, &t); err != nil {
			return fmt.Errorf("%w: set tunnel: %w", ErrAction, err)
		}
		md.Tunnel = t
	default:
		return fmt.Errorf("%w: set of key attribute %d", ErrActionUnsupported, a.SetAttr)
	}
	return nil
}

// TunnelDstSet reports whether t names a tunnel destination: a packet
// whose metadata has one is encapsulated on output to a tunnel port.
func TunnelDstSet(t *flow.Tunnel) bool {
	return t.IPv4Dst != [4]byte{} || t.IPv6Dst != [16]byte{}
}
