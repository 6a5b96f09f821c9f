// Package netlinkio speaks generic netlink to the kernel's openvswitch
// families: attribute encoding and decoding, control-plane requests, batched
// transactions and upcall sockets.
package netlinkio

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// Netlink attributes (struct nlattr): a 4-byte header of length and type,
// then the payload, padded to a 4-byte boundary. The encoders here append to
// a caller's buffer and never allocate when it has room; the decoder walks a
// buffer in place and hands out slices that alias it.

// AttrHeaderLen is the size of struct nlattr.
const AttrHeaderLen = 4

// Attribute type flags carried in the high bits of nla_type.
const (
	AttrNested       uint16 = 1 << 15 // NLA_F_NESTED
	AttrNetByteOrder uint16 = 1 << 14 // NLA_F_NET_BYTEORDER
	attrTypeMask            = ^(AttrNested | AttrNetByteOrder)
)

// Align rounds n up to the 4-byte netlink alignment (NLA_ALIGN, NLMSG_ALIGN).
func Align(n int) int { return (n + 3) &^ 3 }

// ErrAttrTruncated is the error AttrIter reports for an attribute whose
// header or declared length runs past the end of its buffer.
var ErrAttrTruncated = errors.New("netlink attribute truncated")

// grow extends b by n bytes and returns the extended slice and the offset
// of the new bytes. The new bytes are zeroed.
func grow(b []byte, n int) ([]byte, int) {
	off := len(b)
	if cap(b)-off >= n {
		b = b[:off+n]
		clear(b[off:])
		return b, off
	}
	return append(b, make([]byte, n)...), off
}

// appendHeader appends an attribute header for a payload of n bytes plus
// the payload's room and padding, returning the buffer and the payload's
// offset.
func appendHeader(b []byte, typ uint16, n int) ([]byte, int) {
	b, off := grow(b, Align(AttrHeaderLen+n))
	binary.NativeEndian.PutUint16(b[off:], uint16(AttrHeaderLen+n))
	binary.NativeEndian.PutUint16(b[off+2:], typ)
	return b, off + AttrHeaderLen
}

// AppendAttr appends an attribute of type typ carrying data.
func AppendAttr(b []byte, typ uint16, data []byte) []byte {
	b, off := appendHeader(b, typ, len(data))
	copy(b[off:], data)
	return b
}

// AppendFlag appends a zero-length attribute (NLA_FLAG).
func AppendFlag(b []byte, typ uint16) []byte {
	b, _ = appendHeader(b, typ, 0)
	return b
}

// AppendU8 appends a one-byte attribute (NLA_U8).
func AppendU8(b []byte, typ uint16, v uint8) []byte {
	b, off := appendHeader(b, typ, 1)
	b[off] = v
	return b
}

// AppendU16 appends a 16-bit attribute in host byte order (NLA_U16).
func AppendU16(b []byte, typ uint16, v uint16) []byte {
	b, off := appendHeader(b, typ, 2)
	binary.NativeEndian.PutUint16(b[off:], v)
	return b
}

// AppendU32 appends a 32-bit attribute in host byte order (NLA_U32).
func AppendU32(b []byte, typ uint16, v uint32) []byte {
	b, off := appendHeader(b, typ, 4)
	binary.NativeEndian.PutUint32(b[off:], v)
	return b
}

// AppendU64 appends a 64-bit attribute in host byte order (NLA_U64).
func AppendU64(b []byte, typ uint16, v uint64) []byte {
	b, off := appendHeader(b, typ, 8)
	binary.NativeEndian.PutUint64(b[off:], v)
	return b
}

// AppendBE16 appends a 16-bit attribute in network byte order (__be16).
func AppendBE16(b []byte, typ uint16, v uint16) []byte {
	b, off := appendHeader(b, typ, 2)
	binary.BigEndian.PutUint16(b[off:], v)
	return b
}

// AppendBE32 appends a 32-bit attribute in network byte order (__be32).
func AppendBE32(b []byte, typ uint16, v uint32) []byte {
	b, off := appendHeader(b, typ, 4)
	binary.BigEndian.PutUint32(b[off:], v)
	return b
}

// AppendBE64 appends a 64-bit attribute in network byte order (__be64).
func AppendBE64(b []byte, typ uint16, v uint64) []byte {
	b, off := appendHeader(b, typ, 8)
	binary.BigEndian.PutUint64(b[off:], v)
	return b
}

// AppendReserve appends an attribute with n zeroed payload bytes and
// returns the buffer and the payload as a slice of it, for callers that
// fill a fixed-layout struct (struct ovs_key_ipv4, say) in place. The
// payload slice is valid until b is next grown.
func AppendReserve(b []byte, typ uint16, n int) ([]byte, []byte) {
	b, off := appendHeader(b, typ, n)
	return b, b[off : off+n]
}

// BeginNested appends the header of a nested attribute whose length is not
// yet known and returns the buffer and the header's offset, to be passed to
// EndNested once the nested attributes are appended. The type is written as
// given: OR in AttrNested where the kernel expects it (the openvswitch
// family does not).
func BeginNested(b []byte, typ uint16) ([]byte, int) {
	b, off := grow(b, AttrHeaderLen)
	binary.NativeEndian.PutUint16(b[off+2:], typ)
	return b, off
}

// EndNested fills in the length of the nested attribute begun at start.
// A nested attribute longer than 65535 bytes cannot be expressed; EndNested
// panics then, since that is a bug in the caller's encoding, not bad input.
func EndNested(b []byte, start int) []byte {
	n := len(b) - start
	if n > 0xffff {
		panic(fmt.Sprintf("netlinkio: nested attribute of %d bytes", n))
	}
	binary.NativeEndian.PutUint16(b[start:], uint16(n))
	return b
}

// AttrIter walks a buffer of attributes in place. The zero AttrIter is an
// empty walk. Slices it returns alias the buffer.
//
//	it := netlinkio.NewAttrIter(b)
//	for it.Next() {
//		switch it.Type() { ... it.Data() ... }
//	}
//	if err := it.Err(); err != nil { ... }
type AttrIter struct {
	b    []byte
	typ  uint16
	data []byte
	err  error
}

// NewAttrIter returns an iterator over the attributes in b.
func NewAttrIter(b []byte) AttrIter { return AttrIter{b: b} }

// Next advances to the next attribute and reports whether there is one.
// It returns false at the end of the buffer and on malformed input, which
// Err then reports.
func (it *AttrIter) Next() bool {
	if it.err != nil || len(it.b) == 0 {
		return false
	}
	if len(it.b) < AttrHeaderLen {
		it.err = ErrAttrTruncated
		return false
	}
	n := int(binary.NativeEndian.Uint16(it.b))
	if n < AttrHeaderLen || n > len(it.b) {
		it.err = ErrAttrTruncated
		return false
	}
	it.typ = binary.NativeEndian.Uint16(it.b[2:])
	it.data = it.b[AttrHeaderLen:n:n]
	if a := Align(n); a < len(it.b) {
		it.b = it.b[a:]
	} else {
		it.b = nil
	}
	return true
}

// Type returns the current attribute's type without the nested and
// byte-order flags.
func (it *AttrIter) Type() uint16 { return it.typ & attrTypeMask }

// RawType returns the current attribute's type with its flags.
func (it *AttrIter) RawType() uint16 { return it.typ }

// Data returns the current attribute's payload.
func (it *AttrIter) Data() []byte { return it.data }

// Nested returns an iterator over the current attribute's payload.
func (it *AttrIter) Nested() AttrIter { return AttrIter{b: it.data} }

// Err returns the first error met, or nil.
func (it *AttrIter) Err() error { return it.err }

// sized checks that the payload is exactly n bytes, recording an error
// otherwise.
func (it *AttrIter) sized(n int) bool {
	if len(it.data) != n {
		it.err = fmt.Errorf("netlink attribute %d: %d bytes, want %d", it.Type(), len(it.data), n)
		it.b = nil
		return false
	}
	return true
}

// U8 returns the payload as a u8. A payload of the wrong size stops the
// walk with an error and returns 0; so do the other typed getters.
func (it *AttrIter) U8() uint8 {
	if !it.sized(1) {
		return 0
	}
	return it.data[0]
}

// U16 returns the payload as a host-order u16.
func (it *AttrIter) U16() uint16 {
	if !it.sized(2) {
		return 0
	}
	return binary.NativeEndian.Uint16(it.data)
}

// U32 returns the payload as a host-order u32.
func (it *AttrIter) U32() uint32 {
	if !it.sized(4) {
		return 0
	}
	return binary.NativeEndian.Uint32(it.data)
}

// U64 returns the payload as a host-order u64.
func (it *AttrIter) U64() uint64 {
	if !it.sized(8) {
		return 0
	}
	return binary.NativeEndian.Uint64(it.data)
}

// BE16 returns the payload as a network-order u16.
func (it *AttrIter) BE16() uint16 {
	if !it.sized(2) {
		return 0
	}
	return binary.BigEndian.Uint16(it.data)
}

// BE32 returns the payload as a network-order u32.
func (it *AttrIter) BE32() uint32 {
	if !it.sized(4) {
		return 0
	}
	return binary.BigEndian.Uint32(it.data)
}

// BE64 returns the payload as a network-order u64.
func (it *AttrIter) BE64() uint64 {
	if !it.sized(8) {
		return 0
	}
	return binary.BigEndian.Uint64(it.data)
}

// String returns the payload as a NUL-terminated string (NLA_NUL_STRING),
// without the terminator. It allocates; use it off the hot path.
func (it *AttrIter) String() string {
	d := it.data
	for i, c := range d {
		if c == 0 {
			d = d[:i]
			break
		}
	}
	return string(d)
}
