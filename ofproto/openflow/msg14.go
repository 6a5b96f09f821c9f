package openflow

import "fmt"

// OpenFlow 1.4 and 1.5 wire forms of messages that 1.3 already has: ports
// and port mods carry properties, async config is a property list, and
// 1.5 moved flow statistics into OXS TLVs. The message structs are the
// same for every version; these are their 1.4+ encoders and decoders.

// OpenFlow 1.4 error types (OFPET_*) beyond 1.3's.
const (
	Err14TypeBadProperty       uint16 = 14
	Err14TypeAsyncConfigFailed uint16 = 15
	Err14TypeFlowMonitorFailed uint16 = 16
	Err14TypeBundleFailed      uint16 = 17
)

// OFPET_BAD_PROPERTY codes (OFPBPC_*).
const (
	BadProperty14BadType  uint16 = 0
	BadProperty14BadLen   uint16 = 1
	BadProperty14BadValue uint16 = 2
)

// OFPET_ASYNC_CONFIG_FAILED codes (OFPACFC_*).
const (
	AsyncConfigFailed14Invalid     uint16 = 0
	AsyncConfigFailed14Unsupported uint16 = 1
)

// Property headers are a 16-bit type and a 16-bit length that counts the
// header but not the padding to 8 bytes.
const (
	port14Len       = 40 // ofp14_port without properties
	portPropEthLen  = 32 // OFPPDPT14_ETHERNET
	portStats14Len  = 80 // ofp14_port_stats without properties
	portStatsEthLen = 40 // OFPPSPT14_ETHERNET
	queueStats14Len = 48
)

// props walks a property list: each call of next returns one property's
// type and body (without header and padding). A length that does not fit
// is an OFPBPC_BAD_LEN error in version v.
type props struct {
	v    uint8
	b    []byte
	what string
}

func (p *props) next() (typ uint16, body []byte, ok bool, err error) {
	if len(p.b) == 0 {
		return 0, nil, false, nil
	}
	if len(p.b) < 4 {
		return 0, nil, false, propErr(p.v, BadProperty14BadLen, "%s property: %d bytes", p.what, len(p.b))
	}
	typ, n := u16(p.b), int(u16(p.b[2:]))
	padded := (n + 7) &^ 7
	if n < 4 || n > len(p.b) {
		return 0, nil, false, propErr(p.v, BadProperty14BadLen, "%s property length %d in %d bytes", p.what, n, len(p.b))
	}
	body = p.b[4:n]
	if padded > len(p.b) {
		padded = len(p.b)
	}
	p.b = p.b[padded:]
	return typ, body, true, nil
}

// ethernet walks the properties to their end and returns the body of the
// last Ethernet property (type 0) past its 4 bytes of padding, nil if
// there is none. An Ethernet property that is not propLen bytes long is
// refused; other properties are skipped.
func (p *props) ethernet(propLen int) ([]byte, error) {
	var eth []byte
	for {
		typ, body, ok, err := p.next()
		if err != nil {
			return nil, err
		}
		if !ok {
			return eth, nil
		}
		if typ != 0 {
			continue
		}
		if len(body) != propLen-4 {
			return nil, propErr(p.v, BadProperty14BadLen, "%s Ethernet property of %d bytes", p.what, len(body)+4)
		}
		eth = body[4:]
	}
}

func propErr(v uint8, code uint16, format string, args ...any) *Error {
	cat := ErrUnsupported
	if code == BadProperty14BadLen {
		cat = ErrBadLength
	}
	return &Error{Version: v, Type: Err14TypeBadProperty, Code: code, Err: cat, Detail: fmt.Sprintf(format, args...)}
}

// decodePorts14 reads a run of ofp14_port entries. Properties other than
// Ethernet are skipped, as a peer may describe optical ports we do not
// model.
func decodePorts14(v uint8, b []byte) ([]Port, error) {
	var ports []Port
	for len(b) > 0 {
		if len(b) < port14Len {
			return nil, badLen(v, "port", len(b), port14Len)
		}
		n := int(u16(b[4:]))
		if n < port14Len || n > len(b) || n%8 != 0 {
			return nil, errOf(v, kBadLen, "port length %d in %d bytes", n, len(b))
		}
		e := b[:n]
		b = b[n:]
		p := Port{PortNo: u32(e), Name: cstring(e[16:32]), Config: u32(e[32:]), State: u32(e[36:])}
		copy(p.HWAddr[:], e[8:14])
		pp := props{v: v, b: e[port14Len:], what: "port"}
		body, err := pp.ethernet(portPropEthLen)
		if err != nil {
			return nil, err
		}
		if body != nil {
			p.Curr, p.Advertised, p.Supported, p.Peer = u32(body), u32(body[4:]), u32(body[8:]), u32(body[12:])
			p.CurrSpeed, p.MaxSpeed = u32(body[16:]), u32(body[20:])
		}
		ports = append(ports, p)
	}
	return ports, nil
}

// appendPort14 appends p as an ofp14_port with its Ethernet property.
func appendPort14(b []byte, p *Port) []byte {
	b = be16(be16(be32(b, p.PortNo), port14Len+portPropEthLen), 0)
	b = zeros(append(b, p.HWAddr[:]...), 2)
	b = be32(be32(appendCString(b, p.Name, 16), p.Config), p.State)
	b = zeros(be16(be16(b, 0), portPropEthLen), 4)
	b = be32(be32(be32(be32(b, p.Curr), p.Advertised), p.Supported), p.Peer)
	return be32(be32(b, p.CurrSpeed), p.MaxSpeed)
}

func decodePortMod14(env Envelope, body []byte) (Msg, error) {
	v := env.Version
	if len(body) < 24 {
		return nil, badLen(v, "port mod", len(body), 24)
	}
	m := &PortMod{Envelope: env, PortNo: u32(body), Config: u32(body[16:]), Mask: u32(body[20:])}
	copy(m.HWAddr[:], body[8:14])
	pp := props{v: v, b: body[24:], what: "port mod"}
	for {
		typ, pb, ok, err := pp.next()
		if err != nil {
			return nil, err
		}
		if !ok {
			return m, nil
		}
		if typ != 0 {
			return nil, propErr(v, BadProperty14BadType, "port mod property type %d", typ)
		}
		if len(pb) != 4 {
			return nil, propErr(v, BadProperty14BadLen, "port mod Ethernet property of %d bytes", len(pb)+4)
		}
		m.Advertise = u32(pb)
	}
}

func (m *PortMod) append14(b []byte) ([]byte, error) {
	b, start := begin(b, m.Version, Type13PortMod, m.Xid)
	b = zeros(append(zeros(be32(b, m.PortNo), 4), m.HWAddr[:]...), 2)
	b = be32(be32(b, m.Config), m.Mask)
	// Advertise 0 means "leave it"; ovs-ofctl then sends no Ethernet
	// property, and neither do we.
	if m.Advertise != 0 {
		b = be32(be16(be16(b, 0), 8), m.Advertise)
	}
	return finish(b, start)
}

func decodePortStatsReply14(env Envelope, flags uint16, b []byte) (Msg, error) {
	v := env.Version
	m := &PortStatsReply{Envelope: env, Flags: flags}
	for len(b) > 0 {
		if len(b) < portStats14Len {
			return nil, badLen(v, "port stats", len(b), portStats14Len)
		}
		n := int(u16(b))
		if n < portStats14Len || n > len(b) || n%8 != 0 {
			return nil, errOf(v, kBadLen, "port stats length %d in %d bytes", n, len(b))
		}
		e := b[:n]
		b = b[n:]
		s := PortStats{PortNo: u32(e[4:]), DurationSec: u32(e[8:]), DurationNsec: u32(e[12:])}
		c := s.counters()
		for i := 0; i < 8; i++ {
			*c[i] = u64(e[16+8*i:])
		}
		pp := props{v: v, b: e[portStats14Len:], what: "port stats"}
		body, err := pp.ethernet(portStatsEthLen)
		if err != nil {
			return nil, err
		}
		if body != nil {
			for i := 0; i < 4; i++ {
				*c[8+i] = u64(body[8*i:])
			}
		}
		m.Stats = append(m.Stats, s)
	}
	return m, nil
}

func appendPortStats14(b []byte, s *PortStats) []byte {
	b = be32(be32(be32(be16(be16(b, portStats14Len+portStatsEthLen), 0), s.PortNo), s.DurationSec), s.DurationNsec)
	c := s.counters()
	for i := 0; i < 8; i++ {
		b = be64(b, *c[i])
	}
	b = zeros(be16(be16(b, 0), portStatsEthLen), 4)
	for i := 8; i < 12; i++ {
		b = be64(b, *c[i])
	}
	return b
}

func decodeQueueStatsReply14(env Envelope, flags uint16, b []byte) (Msg, error) {
	v := env.Version
	m := &QueueStatsReply{Envelope: env, Flags: flags}
	for len(b) > 0 {
		if len(b) < queueStats14Len {
			return nil, badLen(v, "queue stats", len(b), queueStats14Len)
		}
		n := int(u16(b))
		if n < queueStats14Len || n > len(b) || n%8 != 0 {
			return nil, errOf(v, kBadLen, "queue stats length %d in %d bytes", n, len(b))
		}
		e := b[8:n]
		b = b[n:]
		m.Stats = append(m.Stats, QueueStats{PortNo: u32(e), QueueID: u32(e[4:]), TxBytes: u64(e[8:]),
			TxPackets: u64(e[16:]), TxErrors: u64(e[24:]), DurationSec: u32(e[32:]), DurationNsec: u32(e[36:])})
	}
	return m, nil
}

// Async config property types (OFPACPT_*): for each message kind the
// slave mask, then the master mask.
const (
	AsyncPropPacketInSlave uint16 = iota
	AsyncPropPacketInMaster
	AsyncPropPortStatusSlave
	AsyncPropPortStatusMaster
	AsyncPropFlowRemovedSlave
	AsyncPropFlowRemovedMaster
	AsyncPropRoleStatusSlave
	AsyncPropRoleStatusMaster
	AsyncPropTableStatusSlave
	AsyncPropTableStatusMaster
	AsyncPropRequestForwardSlave
	AsyncPropRequestForwardMaster
	asyncPropCount
)

// mask returns the AsyncConfig word property type t sets.
func (c *AsyncConfig) mask(t uint16) *uint32 {
	i := 1 - int(t&1) // odd types are master (element 0), even slave (1)
	switch t / 2 {
	case 0:
		return &c.PacketInMask[i]
	case 1:
		return &c.PortStatusMask[i]
	case 2:
		return &c.FlowRemovedMask[i]
	case 3:
		return &c.RoleStatusMask[i]
	case 4:
		return &c.TableStatusMask[i]
	}
	return &c.RequestForwardMask[i]
}

// AsyncPropsAll is SetAsync.Props when every property is present, as in
// every 1.0 and 1.3 set-async.
const AsyncPropsAll uint32 = 1<<asyncPropCount - 1

func decodeAsync14(env Envelope, typ uint8, body []byte) (Msg, error) {
	v := env.Version
	var c AsyncConfig
	var present uint32
	pp := props{v: v, b: body, what: "async config"}
	for {
		t, pb, ok, err := pp.next()
		if err != nil {
			return nil, err
		}
		if !ok {
			break
		}
		if t >= asyncPropCount {
			return nil, &Error{Version: v, Type: Err14TypeAsyncConfigFailed, Code: AsyncConfigFailed14Unsupported,
				Err: ErrUnsupported, Detail: fmt.Sprintf("async config property type %d", t)}
		}
		if len(pb) != 4 {
			return nil, propErr(v, BadProperty14BadLen, "async config property of %d bytes", len(pb)+4)
		}
		*c.mask(t) = u32(pb)
		present |= 1 << t
	}
	if typ == Type13SetAsync {
		return &SetAsync{Envelope: env, AsyncConfig: c, Props: present}, nil
	}
	return &GetAsyncReply{Envelope: env, AsyncConfig: c}, nil
}

// appendAsync14 encodes the properties of c that present selects, in
// type order.
func appendAsync14(b []byte, e *Envelope, typ uint8, c *AsyncConfig, present uint32) ([]byte, error) {
	b, start := begin(b, e.Version, typ, e.Xid)
	for t := uint16(0); t < asyncPropCount; t++ {
		if present&(1<<t) != 0 {
			b = be32(be16(be16(b, t), 8), *c.mask(t))
		}
	}
	return finish(b, start)
}

// Role status reasons (OFPCRR_*).
const (
	RoleReasonMasterRequest uint8 = 0
	RoleReasonConfig        uint8 = 1
	RoleReasonExperimenter  uint8 = 2
)

// RoleStatus is OFPT_ROLE_STATUS (1.4+), or ONFT_ROLE_STATUS (the ONF
// extension, experimenter type 1911) in 1.3: the switch tells a controller
// its role changed, e.g. to slave because another asked to be master.
type RoleStatus struct {
	Envelope
	Role         uint32
	Reason       uint8
	GenerationID uint64
}

func decodeRoleStatus(env Envelope, body []byte) (Msg, error) {
	if len(body) < 16 {
		return nil, badLen(env.Version, "role status", len(body), 16)
	}
	return &RoleStatus{Envelope: env, Role: u32(body), Reason: body[4], GenerationID: u64(body[8:])}, nil
}

func (m *RoleStatus) Append(b []byte) ([]byte, error) {
	if m.Version < Version13 || !SupportedVersion(m.Version) {
		return b, fmt.Errorf("openflow: role status needs OpenFlow 1.3 or later: %w", ErrUnsupported)
	}
	var start int
	if m.Version == Version13 {
		b, start = begin(b, m.Version, TypeVendor, m.Xid)
		b = be32(be32(b, ONFVendorID), ONFTRoleStatus)
	} else {
		b, start = begin(b, m.Version, Type14RoleStatus, m.Xid)
	}
	b = be64(zeros(append(be32(b, m.Role), m.Reason), 3), m.GenerationID)
	return finish(b, start)
}

// OXS (OpenFlow 1.5 statistics TLVs): class OFPXSC_OPENFLOW_BASIC, a
// 7-bit field and an 8-bit payload length in a 32-bit header.
const (
	oxsClassBasic  = 0x8002
	OXSDuration    = 0
	OXSIdleTime    = 1
	OXSFlowCount   = 3
	OXSPacketCount = 4
	OXSByteCount   = 5
)

func oxsHeader(field uint8, n int) uint32 { return oxsClassBasic<<16 | uint32(field)<<9 | uint32(n) }

// oxsStats is the content of one ofp_oxs_stat; has bit n set means field
// n is present.
type oxsStats struct {
	has             uint8
	durSec, durNsec uint32
	idle            uint32 // seconds
	packets, bytes  uint64
	flowCount       uint32
	idleFrac        uint32 // kept only to re-encode exactly
}

func (s *oxsStats) set(f uint8) { s.has |= 1 << f }

// appendOXS appends s as an ofp_oxs_stat padded to 8 bytes, fields in
// ascending field order except flow_count last, as OVS writes them.
func appendOXS(b []byte, s *oxsStats) []byte {
	at := len(b)
	b = zeros(b, 4)
	if s.has&(1<<OXSDuration) != 0 {
		b = be32(be32(be32(b, oxsHeader(OXSDuration, 8)), s.durSec), s.durNsec)
	}
	if s.has&(1<<OXSIdleTime) != 0 {
		b = be32(be32(be32(b, oxsHeader(OXSIdleTime, 8)), s.idle), s.idleFrac)
	}
	if s.has&(1<<OXSPacketCount) != 0 {
		b = be64(be32(b, oxsHeader(OXSPacketCount, 8)), s.packets)
	}
	if s.has&(1<<OXSByteCount) != 0 {
		b = be64(be32(b, oxsHeader(OXSByteCount, 8)), s.bytes)
	}
	if s.has&(1<<OXSFlowCount) != 0 {
		b = be32(be32(b, oxsHeader(OXSFlowCount, 4)), s.flowCount)
	}
	n := len(b) - at
	b[at+2], b[at+3] = byte(n>>8), byte(n)
	return pad8(b, at)
}

// decodeOXS reads an ofp_oxs_stat at the start of b and returns it and
// its padded length. Unknown fields (and experimenter ones) are skipped.
func decodeOXS(v uint8, b []byte) (oxsStats, int, error) {
	var s oxsStats
	if len(b) < 4 {
		return s, 0, errOf(v, kMatchBadLen, "OXS stats: %d bytes", len(b))
	}
	n := int(u16(b[2:]))
	padded := (n + 7) &^ 7
	if n < 4 || padded > len(b) {
		return s, 0, errOf(v, kMatchBadLen, "OXS stats length %d in %d bytes", n, len(b))
	}
	for p := b[4:n]; len(p) > 0; {
		if len(p) < 4 {
			return s, 0, errOf(v, kMatchBadLen, "OXS entry: %d bytes", len(p))
		}
		h := u32(p)
		class, field, l := h>>16, uint8(h>>9&0x7f), int(h&0xff)
		hl := 4
		if class == 0xffff {
			hl = 8
			if l < 4 {
				return s, 0, errOf(v, kMatchBadLen, "OXS experimenter entry length %d", l)
			}
			l -= 4
		}
		if hl+l > len(p) {
			return s, 0, errOf(v, kMatchBadLen, "OXS entry length %d in %d bytes", l, len(p))
		}
		val := p[hl : hl+l]
		p = p[hl+l:]
		if class != oxsClassBasic {
			continue
		}
		switch {
		case field == OXSDuration && l == 8:
			s.durSec, s.durNsec = u32(val), u32(val[4:])
		case field == OXSIdleTime && l == 8:
			s.idle, s.idleFrac = u32(val), u32(val[4:])
		case field == OXSPacketCount && l == 8:
			s.packets = u64(val)
		case field == OXSByteCount && l == 8:
			s.bytes = u64(val)
		case field == OXSFlowCount && l == 4:
			s.flowCount = u32(val)
		default:
			continue
		}
		s.set(field)
	}
	return s, padded, nil
}

// flowStats15Len is ofp15_flow_desc without match, stats and instructions.
const flowStats15Len = 24

func decodeFlowStats15(v uint8, e []byte, s *FlowStats) error {
	s.TableID, s.Priority = e[4], u16(e[6:])
	s.IdleTimeout, s.HardTimeout, s.Flags, s.Importance = u16(e[8:]), u16(e[10:]), u16(e[12:]), u16(e[14:])
	s.Cookie = u64(e[16:])
	mn, err := DecodeOXM(e[flowStats15Len:], &s.Match)
	if err != nil {
		return err
	}
	st, sn, err := decodeOXS(v, e[flowStats15Len+mn:])
	if err != nil {
		return err
	}
	s.DurationSec, s.DurationNsec, s.PacketCount, s.ByteCount = st.durSec, st.durNsec, st.packets, st.bytes
	if st.has&(1<<OXSIdleTime) != 0 {
		s.IdleAge = uint16(min(st.idle, 0xfffe)) + 1
	}
	return decodeInstructionsV(v, e[flowStats15Len+mn+sn:], &s.Instructions)
}

func appendFlowStats15(b []byte, v uint8, s *FlowStats) ([]byte, error) {
	at := len(b)
	b = append(zeros(b, 4), s.TableID, 0)
	b = be16(be16(be16(be16(be16(b, s.Priority), s.IdleTimeout), s.HardTimeout), s.Flags), s.Importance)
	b = be64(b, s.Cookie)
	var err error
	if b, err = AppendOXMV(b, v, &s.Match); err != nil {
		return b, err
	}
	st := oxsStats{durSec: s.DurationSec, durNsec: s.DurationNsec, packets: s.PacketCount, bytes: s.ByteCount}
	st.set(OXSDuration)
	if s.IdleAge != 0 {
		st.idle = uint32(s.IdleAge - 1)
		st.set(OXSIdleTime)
	}
	st.set(OXSPacketCount)
	st.set(OXSByteCount)
	b = appendOXS(b, &st)
	if b, err = appendInstructionsV(b, Version15, &s.Instructions); err != nil {
		return b, err
	}
	return b, putLen16(b, at, at)
}
