package ofproto

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/govswitch/govswitch/classifier"
	"github.com/govswitch/govswitch/ofproto/openflow"
)

// The group table: OpenFlow groups (all, select, indirect, fast failover)
// as group_mods leave them. Translation reads one immutable version of it
// without locks; group mods serialise on a mutex and publish a new version,
// then make every cached translation stale. The semantics are
// ovs-vswitchd's (ofproto.c): a group that flows or buckets refer to may
// be deleted, and deleting it deletes the flows that use it.

// Group is one group. It is immutable once published; a modify replaces
// it (keeping its counters, as OVS keeps a modified group's stats).
type Group struct {
	ID        uint32
	Type      uint8
	Buckets   []openflow.Bucket
	Selection openflow.Selection
	Created   time.Time

	// fields are Selection's hash fields, decoded once.
	fields []openflow.SelectionField
	// hash is a select group's dp_hash table (group_dphash.go), nil when
	// it picks its bucket by a hash taken in userspace.
	hash *groupHash
	// counter and bucketCounters carry the group's and each bucket's
	// packet and byte counts. They are rules of no table (Table
	// openflow.TableAll) so that the datapath flows a group's packets take
	// credit them as they credit the OpenFlow rules those packets matched
	// (Out.Rules).
	counter        *Rule
	bucketCounters []*Rule
}

func newCounter() *Rule { return &Rule{Value: &Entry{Table: openflow.TableAll}} }

// isCounter reports whether r is a group's or bucket's counter rather
// than a flow table rule.
func isCounter(r *Rule) bool { return r.Value.Table == openflow.TableAll }

// Stats returns the group's packet and byte counters and each bucket's.
func (g *Group) Stats() (packets, bytes uint64, buckets []openflow.BucketCounter) {
	packets, bytes = g.counter.Value.Stats()
	buckets = make([]openflow.BucketCounter, len(g.bucketCounters))
	for i, c := range g.bucketCounters {
		buckets[i].PacketCount, buckets[i].ByteCount = c.Value.Stats()
	}
	return packets, bytes, buckets
}

// groupSet is one version of the group table.
type groupSet map[uint32]*Group

// Groups is a bridge's group table.
type Groups struct {
	mu  sync.Mutex // serialises group mods
	cur atomic.Pointer[groupSet]
	ts  *Tables
}

// NewGroups returns an empty group table whose changes invalidate the
// translations of ts and whose deletes delete ts's flows that use a group.
func NewGroups(ts *Tables) *Groups {
	g := &Groups{ts: ts}
	empty := groupSet{}
	g.cur.Store(&empty)
	return g
}

// Lookup returns group id, or nil. It never blocks.
func (gs *Groups) Lookup(id uint32) *Group {
	if gs == nil {
		return nil
	}
	return (*gs.cur.Load())[id]
}

// List returns every group, ordered by id.
func (gs *Groups) List() []*Group {
	return slices.SortedFunc(maps.Values(*gs.cur.Load()), func(a, b *Group) int { return cmp.Compare(a.ID, b.ID) })
}

// GroupError is a failed group mod with the OFPGMFC_* code the controller
// is told.
type GroupError struct {
	Code uint16
	Msg  string
}

func (e *GroupError) Error() string { return e.Msg }

func groupErrorf(code uint16, format string, args ...any) error {
	return &GroupError{Code: code, Msg: fmt.Sprintf(format, args...)}
}

func buildGroup(m *openflow.GroupMod, buckets []openflow.Bucket, created time.Time) (*Group, error) {
	g := &Group{ID: m.GroupID, Type: m.Type, Buckets: buckets, Selection: m.Selection, Created: created,
		counter: newCounter()}
	if m.Selection.Method == "hash" {
		g.fields = m.Selection.Fields
	}
	for range buckets {
		g.bucketCounters = append(g.bucketCounters, newCounter())
	}
	if g.Type == openflow.GroupTypeSelect {
		g.setupGroupHash()
	}
	return g, nil
}

// checkBucketActions refuses bucket actions translation cannot carry out,
// as flow mods are refused.
func checkBucketActions(buckets []openflow.Bucket) error {
	for i := range buckets {
		if err := checkSupported(buckets[i].Actions); err != nil {
			return err
		}
		for _, a := range buckets[i].Actions {
			if a.Type == openflow.ActMeter {
				// A meter is an instruction in OVS's model, which a
				// bucket (an action set) cannot hold.
				return errorf(ErrUnsupportedAction, "meter %d in a group bucket is not implemented", a.Queue)
			}
			if a.Type == openflow.ActOutput {
				switch p := a.Port; {
				case p < openflow.PortMax, p == openflow.PortInPort, p == openflow.PortNormal, p == openflow.PortFlood,
					p == openflow.PortAll, p == openflow.PortController, p == openflow.PortLocal:
				default:
					return errorf(ErrBadOutPort, "bucket output to port %#x, which is not a destination", p)
				}
			}
		}
	}
	return nil
}

// Apply carries out a decoded group mod at time now. Errors are
// *GroupError (OFPGMFC_*) or a flow table *Error for bucket actions.
func (gs *Groups) Apply(m *openflow.GroupMod, now time.Time) error {
	if err := checkGroupMod(m); err != nil {
		return err
	}
	gs.mu.Lock()
	next, deleted, err := groupStep(*gs.cur.Load(), m, now)
	if err != nil {
		gs.mu.Unlock()
		return err
	}
	gs.cur.Store(&next)
	gs.mu.Unlock()
	gs.dropped(deleted, now)
	return nil
}

// checkGroupMod is what a group mod must pass whatever the table holds.
func checkGroupMod(m *openflow.GroupMod) error {
	if m.Command != openflow.GroupDelete {
		if m.GroupID > openflow.GroupMax {
			return groupErrorf(openflow.GroupModFailed13InvalidGroup, "group id %#x is reserved", m.GroupID)
		}
		if err := checkBucketActions(m.Buckets); err != nil {
			return err
		}
	}
	return nil
}

// groupStep returns the group table old with m applied, and the ids m
// deleted; old is not changed.
func groupStep(old groupSet, m *openflow.GroupMod, now time.Time) (groupSet, []uint32, error) {
	next := make(groupSet, len(old)+1)
	for id, g := range old {
		next[id] = g
	}
	var deleted []uint32
	cur := old[m.GroupID]
	cmd := m.Command
	if cmd == openflow.GroupAddOrModify {
		cmd = openflow.GroupModify
		if cur == nil {
			cmd = openflow.GroupAdd
		}
	}
	switch cmd {
	case openflow.GroupAdd:
		if cur != nil {
			return nil, nil, groupErrorf(openflow.GroupModFailed13GroupExists, "group %d exists", m.GroupID)
		}
		g, err := buildGroup(m, numberBuckets(m), now)
		if err != nil {
			return nil, nil, err
		}
		next[m.GroupID] = g
	case openflow.GroupModify:
		if cur == nil {
			return nil, nil, groupErrorf(openflow.GroupModFailed13UnknownGroup, "no group %d", m.GroupID)
		}
		g, err := buildGroup(m, numberBuckets(m), cur.Created)
		if err != nil {
			return nil, nil, err
		}
		g.counter = cur.counter
		next[m.GroupID] = g
	case openflow.GroupInsertBucket, openflow.GroupRemoveBucket:
		if cur == nil {
			return nil, nil, groupErrorf(openflow.GroupModFailed13UnknownGroup, "no group %d", m.GroupID)
		}
		// The message's type does not change the group's (OVS ignores
		// it for bucket commands too).
		g, err := editBuckets(cur, m)
		if err != nil {
			return nil, nil, err
		}
		next[m.GroupID] = g
	case openflow.GroupDelete:
		if m.GroupID == openflow.GroupAll {
			for id := range next {
				deleted = append(deleted, id)
			}
			next = groupSet{}
		} else if cur != nil {
			delete(next, m.GroupID)
			deleted = append(deleted, m.GroupID)
		}
	default:
		return nil, nil, groupErrorf(openflow.GroupModFailed13BadCommand, "group command %d", m.Command)
	}
	return next, deleted, nil
}

// dropped deletes the flows that use the deleted groups (OpenFlow 1.3
// §6.5, with reason GROUP_DELETE) and makes cached translations stale.
func (gs *Groups) dropped(deleted []uint32, now time.Time) {
	for _, id := range deleted {
		gs.ts.deleteUsing(refGroup, id, now)
	}
	gs.ts.Invalidate()
}

// numberBuckets returns m's buckets; they keep the ids 1.5 gave them
// (the decoder numbered those of earlier versions 0, 1, ...).
func numberBuckets(m *openflow.GroupMod) []openflow.Bucket { return slices.Clone(m.Buckets) }

// editBuckets is OpenFlow 1.5's insert_bucket and remove_bucket on cur;
// counters of the buckets that stay carry over.
func editBuckets(cur *Group, m *openflow.GroupMod) (*Group, error) {
	type kept struct {
		b openflow.Bucket
		c *Rule
	}
	var list []kept
	for i, b := range cur.Buckets {
		list = append(list, kept{b, cur.bucketCounters[i]})
	}
	find := func(id uint32) int {
		for i := range list {
			if list[i].b.ID == id {
				return i
			}
		}
		return -1
	}
	at := m.CommandBucketID
	switch m.Command {
	case openflow.GroupInsertBucket:
		pos := 0
		switch at {
		case openflow.BucketFirst:
		case openflow.BucketLast:
			pos = len(list)
		default:
			if pos = find(at); pos < 0 {
				return nil, groupErrorf(openflow.GroupModFailed15UnknownBucket, "group %d has no bucket %d", cur.ID, at)
			}
		}
		var ins []kept
		for _, b := range m.Buckets {
			if find(b.ID) >= 0 {
				return nil, groupErrorf(openflow.GroupModFailed15BucketExists, "group %d has a bucket %d", cur.ID, b.ID)
			}
			if cur.Type == openflow.GroupTypeSelect && b.Weight == 0 {
				b.Weight = 1
			}
			ins = append(ins, kept{b, newCounter()})
		}
		list = slices.Insert(list, pos, ins...)
	case openflow.GroupRemoveBucket:
		switch at {
		case openflow.BucketAll:
			list = nil
		case openflow.BucketFirst:
			if len(list) > 0 {
				list = list[1:]
			}
		case openflow.BucketLast:
			if len(list) > 0 {
				list = list[:len(list)-1]
			}
		default:
			i := find(at)
			if i < 0 {
				return nil, groupErrorf(openflow.GroupModFailed15UnknownBucket, "group %d has no bucket %d", cur.ID, at)
			}
			list = slices.Delete(list, i, i+1)
		}
	}
	if cur.Type == openflow.GroupTypeIndirect && len(list) != 1 {
		return nil, groupErrorf(openflow.GroupModFailed13InvalidGroup, "an indirect group has exactly one bucket")
	}
	g := *cur
	g.Buckets, g.bucketCounters = nil, nil
	for _, k := range list {
		g.Buckets = append(g.Buckets, k.b)
		g.bucketCounters = append(g.bucketCounters, k.c)
	}
	return &g, nil
}

// References of flows to groups and meters.
type refKind uint8

const (
	refGroup refKind = iota
	refMeter
)

// uses reports whether the entry's instructions refer to group or meter
// id.
func (e *Entry) uses(kind refKind, id uint32) bool {
	in := &e.Instructions
	if kind == refMeter && in.Meter == id {
		return true
	}
	for _, list := range [][]openflow.Action{in.Apply, in.Write} {
		for i := range list {
			a := &list[i]
			if kind == refGroup && a.Type == openflow.ActGroup && a.Group == id ||
				kind == refMeter && a.Type == openflow.ActMeter && a.Queue == id {
				return true
			}
		}
	}
	return false
}

// RemovedGroupDelete and RemovedMeterDelete are the flow_removed reasons
// of flows deleted with their group or meter (OFPRR_GROUP_DELETE,
// OFPRR_METER_DELETE).
const (
	RemovedGroupDelete RemovedReason = 3
	RemovedMeterDelete RemovedReason = 4
)

// deleteUsing deletes every flow that refers to group or meter id.
func (ts *Tables) deleteUsing(kind refKind, id uint32, now time.Time) {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	tx := txn{ts: ts, now: now}
	reason := RemovedGroupDelete
	if kind == refMeter {
		reason = RemovedMeterDelete
	}
	for t := 0; t < NumTables; t++ {
		s := ts.t[t].Snapshot()
		if s.Len() == 0 {
			continue
		}
		var rules []*Rule
		for r := range s.Rules(&classifier.Match{}) {
			if r.Priority <= 0xffff && r.Value.uses(kind, id) {
				rules = append(rules, r)
			}
		}
		if len(rules) > 0 {
			tx.remove(uint8(t), rules, func(*Rule) RemovedReason { return reason })
		}
	}
	tx.commit()
}

// countUsing counts the flows that refer to group or meter id: a group's
// ref_count, a meter's flow_count.
func (ts *Tables) countUsing(kind refKind, id uint32) uint32 {
	v := ts.View()
	n := uint32(0)
	for t := 0; t < NumTables; t++ {
		s := v.Table(uint8(t))
		if s.Len() == 0 {
			continue
		}
		for r := range s.Rules(&classifier.Match{}) {
			if r.Value.uses(kind, id) {
				n++
			}
		}
	}
	return n
}

// checkRefs refuses a flow whose actions name a group or a meter the
// switch does not have, as ovs-vswitchd does (OFPBAC_BAD_OUT_GROUP,
// OFPMMFC_INVALID_METER).
func (ts *Tables) checkRefs(fm *FlowMod) error {
	if fm.Command > CmdModifyStrict {
		return nil
	}
	return ts.checkInstructionRefs(&fm.Instructions)
}

func (ts *Tables) checkInstructionRefs(in *openflow.Instructions) error {
	if in.Meter != 0 && ts.Meters.Lookup(in.Meter) == nil {
		return errorf(ErrInvalidMeter, "meter %d does not exist", in.Meter)
	}
	for _, list := range [][]openflow.Action{in.Apply, in.Write} {
		if err := ts.checkActionRefs(list); err != nil {
			return err
		}
	}
	return nil
}

// checkActionRefs is checkRefs for an action list (a packet-out's).
func (ts *Tables) checkActionRefs(list []openflow.Action) error {
	for i := range list {
		switch a := &list[i]; a.Type {
		case openflow.ActGroup:
			if ts.Groups.Lookup(a.Group) == nil {
				return errorf(ErrBadOutGroup, "group %d does not exist", a.Group)
			}
		case openflow.ActMeter:
			if ts.Meters.Lookup(a.Queue) == nil {
				return errorf(ErrInvalidMeter, "meter %d does not exist", a.Queue)
			}
		case openflow.ActClone:
			if err := ts.checkActionRefs(a.Nested); err != nil {
				return err
			}
		}
	}
	return nil
}
