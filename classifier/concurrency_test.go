package classifier

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/govswitch/govswitch/flow"
)

// family is a pair of rules a writer replaces together, generation after
// generation, in one batch. Both match probeHi, where hi (priority 200)
// must win; only lo (priority 100) matches probeLo.
type family struct {
	port     uint32
	lo, hi   *Rule[int]
	probeLo  flow.Key // matched by lo and, below it, by the background rules
	probeHi  flow.Key // matched by hi (priority 200) and lo (priority 100)
	lastSeen atomic.Int64
}

func (f *family) rules(gen int) (lo, hi *Rule[int]) {
	lo = &Rule[int]{Priority: 100, Value: gen, Match: m(func(k *flow.Key, m *flow.Mask) {
		k.InPort, m.InPort = f.port, ^uint32(0)
	})}
	hi = &Rule[int]{Priority: 200, Value: gen, Match: m(func(k *flow.Key, m *flow.Mask) {
		k.InPort, m.InPort = f.port, ^uint32(0)
		k.TpDst, m.TpDst = 80, 0xffff
	})}
	return lo, hi
}

// TestConcurrentReadersAndWriters runs writers that each replace a pair of
// rules in one batch per generation (and churn background rules in the
// same batch) while readers look up without locks. A reader must never see
// half a batch: the high-priority rule must always win on its probe, and
// the two rules seen through one snapshot must be of one generation.
// Generations seen must never go backwards. Run it with -race.
func TestConcurrentReadersAndWriters(t *testing.T) {
	var c Classifier[int]
	g := newGen(99)
	var background []*Rule[int]
	for i := range 300 {
		r := &Rule[int]{Match: g.match(), Priority: g.pick(50), Value: -1 - i}
		background = append(background, r)
		c.Insert(r)
	}
	fams := []*family{{port: 101}, {port: 102}}
	for _, f := range fams {
		f.lo, f.hi = f.rules(0)
		c.Insert(f.lo)
		c.Insert(f.hi)
		f.probeLo = tcp4(f.port, ipv4(10, 0, 0, 1), ipv4(10, 0, 0, 2), 1, 443)
		f.probeHi = tcp4(f.port, ipv4(10, 0, 0, 1), ipv4(10, 0, 0, 2), 1, 80)
	}

	dur := 2 * time.Second
	if testing.Short() {
		dur = 300 * time.Millisecond
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var commits atomic.Int64
	for wi, f := range fams {
		wg.Add(1)
		go func() {
			defer wg.Done()
			gg := newGen(uint64(1000 + wi))
			for gen := 1; ; gen++ {
				select {
				case <-stop:
					return
				default:
				}
				lo, hi := f.rules(gen)
				b := c.Begin()
				b.Remove(f.hi)
				b.Insert(lo) // replaces f.lo: same match and priority
				b.Insert(hi)
				for range gg.pick(4) {
					r := background[gg.pick(len(background))]
					if !b.Remove(r) {
						b.Insert(r)
					}
				}
				b.Commit()
				f.lo, f.hi = lo, hi
				commits.Add(1)
			}
		}()
	}
	var lookups atomic.Int64
	errs := make(chan string, 4)
	fail := func(s string) {
		select {
		case errs <- s:
		default:
		}
	}
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			n := int64(0)
			last := make([]int, len(fams))
			for {
				select {
				case <-stop:
					lookups.Add(n)
					return
				default:
				}
				for i, f := range fams {
					var wc flow.Mask
					r := c.Lookup(&f.probeHi, &wc)
					if r == nil || r.Priority != 200 {
						fail("Lookup saw a batch half applied")
						continue
					}
					if r.Value < last[i] {
						fail("generations went backwards")
					}
					last[i] = r.Value
					s := c.Snapshot()
					a, b := s.Lookup(&f.probeLo, nil), s.Lookup(&f.probeHi, nil)
					if a == nil || b == nil || a.Priority != 100 || a.Value != b.Value {
						fail("one snapshot showed two generations")
					}
					n += 3
				}
			}
		}()
	}
	time.Sleep(dur)
	close(stop)
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
	if commits.Load() < 10 || lookups.Load() < 100 {
		t.Fatalf("too little happened: %d commits, %d lookups", commits.Load(), lookups.Load())
	}
	t.Logf("%d commits, %d lookups", commits.Load(), lookups.Load())
}

// TestLookupAllocs: Lookup allocates nothing and takes no lock, on every
// shape of table, on every version a churning writer publishes, while that
// writer holds a batch open. (AllocsPerRun counts the whole process, so the
// writer builds and commits between measurements, not during them.)
func TestLookupAllocs(t *testing.T) {
	shapes := []struct {
		name  string
		rules func(g *gen) []*Rule[int]
	}{
		{"catch-all only", func(g *gen) []*Rule[int] { return []*Rule[int]{{Priority: 1}} }},
		{"exact only", func(g *gen) []*Rule[int] {
			k := g.key()
			return []*Rule[int]{{Match: Match{Key: k, Mask: flow.ExactMask()}}}
		}},
		{"acl", func(g *gen) []*Rule[int] {
			var rs []*Rule[int]
			for i := range 500 {
				rs = append(rs, &Rule[int]{Match: g.match(), Priority: g.priority(), Value: i})
			}
			return rs
		}},
	}
	for _, sh := range shapes {
		t.Run(sh.name, func(t *testing.T) {
			g := newGen(7)
			var c Classifier[int]
			rules := sh.rules(g)
			for _, r := range rules {
				c.Insert(r)
			}
			keys := make([]flow.Key, 64)
			for i := range keys {
				if i%2 == 0 {
					keys[i] = g.keyNear(rules[g.pick(len(rules))])
				} else {
					keys[i] = g.key()
				}
			}
			for round := range 20 {
				// A writer is mid-batch while we measure: it holds the
				// writer lock (a Lookup that took it would hang here)
				// and has changes staged that lookups must not see.
				b := c.Begin()
				for range 10 {
					r := rules[g.pick(len(rules))]
					if !b.Remove(r) {
						b.Insert(r)
					}
				}
				var wc flow.Mask
				i := 0
				if a := testing.AllocsPerRun(50, func() {
					wc = flow.Mask{}
					c.Lookup(&keys[i%len(keys)], &wc)
					c.Lookup(&keys[(i+1)%len(keys)], nil)
					i++
				}); a != 0 {
					t.Fatalf("round %d: %v allocations per lookup", round, a/2)
				}
				b.Commit()
			}
		})
	}
}
