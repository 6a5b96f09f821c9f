package mcast

import (
	"encoding/binary"
	"slices"
	"time"
)

// IGMP (RFC 1112, 2236, 3376) and MLD (RFC 2710, 3810) messages as the
// snooping table reads them. The decoders take bytes from the wire and
// never panic: a message too short for what it claims is read as far as
// it goes, as OVS reads it.

// IGMP message types.
const (
	IGMPQuery    = 0x11
	IGMPv1Report = 0x12
	IGMPv2Report = 0x16
	IGMPv2Leave  = 0x17
	IGMPv3Report = 0x22
)

// MLD message types (ICMPv6 types).
const (
	MLDQuery    = 130
	MLDReport   = 131
	MLDDone     = 132
	MLDv2Report = 143
)

// IGMPv3/MLDv2 group record types.
const (
	ModeIsInclude   = 1
	ModeIsExclude   = 2
	ChangeToInclude = 3
	ChangeToExclude = 4
	AllowNewSources = 5
	BlockOldSources = 6
)

// IsIGMPMembership reports whether an IGMP type is a report or a leave:
// NORMAL sends those to router and flood-reports ports only, and floods
// every other IGMP message.
func IsIGMPMembership(typ uint8) bool {
	switch typ {
	case IGMPv1Report, IGMPv2Report, IGMPv3Report, IGMPv2Leave:
		return true
	}
	return false
}

// IsMLD reports whether an ICMPv6 type is one of MLD's.
func IsMLD(typ uint8) bool {
	switch typ {
	case MLDQuery, MLDReport, MLDDone, MLDv2Report:
		return true
	}
	return false
}

// Frame is what Parse found in an Ethernet frame: an IPv4 packet carrying
// IGMP or an IPv6 packet carrying ICMPv6.
type Frame struct {
	IPv6 bool
	// Src is the IP source (IPv4 in the first four bytes).
	Src [16]byte
	// Msg is the IGMP message or the ICMPv6 message, cut to the length
	// the IP header gives it. pseudo is the IPv6 pseudo-header checksum
	// part, for MLD.
	Msg    []byte
	pseudo uint32
}

// Parse finds the IGMP or ICMPv6 message in an Ethernet frame, after up
// to two VLAN tags, IPv4 options or IPv6 extension headers. ok is false
// for anything else, and for a later fragment.
func Parse(frame []byte) (f Frame, ok bool) {
	if len(frame) < 14 {
		return f, false
	}
	et := binary.BigEndian.Uint16(frame[12:])
	b := frame[14:]
	for i := 0; i < 2 && (et == 0x8100 || et == 0x88a8); i++ {
		if len(b) < 4 {
			return f, false
		}
		et = binary.BigEndian.Uint16(b[2:])
		b = b[4:]
	}
	switch et {
	case 0x0800:
		return parseIPv4(b)
	case 0x86dd:
		return parseIPv6(b)
	}
	return f, false
}

func parseIPv4(b []byte) (f Frame, ok bool) {
	if len(b) < 20 || b[0]>>4 != 4 {
		return f, false
	}
	ihl := int(b[0]&0xf) * 4
	total := int(binary.BigEndian.Uint16(b[2:]))
	if ihl < 20 || total < ihl || len(b) < ihl || b[9] != 2 {
		return f, false
	}
	if binary.BigEndian.Uint16(b[6:])&0x1fff != 0 {
		return f, false // a later fragment: no IGMP header here
	}
	copy(f.Src[:4], b[12:16])
	end := min(total, len(b))
	f.Msg = b[ihl:end]
	return f, true
}

func parseIPv6(b []byte) (f Frame, ok bool) {
	if len(b) < 40 || b[0]>>4 != 6 {
		return f, false
	}
	plen := int(binary.BigEndian.Uint16(b[4:]))
	next := b[6]
	copy(f.Src[:], b[8:24])
	var sum uint32
	for i := 8; i < 40; i += 2 {
		sum += uint32(binary.BigEndian.Uint16(b[i:]))
	}
	p := b[40:min(len(b), 40+plen)]
	for n := 0; n < 8; n++ {
		switch next {
		case 0, 43, 60: // hop-by-hop, routing, destination options
			if len(p) < 8 {
				return f, false
			}
			l := (int(p[1]) + 1) * 8
			if len(p) < l {
				return f, false
			}
			next, p = p[0], p[l:]
			continue
		case 44: // fragment
			if len(p) < 8 || binary.BigEndian.Uint16(p[2:])&0xfff8 != 0 {
				return f, false
			}
			next, p = p[0], p[8:]
			continue
		case 58:
			sum += uint32(len(p)>>16) + uint32(len(p)&0xffff) + 58
			f.IPv6, f.Msg, f.pseudo = true, p, sum
			return f, true
		}
		return f, false
	}
	return f, false
}

// checksum is the Internet checksum of b, starting from sum; zero means
// the message carried a correct checksum.
func checksum(b []byte, sum uint32) uint16 {
	for len(b) >= 2 {
		sum += uint32(binary.BigEndian.Uint16(b))
		b = b[2:]
	}
	if len(b) == 1 {
		sum += uint32(b[0]) << 8
	}
	for sum>>16 != 0 {
		sum = sum&0xffff + sum>>16
	}
	return ^uint16(sum)
}

// ChecksumOK reports whether the message's checksum is right (for MLD,
// with the IPv6 pseudo-header).
func (f *Frame) ChecksumOK() bool {
	if f.IPv6 {
		return checksum(f.Msg, f.pseudo) == 0
	}
	return checksum(f.Msg, 0) == 0
}

// Type returns the message's type, 0 when it is shorter than a header
// (IGMP's is 8 bytes, as OVS requires before it reads the type).
func (f *Frame) Type() uint8 {
	if len(f.Msg) < 8 {
		return 0
	}
	return f.Msg[0]
}

// Update applies one message received on port in vlan to the table, as
// ovs-vswitchd's update_mcast_snooping_table: nothing from a flood port
// or with a bad checksum; a v1/v2 report joins its group, a leave leaves
// it, a query from a nonzero source marks port a router port, and each
// v3 record joins its group, or leaves it when it is an include of no
// sources. It returns how many groups or routers changed.
func (t *Table) Update(f *Frame, vlan uint16, port uint32, now time.Time) int {
	if len(f.Msg) < 8 || !f.ChecksumOK() {
		return 0
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if slices.Contains(t.flood, port) {
		return 0
	}
	sec := now.Unix()
	n := 0
	count := func(ok bool) {
		if ok {
			n++
		}
	}
	m := f.Msg
	if !f.IPv6 {
		var g [4]byte
		copy(g[:], m[4:8])
		switch m[0] {
		case IGMPv1Report, IGMPv2Report:
			count(t.join(IPv4Group(vlan, g), port, sec))
		case IGMPv2Leave:
			count(t.leave(IPv4Group(vlan, g), port))
		case IGMPQuery:
			if f.Src != [16]byte{} {
				count(t.addMrouter(vlan, port, sec))
			}
		case IGMPv3Report:
			it := Records{b: m[8:], n: int(binary.BigEndian.Uint16(m[6:])), addrLen: 4}
			for it.Next() {
				count(t.record(&it, vlan, port, sec))
			}
		}
		return n
	}
	switch m[0] {
	case MLDQuery:
		if f.Src != [16]byte{} {
			count(t.addMrouter(vlan, port, sec))
		}
	case MLDReport, MLDDone:
		if len(m) < 24 {
			return 0
		}
		g := Group{VLAN: vlan}
		copy(g.Addr[:], m[8:24])
		if m[0] == MLDReport {
			count(t.join(g, port, sec))
		} else {
			count(t.leave(g, port))
		}
	case MLDv2Report:
		it := Records{b: m[8:], n: int(binary.BigEndian.Uint16(m[6:])), addrLen: 16}
		for it.Next() {
			count(t.record(&it, vlan, port, sec))
		}
	}
	return n
}

func (t *Table) record(it *Records, vlan uint16, port uint32, sec int64) bool {
	g := Group{VLAN: vlan}
	if it.addrLen == 4 {
		g = IPv4Group(vlan, [4]byte(it.Addr[:4]))
	} else {
		g.Addr = it.Addr
	}
	if it.Sources == 0 && (it.Type == ModeIsInclude || it.Type == ChangeToInclude) {
		return t.leave(g, port)
	}
	return t.join(g, port, sec)
}

// Records walks the group records of an IGMPv3 or MLDv2 report. It stops
// at the first record that does not fit, and, as OVS, at the first of a
// type it does not know (OVS reads no record after one).
type Records struct {
	b       []byte
	n       int
	addrLen int
	// The current record: its type, source count and group address
	// (IPv4 in the first four bytes).
	Type    uint8
	Sources int
	Addr    [16]byte
}

// NewRecords returns the records of an IGMPv3 (ipv6 false) or MLDv2
// report message.
func NewRecords(msg []byte, ipv6 bool) Records {
	r := Records{addrLen: 4}
	if ipv6 {
		r.addrLen = 16
	}
	if len(msg) >= 8 {
		r.b, r.n = msg[8:], int(binary.BigEndian.Uint16(msg[6:]))
	}
	return r
}

// Next moves to the next record.
func (r *Records) Next() bool {
	if r.n <= 0 || len(r.b) < 4+r.addrLen {
		return false
	}
	r.n--
	r.Type = r.b[0]
	if r.Type < ModeIsInclude || r.Type > BlockOldSources {
		r.n = 0
		return false
	}
	// RFC 3376 counts the auxiliary data in 32-bit words; OVS skips
	// that many bytes, and so does this walk, to learn what OVS learns.
	aux := int(r.b[1])
	r.Sources = int(binary.BigEndian.Uint16(r.b[2:]))
	r.Addr = [16]byte{}
	copy(r.Addr[:], r.b[4:4+r.addrLen])
	skip := 4 + r.addrLen + r.Sources*r.addrLen + aux
	if skip > len(r.b) {
		r.b = nil
	} else {
		r.b = r.b[skip:]
	}
	return true
}
