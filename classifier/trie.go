package classifier

import "math/bits"

// bits128 is a field value of up to 128 bits, left-aligned: bit 0 is the
// most significant bit of [0]. Prefixes of a field are prefixes of this
// string of bits, whatever the field's width.
type bits128 [2]uint64

// bit returns bit i (0 = leftmost) of v.
func (v *bits128) bit(i int) int {
	if i < 64 {
		return int(v[0]>>(63-i)) & 1
	}
	return int(v[1]>>(127-i)) & 1
}

// prefix returns the first n bits of v, the rest cleared.
func (v bits128) prefix(n int) bits128 {
	m := prefixMask(n)
	return bits128{v[0] & m[0], v[1] & m[1]}
}

// prefixMask returns n leading one bits, 0 <= n <= 128.
func prefixMask(n int) bits128 {
	switch {
	case n <= 0:
		return bits128{}
	case n < 64:
		return bits128{^uint64(0) << (64 - n), 0}
	case n < 128:
		return bits128{^uint64(0), ^uint64(0) << (128 - n)}
	default:
		return bits128{^uint64(0), ^uint64(0)}
	}
}

// commonPrefix returns the number of leading bits a and b share (0..128).
func commonPrefix(a, b *bits128) int {
	if x := a[0] ^ b[0]; x != 0 {
		return bits.LeadingZeros64(x)
	}
	if x := a[1] ^ b[1]; x != 0 {
		return 64 + bits.LeadingZeros64(x)
	}
	return 128
}

// plenSet is a set of prefix lengths 1..128; length n is bit n-1.
type plenSet [2]uint64

func (s *plenSet) add(n int)      { s[(n-1)>>6] |= 1 << ((n - 1) & 63) }
func (s *plenSet) has(n int) bool { return s[(n-1)>>6]&(1<<((n-1)&63)) != 0 }

// A prefix trie: a persistent, path-compressed binary trie of the prefixes
// that rules match on one field (an IP address, a port), counted, so that a
// lookup can learn which prefix lengths could match a packet's value and
// how many of the value's leading bits it took to learn that. A subtable
// whose prefix length cannot match is skipped, and only those bits enter
// the megaflow mask instead of its whole field mask.
//
// Like the hamt, updates copy the path they change and leave old roots
// intact for concurrent readers.
type trieNode struct {
	bits bits128 // this node's prefix; bits past its length are zero
	// sub[b] holds the longer prefixes whose bit plen() is b. Every node
	// with count 0 has two children (the trie is path-compressed).
	sub [2]*trieNode
	// owner is the batch that made the node and may still change it in
	// place: nothing published can reach it yet. Zero: nobody may.
	owner  uint64
	count  uint32 // how many stored prefixes equal this one exactly
	length uint8  // length of the prefix, 0..128 (48-byte nodes)
}

func (n *trieNode) plen() int { return int(n.length) }

// lookup walks the trie along v, a value of width bits. It returns the set
// of lengths n such that v's first n bits are a stored prefix, and check:
// the number of v's leading bits the walk depended on. Whether a length n
// is in the set is decided by v's first min(n, check) bits: every value
// sharing those bits with v gets the same answer for n. It never allocates.
func (n *trieNode) lookup(v *bits128, width int) (set plenSet, check int) {
	for n != nil {
		cp := commonPrefix(v, &n.bits)
		if cp < n.plen() {
			// v leaves the trie inside this node's prefix, at bit cp.
			return set, cp + 1
		}
		if n.count > 0 && n.plen() > 0 {
			set.add(n.plen())
		}
		if n.plen() >= width {
			return set, width
		}
		next := n.sub[v.bit(n.plen())]
		if next == nil {
			// Nothing stored below here in v's direction; bit plen said so.
			return set, n.plen() + 1
		}
		n = next
	}
	return set, 0
}

// own returns n itself if owner may change it in place, else a copy that
// owner may change.
func (n *trieNode) own(owner uint64) *trieNode {
	if owner != 0 && n.owner == owner {
		return n
	}
	c := *n
	c.owner = owner
	return &c
}

// insert returns a trie that also counts the prefix (v, plen). Nodes that
// owner made are changed in place; all others are copied, so the old root
// stays as it was unless owner made it.
func (n *trieNode) insert(v bits128, plen int, owner uint64) *trieNode {
	v = v.prefix(plen)
	if n == nil {
		return &trieNode{bits: v, length: uint8(plen), count: 1, owner: owner}
	}
	cp := min(commonPrefix(&v, &n.bits), n.plen(), plen)
	if cp == n.plen() {
		c := n.own(owner)
		if plen == n.plen() {
			c.count++
		} else {
			b := v.bit(n.plen())
			c.sub[b] = c.sub[b].insert(v, plen, owner)
		}
		return c
	}
	// v diverges from n, or is a shorter prefix of n, at bit cp < n.plen().
	if cp == plen {
		nn := &trieNode{bits: v, length: uint8(plen), count: 1, owner: owner}
		nn.sub[n.bits.bit(plen)] = n
		return nn
	}
	br := &trieNode{bits: v.prefix(cp), length: uint8(cp), owner: owner}
	br.sub[n.bits.bit(cp)] = n
	br.sub[v.bit(cp)] = &trieNode{bits: v, length: uint8(plen), count: 1, owner: owner}
	return br
}

// remove returns a trie that counts the prefix (v, plen) once less; a
// prefix that is not there changes nothing. Ownership is as for insert.
func (n *trieNode) remove(v bits128, plen int, owner uint64) *trieNode {
	v = v.prefix(plen)
	if n == nil {
		return nil
	}
	var c *trieNode
	if n.plen() == plen {
		if n.bits != v || n.count == 0 {
			return n
		}
		c = n.own(owner)
		c.count--
	} else {
		if n.plen() > plen || commonPrefix(&v, &n.bits) < n.plen() {
			return n
		}
		b := v.bit(n.plen())
		sub := n.sub[b].remove(v, plen, owner)
		if sub == n.sub[b] {
			return n
		}
		c = n.own(owner)
		c.sub[b] = sub
	}
	if c.count > 0 {
		return c
	}
	switch {
	case c.sub[0] == nil:
		return c.sub[1]
	case c.sub[1] == nil:
		return c.sub[0]
	}
	return c
}

// trieWalk is a lookup of one value that goes only as deep as the questions
// asked so far need: a lookup that only asks about a /8 does not chase the
// pointers down to the /32s. Its answers are those of trieNode.lookup.
// The zero trieWalk is not ready; use start.
type trieWalk struct {
	v     bits128
	width int
	cur   *trieNode // next node to visit
	last  int       // plen of the last node visited; -1 before the root
	set   plenSet   // lengths found so far
	ended bool      // the walk is over; check is valid
	check int
}

func (w *trieWalk) start(root *trieNode, v bits128, width int) {
	*w = trieWalk{v: v, width: width, cur: root, last: -1}
}

// query reports whether length p is in lookup's set, and how many leading
// bits of the value decide that: min(p, check) of a full lookup.
func (w *trieWalk) query(p int) (bool, int) {
	if !w.ended && p <= w.last {
		// Every node of length <= p on the path has been visited, and
		// the value continues past bit p.
		return w.set.has(p), p
	}
	for !w.ended {
		n := w.cur
		if n == nil {
			w.ended, w.check = true, w.last+1
			break
		}
		cp := commonPrefix(&w.v, &n.bits)
		if cp < n.plen() {
			w.ended, w.check = true, cp+1
			break
		}
		if n.plen() > p {
			// Every stored prefix of length <= p on the value's path has
			// been seen, and the value follows the path past bit p.
			return w.set.has(p), p
		}
		if n.count > 0 && n.plen() > 0 {
			w.set.add(n.plen())
		}
		if n.plen() >= w.width {
			w.ended, w.check = true, w.width
			break
		}
		w.cur, w.last = n.sub[w.v.bit(n.plen())], n.plen()
	}
	return w.set.has(p), min(p, w.check)
}
