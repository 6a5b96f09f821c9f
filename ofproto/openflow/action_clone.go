package openflow

import "fmt"

// The Nicira actions that nest or bound the rest of the pipeline:
// clone(...) (NXAST_CLONE), output(port=..,max_len=..) (NXAST_OUTPUT_TRUNC)
// and check_pkt_larger(N)->dst (NXAST_CHECK_PKT_LARGER), encoded exactly
// as ovs-ofctl 3.1 encodes them (testdata/ovs-ofctl/clone-actions-*.hex).
const (
	NXASTOutputTrunc    uint16 = 39
	NXASTClone          uint16 = 42
	NXASTCheckPktLarger uint16 = 49
)

// ethHeaderLen is the smallest max_len output_trunc accepts, as OVS.
const ethHeaderLen = 14

// decodeExtAction decodes the actions of this file; act is the whole
// vendor action (at least 16 bytes, a multiple of 8), sub its subtype.
func decodeExtAction(v uint8, sub uint16, act []byte) (Action, error) {
	switch sub {
	case NXASTClone:
		// struct ext_action_header (16 bytes), then the nested actions,
		// of the same version and with the same rules as an
		// apply-actions list.
		nested, err := decodeActionsFor(v, nil, act[16:])
		if err != nil {
			if e, ok := err.(*Error); ok {
				e.Version = v
			}
			return Action{}, err
		}
		if nested == nil {
			nested = []Action{}
		}
		return Action{Type: ActClone, Nested: nested}, nil
	case NXASTOutputTrunc:
		if len(act) != 16 {
			return Action{}, errOf(v, kActBadLen, "output_trunc: length %d, want 16", len(act))
		}
		a := Action{Type: ActOutputTrunc, Port: Port10To32(u16(act[10:])), TruncLen: u32(act[12:])}
		if a.TruncLen < ethHeaderLen {
			return Action{}, errOf(v, kActBadArgument, "output_trunc: max_len %d", a.TruncLen)
		}
		return a, nil
	case NXASTCheckPktLarger:
		// pkt_len, offset, then dst as an NXM/OXM header (4 bytes;
		// experimenter fields 8) and zeros to 24 bytes.
		if len(act) != 24 {
			return Action{}, errOf(v, kActBadLen, "check_pkt_larger: length %d, want 24", len(act))
		}
		h := u32(act[14:])
		f := FieldByHeader(h)
		if f == FieldNone || fields[f].enc == 0 || h&(1<<8) != 0 || h&0xff != uint32(fields[f].size) {
			return Action{}, errOf(v, kActBadSetType, "check_pkt_larger: destination %08x", h)
		}
		for _, c := range act[18:] {
			if c != 0 {
				return Action{}, errOf(v, kActBadArgument, "check_pkt_larger: nonzero padding")
			}
		}
		a := Action{Type: ActCheckPktLarger, MaxLen: u16(act[10:]), Field: f, Ofs: u16(act[12:]), NBits: 1}
		if int(a.Ofs) >= 8*f.Size() {
			return Action{}, errOf(v, kActBadArgument, "check_pkt_larger: bit %d of %s", a.Ofs, f)
		}
		return a, nil
	}
	return Action{}, errOf(v, kActBadVendorType, "Nicira action %d", sub)
}

// appendExtAction encodes the actions of this file in version v.
func appendExtAction(b []byte, a *Action, v uint8) ([]byte, error) {
	switch a.Type {
	case ActClone:
		start := len(b)
		b = zeros(nxActionHeader(b, 0, NXASTClone), 6)
		var err error
		b, err = appendActionsFor(b, v, a.Nested)
		if err != nil {
			return b[:start], err
		}
		if err := putLen16(b, start+2, start); err != nil {
			return b[:start], err
		}
		return b, nil
	case ActOutputTrunc:
		p, ok := Port32To10(a.Port)
		if !ok {
			return b, fmt.Errorf("openflow: output_trunc port %d: %w", a.Port, ErrUnsupported)
		}
		return be32(be16(nxActionHeader(b, 16, NXASTOutputTrunc), p), a.TruncLen), nil
	case ActCheckPktLarger:
		h, ok := a.Field.Header(true)
		if !ok || int(a.Ofs) >= 8*a.Field.Size() {
			return b, fmt.Errorf("openflow: check_pkt_larger into %s[%d]: %w", a.Field, a.Ofs, ErrUnsupported)
		}
		b = be16(be16(nxActionHeader(b, 24, NXASTCheckPktLarger), a.MaxLen), a.Ofs)
		return zeros(be32(b, h), 6), nil
	}
	return b, fmt.Errorf("openflow: %s is not a nesting action: %w", a.Type, ErrUnsupported)
}

// actionsEqual reports whether two action lists are the same, action by
// action.
func actionsEqual(a, b []Action) bool {
	if len(a) != len(b) || (a == nil) != (b == nil) {
		return false
	}
	for i := range a {
		if !a[i].Equal(b[i]) {
			return false
		}
	}
	return true
}
