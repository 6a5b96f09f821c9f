package classifier

import (
	"encoding/binary"
	"testing"

	"github.com/govswitch/govswitch/flow"
)

// FuzzOps drives a classifier and the linear reference with the same
// operations, decoded from the fuzzer's bytes, two bytes per operation:
// an opcode and an argument. Rules and keys come from the ACL-like
// generator, seeded by the input, so the fuzzer steers the order of
// inserts, removes, batch boundaries, aborts and lookups, and every
// lookup's winner and megaflow mask are checked as in the property test.
//
//	go test -run XXX -fuzz FuzzOps -fuzztime 60s ./classifier
func FuzzOps(f *testing.F) {
	f.Add([]byte{0, 0, 0, 1, 0, 2, 4, 0, 4, 1})
	f.Add([]byte{0, 0, 0, 0, 1, 0, 4, 0, 2, 0, 0, 3, 1, 1, 3, 0, 4, 5})
	f.Add([]byte{2, 0, 0, 9, 0, 8, 1, 0, 5, 0, 4, 2, 0, 7, 1, 7, 4, 9})
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 400 {
			return
		}
		var seed uint64
		if len(data) >= 8 {
			seed = binary.LittleEndian.Uint64(data)
		}
		g := newGen(seed)
		var c Classifier[int]
		var ref, committed linear
		var rules []*Rule[int]
		var b *Batch[int]
		for i := 0; i+1 < len(data); i += 2 {
			op, arg := data[i]%6, int(data[i+1])
			switch op {
			case 0: // insert a new rule, or an old one again
				r := &Rule[int]{Match: g.match(), Priority: g.priority(), Value: len(rules)}
				if arg&1 == 1 && len(rules) > 0 {
					r = rules[arg%len(rules)]
				} else {
					rules = append(rules, r)
				}
				want := ref.insert(r)
				var got *Rule[int]
				if b != nil {
					got = b.Insert(r)
				} else {
					got = c.Insert(r)
				}
				if got != want {
					t.Fatalf("op %d: Insert replaced %s, reference %s", i/2, ruleName(got), ruleName(want))
				}
			case 1: // remove
				if len(rules) == 0 {
					continue
				}
				r := rules[arg%len(rules)]
				want := ref.remove(r)
				var got bool
				if b != nil {
					got = b.Remove(r)
				} else {
					got = c.Remove(r)
				}
				if got != want {
					t.Fatalf("op %d: Remove = %v, reference %v", i/2, got, want)
				}
			case 2: // begin a batch
				if b == nil {
					b = c.Begin()
				}
			case 3: // commit
				if b != nil {
					b.Commit()
					b = nil
				}
			case 5: // abort: back to the last published state
				if b != nil {
					b.Abort()
					b = nil
					ref.rules = append(ref.rules[:0:0], committed.rules...)
				}
			case 4: // lookup, against what is published
				var k flow.Key
				if arg&1 == 1 && len(committed.rules) > 0 {
					k = g.keyNear(committed.rules[arg%len(committed.rules)])
				} else {
					k = g.key()
				}
				var wc flow.Mask
				got, want := c.Lookup(&k, &wc), committed.lookup(&k)
				if got != want {
					t.Fatalf("op %d: Lookup = %s, reference %s", i/2, ruleName(got), ruleName(want))
				}
				kw, ww := k.Words(), wc.Words()
				for range 8 {
					k2 := g.key()
					k2w := k2.Words()
					for j := range k2w {
						k2w[j] = k2w[j]&^ww[j] | kw[j]&ww[j]
					}
					if w2 := committed.lookup(&k2); w2 != got {
						t.Fatalf("op %d: unsound mask: a key equal under it gets %s, not %s", i/2, ruleName(w2), ruleName(got))
					}
				}
			}
			if b == nil {
				committed.rules = append(committed.rules[:0:0], ref.rules...)
			}
		}
		if b != nil {
			b.Commit()
		}
		if n := c.Snapshot().Len(); n != len(ref.rules) {
			t.Fatalf("Len = %d, reference %d", n, len(ref.rules))
		}
	})
}
