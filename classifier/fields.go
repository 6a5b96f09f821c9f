package classifier

import (
	"bytes"
	"encoding/binary"
	"unsafe"

	"github.com/govswitch/govswitch/flow"
)

// This file is the one place that knows where fields sit inside flow.Key
// and how their bits are ordered; the rest of the package sees words,
// stages and prefix fields.

// prefixField names a field that prefix tries track.
type prefixField uint8

const (
	fieldIPv4Src prefixField = iota // also ARP spa
	fieldIPv4Dst                    // also ARP tpa
	fieldIPv6Src
	fieldIPv6Dst
	fieldTpSrc // TCP/UDP/SCTP source port
	fieldTpDst // TCP/UDP/SCTP destination port

	numGlobalTries = 4 // the address fields: one trie for the whole classifier
	numPortTries   = 2 // the port fields: one trie per subtable
)

var fieldNames = [...]string{"nw_src", "nw_dst", "ipv6_src", "ipv6_dst", "tp_src", "tp_dst"}

func (f prefixField) String() string { return fieldNames[f] }

// width is the field's size in bits.
func (f prefixField) width() int {
	switch f {
	case fieldIPv4Src, fieldIPv4Dst:
		return 32
	case fieldIPv6Src, fieldIPv6Dst:
		return 128
	default:
		return 16
	}
}

// offset is the field's byte offset in flow.Key.
func (f prefixField) offset() uintptr {
	var k flow.Key
	switch f {
	case fieldIPv4Src:
		return unsafe.Offsetof(k.IPv4Src)
	case fieldIPv4Dst:
		return unsafe.Offsetof(k.IPv4Dst)
	case fieldIPv6Src:
		return unsafe.Offsetof(k.IPv6Src)
	case fieldIPv6Dst:
		return unsafe.Offsetof(k.IPv6Dst)
	case fieldTpSrc:
		return unsafe.Offsetof(k.TpSrc)
	default:
		return unsafe.Offsetof(k.TpDst)
	}
}

// stage is the lookup stage (index into flow.StageEnd) holding the field.
func (f prefixField) stage() int { return stageOfWord(int(f.offset() / 8)) }

// stageOfWord returns the stage that key word w belongs to.
func stageOfWord(w int) int {
	for s, end := range flow.StageEnd {
		if w < end {
			return s
		}
	}
	return len(flow.StageEnd) - 1
}

// value returns the field of k, left-aligned. Addresses are in network
// byte order in the Key, so their prefixes are their leading bytes; ports
// are integers, so their prefixes are their high bits.
func (f prefixField) value(k *flow.Key) bits128 {
	switch f {
	case fieldIPv4Src:
		return bits128{uint64(binary.BigEndian.Uint32(k.IPv4Src[:])) << 32}
	case fieldIPv4Dst:
		return bits128{uint64(binary.BigEndian.Uint32(k.IPv4Dst[:])) << 32}
	case fieldIPv6Src:
		return bits128{binary.BigEndian.Uint64(k.IPv6Src[:8]), binary.BigEndian.Uint64(k.IPv6Src[8:])}
	case fieldIPv6Dst:
		return bits128{binary.BigEndian.Uint64(k.IPv6Dst[:8]), binary.BigEndian.Uint64(k.IPv6Dst[8:])}
	case fieldTpSrc:
		return bits128{uint64(k.TpSrc) << 48}
	default:
		return bits128{uint64(k.TpDst) << 48}
	}
}

// prefixLen returns n if m selects exactly the first n bits of the field
// (a CIDR mask; 0 when the field is wildcarded), or -1 otherwise.
func (f prefixField) prefixLen(m *flow.Mask) int {
	v := f.value(m.Key())
	n := commonPrefix(&v, &bits128{^uint64(0), ^uint64(0)})
	if n > f.width() || v != prefixMask(n) {
		return -1
	}
	return n
}

// widen ORs the first n bits of the field into m.
func (f prefixField) widen(m *flow.Mask, n int) {
	if n <= 0 {
		return
	}
	p := prefixMask(min(n, f.width()))
	switch f {
	case fieldIPv4Src:
		orBE32(m.IPv4Src[:], uint32(p[0]>>32))
	case fieldIPv4Dst:
		orBE32(m.IPv4Dst[:], uint32(p[0]>>32))
	case fieldIPv6Src:
		orBE64(m.IPv6Src[:8], p[0])
		orBE64(m.IPv6Src[8:], p[1])
	case fieldIPv6Dst:
		orBE64(m.IPv6Dst[:8], p[0])
		orBE64(m.IPv6Dst[8:], p[1])
	case fieldTpSrc:
		m.TpSrc |= uint16(p[0] >> 48)
	case fieldTpDst:
		m.TpDst |= uint16(p[0] >> 48)
	}
}

func orBE32(b []byte, v uint32) {
	binary.BigEndian.PutUint32(b, binary.BigEndian.Uint32(b)|v)
}

func orBE64(b []byte, v uint64) {
	binary.BigEndian.PutUint64(b, binary.BigEndian.Uint64(b)|v)
}

// maskBytes views a mask as the bytes of its fields, in field order.
func maskBytes(m *flow.Mask) []byte {
	return unsafe.Slice((*byte)(unsafe.Pointer(m)), unsafe.Sizeof(*m))
}

// compareMasks orders masks by their bytes in field order (the order of
// flow.Key's fields, each in the Key's own representation). Among rules of
// equal priority that match the same packet, the one with the greater mask
// wins: roughly, the one more specific in the earlier fields. This is the
// classifier's deterministic answer to a tie OpenFlow leaves undefined.
func compareMasks(a, b *flow.Mask) int {
	return bytes.Compare(maskBytes(a), maskBytes(b))
}
