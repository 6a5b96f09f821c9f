package openflow

import "fmt"

// Stats (1.0) / multipart (1.3) types (OFPST_* / OFPMP_*).
const (
	StatsDesc          uint16 = 0
	StatsFlow          uint16 = 1
	StatsAggregate     uint16 = 2
	StatsTable         uint16 = 3
	StatsPort          uint16 = 4
	StatsQueue         uint16 = 5
	StatsTableFeatures uint16 = 12 // 1.3 only
	StatsPortDesc      uint16 = 13 // 1.3; an OVS extension in 1.0
	StatsVendor        uint16 = 0xffff
)

// Nicira stats subtypes (NXST_*).
const (
	NXSTFlow      uint32 = 0
	NXSTAggregate uint32 = 1
)

// StatsReplyMore is the flag (OFPSF_REPLY_MORE / OFPMPF_REPLY_MORE) on
// every part of a split reply but the last; on a 1.3 request
// (OFPMPF_REQ_MORE) it means more request parts follow.
const StatsReplyMore uint16 = 1

// QueueAll is OFPQ_ALL in queue stats requests.
const QueueAll uint32 = 0xffffffff

// Fixed sizes of stats bodies and entries.
const (
	descLen         = 1056
	tableStats10Len = 64
	tableStats13Len = 24
	portStats10Len  = 104
	portStats13Len  = 112
	queueStats10Len = 32
	queueStats13Len = 40
)

func decodeStats(env Envelope, body []byte, reply bool) (Msg, error) {
	v := env.Version
	hdr := 4
	if v >= Version11 {
		hdr = 8
	}
	if len(body) < hdr {
		return nil, badLen(v, "stats header", len(body), hdr)
	}
	typ, flags, rest := u16(body), u16(body[2:]), body[hdr:]
	exact := func(n int) error {
		if len(rest) != n {
			return errOf(v, kBadLen, "stats type %d: body of %d bytes, want %d", typ, len(rest), n)
		}
		return nil
	}
	switch typ {
	case StatsDesc:
		if !reply {
			return &DescStatsRequest{Envelope: env, Flags: flags}, exactOrNil(exact(0))
		}
		if err := exact(descLen); err != nil {
			return nil, err
		}
		return &DescStatsReply{Envelope: env, Flags: flags, Mfr: cstring(rest[:256]), HW: cstring(rest[256:512]),
			SW: cstring(rest[512:768]), Serial: cstring(rest[768:800]), DP: cstring(rest[800:1056])}, nil
	case StatsFlow, StatsAggregate:
		if !reply {
			r, err := decodeFlowStatsRequest(env, flags, rest, false)
			if err != nil {
				return nil, err
			}
			if typ == StatsAggregate {
				return (*AggregateStatsRequest)(r), nil
			}
			return r, nil
		}
		if typ == StatsAggregate && v >= Version15 {
			st, n, err := decodeOXS(v, rest)
			if err != nil {
				return nil, err
			}
			if n != len(rest) {
				return nil, errOf(v, kBadLen, "aggregate reply: %d bytes after the stats", len(rest)-n)
			}
			return &AggregateStatsReply{Envelope: env, Flags: flags, PacketCount: st.packets, ByteCount: st.bytes,
				FlowCount: st.flowCount}, nil
		}
		if typ == StatsAggregate {
			if err := exact(24); err != nil {
				return nil, err
			}
			return &AggregateStatsReply{Envelope: env, Flags: flags, PacketCount: u64(rest),
				ByteCount: u64(rest[8:]), FlowCount: u32(rest[16:])}, nil
		}
		return decodeFlowStatsReply(env, flags, rest, false)
	case StatsTable:
		if !reply {
			return &TableStatsRequest{Envelope: env, Flags: flags}, exactOrNil(exact(0))
		}
		return decodeTableStatsReply(env, flags, rest)
	case StatsPort:
		if !reply {
			if err := exact(8); err != nil {
				return nil, err
			}
			return &PortStatsRequest{Envelope: env, Flags: flags, PortNo: portAt(v, rest)}, nil
		}
		return decodePortStatsReply(env, flags, rest)
	case StatsQueue:
		if !reply {
			if err := exact(8); err != nil {
				return nil, err
			}
			return &QueueStatsRequest{Envelope: env, Flags: flags, PortNo: portAt(v, rest), QueueID: u32(rest[4:])}, nil
		}
		return decodeQueueStatsReply(env, flags, rest)
	case StatsPortDesc:
		if !reply && v >= Version15 {
			if err := exact(8); err != nil {
				return nil, err
			}
			return &PortDescRequest{Envelope: env, Flags: flags, PortNo: u32(rest)}, nil
		}
		if !reply {
			return &PortDescRequest{Envelope: env, Flags: flags, PortNo: PortAny}, exactOrNil(exact(0))
		}
		ports, err := decodePorts(v, rest)
		if err != nil {
			return nil, err
		}
		return &PortDescReply{Envelope: env, Flags: flags, Ports: ports}, nil
	case StatsTableFeatures:
		if v < Version13 {
			break
		}
		tables, err := decodeTableFeatures(rest)
		if err != nil {
			return nil, err
		}
		if reply {
			return &TableFeaturesReply{Envelope: env, Flags: flags, Tables: tables}, nil
		}
		return &TableFeaturesRequest{Envelope: env, Flags: flags, Tables: tables}, nil
	case StatsVendor:
		return decodeVendorStats(env, flags, rest, reply)
	case StatsFlowMonitor:
		if v >= Version14 {
			return decodeFlowMonitor14(env, flags, rest, reply)
		}
	}
	if v >= Version13 {
		if m, ok, err := decodeGroupStats(env, typ, flags, rest, reply); ok {
			return m, err
		}
		if m, ok, err := decodeMeterStats(env, typ, flags, rest, reply); ok {
			return m, err
		}
	}
	return nil, errOf(v, kBadStat, "stats type %d", typ)
}

// exactOrNil turns a nil *Error into a nil error interface.
func exactOrNil(e error) error {
	if e == nil {
		return nil
	}
	return e
}

func portAt(v uint8, b []byte) uint32 {
	if v >= Version11 {
		return u32(b)
	}
	return Port10To32(u16(b))
}

func decodeVendorStats(env Envelope, flags uint16, b []byte, reply bool) (Msg, error) {
	v := env.Version
	hdr := 12 // vendor, subtype, pad
	if v >= Version11 {
		hdr = 8
	}
	if len(b) < 4 {
		return nil, badLen(v, "vendor stats", len(b), 4)
	}
	if u32(b) == ONFVendorID && v == Version13 && len(b) >= 8 && u32(b[4:]) == ONFSTFlowMonitor {
		return decodeFlowMonitorNX(env, flags, b[8:], reply)
	}
	if vendor := u32(b); vendor != NXVendorID {
		return nil, errOf(v, kBadVendor, "stats vendor %#08x", vendor)
	}
	if len(b) < hdr {
		return nil, badLen(v, "Nicira stats", len(b), hdr)
	}
	sub, rest := u32(b[4:]), b[hdr:]
	if sub == NXSTFlowMonitor && v == Version10 {
		return decodeFlowMonitorNX(env, flags, rest, reply)
	}
	if m, ok, err := decodeIPFIXStats(env, flags, sub, rest, reply); ok { // ipfix_stats.go
		return m, err
	}
	if v != Version10 {
		return nil, errOf(v, kBadSubtype, "Nicira stats %d in OpenFlow 1.3", sub)
	}
	if typ, ok := nxGroupStatsType(sub); ok {
		m, _, err := decodeGroupStats(env, typ, flags, rest, reply)
		return m, err
	}
	switch sub {
	case NXSTFlow, NXSTAggregate:
		if !reply {
			r, err := decodeFlowStatsRequest(env, flags, rest, true)
			if err != nil {
				return nil, err
			}
			if sub == NXSTAggregate {
				return (*AggregateStatsRequest)(r), nil
			}
			return r, nil
		}
		if sub == NXSTAggregate {
			if len(rest) != 24 {
				return nil, badLen(v, "NXST_AGGREGATE reply", len(rest), 24)
			}
			return &AggregateStatsReply{Envelope: env, Flags: flags, NXM: true, PacketCount: u64(rest),
				ByteCount: u64(rest[8:]), FlowCount: u32(rest[16:])}, nil
		}
		return decodeFlowStatsReply(env, flags, rest, true)
	}
	return nil, errOf(v, kBadSubtype, "Nicira stats subtype %d", sub)
}

// statsHeader appends the header of a stats/multipart message; for NX it
// adds the vendor stats header too. It returns the buffer and the start.
func statsHeader(b []byte, e *Envelope, reply bool, typ, flags uint16, nx bool, sub uint32) ([]byte, int, error) {
	if err := checkVersion(e.Version); err != nil {
		return b, 0, err
	}
	var t uint8
	switch {
	case e.Version >= Version11 && reply:
		t = Type13MultipartReply
	case e.Version >= Version11:
		t = Type13MultipartRequest
	case reply:
		t = Type10StatsReply
	default:
		t = Type10StatsRequest
	}
	if nx {
		typ = StatsVendor
	}
	b, start := begin(b, e.Version, t, e.Xid)
	b = be16(be16(b, typ), flags)
	if e.Version >= Version11 {
		b = zeros(b, 4)
	}
	if nx {
		if e.Version != Version10 {
			return b[:start], 0, checkVersionNX(e.Version)
		}
		b = zeros(be32(be32(b, NXVendorID), sub), 4)
	}
	return b, start, nil
}

// DescStatsRequest asks for the switch description.
type DescStatsRequest struct {
	Envelope
	Flags uint16
}

func (m *DescStatsRequest) Append(b []byte) ([]byte, error) {
	b, start, err := statsHeader(b, &m.Envelope, false, StatsDesc, m.Flags, false, 0)
	if err != nil {
		return b, err
	}
	return finish(b, start)
}

// DescStatsReply describes the switch. Strings longer than their fields
// (255 bytes; Serial 31) are truncated.
type DescStatsReply struct {
	Envelope
	Flags  uint16
	Mfr    string
	HW     string
	SW     string
	Serial string
	DP     string
}

func (m *DescStatsReply) Append(b []byte) ([]byte, error) {
	b, start, err := statsHeader(b, &m.Envelope, true, StatsDesc, m.Flags, false, 0)
	if err != nil {
		return b, err
	}
	b = appendCString(appendCString(appendCString(b, m.Mfr, 256), m.HW, 256), m.SW, 256)
	b = appendCString(appendCString(b, m.Serial, 32), m.DP, 256)
	return finish(b, start)
}

// FlowStatsRequest asks for per-flow statistics: OFPST_FLOW, OFPMP_FLOW,
// or NXST_FLOW (1.0 with an NXM match) when NXM is set. OutPort PortAny,
// OutGroup GroupAny and TableID TableAll mean "no restriction"; 1.0 decodes
// set OutGroup to GroupAny.
type FlowStatsRequest struct {
	Envelope
	Flags      uint16
	NXM        bool
	TableID    uint8
	OutPort    uint32
	OutGroup   uint32
	Cookie     uint64
	CookieMask uint64
	Match      Match
}

// AggregateStatsRequest asks for totals over the flows a FlowStatsRequest
// would list (OFPST_AGGREGATE, OFPMP_AGGREGATE, NXST_AGGREGATE).
type AggregateStatsRequest FlowStatsRequest

func decodeFlowStatsRequest(env Envelope, flags uint16, b []byte, nx bool) (*FlowStatsRequest, error) {
	v := env.Version
	m := &FlowStatsRequest{Envelope: env, Flags: flags, NXM: nx, OutGroup: GroupAny}
	switch {
	case nx:
		if len(b) < 8 {
			return nil, badLen(v, "NX flow stats request", len(b), 8)
		}
		m.OutPort, m.TableID = Port10To32(u16(b)), b[4]
		rest, err := nxmAt(v, b[8:], int(u16(b[2:])), &m.Match)
		if err != nil {
			return nil, err
		}
		if len(rest) != 0 {
			return nil, badLen(v, "NX flow stats request", len(b), len(b)-len(rest))
		}
	case v >= Version11:
		if len(b) < 32 {
			return nil, badLen(v, "flow stats request", len(b), 32)
		}
		m.TableID, m.OutPort, m.OutGroup, m.Cookie, m.CookieMask = b[0], u32(b[4:]), u32(b[8:]), u64(b[16:]), u64(b[24:])
		n, err := decodeMatchFor(v, b[32:], &m.Match)
		if err != nil {
			return nil, err
		}
		if 32+n != len(b) {
			return nil, badLen(v, "flow stats request", len(b), 32+n)
		}
	default:
		if len(b) != 44 {
			return nil, badLen(v, "flow stats request", len(b), 44)
		}
		decodeMatch10(b, &m.Match)
		m.TableID, m.OutPort = b[40], Port10To32(u16(b[42:]))
	}
	return m, nil
}

func appendFlowStatsRequest(b []byte, m *FlowStatsRequest, typ uint16, sub uint32) ([]byte, error) {
	nx := m.NXM && m.Version == Version10
	b, start, err := statsHeader(b, &m.Envelope, false, typ, m.Flags, nx, sub)
	if err != nil {
		return b, err
	}
	if m.Version >= Version11 {
		b = zeros(be32(be32(zeros(append(b, m.TableID), 3), m.OutPort), m.OutGroup), 4)
		b = be64(be64(b, m.Cookie), m.CookieMask)
		if b, err = appendMatchFor(b, m.Version, &m.Match); err != nil {
			return b[:start], err
		}
		return finish(b, start)
	}
	out, ok := Port32To10(m.OutPort)
	if !ok {
		return b[:start], fmt.Errorf("openflow: out_port %d in OpenFlow 1.0: %w", m.OutPort, ErrUnsupported)
	}
	if nx {
		b = be16(b, out)
		lenAt := len(b)
		b = zeros(append(zeros(b, 2), m.TableID), 3)
		var n int
		if b, n, err = appendNXMPadded(b, &m.Match); err != nil {
			return b[:start], err
		}
		b[lenAt], b[lenAt+1] = byte(n>>8), byte(n)
		return finish(b, start)
	}
	if b, err = appendMatch10(b, &m.Match); err != nil {
		return b[:start], err
	}
	return finish(be16(append(b, m.TableID, 0), out), start)
}

func (m *FlowStatsRequest) Append(b []byte) ([]byte, error) {
	return appendFlowStatsRequest(b, m, StatsFlow, NXSTFlow)
}

func (m *AggregateStatsRequest) Append(b []byte) ([]byte, error) {
	return appendFlowStatsRequest(b, (*FlowStatsRequest)(m), StatsAggregate, NXSTAggregate)
}

// FlowStats is one flow in a flow stats reply. Flags exist only in 1.3+,
// Importance in 1.4+; IdleAge and HardAge (seconds since last hit /
// modification, plus one; 0 unknown) only in NXST_FLOW, and IdleAge also
// in 1.5 (the OXS idle time); 1.0 and NX replies carry only
// Instructions.Apply.
type FlowStats struct {
	TableID      uint8
	DurationSec  uint32
	DurationNsec uint32
	Priority     uint16
	IdleTimeout  uint16
	HardTimeout  uint16
	Flags        uint16
	Importance   uint16 // 1.4+
	IdleAge      uint16
	HardAge      uint16
	Cookie       uint64
	PacketCount  uint64
	ByteCount    uint64
	Match        Match
	Instructions Instructions
}

// FlowStatsReply is a flow stats reply (OFPST_FLOW, OFPMP_FLOW, NXST_FLOW
// when NXM). Split long replies with StatsReplyMore.
type FlowStatsReply struct {
	Envelope
	Flags uint16
	NXM   bool
	Stats []FlowStats
}

func decodeFlowStatsReply(env Envelope, flags uint16, b []byte, nx bool) (Msg, error) {
	v := env.Version
	m := &FlowStatsReply{Envelope: env, Flags: flags, NXM: nx}
	fixed := 48
	switch {
	case v == Version10 && !nx:
		fixed = 88
	case v >= Version15:
		fixed = flowStats15Len
	}
	for len(b) > 0 {
		if len(b) < fixed {
			return nil, badLen(v, "flow stats entry", len(b), fixed)
		}
		n := int(u16(b))
		if n < fixed || n > len(b) || n%8 != 0 {
			return nil, errOf(v, kBadLen, "flow stats entry length %d in %d bytes", n, len(b))
		}
		e, rest := b[:n], b[n:]
		b = rest
		var s FlowStats
		if v >= Version15 {
			if err := decodeFlowStats15(v, e, &s); err != nil {
				return nil, err
			}
			m.Stats = append(m.Stats, s)
			continue
		}
		s.TableID, s.DurationSec, s.DurationNsec = e[2], u32(e[4:]), u32(e[8:])
		s.Priority, s.IdleTimeout, s.HardTimeout = u16(e[12:]), u16(e[14:]), u16(e[16:])
		s.Cookie, s.PacketCount, s.ByteCount = u64(e[24:]), u64(e[32:]), u64(e[40:])
		var err error
		switch {
		case nx:
			s.IdleAge, s.HardAge = u16(e[20:]), u16(e[22:])
			var acts []byte
			if acts, err = nxmAt(v, e[48:], int(u16(e[18:])), &s.Match); err != nil {
				return nil, err
			}
			s.Instructions.Apply, err = DecodeActions10(make([]Action, 0, len(acts)/8), acts)
		case v >= Version11:
			if v >= Version13 {
				s.Flags = u16(e[18:])
			}
			if v >= Version14 {
				s.Importance = u16(e[20:])
			}
			var mn int
			if mn, err = decodeMatchFor(v, e[48:], &s.Match); err != nil {
				return nil, err
			}
			err = decodeInstructionsFor(v, e[48+mn:], &s.Instructions)
		default:
			decodeMatch10(e[4:], &s.Match)
			s.DurationSec, s.DurationNsec = u32(e[44:]), u32(e[48:])
			s.Priority, s.IdleTimeout, s.HardTimeout = u16(e[52:]), u16(e[54:]), u16(e[56:])
			s.Cookie, s.PacketCount, s.ByteCount = u64(e[64:]), u64(e[72:]), u64(e[80:])
			s.Instructions.Apply, err = DecodeActions10(make([]Action, 0, (n-88)/8), e[88:])
		}
		if err != nil {
			return nil, err
		}
		m.Stats = append(m.Stats, s)
	}
	return m, nil
}

func (m *FlowStatsReply) body() replyBody {
	nx := m.NXM && m.Version == Version10
	return replyBody{env: &m.Envelope, typ: StatsFlow, flags: m.Flags, nx: nx, sub: NXSTFlow, n: len(m.Stats),
		entry: func(b []byte, i int) ([]byte, error) { return appendFlowStats(b, m.Version, nx, &m.Stats[i]) }}
}

func (m *FlowStatsReply) Append(b []byte) ([]byte, error) { return appendReply(b, m.body(), 0, false) }

// AppendParts encodes m as as many replies of at most maxLen bytes (0:
// 65535) as its entries need, each but the last flagged StatsReplyMore.
func (m *FlowStatsReply) AppendParts(b []byte, maxLen int) ([]byte, error) {
	return appendReply(b, m.body(), maxLen, true)
}

func appendFlowStats(b []byte, v uint8, nx bool, s *FlowStats) ([]byte, error) {
	if v >= Version15 {
		return appendFlowStats15(b, v, s)
	}
	at := len(b)
	var err error
	b = append(zeros(b, 2), s.TableID, 0)
	switch {
	case nx:
		b = be16(be16(be16(be32(be32(b, s.DurationSec), s.DurationNsec), s.Priority), s.IdleTimeout), s.HardTimeout)
		lenAt := len(b)
		b = be16(be16(zeros(b, 2), s.IdleAge), s.HardAge)
		b = be64(be64(be64(b, s.Cookie), s.PacketCount), s.ByteCount)
		var n int
		if b, n, err = appendNXMPadded(b, &s.Match); err != nil {
			return b, err
		}
		b[lenAt], b[lenAt+1] = byte(n>>8), byte(n)
		if !s.Instructions.onlyApply() {
			return b, fmt.Errorf("openflow: NX flow stats with instructions: %w", ErrUnsupported)
		}
		b, err = AppendActions10(b, s.Instructions.Apply)
	case v >= Version11:
		b = be16(be16(be16(be32(be32(b, s.DurationSec), s.DurationNsec), s.Priority), s.IdleTimeout), s.HardTimeout)
		var flags, importance uint16
		if v >= Version13 {
			flags = s.Flags
		}
		if v >= Version14 {
			importance = s.Importance
		}
		b = zeros(be16(be16(b, flags), importance), 2)
		b = be64(be64(be64(b, s.Cookie), s.PacketCount), s.ByteCount)
		if b, err = appendMatchFor(b, v, &s.Match); err != nil {
			return b, err
		}
		b, err = appendInstructionsFor(b, v, &s.Instructions)
	default:
		if b, err = appendMatch10(b, &s.Match); err != nil {
			return b, err
		}
		b = be16(be16(be16(be32(be32(b, s.DurationSec), s.DurationNsec), s.Priority), s.IdleTimeout), s.HardTimeout)
		b = be64(be64(be64(zeros(b, 6), s.Cookie), s.PacketCount), s.ByteCount)
		if !s.Instructions.onlyApply() {
			return b, fmt.Errorf("openflow: 1.0 flow stats with instructions: %w", ErrUnsupported)
		}
		b, err = AppendActions10(b, s.Instructions.Apply)
	}
	if err != nil {
		return b, err
	}
	return b, putLen16(b, at, at)
}

// AggregateStatsReply answers an AggregateStatsRequest.
type AggregateStatsReply struct {
	Envelope
	Flags       uint16
	NXM         bool
	PacketCount uint64
	ByteCount   uint64
	FlowCount   uint32
}

func (m *AggregateStatsReply) Append(b []byte) ([]byte, error) {
	nx := m.NXM && m.Version == Version10
	b, start, err := statsHeader(b, &m.Envelope, true, StatsAggregate, m.Flags, nx, NXSTAggregate)
	if err != nil {
		return b, err
	}
	if m.Version >= Version15 {
		st := oxsStats{packets: m.PacketCount, bytes: m.ByteCount, flowCount: m.FlowCount}
		st.set(OXSPacketCount)
		st.set(OXSByteCount)
		st.set(OXSFlowCount)
		return finish(appendOXS(b, &st), start)
	}
	return finish(zeros(be32(be64(be64(b, m.PacketCount), m.ByteCount), m.FlowCount), 4), start)
}

// TableStatsRequest asks for per-table statistics.
type TableStatsRequest struct {
	Envelope
	Flags uint16
}

func (m *TableStatsRequest) Append(b []byte) ([]byte, error) {
	b, start, err := statsHeader(b, &m.Envelope, false, StatsTable, m.Flags, false, 0)
	if err != nil {
		return b, err
	}
	return finish(b, start)
}

// TableStats is one table's statistics. Name, Wildcards and MaxEntries
// exist only in 1.0 (1.3 moved them to table features).
type TableStats struct {
	TableID      uint8
	Name         string
	Wildcards    uint32
	MaxEntries   uint32
	ActiveCount  uint32
	LookupCount  uint64
	MatchedCount uint64
	V11          TableStats11 // 1.1 and 1.2 only
}

// TableStatsReply lists table statistics.
type TableStatsReply struct {
	Envelope
	Flags uint16
	Stats []TableStats
}

func decodeTableStatsReply(env Envelope, flags uint16, b []byte) (Msg, error) {
	n := tableStats10Len
	if env.Version >= Version13 {
		n = tableStats13Len
	}
	if len(b)%n != 0 {
		return nil, errOf(env.Version, kBadLen, "table stats of %d bytes, not a multiple of %d", len(b), n)
	}
	m := &TableStatsReply{Envelope: env, Flags: flags, Stats: make([]TableStats, 0, len(b)/n)}
	for ; len(b) > 0; b = b[n:] {
		var s TableStats
		s.TableID = b[0]
		if env.Version >= Version13 {
			s.ActiveCount, s.LookupCount, s.MatchedCount = u32(b[4:]), u64(b[8:]), u64(b[16:])
		} else {
			s.Name, s.Wildcards, s.MaxEntries = cstring(b[4:36]), u32(b[36:]), u32(b[40:])
			s.ActiveCount, s.LookupCount, s.MatchedCount = u32(b[44:]), u64(b[48:]), u64(b[56:])
		}
		m.Stats = append(m.Stats, s)
	}
	return m, nil
}

func (m *TableStatsReply) body() replyBody {
	return replyBody{env: &m.Envelope, typ: StatsTable, flags: m.Flags, n: len(m.Stats),
		entry: func(b []byte, i int) ([]byte, error) {
			s := &m.Stats[i]
			if m.Version == Version11 || m.Version == Version12 {
				return appendTableStats11(b, m.Version, s), nil
			}
			b = zeros(append(b, s.TableID), 3)
			if m.Version >= Version13 {
				return be64(be64(be32(b, s.ActiveCount), s.LookupCount), s.MatchedCount), nil
			}
			b = be32(be32(be32(appendCString(b, s.Name, 32), s.Wildcards), s.MaxEntries), s.ActiveCount)
			return be64(be64(b, s.LookupCount), s.MatchedCount), nil
		}}
}

func (m *TableStatsReply) Append(b []byte) ([]byte, error) { return appendReply(b, m.body(), 0, false) }

// AppendParts splits the reply as FlowStatsReply.AppendParts does.
func (m *TableStatsReply) AppendParts(b []byte, maxLen int) ([]byte, error) {
	return appendReply(b, m.body(), maxLen, true)
}

// PortStatsRequest asks for one port's counters, or all ports' with
// PortAny (1.0 OFPP_NONE).
type PortStatsRequest struct {
	Envelope
	Flags  uint16
	PortNo uint32
}

func appendPortNo(b []byte, v uint8, p uint32) ([]byte, error) {
	if v >= Version11 {
		return be32(b, p), nil
	}
	n, ok := Port32To10(p)
	if !ok {
		return b, fmt.Errorf("openflow: port %d in OpenFlow 1.0: %w", p, ErrUnsupported)
	}
	return be16(b, n), nil
}

func (m *PortStatsRequest) Append(b []byte) ([]byte, error) {
	b, start, err := statsHeader(b, &m.Envelope, false, StatsPort, m.Flags, false, 0)
	if err != nil {
		return b, err
	}
	at := len(b)
	if b, err = appendPortNo(b, m.Version, m.PortNo); err != nil {
		return b[:start], err
	}
	return finish(zeros(b, 8-(len(b)-at)), start)
}

// PortStats is one port's counters. DurationSec/Nsec exist only in 1.3.
// OpenFlow uses all-ones for a counter the switch does not keep.
type PortStats struct {
	PortNo       uint32
	RxPackets    uint64
	TxPackets    uint64
	RxBytes      uint64
	TxBytes      uint64
	RxDropped    uint64
	TxDropped    uint64
	RxErrors     uint64
	TxErrors     uint64
	RxFrameErr   uint64
	RxOverErr    uint64
	RxCRCErr     uint64
	Collisions   uint64
	DurationSec  uint32
	DurationNsec uint32
}

// PortStatsReply lists port counters.
type PortStatsReply struct {
	Envelope
	Flags uint16
	Stats []PortStats
}

func decodePortStatsReply(env Envelope, flags uint16, b []byte) (Msg, error) {
	if env.Version >= Version14 {
		return decodePortStatsReply14(env, flags, b)
	}
	n := portStats10Len
	if env.Version >= Version13 {
		n = portStats13Len
	}
	if len(b)%n != 0 {
		return nil, errOf(env.Version, kBadLen, "port stats of %d bytes, not a multiple of %d", len(b), n)
	}
	m := &PortStatsReply{Envelope: env, Flags: flags, Stats: make([]PortStats, 0, len(b)/n)}
	for ; len(b) > 0; b = b[n:] {
		s := PortStats{PortNo: portAt(env.Version, b)}
		c := b[8:]
		for i, p := range s.counters() {
			*p = u64(c[8*i:])
		}
		if env.Version >= Version13 {
			s.DurationSec, s.DurationNsec = u32(b[104:]), u32(b[108:])
		}
		m.Stats = append(m.Stats, s)
	}
	return m, nil
}

// counters returns the twelve counters in wire order.
func (s *PortStats) counters() [12]*uint64 {
	return [12]*uint64{&s.RxPackets, &s.TxPackets, &s.RxBytes, &s.TxBytes, &s.RxDropped, &s.TxDropped,
		&s.RxErrors, &s.TxErrors, &s.RxFrameErr, &s.RxOverErr, &s.RxCRCErr, &s.Collisions}
}

func (m *PortStatsReply) body() replyBody {
	return replyBody{env: &m.Envelope, typ: StatsPort, flags: m.Flags, n: len(m.Stats),
		entry: func(b []byte, i int) ([]byte, error) {
			s := &m.Stats[i]
			if m.Version >= Version14 {
				return appendPortStats14(b, s), nil
			}
			at := len(b)
			b, err := appendPortNo(b, m.Version, s.PortNo)
			if err != nil {
				return b, err
			}
			b = zeros(b, 8-(len(b)-at))
			for _, p := range s.counters() {
				b = be64(b, *p)
			}
			if m.Version >= Version13 {
				b = be32(be32(b, s.DurationSec), s.DurationNsec)
			}
			return b, nil
		}}
}

func (m *PortStatsReply) Append(b []byte) ([]byte, error) { return appendReply(b, m.body(), 0, false) }

// AppendParts splits the reply as FlowStatsReply.AppendParts does.
func (m *PortStatsReply) AppendParts(b []byte, maxLen int) ([]byte, error) {
	return appendReply(b, m.body(), maxLen, true)
}

// QueueStatsRequest asks for queue counters (PortAny / QueueAll = all).
type QueueStatsRequest struct {
	Envelope
	Flags   uint16
	PortNo  uint32
	QueueID uint32
}

func (m *QueueStatsRequest) Append(b []byte) ([]byte, error) {
	b, start, err := statsHeader(b, &m.Envelope, false, StatsQueue, m.Flags, false, 0)
	if err != nil {
		return b, err
	}
	at := len(b)
	if b, err = appendPortNo(b, m.Version, m.PortNo); err != nil {
		return b[:start], err
	}
	return finish(be32(zeros(b, 4-(len(b)-at)), m.QueueID), start)
}

// QueueStats is one queue's counters; durations exist only in 1.3.
type QueueStats struct {
	PortNo       uint32
	QueueID      uint32
	TxBytes      uint64
	TxPackets    uint64
	TxErrors     uint64
	DurationSec  uint32
	DurationNsec uint32
}

// QueueStatsReply lists queue counters.
type QueueStatsReply struct {
	Envelope
	Flags uint16
	Stats []QueueStats
}

func decodeQueueStatsReply(env Envelope, flags uint16, b []byte) (Msg, error) {
	if env.Version >= Version14 {
		return decodeQueueStatsReply14(env, flags, b)
	}
	n := queueStats10Len
	if env.Version >= Version13 {
		n = queueStats13Len
	}
	if len(b)%n != 0 {
		return nil, errOf(env.Version, kBadLen, "queue stats of %d bytes, not a multiple of %d", len(b), n)
	}
	m := &QueueStatsReply{Envelope: env, Flags: flags, Stats: make([]QueueStats, 0, len(b)/n)}
	for ; len(b) > 0; b = b[n:] {
		s := QueueStats{PortNo: portAt(env.Version, b), QueueID: u32(b[4:]),
			TxBytes: u64(b[8:]), TxPackets: u64(b[16:]), TxErrors: u64(b[24:])}
		if env.Version >= Version13 {
			s.DurationSec, s.DurationNsec = u32(b[32:]), u32(b[36:])
		}
		m.Stats = append(m.Stats, s)
	}
	return m, nil
}

func (m *QueueStatsReply) body() replyBody {
	return replyBody{env: &m.Envelope, typ: StatsQueue, flags: m.Flags, n: len(m.Stats),
		entry: func(b []byte, i int) ([]byte, error) {
			s := &m.Stats[i]
			if m.Version >= Version14 {
				b = zeros(be16(b, queueStats14Len), 6)
			}
			at := len(b)
			b, err := appendPortNo(b, m.Version, s.PortNo)
			if err != nil {
				return b, err
			}
			b = be32(zeros(b, 4-(len(b)-at)), s.QueueID)
			b = be64(be64(be64(b, s.TxBytes), s.TxPackets), s.TxErrors)
			if m.Version >= Version13 {
				b = be32(be32(b, s.DurationSec), s.DurationNsec)
			}
			return b, nil
		}}
}

func (m *QueueStatsReply) Append(b []byte) ([]byte, error) { return appendReply(b, m.body(), 0, false) }

// AppendParts splits the reply as FlowStatsReply.AppendParts does.
func (m *QueueStatsReply) AppendParts(b []byte, maxLen int) ([]byte, error) {
	return appendReply(b, m.body(), maxLen, true)
}

// PortDescRequest asks for the port list (OFPMP_PORT_DESC; in 1.0 the OVS
// extension stats type 13, which ovs-ofctl uses only when the features
// reply could not hold every port).
//
// PortNo (1.5+) asks for one port; PortAny for all. Earlier versions
// always ask for all and decode as PortAny.
type PortDescRequest struct {
	Envelope
	Flags  uint16
	PortNo uint32
}

func (m *PortDescRequest) Append(b []byte) ([]byte, error) {
	b, start, err := statsHeader(b, &m.Envelope, false, StatsPortDesc, m.Flags, false, 0)
	if err != nil {
		return b, err
	}
	if m.Version >= Version15 {
		b = zeros(be32(b, m.PortNo), 4)
	}
	return finish(b, start)
}

// PortDescReply lists ports.
type PortDescReply struct {
	Envelope
	Flags uint16
	Ports []Port
}

func (m *PortDescReply) body() replyBody {
	return replyBody{env: &m.Envelope, typ: StatsPortDesc, flags: m.Flags, n: len(m.Ports),
		entry: func(b []byte, i int) ([]byte, error) { return appendPort(b, m.Version, &m.Ports[i]) }}
}

func (m *PortDescReply) Append(b []byte) ([]byte, error) { return appendReply(b, m.body(), 0, false) }

// AppendParts splits the reply as FlowStatsReply.AppendParts does.
func (m *PortDescReply) AppendParts(b []byte, maxLen int) ([]byte, error) {
	return appendReply(b, m.body(), maxLen, true)
}

// replyBody is a stats reply seen as a header and a run of entries, so
// one encoder can split it into parts.
type replyBody struct {
	env   *Envelope
	typ   uint16
	flags uint16
	nx    bool
	sub   uint32
	n     int
	entry func(b []byte, i int) ([]byte, error)
}

// appendReply encodes r as one message, or with split as several of at
// most maxLen bytes (0: 65535), each but the last flagged StatsReplyMore.
// An entry that alone overflows a part fails with ErrTooLong.
func appendReply(b []byte, r replyBody, maxLen int, split bool) ([]byte, error) {
	if maxLen <= 0 || maxLen > MaxMessageLen {
		maxLen = MaxMessageLen
	}
	first := len(b)
	b, start, err := statsHeader(b, r.env, true, r.typ, r.flags, r.nx, r.sub)
	if err != nil {
		return b, err
	}
	inPart := 0
	for i := 0; i < r.n; i++ {
		at := len(b)
		if b, err = r.entry(b, i); err != nil {
			return b[:first], err
		}
		if len(b)-start <= maxLen {
			inPart++
			continue
		}
		if !split || inPart == 0 {
			return b[:first], fmt.Errorf("openflow: stats reply entry %d does not fit %d bytes: %w", i, maxLen, ErrTooLong)
		}
		// Close this part without entry i and encode it again in the next.
		b = b[:at]
		flags := u16(b[start+10:]) | StatsReplyMore
		b[start+10], b[start+11] = byte(flags>>8), byte(flags)
		if b, err = finish(b, start); err != nil {
			return b[:first], err
		}
		b, start, _ = statsHeader(b, r.env, true, r.typ, r.flags, r.nx, r.sub)
		inPart = 0
		i--
	}
	if b, err = finish(b, start); err != nil {
		return b[:first], err
	}
	return b, nil
}
