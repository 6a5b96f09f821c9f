package openflow

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// OpenFlow protocol versions, as carried in the header's version byte.
const (
	Version10 uint8 = 0x01
	Version11 uint8 = 0x02
	Version12 uint8 = 0x03
	Version13 uint8 = 0x04
	Version14 uint8 = 0x05
	Version15 uint8 = 0x06
)

// SupportedVersion reports whether the codec speaks wire version v.
func SupportedVersion(v uint8) bool {
	return v >= Version10 && v <= Version15
}

// HeaderLen is the size of the OpenFlow header that starts every message.
const HeaderLen = 8

// MaxMessageLen is the largest message the 16-bit length field can carry.
const MaxMessageLen = 0xffff

// Message types of OpenFlow 1.0 (OFPT_*). Several share a number with 1.3.
const (
	TypeHello               uint8 = 0
	TypeError               uint8 = 1
	TypeEchoRequest         uint8 = 2
	TypeEchoReply           uint8 = 3
	TypeVendor              uint8 = 4 // 1.3: EXPERIMENTER
	TypeFeaturesRequest     uint8 = 5
	TypeFeaturesReply       uint8 = 6
	TypeGetConfigRequest    uint8 = 7
	TypeGetConfigReply      uint8 = 8
	TypeSetConfig           uint8 = 9
	TypePacketIn            uint8 = 10
	TypeFlowRemoved         uint8 = 11
	TypePortStatus          uint8 = 12
	TypePacketOut           uint8 = 13
	TypeFlowMod             uint8 = 14
	Type10PortMod           uint8 = 15
	Type10StatsRequest      uint8 = 16
	Type10StatsReply        uint8 = 17
	Type10BarrierRequest    uint8 = 18
	Type10BarrierReply      uint8 = 19
	Type10QueueGetConfigReq uint8 = 20
	Type10QueueGetConfigRep uint8 = 21
)

// Message types of OpenFlow 1.3 that differ from 1.0.
const (
	Type13GroupMod          uint8 = 15
	Type13PortMod           uint8 = 16
	Type13TableMod          uint8 = 17
	Type13MultipartRequest  uint8 = 18
	Type13MultipartReply    uint8 = 19
	Type13BarrierRequest    uint8 = 20
	Type13BarrierReply      uint8 = 21
	Type13QueueGetConfigReq uint8 = 22
	Type13QueueGetConfigRep uint8 = 23
	Type13RoleRequest       uint8 = 24
	Type13RoleReply         uint8 = 25
	Type13GetAsyncRequest   uint8 = 26
	Type13GetAsyncReply     uint8 = 27
	Type13SetAsync          uint8 = 28
	Type13MeterMod          uint8 = 29
)

// Message types new in OpenFlow 1.4.
const (
	Type14RoleStatus       uint8 = 30
	Type14TableStatus      uint8 = 31
	Type14RequestForward   uint8 = 32
	Type14BundleControl    uint8 = 33
	Type14BundleAddMessage uint8 = 34
)

// Header is the 8-byte header that starts every OpenFlow message.
type Header struct {
	Version uint8
	Type    uint8
	Length  uint16 // whole message, header included
	Xid     uint32
}

// ErrShortHeader is returned by ParseHeader for fewer than HeaderLen bytes.
var ErrShortHeader = errors.New("openflow: message shorter than its 8-byte header")

// ParseHeader reads the header at the start of b. It checks only that b
// holds 8 bytes and that Length is at least 8; it does not check that b
// holds Length bytes.
func ParseHeader(b []byte) (Header, error) {
	if len(b) < HeaderLen {
		return Header{}, ErrShortHeader
	}
	h := Header{
		Version: b[0],
		Type:    b[1],
		Length:  binary.BigEndian.Uint16(b[2:]),
		Xid:     binary.BigEndian.Uint32(b[4:]),
	}
	if h.Length < HeaderLen {
		return h, fmt.Errorf("openflow: header length %d below 8: %w", h.Length, ErrBadLength)
	}
	return h, nil
}

// Append appends h to b. Length is written as given.
func (h Header) Append(b []byte) []byte {
	return append(b, h.Version, h.Type, byte(h.Length>>8), byte(h.Length),
		byte(h.Xid>>24), byte(h.Xid>>16), byte(h.Xid>>8), byte(h.Xid))
}

// Envelope is what every message struct embeds: the protocol version the
// message is (or will be) encoded in and its transaction id. The wire type
// and length are derived from the message itself.
type Envelope struct {
	Version uint8
	Xid     uint32
}

// Env returns the message's envelope, for code that handles any Msg.
func (e *Envelope) Env() *Envelope { return e }

// Msg is one decoded OpenFlow message. Every message type of this package
// implements it through a pointer.
type Msg interface {
	// Env returns the message's version and xid.
	Env() *Envelope
	// Append encodes the message in its Envelope's version, appends it to
	// b and returns the extended buffer. On error b is returned unchanged
	// in length (bytes past len(b) may have been written).
	Append(b []byte) ([]byte, error)
}

// Errors of the codec. Decode errors wrap one of these and are usually an
// *Error that also names the OFPT_ERROR to reply with.
var (
	// ErrBadLength: a length field disagrees with the bytes present.
	ErrBadLength = errors.New("bad length")
	// ErrTooLong: an encoded message would exceed 65535 bytes.
	ErrTooLong = errors.New("message longer than 65535 bytes")
	// ErrUnsupported: the message, action or field exists but this codec
	// (or the message's version) cannot express it.
	ErrUnsupported = errors.New("not supported")
	// ErrBadVersion: the version byte is not one of 1.0 to 1.5.
	ErrBadVersion = errors.New("unsupported OpenFlow version")
)

// begin appends a header with a placeholder length and returns the buffer
// and the message's start offset, for finish to patch.
func begin(b []byte, version, typ uint8, xid uint32) ([]byte, int) {
	start := len(b)
	return Header{Version: version, Type: typ, Xid: xid}.Append(b), start
}

// finish patches the length of the message that begins at start.
func finish(b []byte, start int) ([]byte, error) {
	n := len(b) - start
	if n > MaxMessageLen {
		return b[:start], ErrTooLong
	}
	binary.BigEndian.PutUint16(b[start+2:], uint16(n))
	return b, nil
}

// putLen16 writes the length of what was appended to b since offset
// from into the 16-bit big-endian length field at b[at:], for an encoder
// that learns a length only after appending: ErrTooLong if it does not
// fit.
func putLen16(b []byte, at, from int) error {
	n := len(b) - from
	if n > 0xffff {
		return ErrTooLong
	}
	b[at], b[at+1] = byte(n>>8), byte(n)
	return nil
}

// Big-endian helpers for append-style encoders.

func be16(b []byte, v uint16) []byte { return append(b, byte(v>>8), byte(v)) }
func be32(b []byte, v uint32) []byte {
	return append(b, byte(v>>24), byte(v>>16), byte(v>>8), byte(v))
}
func be64(b []byte, v uint64) []byte {
	return append(b, byte(v>>56), byte(v>>48), byte(v>>40), byte(v>>32),
		byte(v>>24), byte(v>>16), byte(v>>8), byte(v))
}
func zeros(b []byte, n int) []byte {
	for i := 0; i < n; i++ {
		b = append(b, 0)
	}
	return b
}

// pad8 appends zeros until the length since start is a multiple of 8.
func pad8(b []byte, start int) []byte {
	for (len(b)-start)%8 != 0 {
		b = append(b, 0)
	}
	return b
}

func u16(b []byte) uint16 { return binary.BigEndian.Uint16(b) }
func u32(b []byte) uint32 { return binary.BigEndian.Uint32(b) }
func u64(b []byte) uint64 { return binary.BigEndian.Uint64(b) }

// cstring returns the NUL-terminated string stored in a fixed-size field.
// The field's last byte is always the terminator, so a peer that fills the
// whole field loses its last character, exactly as appendCString would.
func cstring(b []byte) string {
	if len(b) > 0 {
		b = b[:len(b)-1]
	}
	for i, c := range b {
		if c == 0 {
			return string(b[:i])
		}
	}
	return string(b)
}

// appendCString appends s truncated to n-1 bytes and NUL-padded to n.
func appendCString(b []byte, s string, n int) []byte {
	if len(s) > n-1 {
		s = s[:n-1]
	}
	b = append(b, s...)
	return zeros(b, n-len(s))
}
