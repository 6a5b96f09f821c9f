package classifier

import (
	"fmt"
	"math/bits"
	"slices"
	"testing"

	"github.com/govswitch/govswitch/flow"
)

// linear is the reference classifier: a list of rules scanned in full.
type linear struct{ rules []*Rule[int] }

func sameMatch(a, b *Match) bool {
	return a.Mask == b.Mask && a.Key.EqualMasked(&b.Key, &a.Mask)
}

func (l *linear) insert(r *Rule[int]) *Rule[int] {
	for i, o := range l.rules {
		if o.Priority == r.Priority && sameMatch(&o.Match, &r.Match) {
			l.rules[i] = r
			return o
		}
	}
	l.rules = append(l.rules, r)
	return nil
}

func (l *linear) remove(r *Rule[int]) bool {
	i := slices.Index(l.rules, r)
	if i < 0 {
		return false
	}
	l.rules = slices.Delete(l.rules, i, i+1)
	return true
}

// lookup applies the documented order: priority, then the greater mask.
func (l *linear) lookup(k *flow.Key) *Rule[int] {
	var best *Rule[int]
	for _, r := range l.rules {
		if !r.Match.Matches(k) {
			continue
		}
		if best == nil || r.Priority > best.Priority ||
			r.Priority == best.Priority && compareMasks(&r.Match.Mask, &best.Match.Mask) > 0 {
			best = r
		}
	}
	return best
}

// naive returns the winner and the mask a tuple space search without
// stages or tries would report: the OR of every visited subtable's mask,
// with the same priority cut-off.
func naive[T any](s *Snapshot[T], k *flow.Key) (*Rule[T], flow.Mask) {
	var m, scratch flow.Mask
	var best *Rule[T]
	var bestSt *subtable[T]
	tc := trieCtx{roots: &s.tries}
	for _, st := range s.subtables {
		if best != nil && !st.mayBeat(best.Priority, bestSt) {
			break
		}
		m.Or(st.mask)
		if r := st.lookup(k, &scratch, &tc); r != nil {
			if best == nil || r.Priority > best.Priority ||
				r.Priority == best.Priority && compareMasks(st.mask, bestSt.mask) > 0 {
				best, bestSt = r, st
			}
		}
	}
	return best, m
}

func ruleName(r *Rule[int]) string {
	if r == nil {
		return "<nil>"
	}
	return fmt.Sprintf("#%d(pri %d)", r.Value, r.Priority)
}

// TestLookupAgainstLinear is the property test: over thousands of random
// ACL-like rule sets, built and then churned through batches, Lookup
// agrees with the linear reference on every key, and its mask is sound:
// keys equal to the looked-up key under the mask get the same winner, both
// from the reference (random keys forced to agree on the mask, single-bit
// flips outside it, keys near each rule) and from the classifier.
func TestLookupAgainstLinear(t *testing.T) {
	sets, keysPerSet, probes := 3000, 40, 12
	if testing.Short() || raceEnabled {
		sets = 300
	}
	var (
		lookups, hits         int
		bitsOurs, bitsNaive   int
		bitsAllMasks          int
		subtablesTotal, ruleN int
	)
	for set := range sets {
		seed := uint64(set) + 1
		g := newGen(seed)
		var c Classifier[int]
		var ref linear
		nRules := 1 + g.pick(80)
		var all []*Rule[int]
		b := c.Begin()
		for i := range nRules {
			r := &Rule[int]{Match: g.match(), Priority: g.priority(), Value: i}
			all = append(all, r)
			want := ref.insert(r)
			if got := b.Insert(r); got != want {
				t.Fatalf("seed %d: Insert(%s) replaced %s, reference %s", seed, ruleName(r), ruleName(got), ruleName(want))
			}
		}
		b.Commit()
		// Churn: remove some, re-add some, replace some, in one batch or
		// one at a time.
		if g.chance(0.5) {
			b := c.Begin()
			for range g.pick(20) {
				r := all[g.pick(len(all))]
				switch g.pick(3) {
				case 0:
					if got, want := b.Remove(r), ref.remove(r); got != want {
						t.Fatalf("seed %d: Remove(%s) = %v, reference %v", seed, ruleName(r), got, want)
					}
				case 1:
					want := ref.insert(r)
					if got := b.Insert(r); got != want {
						t.Fatalf("seed %d: re-Insert(%s) replaced %s, reference %s", seed, ruleName(r), ruleName(got), ruleName(want))
					}
				case 2:
					nr := &Rule[int]{Match: r.Match, Priority: r.Priority, Value: len(all)}
					all = append(all, nr)
					want := ref.insert(nr)
					if got := b.Insert(nr); got != want {
						t.Fatalf("seed %d: replacing Insert replaced %s, reference %s", seed, ruleName(got), ruleName(want))
					}
				}
			}
			b.Commit()
		}
		if g.chance(0.3) {
			// A batch that is aborted leaves no trace.
			b := c.Begin()
			for range 1 + g.pick(10) {
				if g.chance(0.5) {
					b.Remove(all[g.pick(len(all))])
				} else {
					b.Insert(&Rule[int]{Match: g.match(), Priority: g.priority(), Value: -1})
				}
			}
			b.Abort()
		}
		s := c.Snapshot()
		if s.Len() != len(ref.rules) {
			t.Fatalf("seed %d: Len %d, reference %d", seed, s.Len(), len(ref.rules))
		}
		subtablesTotal += s.Subtables()
		ruleN += len(ref.rules)
		var allMasks flow.Mask
		for _, r := range ref.rules {
			allMasks.Or(&r.Match.Mask)
		}
		for ki := range keysPerSet {
			var k flow.Key
			if ki%2 == 0 && len(ref.rules) > 0 {
				k = g.keyNear(ref.rules[g.pick(len(ref.rules))])
			} else {
				k = g.key()
			}
			var wc flow.Mask
			got := c.Lookup(&k, &wc)
			want := ref.lookup(&k)
			if got != want {
				t.Fatalf("seed %d key %d: Lookup = %s, reference %s", seed, ki, ruleName(got), ruleName(want))
			}
			nr, nm := naive(s, &k)
			if nr != got {
				t.Fatalf("seed %d key %d: naive walk = %s, Lookup %s", seed, ki, ruleName(nr), ruleName(got))
			}
			if !nm.Covers(&wc) {
				t.Fatalf("seed %d key %d: mask has bits outside the visited subtables' masks", seed, ki)
			}
			lookups++
			if got != nil {
				hits++
			}
			bitsOurs += maskBits(&wc)
			bitsNaive += maskBits(&nm)
			bitsAllMasks += maskBits(&allMasks)

			check := func(how string, k2 *flow.Key) {
				t.Helper()
				if w2 := ref.lookup(k2); w2 != got {
					t.Fatalf("seed %d key %d: unsound mask: %s key equal under it gets %s, not %s", seed, ki, how, ruleName(w2), ruleName(got))
				}
				var wc2 flow.Mask
				if g2 := c.Lookup(k2, &wc2); g2 != got {
					t.Fatalf("seed %d key %d: %s key equal under mask: Lookup = %s, not %s", seed, ki, how, ruleName(g2), ruleName(got))
				}
			}
			kw, ww := k.Words(), wc.Words()
			for range probes {
				// A random key forced to agree with k under wc.
				var k2 flow.Key
				if len(ref.rules) > 0 && g.chance(0.5) {
					k2 = g.keyNear(ref.rules[g.pick(len(ref.rules))])
				} else {
					k2 = g.key()
				}
				k2w := k2.Words()
				for i := range k2w {
					k2w[i] = k2w[i]&^ww[i] | kw[i]&ww[i]
				}
				check("random", &k2)
				// One bit flipped outside wc, among the bits rules use.
				aw := allMasks.Words()
				i := g.pick(len(kw))
				if free := aw[i] &^ ww[i]; free != 0 {
					n := g.pick(bits.OnesCount64(free))
					for range n {
						free &= free - 1
					}
					k3 := k
					k3.Words()[i] ^= free & -free
					check("one-bit", &k3)
				}
			}
		}
	}
	const keyBits = flow.KeyWords * 64
	t.Logf("%d rule sets (avg %.1f rules, %.1f subtables), %d lookups, %.0f%% hits",
		sets, float64(ruleN)/float64(sets), float64(subtablesTotal)/float64(sets), lookups, 100*float64(hits)/float64(lookups))
	t.Logf("un-wildcarded bits per lookup: %.1f (staged+tries) vs %.1f (OR of visited masks) vs %.1f (OR of all masks) vs %d (exact)",
		float64(bitsOurs)/float64(lookups), float64(bitsNaive)/float64(lookups), float64(bitsAllMasks)/float64(lookups), keyBits)
}

// TestStrictAndLooseAgainstLinear checks Find, Rules and Overlaps against
// scans of the reference, on generated rule sets: on the published
// snapshot, and inside an open batch that has staged its own changes,
// which the batch must see and the snapshot must not.
func TestStrictAndLooseAgainstLinear(t *testing.T) {
	for set := range 300 {
		seed := uint64(set) + 1
		g := newGen(seed)
		var c Classifier[int]
		var ref linear
		for i := range 1 + g.pick(60) {
			r := &Rule[int]{Match: g.match(), Priority: g.priority(), Value: i}
			ref.insert(r)
			c.Insert(r)
		}
		s := c.Snapshot()
		old := linear{rules: slices.Clone(ref.rules)}
		b := c.Begin()
		for i := range g.pick(10) {
			if len(ref.rules) > 0 && g.chance(0.5) {
				r := ref.rules[g.pick(len(ref.rules))]
				ref.remove(r)
				b.Remove(r)
			} else {
				r := &Rule[int]{Match: g.match(), Priority: g.priority(), Value: 1000 + i}
				ref.insert(r)
				b.Insert(r)
			}
		}
		for q := range 30 {
			var m Match
			var p int
			if q%2 == 0 && len(ref.rules) > 0 {
				r := ref.rules[g.pick(len(ref.rules))]
				m, p = r.Match, r.Priority
				if g.chance(0.5) {
					// Same match, bits outside the mask scrambled.
					k := g.key()
					kw, mw := m.Key.Words(), m.Mask.Words()
					for i := range kw {
						kw[i] = kw[i]&mw[i] | k.Words()[i]&^mw[i]
					}
				}
			} else {
				m, p = g.match(), g.priority()
			}
			views := []struct {
				name     string
				ref      *linear
				find     func(*Match, int) *Rule[int]
				overlaps func(*Match, int) bool
				rules    func(*Match) func(func(*Rule[int]) bool)
			}{
				{"Snapshot", &old, s.Find, s.Overlaps, func(m *Match) func(func(*Rule[int]) bool) { return s.Rules(m) }},
				{"Batch", &ref, b.Find, b.Overlaps, func(m *Match) func(func(*Rule[int]) bool) { return b.Rules(m) }},
			}
			for _, v := range views {
				var wantFind *Rule[int]
				wantOverlap := false
				var wantLoose []*Rule[int]
				for _, r := range v.ref.rules {
					if r.Priority == p && sameMatch(&r.Match, &m) {
						wantFind = r
					}
					common := r.Match.Mask
					common.And(&m.Mask)
					if r.Priority == p && r.Match.Key.EqualMasked(&m.Key, &common) {
						wantOverlap = true
					}
					if r.Match.Mask.Covers(&m.Mask) && r.Match.Key.EqualMasked(&m.Key, &m.Mask) {
						wantLoose = append(wantLoose, r)
					}
				}
				if got := v.find(&m, p); got != wantFind {
					t.Fatalf("seed %d: %s.Find = %s, want %s", seed, v.name, ruleName(got), ruleName(wantFind))
				}
				if got := v.overlaps(&m, p); got != wantOverlap {
					t.Fatalf("seed %d: %s.Overlaps = %v, want %v", seed, v.name, got, wantOverlap)
				}
				byValue := func(a, b *Rule[int]) int { return a.Value - b.Value }
				slices.SortFunc(wantLoose, byValue)
				if got := slices.SortedFunc(v.rules(&m), byValue); !slices.Equal(got, wantLoose) {
					t.Fatalf("seed %d: %s.Rules selected %d rules, want %d", seed, v.name, len(got), len(wantLoose))
				}
				if n := len(slices.Collect(v.rules(nil))); n != len(v.ref.rules) {
					t.Fatalf("seed %d: %s.Rules(nil) yielded %d, want %d", seed, v.name, n, len(v.ref.rules))
				}
			}
		}
		if b.Len() != len(ref.rules) {
			t.Fatalf("seed %d: Batch.Len = %d, want %d", seed, b.Len(), len(ref.rules))
		}
		b.Abort()
	}
}
