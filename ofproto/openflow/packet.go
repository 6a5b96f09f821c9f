package openflow

import (
	"fmt"

	"github.com/govswitch/govswitch/flow"
)

// Packet-in reasons (OFPR_*).
const (
	PacketInNoMatch    uint8 = 0
	PacketInAction     uint8 = 1
	PacketInInvalidTTL uint8 = 2
)

// PacketIn is OFPT_PACKET_IN, and NXT_PACKET_IN when NXM is set (any
// version, as NXT_SET_PACKET_IN_FORMAT asks).
//
// In 1.0 the input port is InPort. In 1.3 and NXT_PACKET_IN the pipeline
// fields travel in Match (put in_port there, Key.InPort with a full mask);
// decoding copies Match's in_port into InPort for convenience and encoding
// ignores InPort. TableID and Cookie do not exist in plain 1.0.
type PacketIn struct {
	Envelope
	NXM      bool
	BufferID uint32
	TotalLen uint16
	InPort   uint32
	Reason   uint8
	TableID  uint8
	Cookie   uint64
	Match    Match
	Data     []byte
}

func decodePacketIn10(env Envelope, body []byte) (Msg, error) {
	if len(body) < 10 {
		return nil, badLen(env.Version, "packet in", len(body), 10)
	}
	return &PacketIn{Envelope: env, BufferID: u32(body), TotalLen: u16(body[4:]),
		InPort: Port10To32(u16(body[6:])), Reason: body[8], Data: body[10:]}, nil
}

func decodePacketIn13(env Envelope, body []byte) (Msg, error) {
	if len(body) < 16 {
		return nil, badLen(env.Version, "packet in", len(body), 16)
	}
	m := &PacketIn{Envelope: env, BufferID: u32(body), TotalLen: u16(body[4:]), Reason: body[6],
		TableID: body[7], Cookie: u64(body[8:])}
	n, err := DecodeOXM(body[16:], &m.Match)
	if err != nil {
		return nil, err
	}
	rest := body[16+n:]
	if len(rest) < 2 {
		return nil, badLen(env.Version, "packet in padding", len(rest), 2)
	}
	m.Data = rest[2:]
	m.InPort = m.Match.Key.InPort
	return m, nil
}

func decodeNXPacketIn(env Envelope, body []byte) (Msg, error) {
	if len(body) < 24 {
		return nil, badLen(env.Version, "NXT_PACKET_IN", len(body), 24)
	}
	m := &PacketIn{Envelope: env, NXM: true, BufferID: u32(body), TotalLen: u16(body[4:]), Reason: body[6],
		TableID: body[7], Cookie: u64(body[8:])}
	rest, err := nxmAt(env.Version, body[24:], int(u16(body[16:])), &m.Match)
	if err != nil {
		return nil, err
	}
	if len(rest) < 2 {
		return nil, badLen(env.Version, "packet in padding", len(rest), 2)
	}
	m.Data = rest[2:]
	m.InPort = m.Match.Key.InPort
	return m, nil
}

func (m *PacketIn) Append(b []byte) ([]byte, error) {
	if err := checkVersion(m.Version); err != nil {
		return b, err
	}
	var err error
	switch {
	case m.NXM:
		b, start, _ := appendNXHeader(b, &m.Envelope, NXTPacketIn)
		b = append(be16(be32(b, m.BufferID), m.TotalLen), m.Reason, m.TableID)
		b = be64(b, m.Cookie)
		lenAt := len(b)
		b = zeros(b, 8)
		var n int
		if b, n, err = appendNXMPadded(b, &m.Match); err != nil {
			return b[:start], err
		}
		b[lenAt], b[lenAt+1] = byte(n>>8), byte(n)
		b = append(append(b, 0, 0), m.Data...)
		return finish(b, start)
	case m.Version == Version11 || m.Version == Version12:
		return m.append11(b)
	case m.Version >= Version13:
		b, start := begin(b, m.Version, TypePacketIn, m.Xid)
		b = append(be16(be32(b, m.BufferID), m.TotalLen), m.Reason, m.TableID)
		b = be64(b, m.Cookie)
		if b, err = AppendOXMV(b, m.Version, &m.Match); err != nil {
			return b[:start], err
		}
		b = append(append(b, 0, 0), m.Data...)
		return finish(b, start)
	}
	p, ok := Port32To10(m.InPort)
	if !ok {
		return b, fmt.Errorf("openflow: in_port %d in OpenFlow 1.0: %w", m.InPort, ErrUnsupported)
	}
	b, start := begin(b, m.Version, TypePacketIn, m.Xid)
	b = be16(be16(be32(b, m.BufferID), m.TotalLen), p)
	b = append(append(b, m.Reason, 0), m.Data...)
	return finish(b, start)
}

// PacketOut is OFPT_PACKET_OUT. Data is the packet when BufferID is
// NoBuffer. InPort uses 32-bit numbering (PortController, PortLocal or
// PortAny for "none" are common).
type PacketOut struct {
	Envelope
	BufferID uint32
	InPort   uint32
	// Pipeline holds the pipeline fields other than in_port that a 1.5
	// packet-out's match starts the packet with: the registers (carried
	// as xregs) and metadata. Other versions have no room for them
	// (ovs-ofctl drops them there), so encoders below 1.5 ignore it.
	Pipeline Match
	Actions  []Action
	Data     []byte
}

// packetOutPipeline is the Mask of the fields a 1.5 packet-out's match may
// set besides in_port.
var packetOutPipeline = func() flow.Mask {
	var m flow.Mask
	for i := range m.Regs {
		m.Regs[i] = ^uint32(0)
	}
	m.OFMetadata = ^uint64(0)
	return m
}()

func decodePacketOut(env Envelope, body []byte) (Msg, error) {
	v := env.Version
	if v >= Version15 {
		return decodePacketOut15(env, body)
	}
	m := &PacketOut{Envelope: env}
	var alen, fixed int
	if v >= Version11 {
		if len(body) < 16 {
			return nil, badLen(v, "packet out", len(body), 16)
		}
		m.BufferID, m.InPort, alen, fixed = u32(body), u32(body[4:]), int(u16(body[8:])), 16
	} else {
		if len(body) < 8 {
			return nil, badLen(v, "packet out", len(body), 8)
		}
		m.BufferID, m.InPort, alen, fixed = u32(body), Port10To32(u16(body[4:])), int(u16(body[6:])), 8
	}
	if fixed+alen > len(body) {
		return nil, errOf(v, kBadLen, "packet out actions_len %d in %d bytes", alen, len(body)-fixed)
	}
	acts := body[fixed : fixed+alen]
	var err error
	m.Actions, err = decodeActionsFor(v, make([]Action, 0, alen/8), acts)
	if err != nil {
		return nil, err
	}
	m.Data = body[fixed+alen:]
	return m, nil
}

func (m *PacketOut) Append(b []byte) ([]byte, error) {
	if err := checkVersion(m.Version); err != nil {
		return b, err
	}
	if m.Version >= Version15 {
		return m.append15(b)
	}
	b, start := begin(b, m.Version, TypePacketOut, m.Xid)
	b = be32(b, m.BufferID)
	var lenAt int
	if m.Version >= Version11 {
		b = be32(b, m.InPort)
		lenAt = len(b)
		b = zeros(b, 8)
	} else {
		p, ok := Port32To10(m.InPort)
		if !ok {
			return b[:start], fmt.Errorf("openflow: in_port %d in OpenFlow 1.0: %w", m.InPort, ErrUnsupported)
		}
		b = be16(b, p)
		lenAt = len(b)
		b = zeros(b, 2)
	}
	return m.appendActionsData(b, start, lenAt)
}

// appendActionsData ends a packet-out that begins at start: it appends
// the actions and data and fills in actions_len, the 16 bits at lenAt.
func (m *PacketOut) appendActionsData(b []byte, start, lenAt int) ([]byte, error) {
	at := len(b)
	b, err := appendActionsFor(b, m.Version, m.Actions)
	if err == nil {
		err = putLen16(b, lenAt, at)
	}
	if err != nil {
		return b[:start], err
	}
	return finish(append(b, m.Data...), start)
}

// Flow removed reasons (OFPRR_*).
const (
	FlowRemovedIdleTimeout uint8 = 0
	FlowRemovedHardTimeout uint8 = 1
	FlowRemovedDelete      uint8 = 2
	FlowRemovedGroupDelete uint8 = 3
)

// FlowRemoved is OFPT_FLOW_REMOVED, and NXT_FLOW_REMOVED when NXM is set
// (1.0 only). HardTimeout and TableID do not exist in plain 1.0.
type FlowRemoved struct {
	Envelope
	NXM          bool
	Match        Match
	Cookie       uint64
	Priority     uint16
	Reason       uint8
	TableID      uint8
	DurationSec  uint32
	DurationNsec uint32
	IdleTimeout  uint16
	HardTimeout  uint16
	PacketCount  uint64
	ByteCount    uint64
}

func decodeFlowRemoved10(env Envelope, body []byte) (Msg, error) {
	if len(body) != 80 {
		return nil, badLen(env.Version, "flow removed", len(body), 80)
	}
	m := &FlowRemoved{Envelope: env}
	decodeMatch10(body, &m.Match)
	m.Cookie, m.Priority, m.Reason = u64(body[40:]), u16(body[48:]), body[50]
	m.DurationSec, m.DurationNsec, m.IdleTimeout = u32(body[52:]), u32(body[56:]), u16(body[60:])
	m.PacketCount, m.ByteCount = u64(body[64:]), u64(body[72:])
	return m, nil
}

func decodeFlowRemoved13(env Envelope, body []byte) (Msg, error) {
	if len(body) < 40 {
		return nil, badLen(env.Version, "flow removed", len(body), 40)
	}
	m := &FlowRemoved{Envelope: env}
	m.Cookie, m.Priority, m.Reason, m.TableID = u64(body), u16(body[8:]), body[10], body[11]
	m.DurationSec, m.DurationNsec = u32(body[12:]), u32(body[16:])
	m.IdleTimeout, m.HardTimeout = u16(body[20:]), u16(body[22:])
	m.PacketCount, m.ByteCount = u64(body[24:]), u64(body[32:])
	n, err := DecodeOXM(body[40:], &m.Match)
	if err != nil {
		return nil, err
	}
	if 40+n != len(body) {
		return nil, badLen(env.Version, "flow removed", len(body), 40+n)
	}
	return m, nil
}

func (m *FlowRemoved) Append(b []byte) ([]byte, error) {
	if err := checkVersion(m.Version); err != nil {
		return b, err
	}
	var err error
	switch {
	case m.Version >= Version15:
		b, start := begin(b, m.Version, TypeFlowRemoved, m.Xid)
		b = append(b, m.TableID, m.Reason)
		b = be64(be16(be16(be16(b, m.Priority), m.IdleTimeout), m.HardTimeout), m.Cookie)
		if b, err = AppendOXMV(b, m.Version, &m.Match); err != nil {
			return b[:start], err
		}
		st := oxsStats{durSec: m.DurationSec, durNsec: m.DurationNsec, packets: m.PacketCount, bytes: m.ByteCount}
		st.set(OXSDuration)
		st.set(OXSPacketCount)
		st.set(OXSByteCount)
		return finish(appendOXS(b, &st), start)
	case m.Version == Version11:
		return m.append11(b)
	case m.Version >= Version12:
		b, start := begin(b, m.Version, TypeFlowRemoved, m.Xid)
		b = append(be16(be64(b, m.Cookie), m.Priority), m.Reason, m.TableID)
		b = be16(be16(be32(be32(b, m.DurationSec), m.DurationNsec), m.IdleTimeout), m.HardTimeout)
		b = be64(be64(b, m.PacketCount), m.ByteCount)
		if b, err = AppendOXMV(b, m.Version, &m.Match); err != nil {
			return b[:start], err
		}
		return finish(b, start)
	case m.NXM:
		b, start, _ := appendNXHeader(b, &m.Envelope, NXTFlowRemoved)
		b = append(be16(be64(b, m.Cookie), m.Priority), m.Reason, m.TableID)
		b = be16(be32(be32(b, m.DurationSec), m.DurationNsec), m.IdleTimeout)
		lenAt := len(b)
		b = be64(be64(zeros(b, 2), m.PacketCount), m.ByteCount)
		var n int
		if b, n, err = appendNXMPadded(b, &m.Match); err != nil {
			return b[:start], err
		}
		b[lenAt], b[lenAt+1] = byte(n>>8), byte(n)
		return finish(b, start)
	}
	b, start := begin(b, m.Version, TypeFlowRemoved, m.Xid)
	if b, err = appendMatch10(b, &m.Match); err != nil {
		return b[:start], err
	}
	b = append(be16(be64(b, m.Cookie), m.Priority), m.Reason, 0)
	b = zeros(be16(be32(be32(b, m.DurationSec), m.DurationNsec), m.IdleTimeout), 2)
	return finish(be64(be64(b, m.PacketCount), m.ByteCount), start)
}

// decodeNXFlowRemoved parses NXT_FLOW_REMOVED after the subtype.
func decodeNXFlowRemoved(env Envelope, body []byte) (Msg, error) {
	if len(body) < 40 {
		return nil, badLen(env.Version, "NXT_FLOW_REMOVED", len(body), 40)
	}
	m := &FlowRemoved{Envelope: env, NXM: true}
	m.Cookie, m.Priority, m.Reason, m.TableID = u64(body), u16(body[8:]), body[10], body[11]
	m.DurationSec, m.DurationNsec, m.IdleTimeout = u32(body[12:]), u32(body[16:]), u16(body[20:])
	m.PacketCount, m.ByteCount = u64(body[24:]), u64(body[32:])
	rest, err := nxmAt(env.Version, body[40:], int(u16(body[22:])), &m.Match)
	if err != nil {
		return nil, err
	}
	if len(rest) != 0 {
		return nil, badLen(env.Version, "NXT_FLOW_REMOVED", len(body), len(body)-len(rest))
	}
	return m, nil
}

func decodeFlowRemoved15(env Envelope, body []byte) (Msg, error) {
	v := env.Version
	if len(body) < 16 {
		return nil, badLen(v, "flow removed", len(body), 16)
	}
	m := &FlowRemoved{Envelope: env, TableID: body[0], Reason: body[1], Priority: u16(body[2:]),
		IdleTimeout: u16(body[4:]), HardTimeout: u16(body[6:]), Cookie: u64(body[8:])}
	n, err := DecodeOXM(body[16:], &m.Match)
	if err != nil {
		return nil, err
	}
	st, sn, err := decodeOXS(v, body[16+n:])
	if err != nil {
		return nil, err
	}
	if 16+n+sn != len(body) {
		return nil, badLen(v, "flow removed", len(body), 16+n+sn)
	}
	m.DurationSec, m.DurationNsec, m.PacketCount, m.ByteCount = st.durSec, st.durNsec, st.packets, st.bytes
	return m, nil
}

// decodePacketOut15 reads a 1.5 packet-out, whose input port travels in a
// match with the registers and metadata the pipeline starts with
// (Pipeline). The other pipeline fields 1.5 allows there (tunnel) are
// refused with OFPBMC_BAD_FIELD rather than ignored; a field that is no
// pipeline field with OFPBRC_PIPELINE_FIELDS_ONLY, as ovs-vswitchd does.
func decodePacketOut15(env Envelope, body []byte) (Msg, error) {
	v := env.Version
	if len(body) < 8 {
		return nil, badLen(v, "packet out", len(body), 8)
	}
	m := &PacketOut{Envelope: env, BufferID: u32(body), InPort: PortAny}
	alen := int(u16(body[4:]))
	var match Match
	n, err := DecodeOXM(body[8:], &match)
	if err != nil {
		return nil, err
	}
	inMask, in := match.Mask.InPort, match.Key.InPort
	match.Mask.InPort, match.Key.InPort = 0, 0
	if !packetOutPipeline.Covers(&match.Mask) {
		rest := match.Mask
		rest.Regs, rest.OFMetadata, rest.Tunnel = [16]uint32{}, 0, flow.Tunnel{}
		if rest != (flow.Mask{}) {
			// A field that is no pipeline field at all, as
			// ovs-vswitchd answers it.
			return nil, &Error{Version: v, Type: ErrTypeBadRequest, Code: BadRequest15PipelineFieldsOnly, Err: ErrUnsupported,
				Detail: "packet out match sets a field that is no pipeline field"}
		}
		return nil, errOf(v, kMatchBadField, "packet out match sets tunnel fields, which govswitchd does not start a pipeline with")
	}
	m.Pipeline = match
	match.Key.InPort = in
	if inMask == ^uint32(0) {
		m.InPort = match.Key.InPort
	} else if inMask != 0 {
		return nil, errOf(v, kMatchBadMask, "packet out in_port with a mask")
	}
	fixed := 8 + n
	if fixed+alen > len(body) {
		return nil, errOf(v, kBadLen, "packet out actions_len %d in %d bytes", alen, len(body)-fixed)
	}
	if m.Actions, err = decodeActions13(make([]Action, 0, alen/8), v, body[fixed:fixed+alen]); err != nil {
		return nil, err
	}
	m.Data = body[fixed+alen:]
	return m, nil
}

func (m *PacketOut) append15(b []byte) ([]byte, error) {
	b, start := begin(b, m.Version, TypePacketOut, m.Xid)
	b = be32(b, m.BufferID)
	lenAt := len(b)
	b = zeros(b, 4)
	match := m.Pipeline
	match.Key.InPort, match.Mask.InPort = 0, 0
	if m.InPort != PortAny {
		match.Key.InPort, match.Mask.InPort = m.InPort, ^uint32(0)
	}
	var err error
	if b, err = AppendOXMV(b, m.Version, &match); err != nil {
		return b[:start], err
	}
	return m.appendActionsData(b, start, lenAt)
}
