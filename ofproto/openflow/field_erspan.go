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
// OpenFlow 1.0 and 1.1 NXAST_REG_LOAD2) carry them. The actions that
// name a field by a 4-byte header (move, load, push/pop, learn,
// output_reg) cannot: Header reports none, so their encoders refuse
// them, and their decoders never find them (byHeader has no entry).
//
// In a flow.Key they are Tunnel.ErspanIdx, ErspanVer, ErspanDir and
// ErspanHwid, which the datapath keys, masks and set(tunnel()) carry as
// OVS_TUNNEL_KEY_ATTR_ERSPAN_OPTS (datapath/odp_erspan.go), each within
// its width there (20, 8, 1 and 6 bits). OpenFlow gives them their whole
// bytes (a 32-bit index, 8-bit version, direction and hardware ID), as
// ovs-vswitchd does: a mask is exact only when all ones in that width, so
// a match ovs-ofctl sends dumps back in its own bytes.
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
