// Package stp is the IEEE 802.1D-1998 Spanning Tree Protocol (clauses 8
// and 9) as ovs-vswitchd runs it: the BPDU codec, and one bridge's
// protocol state machine. It does no I/O and keeps no clock: the caller
// feeds it received BPDUs and elapsed time, and sends what it asks to.
package stp

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// BPDU types and flags (802.1D clause 9).
const (
	TypeConfig uint8 = 0x00
	TypeTCN    uint8 = 0x80

	FlagTopologyChange    uint8 = 0x01
	FlagTopologyChangeAck uint8 = 0x80
)

// Sizes of the BPDUs (after the LLC header) and of the frame headers.
const (
	ConfigLen = 35
	TCNLen    = 4
	ethLen    = 14
	llcLen    = 3
)

// MulticastAddr is the destination of every BPDU, the Bridge Group
// Address.
var MulticastAddr = [6]byte{0x01, 0x80, 0xc2, 0x00, 0x00, 0x00}

// LLC of a BPDU: DSAP and SSAP 0x42, control 0x03 (UI).
const (
	llcSAP  = 0x42
	llcCtrl = 0x03
)

// ID is a bridge identifier: the priority in the top 16 bits, a MAC
// address in the low 48.
type ID uint64

// String formats the ID as ovs-vswitchd's status columns do:
// "8000.0000000000aa".
func (id ID) String() string {
	return fmt.Sprintf("%04x.%012x", uint16(id>>48), uint64(id)&macBits)
}

const macBits = 1<<48 - 1

// BPDU is a decoded Configuration or Topology Change Notification BPDU.
// Times are in 1/256 s, as on the wire; for a TCN only Type is set.
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

// Errors of Decode. The caller counts them as the port's bad BPDUs.
var (
	ErrRunt     = errors.New("runt BPDU")
	ErrProtocol = errors.New("BPDU with unexpected protocol ID")
	ErrType     = errors.New("BPDU of unexpected type")
	ErrSize     = errors.New("BPDU with invalid size")
)

// Decode parses a BPDU (the bytes after the LLC header). As
// ovs-vswitchd, it accepts any protocol version and trailing bytes after
// a Configuration BPDU, but a TCN must be exactly 4 bytes.
func Decode(b []byte) (BPDU, error) {
	var p BPDU
	if len(b) < 4 {
		return p, fmt.Errorf("%w (%d bytes)", ErrRunt, len(b))
	}
	if id := binary.BigEndian.Uint16(b); id != 0 {
		return p, fmt.Errorf("%w %d", ErrProtocol, id)
	}
	p.Version, p.Type = b[2], b[3]
	switch p.Type {
	case TypeConfig:
		if len(b) < ConfigLen {
			return p, fmt.Errorf("config %w %d", ErrSize, len(b))
		}
		p.Flags = b[4]
		p.RootID = ID(binary.BigEndian.Uint64(b[5:]))
		p.RootPathCost = binary.BigEndian.Uint32(b[13:])
		p.BridgeID = ID(binary.BigEndian.Uint64(b[17:]))
		p.PortID = binary.BigEndian.Uint16(b[25:])
		p.MessageAge = binary.BigEndian.Uint16(b[27:])
		p.MaxAge = binary.BigEndian.Uint16(b[29:])
		p.HelloTime = binary.BigEndian.Uint16(b[31:])
		p.ForwardDelay = binary.BigEndian.Uint16(b[33:])
	case TypeTCN:
		if len(b) != TCNLen {
			return p, fmt.Errorf("TCN %w %d", ErrSize, len(b))
		}
	default:
		return p, fmt.Errorf("%w %d", ErrType, p.Type)
	}
	return p, nil
}

// Append appends the wire form of p to dst: 35 bytes for a
// Configuration BPDU, 4 for a TCN.
func (p *BPDU) Append(dst []byte) []byte {
	dst = append(dst, 0, 0, p.Version, p.Type)
	if p.Type != TypeConfig {
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
	return binary.BigEndian.AppendUint16(dst, p.ForwardDelay)
}

// AppendFrame appends an 802.3 frame carrying bpdu (from BPDU.Append) to
// dst: destination MulticastAddr, source src, the length, and the LLC
// header. The frame is not padded: the kernel sends it as it is.
func AppendFrame(dst []byte, src [6]byte, bpdu []byte) []byte {
	dst = append(dst, MulticastAddr[:]...)
	dst = append(dst, src[:]...)
	dst = binary.BigEndian.AppendUint16(dst, uint16(llcLen+len(bpdu)))
	dst = append(dst, llcSAP, llcSAP, llcCtrl)
	return append(dst, bpdu...)
}

// FramePayload returns the BPDU inside an 802.3 frame: the bytes after
// the Ethernet and LLC headers, with the padding past the frame's length
// field cut off. ok is false when the frame is too short to hold the
// headers. As ovs-vswitchd, it does not check the LLC bytes: the
// destination address already said what the frame is.
func FramePayload(frame []byte) (bpdu []byte, ok bool) {
	if len(frame) < ethLen+llcLen {
		return nil, false
	}
	if n := int(binary.BigEndian.Uint16(frame[12:])); len(frame) > ethLen+n {
		frame = frame[:ethLen+n]
	}
	if len(frame) < ethLen+llcLen {
		return nil, false
	}
	return frame[ethLen+llcLen:], true
}
