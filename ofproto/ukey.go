package ofproto

import (
	"sync"
	"sync/atomic"

	"github.com/govswitch/govswitch/datapath"
	"github.com/govswitch/govswitch/flow"
)

// A ukey (OVS's name; the 2012 code called it a subfacet) is the switch's
// record of one datapath flow it installed: its UFID, megaflow, actions,
// the OpenFlow rules it stands for (to credit their stats), the versions
// of the tables it was translated against, and what the last dump said of
// its counters. Handlers create ukeys on the miss path; revalidators
// update and delete them.
type ukey struct {
	ufid    datapath.UFID
	hash    uint64 // hash of the masked key, computed once at creation
	key     flow.Key
	mask    flow.Mask
	actions []byte // owned; capacity kept across reuse

	rules  [MaxXlateRules]*Rule
	nRules int

	tablesVersion uint64
	macVersion    uint64

	// Revalidator state: the counters at the last dump, the dump
	// generation that last saw the flow, and the generation at which its
	// packet count last changed (for idle expiry).
	packets, bytes uint64
	seenGen        uint64
	activeGen      uint64
	activeAt       int64 // unix nanoseconds of the dump that saw the count change
	installed      bool  // the put succeeded (or the flow was adopted); under the shard lock
}

// ukeyShards spreads the ukey table over this many locks so handlers and
// revalidators rarely contend.
const ukeyShards = 16

// ukeyTable is the set of ukeys by UFID, with a bounded pool of free
// ukeys. Capacity bounds the ukeys in use: past it, Get fails and the
// handler executes the packet without installing a flow.
type ukeyTable struct {
	shards [ukeyShards]struct {
		sync.Mutex
		m map[datapath.UFID]*ukey
	}
	poolMu sync.Mutex
	free   []*ukey
	n      atomic.Int64
	cap    int64
}

func newUkeyTable(capacity int) *ukeyTable {
	t := &ukeyTable{cap: int64(capacity)}
	// Start small: map memory is resident as soon as it is made, and an
	// idle switch should not pay for 65536 entries. The maps grow with the
	// traffic; a storm's growth is amortised, and steady state recycles.
	hint := min(capacity/ukeyShards, 256)
	for i := range t.shards {
		t.shards[i].m = make(map[datapath.UFID]*ukey, hint)
	}
	return t
}

func (t *ukeyTable) shard(u *datapath.UFID) int { return int(u[0]) % ukeyShards }

// Len returns the ukeys in use.
func (t *ukeyTable) Len() int { return int(t.n.Load()) }

// Lookup returns the ukey of ufid, or nil.
func (t *ukeyTable) Lookup(ufid *datapath.UFID) *ukey {
	s := &t.shards[t.shard(ufid)]
	s.Lock()
	u := s.m[*ufid]
	s.Unlock()
	return u
}

// Insert draws a ukey from the pool for ufid and adds it, unless a ukey of
// that UFID exists (then it returns nil, false: a duplicate) or the table
// is at capacity (nil, true). fill initialises the new ukey under the
// shard lock, before anyone else can see it.
func (t *ukeyTable) Insert(ufid *datapath.UFID, fill func(*ukey)) (u *ukey, full bool) {
	s := &t.shards[t.shard(ufid)]
	s.Lock()
	defer s.Unlock()
	if s.m[*ufid] != nil {
		return nil, false
	}
	if t.n.Load() >= t.cap {
		return nil, true
	}
	u = t.get()
	u.ufid = *ufid
	fill(u)
	s.m[*ufid] = u
	t.n.Add(1)
	return u, false
}

// MarkInstalled records that u's flow put succeeded, if u is still the
// ukey of ufid: a purge may have recycled it while the put was under way,
// and then there is nothing to mark.
func (t *ukeyTable) MarkInstalled(ufid *datapath.UFID, u *ukey) bool {
	s := &t.shards[t.shard(ufid)]
	s.Lock()
	defer s.Unlock()
	if s.m[*ufid] != u {
		return false
	}
	u.installed = true
	return true
}

// Remove takes the ukey of ufid out of the table and returns it to the
// pool. The caller must not use it afterwards.
func (t *ukeyTable) Remove(ufid *datapath.UFID) {
	s := &t.shards[t.shard(ufid)]
	s.Lock()
	u := s.m[*ufid]
	if u != nil {
		delete(s.m, *ufid)
		t.n.Add(-1)
	}
	s.Unlock()
	if u != nil {
		t.put(u)
	}
}

// Range calls fn for every ukey, shard by shard, holding that shard's
// lock: fn must not call back into the table.
func (t *ukeyTable) Range(fn func(*ukey)) {
	for i := range t.shards {
		s := &t.shards[i]
		s.Lock()
		for _, u := range s.m {
			fn(u)
		}
		s.Unlock()
	}
}

// ukeySlab is how many ukeys the pool allocates at once when it runs dry:
// under a storm of new flows, one allocation per 64 flows instead of two
// per flow.
const ukeySlab = 64

// ukeyActionsCap is the actions capacity each slab ukey starts with; a
// longer translation grows that ukey's buffer once.
const ukeyActionsCap = 128

func (t *ukeyTable) get() *ukey {
	t.poolMu.Lock()
	defer t.poolMu.Unlock()
	if len(t.free) == 0 {
		slab := make([]ukey, ukeySlab)
		acts := make([]byte, ukeySlab*ukeyActionsCap)
		for i := range slab {
			slab[i].actions = acts[i*ukeyActionsCap : i*ukeyActionsCap : (i+1)*ukeyActionsCap]
			t.free = append(t.free, &slab[i])
		}
	}
	n := len(t.free)
	u := t.free[n-1]
	t.free = t.free[:n-1]
	return u
}

func (t *ukeyTable) put(u *ukey) {
	acts := u.actions[:0]
	*u = ukey{actions: acts}
	t.poolMu.Lock()
	t.free = append(t.free, u)
	t.poolMu.Unlock()
}
