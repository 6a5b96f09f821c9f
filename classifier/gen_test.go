package classifier

import (
	"encoding/binary"
	"math/bits"
	"math/rand/v2"

	"github.com/govswitch/govswitch/flow"
)

// Generators of ACL-like rule sets and of keys drawn from the same small
// value pools, so that rules overlap, keys hit, and priorities tie.

type gen struct{ r *rand.Rand }

func newGen(seed uint64) *gen { return &gen{rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))} }

func (g *gen) pick(n int) int        { return g.r.IntN(n) }
func (g *gen) chance(p float64) bool { return g.r.Float64() < p }

var (
	poolPorts   = []uint16{22, 53, 80, 443, 1024, 1025, 8080, 0xfff0}
	poolProtos  = []uint8{flow.IPProtoTCP, flow.IPProtoUDP, flow.IPProtoICMP}
	poolEth     = []uint16{flow.EthTypeIPv4, flow.EthTypeIPv4, flow.EthTypeIPv4, flow.EthTypeIPv6, flow.EthTypeARP}
	poolPlens4  = []int{0, 0, 8, 16, 24, 32}
	poolPlens6  = []int{0, 0, 32, 64, 127, 128}
	poolPortLen = []int{0, 0, 16, 16, 8, 12}
)

func (g *gen) ipv4() [4]byte {
	var a [4]byte
	binary.BigEndian.PutUint32(a[:], 10<<24|uint32(g.pick(2))<<16|uint32(g.pick(4))<<8|uint32(g.pick(8)))
	if g.chance(0.1) {
		binary.BigEndian.PutUint32(a[:], g.r.Uint32())
	}
	return a
}

func (g *gen) ipv6() [16]byte {
	var a [16]byte
	a[0], a[1] = 0x20, 0x01
	a[7] = byte(g.pick(3))
	a[15] = byte(g.pick(4))
	if g.chance(0.1) {
		binary.BigEndian.PutUint64(a[8:], g.r.Uint64())
	}
	return a
}

// key returns a random key from the pools; every field any rule may match
// gets a value.
func (g *gen) key() flow.Key {
	var k flow.Key
	k.InPort = uint32(1 + g.pick(3))
	k.Regs[0] = uint32(g.pick(2))
	if g.chance(0.3) {
		k.VLANs[0] = flow.VLAN{TPID: flow.EthTypeVLAN, TCI: flow.VLANPresent | uint16(10*(1+g.pick(2)))}
	}
	k.EthSrc = [6]byte{0, 0, 0, 0, 0, byte(g.pick(3))}
	k.EthType = poolEth[g.pick(len(poolEth))]
	k.IPv4Src, k.IPv4Dst = g.ipv4(), g.ipv4()
	k.IPv6Src, k.IPv6Dst = g.ipv6(), g.ipv6()
	k.NwProto = poolProtos[g.pick(len(poolProtos))]
	k.NwTTL = uint8(g.pick(3))
	k.TpSrc = poolPorts[g.pick(len(poolPorts))]
	k.TpDst = poolPorts[g.pick(len(poolPorts))]
	if g.chance(0.2) {
		k.TpDst = uint16(g.r.Uint32())
	}
	k.TCPFlags = uint16(g.pick(4))
	return k
}

// keyNear returns a key that rule r matches, its other bits random.
func (g *gen) keyNear(r *Rule[int]) flow.Key {
	k := g.key()
	kw, rw, mw := k.Words(), r.Match.Key.Words(), r.Match.Mask.Words()
	for i := range kw {
		kw[i] = kw[i]&^mw[i] | rw[i]&mw[i]
	}
	return k
}

func prefixBytes(b []byte, n int) {
	for i := range b {
		switch {
		case n >= 8:
			b[i] = 0xff
		case n > 0:
			b[i] = byte(0xff << (8 - n))
		default:
			b[i] = 0
		}
		n -= 8
	}
}

// match returns an ACL-like match: an ethertype, address prefixes, a
// protocol and ports, now and then metadata, VLAN, TTL or TCP flags, and
// now and then a mask that is not a prefix.
func (g *gen) match() Match {
	k := g.key()
	var m flow.Mask
	if g.chance(0.03) {
		return Match{Key: k} // catch-all
	}
	if g.chance(0.005) {
		return Match{Key: k, Mask: flow.ExactMask()}
	}
	if g.chance(0.3) {
		m.InPort = ^uint32(0)
	}
	if g.chance(0.1) {
		m.Regs[0] = 1
	}
	if g.chance(0.1) {
		m.VLANs[0].TCI = flow.VLANPresent | flow.VLANVIDMask
	}
	if g.chance(0.05) {
		m.EthSrc = [6]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}
	}
	if g.chance(0.95) {
		m.EthType = 0xffff
	}
	switch k.EthType {
	case flow.EthTypeIPv6:
		prefixBytes(m.IPv6Src[:], poolPlens6[g.pick(len(poolPlens6))])
		prefixBytes(m.IPv6Dst[:], poolPlens6[g.pick(len(poolPlens6))])
	default:
		prefixBytes(m.IPv4Src[:], poolPlens4[g.pick(len(poolPlens4))])
		prefixBytes(m.IPv4Dst[:], poolPlens4[g.pick(len(poolPlens4))])
		if g.chance(0.05) {
			binary.BigEndian.PutUint32(m.IPv4Src[:], g.r.Uint32()) // not a prefix
		}
	}
	if k.EthType == flow.EthTypeARP {
		if g.chance(0.5) {
			m.NwProto = 0xff
		}
	} else if g.chance(0.7) {
		m.NwProto = 0xff
		if g.chance(0.1) {
			m.NwTTL = 0xff
		}
		if k.NwProto != flow.IPProtoICMP {
			if n := poolPortLen[g.pick(len(poolPortLen))]; n > 0 {
				m.TpDst = uint16(0xffff << (16 - n))
			}
			if g.chance(0.2) {
				m.TpSrc = 0xffff
			}
			if g.chance(0.05) {
				m.TpDst = 0x00ff // not a prefix
			}
			if g.chance(0.05) {
				m.TCPFlags = 0x3
			}
		}
	}
	return Match{Key: k, Mask: m}
}

func (g *gen) priority() int {
	if g.chance(0.5) {
		return g.pick(4) // ties
	}
	return g.pick(1000)
}

// maskBits counts the bits m selects.
func maskBits(m *flow.Mask) int {
	n := 0
	for _, w := range m.Words() {
		n += bits.OnesCount64(w)
	}
	return n
}
