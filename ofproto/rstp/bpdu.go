// Package rstp is the IEEE 802.1D-2004 Rapid Spanning Tree Protocol
// (clause 17) as ovs-vswitchd runs it on a bridge: the BPDU codec, and
// one bridge's port role and state machines. Like package stp it does no
// I/O and keeps no clock: the caller feeds it received BPDUs and elapsed
// time, and sends what it asks to.
package rstp

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// BPDU types (802.1D-2004 9.3).
const (
	TypeConfig uint8 = 0x00 // an 802.1D-1998 Configuration BPDU
	TypeTCN    uint8 = 0x80 // an 802.1D-1998 Topology Change Notification
	TypeRST    uint8 = 0x02 // a Rapid Spanning Tree BPDU
)

// Protocol versions.
const (
	VersionSTP  uint8 = 0
	VersionRSTP uint8 = 2
)

// Flags of an RST BPDU (9.3.3): the port role in bits 2-3, the rest one
// bit each. A Configuration BPDU uses only TC and TCA.
const (
	FlagTC          uint8 = 0x01
	FlagProposal    uint8 = 0x02
	FlagRoleMask    uint8 = 0x0c
	FlagLearning    uint8 = 0x10
	FlagForwarding  uint8 = 0x20
	FlagAgreement   uint8 = 0x40
	FlagTCA         uint8 = 0x80
	flagRoleShift         = 2
	wireRoleUnknown uint8 = 0
	wireRoleAltBack uint8 = 1
	wireRoleRoot    uint8 = 2
	wireRoleDesig   uint8 = 3
)

// Sizes of the BPDUs, after the LLC header.
const (
	RSTLen    = 36
	ConfigLen = 35
	TCNLen    = 4
)

// ID is a bridge identifier (9.2.5): a priority in the top 4 bits, a
// system ID extension in the next 12, a MAC address in the low 48.
type ID uint64

const macBits = 1<<48 - 1

// String formats the ID as ovs-vswitchd's rstp_status columns do:
// "8.000.0000000000aa".
func (id ID) String() string {
	return fmt.Sprintf("%01x.%03x.%012x", uint8(id>>60), uint16(id>>48)&0xfff, uint64(id)&macBits)
}

// Priority is the top 16 bits of the ID (priority and extension), as
// rstp/show prints it.
func (id ID) Priority() uint16 { return uint16(id >> 48) }

// Address is the MAC address part of the ID.
func (id ID) Address() uint64 { return uint64(id) & macBits }

// BPDU is a decoded BPDU of any of the three types. Times are in 1/256
// s, as on the wire. For a TCN only Version and Type are set; for a
// Configuration BPDU Flags holds TC and TCA only.
type BPDU struct {
	Version      uint8
	Type         uint8
	Flags        uint8
	RootID       ID
	RootPathCost uint32
	BridgeID     ID
	PortID       uint16
	MessageAge   uint16
	MaxAge       uint16
	HelloTime    uint16
	ForwardDelay uint16
}

// Role is the port role a BPDU's flags carry.
func (p *BPDU) Role() uint8 { return (p.Flags & FlagRoleMask) >> flagRoleShift }

// Errors of Decode. The caller counts them as the port's bad BPDUs.
var (
	ErrRunt     = errors.New("runt BPDU")
	ErrProtocol = errors.New("BPDU with unexpected protocol ID")
	ErrType     = errors.New("BPDU of unexpected type")
	ErrSize     = errors.New("BPDU with invalid size")
)

// Decode parses a BPDU (the bytes after the LLC header) under 802.1D-2004
// 9.3.4's validation: a Configuration BPDU of at least 35 bytes, a TCN of
// at least 4, an RST BPDU of at least 36 (a higher version is read as
// version 2, later fields ignored). It never panics.
func Decode(b []byte) (BPDU, error) {
	var p BPDU
	if len(b) < TCNLen {
		return p, fmt.Errorf("%w (%d bytes)", ErrRunt, len(b))
	}
	if id := binary.BigEndian.Uint16(b); id != 0 {
		return p, fmt.Errorf("%w %d", ErrProtocol, id)
	}
	p.Version, p.Type = b[2], b[3]
	switch p.Type {
	case TypeTCN:
		return p, nil
	case TypeConfig:
		if len(b) < ConfigLen {
			return p, fmt.Errorf("config %w %d", ErrSize, len(b))
		}
	case TypeRST:
		if len(b) < RSTLen {
			return p, fmt.Errorf("RST %w %d", ErrSize, len(b))
		}
	default:
		return p, fmt.Errorf("%w %d", ErrType, p.Type)
	}
	p.Flags = b[4]
	if p.Type == TypeConfig {
		p.Flags &= FlagTC | FlagTCA
	}
	p.RootID = ID(binary.BigEndian.Uint64(b[5:]))
	p.RootPathCost = binary.BigEndian.Uint32(b[13:])
	p.BridgeID = ID(binary.BigEndian.Uint64(b[17:]))
	p.PortID = binary.BigEndian.Uint16(b[25:])
	p.MessageAge = binary.BigEndian.Uint16(b[27:])
	p.MaxAge = binary.BigEndian.Uint16(b[29:])
	p.HelloTime = binary.BigEndian.Uint16(b[31:])
	p.ForwardDelay = binary.BigEndian.Uint16(b[33:])
	return p, nil
}

// Append appends the wire form of p to dst: 36 bytes for an RST BPDU
// (with a zero Version 1 Length), 35 for a Configuration BPDU, 4 for a
// TCN.
func (p *BPDU) Append(dst []byte) []byte {
	dst = append(dst, 0, 0, p.Version, p.Type)
	if p.Type == TypeTCN {
		return dst
	}
	dst = append(dst, p.Flags)
	dst = binary.BigEndian.AppendUint64(dst, uint64(p.RootID))
	dst = binary.BigEndian.AppendUint32(dst, p.RootPathCost)
	dst = binary.BigEndian.AppendUint64(dst, uint64(p.BridgeID))
	dst = binary.BigEndian.AppendUint16(dst, p.PortID)
	dst = binary.BigEndian.AppendUint16(dst, p.MessageAge)
	dst = binary.BigEndian.AppendUint16(dst, p.MaxAge)
	dst = binary.BigEndian.AppendUint16(dst, p.HelloTime)
	dst = binary.BigEndian.AppendUint16(dst, p.ForwardDelay)
	if p.Type == TypeRST {
		dst = append(dst, 0) // Version 1 Length
	}
	return dst
}
