package openflow

import "fmt"

// The Nicira stack actions: push:FIELD[ofs..end] and pop:FIELD[ofs..end]
// (NXAST_STACK_PUSH and NXAST_STACK_POP). ovn-controller uses them to swap
// fields, e.g. the Ethernet addresses of an ARP reply.
const (
	NXASTStackPush uint16 = 27
	NXASTStackPop  uint16 = 28
)

// decodeStack decodes a 24-byte nx_action_stack: the bit offset, the
// field's NXM/OXM header (4 bytes; an 8-byte experimenter header is
// refused), n_bits, zero padding.
func decodeStack(v uint8, sub uint16, act []byte) (Action, error) {
	ofs, h, nBits := u16(act[10:]), u32(act[12:]), u16(act[16:])
	typ, name := ActStackPush, "push"
	if sub == NXASTStackPop {
		typ, name = ActStackPop, "pop"
	}
	f := FieldByHeader(h)
	if f == FieldNone || fields[f].enc == 0 || !actionHeaderFits(f, h) {
		return Action{}, errOf(v, kActBadSetType, "%s: field %08x", name, h)
	}
	if nBits == 0 || int(ofs)+int(nBits) > 8*f.Size() {
		return Action{}, errOf(v, kActBadArgument, "%s: %d bits at %d of %s", name, nBits, ofs, f)
	}
	return Action{Type: typ, Field: f, Ofs: ofs, NBits: nBits}, nil
}

func appendStack(b []byte, a *Action) ([]byte, error) {
	h, ok := a.Field.Header(true)
	if !ok || a.NBits == 0 || int(a.Ofs)+int(a.NBits) > 8*a.Field.Size() {
		return b, fmt.Errorf("openflow: %s of %d bits at %d of %s: %w", a.Type, a.NBits, a.Ofs, a.Field, ErrUnsupported)
	}
	sub := NXASTStackPush
	if a.Type == ActStackPop {
		sub = NXASTStackPop
	}
	b = be16(nxActionHeader(b, 24, sub), a.Ofs)
	return zeros(be16(be32(b, h), a.NBits), 6), nil
}
