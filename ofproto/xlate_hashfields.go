package ofproto

import (
	"encoding/binary"
	"math/bits"

	"github.com/govswitch/govswitch/flow"
	"github.com/govswitch/govswitch/ofproto/openflow"
)

// The flow hashes of the multipath and bundle actions (NX_HASH_FIELDS_*),
// bit for bit ovs-vswitchd 3.1's flow_hash_fields as Debian builds it (no
// SSE 4.2, so lib/hash.h is murmur-based): a controller that spreads flows
// over links with multipath sees every flow take the link it takes under
// ovs-vswitchd. ovs-vswitchd keeps struct flow's network-order fields in
// memory and hashes that memory read as native (little-endian) words;
// the functions here read the same bytes the same way.

// flowHashFields is flow_hash_fields: the hash of fields of f with basis.
func flowHashFields(f *flow.Key, fields openflow.HashFields, basis uint16) uint32 {
	b := uint32(basis)
	switch fields {
	case openflow.HashEthSrc:
		return jhashBytes(f.EthSrc[:], b)
	case openflow.HashSymmetricL4:
		return hashSymmetricL4(f, b)
	case openflow.HashSymmetricL3L4:
		return hashSymmetricL3L4(f, b, false)
	case openflow.HashSymmetricL3L4UDP:
		return hashSymmetricL3L4(f, b, true)
	case openflow.HashNwSrc, openflow.HashNwDst:
		src := fields == openflow.HashNwSrc
		switch f.EthType {
		case flow.EthTypeIPv4:
			if src {
				return jhashBytes(f.IPv4Src[:], b)
			}
			return jhashBytes(f.IPv4Dst[:], b)
		case flow.EthTypeIPv6:
			if src {
				return jhashBytes(f.IPv6Src[:], b)
			}
			return jhashBytes(f.IPv6Dst[:], b)
		}
		return b
	case openflow.HashSymmetricL3:
		// struct { addresses xored (16 bytes); be16 eth_type; } padded
		// to 20 bytes.
		var s [20]byte
		xorAddrs(&s, f)
		binary.BigEndian.PutUint16(s[16:], f.EthType)
		return jhashBytes(s[:], b)
	}
	return b
}

// xorAddrs writes the xor of f's IPv4 or IPv6 addresses into s[0:16].
func xorAddrs(s *[20]byte, f *flow.Key) bool {
	switch f.EthType {
	case flow.EthTypeIPv4:
		for i := range 4 {
			s[i] = f.IPv4Src[i] ^ f.IPv4Dst[i]
		}
	case flow.EthTypeIPv6:
		for i := range 16 {
			s[i] = f.IPv6Src[i] ^ f.IPv6Dst[i]
		}
	default:
		return false
	}
	return true
}

// hashSymmetricL4 is flow_hash_symmetric_l4: a Jenkins hash of a 32-byte
// struct { union { be32 ipv4; in6_addr ipv6 }; be16 eth_type, vlan_tci,
// tp_port; eth_addr; u8 ip_proto; } holding xors of both directions'
// fields, so a connection's two directions hash alike. UDP ports are left
// out (a UDP reply need not come from the port it went to).
func hashSymmetricL4(f *flow.Key, basis uint32) uint32 {
	var s [32]byte
	var a [20]byte
	if xorAddrs(&a, f) {
		copy(s[:16], a[:16])
		s[28] = f.NwProto
		if f.NwProto == 6 || f.NwProto == 132 {
			binary.BigEndian.PutUint16(s[20:], f.TpSrc^f.TpDst)
		}
	}
	binary.BigEndian.PutUint16(s[16:], f.EthType)
	var tci uint16
	for i := range f.VLANs {
		tci ^= f.VLANs[i].TCI & flow.VLANVIDMask
	}
	binary.BigEndian.PutUint16(s[18:], tci)
	for i := range 6 {
		s[22+i] = f.EthSrc[i] ^ f.EthDst[i]
	}
	return jhashBytes(s[:], basis)
}

// hashSymmetricL3L4 is flow_hash_symmetric_l3l4: a murmur hash of the
// xored addresses, the protocol and, for an unfragmented TCP or SCTP
// (and UDP with udp) packet, the xored ports; non-IP falls back to
// flow_hash_symmetric_l2.
func hashSymmetricL3L4(f *flow.Key, basis uint32, udp bool) uint32 {
	h := basis
	switch f.EthType {
	case flow.EthTypeIPv4:
		h = mhashAdd(h, binary.LittleEndian.Uint32(f.IPv4Src[:])^binary.LittleEndian.Uint32(f.IPv4Dst[:]))
	case flow.EthTypeIPv6:
		for i := 0; i < 16; i += 8 {
			w := binary.LittleEndian.Uint64(f.IPv6Src[i:]) ^ binary.LittleEndian.Uint64(f.IPv6Dst[i:])
			h = mhashAdd(mhashAdd(h, uint32(w)), uint32(w>>32))
		}
	default:
		return hashSymmetricL2(f, basis)
	}
	h = mhashAdd(h, uint32(f.NwProto))
	if f.NwFrag&(flow.FragAny|flow.FragLater) == 0 && (f.NwProto == 6 || f.NwProto == 132 || udp && f.NwProto == 17) {
		// The be16 xor read as a native uint16.
		h = mhashAdd(h, uint32(bits.ReverseBytes16(f.TpSrc^f.TpDst)))
	}
	return mhashFinish(h ^ basis)
}

// hashSymmetricL2 is flow_hash_symmetric_l2: three words, be16 eth_type
// and vlan_tci, then the xored Ethernet addresses and two zero bytes.
// A packet without Ethernet header hashes to 0.
func hashSymmetricL2(f *flow.Key, basis uint32) uint32 {
	if f.L3 {
		return 0
	}
	var s [12]byte
	binary.BigEndian.PutUint16(s[0:], f.EthType)
	var tci uint16
	for i := range f.VLANs {
		tci ^= f.VLANs[i].TCI & flow.VLANVIDMask
	}
	binary.BigEndian.PutUint16(s[2:], tci)
	for i := range 6 {
		s[4+i] = f.EthSrc[i] ^ f.EthDst[i]
	}
	h := basis
	for i := 0; i < 12; i += 4 {
		h = mhashAdd(h, binary.LittleEndian.Uint32(s[i:]))
	}
	return mhashFinish(h ^ basis)
}

// maskHashFields is flow_mask_hash_fields: makes exact in wc the fields
// flowHashFields read for f.
func maskHashFields(f *flow.Key, wc *flow.Mask, fields openflow.HashFields) {
	ipAddrs := func(src, dst bool) bool {
		switch f.EthType {
		case flow.EthTypeIPv4:
			if src {
				wc.IPv4Src = [4]byte{0xff, 0xff, 0xff, 0xff}
			}
			if dst {
				wc.IPv4Dst = [4]byte{0xff, 0xff, 0xff, 0xff}
			}
		case flow.EthTypeIPv6:
			if src {
				wc.IPv6Src = ones16
			}
			if dst {
				wc.IPv6Dst = ones16
			}
		default:
			return false
		}
		return true
	}
	unfragmented := f.NwFrag&(flow.FragAny|flow.FragLater) == 0
	switch fields {
	case openflow.HashEthSrc:
		wc.EthSrc = [6]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}
	case openflow.HashSymmetricL4:
		wc.EthSrc = [6]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}
		wc.EthDst = wc.EthSrc
		if ipAddrs(true, true) {
			wc.NwProto = 0xff
			if f.NwProto != 17 {
				// flow_unwildcard_tp_ports: ICMP's type and code are
				// 8 bits wide.
				if f.NwProto == 1 {
					wc.TpSrc, wc.TpDst = wc.TpSrc|0xff, wc.TpDst|0xff
				} else {
					wc.TpSrc, wc.TpDst = 0xffff, 0xffff
				}
			}
		}
		for i := range wc.VLANs {
			wc.VLANs[i].TCI |= flow.VLANVIDMask | flow.VLANPresent
		}
	case openflow.HashSymmetricL3L4, openflow.HashSymmetricL3L4UDP:
		if fields == openflow.HashSymmetricL3L4UDP && (f.EthType == flow.EthTypeIPv4 || f.EthType == flow.EthTypeIPv6) &&
			f.NwProto == 17 && unfragmented {
			wc.TpSrc, wc.TpDst = 0xffff, 0xffff
		}
		if !ipAddrs(true, true) {
			break
		}
		wc.NwProto = 0xff
		if (f.NwProto == 6 || f.NwProto == 132) && unfragmented {
			wc.TpSrc, wc.TpDst = 0xffff, 0xffff
		}
	case openflow.HashNwSrc:
		ipAddrs(true, false)
	case openflow.HashNwDst:
		ipAddrs(false, true)
	case openflow.HashSymmetricL3:
		ipAddrs(true, true)
	}
}

// jhashBytes is lib/jhash.c's jhash_bytes (Bob Jenkins' lookup3 over
// little-endian words, the tail zero-padded).
func jhashBytes(p []byte, basis uint32) uint32 {
	a := 0xdeadbeef + uint32(len(p)) + basis
	b, c := a, a
	for len(p) >= 12 {
		a += binary.LittleEndian.Uint32(p)
		b += binary.LittleEndian.Uint32(p[4:])
		c += binary.LittleEndian.Uint32(p[8:])
		a, b, c = jhashMix(a, b, c)
		p = p[12:]
	}
	if len(p) > 0 {
		var t [12]byte
		copy(t[:], p)
		a += binary.LittleEndian.Uint32(t[:])
		b += binary.LittleEndian.Uint32(t[4:])
		c += binary.LittleEndian.Uint32(t[8:])
		a, b, c = jhashFinal(a, b, c)
	}
	return c
}

func jhashMix(a, b, c uint32) (uint32, uint32, uint32) {
	a -= c
	a ^= bits.RotateLeft32(c, 4)
	c += b
	b -= a
	b ^= bits.RotateLeft32(a, 6)
	a += c
	c -= b
	c ^= bits.RotateLeft32(b, 8)
	b += a
	a -= c
	a ^= bits.RotateLeft32(c, 16)
	c += b
	b -= a
	b ^= bits.RotateLeft32(a, 19)
	a += c
	c -= b
	c ^= bits.RotateLeft32(b, 4)
	b += a
	return a, b, c
}

func jhashFinal(a, b, c uint32) (uint32, uint32, uint32) {
	c ^= b
	c -= bits.RotateLeft32(b, 14)
	a ^= c
	a -= bits.RotateLeft32(c, 11)
	b ^= a
	b -= bits.RotateLeft32(a, 25)
	c ^= b
	c -= bits.RotateLeft32(b, 16)
	a ^= c
	a -= bits.RotateLeft32(c, 4)
	b ^= a
	b -= bits.RotateLeft32(a, 14)
	c ^= b
	c -= bits.RotateLeft32(b, 24)
	return a, b, c
}

// hash2Words is lib/hash.h's hash_2words.
func hash2Words(x, y uint32) uint32 {
	return mhashFinish(mhashAdd(mhashAdd(x, 0), y) ^ 8)
}
