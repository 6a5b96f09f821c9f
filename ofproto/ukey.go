package ofproto

import (
	"math/bits"
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
	hash    uint64        // hash of the masked key, computed once at creation
	key     packedKey     // the masked key: what the flow matches
	mask    *internedMask // ukeys of one mask share it; see Mask
	actions []byte        // owned; capacity kept across reuse

	// rules are the OpenFlow rules the flow stands for: ruleBuf when they
	// fit, a slice of their own otherwise.
	rules   []*Rule
	ruleBuf [ukeyInlineRules]*Rule

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
	learns         bool  // the translation ran a learn action: the revalidator re-learns when packets pass
	// bondID and bucket name the balanced bond the flow's output hashed
	// into and the bucket, whose load its bytes count to
	// (bond_rebalance.go); they fit where the bools leave padding.
	bondID  uint16
	bucket  uint8
	nfFlood bool // the translation flooded: NetFlow reports output 65535
	fin     bool // the translation ran a fin_timeout: the revalidator looks for FIN and RST (xlate_fintimeout.go)
}

// A ukey is small because a switch at its flow limit holds tens of
// thousands of them, and every byte of a new one is a page the process
// touches for the first time while a storm of new flows is being set up:
// in the UML bed a first touch is a page fault costing tens of µs, and a
// ukey holding a whole Key and Mask (624 bytes) made allocating ukeys a
// quarter of the switch's CPU in the exact-match regime. So the key keeps
// only its nonzero words, the mask is shared, and the rules are inline
// when there are few.

// ukeyInlineRules is how many rules a ukey holds without a slice of its
// own: a NORMAL or single-table pipeline matches one.
const ukeyInlineRules = 2

// setRules records the rules of a translation.
func (k *ukey) setRules(rs *[MaxXlateRules]*Rule, n int) {
	if n <= len(k.ruleBuf) {
		k.rules = k.ruleBuf[:n:n]
		copy(k.rules, rs[:n])
		clear(k.ruleBuf[n:])
		return
	}
	k.ruleBuf = [ukeyInlineRules]*Rule{}
	k.rules = append([]*Rule(nil), rs[:n]...)
}

// packedInline is how many nonzero key words a packedKey holds in place: a
// TCP/IPv4 key has about 6 of the Key's 39, a TCP/IPv6 key about 10.
const packedInline = 10

// packedKey is a flow.Key reduced to its nonzero words. Keys with more
// nonzero words than fit (tunnelled IPv6, say) spill to a full copy.
type packedKey struct {
	bits  uint64 // bit i set: word i of the key is nonzero
	w     [packedInline]uint64
	spill *flow.Key
}

func init() {
	if flow.KeyWords > 64 {
		panic("ofproto: packedKey's bitmap needs flow.KeyWords <= 64")
	}
}

// set packs k masked by m, word by word, with no masked copy in between
// unless it spills.
func (p *packedKey) set(k *flow.Key, m *flow.Mask) {
	*p = packedKey{}
	n := 0
	mw := m.Words()
	for i, w := range k.Words() {
		w &= mw[i]
		if w == 0 {
			continue
		}
		if n == packedInline {
			p.bits, p.w = 0, [packedInline]uint64{}
			c := k.Apply(m)
			p.spill = &c
			return
		}
		p.bits |= 1 << uint(i)
		p.w[n] = w
		n++
	}
}

// get unpacks the key into k.
func (p *packedKey) get(k *flow.Key) {
	if p.spill != nil {
		*k = *p.spill
		return
	}
	*k = flow.Key{}
	ws := k.Words()
	n := 0
	for b := p.bits; b != 0; b &= b - 1 {
		ws[bits.TrailingZeros64(b)] = p.w[n]
		n++
	}
}

// Mask returns the ukey's megaflow mask; it is shared: do not modify it.
func (k *ukey) Mask() *flow.Mask { return &k.mask.mask }

// Key returns the ukey's masked key.
func (k *ukey) Key() flow.Key {
	var key flow.Key
	k.key.get(&key)
	return key
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

	masks maskTable
}

// maskTable interns the megaflow masks of the ukeys, counting references:
// a switch has a few distinct masks (one in the exact-match regime) and
// tens of thousands of flows. A mask whose last flow went stays in the
// table, since it often comes back and a map keyed by something as big as
// a Mask allocates on every insert; unused masks are swept when they
// outnumber the used ones.
type maskTable struct {
	mu   sync.Mutex
	m    map[flow.Mask]*internedMask
	live int // entries with refs > 0
	// last is the entry interned last: a run of new flows nearly always
	// shares its mask, which a compare finds without hashing the mask
	// (the flow's own key was hashed already).
	last *internedMask
}

type internedMask struct {
	mask flow.Mask
	refs int
}

// maskSweepAt is how many masks the table holds before it sweeps unused ones.
const maskSweepAt = 256

// intern returns the shared copy of m, taking a reference.
func (t *maskTable) intern(m *flow.Mask) *internedMask {
	t.mu.Lock()
	defer t.mu.Unlock()
	im := t.last
	if im == nil || im.mask != *m {
		im = t.m[*m]
	}
	if im == nil {
		if t.m == nil {
			t.m = make(map[flow.Mask]*internedMask)
		}
		if len(t.m) >= maskSweepAt && len(t.m) >= 2*t.live {
			for k, v := range t.m {
				if v.refs == 0 {
					delete(t.m, k)
					if v == t.last {
						t.last = nil
					}
				}
			}
		}
		im = &internedMask{mask: *m}
		t.m[*m] = im
	}
	if im.refs == 0 {
		t.live++
	}
	im.refs++
	t.last = im
	return im
}

// release drops a reference taken by intern.
func (t *maskTable) release(im *internedMask) {
	if im == nil {
		return
	}
	t.mu.Lock()
	if im.refs--; im.refs == 0 {
		t.live--
	}
	t.mu.Unlock()
}

// Len returns the distinct masks in use.
func (t *maskTable) Len() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.live
}

// setFlow records the flow's match in k: key masked by mask, and the
// interned mask. It is for a ukey being filled (Insert's fill) or one the
// caller owns.
func (t *ukeyTable) setFlow(k *ukey, key *flow.Key, mask *flow.Mask) {
	k.key.set(key, mask)
	if k.mask != nil && k.mask.mask == *mask {
		return
	}
	t.masks.release(k.mask)
	k.mask = t.masks.intern(mask)
}

func newUkeyTable(capacity int) *ukeyTable {
	t := &ukeyTable{cap: int64(capacity)}
	// Start small: map memory is resident as soon as it is made, and an
	// idle switch should not pay for 65536 entries. The maps grow with the
	// traffic; a storm's growth is amortised, and steady state recycles.
	hint := min(capacity/ukeyShards, 8)
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
// longer translation grows that ukey's buffer once. An output to one port
// is 8 bytes; NORMAL's flood to a few ports a few tens.
const ukeyActionsCap = 48

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
	t.masks.release(u.mask)
	acts := u.actions[:0]
	*u = ukey{actions: acts}
	t.poolMu.Lock()
	t.free = append(t.free, u)
	t.poolMu.Unlock()
}
