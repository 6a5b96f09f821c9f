package ofproto

import (
	"github.com/govswitch/govswitch/classifier"
	"github.com/govswitch/govswitch/ofproto/openflow"
)

// Conjunctive matches: a flow whose actions are conjunction(id, k/n) is a
// clause of conjunction id, not a flow that runs (OVS's soft match); the
// tables count such flows so that only a table holding some pays for the
// conjunctive lookup (classifier.LookupConj).

// isConjFlow reports whether e is a conjunction flow.
func isConjFlow(e *Entry) bool {
	for i := range e.Instructions.Apply {
		if e.Instructions.Apply[i].Type == openflow.ActConj {
			return true
		}
	}
	return false
}

var conjTable = classifier.Conj[*Entry]{
	Soft: func(r *Rule) bool { return isConjFlow(r.Value) },
	Clause: func(r *Rule, i int) (id uint32, clause, n uint8, more bool) {
		acts := r.Value.Instructions.Apply
		if i >= len(acts) {
			return 0, 0, 0, false
		}
		if a := &acts[i]; a.Type == openflow.ActConj {
			return a.Queue, a.Table, a.TTL, true
		}
		return 0, 0, 0, true
	},
}

// countConj updates the tables' conjunction flow counts for the
// transaction's changes and marks v's tables that hold any. ts.mu is held.
func (tx *txn) countConj(v *View) {
	ts := tx.ts
	for _, tr := range tx.tracks {
		if r := tr[0]; r != nil && isConjFlow(r.Value) {
			ts.conjN[r.Value.Table]++
		}
		if r := tr[1]; r != nil && isConjFlow(r.Value) {
			ts.conjN[r.Value.Table]--
		}
	}
	for _, id := range tx.touched {
		v.conj[id] = ts.conjN[id] > 0
	}
}

// checkConj refuses conjunction mixed with other actions but note.
func checkConj(acts []openflow.Action) error {
	if err := openflow.CheckConjunctions(openflow.Version13, acts); err != nil {
		return errorf(ErrBadConjunction, "%s", err.(*openflow.Error).Detail)
	}
	return nil
}

// NXBAC_BAD_CONJUNCTION's codes.
const (
	nxbacBadConjunction10 = 526 // type OFPET_BAD_ACTION
	nxbacBadConjunction12 = 15  // Nicira experimenter error
)

func conjFlowModError(v uint8, k ErrorKind) (typ, code uint16, ok bool) {
	if k != ErrBadConjunction {
		return 0, 0, false
	}
	if v >= openflow.Version12 {
		return openflow.Err13TypeExperimenter, nxbacBadConjunction12, true
	}
	return openflow.ErrTypeBadAction, nxbacBadConjunction10, true
}
