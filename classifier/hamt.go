package classifier

import "math/bits"

// A persistent hash array mapped trie keyed by 64-bit hashes. Every update
// returns a new root and copies only the nodes on the path to the changed
// slot (at most 13 of them); the old root stays valid and unchanged. That is
// what lets writers build the next version of a subtable while readers keep
// walking the previous one without any lock.
//
// Keys are whole hashes: two different values with equal hashes are one key
// here, and callers that need to tell them apart chain them in the value
// (see entry.next).
//
// Layout: a node is a bitmap and a packed slot array, held by value in its
// parent's slot, so a lookup touches one slot array per level: one cache
// miss, not two.
//
// Ownership: a node records the batch that made it (owner). Updates made
// on behalf of that same batch change its slots in place, since nothing
// published can reach it yet; all other nodes are copied. Owner 0 owns
// nothing: every update copies.

const hamtBits = 5 // 32-way fan-out; level i uses hash bits [5i, 5i+5)

// hmap is one node of the trie, and a whole trie when it is the root. The
// zero hmap is empty. Present slots are packed in slots, in index order;
// bm says which of the 32 indices are present.
type hmap[V any] struct {
	bm    uint32
	slots []hslot[V]
	owner uint64
}

// hslot is either a subtree (sub.slots != nil) or one key with its value.
type hslot[V any] struct {
	sub  hmap[V]
	hash uint64
	val  V
}

// get returns the value stored under h. It never allocates.
func (n hmap[V]) get(h uint64) (V, bool) {
	for shift := uint(0); ; shift += hamtBits {
		bit := uint32(1) << ((h >> shift) & 31)
		if n.bm&bit == 0 {
			break
		}
		s := &n.slots[bits.OnesCount32(n.bm&(bit-1))]
		if s.sub.slots == nil {
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
// whether h was new. Ownership is as the file comment says.
func (n hmap[V]) set(h uint64, v V, owner uint64) (hmap[V], bool) {
	return n.setAt(h, v, 0, owner)
}

func (n hmap[V]) setAt(h uint64, v V, shift uint, owner uint64) (hmap[V], bool) {
	bit := uint32(1) << ((h >> shift) & 31)
	pos := bits.OnesCount32(n.bm & (bit - 1))
	if n.bm&bit == 0 {
		c := hmap[V]{bm: n.bm | bit, slots: make([]hslot[V], len(n.slots)+1), owner: owner}
		copy(c.slots, n.slots[:pos])
		c.slots[pos] = hslot[V]{hash: h, val: v}
		copy(c.slots[pos+1:], n.slots[pos:])
		return c, true
	}
	c := n.mut(owner)
	s := &c.slots[pos]
	switch {
	case s.sub.slots != nil:
		sub, added := s.sub.setAt(h, v, shift+hamtBits, owner)
		s.sub = sub
		return c, added
	case s.hash == h:
		s.val = v
		return c, false
	default:
		*s = hslot[V]{sub: hpair(s.hash, s.val, h, v, shift+hamtBits, owner)}
		return c, true
	}
}

// hpair builds the subtree holding two different hashes, starting at shift.
// Different 64-bit hashes differ somewhere in the 13 levels, so it ends.
func hpair[V any](h1 uint64, v1 V, h2 uint64, v2 V, shift uint, owner uint64) hmap[V] {
	i1, i2 := (h1>>shift)&31, (h2>>shift)&31
	if i1 == i2 {
		return hmap[V]{bm: 1 << i1, slots: []hslot[V]{{sub: hpair(h1, v1, h2, v2, shift+hamtBits, owner)}}, owner: owner}
	}
	a, b := hslot[V]{hash: h1, val: v1}, hslot[V]{hash: h2, val: v2}
	if i1 > i2 {
		a, b = b, a
	}
	return hmap[V]{bm: 1<<i1 | 1<<i2, slots: []hslot[V]{a, b}, owner: owner}
}

// del returns a trie without h, and whether h was there. A subtree left
// with a single key collapses into its parent's slot, so the shape depends
// only on the set of keys.
func (n hmap[V]) del(h uint64, owner uint64) (hmap[V], bool) {
	return n.delAt(h, 0, owner)
}

func (n hmap[V]) delAt(h uint64, shift uint, owner uint64) (hmap[V], bool) {
	bit := uint32(1) << ((h >> shift) & 31)
	if n.bm&bit == 0 {
		return n, false
	}
	pos := bits.OnesCount32(n.bm & (bit - 1))
	s := &n.slots[pos]
	if s.sub.slots == nil {
		if s.hash != h {
			return n, false
		}
		return n.without(pos, bit, owner), true
	}
	sub, removed := s.sub.delAt(h, shift+hamtBits, owner)
	if !removed {
		return n, false
	}
	switch {
	case sub.slots == nil:
		// Subtrees hold at least two keys, so this does not happen; if it
		// did, dropping the empty slot is still the right answer.
		return n.without(pos, bit, owner), true
	case len(sub.slots) == 1 && sub.slots[0].sub.slots == nil:
		if len(n.slots) == 1 && shift > 0 {
			// n itself now holds one key: let our parent collapse us.
			return sub, true
		}
		c := n.mut(owner)
		c.slots[pos] = sub.slots[0]
		return c, true
	default:
		c := n.mut(owner)
		c.slots[pos].sub = sub
		return c, true
	}
}

// without returns n minus the slot at pos, whose bitmap bit is bit.
func (n hmap[V]) without(pos int, bit uint32, owner uint64) hmap[V] {
	if len(n.slots) == 1 {
		return hmap[V]{}
	}
	c := hmap[V]{bm: n.bm &^ bit, slots: make([]hslot[V], len(n.slots)-1), owner: owner}
	copy(c.slots, n.slots[:pos])
	copy(c.slots[pos:], n.slots[pos+1:])
	return c
}

// mut returns n to change in place if owner made it, else a copy that
// owner made.
func (n hmap[V]) mut(owner uint64) hmap[V] {
	if owner != 0 && n.owner == owner {
		return n
	}
	c := hmap[V]{bm: n.bm, slots: make([]hslot[V], len(n.slots)), owner: owner}
	copy(c.slots, n.slots)
	return c
}

// each calls f for every key and value until f returns false; it reports
// whether it ran to the end. The order is the hash order.
func (n hmap[V]) each(f func(h uint64, v V) bool) bool {
	for i := range n.slots {
		s := &n.slots[i]
		if s.sub.slots != nil {
			if !s.sub.each(f) {
				return false
			}
		} else if !f(s.hash, s.val) {
			return false
		}
	}
	return true
}
