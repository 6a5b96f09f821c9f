package netlinkio

import (
	"encoding/binary"
	"errors"

	"golang.org/x/sys/unix"
)

// Netlink messages: struct nlmsghdr (16 bytes), then for generic netlink a
// struct genlmsghdr (4 bytes), then the family's own header and attributes.
// The functions here build messages in a caller's buffer and read them in
// place; none of them allocates when the buffer has room.

// Header lengths.
const (
	HeaderLen     = 16 // struct nlmsghdr
	GenlHeaderLen = 4  // struct genlmsghdr
)

// Message flags (nlmsg_flags).
const (
	FlagRequest = unix.NLM_F_REQUEST
	FlagMulti   = unix.NLM_F_MULTI
	FlagAck     = unix.NLM_F_ACK
	FlagEcho    = unix.NLM_F_ECHO
	FlagDump    = unix.NLM_F_DUMP
	FlagReplace = unix.NLM_F_REPLACE
	FlagExcl    = unix.NLM_F_EXCL
	FlagCreate  = unix.NLM_F_CREATE
)

// Control message types.
const (
	TypeNoop  = unix.NLMSG_NOOP
	TypeError = unix.NLMSG_ERROR
	TypeDone  = unix.NLMSG_DONE
)

// ErrMessageTruncated reports a message whose header or declared length
// runs past the end of its buffer.
var ErrMessageTruncated = errors.New("netlink message truncated")

// BeginMessage appends the headers of a generic netlink message for family
// with the given command, version and flags (FlagRequest is added) and
// returns the buffer and the message's offset, for EndMessage once the
// payload is appended. The sequence number and port ID are left zero: a
// Socket fills them in when it sends the message.
func BeginMessage(b []byte, family uint16, flags uint16, cmd, version uint8) ([]byte, int) {
	b, off := grow(b, HeaderLen+GenlHeaderLen)
	binary.NativeEndian.PutUint16(b[off+4:], family)
	binary.NativeEndian.PutUint16(b[off+6:], flags|FlagRequest)
	b[off+HeaderLen] = cmd
	b[off+HeaderLen+1] = version
	return b, off
}

// EndMessage writes the length of the message begun at start and pads the
// buffer to the netlink alignment, so that the next message may follow.
func EndMessage(b []byte, start int) []byte {
	n := len(b) - start
	binary.NativeEndian.PutUint32(b[start:], uint32(n))
	if pad := Align(n) - n; pad > 0 {
		b, _ = grow(b, pad)
	}
	return b
}

// Header is struct nlmsghdr.
type Header struct {
	Len   uint32
	Type  uint16
	Flags uint16
	Seq   uint32
	PID   uint32
}

// MessageIter walks the netlink messages of one datagram in place. The zero
// MessageIter is an empty walk.
type MessageIter struct {
	b    []byte
	hdr  Header
	data []byte
	err  error
}

// NewMessageIter returns an iterator over the messages in b.
func NewMessageIter(b []byte) MessageIter { return MessageIter{b: b} }

// Next advances to the next message. It returns false at the end and on
// malformed input, which Err reports.
func (it *MessageIter) Next() bool {
	if it.err != nil || len(it.b) == 0 {
		return false
	}
	if len(it.b) < HeaderLen {
		it.err = ErrMessageTruncated
		return false
	}
	n := int(binary.NativeEndian.Uint32(it.b))
	if n < HeaderLen || n > len(it.b) {
		it.err = ErrMessageTruncated
		return false
	}
	it.hdr = Header{
		Len:   uint32(n),
		Type:  binary.NativeEndian.Uint16(it.b[4:]),
		Flags: binary.NativeEndian.Uint16(it.b[6:]),
		Seq:   binary.NativeEndian.Uint32(it.b[8:]),
		PID:   binary.NativeEndian.Uint32(it.b[12:]),
	}
	it.data = it.b[HeaderLen:n:n]
	if a := Align(n); a < len(it.b) {
		it.b = it.b[a:]
	} else {
		it.b = nil
	}
	return true
}

// Header returns the current message's header.
func (it *MessageIter) Header() Header { return it.hdr }

// Data returns the current message's payload after the nlmsghdr, aliasing
// the buffer.
func (it *MessageIter) Data() []byte { return it.data }

// Err returns the first error met, or nil.
func (it *MessageIter) Err() error { return it.err }

// ErrorCode decodes the payload of an NLMSG_ERROR message: 0 for an
// acknowledgement, otherwise the positive errno. A payload too short to
// hold the code is reported as EBADMSG.
func ErrorCode(data []byte) unix.Errno {
	if len(data) < 4 {
		return unix.EBADMSG
	}
	code := int32(binary.NativeEndian.Uint32(data))
	if code < 0 {
		return unix.Errno(-code)
	}
	return unix.Errno(code)
}

// Genl splits a generic netlink payload (the Data of a message) into its
// command, version and the rest. ok is false when data is too short.
func Genl(data []byte) (cmd, version uint8, rest []byte, ok bool) {
	if len(data) < GenlHeaderLen {
		return 0, 0, nil, false
	}
	return data[0], data[1], data[GenlHeaderLen:], true
}
