package classifier

import (
	"cmp"
	"slices"

	"github.com/govswitch/govswitch/flow"
)

// A subtable holds every rule whose mask is one particular mask: a hash
// table from masked key to the rules with that match. It is immutable once
// published; writers derive the next version with insert and remove, which
// share all unchanged structure with the old one (a batch changes in place
// only the versions it made itself and has not yet published).
//
// The fields a lookup reads come first and live in the struct itself (no
// slices to follow), so that visiting a subtable that turns the key away
// costs a few adjacent cache lines: with a thousand subtables, memory
// latency, not arithmetic, is the price of a lookup.
type subtable[T any] struct {
	maxPri   int  // highest priority of any rule; valid when nRules > 0
	catchAll bool // mask is all-wildcard: every key matches the one entry
	exact    bool // mask is all-ones: one probe with the whole key's hash
	nStages  uint8
	nTries   uint8
	// The lookup plan: the key words the mask selects, in stage order;
	// plan entries [stageEnd[i-1], stageEnd[i]) are stage i's, where the
	// stages counted are only those in which the mask has bits.
	stageEnd [len(flow.StageEnd)]uint8
	// tries are the classifier-wide prefix tries that can explain a miss
	// in the stage each belongs to with fewer bits than the stage's mask,
	// in stage order.
	tries [numGlobalTries]trieCheck
	// onlyOK[i] says index[i] holds the single hash only[i], the common
	// case (e.g. every rule matches eth_type=0x0800), checked without a
	// memory access.
	onlyOK [len(flow.StageEnd) - 1]bool
	words  [flow.KeyWords]uint8 // key word of each plan entry
	only   [len(flow.StageEnd) - 1]uint64
	top    *Rule[T] // catch-all only: the winning rule
	// index[i] counts entries by the hash of their stages 0..i, for every
	// stage but the last: a lookup that finds no count there knows no
	// entry can match and stops before looking at later fields.
	index [len(flow.StageEnd) - 1]hmap[uint32]
	// table maps the full masked-key hash to the entries with that hash
	// (one, unless 64-bit hashes collide; then they are chained).
	table hmap[*entry[T]]
	// ports are per-subtable tries over the port fields the mask selects
	// as a prefix, consulted when the last stage misses.
	ports []portTrie
	masks [flow.KeyWords]uint64 // mask word of each plan entry

	// Read by writers, and by lookups only to break priority ties.
	pris     hmap[uint32] // number of rules per priority
	nRules   int
	owner    uint64     // the batch that may still change it in place (see trieNode.owner)
	maskHash uint64     // hash of mask, to find a subtable by mask quickly
	mask     *flow.Mask // shared by every version
}

// trieCheck says the subtable matches a prefix of length plen on field,
// which lives in (nonempty) stage number stage.
type trieCheck struct {
	field prefixField
	plen  uint8
	stage uint8
}

// portTrie holds the port prefixes of the subtable's entries.
type portTrie struct {
	field prefixField
	plen  int
	root  *trieNode
}

// entry is one distinct masked key and its rules, highest priority first.
// The priorities are distinct: an equal match and priority is one rule.
// Entries are immutable; a change makes a new one.
type entry[T any] struct {
	next  *entry[T] // another entry whose key has the same hash, or nil
	rules []*Rule[T]
	// vals are the masked key's words the subtable's plan selects, in
	// plan order: a rule costs the words its mask uses, not a whole Key.
	vals []uint64
}

// compact returns the plan words of k under the mask.
func (st *subtable[T]) compact(k *flow.Key) []uint64 {
	kw := k.Words()
	vals := make([]uint64, st.planLen())
	for w := range vals {
		vals[w] = kw[st.words[w]] & st.masks[w]
	}
	return vals
}

// expand returns e's masked key as a whole Key.
func (st *subtable[T]) expand(e *entry[T]) flow.Key {
	var k flow.Key
	kw := k.Words()
	for w, v := range e.vals {
		kw[st.words[w]] = v
	}
	return k
}

// chainReplace returns the chain starting at head with old replaced by nw,
// or dropped if nw is nil, copying the entries before old.
func chainReplace[T any](head, old, nw *entry[T]) *entry[T] {
	if head == old {
		if nw == nil {
			return old.next
		}
		c := *nw
		c.next = old.next
		return &c
	}
	c := *head
	c.next = chainReplace(head.next, old, nw)
	return &c
}

func newSubtable[T any](m *flow.Mask) *subtable[T] {
	mc := *m
	st := &subtable[T]{
		mask:     &mc,
		catchAll: m.IsZero(),
		exact:    m.IsExact(),
		maskHash: m.Key().Hash(0),
	}
	var stageNum [len(flow.StageEnd)]int // nonempty-stage number of each stage
	n, prev := 0, -1
	for i, w := range m.Words() {
		if w == 0 {
			continue
		}
		s := stageOfWord(i)
		if s != prev {
			if prev >= 0 {
				st.stageEnd[st.nStages] = uint8(n)
				st.nStages++
			}
			stageNum[s], prev = int(st.nStages), s
		}
		st.words[n], st.masks[n] = uint8(i), w
		n++
	}
	if prev >= 0 {
		st.stageEnd[st.nStages] = uint8(n)
		st.nStages++
	}
	if st.catchAll || st.exact {
		return st
	}
	for f := prefixField(0); f < numGlobalTries; f++ {
		if plen := f.prefixLen(m); plen > 0 {
			st.tries[st.nTries] = trieCheck{f, uint8(plen), uint8(stageNum[f.stage()])}
			st.nTries++
		}
	}
	slices.SortStableFunc(st.tries[:st.nTries], func(a, b trieCheck) int { return cmp.Compare(a.stage, b.stage) })
	for _, f := range []prefixField{fieldTpDst, fieldTpSrc} {
		if plen := f.prefixLen(m); plen > 0 {
			st.ports = append(st.ports, portTrie{field: f, plen: plen})
		}
	}
	return st
}

// hashes returns the hash of k's masked words through each stage but the
// last, and through all stages. k need not be masked.
func (st *subtable[T]) hashes(k *flow.Key) (staged [len(flow.StageEnd) - 1]uint64, full uint64) {
	kw := k.Words()
	var h uint64
	w := 0
	for i := range int(st.nStages) {
		end := int(st.stageEnd[i])
		for ; w < end; w++ {
			h = flow.HashAdd(h, kw[st.words[w]]&st.masks[w])
		}
		if i < int(st.nStages)-1 {
			staged[i] = flow.HashFinish(h, end)
		}
	}
	// For an exact mask this is k.Hash(0), which the exact fast path uses.
	return staged, flow.HashFinish(h, w)
}

// planLen is the number of key words the mask selects.
func (st *subtable[T]) planLen() int {
	if st.nStages == 0 {
		return 0
	}
	return int(st.stageEnd[st.nStages-1])
}

// matches reports whether k, under the subtable's mask, equals e's key.
func (st *subtable[T]) matches(e *entry[T], k *flow.Key) bool {
	kw := k.Words()
	for w, v := range e.vals {
		if kw[st.words[w]]&st.masks[w] != v {
			return false
		}
	}
	return true
}

// find returns the entry whose key is k under the mask, or nil.
func (st *subtable[T]) find(k *flow.Key) *entry[T] {
	_, full := st.hashes(k)
	for e, _ := st.table.get(full); e != nil; e = e.next {
		if st.matches(e, k) {
			return e
		}
	}
	return nil
}

// widenStages ORs the mask's words of nonempty stages [0, upto] into wc.
func (st *subtable[T]) widenStages(wc *flow.Mask, upto int) {
	if upto < 0 {
		return
	}
	ww := wc.Words()
	for w := range int(st.stageEnd[upto]) {
		ww[st.words[w]] |= st.masks[w]
	}
}

// lookup returns the best rule of the subtable matching k, or nil, and
// ORs into wc the bits that answer depended on. It never allocates.
func (st *subtable[T]) lookup(k *flow.Key, wc *flow.Mask, tc *trieCtx) *Rule[T] {
	if st.catchAll {
		return st.top // depends on no bit at all
	}
	kw := k.Words()
	if st.exact {
		// Every bit is looked at, whatever the answer.
		*wc = flow.ExactMask()
		for e, _ := st.table.get(k.Hash(0)); e != nil; e = e.next {
			if st.matches(e, k) {
				return e.rules[0]
			}
		}
		return nil
	}
	last := int(st.nStages) - 1
	var h uint64
	w, t := 0, 0
	for i := range int(st.nStages) {
		// Once this lookup consults tries, they go first: they are cheap
		// by then and can spare the stage's hash probe. Before, they wait
		// until the stage misses, the only time their answer matters (a
		// key the stage matches has a rule whose prefix matches too), so
		// a lookup that never misses never walks a trie.
		t0 := t
		for ; t < int(st.nTries) && int(st.tries[t].stage) == i; t++ {
			c := &st.tries[t]
			if !tc.walking() {
				continue
			}
			if ok, check := tc.mayMatch(k, c.field, int(c.plen)); !ok {
				st.trieSkip(wc, i, c, check)
				return nil
			}
		}
		end := int(st.stageEnd[i])
		for ; w < end; w++ {
			h = flow.HashAdd(h, kw[st.words[w]]&st.masks[w])
		}
		if i < last {
			sh := flow.HashFinish(h, end)
			var ok bool
			if st.onlyOK[i] {
				ok = sh == st.only[i]
			} else {
				_, ok = st.index[i].get(sh)
			}
			if ok {
				continue
			}
		} else {
			for e, _ := st.table.get(flow.HashFinish(h, w)); e != nil; e = e.next {
				if st.matches(e, k) {
					st.widenStages(wc, last)
					return e.rules[0]
				}
			}
		}
		// The stage missed. Say why with as few bits as possible.
		for j := t0; j < t; j++ {
			c := &st.tries[j]
			if ok, check := tc.mayMatch(k, c.field, int(c.plen)); !ok {
				st.trieSkip(wc, i, c, check)
				return nil
			}
		}
		if i == last {
			for j := range st.ports {
				p := &st.ports[j]
				v := p.field.value(k)
				if set, check := p.root.lookup(&v, p.field.width()); !set.has(p.plen) {
					// No entry has this port prefix, whatever the other
					// fields of the last stage hold.
					st.widenStages(wc, last-1)
					p.field.widen(wc, min(p.plen, check))
					return nil
				}
			}
		}
		st.widenStages(wc, i)
		return nil
	}
	return nil // not reached: the last stage returns
}

// trieSkip records why the subtable was skipped at stage i: no rule
// anywhere has a prefix of c's length on c's field that matches the key.
// That depends on the first check bits of the field; the stages passed
// before i go in too, so the megaflow keeps the prerequisites (eth_type)
// of the address bits it matches.
func (st *subtable[T]) trieSkip(wc *flow.Mask, i int, c *trieCheck, check int) {
	st.widenStages(wc, i-1)
	c.field.widen(wc, check)
}

// setIndex stores a new version of index[i] and notes whether it holds a
// single hash.
func (st *subtable[T]) setIndex(i int, m hmap[uint32]) {
	st.index[i] = m
	st.onlyOK[i] = len(m.slots) == 1 && m.slots[0].sub.slots == nil
	st.only[i] = 0
	if st.onlyOK[i] {
		st.only[i] = m.slots[0].hash
	}
}

// insert returns a version of st that also holds r under the masked key
// key. If a rule with the same match and priority was there, r takes its
// place and it is returned. newEntry reports that key was new to st.
func (st *subtable[T]) insert(r *Rule[T], key *flow.Key, owner uint64) (ns *subtable[T], replaced *Rule[T], newEntry bool) {
	c := st.own(owner)
	staged, full := st.hashes(key)
	head, _ := st.table.get(full)
	var old *entry[T]
	for e := head; e != nil; e = e.next {
		if st.matches(e, key) {
			old = e
			break
		}
	}
	var e *entry[T]
	if old == nil {
		e = &entry[T]{next: head, vals: st.compact(key), rules: []*Rule[T]{r}}
		c.table, _ = c.table.set(full, e, c.owner)
		for i := 0; i < int(c.nStages)-1 && !c.exact; i++ {
			n, _ := c.index[i].get(staged[i])
			idx, _ := c.index[i].set(staged[i], n+1, c.owner)
			c.setIndex(i, idx)
		}
		if len(c.ports) > 0 {
			c.ports = slices.Clone(st.ports)
			for i := range c.ports {
				p := &c.ports[i]
				p.root = p.root.insert(p.field.value(key), p.plen, owner)
			}
		}
	} else {
		e = &entry[T]{vals: old.vals}
		pos, found := slices.BinarySearchFunc(old.rules, r.Priority, func(x *Rule[T], p int) int {
			return cmp.Compare(p, x.Priority) // descending
		})
		if found {
			replaced = old.rules[pos]
			e.rules = slices.Clone(old.rules)
			e.rules[pos] = r
		} else {
			e.rules = slices.Insert(slices.Clone(old.rules), pos, r)
		}
		c.table, _ = c.table.set(full, chainReplace(head, old, e), c.owner)
	}
	if replaced == nil {
		c.addPriority(r.Priority, 1)
		c.nRules++
	}
	if c.catchAll {
		c.top = e.rules[0]
	}
	return c, replaced, old == nil
}

// remove returns a version of st without r, whose masked key is key, and
// whether r was there. goneEntry reports that no rule is left under key.
func (st *subtable[T]) remove(r *Rule[T], key *flow.Key, owner uint64) (ns *subtable[T], ok, goneEntry bool) {
	staged, full := st.hashes(key)
	head, _ := st.table.get(full)
	var old *entry[T]
	for e := head; e != nil; e = e.next {
		if st.matches(e, key) {
			old = e
			break
		}
	}
	if old == nil {
		return st, false, false
	}
	pos := slices.Index(old.rules, r)
	if pos < 0 {
		return st, false, false
	}
	c := st.own(owner)
	if len(old.rules) > 1 {
		ne := &entry[T]{vals: old.vals, rules: slices.Delete(slices.Clone(old.rules), pos, pos+1)}
		c.table, _ = c.table.set(full, chainReplace(head, old, ne), c.owner)
		if c.catchAll {
			c.top = ne.rules[0]
		}
	} else {
		goneEntry = true
		if rest := chainReplace(head, old, nil); rest != nil {
			c.table, _ = c.table.set(full, rest, c.owner)
		} else {
			c.table, _ = c.table.del(full, c.owner)
		}
		for j := 0; j < int(c.nStages)-1 && !c.exact; j++ {
			var idx hmap[uint32]
			if n, _ := c.index[j].get(staged[j]); n > 1 {
				idx, _ = c.index[j].set(staged[j], n-1, c.owner)
			} else {
				idx, _ = c.index[j].del(staged[j], c.owner)
			}
			c.setIndex(j, idx)
		}
		if len(c.ports) > 0 {
			c.ports = slices.Clone(st.ports)
			for j := range c.ports {
				p := &c.ports[j]
				p.root = p.root.remove(p.field.value(key), p.plen, owner)
			}
		}
		if c.catchAll {
			c.top = nil
		}
	}
	c.addPriority(r.Priority, -1)
	c.nRules--
	return c, true, goneEntry
}

// own returns st itself if owner may change it in place, else a copy that
// owner may change.
func (st *subtable[T]) own(owner uint64) *subtable[T] {
	if owner != 0 && st.owner == owner {
		return st
	}
	c := *st
	c.owner = owner
	return &c
}

// addPriority adds d to the count of rules with priority p and keeps
// maxPri exact.
func (st *subtable[T]) addPriority(p, d int) {
	key := uint64(int64(p))
	n, _ := st.pris.get(key)
	n = uint32(int64(n) + int64(d))
	if n == 0 {
		st.pris, _ = st.pris.del(key, st.owner)
	} else {
		st.pris, _ = st.pris.set(key, n, st.owner)
	}
	switch {
	case d > 0 && (st.nRules == 0 || p > st.maxPri):
		st.maxPri = p
	case d < 0 && n == 0 && p == st.maxPri:
		first := true
		st.pris.each(func(k uint64, _ uint32) bool {
			if q := int(int64(k)); first || q > st.maxPri {
				st.maxPri, first = q, false
			}
			return true
		})
	}
}

// before reports whether a is visited before b: higher maximum priority
// first, and among equals the greater mask first (the tie-break order).
func (a *subtable[T]) before(b *subtable[T]) bool {
	if a.maxPri != b.maxPri {
		return a.maxPri > b.maxPri
	}
	return compareMasks(a.mask, b.mask) > 0
}
