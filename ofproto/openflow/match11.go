package openflow

import (
	"fmt"

	"github.com/govswitch/govswitch/flow"
)

// Match11Len is the size of the OpenFlow 1.1 ofp_match (OFPMT_STANDARD),
// header included.
const Match11Len = 88

// OpenFlow 1.1 ofp_match wildcard bits (OFPFW11_*). The Ethernet and IPv4
// addresses and the metadata are wildcarded by their masks instead.
const (
	Wildcard11InPort    uint32 = 1 << 0
	Wildcard11DlVLAN    uint32 = 1 << 1
	Wildcard11DlVLANPCP uint32 = 1 << 2
	Wildcard11DlType    uint32 = 1 << 3
	Wildcard11NwTos     uint32 = 1 << 4
	Wildcard11NwProto   uint32 = 1 << 5
	Wildcard11TpSrc     uint32 = 1 << 6
	Wildcard11TpDst     uint32 = 1 << 7
	Wildcard11MPLSLabel uint32 = 1 << 8
	Wildcard11MPLSTC    uint32 = 1 << 9
	Wildcard11All       uint32 = 1<<10 - 1
)

// OpenFlow 1.1 dl_vlan values that are no VID.
const (
	VLAN11Any  uint16 = 0xfffe // a tag, any VID
	VLAN11None uint16 = 0xffff // no tag
)

// match11Type is OFPMT_STANDARD, the only match type of OpenFlow 1.1.
const match11Type = 0

// MPLS label stack entry layout (flow.Key.MPLSLSE).
const (
	mplsLabelShift = 12
	mplsTCShift    = 9
	mplsLabelMask  = 0xfffff << mplsLabelShift
	mplsTCMask     = 7 << mplsTCShift
)

// DecodeMatch11 parses the OpenFlow 1.1 ofp_match at the start of b (88
// bytes). Masks on the wire have 1-bits for "don't care", the reverse of
// Match. As in decodeMatch10, fields whose prerequisites the match does not
// pin down (nw_src without dl_type=ip or arp, tp_dst without a transport
// protocol) are dropped, as the specification says and OVS does. Errors
// are *Error in OpenFlow 1.1 numbering.
func DecodeMatch11(b []byte, m *Match) error {
	const v = Version11
	*m = Match{}
	if len(b) < Match11Len {
		return errOf(v, kMatchBadLen, "ofp_match: %d bytes, want %d", len(b), Match11Len)
	}
	if typ := u16(b); typ != match11Type {
		return errOf(v, kMatchBadType, "match type %d, want 0 (OFPMT_STANDARD)", typ)
	}
	if n := u16(b[2:]); n != Match11Len {
		return errOf(v, kMatchBadLen, "match length %d, want %d", n, Match11Len)
	}
	k, mk := &m.Key, m.Mask.Key()
	w := u32(b[8:])
	if w&Wildcard11InPort == 0 {
		k.InPort, mk.InPort = u32(b[4:]), ^uint32(0)
	}
	for i := 0; i < 6; i++ {
		mk.EthSrc[i], mk.EthDst[i] = ^b[18+i], ^b[30+i]
		k.EthSrc[i], k.EthDst[i] = b[12+i]&mk.EthSrc[i], b[24+i]&mk.EthDst[i]
	}
	vid, pcp := u16(b[36:]), b[38]
	if w&Wildcard11DlVLAN == 0 {
		tci, tm := &k.VLANs[0].TCI, &mk.VLANs[0].TCI
		switch {
		case vid == VLAN11None:
			*tci, *tm = 0, 0xffff
		case vid == VLAN11Any:
			*tci, *tm = flow.VLANPresent, flow.VLANPresent
		case vid <= flow.VLANVIDMask:
			*tci, *tm = flow.VLANPresent|vid, flow.VLANPresent|flow.VLANVIDMask
		default:
			return errOf(v, kMatchBadValue, "dl_vlan %#04x", vid)
		}
		if vid != VLAN11None && w&Wildcard11DlVLANPCP == 0 {
			if pcp > 7 {
				return errOf(v, kMatchBadValue, "dl_vlan_pcp %d", pcp)
			}
			*tci |= uint16(pcp) << 13
			*tm |= flow.VLANPCPMask
		}
	}
	if w&Wildcard11DlType == 0 {
		k.EthType, mk.EthType = u16(b[40:]), 0xffff
	}
	isIPv4 := mk.EthType == 0xffff && k.EthType == flow.EthTypeIPv4
	isARP := mk.EthType == 0xffff && (k.EthType == flow.EthTypeARP || k.EthType == flow.EthTypeRARP)
	isMPLS := mk.EthType == 0xffff && (k.EthType == flow.EthTypeMPLS || k.EthType == flow.EthTypeMPLSM)
	if isIPv4 && w&Wildcard11NwTos == 0 {
		if b[42]&^0xfc != 0 {
			return errOf(v, kMatchBadValue, "nw_tos %#02x sets ECN bits", b[42])
		}
		k.NwTos, mk.NwTos = b[42], 0xfc
	}
	if isIPv4 || isARP {
		if w&Wildcard11NwProto == 0 {
			k.NwProto, mk.NwProto = b[43], 0xff
		}
		for i := 0; i < 4; i++ {
			mk.IPv4Src[i], mk.IPv4Dst[i] = ^b[48+i], ^b[56+i]
			k.IPv4Src[i], k.IPv4Dst[i] = b[44+i]&mk.IPv4Src[i], b[52+i]&mk.IPv4Dst[i]
		}
	}
	if isIPv4 && mk.NwProto == 0xff {
		tpSrc, tpDst := u16(b[60:]), u16(b[62:])
		switch k.NwProto {
		case flow.IPProtoICMP:
			// OVS reads ICMP type and code here too, as 1.0 did.
			if w&Wildcard11TpSrc == 0 && tpSrc > 0xff || w&Wildcard11TpDst == 0 && tpDst > 0xff {
				return errOf(v, kMatchBadField, "ICMP type %d code %d", tpSrc, tpDst)
			}
			fallthrough
		case flow.IPProtoTCP, flow.IPProtoUDP, flow.IPProtoSCTP:
			if w&Wildcard11TpSrc == 0 {
				k.TpSrc, mk.TpSrc = tpSrc, 0xffff
			}
			if w&Wildcard11TpDst == 0 {
				k.TpDst, mk.TpDst = tpDst, 0xffff
			}
		}
	}
	if isMPLS {
		if w&Wildcard11MPLSLabel == 0 {
			label := u32(b[64:])
			if label > 0xfffff {
				return errOf(v, kMatchBadValue, "mpls_label %#x", label)
			}
			k.MPLSLSE |= label << mplsLabelShift
			mk.MPLSLSE |= mplsLabelMask
		}
		if w&Wildcard11MPLSTC == 0 {
			if b[68] > 7 {
				return errOf(v, kMatchBadValue, "mpls_tc %d", b[68])
			}
			k.MPLSLSE |= uint32(b[68]) << mplsTCShift
			mk.MPLSLSE |= mplsTCMask
		}
	}
	mk.OFMetadata = ^u64(b[80:])
	k.OFMetadata = u64(b[72:]) & mk.OFMetadata
	return nil
}

// AppendMatch11 appends m as an OpenFlow 1.1 ofp_match (88 bytes),
// wildcarded fields written as zero with all-ones "don't care" masks, as
// ovs-vswitchd writes them. It fails with ErrUnsupported for a match 1.1
// cannot express (IPv6, registers, partial masks on exact-only fields,
// fields without their prerequisites): leaving them out would widen the
// flow.
func AppendMatch11(b []byte, m *Match) ([]byte, error) {
	k, mk := m.Key.Apply(&m.Mask), m.Mask
	rest := m.Mask // what is left once every 1.1 field is accounted for
	w := Wildcard11All
	switch mk.InPort {
	case 0:
	case ^uint32(0):
		w &^= Wildcard11InPort
	default:
		return b, fmt.Errorf("openflow: masked in_port in OpenFlow 1.1: %w", ErrUnsupported)
	}
	rest.InPort = 0
	var vid uint16
	var pcp uint8
	tci, tm := k.VLANs[0].TCI, mk.VLANs[0].TCI
	switch {
	case tm == 0:
	case tm&flow.VLANPresent != 0 && tci&flow.VLANPresent == 0:
		if tm != 0xffff {
			return b, fmt.Errorf("openflow: VLAN TCI mask %#04x without a tag in OpenFlow 1.1: %w", tm, ErrUnsupported)
		}
		vid, w = VLAN11None, w&^Wildcard11DlVLAN
	case tm&flow.VLANPresent != 0:
		switch tm & flow.VLANVIDMask {
		case 0:
			vid = VLAN11Any
		case flow.VLANVIDMask:
			vid = tci & flow.VLANVIDMask
		default:
			return b, fmt.Errorf("openflow: masked VLAN VID in OpenFlow 1.1: %w", ErrUnsupported)
		}
		w &^= Wildcard11DlVLAN
		switch tm & flow.VLANPCPMask {
		case 0:
		case flow.VLANPCPMask:
			pcp, w = uint8(tci>>13), w&^Wildcard11DlVLANPCP
		default:
			return b, fmt.Errorf("openflow: masked VLAN PCP in OpenFlow 1.1: %w", ErrUnsupported)
		}
	default:
		return b, fmt.Errorf("openflow: VLAN TCI mask %#04x in OpenFlow 1.1: %w", tm, ErrUnsupported)
	}
	rest.VLANs[0].TCI = 0
	exact := func(full bool, zero bool, bit uint32, what string) error {
		switch {
		case zero:
		case full:
			w &^= bit
		default:
			return fmt.Errorf("openflow: masked %s in OpenFlow 1.1: %w", what, ErrUnsupported)
		}
		return nil
	}
	if err := exact(mk.EthType == 0xffff, mk.EthType == 0, Wildcard11DlType, "dl_type"); err != nil {
		return b, err
	}
	if err := exact(mk.NwTos == 0xfc, mk.NwTos == 0, Wildcard11NwTos, "nw_tos (only the DSCP bits)"); err != nil {
		return b, err
	}
	if err := exact(mk.NwProto == 0xff, mk.NwProto == 0, Wildcard11NwProto, "nw_proto"); err != nil {
		return b, err
	}
	if err := exact(mk.TpSrc == 0xffff, mk.TpSrc == 0, Wildcard11TpSrc, "tp_src"); err != nil {
		return b, err
	}
	if err := exact(mk.TpDst == 0xffff, mk.TpDst == 0, Wildcard11TpDst, "tp_dst"); err != nil {
		return b, err
	}
	label, tc := mk.MPLSLSE&mplsLabelMask, mk.MPLSLSE&mplsTCMask
	if err := exact(label == mplsLabelMask, label == 0, Wildcard11MPLSLabel, "mpls_label"); err != nil {
		return b, err
	}
	if err := exact(tc == mplsTCMask, tc == 0, Wildcard11MPLSTC, "mpls_tc"); err != nil {
		return b, err
	}
	if mk.MPLSLSE&^(mplsLabelMask|mplsTCMask) != 0 {
		return b, fmt.Errorf("openflow: mpls_bos or mpls_ttl in OpenFlow 1.1: %w", ErrUnsupported)
	}
	rest.EthType, rest.NwTos, rest.NwProto, rest.TpSrc, rest.TpDst, rest.MPLSLSE = 0, 0, 0, 0, 0, 0
	rest.EthSrc, rest.EthDst, rest.IPv4Src, rest.IPv4Dst, rest.OFMetadata = [6]byte{}, [6]byte{}, [4]byte{}, [4]byte{}, 0
	if !rest.IsZero() {
		return b, fmt.Errorf("openflow: match uses fields beyond OpenFlow 1.1: %w", ErrUnsupported)
	}
	start := len(b)
	b = be32(be16(be16(b, match11Type), Match11Len), k.InPort)
	b = be32(b, w)
	inv := func(b []byte, mask []byte) []byte {
		for _, c := range mask {
			b = append(b, ^c)
		}
		return b
	}
	b = inv(append(b, k.EthSrc[:]...), mk.EthSrc[:])
	b = inv(append(b, k.EthDst[:]...), mk.EthDst[:])
	b = be16(append(be16(b, vid), pcp, 0), k.EthType)
	b = append(b, k.NwTos&0xfc, k.NwProto)
	b = inv(append(b, k.IPv4Src[:]...), mk.IPv4Src[:])
	b = inv(append(b, k.IPv4Dst[:]...), mk.IPv4Dst[:])
	b = be16(be16(b, k.TpSrc), k.TpDst)
	b = zeros(append(be32(b, k.MPLSLSE>>mplsLabelShift), uint8(k.MPLSLSE>>mplsTCShift)&7), 3)
	b = be64(be64(b, k.OFMetadata), ^mk.OFMetadata)
	// A peer reads 1.1 fields only under their prerequisites; refuse what
	// it would read differently.
	var back Match
	if err := DecodeMatch11(b[start:], &back); err != nil || back.Mask != m.Mask || back.Key != k {
		return b[:start], fmt.Errorf("openflow: match fields without their prerequisites in OpenFlow 1.1: %w", ErrUnsupported)
	}
	return b, nil
}
