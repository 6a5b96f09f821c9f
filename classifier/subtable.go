package classifier

import (
	"cmp"
	"slices"

	"github.com/govswitch/govswitch/flow"
)

// A subtable holds every rule whose mask is one particular mask: a hash
// table from masked key to the rules with that match. It is immutable once
// published; writers derive the next version with insert and remove, which
// share all unchanged structure with the old one.
type subtable[T any] struct {
	mask flow.Mask

	// stages are the lookup stages in which mask has bits, in order. They
	// are computed once per mask and shared by every version.
	stages []stage
	// index[i] counts entries by the hash of their first i+1 stages, for
	// every stage but the last: a lookup that finds no count there knows
	// no entry can match and stops before looking at later fields.
	index [len(flow.StageEnd) - 1]*hnode[uint32]
	// table maps the full masked-key hash to the entries with that hash
	// (one, unless 64-bit hashes collide).
	table *hnode[[]*entry[T]]
	// ports are per-subtable tries over the port fields the mask selects
	// as a prefix, consulted when the last stage misses.
	ports []portTrie

	pris   *hnode[uint32] // number of rules per priority
	maxPri int            // highest priority of any rule; valid when nRules > 0
	nRules int

	catchAll bool     // mask is all-wildcard: every key matches the one entry
	exact    bool     // mask is all-ones: one probe with the whole key's hash
	top      *Rule[T] // catch-all only: the winning rule
	maskHash uint64   // hash of mask, to find a subtable by mask quickly
}

// stage is one lookup stage of a subtable.
type stage struct {
	words []int       // key words of the stage that the mask selects
	nHash int         // words hashed up to and including this stage
	tries []trieCheck // classifier-wide tries to consult before hashing it
}

// trieCheck says the subtable matches a prefix of length plen on field.
type trieCheck struct {
	field prefixField
	plen  int
}

// portTrie holds the port prefixes of the subtable's entries.
type portTrie struct {
	field prefixField
	plen  int
	root  *trieNode
}

// entry is one distinct masked key and its rules, highest priority first.
// The priorities are distinct: an equal match and priority is one rule.
type entry[T any] struct {
	key   flow.Key
	rules []*Rule[T]
}

func newSubtable[T any](m *flow.Mask) *subtable[T] {
	st := &subtable[T]{
		mask:     *m,
		catchAll: m.IsZero(),
		exact:    m.IsExact(),
		maskHash: m.Key().Hash(0),
	}
	var per [len(flow.StageEnd)][]int
	for i, w := range m.Words() {
		if w != 0 {
			s := stageOfWord(i)
			per[s] = append(per[s], i)
		}
	}
	stageIdx := [len(flow.StageEnd)]int{-1, -1, -1, -1}
	n := 0
	for s, words := range per {
		if len(words) == 0 {
			continue
		}
		n += len(words)
		stageIdx[s] = len(st.stages)
		st.stages = append(st.stages, stage{words: words, nHash: n})
	}
	if st.catchAll || st.exact {
		return st
	}
	for f := prefixField(0); f < numGlobalTries; f++ {
		if plen := f.prefixLen(m); plen > 0 {
			i := stageIdx[f.stage()]
			st.stages[i].tries = append(st.stages[i].tries, trieCheck{f, plen})
		}
	}
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
	kw, mw := k.Words(), st.mask.Words()
	var h uint64
	for i := range st.stages {
		sg := &st.stages[i]
		for _, w := range sg.words {
			h = flow.HashAdd(h, kw[w]&mw[w])
		}
		if i < len(st.stages)-1 {
			staged[i] = flow.HashFinish(h, sg.nHash)
		}
	}
	n := 0
	if len(st.stages) > 0 {
		n = st.stages[len(st.stages)-1].nHash
	}
	// For an exact mask this is k.Hash(0), which the exact fast path uses.
	return staged, flow.HashFinish(h, n)
}

// matches reports whether k, under the subtable's mask, equals e's key.
func (st *subtable[T]) matches(e *entry[T], k *flow.Key) bool {
	kw, mw, ew := k.Words(), st.mask.Words(), e.key.Words()
	for i := range st.stages {
		for _, w := range st.stages[i].words {
			if kw[w]&mw[w] != ew[w] {
				return false
			}
		}
	}
	return true
}

// find returns the entry whose key is k under the mask, or nil.
func (st *subtable[T]) find(k *flow.Key) *entry[T] {
	_, full := st.hashes(k)
	es, _ := st.table.get(full)
	for _, e := range es {
		if st.matches(e, k) {
			return e
		}
	}
	return nil
}

// widenStages ORs the mask's words of stages [0, upto] into wc.
func (st *subtable[T]) widenStages(wc *flow.Mask, upto int) {
	ww, mw := wc.Words(), st.mask.Words()
	for i := 0; i <= upto; i++ {
		for _, w := range st.stages[i].words {
			ww[w] |= mw[w]
		}
	}
}

// lookup returns the best rule of the subtable matching k, or nil, and
// ORs into wc the bits that answer depended on. It never allocates.
func (st *subtable[T]) lookup(k *flow.Key, wc *flow.Mask, tc *trieCtx) *Rule[T] {
	if st.catchAll {
		return st.top // depends on no bit at all
	}
	kw, mw := k.Words(), st.mask.Words()
	if st.exact {
		// Every bit is looked at, whatever the answer.
		*wc = flow.ExactMask()
		es, _ := st.table.get(k.Hash(0))
		for _, e := range es {
			if e.key == *k {
				return e.rules[0]
			}
		}
		return nil
	}
	last := len(st.stages) - 1
	var h uint64
	for i := range st.stages {
		sg := &st.stages[i]
		for _, c := range sg.tries {
			if ok, check := tc.mayMatch(k, c.field, c.plen); !ok {
				// No rule anywhere has a prefix of this length that
				// matches: skip, depending on the stages passed so far
				// and on the address bits the trie looked at.
				st.widenStages(wc, i-1)
				c.field.widen(wc, min(c.plen, check))
				return nil
			}
		}
		for _, w := range sg.words {
			h = flow.HashAdd(h, kw[w]&mw[w])
		}
		if i < last {
			if _, ok := st.index[i].get(flow.HashFinish(h, sg.nHash)); !ok {
				st.widenStages(wc, i)
				return nil
			}
		}
	}
	es, _ := st.table.get(flow.HashFinish(h, st.stages[last].nHash))
	for _, e := range es {
		if st.matches(e, k) {
			st.widenStages(wc, last)
			return e.rules[0]
		}
	}
	for i := range st.ports {
		p := &st.ports[i]
		v := p.field.value(k)
		if set, check := p.root.lookup(&v, p.field.width()); !set.has(p.plen) {
			// No entry has this port prefix, whatever the other fields
			// of the last stage hold.
			st.widenStages(wc, last-1)
			p.field.widen(wc, min(p.plen, check))
			return nil
		}
	}
	st.widenStages(wc, last)
	return nil
}

// insert returns a version of st that also holds r under the masked key
// key. If a rule with the same match and priority was there, r takes its
// place and it is returned. newEntry reports that key was new to st.
func (st *subtable[T]) insert(r *Rule[T], key *flow.Key) (ns *subtable[T], replaced *Rule[T], newEntry bool) {
	c := *st
	staged, full := st.hashes(key)
	es, _ := st.table.get(full)
	var old *entry[T]
	oldIdx := -1
	for i, e := range es {
		if st.matches(e, key) {
			old, oldIdx = e, i
			break
		}
	}
	var e *entry[T]
	if old == nil {
		e = &entry[T]{key: *key, rules: []*Rule[T]{r}}
		es = append(slices.Clip(es), e)
		for i := 0; i < len(c.stages)-1 && !c.exact; i++ {
			n, _ := c.index[i].get(staged[i])
			c.index[i], _ = c.index[i].set(staged[i], n+1)
		}
		if len(c.ports) > 0 {
			c.ports = slices.Clone(st.ports)
		}
		for i := range c.ports {
			p := &c.ports[i]
			p.root = p.root.insert(p.field.value(key), p.plen)
		}
	} else {
		e = &entry[T]{key: old.key}
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
		es = slices.Clone(es)
		es[oldIdx] = e
	}
	c.table, _ = c.table.set(full, es)
	if replaced == nil {
		c.addPriority(r.Priority, 1)
		c.nRules++
	}
	if c.catchAll {
		c.top = e.rules[0]
	}
	return &c, replaced, old == nil
}

// remove returns a version of st without r, whose masked key is key, and
// whether r was there. goneEntry reports that no rule is left under key.
func (st *subtable[T]) remove(r *Rule[T], key *flow.Key) (ns *subtable[T], ok, goneEntry bool) {
	staged, full := st.hashes(key)
	es, _ := st.table.get(full)
	for i, e := range es {
		if !st.matches(e, key) {
			continue
		}
		pos := slices.Index(e.rules, r)
		if pos < 0 {
			return st, false, false
		}
		c := *st
		if len(e.rules) > 1 {
			ne := &entry[T]{key: e.key, rules: slices.Delete(slices.Clone(e.rules), pos, pos+1)}
			es = slices.Clone(es)
			es[i] = ne
			c.table, _ = c.table.set(full, es)
			if c.catchAll {
				c.top = ne.rules[0]
			}
		} else {
			goneEntry = true
			if len(es) > 1 {
				c.table, _ = c.table.set(full, slices.Delete(slices.Clone(es), i, i+1))
			} else {
				c.table, _ = c.table.del(full)
			}
			for j := 0; j < len(c.stages)-1 && !c.exact; j++ {
				if n, _ := c.index[j].get(staged[j]); n > 1 {
					c.index[j], _ = c.index[j].set(staged[j], n-1)
				} else {
					c.index[j], _ = c.index[j].del(staged[j])
				}
			}
			if len(c.ports) > 0 {
				c.ports = slices.Clone(st.ports)
				for j := range c.ports {
					p := &c.ports[j]
					p.root = p.root.remove(p.field.value(key), p.plen)
				}
			}
			if c.catchAll {
				c.top = nil
			}
		}
		c.addPriority(r.Priority, -1)
		c.nRules--
		return &c, true, goneEntry
	}
	return st, false, false
}

// addPriority adds d to the count of rules with priority p and keeps
// maxPri exact.
func (st *subtable[T]) addPriority(p, d int) {
	key := uint64(int64(p))
	n, _ := st.pris.get(key)
	n = uint32(int64(n) + int64(d))
	if n == 0 {
		st.pris, _ = st.pris.del(key)
	} else {
		st.pris, _ = st.pris.set(key, n)
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
	return compareMasks(&a.mask, &b.mask) > 0
}
