package classifier

import (
	"maps"
	"math/rand/v2"
	"testing"
)

// checkShape verifies the hamt's invariants: slots in bitmap order, no
// empty node, and every subtree below the root holding at least two keys
// (so the shape depends only on the key set). It returns the key count.
func checkShape[V any](t *testing.T, n hmap[V], root bool) int {
	t.Helper()
	if n.slots == nil && n.bm == 0 && root {
		return 0
	}
	if len(n.slots) == 0 || len(n.slots) != popcount(n.bm) {
		t.Fatalf("node with %d slots and bitmap %032b", len(n.slots), n.bm)
	}
	total := 0
	for _, s := range n.slots {
		if s.sub.slots != nil {
			total += checkShape(t, s.sub, false)
		} else {
			total++
		}
	}
	if !root && total < 2 {
		t.Fatalf("subtree holds %d keys", total)
	}
	return total
}

func popcount(x uint32) int {
	n := 0
	for ; x != 0; x &= x - 1 {
		n++
	}
	return n
}

// TestHAMTAgainstMap runs random operations against a Go map, with hashes
// drawn from pools that share long low-bit runs (deep paths) or not, and
// checks that every version taken between batches is left as it was.
func TestHAMTAgainstMap(t *testing.T) {
	tests := []struct {
		name string
		hash func(r *rand.Rand) uint64
	}{
		{"random", func(r *rand.Rand) uint64 { return r.Uint64() }},
		{"small", func(r *rand.Rand) uint64 { return uint64(r.IntN(64)) }},
		{"high bits only", func(r *rand.Rand) uint64 { return uint64(r.IntN(16)) << 58 }},
		{"shared low bits", func(r *rand.Rand) uint64 { return 0x5555555555 | uint64(r.IntN(8))<<40 | uint64(r.IntN(4))<<62 }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := rand.New(rand.NewPCG(1, 2))
			var root hmap[int]
			want := map[uint64]int{}
			type version struct {
				root hmap[int]
				want map[uint64]int
			}
			var old []version
			// Ops come in batches of 97, each owning the nodes it makes
			// and changing them in place; versions are taken between.
			owner := func(i int) uint64 { return uint64(1 + i/97) }
			for i := range 4000 {
				h := tt.hash(r)
				_, had := want[h]
				if r.IntN(3) == 0 {
					var removed bool
					root, removed = root.del(h, owner(i))
					if removed != had {
						t.Fatalf("op %d: del(%#x) = %v, map had it: %v", i, h, removed, had)
					}
					delete(want, h)
				} else {
					var added bool
					root, added = root.set(h, i, owner(i))
					if added == had {
						t.Fatalf("op %d: set(%#x) added = %v, map had it: %v", i, h, added, had)
					}
					want[h] = i
				}
				if i%97 == 96 { // the owner changes next op: this version is final
					old = append(old, version{root, maps.Clone(want)})
				}
				if n := checkShape(t, root, true); n != len(want) {
					t.Fatalf("op %d: %d keys, want %d", i, n, len(want))
				}
			}
			for vi, v := range append(old, version{root, want}) {
				for h, val := range v.want {
					if got, ok := v.root.get(h); !ok || got != val {
						t.Fatalf("version %d: get(%#x) = %d, %v; want %d", vi, h, got, ok, val)
					}
				}
				seen := 0
				v.root.each(func(h uint64, val int) bool {
					if v.want[h] != val {
						t.Fatalf("version %d: each yielded %#x=%d, want %d", vi, h, val, v.want[h])
					}
					seen++
					return true
				})
				if seen != len(v.want) {
					t.Fatalf("version %d: each yielded %d keys, want %d", vi, seen, len(v.want))
				}
				if _, ok := v.root.get(0xdeadbeefdeadbeef); ok {
					if _, in := v.want[0xdeadbeefdeadbeef]; !in {
						t.Fatalf("version %d: get of an absent key found it", vi)
					}
				}
			}
		})
	}
}
