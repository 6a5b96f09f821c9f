package openflow

import (
	"fmt"
	"sync/atomic"

	"github.com/govswitch/govswitch/flow"
)

// TunMDLoc is where tun_metadata<n> lives in the OpenFlow form of a Key's
// tunnel metadata: Len bytes at Tunnel.Metadata.Opts[Off:]; Len 0 means
// unmapped.
type TunMDLoc struct{ Off, Len uint8 }

// TunMDLayout places every tun_metadata field: the one layout of the
// process, which ofproto's TLV tables keep (a field mapped on several
// bridges has one length and one place). The codec reads it to decode,
// encode, read and write the fields; an unmapped field has Size 0 and is
// refused in matches and actions with NXFMFC_INVALID_TLV_FIELD, as
// ovs-vswitchd refuses a field its TLV table does not map.
type TunMDLayout [flow.TunMetadataFields]TunMDLoc

var tunMDLayout atomic.Pointer[TunMDLayout]

// SetTunMDLayout makes l the process's tun_metadata layout.
func SetTunMDLayout(l TunMDLayout) { tunMDLayout.Store(&l) }

// CurrentTunMDLayout returns the process's tun_metadata layout.
func CurrentTunMDLayout() TunMDLayout {
	if l := tunMDLayout.Load(); l != nil {
		return *l
	}
	return TunMDLayout{}
}

// tunMDMaxWire is the widest value NXM_NX_TUN_METADATA<n> carries (OVS's
// 124 bytes), and the header length ovs-ofctl gives a field it does not
// know the mapping of.
const tunMDMaxWire = 124

// IsTunMetadata reports whether f is one of tun_metadata0..63.
func (f Field) IsTunMetadata() bool { return f >= FieldTunMetadata0 && f <= FieldTunMetadata63 }

// TunMetadataIndex returns n for tun_metadata<n>.
func (f Field) TunMetadataIndex() int { return int(f - FieldTunMetadata0) }

func defTunMDFields(nx1 func(uint8) uint32) {
	for i := 0; i < flow.TunMetadataFields; i++ {
		fields[FieldTunMetadata0+Field(i)] = fieldDef{name: fmt.Sprintf("tun_metadata%d", i), nxm: nx1(uint8(40 + i)),
			oxm: noHeader, maskable: true, enc: both, tunmd: true, tunmdIdx: uint8(i)}
	}
}

func tunMDLoc(f Field) TunMDLoc {
	l := tunMDLayout.Load()
	if l == nil {
		return TunMDLoc{}
	}
	return l[f.TunMetadataIndex()]
}

func tunMDSize(f Field) int { return int(tunMDLoc(f).Len) }

func tunMDTouches(d *fieldDef, m *flow.Mask) bool {
	return m.Tunnel.Metadata.Present&(1<<d.tunmdIdx) != 0
}

func tunMDValue(f Field, dst []byte, k *flow.Key) ([]byte, bool) {
	loc := tunMDLoc(f)
	if loc.Len == 0 || int(loc.Off)+int(loc.Len) > flow.TunMetadataSpace {
		return dst, false
	}
	return append(dst, k.Tunnel.Metadata.Opts[loc.Off:loc.Off+loc.Len]...), true
}

// tunMDSetValue writes v (the field's mapped length) and marks the field
// present, as OVS's memcpy_to_metadata does.
func tunMDSetValue(f Field, k *flow.Key, v []byte) bool {
	loc := tunMDLoc(f)
	if loc.Len == 0 || len(v) != int(loc.Len) || int(loc.Off)+int(loc.Len) > flow.TunMetadataSpace {
		return false
	}
	copy(k.Tunnel.Metadata.Opts[loc.Off:], v)
	k.Tunnel.Metadata.Present |= 1 << f.TunMetadataIndex()
	return true
}

func tunMDCover(f Field) flow.Mask {
	var m flow.Mask
	loc := tunMDLoc(f)
	if loc.Len == 0 || int(loc.Off)+int(loc.Len) > flow.TunMetadataSpace {
		return m
	}
	for i := range loc.Len {
		m.Tunnel.Metadata.Opts[loc.Off+i] = 0xff
	}
	m.Tunnel.Metadata.Present = 1 << f.TunMetadataIndex()
	return m
}

// InvalidTLVFieldError is NXFMFC_INVALID_TLV_FIELD: a match or action
// names a tun_metadata field the TLV table does not map.
func InvalidTLVFieldError(v uint8, f Field) *Error {
	detail := fmt.Sprintf("%s is not mapped in the TLV table", f)
	if v >= Version12 {
		return &Error{Version: v, Type: Err13TypeExperimenter, Code: 37, Experimenter: NXVendorID, Err: ErrUnsupported, Detail: detail}
	}
	return &Error{Version: v, Type: ErrTypeBadRequest, Code: 536, Experimenter: NXVendorID, Err: ErrUnsupported, Detail: detail}
}

// tunMDWireValue places a variable-length wire value (width bytes, at most
// the mapped length) right-aligned in the field's mapped length, as OVS's
// copy_entry_value does.
func tunMDWireValue(dst []byte, wire []byte, n int) []byte {
	for range n - len(wire) {
		dst = append(dst, 0)
	}
	return append(dst, wire...)
}

// checkTunMDHeader checks a tun_metadata field header in an action (move,
// load, set_field): the field must be mapped, and the header length is the
// mapped length, or OVS's unmapped width (124) ovs-ofctl writes.
func checkTunMDHeader(v uint8, f Field, h uint32) *Error {
	n := f.Size()
	if n == 0 {
		return InvalidTLVFieldError(v, f)
	}
	if l := int(h & 0xff); l != n && l != tunMDMaxWire {
		return errOf(v, kActBadSetLen, "%s: header length %d, mapped %d", f, l, n)
	}
	return nil
}

// decodeTunMDEntry decodes one tun_metadata TLV of a match (header h,
// payload body) into m.
func decodeTunMDEntry(v uint8, f Field, h uint32, body []byte, m *Match) error {
	loc := tunMDLoc(f)
	if loc.Len == 0 {
		return InvalidTLVFieldError(v, f)
	}
	hasMask := h&(1<<8) != 0
	width := len(body)
	if hasMask {
		if width%2 != 0 {
			return errOf(v, kMatchBadLen, "%s: odd masked length %d", f, width)
		}
		width /= 2
	}
	if width == 0 || width > int(loc.Len) {
		return errOf(v, kMatchBadLen, "%s: %d bytes, mapped %d", f, width, loc.Len)
	}
	var buf [2 * flow.TunMetadataSpace]byte
	val := tunMDWireValue(buf[:0], body[:width], int(loc.Len))
	if !f.SetValue(&m.Key, val) {
		return errOf(v, kMatchBadValue, "%s: value", f)
	}
	if hasMask {
		mask := tunMDWireValue(buf[loc.Len:loc.Len], body[width:], int(loc.Len))
		f.SetValue(m.Mask.Key(), mask)
	} else {
		c := f.Cover()
		m.Mask.Or(&c)
	}
	return nil
}

// appendTunMDEntry appends tun_metadata field f of m, as OVS's
// tun_metadata_to_nx_match: the mapped length, masked unless the mask is
// all ones.
func appendTunMDEntry(b []byte, f Field, m *Match) []byte {
	loc := tunMDLoc(f)
	if loc.Len == 0 || m.Mask.Tunnel.Metadata.Present&(1<<f.TunMetadataIndex()) == 0 {
		return b
	}
	val := m.Key.Tunnel.Metadata.Opts[loc.Off : loc.Off+loc.Len]
	mask := m.Mask.Tunnel.Metadata.Opts[loc.Off : loc.Off+loc.Len]
	full := true
	for _, c := range mask {
		if c != 0xff {
			full = false
		}
	}
	h := fields[f].nxm | uint32(loc.Len)
	if !full {
		h = fields[f].nxm | 1<<8 | uint32(2*loc.Len)
	}
	b = be32(b, h)
	at := len(b)
	b = append(b, val...)
	if !full {
		b = append(b, mask...)
		for i := range int(loc.Len) {
			b[at+i] &= mask[i]
		}
	}
	return b
}

// decodeTunMDSetField decodes the value of a set_field to tun_metadata
// field f (header h, wire value val): ovs-ofctl writes the value's
// significant bytes only, right-aligned into the mapped length here. A
// masked set_field is refused, and so is a field wider than an action's
// value.
func decodeTunMDSetField(v uint8, f Field, h uint32, val []byte) (Action, error) {
	n := f.Size()
	if n == 0 {
		return Action{}, InvalidTLVFieldError(v, f)
	}
	if h&(1<<8) != 0 {
		return tunMDMaskedLoad(v, f, val)
	}
	a := Action{Type: ActSetField, Field: f}
	if n > len(a.Value) {
		return Action{}, errOf(v, kActBadSetLen, "set_field %s: %d bytes, govswitchd sets at most %d", f, n, len(a.Value))
	}
	// A zero value comes with no bytes at all (tunMDSignificant).
	if len(val) > n {
		return Action{}, errOf(v, kActBadSetLen, "set_field %s: %d bytes, mapped %d", f, len(val), n)
	}
	copy(a.Value[n-len(val):n], val)
	return a, nil
}

// decodeRegLoad2 decodes NXAST_REG_LOAD2, OpenFlow 1.0's set_field: an
// OXM TLV after the 10-byte Nicira action header, padded to 8 bytes.
// govswitchd takes it for the tun_metadata fields, the ones ovs-ofctl
// sends it for.
func decodeRegLoad2(v uint8, act []byte) (Action, error) {
	if len(act) < 14 {
		return Action{}, errOf(v, kActBadLen, "reg_load2: %d bytes", len(act))
	}
	h := u32(act[10:])
	plen := int(h & 0xff)
	if 14+plen > len(act) {
		return Action{}, errOf(v, kActBadLen, "reg_load2: %d value bytes in a %d-byte action", plen, len(act))
	}
	f, body := entryField(h, act[14:14+plen]) // field_erspan.go
	if f.IsExperimenter() {
		// OpenFlow 1.0's set_field of a field NXM cannot name.
		return decodeSetFieldValue(v, f, h, body, act[14+plen:], true)
	}
	if !f.IsTunMetadata() {
		return Action{}, errOf(v, kActBadSetType, "reg_load2 to %08x is not supported by govswitchd (tun_metadata and the tun_erspan fields are)", h)
	}
	return decodeTunMDSetField(v, f, h, body)
}

// appendRegLoad2 appends a set_field to a tun_metadata field as OpenFlow
// 1.0's NXAST_REG_LOAD2, with the value's significant bytes.
func appendRegLoad2(b []byte, a *Action) ([]byte, error) {
	if h, exp, ok := expHeader(a.Field); ok {
		// An experimenter field (field_erspan.go), as ovs-vswitchd's
		// set_field_to_nxast writes one: header, ID, value.
		// A masked one (load:...->tun_erspan_ver[], which ovs-ofctl
		// sends as a set_field of the field's n_bits) carries the mask
		// after the value, hasmask set and the length counting both.
		n := a.Field.Size()
		if _, ok := a.setFieldKey(); !ok {
			return b, fmt.Errorf("openflow: set_field %s: bad value: %w", a.Field, ErrUnsupported)
		}
		plen := 4 + n
		if a.Masked {
			h, plen = h&^0xff|1<<8|uint32(4+2*n), 4+2*n
		}
		start := len(b)
		b = nxActionHeader(b, uint16((14+plen+7)&^7), NXASTRegLoad2)
		b = be32(be32(b, h), exp)
		b = append(b, a.Value[:n]...)
		if a.Masked {
			b = append(b, a.Mask[:n]...)
		}
		return pad8(b, start), nil
	}
	n := a.Field.Size()
	h, ok := a.Field.Header(true)
	if n == 0 || !ok || n > len(a.Value) {
		return b, fmt.Errorf("openflow: set_field %s: not mapped: %w", a.Field, ErrUnsupported)
	}
	val := tunMDSignificant(a.Value[:n])
	start := len(b)
	b = nxActionHeader(b, uint16((10+4+len(val)+7)&^7), NXASTRegLoad2)
	b = be32(b, h&^0xff|uint32(len(val)))
	b = append(b, val...)
	return pad8(b, start), nil
}

// tunMDSignificant is a tun_metadata set_field's value without its leading
// zero bytes (none at all for zero), as ovs-ofctl and ovs-vswitchd write
// it (OVS's mf_field_len of a variable-length field): the decoder puts it
// back right-aligned in the mapped length.
func tunMDSignificant(v []byte) []byte {
	for len(v) > 0 && v[0] == 0 {
		v = v[1:]
	}
	return v
}

// actionHeaderFits checks the field header of a move, load or stack
// action: unmasked, with the field's length; for a tun_metadata field
// the mapped length or the 124 bytes ovs-ofctl writes for a field whose
// mapping it does not know (the field must be mapped).
func actionHeaderFits(f Field, h uint32) bool {
	if h&0x100 != 0 {
		return false
	}
	if fields[f].tunmd {
		n := f.Size()
		return n > 0 && (int(h&0xff) == n || h&0xff == tunMDMaxWire)
	}
	return h&0xff == uint32(fields[f].size)
}

// tunMDMaskedLoad turns a masked set_field of a tun_metadata field (how
// ovs-ofctl sends load:...->NXM_NX_TUN_METADATA<n>[a..b] in OpenFlow 1.3)
// into the load it stands for: one contiguous run of at most 64 mask bits.
func tunMDMaskedLoad(v uint8, f Field, val []byte) (Action, error) {
	n := f.Size()
	if len(val)%2 != 0 || len(val) == 0 || len(val)/2 > n {
		return Action{}, errOf(v, kActBadSetLen, "set_field %s: masked length %d, mapped %d", f, len(val), n)
	}
	w := len(val) / 2
	value, mask := val[:w], val[w:]
	// Bit p (0 the least significant) of the right-aligned value.
	bit := func(b []byte, p int) bool { return b[len(b)-1-p/8]>>(p%8)&1 != 0 }
	ofs, nbits := -1, 0
	for p := 0; p < 8*w; p++ {
		switch {
		case bit(mask, p) && ofs < 0:
			ofs, nbits = p, 1
		case bit(mask, p) && ofs+nbits == p:
			nbits++
		case bit(mask, p):
			return Action{}, errOf(v, kActBadArgument, "set_field %s: mask is not one run of bits", f)
		}
	}
	if ofs < 0 || nbits > 64 {
		return Action{}, errOf(v, kActBadArgument, "set_field %s: masked load of %d bits is not supported by govswitchd", f, nbits)
	}
	var load uint64
	for i := nbits - 1; i >= 0; i-- {
		load <<= 1
		if bit(value, ofs+i) {
			load |= 1
		}
	}
	return Action{Type: ActRegLoad, Field: f, Ofs: uint16(ofs), NBits: uint16(nbits), Load: load}, nil
}

// NumFields is one past the last Field.
const NumFields = numFields
