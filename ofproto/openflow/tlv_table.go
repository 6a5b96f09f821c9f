package openflow

// The Nicira TLV table messages: the map between Geneve option TLVs
// (class, type, length) and the NXM_NX_TUN_METADATA<n> fields, which
// ovn-controller sets up on every connection to br-int before it installs a
// flow (NXT_TLV_TABLE_REQUEST, then NXT_TLV_TABLE_MOD for its option when
// the switch has none).

// Nicira subtypes of the TLV table messages; any OpenFlow version.
const (
	NXTTLVTableMod     uint32 = 24
	NXTTLVTableRequest uint32 = 25
	NXTTLVTableReply   uint32 = 26
)

// NXT_TLV_TABLE_MOD commands (NXTTMC_*).
const (
	TLVTableAdd    uint16 = 0
	TLVTableDelete uint16 = 1
	TLVTableClear  uint16 = 2
)

// TLV table mod failures (NXTTMFC_*): in OpenFlow 1.2+ the exp_type of an
// experimenter error from NXVendorID; in 1.0 and 1.1 OVS sends them as
// Nicira vendor errors of type OFPET_BAD_REQUEST with the code in
// TLVTableFailed10.
const (
	TLVTableBadCommand    uint16 = 16
	TLVTableBadOptLen     uint16 = 17
	TLVTableBadFieldIdx   uint16 = 18
	TLVTableFull          uint16 = 19
	TLVTableAlreadyMapped uint16 = 20
	TLVTableDupEntry      uint16 = 21
	TLVTableInvalidDel    uint16 = 38
)

// TLVTableError is the error a failed TLV table mod gets in version v.
func TLVTableError(v uint8, code uint16, detail string) *Error {
	if v >= Version12 {
		return &Error{Version: v, Type: Err13TypeExperimenter, Code: code, Experimenter: NXVendorID, Detail: detail}
	}
	c10 := uint16(527) + code - TLVTableBadCommand // 527..532
	if code == TLVTableInvalidDel {
		c10 = 537
	}
	return &Error{Version: v, Type: ErrTypeBadRequest, Code: c10, Experimenter: NXVendorID, Detail: detail}
}

// TLVMap maps one option TLV to NXM_NX_TUN_METADATA<Index> (nx_tlv_map).
type TLVMap struct {
	Class uint16
	Type  uint8
	Len   uint8 // bytes of option data, a multiple of 4
	Index uint16
}

// TLVTableMod is NXT_TLV_TABLE_MOD.
type TLVTableMod struct {
	Envelope
	Command uint16
	Maps    []TLVMap
}

// TLVTableRequest is NXT_TLV_TABLE_REQUEST (no body).
type TLVTableRequest struct {
	Envelope
}

// TLVTableReply is NXT_TLV_TABLE_REPLY: the switch's limits and its maps.
type TLVTableReply struct {
	Envelope
	MaxOptionSpace uint32
	MaxFields      uint16
	Maps           []TLVMap
}

func (m *TLVTableMod) Append(b []byte) ([]byte, error) {
	b, start := begin(b, m.Version, TypeVendor, m.Xid)
	b = be32(be32(b, NXVendorID), NXTTLVTableMod)
	b = zeros(be16(b, m.Command), 6)
	return finish(appendTLVMaps(b, m.Maps), start)
}

func (m *TLVTableRequest) Append(b []byte) ([]byte, error) {
	b, start := begin(b, m.Version, TypeVendor, m.Xid)
	return finish(be32(be32(b, NXVendorID), NXTTLVTableRequest), start)
}

func (m *TLVTableReply) Append(b []byte) ([]byte, error) {
	b, start := begin(b, m.Version, TypeVendor, m.Xid)
	b = be32(be32(b, NXVendorID), NXTTLVTableReply)
	b = zeros(be16(be32(b, m.MaxOptionSpace), m.MaxFields), 10)
	return finish(appendTLVMaps(b, m.Maps), start)
}

func appendTLVMaps(b []byte, maps []TLVMap) []byte {
	for _, t := range maps {
		b = append(be16(b, t.Class), t.Type, t.Len)
		b = zeros(be16(b, t.Index), 2)
	}
	return b
}

func decodeTLVMaps(v uint8, what string, rest []byte) ([]TLVMap, error) {
	if len(rest)%8 != 0 {
		return nil, errOf(v, kBadLen, "%s: %d bytes of maps, not a multiple of 8", what, len(rest))
	}
	var maps []TLVMap
	for ; len(rest) >= 8; rest = rest[8:] {
		maps = append(maps, TLVMap{Class: u16(rest), Type: rest[2], Len: rest[3], Index: u16(rest[4:])})
	}
	return maps, nil
}

// decodeTLVTable decodes the TLV table messages and NXT_CT_FLUSH_ZONE
// (the other any-version Nicira messages ovn-controller sends); ok is false
// for other subtypes.
func decodeTLVTable(env Envelope, sub uint32, rest []byte) (m Msg, err error, ok bool) {
	v := env.Version
	switch sub {
	case NXTCtFlushZone:
		m, err := decodeCtFlushZone(env, rest)
		return m, err, true
	case NXTCtFlush:
		m, err := decodeCtFlush(env, rest)
		return m, err, true
	case NXTTLVTableMod:
		if len(rest) < 8 {
			return nil, badLen(v, "NXT_TLV_TABLE_MOD", len(rest), 8), true
		}
		maps, err := decodeTLVMaps(v, "NXT_TLV_TABLE_MOD", rest[8:])
		if err != nil {
			return nil, err, true
		}
		return &TLVTableMod{Envelope: env, Command: u16(rest), Maps: maps}, nil, true
	case NXTTLVTableRequest:
		if len(rest) != 0 {
			return nil, badLen(v, "NXT_TLV_TABLE_REQUEST", len(rest), 0), true
		}
		return &TLVTableRequest{Envelope: env}, nil, true
	case NXTTLVTableReply:
		if len(rest) < 16 {
			return nil, badLen(v, "NXT_TLV_TABLE_REPLY", len(rest), 16), true
		}
		maps, err := decodeTLVMaps(v, "NXT_TLV_TABLE_REPLY", rest[16:])
		if err != nil {
			return nil, err, true
		}
		return &TLVTableReply{Envelope: env, MaxOptionSpace: u32(rest), MaxFields: u16(rest[4:]), Maps: maps}, nil, true
	}
	return nil, nil, false
}
