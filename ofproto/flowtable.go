// Package ofproto is the OpenFlow switch: its flow tables and flow_mod
// semantics, ports, translation of OpenFlow actions into datapath actions,
// and (with the datapath) the upcall handlers and revalidators.
package ofproto

import (
	"errors"
	"fmt"
	"iter"
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
	ModifyAdds  bool
	IdleTimeout uint16 // seconds; 0 = none
	HardTimeout uint16 // seconds; 0 = none
	Flags       uint16
	Importance  uint16 // OpenFlow 1.4+ eviction precedence, kept and reported
	OutPort     uint32 // delete: only flows that output here; openflow.PortAny = no filter
	// OutGroup, when HasOutGroup, makes a delete select only the flows
	// that use that group (out_group).
	OutGroup     uint32
	HasOutGroup  bool
	Instructions openflow.Instructions
	// Origin and Xid say who sent the flow mod (a *Conn) and in which
	// message, for flow monitors' abbreviated updates (monitor.go); the
	// tables only pass them on.
	Origin any
	Xid    uint32
	// finAnyMatch lets a fin_timeout stand in a flow that does not
	// match TCP, as ovs-vswitchd lets it for a learned flow (it checks
	// only what controllers send) and in OpenFlow 1.0 (whose
	// inconsistent actions its check_FIN_TIMEOUT lets through).
	finAnyMatch bool
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
	ErrBadOutGroup                            // OFPBAC_BAD_OUT_GROUP: the group does not exist
	ErrMatchInconsistent                      // OFPBAC_MATCH_INCONSISTENT: set_field without its prerequisites
	// Actions that decode but that translation cannot carry out (see
	// checkSupported): refused, as ovs-vswitchd refuses actions it does
	// not implement, rather than installed to drop what they forward.
	ErrUnsupportedAction   // OFPBAC_BAD_TYPE: a standard action
	ErrUnsupportedVendor   // OFPBAC_BAD_VENDOR / BAD_EXPERIMENTER: another vendor's action
	ErrUnsupportedNXAction // OFPBAC_BAD_VENDOR_TYPE / BAD_EXP_TYPE: a Nicira action
	ErrInvalidMeter        // OFPMMFC_INVALID_METER: the meter does not exist
	ErrUnsupportedSetField // OFPBAC_BAD_SET_TYPE (1.0, which has none: OFPBAC_BAD_TYPE, as the codec answers an unknown load destination)
	// Conntrack refusals (support_ct.go).
	ErrCtDatapathAction // NXBAC_CT_DATAPATH_SUPPORT
	ErrCtDatapathMatch  // NXBMC_CT_DATAPATH_SUPPORT
	ErrBadSetArgument   // OFPBAC_BAD_SET_ARGUMENT: nat, ct_mark or ct_label outside ct
	ErrBadMask          // OFPBMC_BAD_MASK
	ErrBadConjunction   // NXBAC_BAD_CONJUNCTION (flowtable_conj.go)
	// ErrNDExtDatapathSet is OFPBAC_BAD_SET_ARGUMENT for a write to
	// nd_reserved or nd_options_type, which the Linux datapath cannot set
	// (support.go); logged at WARN, as ovs-vswitchd does.
	ErrNDExtDatapathSet
	ErrBadArgument // OFPBAC_BAD_ARGUMENT in every version: delete_field of a field other than tun_metadata
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
// Everything but the counters and the timeouts is immutable once the
// entry is in a table: lookups read it without locks, and a modify
// replaces the whole rule. A fin_timeout action may lower the timeouts of
// the rule holding it (Tables.ReduceTimeouts), so they are read through
// Timeouts.
type Entry struct {
	Table        uint8
	Cookie       uint64
	Flags        uint16
	Importance   uint16
	Instructions openflow.Instructions
	Created      time.Time

	packets atomic.Uint64
	bytes   atomic.Uint64
	used    atomic.Int64 // unix nanoseconds of the last packet; 0 = never
	// modified is when a modify or a learn action last renewed the
	// entry (unix nanoseconds; 0 = Created): its hard timeout runs from
	// then, as OVS's rule->modified.
	modified atomic.Int64
	// timeouts is the idle timeout (high 16 bits) and the hard timeout
	// (low 16), in seconds, 0 for none: set before the entry is
	// published, lowered only by Tables.ReduceTimeouts.
	timeouts atomic.Uint32
	// successor is the entry a modify (or an add of the same flow)
	// replaced this one with, set at commit: credits for e, from
	// datapath flows translated before the change and not yet again, go
	// on to it, as OVS's rule->new_rule forwards them, so the rule in
	// the tables does not look idle while its packets flow.
	// forwardCounts (written before successor is published, read only
	// after it is seen) says the counts go too, not only the last use:
	// not when the change reset them.
	successor     atomic.Pointer[Entry]
	forwardCounts bool
}

// Timeouts returns the entry's idle and hard timeouts in seconds (0:
// none), as a fin_timeout may have lowered them.
func (e *Entry) Timeouts() (idle, hard uint16) {
	t := e.timeouts.Load()
	return uint16(t >> 16), uint16(t)
}

// setTimeouts sets the timeouts of an entry not yet in a table.
func (e *Entry) setTimeouts(idle, hard uint16) { e.timeouts.Store(uint32(idle)<<16 | uint32(hard)) }

// Rule is a flow table rule: a classifier rule holding an Entry.
type Rule = classifier.Rule[*Entry]

// Credit adds packets and bytes seen at time used to the entry's counters,
// or, when a modify has replaced the entry, to its successor's. Revalidators
// and the execute-only miss path call it; it is safe for concurrent use.
func (e *Entry) Credit(packets, bytes uint64, used time.Time) {
	if packets == 0 {
		return
	}
	counts := true
	for s := e.successor.Load(); s != nil; s = e.successor.Load() {
		counts = counts && e.forwardCounts
		e = s
	}
	if counts {
		e.packets.Add(packets)
		e.bytes.Add(bytes)
	}
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
//   - (groups and meters that do not exist are refused by checkRefs);
//   - set_field of a field whose prerequisites m does not pin down (ip_src
//     without an IPv4 match), which would rewrite packets of another
//     protocol;
//   - actions translation cannot carry out (checkSupported).
func checkActions(in *openflow.Instructions, m *classifier.Match) error {
	if err := checkCt(in, m); err != nil {
		return err
	}
	for li, list := range [][]openflow.Action{in.Apply, in.Write} {
		if err := checkSupported(list); err != nil {
			return err
		}
		// The packet the actions see: push_mpls and pop_mpls change its
		// ethertype, and so what later actions may set (xlate_mpls.go).
		mk, mm := m.Key, m.Mask
		var ec encapCheck
		var nc nshSetCheck
		for i := range list {
			a := &list[i]
			if err := mplsCheckAction(a, &mk, &mm); err != nil {
				return err
			}
			nshCheckAction(a, ec.noEth, &mk, &mm) // xlate_nsh.go
			if err := nc.action(a); err != nil {
				return err
			}
			if err := ec.action(a); err != nil {
				return err
			}
			switch a.Type {
			case openflow.ActSetField:
				if !a.Field.PrereqsMet(&mk, &mm) {
					return errorf(ErrMatchInconsistent, "set_field %s: the match does not meet its prerequisites", a.Field)
				}
				continue
			case openflow.ActRegLoad, openflow.ActRegMove, openflow.ActStackPush, openflow.ActStackPop:
				if !a.Field.PrereqsMet(&mk, &mm) || a.Type == openflow.ActRegMove && !a.Src.PrereqsMet(&mk, &mm) {
					return errorf(ErrMatchInconsistent, "%s into %s: the match does not meet its prerequisites", a.Type, a.Field)
				}
				continue
			case openflow.ActMultipath, openflow.ActBundle:
				if a.Field != openflow.FieldNone && !a.Field.PrereqsMet(&mk, &mm) {
					return errorf(ErrMatchInconsistent, "%s into %s: the match does not meet its prerequisites", a.Type, a.Field)
				}
				continue
			case openflow.ActOutputReg:
				if !a.Src.PrereqsMet(&m.Key, &m.Mask) {
					return errorf(ErrMatchInconsistent, "output:%s: the match does not meet its prerequisites", a.Src)
				}
				continue
			case openflow.ActLearn:
				if err := checkLearn(a.Learn, m); err != nil {
					return err
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
		if li == 0 {
			if err := ec.end(in); err != nil {
				return err
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

// Tables is a switch's flow tables. Lookups (Lookup, View, Snapshot)
// never block; flow mods serialise on a mutex.
//
// Readers that look at several tables (translation following goto_table,
// flow dumps) take one View, so that a change to several tables at once (a
// bundle commit) is seen whole or not at all.
type Tables struct {
	mu      sync.Mutex
	t       [NumTables]classifier.Classifier[*Entry]
	timed   map[*Rule]struct{} // rules with a timeout; under mu
	n       atomic.Int64
	version atomic.Uint64
	view    atomic.Pointer[View]
	changed chan struct{} // a token after every version change (Changed)

	// MaxFlows bounds the flows in all tables together (0 = no limit);
	// an add beyond it fails with ErrTableFull.
	MaxFlows int
	// OnRemoved, if set, is told of every flow removed by a timeout or a
	// delete, under the tables' mutex: it must not call back into Tables.
	OnRemoved func(Removed)
	// Groups and Meters are the switch's groups and meters, which flows
	// may name (nil: none).
	Groups *Groups
	Meters *Meters
	// OnChange, if set, is told after every commit of the rules it added,
	// replaced or removed (flow monitors, monitor.go), under the tables'
	// mutex: it must not call back into Tables, and the slice is valid
	// only during the call (it is reused).
	OnChange func([]FlowChange)
	changes  []FlowChange // OnChange's reused slice, under mu
	// learned counts the rules whose learn actions delete what they
	// learned when they go (flowtable_learn.go); under mu.
	learned map[learnedCookie]int
	// conjN counts each table's conjunction flows (flowtable_conj.go);
	// under mu.
	conjN [NumTables]int
}

// View is one consistent version of every table: the snapshots the
// tables published together. It never changes.
type View struct {
	t [NumTables]*classifier.Snapshot[*Entry]
	// conj marks the tables holding conjunction flows, which need the
	// conjunctive lookup (flowtable_conj.go).
	conj [NumTables]bool
}

var emptyView View

// Table returns table id's snapshot in the view (nil is an empty table).
func (v *View) Table(id uint8) *classifier.Snapshot[*Entry] { return v.t[id] }

// Lookup is Tables.Lookup within the view.
func (v *View) Lookup(id uint8, k *flow.Key, wc *flow.Mask) *Rule {
	if v.conj[id] {
		return v.t[id].LookupConj(k, wc, &conjTable)
	}
	return v.t[id].Lookup(k, wc)
}

// NewTables returns empty flow tables.
func NewTables() *Tables {
	return &Tables{timed: make(map[*Rule]struct{}), changed: make(chan struct{}, 1)}
}

// Changed returns a channel that holds a token whenever Version has
// changed since the token was last taken: the revalidator waits on it so a
// flow_mod, a bundle commit or an Invalidate re-translates the datapath's
// flows at once rather than at the next periodic dump. Tokens coalesce;
// there is one channel, for one receiver.
func (ts *Tables) Changed() <-chan struct{} { return ts.changed }

// shareChanged makes the tables post their Changed tokens to ch, which
// the bridges of one datapath share, so that its one revalidator wakes
// for a change in any of them. Call it before the tables are in use.
func (ts *Tables) shareChanged(ch chan struct{}) { ts.changed = ch }

// bump changes the version and posts a Changed token. It never blocks.
func (ts *Tables) bump() {
	ts.version.Add(1)
	select {
	case ts.changed <- struct{}{}:
	default:
	}
}

// Version changes whenever any table changes; revalidators compare it to
// know that cached translations may be stale.
func (ts *Tables) Version() uint64 { return ts.version.Load() }

// Invalidate changes the version without changing a rule, for changes
// that translation depends on but the tables do not hold (the port set,
// table misses going to a controller, fail-open): revalidators then
// re-translate every cached datapath flow on their next pass.
func (ts *Tables) Invalidate() { ts.bump() }

// Len returns the number of flows in all tables.
func (ts *Tables) Len() int { return int(ts.n.Load()) }

// Table returns table id's classifier, for single-table lookups and stats.
// id must be below NumTables. Whoever changes the classifier directly (the
// fail-open rule) must call Republish.
func (ts *Tables) Table(id uint8) *classifier.Classifier[*Entry] { return &ts.t[id] }

// View returns the tables' current consistent version.
func (ts *Tables) View() *View {
	if v := ts.view.Load(); v != nil {
		return v
	}
	return &emptyView
}

// Republish makes table id's classifier's current snapshot part of the
// View, after a change made to the classifier directly.
func (ts *Tables) Republish(id uint8) {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	v := *ts.View()
	v.t[id] = ts.t[id].Snapshot()
	ts.view.Store(&v)
	ts.bump()
}

// Lookup finds the rule table id's lookup of k selects, widening wc by
// the bits it consulted. It never blocks and does not allocate.
func (ts *Tables) Lookup(id uint8, k *flow.Key, wc *flow.Mask) *Rule {
	return ts.View().Lookup(id, k, wc)
}

// Apply carries out one flow_mod at time now.
func (ts *Tables) Apply(fm *FlowMod, now time.Time) error {
	return ts.ApplyAll([]*FlowMod{fm}, now, nil)
}

// ApplyAll carries out flow mods as one atomic change: each sees the
// effect of those before it, and either all of them take effect, published
// in one View, or (when one fails) none. On failure it returns that flow
// mod's error and, if failed is not nil, sets *failed to its index.
func (ts *Tables) ApplyAll(fms []*FlowMod, now time.Time, failed *int) error {
	for i, fm := range fms {
		err := check(fm)
		if err == nil {
			err = ts.checkRefs(fm)
		}
		if err != nil {
			if failed != nil {
				*failed = i
			}
			return err
		}
	}
	ts.mu.Lock()
	defer ts.mu.Unlock()
	tx := txn{ts: ts, now: now}
	for i, fm := range fms {
		if err := tx.applyFrom(fm); err != nil {
			tx.abort()
			if failed != nil {
				*failed = i
			}
			return err
		}
	}
	tx.commit()
	return nil
}

// check validates a flow mod on its own, before any table is touched.
func check(fm *FlowMod) error {
	if fm.Command > CmdDeleteStrict {
		return errorf(ErrBadCommand, "unknown flow_mod command %d", fm.Command)
	}
	if fm.Table == openflow.TableAll && fm.Command == CmdAdd {
		return errorf(ErrBadTableID, "%s needs a table id, not all tables", fm.Command)
	}
	if fm.Table != openflow.TableAll && int(fm.Table) >= NumTables {
		return errorf(ErrBadTableID, "no table %d", fm.Table)
	}
	if fm.Command <= CmdModifyStrict {
		from := fm.Table
		if from == openflow.TableAll {
			from = 0
		}
		if g := fm.Instructions; g.GotoTable && (int(g.Table) >= NumTables || g.Table <= from) {
			return errorf(ErrBadGotoTable, "goto_table %d from table %d: must go forward to an existing table", g.Table, fm.Table)
		}
		if err := checkActions(&fm.Instructions, &fm.Match); err != nil {
			return err
		}
		if !fm.finAnyMatch {
			if err := checkFinTimeout(&fm.Instructions, &fm.Match); err != nil {
				return err
			}
		}
	}
	return nil
}

// ruleReader is what flow mods read a table through: its snapshot, or
// the open batch of a transaction that changed it.
type ruleReader interface {
	Find(m *classifier.Match, p int) *Rule
	Rules(filter *classifier.Match) iter.Seq[*Rule]
	Overlaps(m *classifier.Match, p int) bool
}

// txn is an open change to the tables: a classifier batch per table it
// touched, and the bookkeeping (flow count, timeouts, flow removed
// reports) that takes effect only at commit. ts.mu is held throughout.
type txn struct {
	ts      *Tables
	now     time.Time
	batches [NumTables]*classifier.Batch[*Entry]
	touched []uint8
	dn      int64
	tracks  [][2]*Rule // (new, old) for the timeout set, in order
	origins []*FlowMod // the flow mod behind each track; nil for expiry
	removed []Removed
}

func (tx *txn) reader(id uint8) ruleReader {
	if b := tx.batches[id]; b != nil {
		return b
	}
	return tx.ts.t[id].Snapshot()
}

func (tx *txn) batch(id uint8) *classifier.Batch[*Entry] {
	if b := tx.batches[id]; b != nil {
		return b
	}
	b := tx.ts.t[id].Begin()
	tx.batches[id] = b
	tx.touched = append(tx.touched, id)
	return b
}

func (tx *txn) abort() {
	for _, id := range tx.touched {
		tx.batches[id].Abort()
	}
}

// commit publishes every touched table in one View, then the bookkeeping.
func (tx *txn) commit() {
	ts := tx.ts
	tx.flushLearned()
	for _, tr := range tx.tracks {
		if tr[0] != nil && tr[1] != nil {
			tr[1].Value.successor.Store(tr[0].Value)
		}
	}
	if len(tx.touched) > 0 {
		v := *ts.View()
		for _, id := range tx.touched {
			v.t[id] = tx.batches[id].Commit()
		}
		tx.countConj(&v)
		ts.view.Store(&v)
	}
	ts.n.Add(tx.dn)
	for _, tr := range tx.tracks {
		if tr[1] != nil {
			delete(ts.timed, tr[1])
		}
		if r := tr[0]; r != nil && r.Value.timeouts.Load() != 0 {
			ts.timed[r] = struct{}{}
		}
	}
	if len(tx.touched) > 0 {
		ts.bump()
	}
	if ts.OnRemoved != nil {
		for _, r := range tx.removed {
			ts.OnRemoved(r)
		}
	}
	if ts.OnChange != nil && len(tx.tracks) > 0 {
		ts.changes = tx.appendChanges(ts.changes[:0])
		ts.OnChange(ts.changes)
		clear(ts.changes) // drop the references to rules and connections
	}
}

func (tx *txn) apply(fm *FlowMod) error {
	switch fm.Command {
	case CmdAdd:
		return tx.add(fm)
	case CmdModify, CmdModifyStrict:
		if fm.Table == openflow.TableAll {
			return tx.modifyAll(fm)
		}
		return tx.modify(fm.Table, fm)
	default:
		tx.delete(fm, RemovedDelete)
		return nil
	}
}

func newRule(fm *FlowMod, table uint8, cookie uint64, now time.Time) *Rule {
	m := fm.Match
	m.Key = m.Key.Apply(&m.Mask) // bits outside the mask are ignored; keep them zero
	r := &Rule{Match: m, Priority: int(fm.Priority), Value: &Entry{
		Table: table, Cookie: cookie, Flags: fm.Flags, Importance: fm.Importance,
		Instructions: fm.Instructions, Created: now,
	}}
	r.Value.setTimeouts(fm.IdleTimeout, fm.HardTimeout)
	return r
}

func (tx *txn) add(fm *FlowMod) error { return tx.addTo(fm.Table, fm) }

func (tx *txn) addTo(id uint8, fm *FlowMod) error {
	ts := tx.ts
	m := fm.Match
	m.Key = m.Key.Apply(&m.Mask)
	rd := tx.reader(id)
	old := rd.Find(&m, int(fm.Priority))
	if fm.Flags&FlagCheckOverlap != 0 && old == nil && rd.Overlaps(&m, int(fm.Priority)) {
		return errorf(ErrOverlap, "flow overlaps an existing flow of priority %d in table %d", fm.Priority, id)
	}
	if old == nil && ts.MaxFlows > 0 && ts.Len()+int(tx.dn) >= ts.MaxFlows {
		return errorf(ErrTableFull, "flow tables are full (%d flows)", ts.MaxFlows)
	}
	r := newRule(fm, id, fm.Cookie, tx.now)
	if old != nil {
		old.Value.forwardCounts = fm.Flags&FlagResetCounts == 0
	}
	if old != nil && fm.Flags&FlagResetCounts == 0 {
		// An identical flow is replaced; its counters carry over unless
		// the add asks for them to be reset.
		p, b := old.Value.Stats()
		r.Value.packets.Store(p)
		r.Value.bytes.Store(b)
		r.Value.used.Store(old.Value.used.Load())
	}
	if replaced := tx.batch(id).Insert(r); replaced == nil {
		tx.dn++
	}
	tx.tracks = append(tx.tracks, [2]*Rule{r, old})
	return nil
}

// selects reports whether a flow_mod's cookie and out_port filters select e.
func (fm *FlowMod) selects(e *Entry) bool {
	if (e.Cookie^fm.Cookie)&fm.CookieMask != 0 {
		return false
	}
	if fm.HasOutGroup && !e.uses(refGroup, fm.OutGroup) {
		return false
	}
	return fm.OutPort == openflow.PortAny || e.outputsTo(fm.OutPort)
}

// matching returns the rules of one table a modify or delete applies to.
func matching(rd ruleReader, fm *FlowMod) []*Rule {
	var out []*Rule
	if fm.Command == CmdModifyStrict || fm.Command == CmdDeleteStrict {
		m := fm.Match
		m.Key = m.Key.Apply(&m.Mask)
		if r := rd.Find(&m, int(fm.Priority)); r != nil && fm.selects(r.Value) {
			out = append(out, r)
		}
		return out
	}
	for r := range rd.Rules(&fm.Match) {
		if fm.selects(r.Value) {
			out = append(out, r)
		}
	}
	return out
}

// modifyAll applies a modify aimed at every table (OpenFlow 1.0 without
// the table-id extension, or table=all in 1.1+): each table holding a
// matching OpenFlow flow is modified; if none does and the modify may
// add, the flow goes into table 0.
func (tx *txn) modifyAll(fm *FlowMod) error {
	matched := false
	for id := 0; id < NumTables; id++ {
		rd := tx.reader(uint8(id))
		if s, ok := rd.(*classifier.Snapshot[*Entry]); ok && s.Len() == 0 {
			continue
		}
		rules := matching(rd, fm)
		rules = slicesDeleteFunc(rules, func(r *Rule) bool { return r.Priority > 0xffff })
		if len(rules) == 0 {
			continue
		}
		if g := fm.Instructions; g.GotoTable && int(g.Table) <= id {
			return errorf(ErrBadGotoTable, "goto_table %d from table %d: must go forward", g.Table, id)
		}
		matched = true
		tx.modifyRules(uint8(id), fm, rules)
	}
	if !matched && fm.ModifyAdds {
		return tx.addTo(0, fm)
	}
	return nil
}

func slicesDeleteFunc(rs []*Rule, del func(*Rule) bool) []*Rule {
	out := rs[:0]
	for _, r := range rs {
		if !del(r) {
			out = append(out, r)
		}
	}
	return out
}

func (tx *txn) modify(id uint8, fm *FlowMod) error {
	rules := matching(tx.reader(id), fm)
	if len(rules) == 0 {
		if fm.ModifyAdds {
			return tx.addTo(id, fm)
		}
		return nil
	}
	tx.modifyRules(id, fm, rules)
	return nil
}

func (tx *txn) modifyRules(id uint8, fm *FlowMod, rules []*Rule) {
	b := tx.batch(id)
	for _, old := range rules {
		cookie := old.Value.Cookie
		if fm.SetCookie {
			cookie = fm.NewCookie
		}
		// The new rule keeps the old match, priority, timeouts (as a
		// fin_timeout left them, as OVS's replace_rule_start copies
		// them), flags, importance and creation time; only the
		// instructions (and cookie) change.
		r := &Rule{Match: old.Match, Priority: old.Priority, Value: &Entry{
			Table: old.Value.Table, Cookie: cookie, Flags: old.Value.Flags, Importance: old.Value.Importance,
			Instructions: fm.Instructions, Created: old.Value.Created,
		}}
		r.Value.timeouts.Store(old.Value.timeouts.Load())
		old.Value.forwardCounts = fm.Flags&FlagResetCounts == 0
		r.Value.modified.Store(tx.now.UnixNano())
		if fm.Flags&FlagResetCounts == 0 {
			p, by := old.Value.Stats()
			r.Value.packets.Store(p)
			r.Value.bytes.Store(by)
			r.Value.used.Store(old.Value.used.Load())
		}
		b.Insert(r)
		tx.tracks = append(tx.tracks, [2]*Rule{r, old})
	}
}

func (tx *txn) delete(fm *FlowMod, reason RemovedReason) {
	lo, hi := int(fm.Table), int(fm.Table)
	if fm.Table == openflow.TableAll {
		lo, hi = 0, NumTables-1
	}
	for id := lo; id <= hi; id++ {
		rd := tx.reader(uint8(id))
		if s, ok := rd.(*classifier.Snapshot[*Entry]); ok && s.Len() == 0 {
			continue
		}
		rules := matching(rd, fm)
		if len(rules) == 0 {
			continue
		}
		tx.remove(uint8(id), rules, func(*Rule) RemovedReason { return reason })
	}
}

// remove takes rules out of table id and queues the reports of those that
// asked for one, with the reason why(r).
func (tx *txn) remove(id uint8, rules []*Rule, why func(*Rule) RemovedReason) {
	b := tx.batch(id)
	for _, r := range rules {
		if b.Remove(r) {
			tx.dn--
		}
		tx.tracks = append(tx.tracks, [2]*Rule{nil, r})
		if r.Value.Flags&FlagSendFlowRem != 0 {
			tx.removed = append(tx.removed, Removed{Rule: r, Reason: why(r), At: tx.now})
		}
	}
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
		idle, hard := e.Timeouts()
		var reason RemovedReason
		switch {
		case hard != 0 && now.Sub(e.modifiedAt()) >= time.Duration(hard)*time.Second:
			reason = RemovedHardTimeout
		case idle != 0 && now.Sub(e.LastUsed()) >= time.Duration(idle)*time.Second:
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
	if byTable == nil {
		return 0
	}
	tx := txn{ts: ts, now: now}
	for id, rules := range byTable {
		tx.remove(id, rules, func(r *Rule) RemovedReason { return reasons[r] })
	}
	n := int(-tx.dn)
	tx.commit()
	return n
}

// Select returns the rules of table id (TableAll: every table) that a
// flow or aggregate stats request selects: loosely by match, and by
// cookie and out_port. It reads one View.
func (ts *Tables) Select(id uint8, m *classifier.Match, cookie, cookieMask uint64, outPort uint32) []*Rule {
	fm := FlowMod{Command: CmdDelete, Table: id, Match: *m, Cookie: cookie, CookieMask: cookieMask, OutPort: outPort}
	lo, hi := int(id), int(id)
	if id == openflow.TableAll {
		lo, hi = 0, NumTables-1
	}
	v := ts.View()
	var out []*Rule
	for t := lo; t <= hi; t++ {
		if s := v.t[t]; s.Len() > 0 {
			out = append(out, matching(s, &fm)...)
		}
	}
	return out
}
