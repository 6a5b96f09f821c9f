package flow

import (
	"reflect"
	"testing"
	"unsafe"
)

// TestKeyLayout pins the properties Words and the hashes rely on: the size
// is whole words, no field straddles a stage boundary, and there is no
// implicit padding (every byte belongs to a named or blank field, so a
// word-wise comparison compares only what the fields hold).
func TestKeyLayout(t *testing.T) {
	typ := reflect.TypeOf(Key{})
	if typ.Size()%8 != 0 {
		t.Fatalf("Key is %d bytes, not whole words", typ.Size())
	}
	var next uintptr
	for i := 0; i < typ.NumField(); i++ {
		f := typ.Field(i)
		if f.Offset != next {
			t.Errorf("implicit padding of %d bytes before %s", f.Offset-next, f.Name)
		}
		next = f.Offset + f.Type.Size()
	}
	if next != typ.Size() {
		t.Errorf("implicit padding of %d bytes at the end", typ.Size()-next)
	}
	if typ.Size() != unsafe.Sizeof(Mask{}) {
		t.Errorf("Mask and Key differ in size")
	}
	tt := reflect.TypeOf(Tunnel{})
	var sum uintptr
	for i := 0; i < tt.NumField(); i++ {
		sum += tt.Field(i).Type.Size()
	}
	if sum != tt.Size() {
		t.Errorf("Tunnel has %d bytes of implicit padding", tt.Size()-sum)
	}
	prev := 0
	for i, end := range StageEnd {
		if end <= prev {
			t.Errorf("stage %d is empty: [%d,%d)", i, prev, end)
		}
		prev = end
	}
}

func TestMaskOps(t *testing.T) {
	var k1, k2 Key
	k1.EthType, k2.EthType = EthTypeIPv4, EthTypeIPv4
	k1.IPv4Src = [4]byte{10, 0, 0, 1}
	k2.IPv4Src = [4]byte{10, 0, 0, 2}
	var m Mask
	m.EthType = 0xffff
	if !k1.EqualMasked(&k2, &m) {
		t.Errorf("keys differing only outside the mask compare unequal")
	}
	if k1.HashMasked(&m, 7) != k2.HashMasked(&m, 7) {
		t.Errorf("keys equal under the mask hash differently")
	}
	m.IPv4Src = [4]byte{255, 255, 255, 0}
	if !k1.EqualMasked(&k2, &m) {
		t.Errorf("/24 mask should not see the last octet")
	}
	m.IPv4Src = [4]byte{255, 255, 255, 255}
	if k1.EqualMasked(&k2, &m) {
		t.Errorf("/32 mask should see the last octet")
	}
	if k1.HashMasked(&m, 7) == k2.HashMasked(&m, 7) {
		t.Errorf("different masked keys hash equal (possible, but not for these)")
	}
	a := k1.Apply(&m)
	if a.HashWide(7) != k1.HashMasked(&m, 7) {
		t.Errorf("Apply+HashWide != HashMasked")
	}
	if ex := ExactMask(); k1.HashMasked(&ex, 3) != k1.HashWide(3) {
		t.Errorf("HashMasked under the exact mask != HashWide")
	}
	if kh, mh := k1.HashMaskedPair(&m, 7, 9); kh != k1.HashMasked(&m, 7) || mh != m.Key().HashWide(9) {
		t.Errorf("HashMaskedPair = %x, %x; want %x, %x", kh, mh, k1.HashMasked(&m, 7), m.Key().HashWide(9))
	}
	if k1.HashWords(&m, 0, KeyWords, 7) != a.Hash(7) {
		t.Errorf("HashWords over all words != Apply+Hash")
	}
	// Every word, each lane and the tail, changes HashWide.
	for w := 0; w < KeyWords; w++ {
		k3 := k1
		k3.Words()[w] ^= 1 << (w % 64)
		if k3.HashWide(7) == k1.HashWide(7) {
			t.Errorf("word %d does not change HashWide", w)
		}
	}
	e := ExactMask()
	if !e.IsExact() || e.IsZero() || !e.Covers(&m) || m.Covers(&e) {
		t.Errorf("exact mask predicates wrong")
	}
	var z Mask
	if !z.IsZero() || !m.Covers(&z) {
		t.Errorf("zero mask predicates wrong")
	}
	z.Or(&m)
	if z != m {
		t.Errorf("Or into zero should copy")
	}
	z.And(&Mask{})
	if !z.IsZero() {
		t.Errorf("And with zero should clear")
	}
}

func TestHashAllocs(t *testing.T) {
	var k Key
	k.EthType = EthTypeIPv6
	m := ExactMask()
	var sink uint64
	if n := testing.AllocsPerRun(100, func() {
		sink += k.Hash(1) + k.HashMasked(&m, 2) + k.HashWords(&m, 0, StageEnd[1], 3)
	}); n != 0 {
		t.Errorf("hashing allocates %v times per run", n)
	}
	_ = sink
}

func BenchmarkHash(b *testing.B) {
	var k Key
	k.EthType = EthTypeIPv4
	m := ExactMask()
	b.Run("Hash", func(b *testing.B) {
		b.ReportAllocs()
		var s uint64
		for i := 0; i < b.N; i++ {
			k.InPort = uint32(i)
			s += k.Hash(0)
		}
		_ = s
	})
	b.Run("HashMasked", func(b *testing.B) {
		b.ReportAllocs()
		var s uint64
		for i := 0; i < b.N; i++ {
			k.InPort = uint32(i)
			s += k.HashMasked(&m, 0)
		}
		_ = s
	})
}
