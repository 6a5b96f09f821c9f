package classifier

import (
	"math/rand/v2"
	"testing"

	"github.com/govswitch/govswitch/flow"
)

type storedPrefix struct {
	v    bits128
	plen int
}

// bruteSet is what trieNode.lookup must return as its set.
func bruteSet(stored map[storedPrefix]int, v bits128, width int) plenSet {
	var s plenSet
	for p, n := range stored {
		if n > 0 && p.plen <= width && v.prefix(p.plen) == p.v {
			s.add(p.plen)
		}
	}
	return s
}

// TestTrieAgainstBruteForce checks lookup's set against a scan of the
// stored prefixes, and its check bits: a value sharing min(n, check)
// leading bits with the looked-up value must agree on whether length n is
// in the set. Roots published between batches must be unchanged by later
// batches, which change their own nodes in place.
func TestTrieAgainstBruteForce(t *testing.T) {
	tests := []struct {
		name  string
		width int
		plens []int
		vals  int // values are drawn from a pool this large
	}{
		{"ipv4 acl", 32, []int{8, 16, 24, 32}, 20},
		{"ipv4 any length", 32, nil, 10},
		{"ipv6", 128, []int{32, 48, 64, 127, 128}, 10},
		{"port", 16, []int{4, 8, 12, 16}, 8},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := rand.New(rand.NewPCG(3, 4))
			pool := make([]bits128, tt.vals)
			for i := range pool {
				pool[i] = bits128{r.Uint64(), r.Uint64()}.prefix(tt.width)
				if i > 0 && r.IntN(2) == 0 { // share a prefix with another
					o := pool[r.IntN(i)]
					n := r.IntN(tt.width)
					pool[i] = bits128{o[0]&prefixMask(n)[0] | pool[i][0]&^prefixMask(n)[0], o[1]&prefixMask(n)[1] | pool[i][1]&^prefixMask(n)[1]}
				}
			}
			plen := func() int {
				if tt.plens != nil {
					return tt.plens[r.IntN(len(tt.plens))]
				}
				return 1 + r.IntN(tt.width)
			}
			var root *trieNode
			stored := map[storedPrefix]int{}
			var keys []storedPrefix
			type version struct {
				root   *trieNode
				stored map[storedPrefix]int
			}
			var old []version
			// Ops come in batches of 50, each owning the nodes it makes and
			// changing them in place; versions are taken between batches.
			owner := func(op int) uint64 { return uint64(1 + op/50) }
			for op := range 3000 {
				if len(keys) > 0 && r.IntN(3) == 0 {
					i := r.IntN(len(keys))
					p := keys[i]
					keys[i] = keys[len(keys)-1]
					keys = keys[:len(keys)-1]
					root = root.remove(p.v, p.plen, owner(op))
					stored[p]--
				} else {
					n := plen()
					p := storedPrefix{pool[r.IntN(len(pool))].prefix(n), n}
					root = root.insert(p.v, p.plen, owner(op))
					stored[p]++
					keys = append(keys, p)
				}
				if op%50 == 49 { // the owner changes next op: this version is final
					cp := map[storedPrefix]int{}
					for k, v := range stored {
						cp[k] = v
					}
					old = append(old, version{root, cp})
				}
			}
			old = append(old, version{root, stored})
			for vi, ver := range old {
				for range 200 {
					v := pool[r.IntN(len(pool))]
					if r.IntN(4) == 0 {
						v = bits128{r.Uint64(), r.Uint64()}.prefix(tt.width)
					}
					set, check := ver.root.lookup(&v, tt.width)
					// A lazy walk, asked in any order, answers the same.
					var w trieWalk
					w.start(ver.root, v, tt.width)
					for range 8 {
						n := 1 + r.IntN(tt.width)
						if has, bits := w.query(n); has != set.has(n) || bits != min(n, check) {
							t.Fatalf("version %d: walk query(%d) = %v, %d; lookup says %v, %d", vi, n, has, bits, set.has(n), min(n, check))
						}
					}
					if want := bruteSet(ver.stored, v, tt.width); set != want {
						t.Fatalf("version %d: lookup(%x) set %x, want %x", vi, v, set, want)
					}
					if check < 0 || check > tt.width {
						t.Fatalf("version %d: check %d out of range", vi, check)
					}
					for n := 1; n <= tt.width; n++ {
						keep := min(n, check)
						v2 := bits128{r.Uint64(), r.Uint64()}.prefix(tt.width)
						m := prefixMask(keep)
						v2 = bits128{v[0]&m[0] | v2[0]&^m[0], v[1]&m[1] | v2[1]&^m[1]}
						s2 := bruteSet(ver.stored, v2, tt.width)
						if s2.has(n) != set.has(n) {
							t.Fatalf("version %d: length %d decided by %d bits of %x, but %x disagrees", vi, n, keep, v, v2)
						}
					}
				}
			}
		})
	}
}

func TestPrefixField(t *testing.T) {
	tests := []struct {
		name string
		f    prefixField
		set  func(m *flow.Mask)
		want int
	}{
		{"ipv4 /24", fieldIPv4Src, func(m *flow.Mask) { m.IPv4Src = [4]byte{255, 255, 255, 0} }, 24},
		{"ipv4 /0", fieldIPv4Dst, func(m *flow.Mask) {}, 0},
		{"ipv4 /32", fieldIPv4Dst, func(m *flow.Mask) { m.IPv4Dst = [4]byte{255, 255, 255, 255} }, 32},
		{"ipv4 not a prefix", fieldIPv4Src, func(m *flow.Mask) { m.IPv4Src = [4]byte{255, 0, 255, 0} }, -1},
		{"ipv6 /65", fieldIPv6Src, func(m *flow.Mask) {
			for i := range 8 {
				m.IPv6Src[i] = 0xff
			}
			m.IPv6Src[8] = 0x80
		}, 65},
		{"port /16", fieldTpDst, func(m *flow.Mask) { m.TpDst = 0xffff }, 16},
		{"port /6", fieldTpSrc, func(m *flow.Mask) { m.TpSrc = 0xfc00 }, 6},
		{"port low bits", fieldTpDst, func(m *flow.Mask) { m.TpDst = 0x00ff }, -1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var m flow.Mask
			tt.set(&m)
			if got := tt.f.prefixLen(&m); got != tt.want {
				t.Fatalf("prefixLen = %d, want %d", got, tt.want)
			}
			if tt.want < 0 {
				return
			}
			// widen by the same length rebuilds exactly the mask.
			var w flow.Mask
			tt.f.widen(&w, tt.want)
			if w != m {
				t.Fatalf("widen(%d) = %+v, want %+v", tt.want, w, m)
			}
		})
	}
}
