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
// field's header (4 bytes, or 8 for an experimenter field), n_bits, zero
// padding.
func decodeStack(v uint8, sub uint16, act []byte) (Action, error) {
	typ, name := ActStackPush, "push"
	if sub == NXASTStackPop {
		typ, name = ActStackPop, "pop"
	}
	ofs := u16(act[10:])
	f, h, n := pullActionField(act[12:])
	if n == 0 || f == FieldNone {
		return Action{}, errOf(v, kActBadSetType, "%s: field %08x", name, h)
	}
	nBits := u16(act[12+n:])
	for _, c := range act[14+n:] {
		if c != 0 {
			return Action{}, errOf(v, kActBadArgument, "%s: nonzero padding", name)
		}
	}
	if nBits == 0 || int(ofs)+int(nBits) > f.Bits() {
		return Action{}, errOf(v, kActBadArgument, "%s: %d bits at %d of %s", name, nBits, ofs, f)
	}
	return Action{Type: typ, Field: f, Ofs: ofs, NBits: nBits}, nil
}

func appendStack(b []byte, a *Action) ([]byte, error) {
	if actionFieldLen(a.Field) == 0 || a.NBits == 0 || int(a.Ofs)+int(a.NBits) > 8*a.Field.Size() {
		return b, fmt.Errorf("openflow: %s of %d bits at %d of %s: %w", a.Type, a.NBits, a.Ofs, a.Field, ErrUnsupported)
	}
	sub := NXASTStackPush
	if a.Type == ActStackPop {
		sub = NXASTStackPop
	}
	start := len(b)
	b = be16(nxActionHeader(b, 24, sub), a.Ofs)
	b, _ = appendActionField(b, a.Field, true)
	b = be16(b, a.NBits)
	for len(b)-start < 24 {
		b = append(b, 0)
	}
	return b, nil
}
