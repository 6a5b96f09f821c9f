package ofproto

import (
	"time"

	"github.com/govswitch/govswitch/classifier"
	"github.com/govswitch/govswitch/ofproto/openflow"
)

// delete_learned: a learn action with the delete_learned flag takes the
// flows it learned (those in its table with its cookie) with it when the
// last rule holding such a learn action leaves the tables, as OVS's
// learned_cookies do. The tables count those rules per (table, cookie).

type learnedCookie struct {
	table  uint8
	cookie uint64
}

// forDeleteLearned calls f for every delete_learned learn action of e.
func forDeleteLearned(e *Entry, f func(learnedCookie)) {
	for _, list := range [][]openflow.Action{e.Instructions.Apply, e.Instructions.Write} {
		for i := range list {
			if a := &list[i]; a.Type == openflow.ActLearn && a.Learn.Flags&openflow.LearnDeleteLearned != 0 {
				f(learnedCookie{a.Learn.Table, a.Learn.Cookie})
			}
		}
	}
}

// flushLearned updates the counts for the transaction's changes and
// deletes the learned flows of every (table, cookie) whose count fell to
// zero; those deletions are part of the transaction (and may cascade).
// ts.mu is held.
func (tx *txn) flushLearned() {
	ts := tx.ts
	for i := 0; i < len(tx.tracks); {
		var zero []learnedCookie
		for ; i < len(tx.tracks); i++ {
			tr := tx.tracks[i]
			if r := tr[0]; r != nil {
				forDeleteLearned(r.Value, func(c learnedCookie) {
					if ts.learned == nil {
						ts.learned = make(map[learnedCookie]int)
					}
					ts.learned[c]++
				})
			}
			if r := tr[1]; r != nil {
				forDeleteLearned(r.Value, func(c learnedCookie) {
					if ts.learned[c]--; ts.learned[c] <= 0 {
						delete(ts.learned, c)
						zero = append(zero, c)
					}
				})
			}
		}
		for _, c := range zero {
			if ts.learned[c] > 0 || int(c.table) >= NumTables {
				continue // re-added by a later change of this transaction
			}
			fm := FlowMod{Command: CmdDelete, Table: c.table, Match: classifier.Match{}, Cookie: c.cookie,
				CookieMask: ^uint64(0), OutPort: openflow.PortAny}
			tx.delete(&fm, RemovedDelete)
		}
	}
}

// touchModified renews e's hard timeout from now (a learn action learned
// e again).
func (e *Entry) touchModified(now time.Time) { e.modified.Store(now.UnixNano()) }

// modifiedAt is when e's hard timeout started.
func (e *Entry) modifiedAt() time.Time {
	if m := e.modified.Load(); m != 0 {
		return time.Unix(0, m)
	}
	return e.Created
}

// onlyApplyEqual reports whether in holds exactly the apply actions acts
// and nothing else.
func onlyApplyEqual(in *openflow.Instructions, acts []openflow.Action) bool {
	if in.Meter != 0 || in.Clear || in.Write != nil || in.WriteMetadata || in.GotoTable || len(in.Apply) != len(acts) {
		return false
	}
	for i := range acts {
		if !in.Apply[i].Equal(acts[i]) {
			return false
		}
	}
	return true
}
