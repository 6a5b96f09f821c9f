package openflow

import (
	"fmt"
)

// Decode parses one whole OpenFlow 1.0 or 1.3 message (as Framer.Next
// returns it). The message aliases b. Errors are *Error values naming the
// OFPT_ERROR to answer with (Error.Reply), except for a b too short to hold
// a header. A message in a version other than 1.0 and 1.3 yields a
// BAD_REQUEST/BAD_VERSION *Error in 1.3 numbering; set its reply's Version
// to the connection's before sending it.
func Decode(b []byte) (Msg, error) {
	h, err := ParseHeader(b)
	if err != nil {
		return nil, err
	}
	if int(h.Length) > len(b) {
		return nil, badLen(h.Version, "message", len(b), int(h.Length))
	}
	body := b[HeaderLen:h.Length]
	env := Envelope{Version: h.Version, Xid: h.Xid}
	// HELLO is read in any version: it is how versions are negotiated.
	if h.Type == TypeHello {
		return decodeHello(env, body)
	}
	switch h.Version {
	case Version10:
		return decode10(env, h.Type, body)
	case Version11, Version12:
		return decode11(env, h.Type, body)
	case Version13, Version14, Version15:
		return decode13(env, h.Type, body)
	}
	return nil, errOf(Version13, kBadVersion, "version 0x%02x", h.Version)
}

func decode10(env Envelope, typ uint8, body []byte) (Msg, error) {
	switch typ {
	case TypeError:
		return decodeError(env, body)
	case TypeEchoRequest:
		return &EchoRequest{Envelope: env, Data: body}, nil
	case TypeEchoReply:
		return &EchoReply{Envelope: env, Data: body}, nil
	case TypeVendor:
		return decodeVendor(env, body)
	case TypeFeaturesRequest:
		return &FeaturesRequest{Envelope: env}, nil
	case TypeFeaturesReply:
		return decodeFeaturesReply(env, body)
	case TypeGetConfigRequest:
		return &GetConfigRequest{Envelope: env}, nil
	case TypeGetConfigReply, TypeSetConfig:
		return decodeSwitchConfig(env, typ, body)
	case TypePacketIn:
		return decodePacketIn10(env, body)
	case TypeFlowRemoved:
		return decodeFlowRemoved10(env, body)
	case TypePortStatus:
		return decodePortStatus(env, body)
	case TypePacketOut:
		return decodePacketOut(env, body)
	case TypeFlowMod:
		return decodeFlowMod10(env, body)
	case Type10PortMod:
		return decodePortMod(env, body)
	case Type10StatsRequest:
		return decodeStats(env, body, false)
	case Type10StatsReply:
		return decodeStats(env, body, true)
	case Type10BarrierRequest:
		return &BarrierRequest{Envelope: env}, nil
	case Type10BarrierReply:
		return &BarrierReply{Envelope: env}, nil
	}
	return nil, errOf(env.Version, kBadType, "message type %d", typ)
}

func decode13(env Envelope, typ uint8, body []byte) (Msg, error) {
	switch typ {
	case TypeError:
		return decodeError(env, body)
	case TypeEchoRequest:
		return &EchoRequest{Envelope: env, Data: body}, nil
	case TypeEchoReply:
		return &EchoReply{Envelope: env, Data: body}, nil
	case TypeVendor:
		return decodeVendor(env, body)
	case TypeFeaturesRequest:
		return &FeaturesRequest{Envelope: env}, nil
	case TypeFeaturesReply:
		return decodeFeaturesReply(env, body)
	case TypeGetConfigRequest:
		return &GetConfigRequest{Envelope: env}, nil
	case TypeGetConfigReply, TypeSetConfig:
		return decodeSwitchConfig(env, typ, body)
	case TypePacketIn:
		return decodePacketIn13(env, body)
	case TypeFlowRemoved:
		if env.Version >= Version15 {
			return decodeFlowRemoved15(env, body)
		}
		return decodeFlowRemoved13(env, body)
	case TypePortStatus:
		return decodePortStatus(env, body)
	case TypePacketOut:
		return decodePacketOut(env, body)
	case TypeFlowMod:
		return decodeFlowMod13(env, body)
	case Type13PortMod:
		return decodePortMod(env, body)
	case Type13MultipartRequest:
		return decodeStats(env, body, false)
	case Type13MultipartReply:
		return decodeStats(env, body, true)
	case Type13BarrierRequest:
		return &BarrierRequest{Envelope: env}, nil
	case Type13BarrierReply:
		return &BarrierReply{Envelope: env}, nil
	case Type13RoleRequest, Type13RoleReply:
		return decodeRole(env, typ, body)
	case Type13GetAsyncRequest:
		return &GetAsyncRequest{Envelope: env}, nil
	case Type13GroupMod:
		return decodeGroupMod(env, body)
	case Type13MeterMod:
		return decodeMeterMod(env, body)
	case Type13GetAsyncReply, Type13SetAsync:
		if env.Version >= Version14 {
			return decodeAsync14(env, typ, body)
		}
		return decodeAsync(env, typ, body)
	}
	if env.Version >= Version14 {
		switch typ {
		case Type14RoleStatus:
			return decodeRoleStatus(env, body)
		case Type14BundleControl:
			return decodeBundleControl(env, body)
		case Type14BundleAddMessage:
			return decodeBundleAdd(env, body)
		}
	}
	return nil, errOf(env.Version, kBadType, "message type %d", typ)
}

// checkVersion fails for a version this codec cannot encode.
func checkVersion(v uint8) error {
	if !SupportedVersion(v) {
		return fmt.Errorf("openflow: encode in version 0x%02x: %w", v, ErrBadVersion)
	}
	return nil
}

// by10or13 picks the message type number for v.
func by10or13(v uint8, t10, t13 uint8) uint8 {
	if v >= Version11 {
		return t13
	}
	return t10
}

// appendBodyless encodes a message with no body.
func appendBodyless(b []byte, e *Envelope, typ uint8) ([]byte, error) {
	if err := checkVersion(e.Version); err != nil {
		return b, err
	}
	b, start := begin(b, e.Version, typ, e.Xid)
	return finish(b, start)
}

// appendData encodes a message whose body is opaque bytes.
func appendData(b []byte, e *Envelope, typ uint8, data []byte) ([]byte, error) {
	if err := checkVersion(e.Version); err != nil {
		return b, err
	}
	b, start := begin(b, e.Version, typ, e.Xid)
	b = append(b, data...)
	return finish(b, start)
}

// EchoRequest is OFPT_ECHO_REQUEST; Data is echoed back in the reply.
type EchoRequest struct {
	Envelope
	Data []byte
}

func (m *EchoRequest) Append(b []byte) ([]byte, error) {
	return appendData(b, &m.Envelope, TypeEchoRequest, m.Data)
}

// EchoReply is OFPT_ECHO_REPLY.
type EchoReply struct {
	Envelope
	Data []byte
}

func (m *EchoReply) Append(b []byte) ([]byte, error) {
	return appendData(b, &m.Envelope, TypeEchoReply, m.Data)
}

// FeaturesRequest is OFPT_FEATURES_REQUEST.
type FeaturesRequest struct{ Envelope }

func (m *FeaturesRequest) Append(b []byte) ([]byte, error) {
	return appendBodyless(b, &m.Envelope, TypeFeaturesRequest)
}

// GetConfigRequest is OFPT_GET_CONFIG_REQUEST.
type GetConfigRequest struct{ Envelope }

func (m *GetConfigRequest) Append(b []byte) ([]byte, error) {
	return appendBodyless(b, &m.Envelope, TypeGetConfigRequest)
}

// BarrierRequest is OFPT_BARRIER_REQUEST (type 18 in 1.0, 20 in 1.3).
type BarrierRequest struct{ Envelope }

func (m *BarrierRequest) Append(b []byte) ([]byte, error) {
	return appendBodyless(b, &m.Envelope, by10or13(m.Version, Type10BarrierRequest, Type13BarrierRequest))
}

// BarrierReply is OFPT_BARRIER_REPLY (type 19 in 1.0, 21 in 1.3).
type BarrierReply struct{ Envelope }

func (m *BarrierReply) Append(b []byte) ([]byte, error) {
	return appendBodyless(b, &m.Envelope, by10or13(m.Version, Type10BarrierReply, Type13BarrierReply))
}

// ErrorMsg is OFPT_ERROR. Data usually quotes the start of the offending
// request. For a 1.3 experimenter error (Type 0xffff) Code is the exp_type
// and Experimenter the id.
type ErrorMsg struct {
	Envelope
	Type         uint16
	Code         uint16
	Experimenter uint32
	Data         []byte
}

func decodeError(env Envelope, body []byte) (Msg, error) {
	if len(body) < 4 {
		return nil, badLen(env.Version, "error", len(body), 4)
	}
	m := &ErrorMsg{Envelope: env, Type: u16(body), Code: u16(body[2:]), Data: body[4:]}
	if env.Version >= Version12 && m.Type == Err13TypeExperimenter {
		if len(body) < 8 {
			return nil, badLen(env.Version, "experimenter error", len(body), 8)
		}
		m.Experimenter, m.Data = u32(body[4:]), body[8:]
	}
	return m, nil
}

func (m *ErrorMsg) Append(b []byte) ([]byte, error) {
	if err := checkVersion(m.Version); err != nil {
		return b, err
	}
	b, start := begin(b, m.Version, TypeError, m.Xid)
	b = be16(be16(b, m.Type), m.Code)
	if m.Version >= Version12 && m.Type == Err13TypeExperimenter {
		b = be32(b, m.Experimenter)
	}
	b = append(b, m.Data...)
	return finish(b, start)
}

// Switch config flags (OFPC_FRAG_*).
const (
	ConfigFragNormal uint16 = 0
	ConfigFragDrop   uint16 = 1
	ConfigFragReasm  uint16 = 2
	ConfigFragMask   uint16 = 3
)

// GetConfigReply is OFPT_GET_CONFIG_REPLY.
type GetConfigReply struct {
	Envelope
	Flags       uint16
	MissSendLen uint16
}

// SetConfig is OFPT_SET_CONFIG.
type SetConfig struct {
	Envelope
	Flags       uint16
	MissSendLen uint16
}

func decodeSwitchConfig(env Envelope, typ uint8, body []byte) (Msg, error) {
	if len(body) != 4 {
		return nil, badLen(env.Version, "switch config", len(body), 4)
	}
	if typ == TypeSetConfig {
		return &SetConfig{Envelope: env, Flags: u16(body), MissSendLen: u16(body[2:])}, nil
	}
	return &GetConfigReply{Envelope: env, Flags: u16(body), MissSendLen: u16(body[2:])}, nil
}

func appendSwitchConfig(b []byte, e *Envelope, typ uint8, flags, miss uint16) ([]byte, error) {
	if err := checkVersion(e.Version); err != nil {
		return b, err
	}
	b, start := begin(b, e.Version, typ, e.Xid)
	return finish(be16(be16(b, flags), miss), start)
}

func (m *GetConfigReply) Append(b []byte) ([]byte, error) {
	return appendSwitchConfig(b, &m.Envelope, TypeGetConfigReply, m.Flags, m.MissSendLen)
}

func (m *SetConfig) Append(b []byte) ([]byte, error) {
	return appendSwitchConfig(b, &m.Envelope, TypeSetConfig, m.Flags, m.MissSendLen)
}

// Port is an OpenFlow 1.0 ofp_phy_port or 1.3 ofp_port. CurrSpeed and
// MaxSpeed (kbps) exist only in 1.3; PortNo uses 32-bit numbering.
type Port struct {
	PortNo     uint32
	HWAddr     [6]byte
	Name       string // at most 15 bytes on the wire
	Config     uint32
	State      uint32
	Curr       uint32
	Advertised uint32
	Supported  uint32
	Peer       uint32
	CurrSpeed  uint32
	MaxSpeed   uint32
}

// Port sizes on the wire.
const (
	Port10Len = 48
	Port13Len = 64
)

// Port config and state bits common to both versions.
const (
	PortConfigDown      uint32 = 1 << 0
	PortConfigNoRecv    uint32 = 1 << 2
	PortConfigNoFwd     uint32 = 1 << 5
	PortConfigNoPacket  uint32 = 1 << 6
	Port10ConfigNoFlood uint32 = 1 << 4
	PortStateLinkDown   uint32 = 1 << 0
)

func portLen(v uint8) int {
	if v >= Version11 {
		return Port13Len
	}
	return Port10Len
}

// decodePort reads one port; len(b) >= portLen(v).
func decodePort(v uint8, b []byte) Port {
	var p Port
	if v >= Version11 {
		p.PortNo = u32(b)
		copy(p.HWAddr[:], b[8:14])
		p.Name = cstring(b[16:32])
		b = b[32:]
	} else {
		p.PortNo = Port10To32(u16(b))
		copy(p.HWAddr[:], b[2:8])
		p.Name = cstring(b[8:24])
		b = b[24:]
	}
	p.Config, p.State, p.Curr = u32(b), u32(b[4:]), u32(b[8:])
	p.Advertised, p.Supported, p.Peer = u32(b[12:]), u32(b[16:]), u32(b[20:])
	if v >= Version11 {
		p.CurrSpeed, p.MaxSpeed = u32(b[24:]), u32(b[28:])
	}
	return p
}

func appendPort(b []byte, v uint8, p *Port) ([]byte, error) {
	if v >= Version14 {
		return appendPort14(b, p), nil
	}
	if v >= Version11 {
		b = append(zeros(be32(b, p.PortNo), 4), p.HWAddr[:]...)
		b = zeros(b, 2)
	} else {
		n, ok := Port32To10(p.PortNo)
		if !ok {
			return b, fmt.Errorf("openflow: port %d in OpenFlow 1.0: %w", p.PortNo, ErrUnsupported)
		}
		b = append(be16(b, n), p.HWAddr[:]...)
	}
	b = appendCString(b, p.Name, 16)
	b = be32(be32(be32(b, p.Config), p.State), p.Curr)
	b = be32(be32(be32(b, p.Advertised), p.Supported), p.Peer)
	if v >= Version11 {
		b = be32(be32(b, p.CurrSpeed), p.MaxSpeed)
	}
	return b, nil
}

// decodePorts reads a whole array of ports.
func decodePorts(v uint8, b []byte) ([]Port, error) {
	if v >= Version14 {
		return decodePorts14(v, b)
	}
	n := portLen(v)
	if len(b)%n != 0 {
		return nil, errOf(v, kBadLen, "port array of %d bytes is not a multiple of %d", len(b), n)
	}
	ports := make([]Port, 0, len(b)/n)
	for ; len(b) > 0; b = b[n:] {
		ports = append(ports, decodePort(v, b))
	}
	return ports, nil
}

// FeaturesReply is OFPT_FEATURES_REPLY. Actions and Ports exist only in
// 1.0, AuxiliaryID only in 1.3 (whose ports come from a port-desc request).
type FeaturesReply struct {
	Envelope
	DatapathID   uint64
	NBuffers     uint32
	NTables      uint8
	AuxiliaryID  uint8
	Capabilities uint32
	Actions      uint32
	Ports        []Port
}

// Capability bits (OFPC_*).
const (
	CapFlowStats  uint32 = 1 << 0
	CapTableStats uint32 = 1 << 1
	CapPortStats  uint32 = 1 << 2
	CapIPReasm    uint32 = 1 << 5
	CapQueueStats uint32 = 1 << 6
	Cap10ARPMatch uint32 = 1 << 7
	Cap13Groups   uint32 = 1 << 3
	Cap14Bundles  uint32 = 1 << 9 // OFPC14_BUNDLES
)

func decodeFeaturesReply(env Envelope, body []byte) (Msg, error) {
	if len(body) < 24 {
		return nil, badLen(env.Version, "features reply", len(body), 24)
	}
	m := &FeaturesReply{Envelope: env, DatapathID: u64(body), NBuffers: u32(body[8:]), NTables: body[12],
		Capabilities: u32(body[16:])}
	if env.Version >= Version13 {
		if len(body) != 24 {
			return nil, badLen(env.Version, "features reply", len(body), 24)
		}
		m.AuxiliaryID = body[13]
		return m, nil
	}
	m.Actions = u32(body[20:])
	var err error
	m.Ports, err = decodePorts(env.Version, body[24:])
	return m, err
}

func (m *FeaturesReply) Append(b []byte) ([]byte, error) {
	if err := checkVersion(m.Version); err != nil {
		return b, err
	}
	b, start := begin(b, m.Version, TypeFeaturesReply, m.Xid)
	b = be32(be64(b, m.DatapathID), m.NBuffers)
	b = append(b, m.NTables, 0, 0, 0)
	if m.Version >= Version13 {
		b[len(b)-3] = m.AuxiliaryID
		if len(m.Ports) > 0 {
			return b[:start], fmt.Errorf("openflow: 1.3 features reply carries no ports: %w", ErrUnsupported)
		}
		return finish(be32(be32(b, m.Capabilities), 0), start)
	}
	b = be32(be32(b, m.Capabilities), m.Actions)
	for i := range m.Ports {
		var err error
		if b, err = appendPort(b, m.Version, &m.Ports[i]); err != nil {
			return b[:start], err
		}
	}
	return finish(b, start)
}

// Port status reasons (OFPPR_*).
const (
	PortReasonAdd    uint8 = 0
	PortReasonDelete uint8 = 1
	PortReasonModify uint8 = 2
)

// PortStatus is OFPT_PORT_STATUS.
type PortStatus struct {
	Envelope
	Reason uint8
	Port   Port
}

func decodePortStatus(env Envelope, body []byte) (Msg, error) {
	if env.Version >= Version14 {
		if len(body) < 8 {
			return nil, badLen(env.Version, "port status", len(body), 8)
		}
		ports, err := decodePorts14(env.Version, body[8:])
		if err != nil {
			return nil, err
		}
		if len(ports) != 1 {
			return nil, errOf(env.Version, kBadLen, "port status with %d ports", len(ports))
		}
		return &PortStatus{Envelope: env, Reason: body[0], Port: ports[0]}, nil
	}
	want := 8 + portLen(env.Version)
	if len(body) != want {
		return nil, badLen(env.Version, "port status", len(body), want)
	}
	return &PortStatus{Envelope: env, Reason: body[0], Port: decodePort(env.Version, body[8:])}, nil
}

func (m *PortStatus) Append(b []byte) ([]byte, error) {
	if err := checkVersion(m.Version); err != nil {
		return b, err
	}
	b, start := begin(b, m.Version, TypePortStatus, m.Xid)
	b = zeros(append(b, m.Reason), 7)
	b, err := appendPort(b, m.Version, &m.Port)
	if err != nil {
		return b[:start], err
	}
	return finish(b, start)
}

// PortMod is OFPT_PORT_MOD (type 15 in 1.0, 16 in 1.3).
type PortMod struct {
	Envelope
	PortNo    uint32
	HWAddr    [6]byte
	Config    uint32
	Mask      uint32
	Advertise uint32
}

func decodePortMod(env Envelope, body []byte) (Msg, error) {
	m := &PortMod{Envelope: env}
	if env.Version >= Version14 {
		return decodePortMod14(env, body)
	}
	if env.Version >= Version11 {
		if len(body) != 32 {
			return nil, badLen(env.Version, "port mod", len(body), 32)
		}
		m.PortNo = u32(body)
		copy(m.HWAddr[:], body[8:14])
		body = body[16:]
	} else {
		if len(body) != 24 {
			return nil, badLen(env.Version, "port mod", len(body), 24)
		}
		m.PortNo = Port10To32(u16(body))
		copy(m.HWAddr[:], body[2:8])
		body = body[8:]
	}
	m.Config, m.Mask, m.Advertise = u32(body), u32(body[4:]), u32(body[8:])
	return m, nil
}

func (m *PortMod) Append(b []byte) ([]byte, error) {
	if err := checkVersion(m.Version); err != nil {
		return b, err
	}
	if m.Version >= Version14 {
		return m.append14(b)
	}
	b, start := begin(b, m.Version, by10or13(m.Version, Type10PortMod, Type13PortMod), m.Xid)
	if m.Version >= Version11 {
		b = zeros(append(zeros(be32(b, m.PortNo), 4), m.HWAddr[:]...), 2)
	} else {
		p, ok := Port32To10(m.PortNo)
		if !ok {
			return b[:start], fmt.Errorf("openflow: port %d in OpenFlow 1.0: %w", m.PortNo, ErrUnsupported)
		}
		b = append(be16(b, p), m.HWAddr[:]...)
	}
	b = zeros(be32(be32(be32(b, m.Config), m.Mask), m.Advertise), 4)
	return finish(b, start)
}
