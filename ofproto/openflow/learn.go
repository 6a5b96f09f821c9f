package openflow

import (
	"fmt"
)

// The Nicira learn action (NXAST_LEARN, and NXAST_LEARN2 with limit and
// result_dst), in the bytes ovs-ofctl 3.1 sends: a flow_mod template whose
// match and actions are filled in from the packet that runs it.

// Nicira learn action subtypes.
const (
	NXASTLearn  uint16 = 16
	NXASTLearn2 uint16 = 45
)

// LearnAction flags (NX_LEARN_F_*).
const (
	LearnSendFlowRem   uint16 = 1 << 0
	LearnDeleteLearned uint16 = 1 << 1
	LearnWriteResult   uint16 = 1 << 2 // NXAST_LEARN2 only: ResultDst is set
)

// LearnDst is what a learn spec fills in (NX_LEARN_DST_*).
type LearnDst uint8

const (
	LearnMatch  LearnDst = 0 // match the destination subfield on the source bits
	LearnLoad   LearnDst = 1 // load the source bits into the destination subfield
	LearnOutput LearnDst = 2 // output to the port the source bits name
)

// Spec header bits (a 16-bit word before each spec).
const (
	learnNBitsMask = 0x3ff
	learnSrcImm    = 1 << 13
	learnDstShift  = 11
	learnDstMask   = 3 << learnDstShift
)

// LearnSpec is one flow_mod_spec of a learn action: NBits from a source
// (the subfield Src[SrcOfs..] of the packet's flow, or the immediate
// value Imm) into a destination (a match on, or a load into, Dst[DstOfs..];
// or an output).
type LearnSpec struct {
	Dst    LearnDst
	NBits  uint16
	Src    Field // FieldNone: the source is Imm
	SrcOfs uint16
	// Imm is the immediate source value, a 128-bit big-endian number
	// whose NBits least significant bits are used.
	Imm    [16]byte
	Field  Field // the destination field (LearnMatch, LearnLoad)
	DstOfs uint16
}

// LearnAction is the body of an ActLearn action.
type LearnAction struct {
	IdleTimeout, HardTimeout uint16
	Priority                 uint16
	Cookie                   uint64
	Flags                    uint16 // LearnSendFlowRem, LearnDeleteLearned, LearnWriteResult
	Table                    uint8
	FinIdleTimeout           uint16
	FinHardTimeout           uint16
	// Limit caps the flows with Cookie in Table (0: none); ResultDst at
	// ResultOfs, when Flags has LearnWriteResult, receives 1 when the
	// flow was learned and 0 when the limit stopped it.
	Limit     uint32
	ResultDst Field
	ResultOfs uint16
	// V2 records that the action came as NXAST_LEARN2, so it goes back
	// out as one (ovs-ofctl sends LEARN2 only for limit or result_dst).
	V2    bool
	Specs []LearnSpec
}

func (l *LearnAction) equal(o *LearnAction) bool {
	if l == nil || o == nil {
		return l == o
	}
	if l.IdleTimeout != o.IdleTimeout || l.HardTimeout != o.HardTimeout || l.Priority != o.Priority ||
		l.Cookie != o.Cookie || l.Flags != o.Flags || l.Table != o.Table || l.FinIdleTimeout != o.FinIdleTimeout ||
		l.FinHardTimeout != o.FinHardTimeout || l.Limit != o.Limit || l.ResultDst != o.ResultDst ||
		l.ResultOfs != o.ResultOfs || l.V2 != o.V2 || len(l.Specs) != len(o.Specs) {
		return false
	}
	for i := range l.Specs {
		if l.Specs[i] != o.Specs[i] {
			return false
		}
	}
	return true
}

// nxmField returns the field an unmasked 4-byte NXM/OXM header names, or
// FieldNone when it names none or its length is not the field's.
func nxmField(h uint32) Field {
	f := FieldByHeader(h)
	if f == FieldNone || fields[f].enc == 0 || h&0x1ff != uint32(fields[f].size) || h&0x100 != 0 {
		return FieldNone
	}
	return f
}

// decodeLearn decodes a whole NXAST_LEARN or NXAST_LEARN2 action (sub)
// of version v, checking it as ovs-vswitchd's decoder does.
func decodeLearn(v uint8, sub uint16, act []byte) (Action, error) {
	head := 32
	if sub == NXASTLearn2 {
		head = 40
	}
	if len(act) < head {
		return Action{}, errOf(v, kActBadLen, "learn: length %d, want at least %d", len(act), head)
	}
	l := &LearnAction{IdleTimeout: u16(act[10:]), HardTimeout: u16(act[12:]), Priority: u16(act[14:]),
		Cookie: u64(act[16:]), Flags: u16(act[24:]), Table: act[26], FinIdleTimeout: u16(act[28:]),
		FinHardTimeout: u16(act[30:]), V2: sub == NXASTLearn2}
	if act[27] != 0 || l.Table == 0xff {
		return Action{}, errOf(v, kActBadArgument, "learn: table %d, pad %d", l.Table, act[27])
	}
	allowed := LearnSendFlowRem | LearnDeleteLearned
	if l.V2 {
		allowed |= LearnWriteResult
	}
	if l.Flags&^allowed != 0 {
		return Action{}, errOf(v, kActBadArgument, "learn: flags %#x", l.Flags)
	}
	p := act[head:]
	if l.V2 {
		l.Limit = u32(act[32:])
		ofs := u16(act[36:])
		if u16(act[38:]) != 0 {
			return Action{}, errOf(v, kActBadArgument, "learn: nonzero padding")
		}
		if l.Flags&LearnWriteResult != 0 {
			if len(p) < 4 {
				return Action{}, errOf(v, kActBadLen, "learn: no result_dst")
			}
			f := nxmField(u32(p))
			if f == FieldNone {
				return Action{}, errOf(v, kActBadSetType, "learn: result_dst %08x", u32(p))
			}
			if int(ofs) >= 8*f.Size() {
				return Action{}, errOf(v, kActBadArgument, "learn: result_dst %s[%d]", f, ofs)
			}
			l.ResultDst, l.ResultOfs = f, ofs
			p = p[4:]
		} else if ofs != 0 {
			return Action{}, errOf(v, kActBadArgument, "learn: result_dst_ofs without result_dst")
		}
	}
	for len(p) >= 2 {
		h := u16(p)
		if h == 0 {
			break
		}
		p = p[2:]
		s := LearnSpec{NBits: h & learnNBitsMask, Dst: LearnDst(h & learnDstMask >> learnDstShift)}
		imm := h&learnSrcImm != 0
		if h&^(learnNBitsMask|learnSrcImm|learnDstMask) != 0 || s.Dst > LearnOutput || s.Dst == LearnOutput && imm {
			return Action{}, errOf(v, kActBadArgument, "learn: spec header %#04x", h)
		}
		need := 6
		if imm {
			need = 2 * ((int(s.NBits) + 15) / 16)
		}
		if s.Dst != LearnOutput {
			need += 6
		}
		if len(p) < need {
			return Action{}, errOf(v, kActBadLen, "learn: spec %#04x needs %d bytes, %d left", h, need, len(p))
		}
		if s.NBits == 0 {
			return Action{}, errOf(v, kActBadArgument, "learn: spec of 0 bits")
		}
		if imm {
			n := 2 * ((int(s.NBits) + 15) / 16)
			b := p[:n]
			p = p[n:]
			// The value must fit NBits and our 128 bits.
			for i := 0; i < len(b); i++ {
				bit := 8 * (len(b) - 1 - i) // bit number of this byte's LSB
				if bit >= 128 && b[i] != 0 || bit+8 > int(s.NBits) && b[i]>>max(0, int(s.NBits)-bit) != 0 {
					return Action{}, errOf(v, kActBadArgument, "learn: immediate wider than %d bits", s.NBits)
				}
				if bit < 128 {
					s.Imm[15-bit/8] = b[i]
				}
			}
		} else {
			s.Src, s.SrcOfs = nxmField(u32(p)), u16(p[4:])
			if s.Src == FieldNone {
				return Action{}, errOf(v, kActBadSetType, "learn: source %08x", u32(p))
			}
			if int(s.SrcOfs)+int(s.NBits) > 8*s.Src.Size() {
				return Action{}, errOf(v, kActBadArgument, "learn: %s[%d..%d]", s.Src, s.SrcOfs, int(s.SrcOfs)+int(s.NBits)-1)
			}
			p = p[6:]
		}
		if s.Dst != LearnOutput {
			s.Field, s.DstOfs = nxmField(u32(p)), u16(p[4:])
			if s.Field == FieldNone {
				return Action{}, errOf(v, kActBadSetType, "learn: destination %08x", u32(p))
			}
			if int(s.DstOfs)+int(s.NBits) > 8*s.Field.Size() {
				return Action{}, errOf(v, kActBadArgument, "learn: %s[%d..%d]", s.Field, s.DstOfs, int(s.DstOfs)+int(s.NBits)-1)
			}
			p = p[6:]
		}
		l.Specs = append(l.Specs, s)
	}
	for _, c := range p {
		if c != 0 {
			return Action{}, errOf(v, kActBadArgument, "learn: trailing garbage after the specs")
		}
	}
	return Action{Type: ActLearn, Learn: l}, nil
}

// appendLearn appends an ActLearn action as ovs-ofctl encodes it:
// NXAST_LEARN2 when it came as one or needs limit or result_dst, then the
// specs, padded with zeros to 8 bytes.
func appendLearn(b []byte, a *Action) ([]byte, error) {
	l := a.Learn
	if l == nil {
		return b, fmt.Errorf("openflow: learn action without body: %w", ErrUnsupported)
	}
	start := len(b)
	v2 := l.V2 || l.Limit != 0 || l.Flags&LearnWriteResult != 0
	sub := NXASTLearn
	if v2 {
		sub = NXASTLearn2
	}
	b = nxActionHeader(b, 0, sub)
	b = be16(be16(be16(b, l.IdleTimeout), l.HardTimeout), l.Priority)
	b = be64(b, l.Cookie)
	b = be16(append(be16(b, l.Flags), l.Table, 0), l.FinIdleTimeout)
	b = be16(b, l.FinHardTimeout)
	if v2 {
		b = be16(be16(be32(b, l.Limit), l.ResultOfs), 0)
		if l.Flags&LearnWriteResult != 0 {
			h, ok := l.ResultDst.Header(true)
			if !ok {
				return b[:start], fmt.Errorf("openflow: learn result_dst %s: %w", l.ResultDst, ErrUnsupported)
			}
			b = be32(b, h)
		}
	}
	for i := range l.Specs {
		s := &l.Specs[i]
		h := s.NBits | uint16(s.Dst)<<learnDstShift
		if s.Src == FieldNone {
			h |= learnSrcImm
		}
		b = be16(b, h)
		if s.Src != FieldNone {
			sh, ok := s.Src.Header(true)
			if !ok {
				return b[:start], fmt.Errorf("openflow: learn source %s: %w", s.Src, ErrUnsupported)
			}
			b = be16(be32(b, sh), s.SrcOfs)
		} else {
			n := 2 * ((int(s.NBits) + 15) / 16)
			for i := n - 1; i >= 0; i-- {
				if i < 16 {
					b = append(b, s.Imm[15-i])
				} else {
					b = append(b, 0)
				}
			}
		}
		if s.Dst != LearnOutput {
			dh, ok := s.Field.Header(true)
			if !ok {
				return b[:start], fmt.Errorf("openflow: learn destination %s: %w", s.Field, ErrUnsupported)
			}
			b = be16(be32(b, dh), s.DstOfs)
		}
	}
	if pad := (len(b) - start) % 8; pad != 0 {
		b = zeros(b, 8-pad)
	}
	n := len(b) - start
	if n > 0xffff {
		return b[:start], fmt.Errorf("openflow: learn action of %d bytes: %w", n, ErrBadLength)
	}
	b[start+2], b[start+3] = byte(n>>8), byte(n)
	return b, nil
}

// NBitsValue reads nbits bits at bit ofs of the big-endian value v (bit 0
// the least significant of its last byte) into a 128-bit big-endian
// number, as learn's sources and destinations address subfields.
func NBitsValue(v []byte, ofs, nbits int) (out [16]byte) {
	for i := 0; i < nbits && i < 128; i++ {
		p := ofs + i
		if p/8 >= len(v) {
			break
		}
		if v[len(v)-1-p/8]>>(p%8)&1 != 0 {
			out[15-i/8] |= 1 << (i % 8)
		}
	}
	return out
}

// SetNBits writes the nbits least significant bits of the 128-bit
// big-endian x into v (big-endian) at bit ofs, leaving v's other bits.
func SetNBits(v []byte, ofs, nbits int, x *[16]byte) {
	for i := 0; i < nbits && i < 128; i++ {
		p := ofs + i
		if p/8 >= len(v) {
			return
		}
		bit := byte(1) << (p % 8)
		if x[15-i/8]>>(i%8)&1 != 0 {
			v[len(v)-1-p/8] |= bit
		} else {
			v[len(v)-1-p/8] &^= bit
		}
	}
}
