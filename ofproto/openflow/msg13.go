package openflow

import "fmt"

// Controller roles (OFPCR_ROLE_*).
const (
	RoleNoChange uint32 = 0
	RoleEqual    uint32 = 1
	RoleMaster   uint32 = 2
	RoleSlave    uint32 = 3
)

// RoleRequest is OFPT_ROLE_REQUEST (1.3), or NXT_ROLE_REQUEST in 1.0
// (where GenerationID does not exist and RoleNoChange cannot be sent).
type RoleRequest struct {
	Envelope
	Role         uint32
	GenerationID uint64
}

// RoleReply is OFPT_ROLE_REPLY (1.3), or NXT_ROLE_REPLY in 1.0.
type RoleReply struct {
	Envelope
	Role         uint32
	GenerationID uint64
}

func decodeRole(env Envelope, typ uint8, body []byte) (Msg, error) {
	if len(body) != 16 {
		return nil, badLen(env.Version, "role message", len(body), 16)
	}
	if typ == Type13RoleRequest {
		return &RoleRequest{Envelope: env, Role: u32(body), GenerationID: u64(body[8:])}, nil
	}
	return &RoleReply{Envelope: env, Role: u32(body), GenerationID: u64(body[8:])}, nil
}

func appendRole(b []byte, e *Envelope, typ uint8, role uint32, gen uint64) ([]byte, error) {
	if e.Version == Version10 {
		sub := NXTRoleRequest
		if typ == Type13RoleReply {
			sub = NXTRoleReply
		}
		return appendNXRole(b, e, sub, role)
	}
	if e.Version < Version12 {
		return b, fmt.Errorf("openflow: role messages in version %d: %w", e.Version, ErrUnsupported)
	}
	b, start := begin(b, e.Version, typ, e.Xid)
	return finish(be64(zeros(be32(b, role), 4), gen), start)
}

func (m *RoleRequest) Append(b []byte) ([]byte, error) {
	return appendRole(b, &m.Envelope, Type13RoleRequest, m.Role, m.GenerationID)
}

func (m *RoleReply) Append(b []byte) ([]byte, error) {
	return appendRole(b, &m.Envelope, Type13RoleReply, m.Role, m.GenerationID)
}

// AsyncConfig says which asynchronous messages a controller receives:
// element 0 applies in the master/equal role, element 1 as slave; bit n
// enables reason n.
// The role status, table status and request-forward masks exist only in
// 1.4+.
type AsyncConfig struct {
	PacketInMask       [2]uint32
	PortStatusMask     [2]uint32
	FlowRemovedMask    [2]uint32
	RoleStatusMask     [2]uint32
	TableStatusMask    [2]uint32
	RequestForwardMask [2]uint32
}

// Merge copies into c the masks of from that props (bit t: async
// property type t, see SetAsync.Props) selects.
func (c *AsyncConfig) Merge(from *AsyncConfig, props uint32) {
	for t := uint16(0); t < asyncPropCount; t++ {
		if props&(1<<t) != 0 {
			*c.mask(t) = *from.mask(t)
		}
	}
}

// GetAsyncRequest is OFPT_GET_ASYNC_REQUEST (1.3).
type GetAsyncRequest struct{ Envelope }

func (m *GetAsyncRequest) Append(b []byte) ([]byte, error) {
	if m.Version < Version13 {
		return b, fmt.Errorf("openflow: async config needs OpenFlow 1.3: %w", ErrUnsupported)
	}
	return appendBodyless(b, &m.Envelope, Type13GetAsyncRequest)
}

// GetAsyncReply is OFPT_GET_ASYNC_REPLY (1.3).
type GetAsyncReply struct {
	Envelope
	AsyncConfig
}

// SetAsync is OFPT_SET_ASYNC (1.3+), or NXT_SET_ASYNC_CONFIG in 1.0.
// Props says which masks it sets: bit t for async property type t
// (AsyncPropPacketInSlave...). A 1.4+ set-async may carry only some; a
// 1.0 or 1.3 one sets the first six (packet-in, port status, flow
// removed). A 1.4+ SetAsync encodes exactly the properties Props names
// (AsyncPropsAll for every one).
type SetAsync struct {
	Envelope
	AsyncConfig
	Props uint32
}

func decodeAsync(env Envelope, typ uint8, body []byte) (Msg, error) {
	if len(body) != 24 {
		return nil, badLen(env.Version, "async config", len(body), 24)
	}
	var c AsyncConfig
	c.PacketInMask = [2]uint32{u32(body), u32(body[4:])}
	c.PortStatusMask = [2]uint32{u32(body[8:]), u32(body[12:])}
	c.FlowRemovedMask = [2]uint32{u32(body[16:]), u32(body[20:])}
	if typ == Type13SetAsync {
		return &SetAsync{Envelope: env, AsyncConfig: c, Props: async13Props}, nil
	}
	return &GetAsyncReply{Envelope: env, AsyncConfig: c}, nil
}

// async13Props are the properties a 1.0 or 1.3 async config carries.
const async13Props uint32 = 1<<(AsyncPropFlowRemovedMaster+1) - 1

func appendAsync(b []byte, e *Envelope, typ uint8, c *AsyncConfig, present uint32) ([]byte, error) {
	if e.Version < Version13 || !SupportedVersion(e.Version) {
		return b, fmt.Errorf("openflow: async config needs OpenFlow 1.3: %w", ErrUnsupported)
	}
	if e.Version >= Version14 {
		return appendAsync14(b, e, typ, c, present)
	}
	b, start := begin(b, e.Version, typ, e.Xid)
	return finish(appendAsyncBody(b, c), start)
}

func appendAsyncBody(b []byte, c *AsyncConfig) []byte {
	for _, a := range [3][2]uint32{c.PacketInMask, c.PortStatusMask, c.FlowRemovedMask} {
		b = be32(be32(b, a[0]), a[1])
	}
	return b
}

func (m *GetAsyncReply) Append(b []byte) ([]byte, error) {
	return appendAsync(b, &m.Envelope, Type13GetAsyncReply, &m.AsyncConfig, AsyncPropsAll)
}

func (m *SetAsync) Append(b []byte) ([]byte, error) {
	if m.Version == Version10 {
		b, start, err := appendNXHeader(b, &m.Envelope, NXTSetAsyncConfig)
		if err != nil {
			return b, err
		}
		return finish(appendAsyncBody(b, &m.AsyncConfig), start)
	}
	return appendAsync(b, &m.Envelope, Type13SetAsync, &m.AsyncConfig, m.Props)
}

// Table feature property types (OFPTFPT_*).
const (
	TFPInstructions      uint16 = 0
	TFPInstructionsMiss  uint16 = 1
	TFPNextTables        uint16 = 2
	TFPNextTablesMiss    uint16 = 3
	TFPWriteActions      uint16 = 4
	TFPWriteActionsMiss  uint16 = 5
	TFPApplyActions      uint16 = 6
	TFPApplyActionsMiss  uint16 = 7
	TFPMatch             uint16 = 8
	TFPWildcards         uint16 = 10
	TFPWriteSetField     uint16 = 12
	TFPWriteSetFieldMiss uint16 = 13
	TFPApplySetField     uint16 = 14
	TFPApplySetFieldMiss uint16 = 15
)

// TableFeatureProp is one table feature property; Data is its body after
// the 4-byte type/length header, without padding. Data aliases the decoded
// message.
type TableFeatureProp struct {
	Type uint16
	Data []byte
}

// TableFeatures describes one table (OFPMP_TABLE_FEATURES entry).
type TableFeatures struct {
	TableID       uint8
	Name          string // at most 31 bytes on the wire
	MetadataMatch uint64
	MetadataWrite uint64
	Config        uint32
	MaxEntries    uint32
	Properties    []TableFeatureProp
}

// TableFeaturesRequest is OFPMP_TABLE_FEATURES as a request: no Tables to
// just read them, or the tables to set.
type TableFeaturesRequest struct {
	Envelope
	Flags  uint16
	Tables []TableFeatures
}

// TableFeaturesReply lists table features (1.3).
type TableFeaturesReply struct {
	Envelope
	Flags  uint16
	Tables []TableFeatures
}

const tableFeaturesLen = 64

func decodeTableFeatures(b []byte) ([]TableFeatures, error) {
	const v = Version13
	var out []TableFeatures
	for len(b) > 0 {
		if len(b) < tableFeaturesLen {
			return nil, badLen(v, "table features", len(b), tableFeaturesLen)
		}
		n := int(u16(b))
		if n < tableFeaturesLen || n > len(b) || n%8 != 0 {
			return nil, errOf(v, kBadLen, "table features length %d in %d bytes", n, len(b))
		}
		e := b[:n]
		b = b[n:]
		t := TableFeatures{TableID: e[2], Name: cstring(e[8:40]), MetadataMatch: u64(e[40:]),
			MetadataWrite: u64(e[48:]), Config: u32(e[56:]), MaxEntries: u32(e[60:])}
		for p := e[tableFeaturesLen:]; len(p) > 0; {
			if len(p) < 4 {
				return nil, badLen(v, "table feature property", len(p), 4)
			}
			pl := int(u16(p[2:]))
			padded := (pl + 7) &^ 7
			if pl < 4 || padded > len(p) {
				return nil, errOf(v, kBadLen, "table feature property length %d in %d bytes", pl, len(p))
			}
			t.Properties = append(t.Properties, TableFeatureProp{Type: u16(p), Data: p[4:pl]})
			p = p[padded:]
		}
		out = append(out, t)
	}
	return out, nil
}

func appendTableFeatures(b []byte, tables []TableFeatures) ([]byte, error) {
	for i := range tables {
		var err error
		if b, err = appendTableFeature(b, &tables[i]); err != nil {
			return b, err
		}
	}
	return b, nil
}

func appendTableFeature(b []byte, t *TableFeatures) ([]byte, error) {
	at := len(b)
	b = zeros(append(zeros(b, 2), t.TableID), 5)
	b = appendCString(b, t.Name, 32)
	b = be32(be32(be64(be64(b, t.MetadataMatch), t.MetadataWrite), t.Config), t.MaxEntries)
	for _, p := range t.Properties {
		if 4+len(p.Data) > 0xffff {
			return b, ErrTooLong
		}
		pat := len(b)
		b = append(be16(be16(b, p.Type), uint16(4+len(p.Data))), p.Data...)
		b = pad8(b, pat)
	}
	return b, putLen16(b, at, at)
}

func (m *TableFeaturesRequest) Append(b []byte) ([]byte, error) {
	if m.Version < Version13 {
		return b, fmt.Errorf("openflow: table features need OpenFlow 1.3: %w", ErrUnsupported)
	}
	b, start, err := statsHeader(b, &m.Envelope, false, StatsTableFeatures, m.Flags, false, 0)
	if err != nil {
		return b, err
	}
	if b, err = appendTableFeatures(b, m.Tables); err != nil {
		return b[:start], err
	}
	return finish(b, start)
}

func (m *TableFeaturesReply) body() replyBody {
	return replyBody{env: &m.Envelope, typ: StatsTableFeatures, flags: m.Flags, n: len(m.Tables),
		entry: func(b []byte, i int) ([]byte, error) { return appendTableFeature(b, &m.Tables[i]) }}
}

func (m *TableFeaturesReply) Append(b []byte) ([]byte, error) {
	if m.Version < Version13 {
		return b, fmt.Errorf("openflow: table features need OpenFlow 1.3: %w", ErrUnsupported)
	}
	return appendReply(b, m.body(), 0, false)
}

// AppendParts splits the reply as FlowStatsReply.AppendParts does; a
// switch with all 254 tables and their properties needs it.
func (m *TableFeaturesReply) AppendParts(b []byte, maxLen int) ([]byte, error) {
	if m.Version < Version13 {
		return b, fmt.Errorf("openflow: table features need OpenFlow 1.3: %w", ErrUnsupported)
	}
	return appendReply(b, m.body(), maxLen, true)
}

// AppendOXMHeaders appends the 4-byte OXM headers of fields (no values), the
// body of the match and set-field table feature properties.
func AppendOXMHeaders(b []byte, fs ...Field) []byte {
	for _, f := range fs {
		if h, ok := f.Header(false); ok {
			b = be32(b, h)
		}
	}
	return b
}
