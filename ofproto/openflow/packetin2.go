package openflow

import (
	"fmt"
)

// Nicira messages for packet-in2, resume and flow monitors.
const (
	NXTFlowMonitorCancel  uint32 = 21
	NXTFlowMonitorPaused  uint32 = 22
	NXTFlowMonitorResumed uint32 = 23
	NXTResume             uint32 = 28
	NXTPacketIn2          uint32 = 30
)

// NXPacketIn2Format is NXPIF_NXT_PACKET_IN2 for NXT_SET_PACKET_IN_FORMAT.
const NXPacketIn2Format uint32 = 2

// NXT_PACKET_IN2 / NXT_RESUME property types (NXPINT_*).
const (
	nxpintPacket       = 0
	nxpintFullLen      = 1
	nxpintBufferID     = 2
	nxpintTableID      = 3
	nxpintCookie       = 4
	nxpintReason       = 5
	nxpintMetadata     = 6
	nxpintUserdata     = 7
	nxpintContinuation = 8
)

// Continuation property types (NXCPT_*): private to the switch, which is
// the only one to read them back, but ovs-ofctl prints them.
const (
	nxcptBridge      = 0x8000
	nxcptStack       = 0x8001
	nxcptMirrors     = 0x8002
	nxcptConntracked = 0x8003
	nxcptTableID     = 0x8004
	nxcptCookie      = 0x8005
	nxcptActions     = 0x8006
	nxcptActionSet   = 0x8007
	nxcptOdpPort     = 0x8008
)

// PacketIn2 is NXT_PACKET_IN2, or NXT_RESUME when Resume is set: a
// property list. Encoding writes the properties ovs-vswitchd writes, in its
// order: packet, full_len (when FullLen is set), buffer_id (when not
// NoBuffer: ovs-vswitchd never sets one), table_id, cookie (unless
// all-ones), reason, metadata (Metadata as raw OXM), the continuation and
// userdata (when not empty; ovs-vswitchd's NXT_RESUME has none). Decoding
// accepts them in any order; slices alias the message.
type PacketIn2 struct {
	Envelope
	Resume   bool
	Packet   []byte
	FullLen  uint32 // 0: len(Packet)
	BufferID uint32 // NoBuffer when absent: set it so
	TableID  uint8
	Cookie   uint64
	Reason   uint8
	Metadata Match
	Userdata []byte
	// Continuation is the NXPINT_CONTINUATION property's content: the
	// NXCPT_* properties (see Continuation).
	Continuation []byte
}

func (m *PacketIn2) Append(b []byte) ([]byte, error) {
	sub := NXTPacketIn2
	if m.Resume {
		sub = NXTResume
	}
	b, start, err := appendNXHeader(b, &m.Envelope, sub)
	if err != nil {
		return b, err
	}
	b = appendProp(b, nxpintPacket, m.Packet)
	if m.FullLen != 0 {
		b = appendPropU32(b, nxpintFullLen, m.FullLen)
	}
	if m.BufferID != NoBuffer {
		b = appendPropU32(b, nxpintBufferID, m.BufferID)
	}
	b = appendProp(b, nxpintTableID, []byte{m.TableID})
	if m.Cookie != ^uint64(0) {
		b = appendPropU64(b, nxpintCookie, m.Cookie)
	}
	b = appendProp(b, nxpintReason, []byte{m.Reason})
	ps := len(b)
	b = zeros(b, 4)
	if b, err = appendTLVs(b, &m.Metadata, false, m.Version); err != nil {
		return b[:start], err
	}
	b = endProp(b, ps, nxpintMetadata)
	if len(m.Continuation) > 0 {
		b = appendNested(b, nxpintContinuation, m.Continuation)
	}
	if len(m.Userdata) > 0 {
		b = appendProp(b, nxpintUserdata, m.Userdata)
	}
	return finish(b, start)
}

// decodePacketIn2 decodes the properties of NXT_PACKET_IN2 or NXT_RESUME.
// Errors are OFPBRC_BAD_LEN (a malformed property) or OFPBRC_BAD_TYPE
// standing for OVS's OFPBPC_BAD_TYPE (an unknown one).
func decodePacketIn2(env Envelope, resume bool, body []byte) (Msg, error) {
	v := env.Version
	m := &PacketIn2{Envelope: env, Resume: resume, BufferID: NoBuffer, Cookie: ^uint64(0)}
	var seen uint32
	err := eachProp(v, "packet-in2", body, func(typ uint16, val []byte, raw []byte) error {
		if typ < 32 {
			if seen&(1<<typ) != 0 {
				return errOf(v, kBadLen, "packet-in2: property %d twice", typ)
			}
			seen |= 1 << typ
		}
		switch typ {
		case nxpintPacket:
			m.Packet = val
		case nxpintFullLen, nxpintBufferID:
			if len(val) != 4 {
				return errOf(v, kBadLen, "packet-in2 property %d: %d bytes", typ, len(val))
			}
			if typ == nxpintFullLen {
				m.FullLen = u32(val)
			} else {
				m.BufferID = u32(val)
			}
		case nxpintTableID, nxpintReason:
			if len(val) != 1 {
				return errOf(v, kBadLen, "packet-in2 property %d: %d bytes", typ, len(val))
			}
			if typ == nxpintTableID {
				m.TableID = val[0]
			} else {
				m.Reason = val[0]
			}
		case nxpintCookie:
			c, err := propU64(v, val)
			if err != nil {
				return err
			}
			m.Cookie = c
		case nxpintMetadata:
			if err := decodeTLVs(v, val, &m.Metadata); err != nil {
				return err
			}
		case nxpintUserdata:
			m.Userdata = val
		case nxpintContinuation:
			inner, err := nestedValue(v, raw)
			if err != nil {
				return err
			}
			m.Continuation = inner
		default:
			return errOf(v, kBadType, "packet-in2: unknown property %d", typ)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if seen&(1<<nxpintPacket) == 0 {
		return nil, errOf(v, kBadLen, "packet-in2 without a packet")
	}
	return m, nil
}

// Continuation is the state a paused translation leaves in a packet-in2
// and that NXT_RESUME gives back: where it stood (the bridge, the table
// and cookie of the rule) and what is left to do (the remaining actions
// and the action set). Stack, mirrors and conntrack state are decoded so
// a resume holding them is refused rather than half carried out.
type Continuation struct {
	// Bridge is the bridge's UUID as OVS writes it: its four 32-bit words
	// in host order, which is little-endian where ovs-ofctl prints it.
	Bridge [16]byte
	// Actions are the actions left to run. Unrolls, in order of At, say
	// from which action on they run as part of the rule in table TableID
	// with cookie Cookie (OVS's unroll_xlate): what output and
	// controller actions report, and what resubmit(,) means. Before the
	// first, table 0 and cookie 0.
	Actions     []Action
	Unrolls     []Unroll
	ActionSet   []Action
	OdpPort     uint32
	Mirrors     uint32
	Conntracked bool
	Stack       [][]byte
}

// Unroll is a point in a Continuation's actions where the table and cookie
// change.
type Unroll struct {
	At      int
	TableID uint8
	Cookie  uint64
}

// AppendContinuation appends c as NXCPT_* properties, its actions in
// version v's encoding: one NXCPT_ACTIONS per run of actions between
// unrolls, each after an NXCPT_TABLE_ID and NXCPT_COOKIE that say what
// changed, as ovs-vswitchd writes them.
func AppendContinuation(b []byte, v uint8, c *Continuation) ([]byte, error) {
	start := len(b)
	b = appendProp(b, nxcptBridge, c.Bridge[:])
	for i := len(c.Stack) - 1; i >= 0; i-- {
		b = appendProp(b, nxcptStack, c.Stack[i])
	}
	if c.Mirrors != 0 {
		b = appendPropU32(b, nxcptMirrors, c.Mirrors)
	}
	if c.Conntracked {
		b = appendProp(b, nxcptConntracked, nil)
	}
	var table uint8
	var cookie uint64
	from := 0
	for i := 0; i <= len(c.Unrolls); i++ {
		to := len(c.Actions)
		if i < len(c.Unrolls) {
			to = c.Unrolls[i].At
		}
		if to < from || to > len(c.Actions) {
			return b[:start], fmt.Errorf("openflow: continuation unroll at %d of %d actions: %w", to, len(c.Actions), ErrUnsupported)
		}
		if i > 0 {
			u := &c.Unrolls[i-1]
			if u.TableID != table {
				b = appendProp(b, nxcptTableID, []byte{u.TableID})
				table = u.TableID
			}
			if u.Cookie != cookie {
				b = appendPropU64(b, nxcptCookie, u.Cookie)
				cookie = u.Cookie
			}
		}
		if to > from {
			var err error
			if b, err = appendActionsProp(b, v, nxcptActions, c.Actions[from:to]); err != nil {
				return b[:start], err
			}
		}
		from = to
	}
	if len(c.ActionSet) > 0 {
		var err error
		if b, err = appendActionsProp(b, v, nxcptActionSet, c.ActionSet); err != nil {
			return b[:start], err
		}
	}
	if c.OdpPort != 0 {
		b = appendPropU32(b, nxcptOdpPort, c.OdpPort)
	}
	return b, nil
}

func appendActionsProp(b []byte, v uint8, typ uint16, acts []Action) ([]byte, error) {
	ps := len(b)
	b = zeros(b, 8)
	var err error
	b, err = appendActionsFor(b, v, acts)
	if err != nil {
		return b[:ps], err
	}
	return endProp(b, ps, typ), nil
}

// DecodeContinuation decodes a continuation's NXCPT_* properties, actions in
// version v. Actions alias b. Each NXCPT_ACTIONS group becomes an Unroll
// with the table id and cookie in force.
func DecodeContinuation(v uint8, b []byte) (*Continuation, error) {
	c := &Continuation{}
	var tableID uint8
	var cookie uint64
	err := eachProp(v, "continuation", b, func(typ uint16, val, raw []byte) error {
		switch typ {
		case nxcptBridge:
			if len(val) != 16 {
				return errOf(v, kBadLen, "continuation bridge: %d bytes", len(val))
			}
			copy(c.Bridge[:], val)
		case nxcptStack:
			if len(val) > 16 {
				return errOf(v, kBadLen, "continuation stack entry: %d bytes", len(val))
			}
			c.Stack = append([][]byte{val}, c.Stack...)
		case nxcptMirrors, nxcptOdpPort:
			if len(val) != 4 {
				return errOf(v, kBadLen, "continuation property %#x: %d bytes", typ, len(val))
			}
			if typ == nxcptMirrors {
				c.Mirrors = u32(val)
			} else {
				c.OdpPort = u32(val)
			}
		case nxcptConntracked:
			c.Conntracked = true
		case nxcptTableID:
			if len(val) != 1 {
				return errOf(v, kBadLen, "continuation table id: %d bytes", len(val))
			}
			tableID = val[0]
		case nxcptCookie:
			x, err := propU64(v, val)
			if err != nil {
				return err
			}
			cookie = x
		case nxcptActions, nxcptActionSet:
			inner, err := nestedValue(v, raw)
			if err != nil {
				return err
			}
			var acts []Action
			acts, err = decodeActionsFor(v, nil, inner)
			if err != nil {
				return err
			}
			if typ == nxcptActionSet {
				c.ActionSet = acts
				return nil
			}
			c.Unrolls = append(c.Unrolls, Unroll{At: len(c.Actions), TableID: tableID, Cookie: cookie})
			c.Actions = append(c.Actions, acts...)
		default:
			return errOf(v, kBadType, "continuation: unknown property %#x", typ)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return c, nil
}

// eachProp walks an OpenFlow property list (type, length, value, padding
// to 8; the last property's padding may be missing, as OVS allows), calling
// fn with each value and the whole property.
func eachProp(v uint8, what string, b []byte, fn func(typ uint16, val, raw []byte) error) error {
	for len(b) > 0 {
		if len(b) < 4 {
			return errOf(v, kBadLen, "%s: %d trailing bytes", what, len(b))
		}
		typ, n := u16(b), int(u16(b[2:]))
		if n < 4 || n > len(b) {
			return errOf(v, kBadLen, "%s: property %#x of length %d in %d bytes", what, typ, n, len(b))
		}
		padded := min((n+7)&^7, len(b))
		if err := fn(typ, b[4:n:n], b[:n:n]); err != nil {
			return err
		}
		b = b[padded:]
	}
	return nil
}

// nestedValue returns the content of a nested property: after its 4-byte
// header and 4 bytes of padding.
func nestedValue(v uint8, raw []byte) ([]byte, error) {
	if len(raw) < 8 {
		return nil, errOf(v, kBadLen, "nested property of %d bytes", len(raw))
	}
	return raw[8:], nil
}

// propU64 reads a 64-bit property value, which OVS writes (and wants) after
// 4 bytes of padding, so that it is 8-byte aligned.
func propU64(v uint8, val []byte) (uint64, error) {
	if len(val) == 12 {
		return u64(val[4:]), nil
	}
	return 0, errOf(v, kBadLen, "64-bit property of %d bytes", len(val))
}

func appendProp(b []byte, typ uint16, val []byte) []byte {
	ps := len(b)
	b = append(be16(be16(b, typ), uint16(4+len(val))), val...)
	return pad8(b, ps)
}

func appendPropU32(b []byte, typ uint16, x uint32) []byte {
	return be32(be16(be16(b, typ), 8), x)
}

func appendPropU64(b []byte, typ uint16, x uint64) []byte {
	return be64(zeros(be16(be16(b, typ), 16), 4), x)
}

// appendNested appends a nested property: header, 4 bytes of padding,
// content, padding to 8.
func appendNested(b []byte, typ uint16, content []byte) []byte {
	ps := len(b)
	b = append(zeros(b, 8), content...)
	return endProp(b, ps, typ)
}

// endProp fills in the header of the property that starts at ps and pads
// it to 8 bytes.
func endProp(b []byte, ps int, typ uint16) []byte {
	n := len(b) - ps
	b[ps], b[ps+1], b[ps+2], b[ps+3] = byte(typ>>8), byte(typ), byte(n>>8), byte(n)
	return pad8(b, ps)
}

// NXSetPacketInFormat's formats, named as ovs-ofctl names them.
func PacketInFormatName(f uint32) string {
	switch f {
	case NXPacketInOpenFlow10:
		return "standard"
	case NXPacketInNXM:
		return "nxt_packet_in"
	case NXPacketIn2Format:
		return "nxt_packet_in2"
	}
	return fmt.Sprintf("format %d", f)
}

// nxAnyVersion reports whether Nicira message sub is decoded and encoded in
// every OpenFlow version, as OVS does (OVN speaks them over OpenFlow 1.5);
// the older Nicira messages stay OpenFlow 1.0 only, as do the flow monitor
// ones (1.3 has ONF forms, 1.4 its own).
func nxAnyVersion(sub uint32) bool {
	switch sub {
	case NXTSetPacketInFormat, NXTPacketIn, NXTSetControllerID, NXTResume, NXTPacketIn2:
		return true
	}
	return false
}

// decodeNXAnyVersion decodes the Nicira messages of this file and
// monitor.go; ok is false for other subtypes.
func decodeNXAnyVersion(env Envelope, sub uint32, rest []byte) (m Msg, err error, ok bool) {
	if m, err, ok := decodeTLVTable(env, sub, rest); ok {
		return m, err, true
	}
	switch sub {
	case NXTPacketIn2, NXTResume:
		m, err = decodePacketIn2(env, sub == NXTResume, rest)
		return m, err, true
	case NXTFlowMonitorCancel, NXTFlowMonitorPaused, NXTFlowMonitorResumed:
		if env.Version != Version10 {
			return nil, nil, false
		}
	}
	switch sub {
	case NXTFlowMonitorCancel:
		if len(rest) != 4 {
			return nil, badLen(env.Version, "NXT_FLOW_MONITOR_CANCEL", len(rest), 4), true
		}
		return &NXFlowMonitorCancel{Envelope: env, ID: u32(rest)}, nil, true
	case NXTFlowMonitorPaused, NXTFlowMonitorResumed:
		if len(rest) != 0 {
			return nil, badLen(env.Version, "NXT_FLOW_MONITOR_PAUSED/RESUMED", len(rest), 0), true
		}
		return &NXFlowMonitorFlowControl{Envelope: env, Resumed: sub == NXTFlowMonitorResumed}, nil, true
	}
	return nil, nil, false
}

// AppendOXMTLVs appends m as bare OXM TLVs in OpenFlow 1.3's terms, with
// no ofp_match header or padding, as NXPINT_METADATA carries them.
func AppendOXMTLVs(b []byte, m *Match) ([]byte, error) { return appendTLVs(b, m, false, Version13) }
