package flow

import "math/bits"

// Hashing. One hash per Key per use, computed once and carried: the
// classifier, the governor and the subfacet table all take a precomputed
// hash. The function mixes whole 64-bit words with a 128-bit multiply, so a
// Key costs KeyWords multiplies and no allocation. Values are stable within
// a process (they depend on byte order) and must not be stored or sent.

const (
	hashK0 = 0xa0761d6478bd642f
	hashK1 = 0xe7037ed1a0b428db
	hashK2 = 0x8ebc6af09c88c6e3
)

// mum multiplies a and b to 128 bits and folds the halves.
func mum(a, b uint64) uint64 {
	hi, lo := bits.Mul64(a, b)
	return hi ^ lo
}

// HashAdd mixes one word into a running hash.
func HashAdd(h, w uint64) uint64 {
	return mum(h^w^hashK0, hashK1)
}

// HashFinish ends a running hash begun with basis and n words mixed in.
func HashFinish(h uint64, n int) uint64 {
	return mum(h^uint64(n)*8^hashK2, hashK1^hashK0)
}

// Hash returns the hash of every bit of k, seeded with basis.
func (k *Key) Hash(basis uint64) uint64 {
	h := basis
	for _, w := range k.Words() {
		h = HashAdd(h, w)
	}
	return HashFinish(h, KeyWords)
}

// Four-lane hashes. A Key is KeyWords words, and one multiply chain over
// all of them is as slow as the multiplier's latency times the words;
// four independent chains, joined at the end, let the processor run four
// multiplies at once. The miss path hashes whole keys several times per
// packet (its megaflow's UFID, the in-memory datapath's tables), so those
// use these. Hash, whose value the classifier's staged lookup reproduces
// word by word, keeps the single chain.

const (
	lane1 = 0x9e3779b97f4a7c15
	lane2 = 0xc2b2ae3d27d4eb4f
	lane3 = 0x165667b19e3779f9
)

// lanes finishes a four-lane hash of n words.
func lanes(a, b, c, d uint64, n int) uint64 {
	return HashFinish(HashAdd(HashAdd(HashAdd(a, b), c), d), n)
}

// HashWide returns a hash of every bit of k, seeded with basis, computed
// in four lanes: HashMasked under the exact mask.
func (k *Key) HashWide(basis uint64) uint64 {
	kw := k.Words()
	a, b, c, d := basis, basis^lane1, basis^lane2, basis^lane3
	i := 0
	for ; i+4 <= KeyWords; i += 4 {
		a, b, c, d = HashAdd(a, kw[i]), HashAdd(b, kw[i+1]), HashAdd(c, kw[i+2]), HashAdd(d, kw[i+3])
	}
	for ; i < KeyWords; i++ {
		a = HashAdd(a, kw[i])
	}
	return lanes(a, b, c, d, KeyWords)
}

// HashMasked returns the hash of k's bits under m, seeded with basis: keys
// equal under m hash equal. It equals k.Apply(m).HashWide(basis).
func (k *Key) HashMasked(m *Mask, basis uint64) uint64 {
	kw, mw := k.Words(), m.Words()
	a, b, c, d := basis, basis^lane1, basis^lane2, basis^lane3
	i := 0
	for ; i+4 <= KeyWords; i += 4 {
		a, b = HashAdd(a, kw[i]&mw[i]), HashAdd(b, kw[i+1]&mw[i+1])
		c, d = HashAdd(c, kw[i+2]&mw[i+2]), HashAdd(d, kw[i+3]&mw[i+3])
	}
	for ; i < KeyWords; i++ {
		a = HashAdd(a, kw[i]&mw[i])
	}
	return lanes(a, b, c, d, KeyWords)
}

// HashMaskedPair returns k.HashMasked(m, basis) and m.Key().HashWide(mbasis)
// in one pass.
func (k *Key) HashMaskedPair(m *Mask, basis, mbasis uint64) (kh, mh uint64) {
	kw, mw := k.Words(), m.Words()
	a, b, c, d := basis, basis^lane1, basis^lane2, basis^lane3
	e, f, g, h := mbasis, mbasis^lane1, mbasis^lane2, mbasis^lane3
	i := 0
	for ; i+4 <= KeyWords; i += 4 {
		a, b = HashAdd(a, kw[i]&mw[i]), HashAdd(b, kw[i+1]&mw[i+1])
		c, d = HashAdd(c, kw[i+2]&mw[i+2]), HashAdd(d, kw[i+3]&mw[i+3])
		e, f = HashAdd(e, mw[i]), HashAdd(f, mw[i+1])
		g, h = HashAdd(g, mw[i+2]), HashAdd(h, mw[i+3])
	}
	for ; i < KeyWords; i++ {
		a = HashAdd(a, kw[i]&mw[i])
		e = HashAdd(e, mw[i])
	}
	return lanes(a, b, c, d, KeyWords), lanes(e, f, g, h, KeyWords)
}

// HashWords hashes words [from, to) of k under m, seeded with basis: the
// building block of a staged lookup that hashes one stage at a time
// (see StageEnd). HashWords(m, 0, KeyWords, basis) equals
// k.Apply(m).Hash(basis).
func (k *Key) HashWords(m *Mask, from, to int, basis uint64) uint64 {
	kw, mw := k.Words(), m.Words()
	h := basis
	for i := from; i < to; i++ {
		h = HashAdd(h, kw[i]&mw[i])
	}
	return HashFinish(h, to-from)
}
