package maclearn

import (
	"fmt"
	"math/rand"
	"sync"
	"testing"
	"time"
)

var t0 = time.Unix(1_700_000_000, 0)

func mac(i int) [6]byte { return [6]byte{0x02, 0, byte(i >> 24), byte(i >> 16), byte(i >> 8), byte(i)} }

func TestLearnLookupMove(t *testing.T) {
	tb := New(16, time.Minute)
	a := mac(1)
	if _, ok := tb.Lookup(0, a, t0); ok {
		t.Fatal("empty table found an entry")
	}
	v0 := tb.Version()
	if !tb.Learn(0, a, 3, t0) {
		t.Error("first learn should report a change")
	}
	if tb.Learn(0, a, 3, t0.Add(time.Second)) {
		t.Error("refresh on the same port is not a change")
	}
	if p, ok := tb.Lookup(0, a, t0); !ok || p != 3 {
		t.Errorf("lookup = %d %v", p, ok)
	}
	if _, ok := tb.Lookup(10, a, t0); ok {
		t.Error("entry leaked across VLANs")
	}
	v1 := tb.Version()
	if v1 == v0 {
		t.Error("version unchanged after a new entry")
	}
	if !tb.Learn(0, a, 4, t0.Add(2*time.Second)) {
		t.Error("move should report a change")
	}
	if p, _ := tb.Lookup(0, a, t0); p != 4 || tb.Version() == v1 {
		t.Errorf("after move: port %d, version moved %v", p, tb.Version() != v1)
	}
	if tb.Learn(0, [6]byte{0x01, 0, 0x5e, 0, 0, 1}, 1, t0) || tb.Learn(0, [6]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}, 1, t0) {
		t.Error("multicast/broadcast learned")
	}
	if tb.Len() != 1 {
		t.Errorf("len = %d", tb.Len())
	}
}

func TestAgingAndExpire(t *testing.T) {
	tb := New(16, 10*time.Second)
	tb.Learn(1, mac(1), 1, t0)
	tb.Learn(1, mac(2), 2, t0.Add(5*time.Second))
	if _, ok := tb.Lookup(1, mac(1), t0.Add(11*time.Second)); ok {
		t.Error("aged entry still answers lookups")
	}
	if _, ok := tb.Lookup(1, mac(2), t0.Add(11*time.Second)); !ok {
		t.Error("fresh entry lost")
	}
	v := tb.Version()
	if n := tb.Expire(t0.Add(11 * time.Second)); n != 1 {
		t.Errorf("expired %d, want 1", n)
	}
	if tb.Len() != 1 || tb.Version() == v {
		t.Errorf("len %d, version bumped %v", tb.Len(), tb.Version() != v)
	}
	if n := tb.Expire(t0.Add(11 * time.Second)); n != 0 {
		t.Errorf("second expire removed %d", n)
	}
}

func TestEvictsLeastRecentlySeen(t *testing.T) {
	tb := New(4, time.Hour)
	for i := 0; i < 4; i++ {
		tb.Learn(0, mac(i), uint32(i), t0.Add(time.Duration(i)*time.Second))
	}
	tb.Learn(0, mac(0), 0, t0.Add(10*time.Second)) // refresh 0: now 1 is oldest
	tb.Learn(0, mac(9), 9, t0.Add(11*time.Second))
	if _, ok := tb.Lookup(0, mac(1), t0.Add(12*time.Second)); ok {
		t.Error("least recently seen entry survived eviction")
	}
	for _, i := range []int{0, 2, 3, 9} {
		if _, ok := tb.Lookup(0, mac(i), t0.Add(12*time.Second)); !ok {
			t.Errorf("entry %d evicted", i)
		}
	}
	if tb.Len() != 4 {
		t.Errorf("len %d", tb.Len())
	}
}

func TestFlushPortAndEntries(t *testing.T) {
	tb := New(32, time.Hour)
	for i := 0; i < 10; i++ {
		tb.Learn(uint16(i%2), mac(i), uint32(i%3), t0.Add(time.Duration(i)*time.Second))
	}
	if n := tb.FlushPort(0); n != 4 { // i = 0,3,6,9
		t.Errorf("flushed %d, want 4", n)
	}
	var got []string
	tb.Entries(t0.Add(20*time.Second), func(e Entry) {
		got = append(got, fmt.Sprintf("%d/%d/%d/%v", e.Port, e.VLAN, e.MAC[5], e.Age))
	})
	want := []string{"2/0/8/12s", "1/1/7/13s", "2/1/5/15s", "1/0/4/16s", "2/0/2/18s", "1/1/1/19s"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("entries\n got %v\nwant %v", got, want)
	}
	tb.Flush()
	if tb.Len() != 0 {
		t.Errorf("len after flush %d", tb.Len())
	}
	tb.Learn(0, mac(1), 1, t0) // usable after flush
	if _, ok := tb.Lookup(0, mac(1), t0); !ok {
		t.Error("learn after flush failed")
	}
}

func TestMovePort(t *testing.T) {
	tb := New(32, time.Hour)
	for i := 0; i < 6; i++ {
		tb.Learn(0, mac(i), uint32(i%3), t0.Add(time.Duration(i)*time.Second))
	}
	v := tb.Version()
	if n := tb.MovePort(1, 7); n != 2 { // i = 1, 4
		t.Errorf("moved %d, want 2", n)
	}
	if tb.Version() == v {
		t.Error("a move left the version as it was")
	}
	var got []string
	tb.Entries(t0.Add(10*time.Second), func(e Entry) {
		got = append(got, fmt.Sprintf("%d/%d/%v", e.Port, e.MAC[5], e.Age))
	})
	want := []string{"2/5/5s", "7/4/6s", "0/3/7s", "2/2/8s", "7/1/9s", "0/0/10s"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("entries\n got %v\nwant %v", got, want)
	}
	if p, ok := tb.Lookup(0, mac(4), t0.Add(10*time.Second)); !ok || p != 7 {
		t.Errorf("lookup after move: %d %v", p, ok)
	}
	v = tb.Version()
	if n := tb.MovePort(3, 1); n != 0 || tb.Version() != v {
		t.Errorf("moving an empty port: %d, version changed %v", n, tb.Version() != v)
	}
	if s := tb.Stats(); s.Moved != 0 {
		t.Errorf("stats count %d moves, want 0", s.Moved)
	}
}

// TestAgainstMap drives random operations against a map-based model.
func TestAgainstMap(t *testing.T) {
	type k struct {
		v uint16
		m [6]byte
	}
	type e struct {
		port uint32
		used time.Time
	}
	r := rand.New(rand.NewSource(1))
	const capacity = 64
	tb := New(capacity, 30*time.Second)
	model := map[k]e{}
	now := t0
	for step := 0; step < 20000; step++ {
		now = now.Add(time.Duration(1+r.Intn(200)) * time.Millisecond) // strictly increasing: no ties for "oldest"
		key := k{uint16(r.Intn(3)), mac(r.Intn(100))}
		switch op := r.Intn(10); {
		case op < 6:
			port := uint32(r.Intn(4))
			if len(model) == capacity {
				if _, ok := model[key]; !ok {
					var oldest k
					first := true
					for mk, me := range model {
						if first || me.used.Before(model[oldest].used) {
							oldest, first = mk, false
						}
					}
					delete(model, oldest)
				}
			}
			model[key] = e{port, now}
			tb.Learn(key.v, key.m, port, now)
		case op < 9:
			p, ok := tb.Lookup(key.v, key.m, now)
			me, mok := model[key]
			mok = mok && now.Sub(me.used) <= 30*time.Second
			if ok != mok || (ok && p != me.port) {
				t.Fatalf("step %d: lookup %v = %d %v, model %d %v", step, key, p, ok, me.port, mok)
			}
		default:
			tb.Expire(now)
			for mk, me := range model {
				if now.Sub(me.used) > 30*time.Second {
					delete(model, mk)
				}
			}
		}
		if tb.Len() != len(model) {
			t.Fatalf("step %d: len %d, model %d", step, tb.Len(), len(model))
		}
	}
}

func TestConcurrent(t *testing.T) {
	tb := New(128, time.Hour)
	var wg sync.WaitGroup
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for i := 0; i < 5000; i++ {
				tb.Learn(uint16(g), mac(i%300), uint32(i%5), t0)
				tb.Lookup(uint16(g), mac((i*7)%300), t0)
				if i%1000 == 0 {
					tb.Expire(t0)
				}
			}
		}(g)
	}
	wg.Wait()
	if tb.Len() > tb.Capacity() {
		t.Errorf("len %d over capacity", tb.Len())
	}
}

func TestAllocs(t *testing.T) {
	tb := New(DefaultCapacity, DefaultAging)
	i := 0
	n := testing.AllocsPerRun(20000, func() {
		i++
		tb.Learn(uint16(i%4), mac(i), uint32(i%8), t0) // wraps capacity: evictions too
		tb.Lookup(uint16(i%4), mac(i/2), t0)
	})
	if n != 0 {
		t.Errorf("learn+lookup allocates %v", n)
	}
}

func BenchmarkLearnLookup(b *testing.B) {
	tb := New(DefaultCapacity, DefaultAging)
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		tb.Learn(0, mac(i&16383), uint32(i&7), t0)
		tb.Lookup(0, mac((i*3)&16383), t0)
	}
}

// TestSlotsTakenAsLearned: a new table writes none of its slots (an idle
// bridge keeps them out of its resident memory); they come into use one
// per new entry until capacity, and a flush starts over.
func TestSlotsTakenAsLearned(t *testing.T) {
	tb := New(8, time.Minute)
	if len(tb.slots) != 0 || tb.Capacity() != 8 {
		t.Fatalf("new table: %d slots in use, capacity %d", len(tb.slots), tb.Capacity())
	}
	now := time.Unix(1000, 0)
	mac := func(i int) [6]byte { return [6]byte{2, 0, 0, 0, 0, byte(i)} }
	for i := 0; i < 3; i++ {
		tb.Learn(0, mac(i), uint32(i+1), now)
	}
	if len(tb.slots) != 3 {
		t.Errorf("3 entries use %d slots", len(tb.slots))
	}
	for i := 3; i < 12; i++ {
		tb.Learn(0, mac(i), uint32(i+1), now.Add(time.Duration(i)*time.Second))
	}
	if len(tb.slots) != 8 || tb.Len() != 8 {
		t.Errorf("12 entries in a table of 8: %d slots, %d entries", len(tb.slots), tb.Len())
	}
	later := now.Add(20 * time.Second)
	for i := 0; i < 12; i++ {
		_, ok := tb.Lookup(0, mac(i), later)
		if want := i >= 4; ok != want {
			t.Errorf("entry %d present %v, want %v (the 4 oldest evicted)", i, ok, want)
		}
	}
	tb.Flush()
	if len(tb.slots) != 0 || tb.Len() != 0 {
		t.Fatalf("after Flush: %d slots, %d entries", len(tb.slots), tb.Len())
	}
	if _, ok := tb.Lookup(0, mac(11), later); ok {
		t.Error("an entry survived Flush")
	}
	tb.Learn(0, mac(1), 9, later)
	if p, ok := tb.Lookup(0, mac(1), later); !ok || p != 9 {
		t.Errorf("learn after Flush: port %d, %v", p, ok)
	}
}

// TestStats: learned, moved, evicted and expired entries are counted,
// refreshes and flushes are not, and ClearStats zeroes the counters.
func TestStats(t *testing.T) {
	now := time.Unix(1000, 0)
	tb := New(2, time.Minute)
	a, b, c := [6]byte{2, 0, 0, 0, 0, 1}, [6]byte{2, 0, 0, 0, 0, 2}, [6]byte{2, 0, 0, 0, 0, 3}
	tb.Learn(0, a, 1, now)
	tb.Learn(0, a, 1, now) // refresh
	tb.Learn(0, a, 2, now) // move
	tb.Learn(0, b, 1, now)
	tb.Learn(0, c, 1, now.Add(time.Second)) // evicts a, the least recently seen
	tb.Expire(now.Add(time.Minute + time.Millisecond))
	want := Stats{Learned: 3, Moved: 1, Evicted: 1, Expired: 1}
	if got := tb.Stats(); got != want {
		t.Errorf("stats %+v, want %+v", got, want)
	}
	tb.Flush()
	if got := tb.Stats(); got != want {
		t.Errorf("a flush changed the stats: %+v", got)
	}
	tb.ClearStats()
	if got := tb.Stats(); got != (Stats{}) {
		t.Errorf("after ClearStats: %+v", got)
	}
}
