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
// (encap with properties: NSH) stay opaque vendor actions (ok false).
func decodeEncap(v uint8, sub uint16, act []byte) (Action, bool) {
	if v < Version13 || len(act) != 16 {
		return Action{}, false
	}
	pt := u32(act[12:])
	if sub == NXASTEncap {
		switch pt {
		case PacketTypeEthernet, PacketTypeMPLS, PacketTypeMPLSMC:
			return Action{Type: ActEncap, Ofs: u16(act[10:]), Load: uint64(pt)}, true
		}
		return Action{}, false
	}
	if u16(act[10:]) != 0 {
		return Action{}, false
	}
	return Action{Type: ActDecap, Load: uint64(pt)}, true
}

func appendEncap(b []byte, a *Action) ([]byte, error) {
	switch a.Type {
	case ActEncap:
		return be32(be16(nxActionHeader(b, 16, NXASTEncap), a.Ofs), uint32(a.Load)), nil
	case ActDecap:
		return be32(zeros(nxActionHeader(b, 16, NXASTDecap), 2), uint32(a.Load)), nil
	}
	return b, fmt.Errorf("openflow: %s is not encap or decap: %w", a.Type, ErrUnsupported)
}
