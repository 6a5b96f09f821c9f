package ofproto

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/govswitch/govswitch/classifier"
	"github.com/govswitch/govswitch/ofproto/openflow"
)

// Flow monitors (NXST_FLOW_MONITOR in OpenFlow 1.0, OFPMP_FLOW_MONITOR in
// 1.4 and 1.5), as ovs-vswitchd runs them: a connection registers monitors
// (table, out_port, a loose match, which events); the reply lists the
// flows they select when INITIAL is asked for; from then on every commit
// of the tables sends each monitoring connection one update message
// (xid 0) with the changes its monitors select: full updates for other
// connections' changes (and its own when it asked for them: OWN /
// ONLY_OWN), one abbreviated update naming the flow mod's xid otherwise.
//
// Flow control, loosely as ovs-vswitchd's: when the connection's send queue
// is three quarters full the monitors pause (NXT_FLOW_MONITOR_PAUSED, or a
// paused update in 1.4) and updates stop; once the writer has emptied the
// queue the connection gets the flows its monitors select, as added, then
// NXT_FLOW_MONITOR_RESUMED.

// FlowChange is one rule a commit added, replaced or removed.
type FlowChange struct {
	New, Old *Rule // New nil: removed; Old nil: added
	Add      bool  // the change is an add (replacing Old or not)
	Origin   any   // the *Conn whose flow mod it was; nil for expiry
	Xid      uint32
	Reason   RemovedReason // for removals
}

// applyFrom applies fm, noting it as the origin of the changes it made.
func (tx *txn) applyFrom(fm *FlowMod) error {
	err := tx.apply(fm)
	for len(tx.origins) < len(tx.tracks) {
		tx.origins = append(tx.origins, fm)
	}
	return err
}

// appendChanges appends the commit's changes, for OnChange.
func (tx *txn) appendChanges(out []FlowChange) []FlowChange {
	for i, tr := range tx.tracks {
		ch := FlowChange{New: tr[0], Old: tr[1]}
		var fm *FlowMod
		if i < len(tx.origins) {
			fm = tx.origins[i]
		}
		if fm != nil {
			ch.Origin, ch.Xid, ch.Add = fm.Origin, fm.Xid, fm.Command == CmdAdd
			ch.Reason = RemovedDelete
		} else if r := tr[1]; r != nil {
			e := r.Value
			ch.Reason = RemovedIdleTimeout
			if _, hard := e.Timeouts(); hard != 0 && tx.now.Sub(e.Created) >= time.Duration(hard)*time.Second {
				ch.Reason = RemovedHardTimeout
			}
		}
		out = append(out, ch)
	}
	return out
}

// monitorState is a connection's flow monitors, under its own mutex (the
// tables' change hook and the connection's reader both use it).
type monitorState struct {
	mu       sync.Mutex
	monitors map[uint32]*openflow.FlowMonitor
	paused   bool
	pausedA  atomic.Bool  // paused, for the writer to poll without the mutex
	n        atomic.Int32 // len(monitors), for commits to skip a connection without the mutex
}

// monitorQueueHigh is the send-queue length at which updates pause.
const monitorQueueHigh = connQueueLen * 3 / 4

// ofmonitorErr is an OFPMOFC_* code: OpenFlow 1.4's (16, code) or the
// Nicira form OVS uses before it (1, nx).
func (c *Conn) ofmonitorErr(raw []byte, code14, nx uint16) error {
	if c.Version() >= openflow.Version14 {
		return c.sendError(raw, 16, code14)
	}
	if nx == 0 {
		return c.sendError(raw, openflow.ErrTypeBadRequest, openflow.BadRequestEPerm)
	}
	return c.sendError(raw, openflow.ErrTypeBadRequest, nx)
}

func (c *Conn) flowMonitorRequest(raw []byte, req *openflow.FlowMonitorRequest) error {
	v := c.Version()
	ms := &c.mon
	ms.mu.Lock()
	if ms.monitors == nil {
		ms.monitors = map[uint32]*openflow.FlowMonitor{}
	}
	// Check every monitor before changing any.
	for i := range req.Monitors {
		fm := &req.Monitors[i]
		_, exists := ms.monitors[fm.ID]
		switch {
		case fm.TableID != openflow.TableAll && int(fm.TableID) >= NumTables:
			ms.mu.Unlock()
			return c.ofmonitorErr(raw, 6, 0)
		case fm.Command == openflow.MonitorCmdAdd && exists:
			ms.mu.Unlock()
			return c.ofmonitorErr(raw, 1, 517) // OFPMOFC_MONITOR_EXISTS
		case (fm.Command == openflow.MonitorCmdModify || fm.Command == openflow.MonitorCmdDelete) && !exists:
			ms.mu.Unlock()
			return c.ofmonitorErr(raw, 3, 519) // OFPMOFC_UNKNOWN_MONITOR
		case fm.Command > openflow.MonitorCmdDelete:
			ms.mu.Unlock()
			return c.ofmonitorErr(raw, 4, 0) // OFPMOFC_BAD_COMMAND
		case fm.Flags&^(openflow.MonitorInitial|openflow.MonitorAdd|openflow.MonitorRemoved|openflow.MonitorModify|
			openflow.MonitorInstructions|openflow.MonitorNoAbbrev|openflow.MonitorOnlyOwn) != 0:
			ms.mu.Unlock()
			return c.ofmonitorErr(raw, 5, 518) // OFPMOFC_BAD_FLAGS
		}
	}
	var initial []*openflow.FlowMonitor
	for i := range req.Monitors {
		fm := req.Monitors[i]
		if fm.Command == openflow.MonitorCmdDelete {
			delete(ms.monitors, fm.ID)
			continue
		}
		fm.Match.Key = fm.Match.Key.Apply(&fm.Match.Mask)
		ms.monitors[fm.ID] = &fm
		if fm.Flags&openflow.MonitorInitial != 0 {
			initial = append(initial, &fm)
		}
	}
	ms.n.Store(int32(len(ms.monitors)))
	ms.mu.Unlock()

	ev := openflow.UpdateInitial
	if v < openflow.Version14 {
		ev = openflow.UpdateAdded
	}
	seen := map[*Rule]bool{}
	var updates []openflow.FlowUpdate
	for _, fm := range initial {
		for _, r := range selectMonitored(c.m.b.Tables, fm) {
			if seen[r] {
				continue
			}
			seen[r] = true
			updates = append(updates, flowUpdate(r, ev, 0, fm.Flags&openflow.MonitorInstructions != 0))
		}
	}
	env := openflow.Envelope{Version: v, Xid: req.Xid}
	return c.sendParts(len(updates), func(lo, hi int) openflow.Msg {
		return &openflow.FlowMonitorReply{Envelope: env, Updates: updates[lo:hi]}
	})
}

// selectMonitored lists the OpenFlow flows monitor fm selects now.
func selectMonitored(ts *Tables, fm *openflow.FlowMonitor) []*Rule {
	m := classifier.Match{Key: fm.Match.Key, Mask: fm.Match.Mask}
	var out []*Rule
	for _, r := range ts.Select(fm.TableID, &m, 0, 0, fm.OutPort) {
		if r.Priority <= 0xffff { // the fail-open rule is no OpenFlow flow
			out = append(out, r)
		}
	}
	return out
}

// instructionsEqual reports whether a and b do the same.
func instructionsEqual(a, b *openflow.Instructions) bool {
	if a.Meter != b.Meter || a.Clear != b.Clear || a.WriteMetadata != b.WriteMetadata || a.Metadata != b.Metadata ||
		a.MetadataMask != b.MetadataMask || a.GotoTable != b.GotoTable || a.Table != b.Table ||
		(a.Write == nil) != (b.Write == nil) || len(a.Apply) != len(b.Apply) || len(a.Write) != len(b.Write) {
		return false
	}
	for i := range a.Apply {
		if !a.Apply[i].Equal(b.Apply[i]) {
			return false
		}
	}
	for i := range a.Write {
		if !a.Write[i].Equal(b.Write[i]) {
			return false
		}
	}
	return true
}

func (c *Conn) cancelFlowMonitor(raw []byte, m *openflow.NXFlowMonitorCancel) error {
	ms := &c.mon
	ms.mu.Lock()
	_, ok := ms.monitors[m.ID]
	delete(ms.monitors, m.ID)
	ms.n.Store(int32(len(ms.monitors)))
	ms.mu.Unlock()
	if !ok {
		return c.ofmonitorErr(raw, 3, 519)
	}
	return nil
}

// flowUpdate describes rule r as a full update.
func flowUpdate(r *Rule, ev uint16, reason uint8, withActions bool) openflow.FlowUpdate {
	e := r.Value
	idle, hard := e.Timeouts()
	u := openflow.FlowUpdate{Event: ev, Reason: reason, TableID: e.Table, Priority: uint16(r.Priority),
		IdleTimeout: idle, HardTimeout: hard, Cookie: e.Cookie,
		Match: openflow.Match{Key: r.Match.Key, Mask: r.Match.Mask}}
	if withActions {
		u.Instructions = e.Instructions
	}
	return u
}

// monitorSelects reports whether monitor fm selects rule r: its table, a
// loose match (r at least as specific), and out_port (in r's actions, or
// the actions a modify replaced).
func monitorSelects(fm *openflow.FlowMonitor, r *Rule, old *Entry) bool {
	e := r.Value
	if fm.TableID != openflow.TableAll && fm.TableID != e.Table {
		return false
	}
	if !r.Match.Mask.Covers(&fm.Match.Mask) || !r.Match.Key.EqualMasked(&fm.Match.Key, &fm.Match.Mask) {
		return false
	}
	if fm.OutPort != openflow.PortAny && !e.Instructions.OutputsTo(fm.OutPort) &&
		(old == nil || !old.Instructions.OutputsTo(fm.OutPort)) {
		return false
	}
	return true
}

// flowChanged is the Tables.OnChange hook: each monitoring connection gets
// one update message for the commit.
func (m *ConnManager) flowChanged(changes []FlowChange) {
	for _, c := range *m.connList.Load() {
		if c.Version() == 0 || c.isClosed() {
			continue
		}
		c.monitorUpdate(changes)
	}
}

func (c *Conn) monitorUpdate(changes []FlowChange) {
	ms := &c.mon
	if ms.n.Load() == 0 {
		return
	}
	ms.mu.Lock()
	if len(ms.monitors) == 0 || ms.paused {
		ms.mu.Unlock()
		return
	}
	v := c.Version()
	var updates []openflow.FlowUpdate
	sentAbbrev := false
	for i := range changes {
		ch := &changes[i]
		r, ev, want := ch.New, openflow.UpdateAdded, openflow.MonitorAdd
		var old *Entry
		var reason uint8
		switch {
		case ch.New == nil:
			r, ev, want = ch.Old, openflow.UpdateRemoved, openflow.MonitorRemoved
			reason = uint8(ch.Reason)
		case ch.Old != nil && !ch.Add:
			ev, want = openflow.UpdateModified, openflow.MonitorModify
			// ovs-vswitchd reports a modify only when it changed the
			// actions or the cookie.
			if ch.New.Value.Cookie == ch.Old.Value.Cookie && instructionsEqual(&ch.New.Value.Instructions, &ch.Old.Value.Instructions) {
				continue
			}
			old = ch.Old.Value
		}
		if r.Priority > 0xffff {
			continue // the fail-open rule is no OpenFlow flow
		}
		var flags uint16
		for _, fm := range ms.monitors {
			if fm.Flags&want != 0 && monitorSelects(fm, r, old) {
				flags |= fm.Flags
			}
		}
		if flags == 0 {
			continue
		}
		if flags&openflow.MonitorOnlyOwn != 0 || ch.Origin != c {
			updates = append(updates, flowUpdate(r, ev, reason, flags&openflow.MonitorInstructions != 0))
		} else if !sentAbbrev {
			updates = append(updates, openflow.FlowUpdate{Event: openflow.UpdateAbbrev, Xid: ch.Xid})
			sentAbbrev = true
		}
	}
	if len(updates) == 0 {
		ms.mu.Unlock()
		return
	}
	env := openflow.Envelope{Version: v}
	// Updates are no replies: a full queue drops them (and pauses).
	for lo := 0; lo < len(updates); {
		hi := len(updates)
		var b []byte
		var err error
		for {
			b, err = (&openflow.FlowMonitorReply{Envelope: env, Updates: updates[lo:hi]}).Append(c.m.getBuf())
			if err == nil || hi-lo == 1 {
				break
			}
			c.m.putBuf(b)
			hi = lo + (hi-lo)/2
		}
		if err != nil {
			c.m.putBuf(b)
			c.log.Debug("cannot encode a flow update", "err", err)
			lo = hi
			continue
		}
		c.enqueue(b, false)
		lo = hi
	}
	if len(c.send) >= monitorQueueHigh {
		ms.paused = true
		ms.pausedA.Store(true)
		c.sendMonitorFlowControl(false)
	}
	ms.mu.Unlock()
}

// sendMonitorFlowControl queues the paused (resumed false) or resumed
// notice in c's version.
func (c *Conn) sendMonitorFlowControl(resumed bool) {
	env := openflow.Envelope{Version: c.Version()}
	var msg openflow.Msg = &openflow.NXFlowMonitorFlowControl{Envelope: env, Resumed: resumed}
	if env.Version >= openflow.Version14 {
		ev := openflow.UpdatePaused
		if resumed {
			ev = openflow.UpdateResumed
		}
		msg = &openflow.FlowMonitorReply{Envelope: env, Updates: []openflow.FlowUpdate{{Event: ev}}}
	}
	b, err := msg.Append(c.m.getBuf())
	if err != nil {
		c.m.putBuf(b)
		return
	}
	// A reply-class enqueue: the notice must not be lost, and a queue so
	// full it cannot take it means the peer is gone.
	c.enqueue(b, true)
}

// monitorsMayResume is the writer's hook: once it has emptied the send
// queue, paused monitors resume with the flows they select, as added.
// The tables' mutex keeps commits out meanwhile, so no change falls
// between the refresh and the resume.
func (c *Conn) monitorsMayResume() {
	ms := &c.mon
	ts := c.m.b.Tables
	ts.mu.Lock()
	defer ts.mu.Unlock()
	ms.mu.Lock()
	defer ms.mu.Unlock()
	if !ms.paused {
		return
	}
	ms.paused = false
	ms.pausedA.Store(false)
	seen := map[*Rule]bool{}
	var updates []openflow.FlowUpdate
	for _, fm := range ms.monitors {
		if fm.Flags&(openflow.MonitorInitial|openflow.MonitorAdd) == 0 {
			continue
		}
		for _, r := range selectMonitored(ts, fm) {
			if seen[r] {
				continue
			}
			seen[r] = true
			updates = append(updates, flowUpdate(r, openflow.UpdateAdded, 0, fm.Flags&openflow.MonitorInstructions != 0))
		}
	}
	env := openflow.Envelope{Version: c.Version()}
	if len(updates) > 0 {
		c.sendParts(len(updates), func(lo, hi int) openflow.Msg {
			return &openflow.FlowMonitorReply{Envelope: env, Updates: updates[lo:hi]}
		})
	}
	c.sendMonitorFlowControl(true)
}

// monitorsPaused reports whether c's monitors are paused; the writer polls
// it after each write that leaves the queue empty.
func (c *Conn) monitorsPaused() bool { return c.mon.pausedA.Load() }
