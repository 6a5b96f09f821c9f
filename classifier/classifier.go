// Package classifier holds OpenFlow-style rule tables and finds, for a
// flow.Key, the highest-priority rule that matches it, reporting which of
// the key's bits that answer depended on: the megaflow mask the switch
// installs in the datapath.
//
// It is a tuple space search: one subtable per distinct mask, each a hash
// table of masked keys, visited in descending order of the best priority
// they hold, stopping as soon as no remaining subtable can win. Within a
// subtable the lookup is staged (metadata, L2, L3, L4, see flow.StageEnd):
// a key that no rule matches in an early stage is turned away before later
// fields are hashed, so they stay wildcarded. Prefix tries over the IPv4
// and IPv6 addresses (classifier-wide) and over the transport ports (per
// subtable) narrow that further to the address and port bits that decided
// a miss. A subtable whose mask is all-wildcard answers without hashing;
// one whose mask is exact is a single probe.
//
// Readers never lock. A Classifier publishes immutable Snapshots through an
// atomic pointer; writers serialise on a mutex, derive the next snapshot by
// copying only what changes (the subtables' tables and tries are
// persistent structures) and publish it in one store, so a Batch of any
// size becomes visible at once and a lookup never sees half of it.
package classifier

import (
	"iter"
	"sync"
	"sync/atomic"

	"github.com/govswitch/govswitch/flow"
)

// Match says which packets a rule applies to: those whose Key equals
// Match.Key on every bit Match.Mask selects. Key bits outside Mask are
// ignored everywhere (they need not be zero).
type Match struct {
	Key  flow.Key
	Mask flow.Mask
}

// Matches reports whether k is one of the packets m applies to.
func (m *Match) Matches(k *flow.Key) bool { return k.EqualMasked(&m.Key, &m.Mask) }

// Rule is one entry of a classifier. The caller allocates it and keeps the
// pointer: a rule's identity is its address, so stats and timeouts can
// hang on it. While a rule is in a classifier its Match and Priority must
// not change, and Value is read by lookups without synchronisation: put
// mutable state behind a pointer in T that has its own.
type Rule[T any] struct {
	Match Match
	// Priority orders overlapping rules: the greater wins. Any int is
	// allowed; OpenFlow's are 0..65535. Among rules of equal priority that
	// match one packet the rule with the greater Mask, compared as bytes
	// in field order, wins (OpenFlow leaves it undefined; this is
	// deterministic). Equal Match and equal Priority make one rule.
	Priority int
	Value    T
}

// Classifier is a versioned rule table. The zero Classifier is empty and
// ready to use; it must not be copied after first use.
//
// Lookup and Snapshot never block and may run concurrently with anything.
// Writes go through a Batch (Begin) or the one-change helpers Insert and
// Remove; writers exclude each other.
type Classifier[T any] struct {
	cur atomic.Pointer[Snapshot[T]]

	mu      sync.Mutex                 // held by the open Batch
	tables  map[flow.Mask]*subtable[T] // committed subtables, by mask; under mu
	batches uint64                     // batches begun; under mu
}

// Snapshot returns the current version. It stays valid and unchanged for
// as long as the caller holds it, whatever writers do meanwhile; holding it
// keeps that version's memory alive.
func (c *Classifier[T]) Snapshot() *Snapshot[T] { return c.cur.Load() }

// Lookup is c.Snapshot().Lookup(k, wc).
func (c *Classifier[T]) Lookup(k *flow.Key, wc *flow.Mask) *Rule[T] {
	return c.cur.Load().Lookup(k, wc)
}

// Insert adds r in a batch of its own (see Batch.Insert).
func (c *Classifier[T]) Insert(r *Rule[T]) (replaced *Rule[T]) {
	b := c.Begin()
	replaced = b.Insert(r)
	b.Commit()
	return replaced
}

// Remove takes r out in a batch of its own (see Batch.Remove).
func (c *Classifier[T]) Remove(r *Rule[T]) bool {
	b := c.Begin()
	ok := b.Remove(r)
	b.Commit()
	return ok
}

// Snapshot is one immutable version of a classifier's rules. A nil
// *Snapshot is an empty one. All methods are safe for concurrent use.
type Snapshot[T any] struct {
	// subtables in visiting order: descending maxPri, then descending mask
	// (the tie-break order), so the first match that no later subtable can
	// beat ends the search.
	subtables []*subtable[T]
	tries     [numGlobalTries]*trieNode
	n         int
	seq       uint64
}

// Len returns the number of rules.
func (s *Snapshot[T]) Len() int {
	if s == nil {
		return 0
	}
	return s.n
}

// Subtables returns the number of distinct masks, which is what a lookup
// that matches nothing pays for.
func (s *Snapshot[T]) Subtables() int {
	if s == nil {
		return 0
	}
	return len(s.subtables)
}

// Version counts the batches committed before this snapshot was published;
// it grows by one with each commit that changed something.
func (s *Snapshot[T]) Version() uint64 {
	if s == nil {
		return 0
	}
	return s.seq
}

// Lookup returns the highest-priority rule matching k (ties broken as Rule
// says), or nil, and widens wc by the bits of k the answer depended on:
// every key equal to k on the bits of the widened wc gets the same answer.
// Start wc at zero for one table's megaflow mask, or carry it across the
// tables a packet visits. wc may be nil. Lookup does not allocate, and
// k and wc are not kept.
//
// The bits added, per subtable visited (those that cannot beat the rule
// already found are not visited and add nothing): its whole mask when it
// matches or misses in its last stage; its mask's bits of the stages up
// to the one that missed otherwise; and when a prefix trie shows that no
// rule's address or port prefix of the subtable's length matches, only
// the leading bits of that field the trie looked at, plus the earlier
// stages (so an address bit never goes in without the eth_type that gives
// it meaning, when the rules match on eth_type). An exact-match subtable
// adds every bit; an all-wildcard one adds none.
func (s *Snapshot[T]) Lookup(k *flow.Key, wc *flow.Mask) *Rule[T] {
	if s == nil {
		return nil
	}
	var scratch flow.Mask
	if wc == nil {
		wc = &scratch
	}
	tc := trieCtx{roots: &s.tries}
	var best *Rule[T]
	var bestSt *subtable[T]
	for _, st := range s.subtables {
		if best != nil && !st.mayBeat(best.Priority, bestSt) {
			break // and so can no later subtable: they come in that order
		}
		if r := st.lookup(k, wc, &tc); r != nil {
			if best == nil || r.Priority > best.Priority ||
				r.Priority == best.Priority && compareMasks(st.mask, bestSt.mask) > 0 {
				best, bestSt = r, st
			}
		}
	}
	return best
}

// mayBeat reports whether a rule of st could win over a rule of priority p
// in subtable bst.
func (st *subtable[T]) mayBeat(p int, bst *subtable[T]) bool {
	return st.maxPri > p || st.maxPri == p && compareMasks(st.mask, bst.mask) > 0
}

// trieCtx memoises, for one lookup, what the classifier-wide tries say
// about the key: each trie is walked at most once, and only as deep as the
// subtables' questions have needed so far.
type trieCtx struct {
	roots   *[numGlobalTries]*trieNode
	active  bool // some trie has been asked
	started [numGlobalTries]bool
	walks   [numGlobalTries]trieWalk
}

// walking reports whether this lookup has begun to consult tries. Once it
// has (a subtable missed), more subtables are likely to, and asking a trie
// first is cheaper than probing their hash tables: a walk is shared by all
// subtables, and the top of a trie stays in cache. Until then, the walks
// are what a lookup that hits everywhere can avoid.
func (c *trieCtx) walking() bool { return c.active }

// mayMatch reports whether some rule matching a prefix of length plen of
// field f agrees with k there, and how many leading bits of the field
// decided that (see trieWalk.query).
func (c *trieCtx) mayMatch(k *flow.Key, f prefixField, plen int) (bool, int) {
	c.active = true
	w := &c.walks[f]
	if !c.started[f] {
		w.start(c.roots[f], f.value(k), f.width())
		c.started[f] = true
	}
	return w.query(plen)
}

// Find returns the rule whose match equals m (same mask, same key under
// it) and whose priority is p, or nil: OpenFlow's strict match.
func (s *Snapshot[T]) Find(m *Match, p int) *Rule[T] {
	if s == nil {
		return nil
	}
	h := m.Mask.Key().Hash(0)
	for _, st := range s.subtables {
		if st.maskHash == h && *st.mask == m.Mask {
			return findIn(st, m, p)
		}
	}
	return nil
}

// Rules returns the rules that filter selects loosely, as OpenFlow's
// non-strict modify, delete and stats requests do: those at least as
// specific as filter (their mask covers filter's) that agree with it on
// filter's bits. A nil filter selects every rule. The order is
// unspecified. It reads this snapshot only.
func (s *Snapshot[T]) Rules(filter *Match) iter.Seq[*Rule[T]] {
	return func(yield func(*Rule[T]) bool) {
		if s == nil {
			return
		}
		for _, st := range s.subtables {
			if !rulesIn(st, st.table, filter, yield) {
				return
			}
		}
	}
}

// Overlaps reports whether a rule of priority p exists that some packet
// matches together with m (OFPFF_CHECK_OVERLAP). A rule with exactly m and
// p counts.
func (s *Snapshot[T]) Overlaps(m *Match, p int) bool {
	if s == nil {
		return false
	}
	for _, st := range s.subtables {
		if overlapsIn(st, m, p) {
			return true
		}
	}
	return false
}

func findIn[T any](st *subtable[T], m *Match, p int) *Rule[T] {
	if st == nil {
		return nil
	}
	if e := st.find(&m.Key); e != nil {
		for _, r := range e.rules {
			if r.Priority == p {
				return r
			}
		}
	}
	return nil
}

// rulesIn yields the rules of table, a version of st's table, that filter
// selects loosely.
func rulesIn[T any](st *subtable[T], table hmap[*entry[T]], filter *Match, yield func(*Rule[T]) bool) bool {
	if filter != nil && !st.mask.Covers(&filter.Mask) {
		return true
	}
	return table.each(func(_ uint64, head *entry[T]) bool {
		for e := head; e != nil; e = e.next {
			if filter != nil {
				if key := st.expand(e); !key.EqualMasked(&filter.Key, &filter.Mask) {
					continue
				}
			}
			for _, r := range e.rules {
				if !yield(r) {
					return false
				}
			}
		}
		return true
	})
}

func overlapsIn[T any](st *subtable[T], m *Match, p int) bool {
	if _, ok := st.pris.get(uint64(int64(p))); !ok {
		return false
	}
	common := *st.mask
	common.And(&m.Mask)
	return !st.table.each(func(_ uint64, head *entry[T]) bool {
		for e := head; e != nil; e = e.next {
			if key := st.expand(e); !key.EqualMasked(&m.Key, &common) {
				continue
			}
			for _, r := range e.rules {
				if r.Priority == p {
					return false // found: stop
				}
			}
		}
		return true
	})
}
