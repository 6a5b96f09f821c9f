package classifier

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"runtime"
	"syscall"
	"testing"
	"time"

	"github.com/govswitch/govswitch/flow"
)

// Benchmark tables: n rules spread over s masks. Every mask matches IPv4
// TCP and an exact destination port (1..65535); mask i matches a source
// prefix of 32-i%33 bits and a destination prefix of 32-(i/33)%33 bits, so
// up to 1089 distinct masks exist, from exact addresses down to none.
// Priorities are random in 0..65535.

type benchTable struct {
	c     *Classifier[int]
	rules []*Rule[int]
	hits  []flow.Key // each matches at least one rule
	miss  []flow.Key // port 0: matches no rule, so every subtable is visited
}

// benchTables caches the last table built: sub-benchmarks of one shape
// share it, and only one large table is alive at a time, so the garbage
// collector's work does not grow with the matrix.
var benchTables struct {
	shape [2]int
	t     *benchTable
}

func benchMask(i int) flow.Mask {
	var m flow.Mask
	m.EthType, m.NwProto, m.TpDst = 0xffff, 0xff, 0xffff
	binary.BigEndian.PutUint32(m.IPv4Src[:], uint32(prefixMask(32 - i%33)[0]>>32))
	binary.BigEndian.PutUint32(m.IPv4Dst[:], uint32(prefixMask(32 - (i/33)%33)[0]>>32))
	return m
}

func benchKey(r *rand.Rand) flow.Key {
	var k flow.Key
	k.InPort = 1
	k.EthType, k.NwProto, k.NwTTL = flow.EthTypeIPv4, flow.IPProtoTCP, 64
	binary.BigEndian.PutUint32(k.IPv4Src[:], r.Uint32())
	binary.BigEndian.PutUint32(k.IPv4Dst[:], r.Uint32())
	k.TpSrc, k.TpDst = uint16(r.Uint32()), uint16(1+r.IntN(65535))
	return k
}

func getBenchTable(b *testing.B, subtables, rules int) *benchTable {
	if benchTables.t != nil && benchTables.shape == [2]int{subtables, rules} {
		return benchTables.t
	}
	benchTables.t = nil
	runtime.GC()
	r := rand.New(rand.NewPCG(uint64(subtables), uint64(rules)))
	t := &benchTable{c: new(Classifier[int])}
	masks := make([]flow.Mask, subtables)
	for i := range masks {
		masks[i] = benchMask(i)
	}
	batch := t.c.Begin()
	for i := range rules {
		rule := &Rule[int]{Match: Match{Key: benchKey(r), Mask: masks[i%subtables]}, Priority: r.IntN(65536), Value: i}
		if batch.Insert(rule) == nil {
			t.rules = append(t.rules, rule)
		}
	}
	batch.Commit()
	if got := t.c.Snapshot().Subtables(); got != subtables {
		b.Fatalf("built %d subtables, want %d", got, subtables)
	}
	for range 1024 {
		rule := t.rules[r.IntN(len(t.rules))]
		k := benchKey(r)
		k = flow.Key(applyOutside(k, rule.Match))
		t.hits = append(t.hits, k)
		k = benchKey(r)
		k.TpDst = 0
		t.miss = append(t.miss, k)
	}
	benchTables.shape, benchTables.t = [2]int{subtables, rules}, t
	runtime.GC()
	return t
}

// cpuTime returns the CPU time the process has used. The machine these
// benchmarks run on is shared, so wall-clock ns/op moves with other
// people's load; CPU ns/op (ours, GC included) mostly does not. Each
// benchmark reports both.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// reportCPU adds the cpu-ns/op metric for the n operations since start.
func reportCPU(b *testing.B, start time.Duration, n int) {
	b.ReportMetric(float64(cpuTime()-start)/float64(n), "cpu-ns/op")
}

// applyOutside returns k with m's bits taken from m.Key: a key m matches.
func applyOutside(k flow.Key, m Match) flow.Key {
	kw, mk, mw := k.Words(), m.Key.Words(), m.Mask.Words()
	for i := range kw {
		kw[i] = kw[i]&^mw[i] | mk[i]&mw[i]
	}
	return k
}

// BenchmarkLookup reports ns per lookup, with the megaflow mask tracked,
// for hits and misses over 1..1000 subtables and 1k..100k rules.
func BenchmarkLookup(b *testing.B) {
	for _, s := range []int{1, 10, 100, 1000} {
		for _, n := range []int{1000, 10000, 100000} {
			for _, kind := range []string{"hit", "miss"} {
				b.Run(fmt.Sprintf("subtables=%d/rules=%d/%s", s, n, kind), func(b *testing.B) {
					t := getBenchTable(b, s, n)
					keys := t.hits
					if kind == "miss" {
						keys = t.miss
					}
					b.ReportAllocs()
					var found int
					c0 := cpuTime()
					for i := 0; b.Loop(); i++ {
						var wc flow.Mask
						if t.c.Lookup(&keys[i&1023], &wc) != nil {
							found++
						}
					}
					reportCPU(b, c0, b.N)
					if kind == "hit" && found == 0 || kind == "miss" && found != 0 {
						b.Fatalf("%s keys found %d rules", kind, found)
					}
				})
			}
		}
	}
}

// BenchmarkLookupCatchAll is the table with only a catch-all rule: the
// 2012 fast path, no hashing.
func BenchmarkLookupCatchAll(b *testing.B) {
	var c Classifier[int]
	c.Insert(&Rule[int]{})
	r := rand.New(rand.NewPCG(1, 1))
	keys := make([]flow.Key, 1024)
	for i := range keys {
		keys[i] = benchKey(r)
	}
	b.ReportAllocs()
	c0 := cpuTime()
	for i := 0; b.Loop(); i++ {
		var wc flow.Mask
		if c.Lookup(&keys[i&1023], &wc) == nil {
			b.Fatal("catch-all missed")
		}
	}
	reportCPU(b, c0, b.N)
}

// BenchmarkLookupExact is a table of exact-match rules: one probe.
func BenchmarkLookupExact(b *testing.B) {
	var c Classifier[int]
	r := rand.New(rand.NewPCG(2, 2))
	keys := make([]flow.Key, 1024)
	for i := range 10000 {
		k := benchKey(r)
		c.Insert(&Rule[int]{Match: Match{Key: k, Mask: flow.ExactMask()}, Value: i})
		if i < len(keys) {
			keys[i] = k
		}
	}
	b.ReportAllocs()
	c0 := cpuTime()
	for i := 0; b.Loop(); i++ {
		var wc flow.Mask
		if c.Lookup(&keys[i&1023], &wc) == nil {
			b.Fatal("exact missed")
		}
	}
	reportCPU(b, c0, b.N)
}

// BenchmarkInsertRemove is the flow_mod rate: one rule added and one
// removed per op, each in its own batch (two publications), against a
// populated table.
func BenchmarkInsertRemove(b *testing.B) {
	for _, s := range []int{10, 100, 1000} {
		for _, n := range []int{10000, 100000} {
			b.Run(fmt.Sprintf("subtables=%d/rules=%d", s, n), func(b *testing.B) {
				t := getBenchTable(b, s, n)
				r := rand.New(rand.NewPCG(5, 5))
				fresh := make([]*Rule[int], 1024)
				for i := range fresh {
					fresh[i] = &Rule[int]{Match: Match{Key: benchKey(r), Mask: benchMask(i % s)}, Priority: r.IntN(65536)}
				}
				b.ReportAllocs()
				c0 := cpuTime()
				for i := 0; b.Loop(); i++ {
					rule := fresh[i&1023]
					t.c.Insert(rule)
					t.c.Remove(rule)
				}
				reportCPU(b, c0, b.N)
			})
		}
	}
}

// BenchmarkBatch is 1000 inserts and then 1000 removes, each set in one
// batch: per-op cost when publication is amortised.
func BenchmarkBatch(b *testing.B) {
	t := getBenchTable(b, 100, 10000)
	r := rand.New(rand.NewPCG(6, 6))
	fresh := make([]*Rule[int], 1000)
	for i := range fresh {
		fresh[i] = &Rule[int]{Match: Match{Key: benchKey(r), Mask: benchMask(i % 100)}, Priority: r.IntN(65536)}
	}
	b.ReportAllocs()
	c0 := cpuTime()
	for b.Loop() {
		batch := t.c.Begin()
		for _, rule := range fresh {
			batch.Insert(rule)
		}
		batch.Commit()
		batch = t.c.Begin()
		for _, rule := range fresh {
			batch.Remove(rule)
		}
		batch.Commit()
	}
	ops := float64(b.N * 2 * len(fresh))
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/ops, "ns/rule-op")
	b.ReportMetric(float64(cpuTime()-c0)/ops, "cpu-ns/rule-op")
}

// BenchmarkBuild loads 100k rules into an empty classifier in one batch,
// as for a controller's first flow table, and reports the heap the
// classifier keeps per rule (the caller's Rule structs not included).
func BenchmarkBuild(b *testing.B) {
	for _, s := range []int{1, 100, 1000} {
		b.Run(fmt.Sprintf("subtables=%d/rules=100000", s), func(b *testing.B) {
			r := rand.New(rand.NewPCG(7, uint64(s)))
			rules := make([]*Rule[int], 100000)
			for i := range rules {
				rules[i] = &Rule[int]{Match: Match{Key: benchKey(r), Mask: benchMask(i % s)}, Priority: r.IntN(65536), Value: i}
			}
			var c *Classifier[int]
			b.ReportAllocs()
			c0 := cpuTime()
			for b.Loop() {
				c = new(Classifier[int])
				batch := c.Begin()
				for _, rule := range rules {
					batch.Insert(rule)
				}
				batch.Commit()
			}
			ops := float64(b.N * len(rules))
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/ops, "ns/rule")
			b.ReportMetric(float64(cpuTime()-c0)/ops, "cpu-ns/rule")
			var with, without runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&with)
			n := c.Snapshot().Len()
			c = nil
			runtime.GC()
			runtime.ReadMemStats(&without)
			b.ReportMetric(float64(with.HeapAlloc-without.HeapAlloc)/float64(n), "heap-B/rule")
			runtime.KeepAlive(rules) // else the second GC frees them too
		})
	}
}
