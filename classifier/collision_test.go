package classifier

import (
	"slices"
	"testing"

	"github.com/govswitch/govswitch/flow"
)

// TestCollisionChain plants two masked keys under one 64-bit hash (which
// real keys reach about once in 2^64) and checks that lookups, inserts and
// removes walk the chain, copy only what they change, and leave the old
// version intact.
func TestCollisionChain(t *testing.T) {
	var m flow.Mask
	m.TpDst = 0xffff
	st := newSubtable[int](&m)
	k1, k2 := flow.Key{TpDst: 1}, flow.Key{TpDst: 2}
	r1 := &Rule[int]{Match: Match{Key: k1, Mask: m}, Priority: 1, Value: 1}
	r2 := &Rule[int]{Match: Match{Key: k2, Mask: m}, Priority: 1, Value: 2}
	st, _, _ = st.insert(r1, &k1, 0)
	_, h1 := st.hashes(&k1)
	head, _ := st.table.get(h1)
	// k2's entry goes in front of k1's, under k1's hash.
	st.table, _ = st.table.set(h1, &entry[int]{next: head, vals: st.compact(&k2), rules: []*Rule[int]{r2}}, 0)
	before := st

	rules := func(st *subtable[int], k *flow.Key) []*Rule[int] {
		if e := st.find(k); e != nil {
			return e.rules
		}
		return nil
	}
	var tc trieCtx
	var wc flow.Mask
	if got := st.lookup(&k1, &wc, &tc); got != r1 {
		t.Fatalf("lookup past the colliding entry = %v, want r1", got)
	}

	hi := &Rule[int]{Match: r1.Match, Priority: 9, Value: 3}
	st2, replaced, newEntry := st.insert(hi, &k1, 0)
	if replaced != nil || newEntry {
		t.Fatalf("insert into a chained entry: replaced %v, new entry %v", replaced, newEntry)
	}
	if got := rules(st2, &k1); !slices.Equal(got, []*Rule[int]{hi, r1}) {
		t.Fatalf("chained entry holds %v, want [hi r1]", got)
	}
	if got, _ := st2.table.get(h1); got == nil || got.rules[0] != r2 || got.next == nil {
		t.Fatalf("chain head lost k2's entry")
	}
	if got := rules(before, &k1); !slices.Equal(got, []*Rule[int]{r1}) {
		t.Fatalf("old version changed: %v", got)
	}

	st3, ok, gone := st2.remove(hi, &k1, 0)
	if !ok || gone {
		t.Fatalf("remove hi: ok %v, gone %v", ok, gone)
	}
	st4, ok, gone := st3.remove(r1, &k1, 0)
	if !ok || !gone {
		t.Fatalf("remove r1: ok %v, gone %v", ok, gone)
	}
	if rules(st4, &k1) != nil {
		t.Fatalf("k1 still found after its last rule went")
	}
	if got, _ := st4.table.get(h1); got == nil || got.next != nil || got.rules[0] != r2 {
		t.Fatalf("chain after removing k1's entry is not just k2's")
	}
	if got := rules(st2, &k1); !slices.Equal(got, []*Rule[int]{hi, r1}) {
		t.Fatalf("removes changed an older version: %v", got)
	}
}
