package ofproto

import (
	"time"
)

// Group mods in bundles. ovs-vswitchd takes group mods into a bundle with
// the flow mods and commits them together; ovn-controller relies on it: on
// every connection to br-int its first bundle deletes all groups and flows
// and adds its own, and later bundles add a load balancer's group with the
// flows that use it.
//
// The bundle's group mods are applied, in bundle order, to a copy of the
// group table first; one that fails there fails the bundle before anything
// changes. While the flow mods are applied the table holds every group the
// bundle adds and also those it deletes, so that flow mods anywhere in the
// bundle find the groups they use; afterwards it holds the bundle's
// result, and the flows still using a group the bundle deleted go (as a
// group delete takes them), or, if a flow mod failed, the table is as it
// was. (ovs-vswitchd orders the two kinds strictly, so there a flow added
// after a delete of its group fails the bundle; here it is added and then
// deleted with the group.)

// stagedGroups is a bundle's group change between stage and finish; it
// holds the group table's lock.
type stagedGroups struct {
	gs      *Groups
	old     *groupSet
	final   groupSet
	deleted []uint32
}

// stage applies entries' group mods to a copy of the table and publishes
// the table that flow mods are checked against. On error it returns the
// index of the failing entry and leaves the table unchanged. A bundle
// without group mods stages nothing (and takes no lock).
func (gs *Groups) stage(entries []bundleEntry, now time.Time) (*stagedGroups, int, error) {
	has := false
	for i := range entries {
		if entries[i].groupMod != nil {
			has = true
			break
		}
	}
	if !has {
		return nil, -1, nil
	}
	gs.mu.Lock()
	s := &stagedGroups{gs: gs, old: gs.cur.Load()}
	set := *s.old
	gone := groupSet{} // the last version of each group the bundle deleted
	for i := range entries {
		m := entries[i].groupMod
		if m == nil {
			continue
		}
		next, deleted, err := groupStep(set, m, now)
		if err != nil {
			gs.mu.Unlock()
			return nil, i, err
		}
		for _, id := range deleted {
			gone[id] = set[id]
		}
		s.deleted = append(s.deleted, deleted...)
		set = next
	}
	s.final = set
	during := make(groupSet, len(set)+len(gone))
	for id, g := range gone {
		during[id] = g
	}
	for id, g := range set {
		during[id] = g
	}
	gs.cur.Store(&during)
	return s, -1, nil
}

// finish publishes the bundle's group table (ok) or puts the old one back,
// and releases the lock. It does nothing on a nil s.
func (s *stagedGroups) finish(ok bool, now time.Time) {
	if s == nil {
		return
	}
	if !ok {
		s.gs.cur.Store(s.old)
		s.gs.mu.Unlock()
		s.gs.ts.Invalidate()
		return
	}
	s.gs.cur.Store(&s.final)
	s.gs.mu.Unlock()
	var dropped []uint32
	for _, id := range s.deleted {
		if s.final[id] == nil {
			dropped = append(dropped, id)
		}
	}
	s.gs.dropped(dropped, now)
}
