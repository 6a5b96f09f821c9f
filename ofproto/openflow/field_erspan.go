package openflow

import "github.com/govswitch/govswitch/flow"

// The ERSPAN metadata fields tun_erspan_idx, tun_erspan_ver,
// tun_erspan_dir and tun_erspan_hwid, as ovs-vswitchd 3.1 has them
// (meta-flow.xml): Nicira experimenter OXM fields NXOXM_ET_ERSPAN_IDX
// (11), _VER (12), _DIR (13) and _HWID (14), with no NXM header, so an
// NXM match carries them in their OXM form as OVS's does. Each is
// maskable and a set_field target. On the wire an experimenter field's
// header is 8 bytes: class 0xffff, the field, hasmask and a length that
// counts the 4-byte experimenter ID that follows (NX's, 0x00002320), then
// the value and mask.
//
// Matches (match.go) and set_field (setfield.go: OFPAT_SET_FIELD, and in
// OpenFlow 1.0 and 1.1 NXAST_REG_LOAD2) carry them. Header reports no
// 4-byte header for them; the actions whose field header may be 4 or 8
// bytes (move as NXAST_REG_MOVE and copy_field, push/pop, output_reg as
// NXAST_OUTPUT_REG2) read and write it with pullActionField and
// appendActionField, as ovs-vswitchd 3.1's nx_pull_header and
// nx_put_header do, the action growing to the next multiple of 8. The
// rest cannot: NXAST_REG_LOAD, NXAST_OUTPUT_REG, learn specs, multipath,
// bundle_load and ct's zone have a fixed 4-byte field word (ovs-ofctl
// 3.1 writes load:...->tun_erspan_*[] as a masked set_field, and refuses
// experimenter fields in learn).
//
// In a flow.Key they are Tunnel.ErspanIdx, ErspanVer, ErspanDir and
// ErspanHwid, which the datapath keys, masks and set(tunnel()) carry as
// OVS_TUNNEL_KEY_ATTR_ERSPAN_OPTS (datapath/odp_erspan.go), each within
// its width there (20, 8, 1 and 6 bits). OpenFlow gives them their whole
// bytes (a 32-bit index, 8-bit version, direction and hardware ID), as
// ovs-vswitchd does: a mask is exact only when all ones in that width, so
// a match ovs-ofctl sends dumps back in its own bytes. An action's
// subfield is held to OVS's widths instead (Field.Bits: 20, 4, 1 and 6
// bits), as ovs-vswitchd's mf_check_src/dst hold it: tun_erspan_idx[] in
// a move is bits 0 to 19, and load:1->tun_erspan_ver[] arrives as the
// masked set_field 1/0xf.
//
// ovs-ofctl and ovs-vswitchd 3.1 (match_set_tun_erspan_{ver,dir,hwid}
// _masked) store the value as the mask of those three: tun_erspan_ver=2
// goes on the wire as 2/0x2 and matches any version with bit 1 set. The
// codec takes the bytes it is given, so govswitchd matches what the wire
// says and dumps it back as ovs-vswitchd does.

// NXOXM experimenter field numbers of the ERSPAN metadata.
const (
	nxoxmErspanIdx  = 11
	nxoxmErspanVer  = 12
	nxoxmErspanDir  = 13
	nxoxmErspanHwid = 14
)

// byExpHeader finds an experimenter field by the class/field part of its
// header (the experimenter ID is checked apart).
var byExpHeader = map[uint32]Field{}

func defErspanFields() {
	def := func(f Field, name string, n uint8, size int, p func(*flow.Key) *uint8, fm uint64) {
		defInt(f, name, noHeader, hdr(ClassExperimenter, n), size, true, both, preNone, p, 0, fm)
		fields[f].exp = NXVendorID
	}
	defInt(FieldTunErspanIdx, "tun_erspan_idx", noHeader, hdr(ClassExperimenter, nxoxmErspanIdx), 4, true, both, preNone,
		func(k *flow.Key) *uint32 { return &k.Tunnel.ErspanIdx }, 0, 0xffffffff)
	fields[FieldTunErspanIdx].exp = NXVendorID
	def(FieldTunErspanVer, "tun_erspan_ver", nxoxmErspanVer, 1, func(k *flow.Key) *uint8 { return &k.Tunnel.ErspanVer }, 0xff)
	def(FieldTunErspanDir, "tun_erspan_dir", nxoxmErspanDir, 1, func(k *flow.Key) *uint8 { return &k.Tunnel.ErspanDir }, 0xff)
	def(FieldTunErspanHwid, "tun_erspan_hwid", nxoxmErspanHwid, 1, func(k *flow.Key) *uint8 { return &k.Tunnel.ErspanHwid }, 0xff)
	// OVS's widths, what tun_erspan_idx[] names in a move (Bits).
	fields[FieldTunErspanIdx].bits, fields[FieldTunErspanVer].bits = 20, 4
	fields[FieldTunErspanDir].bits, fields[FieldTunErspanHwid].bits = 1, 6
}

// expHeader returns experimenter field f's 4-byte header (hasmask clear,
// the length counting the experimenter ID and Size value bytes) and its
// experimenter ID; ok false for a field that is not one.
func expHeader(f Field) (h, exp uint32, ok bool) {
	if f == FieldNone || f >= numFields || fields[f].exp == 0 {
		return 0, 0, false
	}
	d := &fields[f]
	return d.oxm | uint32(4+d.size), d.exp, true
}

// fieldByExpHeader returns the experimenter field that header h (class
// 0xffff) names, given the experimenter ID exp that follows it, or
// FieldNone.
func fieldByExpHeader(h, exp uint32) Field {
	f := byExpHeader[h&^0x1ff]
	if f == FieldNone || fields[f].exp != exp {
		return FieldNone
	}
	return f
}

// IsExperimenter reports whether f goes on the wire with an 8-byte
// experimenter header (the ERSPAN and NSH fields).
func (f Field) IsExperimenter() bool { return f < numFields && fields[f].exp != 0 }

// entryField resolves the TLV header h at the start of an OXM/NXM entry
// whose payload (after the 4-byte header) is body: for an experimenter
// header, the field its experimenter ID names and the payload after that
// ID. A header too short for its experimenter ID, or an ID this codec does
// not know, is FieldNone.
func entryField(h uint32, body []byte) (Field, []byte) {
	if h>>16 != uint32(ClassExperimenter) {
		return FieldByHeader(h), body
	}
	if len(body) < 4 {
		return FieldNone, body
	}
	return fieldByExpHeader(h, u32(body)), body[4:]
}

// pullActionField reads the field header at the start of b, in an action
// that names a field (move, push/pop, output_reg2): 4 bytes, or 8 for an
// experimenter field (class 0xffff, then its experimenter ID). The header
// must be unmasked with the field's length (experimenter: 4 + its
// length). n is how many bytes the header took (0 when b is too short);
// f is FieldNone for a header this codec does not take there.
func pullActionField(b []byte) (f Field, h uint32, n int) {
	if len(b) < 4 {
		return FieldNone, 0, 0
	}
	h = u32(b)
	if h>>16 != uint32(ClassExperimenter) {
		f = FieldByHeader(h)
		if f == FieldNone || fields[f].enc == 0 || !actionHeaderFits(f, h) {
			return FieldNone, h, 4
		}
		return f, h, 4
	}
	if len(b) < 8 {
		return FieldNone, h, 0
	}
	f = fieldByExpHeader(h, u32(b[4:]))
	if f == FieldNone || h&0x100 != 0 || h&0xff != uint32(4+fields[f].size) {
		return FieldNone, h, 8
	}
	return f, h, 8
}

// appendActionField appends f's unmasked header as an action names it:
// an experimenter field's 8 bytes, else the 4-byte NXM (nxm) or OXM one.
func appendActionField(b []byte, f Field, nxm bool) ([]byte, bool) {
	if h, exp, ok := expHeader(f); ok {
		return be32(be32(b, h), exp), true
	}
	h, ok := f.Header(nxm)
	if !ok {
		return b, false
	}
	return be32(b, h), true
}

// actionFieldLen is the bytes f's header takes in an action (4 or 8), 0
// for a field without one.
func actionFieldLen(f Field) int {
	if f.IsExperimenter() {
		return 8
	}
	if _, ok := f.Header(true); ok {
		return 4
	}
	return 0
}
