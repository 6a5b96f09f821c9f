// Package ofproto is the OpenFlow switch: its flow tables and flow_mod
// semantics, ports, translation of OpenFlow actions into datapath actions,
// and (with the datapath) the upcall handlers and revalidators.
package ofproto

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/govswitch/govswitch/classifier"
	"github.com/govswitch/govswitch/flow"
	"github.com/govswitch/govswitch/ofproto/openflow"
)

// NumTables is how many flow tables a switch has: 0..254, as OVS. Table
// id 255 (openflow.TableAll) means "every table" in requests.
const NumTables = 255

// Command is a flow_mod command.
type Command uint8

const (
	CmdAdd Command = iota
	CmdModify
	CmdModifyStrict
	CmdDelete
	CmdDeleteStrict
)

var cmdNames = [...]string{"add", "modify", "modify_strict", "delete", "delete_strict"}

func (c Command) String() string {
	if int(c) < len(cmdNames) {
		return cmdNames[c]
	}
	return fmt.Sprintf("command(%d)", uint8(c))
}

// Flow flags, version-independent. The connection layer maps each
// version's bits onto these (OpenFlow 1.0's 4 is EMERG, 1.3's RESET_COUNTS).
const (
	FlagSendFlowRem  uint16 = 1 << 0
	FlagCheckOverlap uint16 = 1 << 1
	FlagResetCounts  uint16 = 1 << 2
	FlagNoPktCounts  uint16 = 1 << 3
	FlagNoBytCounts  uint16 = 1 << 4
)

// RemovedReason says why a flow left its table (ofp_flow_removed reason).
type RemovedReason uint8

const (
	RemovedIdleTimeout RemovedReason = 0
	RemovedHardTimeout RemovedReason = 1
	RemovedDelete      RemovedReason = 2
)

// FlowMod is a flow_mod in a wire-independent form.
type FlowMod struct {
	Command  Command
	Table    uint8 // openflow.TableAll for every table (delete only)
	Match    classifier.Match
	Priority uint16
	// Cookie and CookieMask select flows by cookie for modify and delete
	// (a zero mask selects all). For add, Cookie is the new flow's cookie.
	Cookie     uint64
	CookieMask uint64
	// SetCookie makes modify commands set matched flows' cookie to
	// NewCookie, as an OpenFlow 1.0 modify does; 1.1+ modifies leave it.
	SetCookie bool
	NewCookie uint64
	// ModifyAdds makes a modify that matches nothing add the flow, as
	// OpenFlow 1.0 requires; 1.1+ modifies do not.
	ModifyAdds   bool
	IdleTimeout  uint16 // seconds; 0 = none
	HardTimeout  uint16 // seconds; 0 = none
	Flags        uint16
	OutPort      uint32 // delete: only flows that output here; openflow.PortAny = no filter
	Instructions openflow.Instructions
}

// ErrorKind is a flow_mod failure, version-independent; the connection
// layer turns it into each version's error type and code.
type ErrorKind uint8

const (
	ErrOverlap           ErrorKind = iota + 1 // OFPFMFC_OVERLAP
	ErrTableFull                              // OFPFMFC_TABLE_FULL / ALL_TABLES_FULL
	ErrBadTableID                             // OFPFMFC_BAD_TABLE_ID / OFPBRC_BAD_TABLE_ID
	ErrBadCommand                             // OFPFMFC_BAD_COMMAND
	ErrBadOutPort                             // OFPBAC_BAD_OUT_PORT
	ErrBadTimeout                             // OFPFMFC_BAD_TIMEOUT
	ErrBadGotoTable                           // OFPBIC_BAD_TABLE_ID: goto_table to a missing or earlier table
	ErrBadOutGroup                            // OFPBAC_BAD_OUT_GROUP: the switch has no groups
	ErrMatchInconsistent                      // OFPBAC_MATCH_INCONSISTENT: set_field without its prerequisites
)

// Error is a flow_mod failure with the kind the controller is told.
type Error struct {
	Kind ErrorKind
	Msg  string
}

func (e *Error) Error() string { return e.Msg }

func errorf(k ErrorKind, format string, args ...any) error {
	return &Error{Kind: k, Msg: fmt.Sprintf(format, args...)}
}

// ErrKind returns the kind of a flow_mod error, or 0 when err is not one.
func ErrKind(err error) ErrorKind {
	var e *Error
	if errors.As(err, &e) {
		return e.Kind
	}
	return 0
}

// Entry is what a flow table rule holds besides its match and priority.
// Everything but the counters is immutable once the entry is in a table:
// lookups read it without locks, and a modify replaces the whole rule.
type Entry struct {
	Table        uint8
	Cookie       uint64
	IdleTimeout  uint16
	HardTimeout  uint16
	Flags        uint16
	Instructions openflow.Instructions
	Created      time.Time

	packets atomic.Uint64
	bytes   atomic.Uint64
	used    atomic.Int64 // unix nanoseconds of the last packet; 0 = never
}

// Rule is a flow table rule: a classifier rule holding an Entry.
type Rule = classifier.Rule[*Entry]

// Credit adds packets and bytes seen at time used to the entry's counters.
// Revalidators and the execute-only miss path call it; it is safe for
// concurrent use.
func (e *Entry) Credit(packets, bytes uint64, used time.Time) {
	if packets == 0 {
		return
	}
	e.packets.Add(packets)
	e.bytes.Add(bytes)
	u := used.UnixNano()
	for {
		old := e.used.Load()
		if u <= old || e.used.CompareAndSwap(old, u) {
			return
		}
	}
}

// Stats returns the entry's packet and byte counters.
func (e *Entry) Stats() (packets, bytes uint64) { return e.packets.Load(), e.bytes.Load() }

// LastUsed returns when the entry last matched a packet, or its creation
// time if never.
func (e *Entry) LastUsed() time.Time {
	if u := e.used.Load(); u != 0 {
		return time.Unix(0, u)
	}
	return e.Created
}

// outputsTo reports whether the entry's actions send packets to port, for
// delete's out_port filter.
func (e *Entry) outputsTo(port uint32) bool {
	for _, list := range [][]openflow.Action{e.Instructions.Apply, e.Instructions.Write} {
		for i := range list {
			if a := &list[i]; (a.Type == openflow.ActOutput || a.Type == openflow.ActEnqueue) && a.Port == port {
				return true
			}
		}
	}
	return false
}

// checkActions rejects actions a flow with match m cannot carry out:
//   - outputs to numbers at or above OFPP_MAX other than the reserved
//     destinations a flow may use (OFPP_TABLE is for packet-out only,
//     OFPP_ANY is no port); any port below OFPP_MAX is accepted, existing
//     or not, as OVS does: it may be added later;
//   - group actions: the switch has no groups;
//   - set_field of a field whose prerequisites m does not pin down (ip_src
//     without an IPv4 match), which would rewrite packets of another
//     protocol.
func checkActions(in *openflow.Instructions, m *classifier.Match) error {
	for _, list := range [][]openflow.Action{in.Apply, in.Write} {
		for i := range list {
			a := &list[i]
			switch a.Type {
			case openflow.ActGroup:
				return errorf(ErrBadOutGroup, "group %d: the switch has no groups", a.Group)
			case openflow.ActSetField:
				if !a.Field.PrereqsMet(&m.Key, &m.Mask) {
					return errorf(ErrMatchInconsistent, "set_field %s: the match does not meet its prerequisites", a.Field)
				}
				continue
			case openflow.ActOutput, openflow.ActEnqueue:
			default:
				continue
			}
			switch p := a.Port; {
			case p < openflow.PortMax:
			case p == openflow.PortInPort, p == openflow.PortNormal, p == openflow.PortFlood,
				p == openflow.PortAll, p == openflow.PortController, p == openflow.PortLocal:
			default:
				return errorf(ErrBadOutPort, "output to port %#x, which is not a destination", p)
			}
		}
	}
	return nil
}

// Removed reports a flow leaving its table, for flow_removed messages.
type Removed struct {
	Rule   *Rule
	Reason RemovedReason
	At     time.Time
}

// Tables is a switch's flow tables. Lookups (Lookup, Snapshot) never
// block; flow mods serialise on a mutex.
type Tables struct {
	mu      sync.Mutex
	t       [NumTables]classifier.Classifier[*Entry]
	timed   map[*Rule]struct{} // rules with a timeout; under mu
	n       atomic.Int64
	version atomic.Uint64

	// MaxFlows bounds the flows in all tables together (0 = no limit);
	// an add beyond it fails with ErrTableFull.
	MaxFlows int
	// OnRemoved, if set, is told of every flow removed by a timeout or a
	// delete, under the tables' mutex: it must not call back into Tables.
	OnRemoved func(Removed)
}

// NewTables returns empty flow tables.
func NewTables() *Tables {
	return &Tables{timed: make(map[*Rule]struct{})}
}

// Version changes whenever any table changes; revalidators compare it to
// know that cached translations may be stale.
func (ts *Tables) Version() uint64 { return ts.version.Load() }

// Invalidate changes the version without changing a rule, for changes
// that translation depends on but the tables do not hold (the port set,
// table misses going to a controller, fail-open): revalidators then
// re-translate every cached datapath flow on their next pass.
func (ts *Tables) Invalidate() { ts.version.Add(1) }

// Len returns the number of flows in all tables.
func (ts *Tables) Len() int { return int(ts.n.Load()) }

// Table returns table id's classifier, for lookups and stats. id must be
// below NumTables.
func (ts *Tables) Table(id uint8) *classifier.Classifier[*Entry] { return &ts.t[id] }

// Lookup finds the rule table id's lookup of k selects, widening wc by
// the bits it consulted. It never blocks and does not allocate.
func (ts *Tables) Lookup(id uint8, k *flow.Key, wc *flow.Mask) *Rule {
	return ts.t[id].Lookup(k, wc)
}

// Apply carries out one flow_mod at time now.
func (ts *Tables) Apply(fm *FlowMod, now time.Time) error {
	if fm.Command > CmdDeleteStrict {
		return errorf(ErrBadCommand, "unknown flow_mod command %d", fm.Command)
	}
	if fm.Table == openflow.TableAll && fm.Command < CmdDelete {
		return errorf(ErrBadTableID, "%s needs a table id, not all tables", fm.Command)
	}
	if fm.Table != openflow.TableAll && int(fm.Table) >= NumTables {
		return errorf(ErrBadTableID, "no table %d", fm.Table)
	}
	if fm.Command <= CmdModifyStrict {
		if g := fm.Instructions; g.GotoTable && (int(g.Table) >= NumTables || g.Table <= fm.Table) {
			return errorf(ErrBadGotoTable, "goto_table %d from table %d: must go forward to an existing table", g.Table, fm.Table)
		}
		if err := checkActions(&fm.Instructions, &fm.Match); err != nil {
			return err
		}
	}
	ts.mu.Lock()
	defer ts.mu.Unlock()
	switch fm.Command {
	case CmdAdd:
		return ts.add(fm, now)
	case CmdModify, CmdModifyStrict:
		return ts.modify(fm, now)
	default:
		ts.delete(fm, now, RemovedDelete)
		return nil
	}
}

func (ts *Tables) newRule(fm *FlowMod, cookie uint64, now time.Time) *Rule {
	m := fm.Match
	m.Key = m.Key.Apply(&m.Mask) // bits outside the mask are ignored; keep them zero
	return &Rule{Match: m, Priority: int(fm.Priority), Value: &Entry{
		Table: fm.Table, Cookie: cookie, IdleTimeout: fm.IdleTimeout, HardTimeout: fm.HardTimeout,
		Flags: fm.Flags, Instructions: fm.Instructions, Created: now,
	}}
}

func (ts *Tables) track(r *Rule, old *Rule) {
	if old != nil {
		delete(ts.timed, old)
	}
	if r != nil && (r.Value.IdleTimeout != 0 || r.Value.HardTimeout != 0) {
		ts.timed[r] = struct{}{}
	}
}

func (ts *Tables) add(fm *FlowMod, now time.Time) error {
	c := &ts.t[fm.Table]
	m := fm.Match
	m.Key = m.Key.Apply(&m.Mask)
	snap := c.Snapshot()
	old := snap.Find(&m, int(fm.Priority))
	if fm.Flags&FlagCheckOverlap != 0 && old == nil && snap.Overlaps(&m, int(fm.Priority)) {
		return errorf(ErrOverlap, "flow overlaps an existing flow of priority %d in table %d", fm.Priority, fm.Table)
	}
	if old == nil && ts.MaxFlows > 0 && ts.Len() >= ts.MaxFlows {
		return errorf(ErrTableFull, "flow tables are full (%d flows)", ts.MaxFlows)
	}
	r := ts.newRule(fm, fm.Cookie, now)
	if old != nil && fm.Flags&FlagResetCounts == 0 {
		// An identical flow is replaced; its counters carry over unless
		// the add asks for them to be reset.
		p, b := old.Value.Stats()
		r.Value.packets.Store(p)
		r.Value.bytes.Store(b)
		r.Value.used.Store(old.Value.used.Load())
	}
	if replaced := c.Insert(r); replaced == nil {
		ts.n.Add(1)
	}
	ts.track(r, old)
	ts.version.Add(1)
	return nil
}

// selects reports whether a flow_mod's cookie and out_port filters select e.
func (fm *FlowMod) selects(e *Entry) bool {
	if (e.Cookie^fm.Cookie)&fm.CookieMask != 0 {
		return false
	}
	return fm.OutPort == openflow.PortAny || e.outputsTo(fm.OutPort)
}

// matching returns the rules of one table a modify or delete applies to.
func (ts *Tables) matching(id uint8, fm *FlowMod) []*Rule {
	snap := ts.t[id].Snapshot()
	var out []*Rule
	if fm.Command == CmdModifyStrict || fm.Command == CmdDeleteStrict {
		m := fm.Match
		m.Key = m.Key.Apply(&m.Mask)
		if r := snap.Find(&m, int(fm.Priority)); r != nil && fm.selects(r.Value) {
			out = append(out, r)
		}
		return out
	}
	for r := range snap.Rules(&fm.Match) {
		if fm.selects(r.Value) {
			out = append(out, r)
		}
	}
	return out
}

func (ts *Tables) modify(fm *FlowMod, now time.Time) error {
	rules := ts.matching(fm.Table, fm)
	if len(rules) == 0 {
		if fm.ModifyAdds {
			return ts.add(fm, now)
		}
		return nil
	}
	b := ts.t[fm.Table].Begin()
	for _, old := range rules {
		cookie := old.Value.Cookie
		if fm.SetCookie {
			cookie = fm.NewCookie
		}
		// The new rule keeps the old match, priority, timeouts, flags and
		// creation time; only the instructions (and cookie) change.
		r := &Rule{Match: old.Match, Priority: old.Priority, Value: &Entry{
			Table: old.Value.Table, Cookie: cookie, IdleTimeout: old.Value.IdleTimeout,
			HardTimeout: old.Value.HardTimeout, Flags: old.Value.Flags,
			Instructions: fm.Instructions, Created: old.Value.Created,
		}}
		if fm.Flags&FlagResetCounts == 0 {
			p, by := old.Value.Stats()
			r.Value.packets.Store(p)
			r.Value.bytes.Store(by)
			r.Value.used.Store(old.Value.used.Load())
		}
		b.Insert(r)
		ts.track(r, old)
	}
	b.Commit()
	ts.version.Add(1)
	return nil
}

func (ts *Tables) delete(fm *FlowMod, now time.Time, reason RemovedReason) {
	lo, hi := int(fm.Table), int(fm.Table)
	if fm.Table == openflow.TableAll {
		lo, hi = 0, NumTables-1
	}
	changed := false
	for id := lo; id <= hi; id++ {
		rules := ts.matching(uint8(id), fm)
		if len(rules) == 0 {
			continue
		}
		ts.remove(uint8(id), rules, func(*Rule) RemovedReason { return reason }, now)
		changed = true
	}
	if changed {
		ts.version.Add(1)
	}
}

// remove takes rules out of table id in one batch, reports those that
// asked for it with the reason why(r), and returns how many it removed.
// ts.mu is held.
func (ts *Tables) remove(id uint8, rules []*Rule, why func(*Rule) RemovedReason, now time.Time) int {
	n := 0
	b := ts.t[id].Begin()
	for _, r := range rules {
		if b.Remove(r) {
			ts.n.Add(-1)
			n++
		}
		delete(ts.timed, r)
	}
	b.Commit()
	if ts.OnRemoved != nil {
		for _, r := range rules {
			if r.Value.Flags&FlagSendFlowRem != 0 {
				ts.OnRemoved(Removed{Rule: r, Reason: why(r), At: now})
			}
		}
	}
	return n
}

// Expire removes flows whose idle or hard timeout has passed at now and
// returns how many it removed. Call it about once a second, after
// crediting stats, so idle timeouts see recent use.
func (ts *Tables) Expire(now time.Time) int {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	var byTable map[uint8][]*Rule
	var reasons map[*Rule]RemovedReason
	for r := range ts.timed {
		e := r.Value
		var reason RemovedReason
		switch {
		case e.HardTimeout != 0 && now.Sub(e.Created) >= time.Duration(e.HardTimeout)*time.Second:
			reason = RemovedHardTimeout
		case e.IdleTimeout != 0 && now.Sub(e.LastUsed()) >= time.Duration(e.IdleTimeout)*time.Second:
			reason = RemovedIdleTimeout
		default:
			continue
		}
		if byTable == nil {
			byTable = make(map[uint8][]*Rule)
			reasons = make(map[*Rule]RemovedReason)
		}
		byTable[e.Table] = append(byTable[e.Table], r)
		reasons[r] = reason
	}
	n := 0
	for id, rules := range byTable {
		n += ts.remove(id, rules, func(r *Rule) RemovedReason { return reasons[r] }, now)
	}
	if n > 0 {
		ts.version.Add(1)
	}
	return n
}

// Select returns the rules of table id (TableAll: every table) that a
// flow or aggregate stats request selects: loosely by match, and by
// cookie and out_port.
func (ts *Tables) Select(id uint8, m *classifier.Match, cookie, cookieMask uint64, outPort uint32) []*Rule {
	fm := FlowMod{Command: CmdDelete, Table: id, Match: *m, Cookie: cookie, CookieMask: cookieMask, OutPort: outPort}
	lo, hi := int(id), int(id)
	if id == openflow.TableAll {
		lo, hi = 0, NumTables-1
	}
	var out []*Rule
	for t := lo; t <= hi; t++ {
		out = append(out, ts.matching(uint8(t), &fm)...)
	}
	return out
}
