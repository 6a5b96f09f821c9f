package classifier

import (
	"iter"
	"slices"

	"github.com/govswitch/govswitch/flow"
)

// Batch is an open set of changes to a Classifier: the unit of publication.
// Nothing it does is visible to lookups until Commit, which publishes all
// of it in one atomic store; Abort drops it. Its own reads (Find, Rules,
// Overlaps, Len) see its changes, so an OpenFlow bundle can be validated as
// it is built.
//
// An open Batch holds the classifier's writer lock: other writers wait,
// readers do not. A Batch is used by one goroutine and ends with exactly
// one Commit or Abort; using it after that panics.
type Batch[T any] struct {
	c     *Classifier[T]
	id    uint64 // owner of the nodes this batch made (see trieNode.owner)
	base  *Snapshot[T]
	dirty map[flow.Mask]*subtable[T] // changed subtables; nil: gone
	tries [numGlobalTries]*trieNode
	n     int
	done  bool
}

// Begin opens a Batch, waiting for any other open one to end.
func (c *Classifier[T]) Begin() *Batch[T] {
	c.mu.Lock()
	if c.tables == nil {
		c.tables = make(map[flow.Mask]*subtable[T])
	}
	c.batches++
	b := &Batch[T]{c: c, id: c.batches, base: c.cur.Load(), dirty: make(map[flow.Mask]*subtable[T])}
	if b.base != nil {
		b.tries, b.n = b.base.tries, b.base.n
	}
	return b
}

func (b *Batch[T]) check() {
	if b.done {
		panic("classifier: Batch used after Commit or Abort")
	}
}

// get returns the batch's current subtable for m, or nil.
func (b *Batch[T]) get(m *flow.Mask) *subtable[T] {
	if st, ok := b.dirty[*m]; ok {
		return st
	}
	return b.c.tables[*m]
}

// Insert adds r. A rule with an equal match and priority is replaced by r
// and returned (OpenFlow's add); inserting r again returns r and changes
// nothing. The classifier keeps r until it is removed or replaced; r's
// Match and Priority must not change meanwhile.
func (b *Batch[T]) Insert(r *Rule[T]) (replaced *Rule[T]) {
	b.check()
	m := &r.Match.Mask
	st := b.get(m)
	if st == nil {
		st = newSubtable[T](m)
		st.owner = b.id
	}
	key := r.Match.Key.Apply(m)
	ns, replaced, newEntry := st.insert(r, &key, b.id)
	if newEntry {
		for _, c := range ns.tries[:ns.nTries] {
			b.tries[c.field] = b.tries[c.field].insert(c.field.value(&key), int(c.plen), b.id)
		}
	}
	if replaced == nil {
		b.n++
	}
	b.dirty[*m] = ns
	return replaced
}

// Remove takes r out and reports whether it was in.
func (b *Batch[T]) Remove(r *Rule[T]) bool {
	b.check()
	m := &r.Match.Mask
	st := b.get(m)
	if st == nil {
		return false
	}
	key := r.Match.Key.Apply(m)
	ns, ok, goneEntry := st.remove(r, &key, b.id)
	if !ok {
		return false
	}
	if goneEntry {
		for _, c := range ns.tries[:ns.nTries] {
			b.tries[c.field] = b.tries[c.field].remove(c.field.value(&key), int(c.plen), b.id)
		}
	}
	b.n--
	if ns.nRules == 0 {
		ns = nil
	}
	b.dirty[*m] = ns
	return true
}

// Len returns the number of rules, counting the batch's changes.
func (b *Batch[T]) Len() int { return b.n }

// Find is Snapshot.Find over the batch's state.
func (b *Batch[T]) Find(m *Match, p int) *Rule[T] {
	b.check()
	return findIn(b.get(&m.Mask), m, p)
}

// Rules is Snapshot.Rules over the batch's state as it is when Rules is
// called: changes made while iterating do not affect the iteration, so
// removing what it yields is fine.
func (b *Batch[T]) Rules(filter *Match) iter.Seq[*Rule[T]] {
	b.check()
	// The batch changes what it made in place. Give it a new identity, so
	// that all it made so far becomes immutable and the iteration sees
	// the state as of now whatever the loop body changes.
	b.c.batches++
	b.id = b.c.batches
	sts := b.current()
	tables := make([]hmap[*entry[T]], len(sts))
	for i, st := range sts {
		tables[i] = st.table
	}
	return func(yield func(*Rule[T]) bool) {
		for i, st := range sts {
			if !rulesIn(st, tables[i], filter, yield) {
				return
			}
		}
	}
}

// Overlaps is Snapshot.Overlaps over the batch's state.
func (b *Batch[T]) Overlaps(m *Match, p int) bool {
	b.check()
	for _, st := range b.current() {
		if overlapsIn(st, m, p) {
			return true
		}
	}
	return false
}

// current returns the batch's subtables, in no particular order.
func (b *Batch[T]) current() []*subtable[T] {
	sts := make([]*subtable[T], 0, len(b.c.tables)+len(b.dirty))
	for m, st := range b.c.tables {
		if _, ok := b.dirty[m]; !ok {
			sts = append(sts, st)
		}
	}
	for _, st := range b.dirty {
		if st != nil {
			sts = append(sts, st)
		}
	}
	return sts
}

// Abort drops the batch's changes and releases the writer lock.
func (b *Batch[T]) Abort() {
	b.check()
	b.done = true
	b.c.mu.Unlock()
}

// Commit publishes the batch's changes in one atomic step, releases the
// writer lock and returns the snapshot now current. A batch that changed
// nothing publishes nothing.
func (b *Batch[T]) Commit() *Snapshot[T] {
	b.check()
	b.done = true
	c := b.c
	defer c.mu.Unlock()
	if len(b.dirty) == 0 {
		return b.base
	}
	var old []*subtable[T]
	var seq uint64
	if b.base != nil {
		old, seq = b.base.subtables, b.base.seq
	}
	var drop, add, swapOld, swapNew []*subtable[T]
	for m, st := range b.dirty {
		o := c.tables[m]
		switch {
		case o != nil && st != nil && o.maxPri == st.maxPri:
			// Same mask, same place in the order: swap in place.
			swapOld, swapNew = append(swapOld, o), append(swapNew, st)
		case o != nil:
			drop = append(drop, o)
		}
		if st != nil {
			if o == nil || o.maxPri != st.maxPri {
				add = append(add, st)
			}
			c.tables[m] = st
		} else {
			delete(c.tables, m)
		}
	}
	snap := &Snapshot[T]{tries: b.tries, n: b.n, seq: seq + 1}
	if len(drop)+len(add)+len(swapOld) <= 16 {
		// A few changes: make them within a copy of the old order.
		list := make([]*subtable[T], len(old), len(old)+len(add))
		copy(list, old)
		for i, o := range swapOld {
			if j, ok := slices.BinarySearchFunc(list, o, visitOrder[T]); ok {
				list[j] = swapNew[i]
			}
		}
		for _, o := range drop {
			if i, ok := slices.BinarySearchFunc(list, o, visitOrder[T]); ok {
				list = slices.Delete(list, i, i+1)
			}
		}
		for _, a := range add {
			i, _ := slices.BinarySearchFunc(list, a, visitOrder[T])
			list = slices.Insert(list, i, a)
		}
		snap.subtables = list
	} else {
		gone := make(map[*subtable[T]]bool, len(drop)+len(swapOld))
		for _, o := range drop {
			gone[o] = true
		}
		for _, o := range swapOld {
			gone[o] = true
		}
		add = append(add, swapNew...)
		list := make([]*subtable[T], 0, len(old)+len(add))
		for _, st := range old {
			if !gone[st] {
				list = append(list, st)
			}
		}
		list = append(list, add...)
		slices.SortFunc(list, visitOrder[T])
		snap.subtables = list
	}
	c.cur.Store(snap)
	return snap
}

// visitOrder is the order of Snapshot.subtables.
func visitOrder[T any](a, b *subtable[T]) int {
	switch {
	case a == b:
		return 0
	case a.before(b):
		return -1
	default:
		return 1
	}
}
