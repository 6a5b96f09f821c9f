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

// HashMasked returns the hash of k's bits under m, seeded with basis: keys
// equal under m hash equal. It equals k.Apply(m).Hash(basis).
func (k *Key) HashMasked(m *Mask, basis uint64) uint64 {
	kw, mw := k.Words(), m.Words()
	h := basis
	for i := range kw {
		h = HashAdd(h, kw[i]&mw[i])
	}
	return HashFinish(h, KeyWords)
}

// HashMaskedPair returns k.HashMasked(m, basis) and m.Key().Hash(mbasis)
// in one pass: the two hash chains are independent, so the processor runs
// them side by side in about the time of one.
func (k *Key) HashMaskedPair(m *Mask, basis, mbasis uint64) (kh, mh uint64) {
	kw, mw := k.Words(), m.Words()
	kh, mh = basis, mbasis
	for i := range kw {
		kh = HashAdd(kh, kw[i]&mw[i])
		mh = HashAdd(mh, mw[i])
	}
	return HashFinish(kh, KeyWords), HashFinish(mh, KeyWords)
}

// HashWords hashes words [from, to) of k under m, seeded with basis: the
// building block of a staged lookup that hashes one stage at a time
// (see StageEnd). HashWords(m, 0, KeyWords, basis) equals HashMasked.
func (k *Key) HashWords(m *Mask, from, to int, basis uint64) uint64 {
	kw, mw := k.Words(), m.Words()
	h := basis
	for i := from; i < to; i++ {
		h = HashAdd(h, kw[i]&mw[i])
	}
	return HashFinish(h, to-from)
}
