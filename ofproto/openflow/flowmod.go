package openflow

import "fmt"

// Flow mod commands (OFPFC_*).
const (
	FlowAdd          uint8 = 0
	FlowModify       uint8 = 1
	FlowModifyStrict uint8 = 2
	FlowDelete       uint8 = 3
	FlowDeleteStrict uint8 = 4
)

// Flow mod flags (OFPFF_*).
const (
	FlowSendFlowRem  uint16 = 1 << 0
	FlowCheckOverlap uint16 = 1 << 1
	Flow10Emerg      uint16 = 1 << 2
	Flow13ResetCount uint16 = 1 << 2
	Flow13NoPktCount uint16 = 1 << 3
	Flow13NoBytCount uint16 = 1 << 4
)

// GroupAny is OFPG_ANY, "no group restriction" in deletes and stats.
const GroupAny uint32 = 0xffffffff

// FlowMod is OFPT_FLOW_MOD in 1.0 and 1.3, and the Nicira NXT_FLOW_MOD
// (1.0 with an NXM match) when NXM is set.
//
// In 1.0 the action list is Instructions.Apply and nothing else of
// Instructions may be set. TableID in 1.0 is the high byte of the 16-bit
// command, which OVS's NXT_FLOW_MOD_TABLE_ID extension turns into a table
// id: a connection that has not enabled it must ignore TableID (ADD goes to
// table 0, the rest act on all tables). 1.0 decodes set OutGroup to
// GroupAny and CookieMask to zero.
type FlowMod struct {
	Envelope
	NXM          bool
	Cookie       uint64
	CookieMask   uint64
	TableID      uint8
	Command      uint8
	IdleTimeout  uint16
	HardTimeout  uint16
	Priority     uint16
	BufferID     uint32
	OutPort      uint32
	OutGroup     uint32
	Flags        uint16
	Importance   uint16 // 1.4+: eviction precedence
	Match        Match
	Instructions Instructions
}

func decodeFlowMod10(env Envelope, body []byte) (Msg, error) {
	if len(body) < 64 {
		return nil, badLen(env.Version, "flow mod", len(body), 64)
	}
	m := &FlowMod{Envelope: env, OutGroup: GroupAny}
	decodeMatch10(body, &m.Match)
	cmd := u16(body[48:])
	m.Cookie, m.TableID, m.Command = u64(body[40:]), uint8(cmd>>8), uint8(cmd)
	m.IdleTimeout, m.HardTimeout, m.Priority = u16(body[50:]), u16(body[52:]), u16(body[54:])
	m.BufferID, m.OutPort, m.Flags = u32(body[56:]), Port10To32(u16(body[60:])), u16(body[62:])
	if m.Command > FlowDeleteStrict {
		return nil, errOf(env.Version, kFlowModBadCommand, "flow mod command %d", m.Command)
	}
	var err error
	m.Instructions.Apply, err = DecodeActions10(make([]Action, 0, (len(body)-64)/8), body[64:])
	if err != nil {
		return nil, err
	}
	return m, nil
}

// decodeNXFlowMod parses the body of NXT_FLOW_MOD after the subtype.
func decodeNXFlowMod(env Envelope, body []byte) (Msg, error) {
	if len(body) < 32 {
		return nil, badLen(env.Version, "NXT_FLOW_MOD", len(body), 32)
	}
	m := &FlowMod{Envelope: env, NXM: true, OutGroup: GroupAny}
	cmd := u16(body[8:])
	m.Cookie, m.TableID, m.Command = u64(body), uint8(cmd>>8), uint8(cmd)
	m.IdleTimeout, m.HardTimeout, m.Priority = u16(body[10:]), u16(body[12:]), u16(body[14:])
	m.BufferID, m.OutPort, m.Flags = u32(body[16:]), Port10To32(u16(body[20:])), u16(body[22:])
	if m.Command > FlowDeleteStrict {
		return nil, errOf(env.Version, kFlowModBadCommand, "flow mod command %d", m.Command)
	}
	rest, err := nxmAt(env.Version, body[32:], int(u16(body[24:])), &m.Match)
	if err != nil {
		return nil, err
	}
	m.Instructions.Apply, err = DecodeActions10(make([]Action, 0, len(rest)/8), rest)
	if err != nil {
		return nil, err
	}
	return m, nil
}

// nxmAt decodes an NXM match of n bytes at the start of b, skips its
// padding to 8, and returns what follows.
func nxmAt(v uint8, b []byte, n int, m *Match) ([]byte, error) {
	padded := (n + 7) &^ 7
	if padded > len(b) {
		return nil, errOf(v, kMatchBadLen, "match_len %d in %d bytes", n, len(b))
	}
	if err := decodeTLVs(v, b[:n], m); err != nil {
		return nil, err
	}
	return b[padded:], nil
}

// appendNXMPadded appends m as NXM, pads to 8 and returns the unpadded
// length for the match_len field.
func appendNXMPadded(b []byte, m *Match) ([]byte, int, error) {
	start := len(b)
	b, err := AppendNXM(b, m)
	if err != nil {
		return b, 0, err
	}
	n := len(b) - start
	return pad8(b, start), n, nil
}

func decodeFlowMod13(env Envelope, body []byte) (Msg, error) {
	if len(body) < 40 {
		return nil, badLen(env.Version, "flow mod", len(body), 40)
	}
	m := &FlowMod{Envelope: env}
	m.Cookie, m.CookieMask, m.TableID, m.Command = u64(body), u64(body[8:]), body[16], body[17]
	m.IdleTimeout, m.HardTimeout, m.Priority = u16(body[18:]), u16(body[20:]), u16(body[22:])
	m.BufferID, m.OutPort, m.OutGroup, m.Flags = u32(body[24:]), u32(body[28:]), u32(body[32:]), u16(body[36:])
	if env.Version >= Version14 {
		m.Importance = u16(body[38:])
	}
	if m.Command > FlowDeleteStrict {
		return nil, errOf(env.Version, kFlowModBadCommand, "flow mod command %d", m.Command)
	}
	n, err := decodeMatchFor(env.Version, body[40:], &m.Match)
	if err != nil {
		return nil, err
	}
	if err := decodeInstructionsFor(env.Version, body[40+n:], &m.Instructions); err != nil {
		return nil, err
	}
	return m, nil
}

func (m *FlowMod) Append(b []byte) ([]byte, error) {
	if err := checkVersion(m.Version); err != nil {
		return b, err
	}
	if m.Version >= Version11 {
		return m.append13(b)
	}
	if !m.Instructions.onlyApply() {
		return b, fmt.Errorf("openflow: 1.0 flow mod with instructions other than apply-actions: %w", ErrUnsupported)
	}
	out, ok := Port32To10(m.OutPort)
	if !ok {
		return b, fmt.Errorf("openflow: out_port %d in OpenFlow 1.0: %w", m.OutPort, ErrUnsupported)
	}
	cmd := uint16(m.TableID)<<8 | uint16(m.Command)
	var err error
	if m.NXM {
		b, start := begin(b, m.Version, TypeVendor, m.Xid)
		b = be32(be32(b, NXVendorID), NXTFlowMod)
		b = be16(be16(be16(be16(be64(b, m.Cookie), cmd), m.IdleTimeout), m.HardTimeout), m.Priority)
		b = be16(be16(be32(b, m.BufferID), out), m.Flags)
		lenAt := len(b)
		b = zeros(b, 8)
		var n int
		if b, n, err = appendNXMPadded(b, &m.Match); err != nil {
			return b[:start], err
		}
		b[lenAt], b[lenAt+1] = byte(n>>8), byte(n)
		if b, err = AppendActions10(b, m.Instructions.Apply); err != nil {
			return b[:start], err
		}
		return finish(b, start)
	}
	b, start := begin(b, m.Version, TypeFlowMod, m.Xid)
	if b, err = appendMatch10(b, &m.Match); err != nil {
		return b[:start], err
	}
	b = be16(be16(be16(be16(be64(b, m.Cookie), cmd), m.IdleTimeout), m.HardTimeout), m.Priority)
	b = be16(be16(be32(b, m.BufferID), out), m.Flags)
	if b, err = AppendActions10(b, m.Instructions.Apply); err != nil {
		return b[:start], err
	}
	return finish(b, start)
}

func (m *FlowMod) append13(b []byte) ([]byte, error) {
	b, start := begin(b, m.Version, TypeFlowMod, m.Xid)
	b = append(be64(be64(b, m.Cookie), m.CookieMask), m.TableID, m.Command)
	b = be16(be16(be16(b, m.IdleTimeout), m.HardTimeout), m.Priority)
	var importance uint16
	if m.Version >= Version14 {
		importance = m.Importance
	}
	b = be16(be16(be32(be32(be32(b, m.BufferID), m.OutPort), m.OutGroup), m.Flags), importance)
	var err error
	if b, err = appendMatchFor(b, m.Version, &m.Match); err != nil {
		return b[:start], err
	}
	if b, err = appendInstructionsFor(b, m.Version, &m.Instructions); err != nil {
		return b[:start], err
	}
	return finish(b, start)
}
