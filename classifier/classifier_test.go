package classifier

import (
	"math"
	"testing"

	"github.com/govswitch/govswitch/flow"
)

// ipv4 returns a network-order address.
func ipv4(a, b, c, d byte) [4]byte { return [4]byte{a, b, c, d} }

// m builds a Match from a function that sets key fields and their mask.
func m(f func(k *flow.Key, m *flow.Mask)) Match {
	var x Match
	if f != nil {
		f(&x.Key, &x.Mask)
	}
	return x
}

// tcp4 is a TCP/IPv4 key.
func tcp4(inPort uint32, src, dst [4]byte, sport, dport uint16) flow.Key {
	return flow.Key{InPort: inPort, EthType: flow.EthTypeIPv4, IPv4Src: src, IPv4Dst: dst,
		NwProto: flow.IPProtoTCP, NwTTL: 64, TpSrc: sport, TpDst: dport}
}

func TestLookup(t *testing.T) {
	var (
		catchAll = m(nil)
		inPort1  = m(func(k *flow.Key, m *flow.Mask) { k.InPort, m.InPort = 1, ^uint32(0) })
		ip4      = m(func(k *flow.Key, m *flow.Mask) { k.EthType, m.EthType = flow.EthTypeIPv4, 0xffff })
		port1Src = m(func(k *flow.Key, m *flow.Mask) {
			k.InPort, m.InPort = 1, ^uint32(0)
			k.EthType, m.EthType = flow.EthTypeIPv4, 0xffff
			k.IPv4Src, m.IPv4Src = ipv4(10, 0, 0, 1), ipv4(255, 255, 255, 255)
		})
		net10Dst = m(func(k *flow.Key, m *flow.Mask) {
			k.EthType, m.EthType = flow.EthTypeIPv4, 0xffff
			k.IPv4Dst, m.IPv4Dst = ipv4(10, 0, 0, 0), ipv4(255, 0, 0, 0)
		})
		http = m(func(k *flow.Key, m *flow.Mask) {
			k.EthType, m.EthType = flow.EthTypeIPv4, 0xffff
			k.NwProto, m.NwProto = flow.IPProtoTCP, 0xff
			k.TpDst, m.TpDst = 80, 0xffff
		})
		key1 = tcp4(1, ipv4(10, 0, 0, 1), ipv4(192, 168, 0, 1), 1234, 8080)
	)
	exact := Match{Key: key1, Mask: flow.ExactMask()}
	// wantMask builds an expected megaflow mask.
	wantMask := func(f func(m *flow.Mask)) flow.Mask {
		var w flow.Mask
		if f != nil {
			f(&w)
		}
		return w
	}
	type rule struct {
		match Match
		pri   int
	}
	tests := []struct {
		name   string
		rules  []rule
		key    flow.Key
		want   int // index into rules; -1 for no match
		wantWC flow.Mask
	}{
		{
			name: "empty", key: key1, want: -1,
		},
		{
			name:  "catch-all answers without consulting any bit",
			rules: []rule{{catchAll, 0}}, key: key1, want: 0,
		},
		{
			name:  "higher priority wins",
			rules: []rule{{ip4, 10}, {inPort1, 20}, {catchAll, 0}}, key: key1, want: 1,
			wantWC: wantMask(func(w *flow.Mask) { w.InPort = ^uint32(0) }),
		},
		{
			// Equal priorities: in_port comes before eth_type in the Key,
			// so the in_port mask is the greater one, and the eth_type
			// subtable, which could only tie, is not even visited.
			name:  "tie goes to the greater mask",
			rules: []rule{{ip4, 5}, {inPort1, 5}}, key: key1, want: 1,
			wantWC: wantMask(func(w *flow.Mask) { w.InPort = ^uint32(0) }),
		},
		{
			name:  "miss in the metadata stage leaves L2 and L3 wildcarded",
			rules: []rule{{port1Src, 10}}, key: tcp4(2, ipv4(10, 0, 0, 1), ipv4(1, 1, 1, 1), 1, 2), want: -1,
			wantWC: wantMask(func(w *flow.Mask) { w.InPort = ^uint32(0) }),
		},
		{
			// 10.x and 192.x differ in their first bit: one bit decides.
			name:  "address trie narrows a miss to the bits that decided it",
			rules: []rule{{net10Dst, 10}}, key: key1, want: -1,
			wantWC: wantMask(func(w *flow.Mask) { w.EthType, w.IPv4Dst = 0xffff, ipv4(0x80, 0, 0, 0) }),
		},
		{
			name:  "address trie hit un-wildcards the whole prefix",
			rules: []rule{{net10Dst, 10}}, key: tcp4(1, ipv4(1, 2, 3, 4), ipv4(10, 9, 9, 9), 1, 2), want: 0,
			wantWC: wantMask(func(w *flow.Mask) { w.EthType, w.IPv4Dst = 0xffff, ipv4(255, 0, 0, 0) }),
		},
		{
			// 80 = 0x0050 and 8080 = 0x1f90 differ first in bit 3.
			name:  "port trie narrows a last-stage miss",
			rules: []rule{{http, 10}}, key: key1, want: -1,
			wantWC: wantMask(func(w *flow.Mask) { w.EthType, w.NwProto, w.TpDst = 0xffff, 0xff, 0xf000 }),
		},
		{
			name:  "a hit depends on the whole mask",
			rules: []rule{{http, 10}}, key: tcp4(1, ipv4(1, 2, 3, 4), ipv4(5, 6, 7, 8), 999, 80), want: 0,
			wantWC: wantMask(func(w *flow.Mask) { w.EthType, w.NwProto, w.TpDst = 0xffff, 0xff, 0xffff }),
		},
		{
			name:  "subtables that cannot beat the winner are not visited",
			rules: []rule{{ip4, 100}, {port1Src, 50}, {http, 1}}, key: key1, want: 0,
			wantWC: wantMask(func(w *flow.Mask) { w.EthType = 0xffff }),
		},
		{
			name:  "exact subtable hit",
			rules: []rule{{exact, 7}, {catchAll, 0}}, key: key1, want: 0,
			wantWC: flow.ExactMask(),
		},
		{
			name:  "exact subtable miss still depends on every bit",
			rules: []rule{{exact, 7}, {catchAll, 0}}, key: tcp4(1, ipv4(10, 0, 0, 1), ipv4(192, 168, 0, 1), 1234, 8081), want: 1,
			wantWC: flow.ExactMask(),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var c Classifier[int]
			rules := make([]*Rule[int], len(tt.rules))
			for i, r := range tt.rules {
				rules[i] = &Rule[int]{Match: r.match, Priority: r.pri, Value: i}
				if old := c.Insert(rules[i]); old != nil {
					t.Fatalf("Insert(%d) replaced %d", i, old.Value)
				}
			}
			var wc flow.Mask
			got := c.Lookup(&tt.key, &wc)
			switch {
			case tt.want < 0 && got != nil:
				t.Fatalf("Lookup = rule %d, want none", got.Value)
			case tt.want >= 0 && got != rules[tt.want]:
				t.Fatalf("Lookup = %v, want rule %d", got, tt.want)
			}
			if wc != tt.wantWC {
				gw, ww := wc.Words(), tt.wantWC.Words()
				for i := range gw {
					if gw[i] != ww[i] {
						t.Errorf("mask word %d: got %#016x, want %#016x", i, gw[i], ww[i])
					}
				}
			}
			// A nil mask gives the same answer.
			if again := c.Lookup(&tt.key, nil); again != got {
				t.Errorf("Lookup with nil mask = %v, want %v", again, got)
			}
		})
	}
}

func TestInsertReplaceRemove(t *testing.T) {
	var c Classifier[string]
	match := m(func(k *flow.Key, m *flow.Mask) { k.TpDst, m.TpDst = 80, 0xffff })
	// Same match: bits outside the mask do not matter.
	match2 := match
	match2.Key.TpSrc = 7
	a := &Rule[string]{Match: match, Priority: 10, Value: "a"}
	b := &Rule[string]{Match: match2, Priority: 10, Value: "b"}
	lo := &Rule[string]{Match: match, Priority: 5, Value: "lo"}
	key := flow.Key{TpDst: 80}

	steps := []struct {
		name string
		do   func() any
		want any
		hit  string // Value of the Lookup winner afterwards; "" for none
		n    int
	}{
		{"insert a", func() any { return c.Insert(a) }, (*Rule[string])(nil), "a", 1},
		{"insert a again is a no-op", func() any { return c.Insert(a) }, a, "a", 1},
		{"insert lower priority, same match", func() any { return c.Insert(lo) }, (*Rule[string])(nil), "a", 2},
		{"b replaces a", func() any { return c.Insert(b) }, a, "b", 2},
		{"removing a replaced rule fails", func() any { return c.Remove(a) }, false, "b", 2},
		{"remove b falls back to lo", func() any { return c.Remove(b) }, true, "lo", 1},
		{"remove lo empties", func() any { return c.Remove(lo) }, true, "", 0},
		{"remove from empty", func() any { return c.Remove(lo) }, false, "", 0},
	}
	for _, s := range steps {
		got := s.do()
		if got != s.want {
			t.Fatalf("%s: got %v, want %v", s.name, got, s.want)
		}
		r := c.Lookup(&key, nil)
		if hit := ""; r != nil {
			hit = r.Value
			if hit != s.hit {
				t.Fatalf("%s: Lookup = %q, want %q", s.name, hit, s.hit)
			}
		} else if s.hit != "" {
			t.Fatalf("%s: Lookup = none, want %q", s.name, s.hit)
		}
		if n := c.Snapshot().Len(); n != s.n {
			t.Fatalf("%s: Len = %d, want %d", s.name, n, s.n)
		}
	}
	if n := c.Snapshot().Subtables(); n != 0 {
		t.Fatalf("empty classifier keeps %d subtables", n)
	}
}

func TestBatchVisibility(t *testing.T) {
	var c Classifier[int]
	key := tcp4(1, ipv4(10, 0, 0, 1), ipv4(10, 0, 0, 2), 1, 80)
	r1 := &Rule[int]{Match: m(func(k *flow.Key, m *flow.Mask) { k.InPort, m.InPort = 1, ^uint32(0) }), Priority: 1, Value: 1}
	r2 := &Rule[int]{Match: m(func(k *flow.Key, m *flow.Mask) { k.TpDst, m.TpDst = 80, 0xffff }), Priority: 2, Value: 2}
	c.Insert(r1)
	v0 := c.Snapshot()

	b := c.Begin()
	b.Insert(r2)
	b.Remove(r1)
	if got := c.Lookup(&key, nil); got != r1 {
		t.Fatalf("open batch visible to Lookup: got %v", got)
	}
	if b.Find(&r2.Match, 2) != r2 || b.Find(&r1.Match, 1) != nil || b.Len() != 1 {
		t.Fatalf("batch does not see its own changes")
	}
	b.Abort()
	if got := c.Lookup(&key, nil); got != r1 || c.Snapshot() != v0 {
		t.Fatalf("aborted batch left a trace: %v", got)
	}

	b = c.Begin()
	b.Insert(r2)
	b.Remove(r1)
	s := b.Commit()
	if got := c.Lookup(&key, nil); got != r2 || c.Snapshot() != s || s.Version() != v0.Version()+1 {
		t.Fatalf("after commit: Lookup %v, version %d (was %d)", got, s.Version(), v0.Version())
	}
	// The old snapshot is unchanged.
	if got := v0.Lookup(&key, nil); got != r1 || v0.Len() != 1 {
		t.Fatalf("old snapshot changed: %v", got)
	}
	// An empty batch publishes nothing.
	if c.Begin().Commit() != s {
		t.Fatalf("empty batch published a new snapshot")
	}
	func() {
		defer func() {
			if recover() == nil {
				t.Fatalf("Batch used after Commit did not panic")
			}
		}()
		b.Insert(r1)
	}()
}

// TestNilSnapshot: a classifier nobody wrote to is an empty one.
func TestNilSnapshot(t *testing.T) {
	var c Classifier[int]
	var k flow.Key
	var wc flow.Mask
	s := c.Snapshot()
	if c.Lookup(&k, &wc) != nil || !wc.IsZero() || s.Len() != 0 || s.Subtables() != 0 ||
		s.Find(&Match{}, 0) != nil || s.Overlaps(&Match{}, 0) || s.Version() != 0 {
		t.Fatalf("empty classifier is not empty")
	}
	for range s.Rules(nil) {
		t.Fatalf("empty classifier yields rules")
	}
}

// TestBatchRulesIsStable: Batch.Rules yields the batch's rules as they were
// when it was called, even while the loop changes the batch (here: each
// yielded rule removes every other rule, in subtables not visited yet too).
func TestBatchRulesIsStable(t *testing.T) {
	var c Classifier[int]
	var all []*Rule[int]
	for i := range 6 {
		r := &Rule[int]{Priority: i, Value: i, Match: m(func(k *flow.Key, m *flow.Mask) {
			if i%2 == 0 {
				k.InPort, m.InPort = uint32(i), ^uint32(0)
			} else {
				k.TpDst, m.TpDst = uint16(i), 0xffff
			}
		})}
		all = append(all, r)
		c.Insert(r)
	}
	b := c.Begin()
	defer b.Abort()
	b.Insert(&Rule[int]{Priority: 9, Value: 9}) // a change before: seen
	seen := map[int]bool{}
	for r := range b.Rules(nil) {
		seen[r.Value] = true
		for _, o := range all {
			b.Remove(o)
		}
		b.Insert(&Rule[int]{Priority: 10, Value: 10}) // a change during: not seen
	}
	for _, v := range []int{0, 1, 2, 3, 4, 5, 9} {
		if !seen[v] {
			t.Errorf("rule %d not yielded", v)
		}
	}
	if seen[10] {
		t.Errorf("rule inserted during the iteration was yielded")
	}
	if b.Len() != 2 {
		t.Errorf("Len = %d after removing all six, want 2", b.Len())
	}
}

// TestExtremePriorities: any int is a priority, and the maximum of a
// subtable is recomputed as rules leave.
func TestExtremePriorities(t *testing.T) {
	var c Classifier[int]
	tpDst80 := m(func(k *flow.Key, m *flow.Mask) { k.TpDst, m.TpDst = 80, 0xffff })
	key := flow.Key{TpDst: 80}
	rules := []*Rule[int]{
		{Match: tpDst80, Priority: math.MaxInt, Value: 0},
		{Match: tpDst80, Priority: math.MinInt, Value: 1},
		{Match: m(nil), Priority: 0, Value: 2},
		{Match: tpDst80, Priority: -1, Value: 3},
	}
	for _, r := range rules {
		c.Insert(r)
	}
	for _, step := range []struct {
		remove int // index into rules, -1 for none
		want   int // Value of the winner, -1 for none
	}{
		{-1, 0}, {0, 2}, {2, 3}, {3, 1}, {1, -1},
	} {
		if step.remove >= 0 && !c.Remove(rules[step.remove]) {
			t.Fatalf("Remove(%d) failed", step.remove)
		}
		got := c.Lookup(&key, nil)
		switch {
		case step.want < 0 && got != nil:
			t.Fatalf("after removing %d: got rule %d, want none", step.remove, got.Value)
		case step.want >= 0 && (got == nil || got.Value != step.want):
			t.Fatalf("after removing %d: got %v, want rule %d", step.remove, got, step.want)
		}
	}
}
