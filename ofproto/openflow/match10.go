package openflow

import (
	"fmt"
	"math/bits"

	"github.com/govswitch/govswitch/flow"
)

// Match10Len is the size of the OpenFlow 1.0 ofp_match.
const Match10Len = 40

// OpenFlow 1.0 ofp_match wildcard bits (OFPFW_*).
const (
	Wildcard10InPort     uint32 = 1 << 0
	Wildcard10DlVLAN     uint32 = 1 << 1
	Wildcard10DlSrc      uint32 = 1 << 2
	Wildcard10DlDst      uint32 = 1 << 3
	Wildcard10DlType     uint32 = 1 << 4
	Wildcard10NwProto    uint32 = 1 << 5
	Wildcard10TpSrc      uint32 = 1 << 6
	Wildcard10TpDst      uint32 = 1 << 7
	Wildcard10NwSrcShift        = 8
	Wildcard10NwDstShift        = 14
	Wildcard10DlVLANPCP  uint32 = 1 << 20
	Wildcard10NwTos      uint32 = 1 << 21
	Wildcard10All        uint32 = 1<<22 - 1
)

// VLAN10None is the dl_vlan value of OpenFlow 1.0 meaning "no tag".
const VLAN10None uint16 = 0xffff

// decodeMatch10 converts the 40-byte ofp_match at b (len(b) >= 40) into m.
// Like OVS it drops fields whose prerequisites the match does not pin down
// (nw_src without dl_type=ip, tp_dst without nw_proto), so the result
// always satisfies NXM/OXM prerequisites.
func decodeMatch10(b []byte, m *Match) {
	*m = Match{}
	k, mk := &m.Key, m.Mask.Key()
	w := u32(b)
	if w&Wildcard10InPort == 0 {
		k.InPort, mk.InPort = Port10To32(u16(b[4:])), 0xffffffff
	}
	if w&Wildcard10DlSrc == 0 {
		copy(k.EthSrc[:], b[6:12])
		mk.EthSrc = [6]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}
	}
	if w&Wildcard10DlDst == 0 {
		copy(k.EthDst[:], b[12:18])
		mk.EthDst = [6]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}
	}
	vid, pcp := u16(b[18:]), b[20]
	tci, tciMask := &k.VLANs[0].TCI, &mk.VLANs[0].TCI
	if w&Wildcard10DlVLAN == 0 {
		if vid == VLAN10None {
			*tci, *tciMask = 0, 0xffff
		} else {
			*tci |= vid&flow.VLANVIDMask | flow.VLANPresent
			*tciMask |= flow.VLANVIDMask | flow.VLANPresent
		}
	}
	if w&Wildcard10DlVLANPCP == 0 && !(w&Wildcard10DlVLAN == 0 && vid == VLAN10None) {
		*tci |= uint16(pcp&7)<<13 | flow.VLANPresent
		*tciMask |= flow.VLANPCPMask | flow.VLANPresent
	}
	if w&Wildcard10DlType == 0 {
		k.EthType, mk.EthType = u16(b[22:]), 0xffff
	}
	isIPv4 := mk.EthType == 0xffff && k.EthType == flow.EthTypeIPv4
	isIPv6 := mk.EthType == 0xffff && k.EthType == flow.EthTypeIPv6
	isARP := mk.EthType == 0xffff && (k.EthType == flow.EthTypeARP || k.EthType == flow.EthTypeRARP)
	isIP := isIPv4 || isIPv6
	if w&Wildcard10NwTos == 0 && isIP {
		k.NwTos, mk.NwTos = b[24]&0xfc, 0xfc
	}
	if w&Wildcard10NwProto == 0 && (isIP || isARP) {
		k.NwProto, mk.NwProto = b[25], 0xff
	}
	if isIPv4 || isARP {
		if n := prefix10(w >> Wildcard10NwSrcShift); n > 0 {
			mask := ^uint32(0) << (32 - n)
			putIPv4(&k.IPv4Src, u32(b[28:])&mask)
			putIPv4(&mk.IPv4Src, mask)
		}
		if n := prefix10(w >> Wildcard10NwDstShift); n > 0 {
			mask := ^uint32(0) << (32 - n)
			putIPv4(&k.IPv4Dst, u32(b[32:])&mask)
			putIPv4(&mk.IPv4Dst, mask)
		}
	}
	l4 := false
	if mk.NwProto == 0xff && isIP {
		switch k.NwProto {
		case flow.IPProtoTCP, flow.IPProtoUDP, flow.IPProtoSCTP:
			l4 = true
		case flow.IPProtoICMP:
			l4 = isIPv4
		case flow.IPProtoICMPv6:
			l4 = isIPv6
		}
	}
	if l4 {
		if w&Wildcard10TpSrc == 0 {
			k.TpSrc, mk.TpSrc = u16(b[36:]), 0xffff
		}
		if w&Wildcard10TpDst == 0 {
			k.TpDst, mk.TpDst = u16(b[38:]), 0xffff
		}
	}
}

// prefix10 turns a 6-bit "wildcarded low bits" count into a prefix length.
func prefix10(wc uint32) int {
	wc &= 0x3f
	if wc >= 32 {
		return 0
	}
	return 32 - int(wc)
}

func putIPv4(a *[4]byte, v uint32) { *a = [4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)} }
func getIPv4(a *[4]byte) uint32 {
	return uint32(a[0])<<24 | uint32(a[1])<<16 | uint32(a[2])<<8 | uint32(a[3])
}

// appendMatch10 appends m as a 40-byte OpenFlow 1.0 ofp_match. It fails for
// a Mask that 1.0 cannot express (partial MAC masks, non-CIDR IP masks,
// IPv6, registers, metadata, …); wildcarded fields are written as zero.
func appendMatch10(b []byte, m *Match) ([]byte, error) {
	k, mk := m.Key.Apply(&m.Mask), m.Mask.Key()
	rest := m.Mask // what is left once every 1.0 field is accounted for
	rk := rest.Key()
	w := Wildcard10All
	var inPort uint16
	switch mk.InPort {
	case 0:
	case 0xffffffff:
		p, ok := Port32To10(k.InPort)
		if !ok {
			return b, fmt.Errorf("openflow: in_port %d does not fit OpenFlow 1.0: %w", k.InPort, ErrUnsupported)
		}
		inPort, w = p, w&^Wildcard10InPort
	default:
		return b, fmt.Errorf("openflow: masked in_port in OpenFlow 1.0: %w", ErrUnsupported)
	}
	rk.InPort = 0
	macWC := func(a *[6]byte, bit uint32) error {
		switch *a {
		case [6]byte{}:
		case [6]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}:
			w &^= bit
		default:
			return fmt.Errorf("openflow: masked Ethernet address in OpenFlow 1.0: %w", ErrUnsupported)
		}
		return nil
	}
	if err := macWC(&mk.EthSrc, Wildcard10DlSrc); err != nil {
		return b, err
	}
	if err := macWC(&mk.EthDst, Wildcard10DlDst); err != nil {
		return b, err
	}
	rk.EthSrc, rk.EthDst = [6]byte{}, [6]byte{}
	var vid uint16
	var pcp uint8
	tci, tm := k.VLANs[0].TCI, mk.VLANs[0].TCI
	switch {
	case tm == 0:
	case tm == 0xffff && tci == 0:
		// "No tag"; like OVS, leave dl_vlan_pcp unwildcarded (and 0).
		vid, w = VLAN10None, w&^Wildcard10DlVLAN&^Wildcard10DlVLANPCP
	case tm == 0xffff || tm == 0x1fff || tm == 0xf000:
		if tci&flow.VLANPresent == 0 {
			return b, fmt.Errorf("openflow: VLAN match without the present bit in OpenFlow 1.0: %w", ErrUnsupported)
		}
		if tm&flow.VLANVIDMask != 0 {
			vid, w = tci&flow.VLANVIDMask, w&^Wildcard10DlVLAN
		}
		if tm&flow.VLANPCPMask != 0 {
			pcp, w = uint8(tci>>13), w&^Wildcard10DlVLANPCP
		}
	default:
		return b, fmt.Errorf("openflow: VLAN TCI mask %#04x in OpenFlow 1.0: %w", tm, ErrUnsupported)
	}
	rk.VLANs[0].TCI = 0
	exact16 := func(mv uint16, bit uint32, what string) error {
		switch mv {
		case 0:
		case 0xffff:
			w &^= bit
		default:
			return fmt.Errorf("openflow: masked %s in OpenFlow 1.0: %w", what, ErrUnsupported)
		}
		return nil
	}
	if err := exact16(mk.EthType, Wildcard10DlType, "dl_type"); err != nil {
		return b, err
	}
	rk.EthType = 0
	switch mk.NwTos {
	case 0:
	case 0xfc:
		w &^= Wildcard10NwTos
	default:
		return b, fmt.Errorf("openflow: nw_tos mask %#02x in OpenFlow 1.0 (only the DSCP bits): %w", mk.NwTos, ErrUnsupported)
	}
	rk.NwTos = 0
	switch mk.NwProto {
	case 0:
	case 0xff:
		w &^= Wildcard10NwProto
	default:
		return b, fmt.Errorf("openflow: masked nw_proto in OpenFlow 1.0: %w", ErrUnsupported)
	}
	rk.NwProto = 0
	ipWC := func(a *[4]byte, shift uint) error {
		mv := getIPv4(a)
		n := bits.LeadingZeros32(^mv)
		if n < 32 && mv<<n != 0 {
			return fmt.Errorf("openflow: non-CIDR IPv4 mask %08x in OpenFlow 1.0: %w", mv, ErrUnsupported)
		}
		w = w&^(0x3f<<shift) | uint32(32-n)<<shift
		return nil
	}
	if err := ipWC(&mk.IPv4Src, Wildcard10NwSrcShift); err != nil {
		return b, err
	}
	if err := ipWC(&mk.IPv4Dst, Wildcard10NwDstShift); err != nil {
		return b, err
	}
	rk.IPv4Src, rk.IPv4Dst = [4]byte{}, [4]byte{}
	if err := exact16(mk.TpSrc, Wildcard10TpSrc, "tp_src"); err != nil {
		return b, err
	}
	if err := exact16(mk.TpDst, Wildcard10TpDst, "tp_dst"); err != nil {
		return b, err
	}
	rk.TpSrc, rk.TpDst = 0, 0
	if !rest.IsZero() {
		return b, fmt.Errorf("openflow: match uses fields beyond OpenFlow 1.0 (use NXM): %w", ErrUnsupported)
	}
	start := len(b)
	b = be32(b, w)
	b = be16(b, inPort)
	b = append(b, k.EthSrc[:]...)
	b = append(b, k.EthDst[:]...)
	b = be16(b, vid)
	b = append(b, pcp, 0)
	b = be16(b, k.EthType)
	b = append(b, k.NwTos&0xfc, k.NwProto, 0, 0)
	b = append(b, k.IPv4Src[:]...)
	b = append(b, k.IPv4Dst[:]...)
	b = be16(b, k.TpSrc)
	b = be16(b, k.TpDst)
	// A peer reads 1.0 fields only under their prerequisites (tp_dst needs
	// an IP protocol, nw_src an IP or ARP dl_type); refuse what it would
	// read differently.
	var back Match
	decodeMatch10(b[start:], &back)
	if back.Mask != m.Mask || back.Key != k {
		return b[:start], fmt.Errorf("openflow: match fields without their prerequisites in OpenFlow 1.0: %w", ErrUnsupported)
	}
	return b, nil
}

// AppendMatch10 appends m as an OpenFlow 1.0 ofp_match (40 bytes).
func AppendMatch10(b []byte, m *Match) ([]byte, error) { return appendMatch10(b, m) }

// DecodeMatch10 parses the OpenFlow 1.0 ofp_match at the start of b.
func DecodeMatch10(b []byte, m *Match) error {
	if len(b) < Match10Len {
		return badLen(Version10, "ofp_match", len(b), Match10Len)
	}
	decodeMatch10(b, m)
	return nil
}
