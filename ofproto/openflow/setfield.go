package openflow

import "fmt"

// set_field and load, as OVS puts them on the wire in each version.
//
// OpenFlow 1.5's OFPAT_SET_FIELD may carry an OXM mask: it sets only the
// masked bits. 1.2 to 1.4 refuse a mask (OFPBAC_BAD_SET_MASK); there, and
// in 1.0 and 1.1, OVS writes a partial set as NXAST_REG_LOAD, one per run
// of contiguous mask bits (at most 64 bits each, the least significant run
// first). 1.5 has no NXAST_REG_LOAD at all: OVS refuses it there and
// writes every load as a set_field, masked unless it covers the whole
// field. So an action decodes as
//   - ActRegLoad from NXAST_REG_LOAD (1.0 to 1.4),
//   - ActSetField with Masked from a masked 1.5 set_field,
//   - ActSetField from an unmasked set_field,
// and each encodes in any version as ovs-vswitchd encodes the same ofpact
// (encode_SET_FIELD in OVS's ofp-actions.c): a flow added over one version
// dumps over another as ovs-ofctl prints it against ovs-vswitchd.

// ONF's experimenter error for a masked set_field in 1.3 and 1.4
// (ONFERR_ET_SET_FIELD_MASK... OVS's OFPBAC_BAD_SET_MASK, ONF1.3-1.4(4250)).
const onfBadSetMask uint16 = 4250

// BadAction15BadSetMask is OFPBAC_BAD_SET_MASK in OpenFlow 1.5.
const BadAction15BadSetMask uint16 = 16

func badSetMask(v uint8, f Field) *Error {
	e := &Error{Version: v, Type: ErrTypeBadAction, Code: BadAction15BadSetMask, Err: ErrUnsupported,
		Detail: fmt.Sprintf("set_field %s with a mask before OpenFlow 1.5", f)}
	if v < Version15 {
		e.Type, e.Code, e.Experimenter = Err13TypeExperimenter, onfBadSetMask, ONFVendorID
	}
	return e
}

// decodeSetField decodes an OFPAT_SET_FIELD of version v (1.2+): the
// 4-byte type and length, one OXM entry, zero padding to 8 bytes.
func decodeSetField(v uint8, act []byte) (Action, error) {
	h := u32(act[4:])
	plen := int(h & 0xff)
	if 8+plen > len(act) {
		return Action{}, errOf(v, kActBadSetLen, "set_field: %d value bytes in a %d-byte action", plen, len(act))
	}
	f, body := entryField(h, act[8:8+plen]) // field_erspan.go: an experimenter's ID comes off
	if f == FieldNone || fields[f].enc == 0 {
		return Action{}, errOf(v, kActBadSetType, "set_field: unknown field %08x", h)
	}
	if fields[f].tunmd {
		return decodeTunMDSetField(v, f, h, body) // field_tunmd.go
	}
	return decodeSetFieldValue(v, f, h, body, act[8+plen:], v >= Version15)
}

// decodeSetFieldValue decodes the value (and mask, with h's hasmask) body
// of a set_field of f, in an action whose padding after it is pad. A mask
// is refused unless mayMask (OpenFlow 1.5's set_field, NXAST_REG_LOAD2 in
// any version: OVS's decode_ofpat_set_field).
func decodeSetFieldValue(v uint8, f Field, h uint32, body, pad []byte, mayMask bool) (Action, error) {
	plen := len(body)
	n := fields[f].size
	masked := h&(1<<8) != 0
	if want := n * (1 + boolInt(masked)); plen != want {
		return Action{}, errOf(v, kActBadSetLen, "set_field %s: length %d, want %d", f, plen, want)
	}
	if masked && !mayMask {
		return Action{}, badSetMask(v, f)
	}
	for _, c := range pad {
		if c != 0 {
			// decode_ofpat_set_field's OFPBAC_BAD_SET_ARGUMENT.
			return Action{}, &Error{Version: v, Type: ErrTypeBadAction, Code: BadAction13BadSetArgment,
				Err: ErrUnsupported, Detail: fmt.Sprintf("set_field %s: nonzero padding", f)}
		}
	}
	a := Action{Type: ActSetField, Field: f}
	copy(a.Value[:], body[:n])
	if masked {
		copy(a.Mask[:], body[n:2*n])
		full := true
		for i := 0; i < n; i++ {
			if a.Value[i]&^a.Mask[i] != 0 {
				// nx_pull_entry's is_mask_consistent.
				return Action{}, &Error{Version: v, Type: Err13TypeBadMatch, Code: BadMatch13BadWildcards,
					Err: ErrUnsupported, Detail: fmt.Sprintf("set_field %s: value bits outside the mask", f)}
			}
			full = full && a.Mask[i] == 0xff
		}
		if full {
			a.Mask = [16]byte{}
		} else {
			a.Masked = true
		}
	}
	if _, ok := a.setFieldKey(); !ok {
		return Action{}, errOf(v, kActBadArgument, "set_field %s: value out of range", f)
	}
	return a, nil
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// appendSetField appends an ActSetField in version v (1.2+; 1.0 and 1.1
// are appendSetField10's and appendSetField11's). A masked one is a masked set_field in 1.5 and
// NXAST_REG_LOADs before.
func appendSetField(b []byte, a *Action, v uint8) ([]byte, error) {
	if a.Masked && v < Version15 {
		return appendLoadSegments(b, a)
	}
	h, ok := a.Field.Header(false)
	eh, exp, isExp := expHeader(a.Field) // field_erspan.go
	if !ok && !isExp {
		return b, fmt.Errorf("openflow: set_field %s has no OXM form: %w", a.Field, ErrUnsupported)
	}
	if _, ok := a.setFieldKey(); !ok {
		return b, fmt.Errorf("openflow: set_field %s: bad value: %w", a.Field, ErrUnsupported)
	}
	n := a.Field.Size()
	plen := n
	if isExp {
		h, plen = eh, 4+n
	}
	if a.Masked {
		h, plen = h&^0xff|1<<8|uint32(plen+n), plen+n
	}
	val := a.Value[:n]
	if a.Field.IsTunMetadata() && !a.Masked {
		// Its significant bytes only, as ovs-vswitchd writes it.
		val = tunMDSignificant(val)
		h, plen = h&^0xff|uint32(len(val)), len(val)
	}
	start := len(b)
	b = be32(act13(b, Act13SetField, uint16((8+plen+7)&^7)), h)
	if isExp {
		b = be32(b, exp)
	}
	b = append(b, val...)
	if a.Masked {
		b = append(b, a.Mask[:n]...)
	}
	return pad8(b, start), nil
}

// legacySetField reports whether OVS writes a set_field of f in 1.0 and
// 1.1 as the field's own action (set_dl_dst, set_nw_src...). It does so
// for a masked one too, setting the whole field (set_field_to_legacy_
// openflow ignores the mask); this codec writes what ovs-vswitchd writes.
func legacySetField(f Field) bool {
	switch f {
	case FieldEthSrc, FieldEthDst, FieldIPv4Src, FieldIPv4Dst, FieldIPTOS, FieldIPDSCP,
		FieldTpSrc, FieldTCPSrc, FieldUDPSrc, FieldSCTPSrc, FieldTpDst, FieldTCPDst, FieldUDPDst, FieldSCTPDst,
		FieldVLANVID, FieldVLANPCP:
		return true
	}
	return false
}

// appendRegLoad appends an ActRegLoad: NXAST_REG_LOAD before 1.5, a
// set_field in 1.5 (masked unless the load covers the whole field).
func appendRegLoad(b []byte, a *Action, v uint8) ([]byte, error) {
	if v < Version15 {
		return appendNXAction(b, a)
	}
	sf, err := a.RegLoadSetField()
	if err != nil {
		return b, err
	}
	return appendSetField(b, &sf, v)
}

// RegLoadSetField returns the set_field an ActRegLoad amounts to: Value
// holds Load at bit Ofs of the field, Mask its NBits (Masked false when
// they are the whole field).
func (a *Action) RegLoadSetField() (Action, error) {
	n := a.Field.Size()
	if a.Type != ActRegLoad || n == 0 || a.NBits == 0 || a.NBits > 64 || int(a.Ofs)+int(a.NBits) > 8*n {
		return Action{}, fmt.Errorf("openflow: load of %d bits at %d into %s: %w", a.NBits, a.Ofs, a.Field, ErrUnsupported)
	}
	sf := Action{Type: ActSetField, Field: a.Field}
	for i := 0; i < int(a.NBits); i++ {
		p := int(a.Ofs) + i
		bit := byte(1) << (p % 8)
		sf.Mask[n-1-p/8] |= bit
		if a.Load>>i&1 != 0 {
			sf.Value[n-1-p/8] |= bit
		}
	}
	if int(a.NBits) == 8*n {
		sf.Mask = [16]byte{}
	} else {
		sf.Masked = true
	}
	return sf, nil
}

// appendLoadSegments appends a masked set_field as OVS's set_field_to_
// nxast does for a field with an NXM or OXM header: an NXAST_REG_LOAD per
// run of mask bits, from the least significant, each at most 64 bits.
func appendLoadSegments(b []byte, a *Action) ([]byte, error) {
	if a.Field.IsExperimenter() {
		// No NXAST_REG_LOAD can name it: ovs-vswitchd's set_field_to_nxast
		// writes a masked NXAST_REG_LOAD2 (field_tunmd.go).
		return appendRegLoad2(b, a)
	}
	n := a.Field.Size()
	if n == 0 || n > 16 {
		return b, fmt.Errorf("openflow: masked set_field %s: %w", a.Field, ErrUnsupported)
	}
	bit := func(x *[16]byte, p int) bool { return x[n-1-p/8]>>(p%8)&1 != 0 }
	start := len(b)
	for p := 0; p < 8*n; {
		if !bit(&a.Mask, p) {
			p++
			continue
		}
		ofs := p
		var load uint64
		for p < 8*n && p-ofs < 64 && bit(&a.Mask, p) {
			if bit(&a.Value, p) {
				load |= 1 << (p - ofs)
			}
			p++
		}
		var err error
		b, err = appendNXAction(b, &Action{Type: ActRegLoad, Field: a.Field, Ofs: uint16(ofs), NBits: uint16(p - ofs), Load: load})
		if err != nil {
			return b[:start], err
		}
	}
	return b, nil
}
