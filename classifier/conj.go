package classifier

import "github.com/govswitch/govswitch/flow"

// Conjunctive matches, as OVS's classifier_lookup__ does them. A "soft"
// rule is one clause of one or more conjunctive matches (OpenFlow's
// conjunction(id, k/n) actions); a packet matches conjunction id when it
// matches a soft rule of every clause of id at one priority, and then the
// table's answer is the rule the packet matches with conj_id set to id.
// Lookup treats soft rules as ordinary ones; tables that hold any use
// LookupConj.

// Conj describes a table's soft rules to LookupConj.
type Conj[T any] struct {
	// Soft reports whether r is a soft rule.
	Soft func(r *Rule[T]) bool
	// Clause returns the i-th action of soft rule r as a conjunction(id,
	// clause+1/n) (n 0 for an action that is none), more false once i is
	// past r's actions.
	Clause func(r *Rule[T], i int) (id uint32, clause, n uint8, more bool)
}

type softMatch[T any] struct {
	r  *Rule[T]
	st *subtable[T]
}

// maxSoft bounds the soft matches one lookup holds on the stack; more
// are still considered, in a heap slice.
const maxSoft = 32

// LookupConj is Lookup for a table that holds soft rules (see Conj): the
// highest-priority hard rule matching k, unless a conjunction of soft rules
// of higher priority is complete and a rule matches k with conj_id set to
// its id (k.ConjID is restored before LookupConj returns). wc widens as
// for Lookup, by every subtable the search visited; the conj_id bits are
// never added. wc may be nil.
func (s *Snapshot[T]) LookupConj(k *flow.Key, wc *flow.Mask, c *Conj[T]) *Rule[T] {
	if s == nil {
		return nil
	}
	var scratch flow.Mask
	if wc == nil {
		wc = &scratch
	}
	r := s.lookupConj(k, wc, c)
	wc.ConjID = 0 // the conj_id rules' subtables were visited
	return r
}

func (s *Snapshot[T]) lookupConj(k *flow.Key, wc *flow.Mask, c *Conj[T]) *Rule[T] {
	var stub [maxSoft]softMatch[T]
	hard, hardSt, soft := s.lookupHard(k, wc, c, stub[:0], true)
	hardPri := func() int {
		if hard == nil {
			return -1 << 62
		}
		return hard.Priority
	}
	var ids [16]conjState
	_ = hardSt
	for {
		n := 0
		for _, m := range soft {
			if m.r != nil && m.r.Priority > hardPri() {
				soft[n] = m
				n++
			}
		}
		soft = soft[:n]
		if n == 0 {
			return hard
		}
		pri := soft[0].r.Priority
		for _, m := range soft[1:] {
			pri = max(pri, m.r.Priority)
		}
		// Look for a complete conjunction at pri, clause by clause in the
		// order the soft rules were found.
		states := ids[:0]
		for _, m := range soft {
			if m.r.Priority != pri {
				continue
			}
			for i := 0; ; i++ {
				id, clause, nc, more := c.Clause(m.r, i)
				if !more {
					break
				}
				if nc < 2 || nc > 64 || clause >= nc {
					continue // not a conjunction action
				}
				j := 0
				for j < len(states) && (states[j].id != id || states[j].n != nc) {
					j++
				}
				if j == len(states) {
					states = append(states, conjState{id: id, n: nc})
				}
				states[j].seen |= 1 << clause
				if all := ^uint64(0) >> (64 - nc); states[j].seen != all {
					continue
				}
				saved := k.ConjID
				k.ConjID = id
				var wc2 flow.Mask
				found, _, _ := s.lookupHard(k, &wc2, c, nil, false)
				k.ConjID = saved
				wc2.ConjID = 0
				wc.Or(&wc2)
				if found != nil {
					return found
				}
			}
		}
		// None complete at pri: fall back to the next lower-priority rule
		// with the same match as each soft rule there.
		for i := range soft {
			m := &soft[i]
			if m.r.Priority != pri {
				continue
			}
			next := nextInEntry(m.st, m.r)
			m.r = next
			if next != nil && !c.Soft(next) {
				if next.Priority > hardPri() {
					hard, hardSt = next, m.st
				}
				m.r = nil
			}
		}
	}
}

type conjState struct {
	id   uint32
	n    uint8
	seen uint64
}

// lookupHard visits the subtables as Lookup does, but a soft rule found
// does not end the search: it is appended to soft, returned (or dropped
// unless keep: the lookup of conj_id's rule ignores soft rules, as OVS's
// does).
func (s *Snapshot[T]) lookupHard(k *flow.Key, wc *flow.Mask, c *Conj[T], soft []softMatch[T], keep bool) (*Rule[T], *subtable[T], []softMatch[T]) {
	tc := trieCtx{roots: &s.tries}
	var best *Rule[T]
	var bestSt *subtable[T]
	for _, st := range s.subtables {
		if best != nil && !st.mayBeat(best.Priority, bestSt) {
			break
		}
		r := st.lookup(k, wc, &tc)
		if r == nil {
			continue
		}
		if c.Soft(r) {
			if keep {
				soft = append(soft, softMatch[T]{r, st})
			}
			continue
		}
		if best == nil || r.Priority > best.Priority ||
			r.Priority == best.Priority && compareMasks(st.mask, bestSt.mask) > 0 {
			best, bestSt = r, st
		}
	}
	return best, bestSt, soft
}

// nextInEntry returns the rule after r in its entry (the next lower
// priority with the same match), or nil.
func nextInEntry[T any](st *subtable[T], r *Rule[T]) *Rule[T] {
	e := st.find(&r.Match.Key)
	if e == nil {
		return nil
	}
	for i, x := range e.rules {
		if x == r && i+1 < len(e.rules) {
			return e.rules[i+1]
		}
	}
	return nil
}
