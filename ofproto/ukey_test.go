package ofproto

import (
	"math/rand/v2"
	"testing"
	"unsafe"

	"github.com/govswitch/govswitch/flow"
)

func TestPackedKeyRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var k, back flow.Key
	flow.ExtractInto(&k, synFrame(7), &flow.Metadata{InPort: 3})
	var p packedKey
	exact := flow.ExactMask()
	p.set(&k, &exact)
	if p.spill != nil {
		t.Fatalf("a TCP/IPv4 key spilled")
	}
	p.get(&back)
	if back != k {
		t.Fatalf("round trip: got %v, want %v", back, k)
	}
	// A megaflow keeps only what its mask matches.
	mf := flow.Mask{InPort: ^uint32(0), EthType: ^uint16(0), TpDst: 0xffc0}
	p.set(&k, &mf)
	p.get(&back)
	if want := k.Apply(&mf); back != want {
		t.Fatalf("masked round trip: got %v, want %v", back, want)
	}
	// Random keys with 0..KeyWords nonzero words, across the spill limit.
	for n := 0; n <= flow.KeyWords; n++ {
		for rep := 0; rep < 20; rep++ {
			k = flow.Key{}
			ws := k.Words()
			for _, i := range rng.Perm(flow.KeyWords)[:n] {
				ws[i] = rng.Uint64() | 1
			}
			p.set(&k, &exact)
			if (p.spill != nil) != (n > packedInline) {
				t.Fatalf("%d nonzero words: spill=%v", n, p.spill != nil)
			}
			back = flow.Key{Priority: 99} // get must overwrite everything
			p.get(&back)
			if back != k {
				t.Fatalf("%d nonzero words: round trip differs", n)
			}
		}
	}
}

func TestUkeySize(t *testing.T) {
	// The point of packedKey and the interned mask: a full Key and Mask
	// were 624 bytes of every ukey.
	if s := unsafe.Sizeof(ukey{}); s > 256 {
		t.Errorf("a ukey is %d bytes, want at most 256", s)
	}
}

func TestMaskTableInterns(t *testing.T) {
	var mt maskTable
	a, b := flow.ExactMask(), flow.Mask{InPort: ^uint32(0)}
	ia := mt.intern(&a)
	if mt.intern(&a) != ia || mt.Len() != 1 {
		t.Fatalf("the same mask interned twice, or Len %d != 1", mt.Len())
	}
	ib := mt.intern(&b)
	if ib == ia || ib.mask != b || mt.Len() != 2 {
		t.Fatalf("distinct masks share an entry, or Len %d != 2", mt.Len())
	}
	mt.release(ia)
	mt.release(ia)
	if mt.Len() != 1 {
		t.Fatalf("after releasing a: Len %d, want 1", mt.Len())
	}
	if mt.intern(&a) != ia {
		t.Fatalf("a mask whose last user went was not reused")
	}
	// Many short-lived masks: the table sweeps the unused ones.
	for i := 0; i < 4*maskSweepAt; i++ {
		m := flow.Mask{Mark: uint32(i) + 1}
		mt.release(mt.intern(&m))
	}
	if n := len(mt.m); n > maskSweepAt+1 {
		t.Errorf("the table holds %d masks after churn; want them swept (at most %d)", n, maskSweepAt+1)
	}
	if mt.Len() != 2 || mt.m[a] != ia || mt.m[b] != ib {
		t.Errorf("a sweep dropped masks in use: Len %d", mt.Len())
	}
}
