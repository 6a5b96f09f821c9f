package openflow

import (
	"fmt"

	"github.com/govswitch/govswitch/flow"
)

// The Nicira MPLS actions, OpenFlow 1.0's only way to say push_mpls,
// pop_mpls, set_mpls_label/tc/ttl and dec_mpls_ttl (OpenFlow 1.1+ has
// OFPAT_* for most and set_field for label and tc). Each is 16 bytes: the
// NX header, then the argument at byte 10 (12 for the 32-bit label), as
// ovs-ofctl 3.1 encodes them (testdata/ovs-ofctl/mpls-actions-of10.hex).
const (
	NXASTPushMPLS     uint16 = 23
	NXASTPopMPLS      uint16 = 24
	NXASTSetMPLSTTL   uint16 = 25
	NXASTDecMPLSTTL   uint16 = 26
	NXASTSetMPLSLabel uint16 = 30
	NXASTSetMPLSTC    uint16 = 31
)

// decodeMPLSAction decodes a whole NXAST MPLS action (len(act) >= 16).
func decodeMPLSAction(v uint8, sub uint16, act []byte) (Action, error) {
	if len(act) != 16 {
		return Action{}, errOf(v, kActBadLen, "Nicira MPLS action %d: length %d, want 16", sub, len(act))
	}
	switch sub {
	case NXASTPushMPLS:
		a := Action{Type: ActPushMPLS, EthType: u16(act[10:])}
		if a.EthType != flow.EthTypeMPLS && a.EthType != flow.EthTypeMPLSM {
			return Action{}, errOf(v, kActBadArgument, "push_mpls ethertype %#04x", a.EthType)
		}
		return a, nil
	case NXASTPopMPLS:
		return Action{Type: ActPopMPLS, EthType: u16(act[10:])}, nil
	case NXASTSetMPLSTTL:
		return Action{Type: ActSetMPLSTTL, TTL: act[10]}, nil
	case NXASTDecMPLSTTL:
		return Action{Type: ActDecMPLSTTL}, nil
	case NXASTSetMPLSLabel:
		// OVS takes any 32-bit value here and masks it when it sets the
		// label; ovs-ofctl never sends more than 20 bits.
		return Action{Type: ActSetMPLSLabel, Load: uint64(u32(act[12:]))}, nil
	case NXASTSetMPLSTC:
		return Action{Type: ActSetMPLSTC, VLANPCP: act[10]}, nil
	}
	return Action{}, errOf(v, kActBadVendorType, "Nicira action %d", sub)
}

// appendMPLSAction10 encodes an MPLS action as OpenFlow 1.0 (Nicira).
func appendMPLSAction10(b []byte, a *Action) ([]byte, error) {
	switch a.Type {
	case ActPushMPLS:
		return zeros(be16(nxActionHeader(b, 16, NXASTPushMPLS), a.EthType), 4), nil
	case ActPopMPLS:
		return zeros(be16(nxActionHeader(b, 16, NXASTPopMPLS), a.EthType), 4), nil
	case ActSetMPLSTTL:
		return zeros(append(nxActionHeader(b, 16, NXASTSetMPLSTTL), a.TTL), 5), nil
	case ActDecMPLSTTL:
		return zeros(nxActionHeader(b, 16, NXASTDecMPLSTTL), 6), nil
	case ActSetMPLSLabel:
		return be32(zeros(nxActionHeader(b, 16, NXASTSetMPLSLabel), 2), uint32(a.Load)), nil
	case ActSetMPLSTC:
		return zeros(append(nxActionHeader(b, 16, NXASTSetMPLSTC), a.VLANPCP), 5), nil
	}
	return b, fmt.Errorf("openflow: %s is not an MPLS action: %w", a.Type, ErrUnsupported)
}

// appendMPLSAction13 encodes set_mpls_label and set_mpls_tc for OpenFlow
// 1.2+, where OVS sends them as set_field.
func appendMPLSAction13(b []byte, a *Action) ([]byte, error) {
	sf := Action{Type: ActSetField}
	switch a.Type {
	case ActSetMPLSLabel:
		sf.Field = FieldMPLSLabel
		l := uint32(a.Load) & 0xfffff
		sf.Value[0], sf.Value[1], sf.Value[2], sf.Value[3] = byte(l>>24), byte(l>>16), byte(l>>8), byte(l)
	case ActSetMPLSTC:
		sf.Field = FieldMPLSTC
		sf.Value[0] = a.VLANPCP & 7
	default:
		return b, fmt.Errorf("openflow: %s is not an MPLS set action: %w", a.Type, ErrUnsupported)
	}
	return appendSetField(b, &sf, Version13)
}

// encap(...) and decap(...) (NXAST_ENCAP, NXAST_DECAP, OpenFlow 1.3+ in
// OVS): encap is hdr_size (be16) and the new packet type (be32), then
// properties (NSH's); decap is 2 pad bytes and the new packet type, 0xfffe
// ("use the next protocol") for a plain decap(). Packet types are
// (namespace << 16 | type): (0,0) Ethernet, (1,ethertype) a bare L3
// packet of that ethertype.
const (
	NXASTEncap uint16 = 46
	NXASTDecap uint16 = 47

	PacketTypeEthernet  uint32 = 0
	PacketTypeMPLS      uint32 = 1<<16 | 0x8847
	PacketTypeMPLSMC    uint32 = 1<<16 | 0x8848
	PacketTypeIPv4      uint32 = 1<<16 | 0x0800
	PacketTypeIPv6      uint32 = 1<<16 | 0x86dd
	PacketTypeNextProto uint32 = 0xfffe
)

// decodeEncap decodes the encaps and decaps this codec models; others
// stay opaque vendor actions (ok false).
func decodeEncap(v uint8, sub uint16, act []byte) (Action, bool) {
	if v < Version13 || len(act) < 16 {
		return Action{}, false
	}
	pt := u32(act[12:])
	if sub == NXASTEncap {
		switch pt {
		case PacketTypeEthernet, PacketTypeMPLS, PacketTypeMPLSMC:
			if len(act) != 16 {
				return Action{}, false
			}
			return Action{Type: ActEncap, Ofs: u16(act[10:]), Load: uint64(pt)}, true
		case PacketTypeNSH:
			a := Action{Type: ActEncap, Ofs: u16(act[10:]), Load: uint64(pt)}
			if !decodeNSHProps(act[16:], &a) {
				return Action{}, false
			}
			return a, true
		}
		return Action{}, false
	}
	if u16(act[10:]) != 0 || len(act) != 16 {
		return Action{}, false
	}
	return Action{Type: ActDecap, Load: uint64(pt)}, true
}

// NSH encap properties (struct ofp_ed_prop_header: class be16, type, len;
// each padded to 8 bytes): class 4, type 1 md_type (len 5: the md type
// byte), type 2 tlv (tlv class be16, tlv type, tlv length, the value
// padded to 8 bytes).
const (
	edPropClassNSH  = 4
	edPropNSHMDType = 1
	edPropNSHTLV    = 2

	PacketTypeNSH uint32 = 1<<16 | 0x894f
)

// decodeNSHProps decodes encap(nsh)'s properties into a. It reports false
// for what it does not model byte for byte (other classes, nonzero
// padding, a second md_type), which then stays an opaque action.
func decodeNSHProps(b []byte, a *Action) bool {
	for len(b) > 0 {
		if len(b) < 4 {
			return false
		}
		class, typ, n := u16(b), b[2], int(b[3])
		padded := (n + 7) &^ 7
		if class != edPropClassNSH || n < 4 || padded > len(b) || !allZeroBytes(b[n:padded]) {
			return false
		}
		p := b[:n]
		b = b[padded:]
		switch typ {
		case edPropNSHMDType:
			if n != 5 || a.NSHMDType != 0 || p[4] == 0 {
				return false
			}
			a.NSHMDType = p[4]
		case edPropNSHTLV:
			if n < 8 {
				return false
			}
			tlen := int(p[7])
			if tlen > 127 || n != 8+((tlen+7)&^7) {
				return false
			}
			val := p[8 : 8+tlen]
			if !allZeroBytes(p[8+tlen:]) {
				return false
			}
			a.Data = append(a.Data, p[4], p[5], p[6], byte(tlen))
			a.Data = append(a.Data, val...)
			for len(a.Data)%4 != 0 {
				a.Data = append(a.Data, 0)
			}
		default:
			return false
		}
	}
	return true
}

// appendNSHProps appends encap(nsh)'s properties from a.
func appendNSHProps(b []byte, a *Action) []byte {
	if a.NSHMDType != 0 {
		b = append(b, 0, edPropClassNSH, edPropNSHMDType, 5, a.NSHMDType, 0, 0, 0)
	}
	for t := a.Data; len(t) >= 4; {
		tlen := int(t[3] & 0x7f)
		if 4+tlen > len(t) {
			break
		}
		padded := (tlen + 7) &^ 7
		b = append(b, 0, edPropClassNSH, edPropNSHTLV, byte(8+padded), t[0], t[1], t[2], byte(tlen))
		b = append(b, t[4:4+tlen]...)
		b = append(b, make([]byte, padded-tlen)...)
		t = t[4+((tlen+3)&^3):]
	}
	return b
}

func appendEncap(b []byte, a *Action) ([]byte, error) {
	switch a.Type {
	case ActEncap:
		if uint32(a.Load) == PacketTypeNSH {
			props := appendNSHProps(nil, a)
			b = be32(be16(nxActionHeader(b, uint16(16+len(props)), NXASTEncap), a.Ofs), uint32(a.Load))
			return append(b, props...), nil
		}
		return be32(be16(nxActionHeader(b, 16, NXASTEncap), a.Ofs), uint32(a.Load)), nil
	case ActDecap:
		return be32(zeros(nxActionHeader(b, 16, NXASTDecap), 2), uint32(a.Load)), nil
	}
	return b, fmt.Errorf("openflow: %s is not encap or decap: %w", a.Type, ErrUnsupported)
}
