package openflow

import (
	"fmt"
	"strconv"
)

// Nicira vendor message subtypes (NXT_*) this codec knows.
const (
	NXTRoleRequest       uint32 = 10
	NXTRoleReply         uint32 = 11
	NXTSetFlowFormat     uint32 = 12
	NXTFlowMod           uint32 = 13
	NXTFlowRemoved       uint32 = 14
	NXTFlowModTableID    uint32 = 15
	NXTSetPacketInFormat uint32 = 16
	NXTPacketIn          uint32 = 17
	NXTSetAsyncConfig    uint32 = 19
	NXTSetControllerID   uint32 = 20
)

// Nicira controller roles (NX_ROLE_*), as carried by NXT_ROLE_REQUEST.
// Decoding maps them onto the 1.3 roles: other→RoleEqual, master→
// RoleMaster, slave→RoleSlave; encoding maps back.
const (
	NXRoleOther  uint32 = 0
	NXRoleMaster uint32 = 1
	NXRoleSlave  uint32 = 2
)

// Nicira flow formats (NXFF_*) and packet-in formats (NXPIF_*).
const (
	NXFlowFormatOpenFlow10 uint32 = 0
	NXFlowFormatNXM        uint32 = 2
	NXPacketInOpenFlow10   uint32 = 0
	NXPacketInNXM          uint32 = 1
)

// decodeVendor handles OFPT_VENDOR / OFPT_EXPERIMENTER. Anything it does
// not model is an *Error with OFPBRC_BAD_VENDOR (unknown vendor) or
// OFPBRC_BAD_SUBTYPE (unknown Nicira subtype): the replies on which
// ovs-ofctl falls back to plain OpenFlow.
func decodeVendor(env Envelope, body []byte) (Msg, error) {
	v := env.Version
	if len(body) < 8 {
		return nil, badLen(v, "vendor message", len(body), 8)
	}
	vendor, sub := u32(body), u32(body[4:])
	if vendor == ONFVendorID && v == Version13 {
		switch sub {
		case ONFTRoleStatus:
			return decodeRoleStatus(env, body[8:])
		case ONFTBundleControl:
			return decodeBundleControl(env, body[8:])
		case ONFTBundleAddMessage:
			return decodeBundleAdd(env, body[8:])
		case ONFTFlowMonitorCancel, ONFTFlowMonitorPaused, ONFTFlowMonitorResumed:
			return decodeONFMonitorMsg(env, sub, body[8:])
		}
		return nil, errOf(v, kBadSubtype, "ONF message %d", sub)
	}
	if vendor != NXVendorID {
		return nil, errOf(v, kBadVendor, "vendor %#08x", vendor)
	}
	rest := body[8:]
	if m, err, ok := decodeNXAnyVersion(env, sub, rest); ok {
		return m, err
	}
	if v != Version10 && !nxAnyVersion(sub) {
		return nil, errOf(v, kBadSubtype, "Nicira message %d in OpenFlow %s", sub, versionName(v))
	}
	switch sub {
	case NXTSetFlowFormat, NXTSetPacketInFormat:
		if len(rest) != 4 {
			return nil, badLen(v, "Nicira format message", len(rest), 4)
		}
		if sub == NXTSetFlowFormat {
			return &NXSetFlowFormat{Envelope: env, Format: u32(rest)}, nil
		}
		return &NXSetPacketInFormat{Envelope: env, Format: u32(rest)}, nil
	case NXTFlowModTableID:
		if len(rest) != 8 {
			return nil, badLen(v, "NXT_FLOW_MOD_TABLE_ID", len(rest), 8)
		}
		return &NXFlowModTableID{Envelope: env, Enable: rest[0] != 0}, nil
	case NXTFlowMod:
		return decodeNXFlowMod(env, rest)
	case NXTGroupMod:
		return decodeGroupMod(env, rest)
	case NXTPacketIn:
		return decodeNXPacketIn(env, rest)
	case NXTFlowRemoved:
		return decodeNXFlowRemoved(env, rest)
	case NXTRoleRequest, NXTRoleReply:
		if len(rest) != 4 {
			return nil, badLen(v, "Nicira role message", len(rest), 4)
		}
		role := u32(rest)
		if role > NXRoleSlave {
			return nil, &Error{Version: v, Type: ErrTypeBadRequest, Code: BadRequestNXBadRole, Err: ErrUnsupported,
				Detail: "Nicira role " + itoa(role)}
		}
		role++ // NX other/master/slave are 1.3 equal/master/slave minus one
		if sub == NXTRoleRequest {
			return &RoleRequest{Envelope: env, Role: role}, nil
		}
		return &RoleReply{Envelope: env, Role: role}, nil
	case NXTSetAsyncConfig:
		return decodeAsync(env, Type13SetAsync, rest)
	case NXTSetControllerID:
		if len(rest) != 8 {
			return nil, badLen(v, "NXT_SET_CONTROLLER_ID", len(rest), 8)
		}
		return &NXSetControllerID{Envelope: env, ID: u16(rest[6:])}, nil
	}
	return nil, errOf(v, kBadSubtype, "Nicira message subtype %d", sub)
}

func appendNXHeader(b []byte, e *Envelope, sub uint32) ([]byte, int, error) {
	if e.Version != Version10 && !nxAnyVersion(sub) {
		return b, 0, checkVersionNX(e.Version)
	}
	b, start := begin(b, e.Version, TypeVendor, e.Xid)
	return be32(be32(b, NXVendorID), sub), start, nil
}

func checkVersionNX(v uint8) error {
	return &Error{Version: v, Type: ErrTypeBadRequest, Code: BadRequestBadSubtype, Err: ErrUnsupported,
		Detail: "Nicira messages are encoded in OpenFlow 1.0 only"}
}

// NXSetFlowFormat is NXT_SET_FLOW_FORMAT: Format NXFlowFormatNXM asks for
// NXM flow mods, flow removeds and flow stats on this connection.
type NXSetFlowFormat struct {
	Envelope
	Format uint32
}

func (m *NXSetFlowFormat) Append(b []byte) ([]byte, error) {
	b, start, err := appendNXHeader(b, &m.Envelope, NXTSetFlowFormat)
	if err != nil {
		return b, err
	}
	return finish(be32(b, m.Format), start)
}

// NXSetPacketInFormat is NXT_SET_PACKET_IN_FORMAT.
type NXSetPacketInFormat struct {
	Envelope
	Format uint32
}

func (m *NXSetPacketInFormat) Append(b []byte) ([]byte, error) {
	b, start, err := appendNXHeader(b, &m.Envelope, NXTSetPacketInFormat)
	if err != nil {
		return b, err
	}
	return finish(be32(b, m.Format), start)
}

// NXFlowModTableID is NXT_FLOW_MOD_TABLE_ID: when enabled, the high byte of
// a 1.0 flow mod's command is a table id (FlowMod.TableID).
type NXFlowModTableID struct {
	Envelope
	Enable bool
}

func (m *NXFlowModTableID) Append(b []byte) ([]byte, error) {
	b, start, err := appendNXHeader(b, &m.Envelope, NXTFlowModTableID)
	if err != nil {
		return b, err
	}
	var on byte
	if m.Enable {
		on = 1
	}
	return finish(zeros(append(b, on), 7), start)
}

// NXSetControllerID is NXT_SET_CONTROLLER_ID: the controller's id for
// NXAST_CONTROLLER actions.
type NXSetControllerID struct {
	Envelope
	ID uint16
}

func (m *NXSetControllerID) Append(b []byte) ([]byte, error) {
	b, start, err := appendNXHeader(b, &m.Envelope, NXTSetControllerID)
	if err != nil {
		return b, err
	}
	return finish(be16(zeros(b, 6), m.ID), start)
}

// appendNXRole encodes a 1.0 role request or reply as NXT_ROLE_*.
func appendNXRole(b []byte, e *Envelope, sub uint32, role uint32) ([]byte, error) {
	if role < RoleEqual || role > RoleSlave {
		return b, fmt.Errorf("openflow: role %d has no Nicira form: %w", role, ErrUnsupported)
	}
	b, start, err := appendNXHeader(b, e, sub)
	if err != nil {
		return b, err
	}
	return finish(be32(b, role-1), start)
}

func itoa(v uint32) string { return strconv.FormatUint(uint64(v), 10) }
