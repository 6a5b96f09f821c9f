package classifier

import "math/bits"

// A persistent hash array mapped trie keyed by 64-bit hashes. Every update
// returns a new root and copies only the nodes on the path to the changed
// slot (at most 13 of them); the old root stays valid and unchanged. That is
// what lets writers build the next version of a subtable while readers keep
// walking the previous one without any lock.
//
// Keys are whole hashes: two different values with equal hashes are one key
// here, and callers that need to tell them apart store a small collision
// list as the value (see subtable.table).

const hamtBits = 5 // 32-way fan-out; level i uses hash bits [5i, 5i+5)

// hnode is one level of the trie. Present slots are packed in slots, in
// index order; bitmap says which of the 32 indices are present.
type hnode[V any] struct {
	bitmap uint32
	slots  []hslot[V]
}

// hslot is either a subtree (sub != nil) or one key with its value.
type hslot[V any] struct {
	sub  *hnode[V]
	hash uint64
	val  V
}

// get returns the value stored under h. It never allocates.
func (n *hnode[V]) get(h uint64) (V, bool) {
	for shift := uint(0); n != nil; shift += hamtBits {
		bit := uint32(1) << ((h >> shift) & 31)
		if n.bitmap&bit == 0 {
			break
		}
		s := &n.slots[bits.OnesCount32(n.bitmap&(bit-1))]
		if s.sub == nil {
			if s.hash == h {
				return s.val, true
			}
			break
		}
		n = s.sub
	}
	var zero V
	return zero, false
}

// set returns a trie holding v under h, replacing any value there, and
// whether h was new.
func (n *hnode[V]) set(h uint64, v V) (*hnode[V], bool) {
	return n.setAt(h, v, 0)
}

func (n *hnode[V]) setAt(h uint64, v V, shift uint) (*hnode[V], bool) {
	bit := uint32(1) << ((h >> shift) & 31)
	if n == nil {
		return &hnode[V]{bitmap: bit, slots: []hslot[V]{{hash: h, val: v}}}, true
	}
	pos := bits.OnesCount32(n.bitmap & (bit - 1))
	if n.bitmap&bit == 0 {
		c := &hnode[V]{bitmap: n.bitmap | bit, slots: make([]hslot[V], len(n.slots)+1)}
		copy(c.slots, n.slots[:pos])
		c.slots[pos] = hslot[V]{hash: h, val: v}
		copy(c.slots[pos+1:], n.slots[pos:])
		return c, true
	}
	c := n.clone()
	s := &c.slots[pos]
	switch {
	case s.sub != nil:
		sub, added := s.sub.setAt(h, v, shift+hamtBits)
		s.sub = sub
		return c, added
	case s.hash == h:
		s.val = v
		return c, false
	default:
		*s = hslot[V]{sub: hpair(s.hash, s.val, h, v, shift+hamtBits)}
		return c, true
	}
}

// hpair builds the subtree holding two different hashes, starting at shift.
// Different 64-bit hashes differ somewhere in the 13 levels, so it ends.
func hpair[V any](h1 uint64, v1 V, h2 uint64, v2 V, shift uint) *hnode[V] {
	i1, i2 := (h1>>shift)&31, (h2>>shift)&31
	if i1 == i2 {
		return &hnode[V]{bitmap: 1 << i1, slots: []hslot[V]{{sub: hpair(h1, v1, h2, v2, shift+hamtBits)}}}
	}
	a, b := hslot[V]{hash: h1, val: v1}, hslot[V]{hash: h2, val: v2}
	if i1 > i2 {
		a, b = b, a
	}
	return &hnode[V]{bitmap: 1<<i1 | 1<<i2, slots: []hslot[V]{a, b}}
}

// del returns a trie without h, and whether h was there. A subtree left
// with a single key collapses into its parent's slot, so the shape depends
// only on the set of keys.
func (n *hnode[V]) del(h uint64) (*hnode[V], bool) {
	return n.delAt(h, 0)
}

func (n *hnode[V]) delAt(h uint64, shift uint) (*hnode[V], bool) {
	if n == nil {
		return nil, false
	}
	bit := uint32(1) << ((h >> shift) & 31)
	if n.bitmap&bit == 0 {
		return n, false
	}
	pos := bits.OnesCount32(n.bitmap & (bit - 1))
	s := n.slots[pos]
	if s.sub == nil {
		if s.hash != h {
			return n, false
		}
		if len(n.slots) == 1 {
			return nil, true
		}
		c := &hnode[V]{bitmap: n.bitmap &^ bit, slots: make([]hslot[V], len(n.slots)-1)}
		copy(c.slots, n.slots[:pos])
		copy(c.slots[pos:], n.slots[pos+1:])
		return c, true
	}
	sub, removed := s.sub.delAt(h, shift+hamtBits)
	if !removed {
		return n, false
	}
	switch {
	case sub == nil:
		// Subtrees hold at least two keys, so this does not happen; if it
		// did, dropping the empty slot is still the right answer.
		if len(n.slots) == 1 {
			return nil, true
		}
		c := &hnode[V]{bitmap: n.bitmap &^ bit, slots: make([]hslot[V], len(n.slots)-1)}
		copy(c.slots, n.slots[:pos])
		copy(c.slots[pos:], n.slots[pos+1:])
		return c, true
	case len(sub.slots) == 1 && sub.slots[0].sub == nil:
		if len(n.slots) == 1 && shift > 0 {
			// n itself now holds one key: let our parent collapse us.
			return sub, true
		}
		c := n.clone()
		c.slots[pos] = sub.slots[0]
		return c, true
	default:
		c := n.clone()
		c.slots[pos].sub = sub
		return c, true
	}
}

func (n *hnode[V]) clone() *hnode[V] {
	c := &hnode[V]{bitmap: n.bitmap, slots: make([]hslot[V], len(n.slots))}
	copy(c.slots, n.slots)
	return c
}

// each calls f for every key and value until f returns false; it reports
// whether it ran to the end. The order is the hash order.
func (n *hnode[V]) each(f func(h uint64, v V) bool) bool {
	if n == nil {
		return true
	}
	for i := range n.slots {
		s := &n.slots[i]
		if s.sub != nil {
			if !s.sub.each(f) {
				return false
			}
		} else if !f(s.hash, s.val) {
			return false
		}
	}
	return true
}
