package openflow

import "fmt"

// dec_ttl(ids): NXAST_DEC_TTL_CNT_IDS, a dec_ttl that sends a packet whose
// TTL runs out to the controllers of the ids listed (none: to no one)
// rather than to controller id 0 as plain dec_ttl does. ovn-controller
// writes its TTL decrements as dec_ttl() (no ids). Any version may carry
// it. An ActDecNwTTL with IDs non-nil is this form, written back as it
// came; IDs nil is plain dec_ttl (OFPAT_DEC_NW_TTL, NXAST_DEC_TTL in 1.0),
// as OVS's encode_DEC_TTL chooses.
//
//	type 0xffff, length 16 + the ids padded to 8, NX vendor id
//	subtype 21, n_controllers, 4 zero bytes, then n_controllers be16 ids
const NXASTDecTTLCntIDs uint16 = 21

func decodeDecTTLCntIDs(v uint8, act []byte) (Action, error) {
	if len(act) < 16 {
		return Action{}, errOf(v, kActBadLen, "dec_ttl(ids): length %d", len(act))
	}
	n := int(u16(act[10:]))
	if u32(act[12:]) != 0 {
		return Action{}, errOf(v, kActBadArgument, "dec_ttl(ids): nonzero reserved bytes")
	}
	if 16+2*n > len(act) {
		return Action{}, errOf(v, kActBadLen, "dec_ttl(ids): %d ids in %d bytes", n, len(act)-16)
	}
	ids := make([]uint16, n)
	for i := range ids {
		ids[i] = u16(act[16+2*i:])
	}
	return Action{Type: ActDecNwTTL, IDs: ids}, nil
}

func appendDecTTLCntIDs(b []byte, a *Action) ([]byte, error) {
	n := 16 + (2*len(a.IDs)+7)&^7
	if n > 0xfff8 {
		return b, fmt.Errorf("openflow: dec_ttl with %d ids: %w", len(a.IDs), ErrBadLength)
	}
	start := len(b)
	b = zeros(be16(nxActionHeader(b, uint16(n), NXASTDecTTLCntIDs), uint16(len(a.IDs))), 4)
	for _, id := range a.IDs {
		b = be16(b, id)
	}
	return pad8(b, start), nil
}

// FormatDecTTL writes a dec_ttl as ovs-ofctl does: dec_ttl, or
// dec_ttl(ids) with the ids comma-separated.
func FormatDecTTL(a *Action) string {
	if a.IDs == nil {
		return "dec_ttl"
	}
	s := "dec_ttl("
	for i, id := range a.IDs {
		if i > 0 {
			s += ","
		}
		s += fmt.Sprint(id)
	}
	return s + ")"
}
