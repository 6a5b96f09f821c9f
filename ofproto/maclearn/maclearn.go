// Package maclearn is the MAC learning table behind the OpenFlow NORMAL
// action: which port a (VLAN, Ethernet address) was last seen on.
//
// The table has a fixed capacity chosen at creation (OVS's default is 8192
// entries) and never allocates after New: entries live in one array, are
// indexed by an intrusive hash chain and kept on an LRU list, so a full
// table evicts the least recently seen entry. Learning happens on the upcall
// miss path, so Learn and Lookup are cheap and allocation-free.
//
// Every change that can alter a NORMAL translation (a new entry, a move to
// another port, an eviction, an expiry, a flush) bumps Version, which the
// revalidators compare to decide whether cached datapath flows need
// re-translation.
//
// A Table is safe for concurrent use; one mutex guards it.
package maclearn

import (
	"sync"
	"sync/atomic"
	"time"
)

// Defaults from OVS (other_config:mac-table-size and mac-aging-time).
const (
	DefaultCapacity = 8192
	DefaultAging    = 300 * time.Second
)

// Entry is one learned address, as fdb/show lists it.
type Entry struct {
	VLAN uint16 // VLAN ID (0 for untagged)
	MAC  [6]byte
	Port uint32 // OpenFlow port number
	Age  time.Duration
}

const none = -1

type slot struct {
	vlan       uint16
	mac        [6]byte
	port       uint32
	used       int64 // unix nanoseconds of the last Learn
	hashNext   int32
	prev, next int32 // LRU list; head is the most recently seen
	inUse      bool
}

// Table is a MAC learning table.
type Table struct {
	mu      sync.Mutex
	slots   []slot
	buckets []int32 // first slot of each hash chain, plus one (0: empty)
	free    int32   // free list through hashNext
	head    int32   // most recently used
	tail    int32   // least recently used
	n       int
	aging   time.Duration
	version atomic.Uint64
	stats   Stats // under mu
}

// Stats count what happened to a table's entries since it was made or
// its stats last cleared (fdb/stats-show). Flushes are not counted.
type Stats struct {
	Learned uint64 // entries added
	Expired uint64 // entries removed for age
	Evicted uint64 // entries removed to make room for a new one
	Moved   uint64 // entries that moved to another port
}

// Stats returns the table's counters.
func (t *Table) Stats() Stats {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.stats
}

// ClearStats zeroes the counters (fdb/stats-clear).
func (t *Table) ClearStats() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.stats = Stats{}
}

// New returns a table of the given capacity (DefaultCapacity if <= 0)
// whose entries expire after aging (DefaultAging if <= 0).
func New(capacity int, aging time.Duration) *Table {
	if capacity <= 0 {
		capacity = DefaultCapacity
	}
	if aging <= 0 {
		aging = DefaultAging
	}
	nb := 1
	for nb < 2*capacity {
		nb <<= 1
	}
	// Nothing is written here: the arrays stay untouched, so not resident,
	// until entries are learned. An idle bridge with the default capacity
	// would otherwise hold 384 KiB of initialised slots and buckets.
	t := &Table{
		slots:   make([]slot, 0, capacity),
		buckets: make([]int32, nb),
		aging:   aging,
	}
	t.free, t.head, t.tail = none, none, none
	return t
}

func (t *Table) reset() {
	clear(t.buckets)
	t.slots = t.slots[:0]
	t.free, t.head, t.tail, t.n = none, none, none, 0
}

// Capacity returns how many entries the table holds at most.
func (t *Table) Capacity() int { return cap(t.slots) }

// Aging returns how long an entry lives without being seen.
func (t *Table) Aging() time.Duration { return t.aging }

// Version returns a number that changes whenever the table changes in a way
// that can alter where a frame is forwarded.
func (t *Table) Version() uint64 { return t.version.Load() }

// Len returns the number of entries, expired ones not yet removed included.
func (t *Table) Len() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.n
}

// IsLearnable reports whether a source address may be learned: multicast
// and broadcast addresses never are.
func IsLearnable(mac [6]byte) bool { return mac[0]&1 == 0 }

func bucket(vlan uint16, mac [6]byte, mask int) int {
	h := uint64(vlan)<<48 | uint64(mac[0])<<40 | uint64(mac[1])<<32 |
		uint64(mac[2])<<24 | uint64(mac[3])<<16 | uint64(mac[4])<<8 | uint64(mac[5])
	h ^= h >> 29
	h *= 0xbf58476d1ce4e5b9
	h ^= h >> 32
	return int(h) & mask
}

// find returns the slot index of (vlan, mac) and its bucket, or none.
func (t *Table) find(vlan uint16, mac [6]byte) (int32, int) {
	b := bucket(vlan, mac, len(t.buckets)-1)
	for i := t.buckets[b] - 1; i != none; i = t.slots[i].hashNext {
		if s := &t.slots[i]; s.vlan == vlan && s.mac == mac {
			return i, b
		}
	}
	return none, b
}

func (t *Table) lruUnlink(i int32) {
	s := &t.slots[i]
	if s.prev != none {
		t.slots[s.prev].next = s.next
	} else {
		t.head = s.next
	}
	if s.next != none {
		t.slots[s.next].prev = s.prev
	} else {
		t.tail = s.prev
	}
	s.prev, s.next = none, none
}

func (t *Table) lruPushFront(i int32) {
	s := &t.slots[i]
	s.prev, s.next = none, t.head
	if t.head != none {
		t.slots[t.head].prev = i
	}
	t.head = i
	if t.tail == none {
		t.tail = i
	}
}

// remove takes slot i out of its hash chain and the LRU list and frees it.
func (t *Table) remove(i int32) {
	s := &t.slots[i]
	b := bucket(s.vlan, s.mac, len(t.buckets)-1)
	prev := int32(none)
	for j := t.buckets[b] - 1; j != none; j = t.slots[j].hashNext {
		if j == i {
			if prev == none {
				t.buckets[b] = s.hashNext + 1
			} else {
				t.slots[prev].hashNext = s.hashNext
			}
			break
		}
		prev = j
	}
	t.lruUnlink(i)
	*s = slot{hashNext: t.free, prev: none, next: none}
	t.free = i
	t.n--
}

// Learn records that (vlan, mac) was seen on port at now. It reports
// whether the table changed in a way that matters for forwarding: a new
// entry (possibly evicting the oldest) or a move to another port. Refreshing
// an existing entry is not a change. Unlearnable (multicast) addresses are
// ignored.
func (t *Table) Learn(vlan uint16, mac [6]byte, port uint32, now time.Time) bool {
	if !IsLearnable(mac) {
		return false
	}
	ns := now.UnixNano()
	t.mu.Lock()
	defer t.mu.Unlock()
	i, b := t.find(vlan, mac)
	if i != none {
		s := &t.slots[i]
		s.used = ns
		t.lruUnlink(i)
		t.lruPushFront(i)
		if s.port == port {
			return false
		}
		s.port = port
		t.stats.Moved++
		t.version.Add(1)
		return true
	}
	switch {
	case t.free != none:
	case len(t.slots) < cap(t.slots):
		// Slots are taken into use as the table first fills.
		t.slots = append(t.slots, slot{hashNext: none, prev: none, next: none})
		t.free = int32(len(t.slots) - 1)
	default:
		t.remove(t.tail) // evict the least recently seen
		t.stats.Evicted++
	}
	i = t.free
	s := &t.slots[i]
	t.free = s.hashNext
	*s = slot{vlan: vlan, mac: mac, port: port, used: ns, hashNext: t.buckets[b] - 1, inUse: true}
	t.buckets[b] = i + 1
	t.lruPushFront(i)
	t.n++
	t.stats.Learned++
	t.version.Add(1)
	return true
}

// Lookup returns the port (vlan, mac) was last seen on, if it was seen
// within the aging time before now.
func (t *Table) Lookup(vlan uint16, mac [6]byte, now time.Time) (uint32, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	i, _ := t.find(vlan, mac)
	if i == none || now.UnixNano()-t.slots[i].used > int64(t.aging) {
		return 0, false
	}
	return t.slots[i].port, true
}

// Expire removes the entries not seen within the aging time before now and
// returns how many it removed.
func (t *Table) Expire(now time.Time) int {
	cutoff := now.UnixNano() - int64(t.aging)
	t.mu.Lock()
	defer t.mu.Unlock()
	removed := 0
	for t.tail != none && t.slots[t.tail].used < cutoff {
		t.remove(t.tail)
		removed++
	}
	t.stats.Expired += uint64(removed)
	if removed > 0 {
		t.version.Add(1)
	}
	return removed
}

// FlushPort removes every entry on port (when the port goes away) and
// returns how many it removed.
func (t *Table) FlushPort(port uint32) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	removed := 0
	for i := t.head; i != none; {
		next := t.slots[i].next
		if t.slots[i].port == port {
			t.remove(i)
			removed++
		}
		i = next
	}
	if removed > 0 {
		t.version.Add(1)
	}
	return removed
}

// MovePort gives every entry on port from to port to, ages kept, and
// returns how many it moved: what ovs-vswitchd does with the addresses
// learned on an old RSTP root port when an alternate port takes over
// (they are behind the new root port now). It counts as no move in
// Stats, as ovs-vswitchd's does not.
func (t *Table) MovePort(from, to uint32) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	moved := 0
	for i := t.head; i != none; i = t.slots[i].next {
		if s := &t.slots[i]; s.port == from && from != to {
			s.port = to
			moved++
		}
	}
	if moved > 0 {
		t.version.Add(1)
	}
	return moved
}

// Flush removes every entry.
func (t *Table) Flush() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.reset()
	t.version.Add(1)
}

// Entries calls fn for each entry, most recently seen first, with ages
// measured at now. fn must not call back into the table.
func (t *Table) Entries(now time.Time, fn func(Entry)) {
	t.mu.Lock()
	defer t.mu.Unlock()
	ns := now.UnixNano()
	for i := t.head; i != none; i = t.slots[i].next {
		s := &t.slots[i]
		fn(Entry{VLAN: s.vlan, MAC: s.mac, Port: s.port, Age: time.Duration(ns - s.used)})
	}
}
