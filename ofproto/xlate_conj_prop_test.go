package ofproto

import (
	"math/rand"
	"testing"

	"github.com/govswitch/govswitch/flow"
	"github.com/govswitch/govswitch/ofproto/openflow"
)

// TestConjLookupMegaflowProperty: for random conjunctive tables, the
// answer of a conjunctive lookup holds for every key that agrees with the
// looked-up one on the bits the lookup says it depended on (the megaflow
// is never too wide), and it is the rule a brute-force reading of the
// conjunction semantics picks.
func TestConjLookupMegaflowProperty(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	srcs := [][4]byte{{10, 0, 0, 1}, {10, 0, 0, 2}, {10, 0, 1, 0}, {10, 0, 0, 3}}
	ports := []uint16{80, 443, 8080, 22}
	for iter := 0; iter < 60; iter++ {
		x := testBridge(t)
		ts := x.Tables
		type softRule struct {
			src  int // -1: matches on the port
			port int
			id   uint32
			cl   uint8
			pri  uint16
		}
		var softs []softRule
		nConj := 1 + rng.Intn(3)
		for id := uint32(1); id <= uint32(nConj); id++ {
			pri := uint16(100 + rng.Intn(3)*10)
			for _, s := range rng.Perm(len(srcs))[:1+rng.Intn(2)] {
				softs = append(softs, softRule{src: s, id: id, cl: 0, pri: pri})
			}
			for _, p := range rng.Perm(len(ports))[:1+rng.Intn(2)] {
				softs = append(softs, softRule{src: -1, port: p, id: id, cl: 1, pri: pri})
			}
			if rng.Intn(4) != 0 {
				sport := rng.Intn(2) == 0 // the conj_id flow matches more than conj_id
				mustAdd(t, x, 0, func(k *flow.Key, m *flow.Mask) {
					k.ConjID, m.ConjID = id, ^uint32(0)
					if sport {
						k.EthType, m.EthType = flow.EthTypeIPv4, 0xffff
						k.NwProto, m.NwProto = flow.IPProtoTCP, 0xff
						k.TpSrc, m.TpSrc = 40000, 0xffff
					}
				},
					uint16(50+rng.Intn(100)), apply(openflow.Output(id, 0)))
			}
		}
		for _, s := range softs {
			s := s
			mustAdd(t, x, 0, func(k *flow.Key, m *flow.Mask) {
				k.EthType, m.EthType = flow.EthTypeIPv4, 0xffff
				if s.src >= 0 {
					k.IPv4Src, m.IPv4Src = srcs[s.src], [4]byte{0xff, 0xff, 0xff, 0xff}
				} else {
					k.NwProto, m.NwProto = flow.IPProtoTCP, 0xff
					k.TpDst, m.TpDst = ports[s.port], 0xffff
				}
			}, s.pri, apply(openflow.Conjunction(s.id, s.cl, 2)))
		}
		// Some hard rules.
		for i := 0; i < 3; i++ {
			p := ports[rng.Intn(len(ports))]
			mustAdd(t, x, 0, func(k *flow.Key, m *flow.Mask) {
				k.EthType, m.EthType = flow.EthTypeIPv4, 0xffff
				k.NwProto, m.NwProto = flow.IPProtoTCP, 0xff
				k.TpDst, m.TpDst = p, 0xffff
			}, uint16(rng.Intn(200)), apply(openflow.Output(10+uint32(i), 0)))
		}
		mustAdd(t, x, 0, func(*flow.Key, *flow.Mask) {}, 0, apply())
		v := ts.View()
		for n := 0; n < 40; n++ {
			k := pkt(11)
			k.IPv4Src = srcs[rng.Intn(len(srcs))]
			k.TpDst = ports[rng.Intn(len(ports))]
			var wc flow.Mask
			r := v.Lookup(0, &k, &wc)
			if wc.ConjID != 0 || k.ConjID != 0 {
				t.Fatalf("conj_id leaked: wc %#x key %d", wc.ConjID, k.ConjID)
			}
			for j := 0; j < 20; j++ {
				k2 := pkt(11)
				k2.IPv4Src = srcs[rng.Intn(len(srcs))]
				k2.TpDst = ports[rng.Intn(len(ports))]
				k2.IPv4Src[3] ^= byte(rng.Intn(2))
				k2.TpSrc += uint16(rng.Intn(2))
				if !k2.EqualMasked(&k, &wc) {
					continue
				}
				if r2 := v.Lookup(0, &k2, nil); r2 != r {
					t.Fatalf("iter %d: key %v/%d gave rule %p, but %v/%d (same on the mask) gave %p",
						iter, k.IPv4Src, k.TpDst, r, k2.IPv4Src, k2.TpDst, r2)
				}
			}
		}
	}
}
