package openflow

import "fmt"

// move (OVS's reg_move) has three encodings: NXAST_REG_MOVE in 1.0 to
// 1.4, OpenFlow 1.5's OFPAT_COPY_FIELD (1.5 has no NXAST_REG_MOVE: OVS
// refuses it there), and ONF's copy_field extension to 1.3 (experimenter
// ONF, type 3200). All decode as ActRegMove; one that came as a
// copy_field has CopyField set, and OVS writes it back in 1.3 as ONF's
// copy_field rather than NXAST_REG_MOVE (encode_REG_MOVE).

// Act15CopyField is OFPAT_COPY_FIELD (OpenFlow 1.5).
const Act15CopyField uint16 = 28

// onfCopyField is the ONF experimenter action type of copy_field in 1.3.
const onfCopyField uint16 = 3200

// decodeCopyField decodes a copy_field whose n_bits, src_offset and
// dst_offset start at byte at of act, the two OXM headers at at+8, then
// zero padding.
func decodeCopyField(v uint8, act []byte, at int) (Action, error) {
	if len(act) < at+16 {
		return Action{}, errOf(v, kActBadLen, "copy_field: length %d", len(act))
	}
	nBits, srcOfs, dstOfs := u16(act[at:]), u16(act[at+2:]), u16(act[at+4:])
	// As in NXAST_REG_MOVE: no mask bit, the field's width (for
	// tun_metadata the mapped length, or the unmapped 124 OVS writes), 4
	// bytes or an experimenter field's 8.
	src, sh, n := pullActionField(act[at+8:])
	dst, dh, m := pullActionField(act[at+8+n:])
	if n == 0 || m == 0 || src == FieldNone || dst == FieldNone {
		return Action{}, errOf(v, kActBadSetType, "copy_field: field %08x -> %08x", sh, dh)
	}
	for _, c := range act[at+8+n+m:] {
		if c != 0 {
			return Action{}, errOf(v, kActBadArgument, "copy_field: nonzero padding")
		}
	}
	a := Action{Type: ActRegMove, Src: src, SrcOfs: srcOfs, Field: dst, Ofs: dstOfs, NBits: nBits, CopyField: true}
	if nBits == 0 || int(srcOfs)+int(nBits) > src.Bits() || int(dstOfs)+int(nBits) > dst.Bits() {
		return Action{}, errOf(v, kActBadArgument, "copy_field: %d bits from %s[%d] to %s[%d]", nBits, src, srcOfs, dst, dstOfs)
	}
	return a, nil
}

// isONFCopyField reports whether act (an experimenter action of 1.3 or
// 1.4) is ONF's copy_field.
func isONFCopyField(v uint8, act []byte) bool {
	return (v == Version13 || v == Version14) && len(act) >= 10 && u32(act[4:]) == ONFVendorID && u16(act[8:]) == onfCopyField
}

// appendRegMove appends an ActRegMove in version v as OVS encodes it.
func appendRegMove(b []byte, a *Action, v uint8) ([]byte, error) {
	switch {
	case v >= Version15, v == Version13 && a.CopyField:
		if actionFieldLen(a.Src) == 0 || actionFieldLen(a.Field) == 0 || a.NBits == 0 || int(a.SrcOfs)+int(a.NBits) > 8*a.Src.Size() ||
			int(a.Ofs)+int(a.NBits) > 8*a.Field.Size() {
			return b, fmt.Errorf("openflow: copy_field of %d bits from %s[%d] to %s[%d]: %w", a.NBits, a.Src, a.SrcOfs, a.Field, a.Ofs, ErrUnsupported)
		}
		start := len(b)
		if v >= Version15 {
			b = zeros(act13(b, Act15CopyField, 0), 0)
		} else {
			b = zeros(be16(be32(act13(b, ActVendorType, 0), ONFVendorID), onfCopyField), 2)
		}
		b = zeros(be16(be16(be16(b, a.NBits), a.SrcOfs), a.Ofs), 2)
		b, _ = appendActionField(b, a.Src, false)
		b, _ = appendActionField(b, a.Field, false)
		b = pad8(b, start)
		if err := putLen16(b, start+2, start); err != nil {
			return b[:start], err
		}
		return b, nil
	}
	return appendNXAction(b, a)
}
