package openflow

import "fmt"

// OpenFlow 1.1 and 1.2 sit between 1.0 and 1.3: they number their message
// types, ports, stats and instructions as 1.3 does, so most of their
// messages go through the 1.3 code, which picks the match and action
// formats by version with the helpers below. What differs is here:
//   - 1.1 matches are the fixed 88-byte ofp11_match (match11.go), and its
//     actions are one per rewritten field, without set_field (action11.go);
//     1.2 has OXM matches and set_field, as 1.3.
//   - packet-in: 1.1 carries in_port and in_phy_port and no match, 1.2 a
//     match but no cookie; 1.1's flow removed has no hard timeout and an
//     ofp11_match.
//   - table stats carry the table's features (names, match, actions).
//   - features replies carry the ports, as in 1.0 (ofp11_port, 1.3's
//     layout); port descriptions are OVS's extension, as in 1.0.
//   - no meters, async config, table features or role status, and 1.1 has
//     no role request (ovs-vswitchd answers its Nicira one only in 1.0).

// decode11 decodes the messages of OpenFlow 1.1 and 1.2 (env.Version).
func decode11(env Envelope, typ uint8, body []byte) (Msg, error) {
	v := env.Version
	switch typ {
	case TypePacketIn:
		if v == Version11 {
			return decodePacketIn11(env, body)
		}
		return decodePacketIn12(env, body)
	case TypeFlowRemoved:
		if v == Version11 {
			return decodeFlowRemoved11(env, body)
		}
		return decodeFlowRemoved13(env, body)
	case Type13MultipartRequest, Type13MultipartReply:
		reply := typ == Type13MultipartReply
		if reply && len(body) >= 8 && u16(body) == StatsTable {
			return decodeTableStatsReply11(env, u16(body[2:]), body[8:])
		}
		return decodeStats(env, body, reply)
	case Type13RoleRequest, Type13RoleReply:
		if v == Version11 {
			break
		}
		return decodeRole(env, typ, body)
	case Type13GetAsyncRequest, Type13GetAsyncReply, Type13SetAsync, Type13MeterMod:
	default:
		if typ < Type13RoleRequest {
			return decode13(env, typ, body)
		}
	}
	return nil, errOf(v, kBadType, "message type %d in OpenFlow %s", typ, versionName(v))
}

// decodeMatchFor decodes the match of a 1.1+ message at the start of b
// (ofp11_match in 1.1, OXM after) and returns the bytes it used.
func decodeMatchFor(v uint8, b []byte, m *Match) (int, error) {
	if v == Version11 {
		if err := DecodeMatch11(b, m); err != nil {
			return 0, err
		}
		return Match11Len, nil
	}
	return DecodeOXM(b, m)
}

// appendMatchFor appends m in a 1.1+ message's match format.
func appendMatchFor(b []byte, v uint8, m *Match) ([]byte, error) {
	if v == Version11 {
		return AppendMatch11(b, m)
	}
	return AppendOXMV(b, v, m)
}

// decodeInstructionsFor decodes a 1.1+ instruction list.
func decodeInstructionsFor(v uint8, b []byte, in *Instructions) error {
	if v == Version11 {
		return DecodeInstructions11(b, in)
	}
	return decodeInstructionsV(v, b, in) // 1.5's meter action: meter.go
}

// appendInstructionsFor appends in as a 1.1+ instruction list.
func appendInstructionsFor(b []byte, v uint8, in *Instructions) ([]byte, error) {
	if v == Version11 {
		return AppendInstructions11(b, in)
	}
	return appendInstructionsV(b, v, in)
}

// decodeActionsFor decodes an action list of version v.
func decodeActionsFor(v uint8, dst []Action, b []byte) ([]Action, error) {
	switch v {
	case Version10:
		return DecodeActions10(dst, b)
	case Version11:
		return DecodeActions11(dst, b)
	}
	return decodeActions13(dst, v, b)
}

// appendActionsFor appends acts as an action list of version v.
func appendActionsFor(b []byte, v uint8, acts []Action) ([]byte, error) {
	switch v {
	case Version10:
		return AppendActions10(b, acts)
	case Version11:
		return AppendActions11(b, acts)
	}
	return appendActions13(b, v, acts)
}

// decodePacketIn11 reads a 1.1 packet-in: buffer_id, in_port, in_phy_port,
// total_len, reason, table_id, then the packet. The input port also goes
// into Match, as the later versions' decoders put it there.
func decodePacketIn11(env Envelope, body []byte) (Msg, error) {
	if len(body) < 16 {
		return nil, badLen(env.Version, "packet in", len(body), 16)
	}
	m := &PacketIn{Envelope: env, BufferID: u32(body), InPort: u32(body[4:]), TotalLen: u16(body[12:]),
		Reason: body[14], TableID: body[15], Data: body[16:]}
	m.Match.Key.InPort, m.Match.Mask.InPort = m.InPort, ^uint32(0)
	return m, nil
}

// decodePacketIn12 reads a 1.2 packet-in: 1.3's without the cookie.
func decodePacketIn12(env Envelope, body []byte) (Msg, error) {
	if len(body) < 8 {
		return nil, badLen(env.Version, "packet in", len(body), 8)
	}
	m := &PacketIn{Envelope: env, BufferID: u32(body), TotalLen: u16(body[4:]), Reason: body[6], TableID: body[7]}
	n, err := DecodeOXM(body[8:], &m.Match)
	if err != nil {
		return nil, err
	}
	rest := body[8+n:]
	if len(rest) < 2 {
		return nil, badLen(env.Version, "packet in padding", len(rest), 2)
	}
	m.Data = rest[2:]
	m.InPort = m.Match.Key.InPort
	return m, nil
}

// append11 encodes a 1.1 or 1.2 packet-in. 1.1 takes the input port from
// InPort (the physical port is the same: the switch has no logical ports);
// 1.2 from Match, as 1.3 does. Cookie does not exist in either.
func (m *PacketIn) append11(b []byte) ([]byte, error) {
	b, start := begin(b, m.Version, TypePacketIn, m.Xid)
	b = be32(b, m.BufferID)
	if m.Version == Version11 {
		b = be32(be32(b, m.InPort), m.InPort)
		b = append(be16(b, m.TotalLen), m.Reason, m.TableID)
		return finish(append(b, m.Data...), start)
	}
	b = append(be16(b, m.TotalLen), m.Reason, m.TableID)
	var err error
	if b, err = AppendOXMV(b, m.Version, &m.Match); err != nil {
		return b[:start], err
	}
	return finish(append(append(b, 0, 0), m.Data...), start)
}

// flowRemoved11Len is the body of a 1.1 flow removed before its match.
const flowRemoved11Len = 40

func decodeFlowRemoved11(env Envelope, body []byte) (Msg, error) {
	if want := flowRemoved11Len + Match11Len; len(body) != want {
		return nil, badLen(env.Version, "flow removed", len(body), want)
	}
	m := &FlowRemoved{Envelope: env}
	m.Cookie, m.Priority, m.Reason, m.TableID = u64(body), u16(body[8:]), body[10], body[11]
	m.DurationSec, m.DurationNsec, m.IdleTimeout = u32(body[12:]), u32(body[16:]), u16(body[20:])
	m.PacketCount, m.ByteCount = u64(body[24:]), u64(body[32:])
	if err := DecodeMatch11(body[flowRemoved11Len:], &m.Match); err != nil {
		return nil, err
	}
	return m, nil
}

// append11 encodes a 1.1 flow removed, which has no hard timeout.
func (m *FlowRemoved) append11(b []byte) ([]byte, error) {
	b, start := begin(b, m.Version, TypeFlowRemoved, m.Xid)
	b = append(be16(be64(b, m.Cookie), m.Priority), m.Reason, m.TableID)
	b = zeros(be16(be32(be32(b, m.DurationSec), m.DurationNsec), m.IdleTimeout), 2)
	b = be64(be64(b, m.PacketCount), m.ByteCount)
	var err error
	if b, err = AppendMatch11(b, &m.Match); err != nil {
		return b[:start], err
	}
	return finish(b, start)
}

// TableStats11 is what 1.1 and 1.2 table stats say about a table beyond
// its counters (1.3 moved it to table features). In 1.1, Match and
// Wildcards are OFPFMF11_* bits; in 1.2 they, WriteSetFields and
// ApplySetFields are bitmaps of OXM field numbers (class OpenFlow basic).
// Instructions has bit t for instruction type t, the action bitmaps bit t
// for action type t. SetFields and the metadata masks exist only in 1.2.
type TableStats11 struct {
	Match          uint64
	Wildcards      uint64
	Instructions   uint32
	WriteActions   uint32
	ApplyActions   uint32
	WriteSetFields uint64
	ApplySetFields uint64
	MetadataMatch  uint64
	MetadataWrite  uint64
	Config         uint32
}

// OpenFlow 1.1 match field bits (OFPFMF11_*), for TableStats11.
const (
	MatchField11InPort    uint32 = 1 << 0
	MatchField11DlVLAN    uint32 = 1 << 1
	MatchField11DlVLANPCP uint32 = 1 << 2
	MatchField11DlType    uint32 = 1 << 3
	MatchField11NwTos     uint32 = 1 << 4
	MatchField11NwProto   uint32 = 1 << 5
	MatchField11TpSrc     uint32 = 1 << 6
	MatchField11TpDst     uint32 = 1 << 7
	MatchField11MPLSLabel uint32 = 1 << 8
	MatchField11MPLSTC    uint32 = 1 << 9
	MatchField11Type      uint32 = 1 << 10
	MatchField11DlSrc     uint32 = 1 << 11
	MatchField11DlDst     uint32 = 1 << 12
	MatchField11NwSrc     uint32 = 1 << 13
	MatchField11NwDst     uint32 = 1 << 14
	MatchField11Metadata  uint32 = 1 << 15
)

// Sizes of a table stats entry in 1.1 and 1.2.
const (
	tableStats11Len = 88
	tableStats12Len = 128
)

func decodeTableStatsReply11(env Envelope, flags uint16, b []byte) (Msg, error) {
	n := tableStats11Len
	if env.Version == Version12 {
		n = tableStats12Len
	}
	if len(b)%n != 0 {
		return nil, errOf(env.Version, kBadLen, "table stats of %d bytes, not a multiple of %d", len(b), n)
	}
	m := &TableStatsReply{Envelope: env, Flags: flags, Stats: make([]TableStats, 0, len(b)/n)}
	for ; len(b) > 0; b = b[n:] {
		s := TableStats{TableID: b[0], Name: cstring(b[8:40])}
		f := &s.V11
		e := b[40:]
		if env.Version == Version11 {
			f.Wildcards, f.Match, f.Instructions = uint64(u32(e)), uint64(u32(e[4:])), u32(e[8:])
			f.WriteActions, f.ApplyActions, f.Config = u32(e[12:]), u32(e[16:]), u32(e[20:])
			e = e[24:]
		} else {
			f.Match, f.Wildcards, f.WriteActions, f.ApplyActions = u64(e), u64(e[8:]), u32(e[16:]), u32(e[20:])
			f.WriteSetFields, f.ApplySetFields = u64(e[24:]), u64(e[32:])
			f.MetadataMatch, f.MetadataWrite = u64(e[40:]), u64(e[48:])
			f.Instructions, f.Config = u32(e[56:]), u32(e[60:])
			e = e[64:]
		}
		s.MaxEntries, s.ActiveCount, s.LookupCount, s.MatchedCount = u32(e), u32(e[4:]), u64(e[8:]), u64(e[16:])
		m.Stats = append(m.Stats, s)
	}
	return m, nil
}

// appendTableStats11 appends one 1.1 or 1.2 table stats entry.
func appendTableStats11(b []byte, v uint8, s *TableStats) []byte {
	f := &s.V11
	b = appendCString(zeros(append(b, s.TableID), 7), s.Name, 32)
	if v == Version11 {
		b = be32(be32(be32(b, uint32(f.Wildcards)), uint32(f.Match)), f.Instructions)
		b = be32(be32(be32(b, f.WriteActions), f.ApplyActions), f.Config)
	} else {
		b = be32(be32(be64(be64(b, f.Match), f.Wildcards), f.WriteActions), f.ApplyActions)
		b = be64(be64(be64(be64(b, f.WriteSetFields), f.ApplySetFields), f.MetadataMatch), f.MetadataWrite)
		b = be32(be32(b, f.Instructions), f.Config)
	}
	return be64(be64(be32(be32(b, s.MaxEntries), s.ActiveCount), s.LookupCount), s.MatchedCount)
}

// checkNot11 fails for a message that exists from 1.3 on only.
func checkNot11(v uint8, what string) error {
	if v == Version11 || v == Version12 {
		return fmt.Errorf("openflow: %s in OpenFlow %s: %w", what, versionName(v), ErrUnsupported)
	}
	return nil
}
