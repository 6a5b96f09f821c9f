package governor

import (
	"testing"
	"time"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// decide feeds one packet of hash and returns the decision.
func feed(g *Governor, hash uint32, n int, at time.Time) Decision {
	return g.ShouldInstall(hash, n, at)
}

func TestThresholdAndReset(t *testing.T) {
	g := New(t0)
	const h = 0x1234
	for round := 0; round < 3; round++ {
		for i := 1; i < Threshold; i++ {
			if d := feed(g, h, 1, t0); d != Execute {
				t.Fatalf("round %d packet %d: %v, want execute", round, i, d)
			}
		}
		if d := feed(g, h, 1, t0); d != Install {
			t.Fatalf("round %d packet %d: %v, want install", round, Threshold, d)
		}
	}
	s := g.Stats()
	if s.TotalInstalls != 3 || s.TotalExecutes != 3*(Threshold-1) {
		t.Errorf("totals: %+v", s)
	}
}

func TestBatchCounts(t *testing.T) {
	tests := []struct {
		name  string
		batch []int
		want  []Decision
	}{
		{"whole threshold in one batch", []int{5}, []Decision{Install}},
		{"more than threshold", []int{9}, []Decision{Install}},
		{"three then two", []int{3, 2}, []Decision{Execute, Install}},
		{"two two two", []int{2, 2, 2}, []Decision{Execute, Execute, Install}},
		{"zero counts as one", []int{0, 0, 0, 0, 0}, []Decision{Execute, Execute, Execute, Execute, Install}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := New(t0)
			for i, n := range tt.batch {
				if d := feed(g, 77, n, t0); d != tt.want[i] {
					t.Errorf("batch %d (n=%d): %v, want %v", i, n, d, tt.want[i])
				}
			}
		})
	}
}

func TestNibbles(t *testing.T) {
	g := New(t0)
	// 2 and 3 share byte 1: even hash uses the high nibble, odd the low.
	for i := 0; i < Threshold-1; i++ {
		feed(g, 2, 1, t0)
	}
	if d := feed(g, 3, 1, t0); d != Execute {
		t.Errorf("neighbouring nibble counted together: %v", d)
	}
	if g.table[1] != byte(Threshold-1)<<4|1 {
		t.Errorf("byte 1 = %#x, want %#x", g.table[1], byte(Threshold-1)<<4|1)
	}
	// A hash colliding with 2 (same byte modulo the table, same nibble)
	// shares its counter: an over-count, so an early install.
	collide := uint32(2 + 2*MinSize)
	if d := feed(g, collide, 1, t0); d != Install {
		t.Errorf("colliding hash: %v, want install (shared counter)", d)
	}
}

func TestGenerationResize(t *testing.T) {
	tests := []struct {
		name     string
		startSz  int
		elapsed  time.Duration
		wantSize int
	}{
		{"fast generation doubles", MinSize, 500 * time.Millisecond, 2 * MinSize},
		{"fast at max stays", MaxSize, 500 * time.Millisecond, MaxSize},
		{"slow generation halves", 4 * MinSize, 6 * time.Second, 2 * MinSize},
		{"slow at min stays", MinSize, 6 * time.Second, MinSize},
		{"in range keeps size", 2 * MinSize, 3 * time.Second, 2 * MinSize},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := New(t0)
			g.table = g.backing[:tt.startSz]
			var gens []Generation
			g.OnGeneration = func(gen Generation) { gens = append(gens, gen) }
			per := tt.startSz / 4 // packets per generation
			end := t0.Add(tt.elapsed)
			// Distinct even hashes so nothing installs; the last packet
			// ends the generation.
			for i := 0; i < per-1; i++ {
				feed(g, uint32(i)<<1, 1, t0)
			}
			if len(gens) != 0 {
				t.Fatalf("generation ended after %d packets, want %d", per-1, per)
			}
			feed(g, 0xfffffffe, 1, end)
			if len(gens) != 1 {
				t.Fatalf("%d generations ended, want 1", len(gens))
			}
			if gens[0].NewSize != tt.wantSize || g.Stats().Size != tt.wantSize || len(g.table) != tt.wantSize {
				t.Errorf("size %d -> %d, want %d", tt.startSz, gens[0].NewSize, tt.wantSize)
			}
			if gens[0].Packets != uint64(per) || gens[0].Elapsed != tt.elapsed {
				t.Errorf("generation summary %+v", gens[0])
			}
			// The table was cleared, then the triggering packet counted.
			nonzero := 0
			for _, b := range g.table {
				if b != 0 {
					nonzero++
				}
			}
			if nonzero != 1 {
				t.Errorf("%d nonzero bytes after clear+1 packet, want 1", nonzero)
			}
		})
	}
}

func TestShortcut(t *testing.T) {
	g := New(t0)
	// 64 flows of Threshold packets each. The first 63 install by
	// counting. When the 64th is first counted, 63 setups >= 64 - 64/16:
	// shortcut mode starts, and its remaining packets take the shortcut.
	for f := 0; f < shortcutMinFlows; f++ {
		h := uint32(f)<<7 | 1
		for i := 0; i < Threshold; i++ {
			feed(g, h, 1, t0)
		}
	}
	if s := g.Stats(); s.Flows != shortcutMinFlows || s.Setups != shortcutMinFlows-1 || s.Shortcuts != Threshold-1 {
		t.Fatalf("stats entering shortcut mode: %+v", s)
	}
	if d := feed(g, 0x10001, 1, t0); d != Shortcut {
		t.Errorf("new hash in shortcut mode: %v, want shortcut", d)
	}
	// 1 in 64 hashes is sampled through the counters.
	if d := feed(g, 0x40000, 1, t0); d != Execute {
		t.Errorf("sampled hash: %v, want execute (counted)", d)
	}
	// Many one-packet flows drag the install ratio down and end the
	// shortcut: feed sampled hashes (they count flows but never install).
	for i := 1; i <= 10; i++ {
		feed(g, uint32(i)<<6<<1, 1, t0)
	}
	if d := feed(g, 0x20003, 1, t0); d != Execute {
		t.Errorf("after the install ratio fell: %v, want execute", d)
	}
}

func TestRunShrinksWhenIdle(t *testing.T) {
	g := New(t0)
	if _, ok := g.NextRun(); ok {
		t.Errorf("a minimum-size governor should not ask to be woken")
	}
	g.table = g.backing[:4*MinSize]
	g.Run(t0.Add(MaxElapsed))
	if len(g.table) != 4*MinSize {
		t.Errorf("shrank before MaxElapsed")
	}
	at, ok := g.NextRun()
	if !ok || !at.Equal(t0.Add(MaxElapsed)) {
		t.Errorf("NextRun = %v %v", at, ok)
	}
	now := t0.Add(MaxElapsed + time.Millisecond)
	g.Run(now)
	if len(g.table) != 2*MinSize {
		t.Errorf("size %d after idle Run, want %d", len(g.table), 2*MinSize)
	}
	if g.Idle(now) {
		t.Errorf("idle above minimum size")
	}
	now = now.Add(MaxElapsed + time.Millisecond)
	g.Run(now)
	if len(g.table) != MinSize {
		t.Errorf("size %d, want min", len(g.table))
	}
	if g.Idle(now) {
		t.Errorf("idle right after a generation started")
	}
	if !g.Idle(now.Add(MaxElapsed + time.Millisecond)) {
		t.Errorf("not idle at min size after MaxElapsed")
	}
}

func TestShouldInstallAllocs(t *testing.T) {
	g := New(t0)
	var h uint32
	now := t0
	n := testing.AllocsPerRun(200000, func() {
		h = h*2654435761 + 1
		now = now.Add(time.Microsecond) // generations end quickly: resizes too
		g.ShouldInstall(h, 1, now)
	})
	if n != 0 {
		t.Errorf("ShouldInstall allocates %v per call", n)
	}
	if g.Stats().Generations == 0 || g.Stats().Size == MinSize {
		t.Errorf("the run should have crossed generations and grown: %+v", g.Stats())
	}
}

func BenchmarkShouldInstall(b *testing.B) {
	g := New(t0)
	now := t0
	b.ReportAllocs()
	var h uint32
	for i := 0; i < b.N; i++ {
		h = h*2654435761 + 1
		if i&1023 == 0 {
			now = now.Add(time.Millisecond)
		}
		g.ShouldInstall(h, 1, now)
	}
}
