package openflow

import (
	"fmt"

	"github.com/govswitch/govswitch/flow"
)

// Match is a flow match in every version's terms: Key holds the values and
// Mask says which bits of Key matter. Key.InPort is an OpenFlow port number
// (32-bit numbering). Encoders ignore Key bits outside Mask; decoders leave
// them zero. The zero Match matches every packet.
type Match struct {
	Key  flow.Key
	Mask flow.Mask
}

// Set makes m match field f exactly on the value of f in k.
func (m *Match) Set(f Field, k *flow.Key) {
	if f == FieldNone || f >= numFields {
		return
	}
	c := f.Cover()
	m.Mask.Or(&c)
	var buf [16]byte
	v, _ := f.Value(buf[:0], k)
	f.SetValue(&m.Key, v)
}

// appendTLVs appends the NXM (nxm true) or OXM TLVs that express m, in
// version v's terms: OXM from OpenFlow 1.5 on carries the registers as
// the 64-bit OXM_OF_PKT_REG pairs (xreg), as ovs-vswitchd encodes them,
// where NXM and older OXM carry each 32-bit NXM_NX_REG.
func appendTLVs(b []byte, m *Match, nxm bool, v uint8) ([]byte, error) {
	want := uint8(encOXM)
	if nxm {
		want = encNXM
	}
	start := len(b)
	var covered flow.Mask
	// OXM splits the TCI into vlan_vid (maskable) and vlan_pcp (exact
	// only). A TCI mask that split cannot carry goes out as NXM_OF_VLAN_TCI,
	// which OVS accepts inside OXM matches too.
	pcpMask := m.Mask.VLANs[0].TCI & flow.VLANPCPMask
	tciAsNXM := !nxm && pcpMask != 0 && pcpMask != flow.VLANPCPMask
	// Likewise NXM_OF_IN_PORT holds 16 bits; a wider port goes out as the
	// OXM in_port, which OVS accepts inside NXM matches.
	_, fits := Port32To10(m.Key.InPort)
	inPortAsOXM := nxm && m.Mask.InPort != 0 && !fits
	xregs := !nxm && v >= Version15
	for f := FieldNone + 1; f < numFields; f++ {
		d := &fields[f]
		if xregs && f >= FieldReg0 && f <= FieldReg15 {
			if f == FieldReg0 {
				b = appendXRegs(b, m, &covered)
			}
			continue
		}
		emit := d.enc&want != 0
		switch {
		case tciAsNXM && f == FieldVLANTCI, inPortAsOXM && f == FieldInPort:
			emit = true
		case tciAsNXM && (f == FieldVLANVID || f == FieldVLANPCP), inPortAsOXM && f == FieldNXMInPort:
			emit = false
		}
		if !emit || d.alias || !d.touches(&m.Mask) {
			continue
		}
		if d.tunmd {
			b = appendTunMDEntry(b, f, m) // field_tunmd.go
			c := f.Cover()
			covered.Or(&c)
			continue
		}
		var full, zero bool
		if d.bytes != nil {
			mb, cb := d.bytes(m.Mask.Key()), d.bytes(d.cover.Key())
			full, zero = true, true
			for i := range mb {
				if mb[i] != cb[i] {
					full = false
				}
				if mb[i] != 0 {
					zero = false
				}
			}
		} else {
			mv := d.get(m.Mask.Key())
			full, zero = mv == d.get(d.cover.Key()), mv == 0
		}
		full = full && f != FieldTunFlags // 16 bits on the wire, one of them public: field_tun.go
		if zero || !prereqOK(d.pre, &m.Key, &m.Mask) {
			continue
		}
		if !full && !d.maskable {
			return b[:start], fmt.Errorf("openflow: field %s cannot be partially masked: %w", d.name, ErrUnsupported)
		}
		if d.exp != 0 {
			// An experimenter field (field_erspan.go): its ID
			// follows the header, which counts it.
			h, exp, _ := expHeader(f)
			if !full {
				h = h&^0xff | 1<<8 | uint32(4+2*d.size)
			}
			b = be32(be32(b, h), exp)
		} else {
			h, _ := f.Header(nxm) // falls back to the other header family
			if !full {
				h = h&^0xff | 1<<8 | uint32(2*d.size)
			}
			b = be32(b, h)
		}
		at := len(b)
		var ok bool
		if b, ok = f.Value(b, &m.Key); !ok {
			return b[:start], fmt.Errorf("openflow: %s value does not fit its %d-byte field: %w", d.name, d.size, ErrUnsupported)
		}
		if !full {
			// A partial mask follows the value, and the value goes out
			// with the bits outside the mask cleared.
			if b, ok = f.Value(b, m.Mask.Key()); !ok {
				return b[:start], fmt.Errorf("openflow: %s mask does not fit its field: %w", d.name, ErrUnsupported)
			}
			for i := 0; i < d.size; i++ {
				b[at+i] &= b[at+d.size+i]
			}
		}
		covered.Or(&d.cover)
	}
	if !covered.Covers(&m.Mask) {
		return b[:start], fmt.Errorf("openflow: match uses bits with no %s field or an unmet prerequisite: %w",
			map[bool]string{true: "NXM", false: "OXM"}[nxm], ErrUnsupported)
	}
	return b, nil
}

// appendXRegs appends the registers of m as OXM_OF_PKT_REG0-7, in their
// place among the fields: each pair reg(2N):reg(2N+1) whose mask is not
// zero, masked unless both halves are exact, the value cleared outside
// the mask.
func appendXRegs(b []byte, m *Match, covered *flow.Mask) []byte {
	for i := 0; i < 8; i++ {
		hi, lo := m.Mask.Regs[2*i], m.Mask.Regs[2*i+1]
		if hi == 0 && lo == 0 {
			continue
		}
		mask := uint64(hi)<<32 | uint64(lo)
		val := (uint64(m.Key.Regs[2*i])<<32 | uint64(m.Key.Regs[2*i+1])) & mask
		h := hdr(ClassPacketRegs, uint8(i))
		if mask == ^uint64(0) {
			b = be64(be32(b, h|8), val)
		} else {
			b = be64(be64(be32(b, h|1<<8|16), val), mask)
		}
		c := (FieldReg0 + Field(2*i)).Cover()
		covered.Or(&c)
		c = (FieldReg0 + Field(2*i+1)).Cover()
		covered.Or(&c)
	}
	return b
}

// decodeTLVs parses a whole NXM/OXM TLV list into m (which it resets).
// Both NXM and OXM headers are accepted in either context, as OVS does.
func decodeTLVs(v uint8, b []byte, m *Match) error {
	*m = Match{}
	var seen flow.Mask
	var present [(numFields + 63) / 64]uint64
	for len(b) > 0 {
		if len(b) < 4 {
			return errOf(v, kMatchBadLen, "%d trailing bytes in match", len(b))
		}
		h := u32(b)
		plen := int(h & 0xff)
		if len(b) < 4+plen {
			return errOf(v, kMatchBadLen, "match field %08x: %d bytes, header says %d", h, len(b)-4, plen)
		}
		body := b[4 : 4+plen]
		b = b[4+plen:]
		f, body := entryField(h, body) // field_erspan.go: an experimenter's ID comes off
		plen = len(body)
		if f == FieldNone || fields[f].enc == 0 {
			return errOf(v, kMatchBadField, "unknown match field class 0x%04x field %d", h>>16, h>>9&0x7f)
		}
		d := &fields[f]
		if d.tunmd {
			if present[f/64]&(1<<(f%64)) != 0 {
				return errOf(v, kMatchDupField, "%s appears twice", d.name)
			}
			present[f/64] |= 1 << (f % 64)
			if err := decodeTunMDEntry(v, f, h, body, m); err != nil { // field_tunmd.go
				return err
			}
			continue
		}
		hasMask := h&(1<<8) != 0
		want := d.size
		if hasMask {
			want *= 2
		}
		if plen != want {
			return errOf(v, kMatchBadLen, "%s: length %d, want %d", d.name, plen, want)
		}
		if hasMask && !d.maskable {
			return errOf(v, kMatchBadMask, "%s cannot be masked", d.name)
		}
		if present[f/64]&(1<<(f%64)) != 0 {
			return errOf(v, kMatchDupField, "%s appears twice", d.name)
		}
		present[f/64] |= 1 << (f % 64)
		if overlaps(&seen, &d.cover) {
			return errOf(v, kMatchDupField, "%s overlaps an earlier field", d.name)
		}
		seen.Or(&d.cover)
		if hasMask {
			if !f.SetValue(m.Mask.Key(), body[d.size:]) {
				return errOf(v, kMatchBadMask, "%s: mask out of range", d.name)
			}
		} else {
			m.Mask.Or(&d.cover)
		}
		if !f.SetValue(&m.Key, body[:d.size]) {
			return errOf(v, kMatchBadValue, "%s: value out of range", d.name)
		}
	}
	m.Key = m.Key.Apply(&m.Mask)
	for f := FieldNone + 1; f < numFields; f++ {
		if present[f/64]&(1<<(f%64)) != 0 && !prereqOK(fields[f].pre, &m.Key, &m.Mask) {
			return errOf(v, kMatchBadPrereq, "%s without its prerequisite", fields[f].name)
		}
	}
	return nil
}

func overlaps(a, b *flow.Mask) bool {
	aw, bw := a.Words(), b.Words()
	for i := range aw {
		if aw[i]&bw[i] != 0 {
			return true
		}
	}
	return false
}

// AppendNXM appends m as an NXM TLV list (no padding), as carried by
// NXT_FLOW_MOD and NXST_FLOW. It fails for a match that needs a field
// outside the codec or breaks a prerequisite.
func AppendNXM(b []byte, m *Match) ([]byte, error) { return appendTLVs(b, m, true, Version10) }

// AppendOXM appends m as an OpenFlow 1.3 ofp_match (type OXM, length, TLVs,
// padding to 8 bytes).
func AppendOXM(b []byte, m *Match) ([]byte, error) { return AppendOXMV(b, Version13, m) }

// AppendOXMV appends m as version v's ofp_match (1.2 and later): from 1.5
// on the registers go out as xreg pairs (appendTLVs).
func AppendOXMV(b []byte, v uint8, m *Match) ([]byte, error) {
	start := len(b)
	b = append(b, 0, 1, 0, 0)
	b, err := appendTLVs(b, m, false, v)
	if err != nil {
		return b[:start], err
	}
	n := len(b) - start
	b[start+2], b[start+3] = byte(n>>8), byte(n)
	return pad8(b, start), nil
}

// DecodeNXM parses an NXM (or OXM) TLV list of exactly len(b) bytes.
// Errors are *Error in v's numbering.
func DecodeNXM(v uint8, b []byte, m *Match) error { return decodeTLVs(v, b, m) }

// DecodeOXM parses an OpenFlow 1.3 ofp_match at the start of b and returns
// the bytes it used, padding included.
func DecodeOXM(b []byte, m *Match) (int, error) {
	if len(b) < 4 {
		return 0, errOf(Version13, kMatchBadLen, "match header: %d bytes", len(b))
	}
	typ, n := u16(b), int(u16(b[2:]))
	if typ != 1 {
		return 0, errOf(Version13, kMatchBadType, "match type %d, want 1 (OXM)", typ)
	}
	padded := (n + 7) &^ 7
	if n < 4 || padded > len(b) {
		return 0, errOf(Version13, kMatchBadLen, "match length %d in %d bytes", n, len(b))
	}
	if err := decodeTLVs(Version13, b[4:n], m); err != nil {
		return 0, err
	}
	return padded, nil
}
