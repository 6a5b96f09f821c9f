package ofproto

import (
	"log/slog"
	"sync"
	"time"

	"github.com/govswitch/govswitch/classifier"
	"github.com/govswitch/govswitch/flow"
	"github.com/govswitch/govswitch/ofproto/openflow"
)

// The learn action. Translation computes the flow_mod a learn action
// makes of the packet (OVS's learn_execute) and unwildcards the source
// bits it read (learn_mask), so every packet of the megaflow would learn
// the same flow. The flow_mods are not applied inside the translation:
// the handler applies a batch's learned flows once the batch is
// translated, as OVS 2.4 and later make a learned flow visible only to
// later translations. A learned flow that already exists, identical, is
// only refreshed (its hard timeout restarts), without touching the
// tables, so a steady flow of packets does not churn them. Packets of an
// installed megaflow do not upcall: the revalidator re-runs the learn of a
// flow whose counters moved (OVS's xcache XC_LEARN), which refreshes the
// learned flow or puts it back if it expired.

// learnReq is one learned flow_mod waiting to be applied to x's tables.
type learnReq struct {
	x     *Xlator
	fm    FlowMod
	limit uint32
}

// learnAction translates a learn action.
func (c *xctx) learnAction(l *openflow.LearnAction) {
	c.out.HasLearn = true
	for i := range l.Specs {
		s := &l.Specs[i]
		if s.Src != openflow.FieldNone {
			maskSubfield(&c.out.WC, s.Src, s.SrcOfs, s.NBits)
		}
	}
	fm, ok := learnFlowMod(l, &c.flow)
	if !ok {
		return
	}
	if l.Flags&openflow.LearnWriteResult != 0 {
		var one [16]byte
		if c.learnWouldSucceed(l, &fm) {
			one[15] = 1
		}
		setSubfield(&c.flow, l.ResultDst, l.ResultOfs, 1, &one)
	}
	if c.learn {
		c.out.learns = append(c.out.learns, learnReq{x: c.x, fm: fm, limit: l.Limit})
	}
}

// learnWouldSucceed reports whether the flow fm learns is in its table
// already or fits under l's limit, in the tables this translation reads.
func (c *xctx) learnWouldSucceed(l *openflow.LearnAction, fm *FlowMod) bool {
	if l.Limit == 0 || int(fm.Table) >= NumTables {
		return true
	}
	t := c.view.Table(fm.Table)
	if t.Find(&fm.Match, int(fm.Priority)) != nil {
		return true
	}
	return countCookie(t, l.Cookie) < int(l.Limit)
}

func countCookie(t *classifier.Snapshot[*Entry], cookie uint64) int {
	n := 0
	for r := range t.Rules(&classifier.Match{}) {
		if r.Value.Cookie == cookie {
			n++
		}
	}
	return n
}

// maskSubfield sets bits ofs..ofs+n-1 of field f in wc.
func maskSubfield(wc *flow.Mask, f openflow.Field, ofs, n uint16) {
	var ones [16]byte
	for i := range ones {
		ones[i] = 0xff
	}
	setSubfield((*flow.Key)(wc), f, ofs, n, &ones)
}

// setSubfield writes the n low bits of x into bits ofs.. of field f in k.
func setSubfield(k *flow.Key, f openflow.Field, ofs, n uint16, x *[16]byte) bool {
	var buf [16]byte
	v, ok := f.Value(buf[:0], k)
	if !ok {
		return false
	}
	openflow.SetNBits(v, int(ofs), int(n), x)
	return f.SetValue(k, v)
}

// learnFlowMod builds the flow_mod that learn action l makes of a packet
// whose flow (as the actions so far left it) is k: OVS's learn_execute.
func learnFlowMod(l *openflow.LearnAction, k *flow.Key) (FlowMod, bool) {
	fm := FlowMod{Command: CmdModifyStrict, ModifyAdds: true, Table: l.Table, Priority: l.Priority,
		Cookie: l.Cookie, SetCookie: true, NewCookie: l.Cookie, IdleTimeout: l.IdleTimeout,
		HardTimeout: l.HardTimeout, OutPort: openflow.PortAny}
	if l.Flags&openflow.LearnSendFlowRem != 0 {
		fm.Flags |= FlagSendFlowRem
	}
	fm.finAnyMatch = true
	var acts []openflow.Action
	if l.FinIdleTimeout != 0 || l.FinHardTimeout != 0 {
		// The learned flow starts with a fin_timeout, as OVS's
		// learn_execute puts one first (xlate_fintimeout.go).
		acts = append(acts, openflow.FinTimeout(l.FinIdleTimeout, l.FinHardTimeout))
	}
	for i := range l.Specs {
		s := &l.Specs[i]
		x := s.Imm
		if s.Src != openflow.FieldNone {
			var buf [16]byte
			v, ok := s.Src.Value(buf[:0], k)
			if !ok {
				return fm, false
			}
			x = openflow.NBitsValue(v, int(s.SrcOfs), int(s.NBits))
		}
		switch s.Dst {
		case openflow.LearnMatch:
			if !setSubfield(&fm.Match.Key, s.Field, s.DstOfs, s.NBits, &x) {
				return fm, false
			}
			maskSubfield(&fm.Match.Mask, s.Field, s.DstOfs, s.NBits)
		case openflow.LearnLoad:
			// One NXAST_REG_LOAD per 64 bits, the least significant
			// first, as ovs-vswitchd encodes a learned load.
			for done := uint16(0); done < s.NBits; done += 64 {
				n := min(64, s.NBits-done)
				seg := openflow.NBitsValue(x[:], int(done), int(n))
				var load uint64
				for _, b := range seg[8:] {
					load = load<<8 | uint64(b)
				}
				acts = append(acts, openflow.Action{Type: openflow.ActRegLoad, Field: s.Field,
					Ofs: s.DstOfs + done, NBits: n, Load: load})
			}
		case openflow.LearnOutput:
			if s.NBits > 16 && !allZero(x[:14]) {
				continue
			}
			p := uint16(x[14])<<8 | uint16(x[15])
			port := openflow.Port10To32(p)
			switch {
			case p < 0xff00, port == openflow.PortInPort, port == openflow.PortFlood,
				port == openflow.PortLocal, port == openflow.PortAll:
				acts = append(acts, openflow.Output(port, 0))
			}
		}
	}
	fm.Match.Key = fm.Match.Key.Apply(&fm.Match.Mask)
	fm.Instructions.Apply = acts
	return fm, true
}

func allZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

// applyLearns applies the flows the translation in out learned, as the
// handler does after a batch (and a packet-out or resume after its one
// translation). It is not the hot path: only translations that ran a
// learn action have any.
func applyLearns(out *Out, now time.Time) {
	if len(out.learns) == 0 {
		return
	}
	var byTables map[*Tables][]*FlowMod
	for i := range out.learns {
		req := &out.learns[i]
		ts := req.x.Tables
		fm := &req.fm
		if int(fm.Table) >= NumTables {
			continue
		}
		t := ts.View().Table(fm.Table)
		old := t.Find(&fm.Match, int(fm.Priority))
		if old != nil && sameLearned(old.Value, fm) {
			old.Value.touchModified(now)
			continue
		}
		if old == nil && req.limit != 0 && countCookie(t, fm.Cookie) >= int(req.limit) {
			learnLimitLog(fm)
			continue
		}
		if byTables == nil {
			byTables = make(map[*Tables][]*FlowMod)
		}
		byTables[ts] = append(byTables[ts], fm)
	}
	for ts, fms := range byTables {
		// Apply one at a time: one bad learned flow (a table full) must
		// not stop the others, and a batch holding the same flow twice
		// is fine either way.
		for _, fm := range fms {
			if err := ts.Apply(fm, now); err != nil {
				slog.Warn("learn: flow_mod failed", "table", fm.Table, "err", err)
			}
		}
	}
	out.learns = out.learns[:0]
}

// sameLearned reports whether e is what fm would learn again: same
// actions, timeouts, flags and cookie (OVS's
// ofproto_flow_mod_init_for_learn test).
func sameLearned(e *Entry, fm *FlowMod) bool {
	if idle, hard := e.Timeouts(); idle != fm.IdleTimeout || hard != fm.HardTimeout || e.Flags != fm.Flags ||
		e.Cookie != fm.NewCookie || e.Importance != 0 || !onlyApplyEqual(&e.Instructions, fm.Instructions.Apply) {
		return false
	}
	return true
}

var learnLimitMu sync.Mutex
var learnLimitAt time.Time

// learnLimitLog logs, at most every 5 s, that a learn limit stopped a flow.
func learnLimitLog(fm *FlowMod) {
	learnLimitMu.Lock()
	defer learnLimitMu.Unlock()
	if now := time.Now(); now.Sub(learnLimitAt) >= 5*time.Second {
		learnLimitAt = now
		slog.Info("learn limit reached", "table", fm.Table, "cookie", fm.Cookie)
	}
}

// checkLearn refuses a learn action that a flow with match m cannot
// carry out, as ovs-vswitchd's learn_check does: source fields whose
// prerequisites m does not meet, destination fields whose prerequisites
// the learned match (built spec by spec) does not, loads translation
// cannot do. A nil m (a packet-out's or a group bucket's actions) skips the source
// check.
func checkLearn(l *openflow.LearnAction, m *classifier.Match) error {
	if l.Flags&openflow.LearnWriteResult != 0 && !settable(l.ResultDst) {
		return errorf(ErrUnsupportedSetField, "learn result_dst %s is not implemented", l.ResultDst)
	}
	var dst classifier.Match
	for i := range l.Specs {
		s := &l.Specs[i]
		if s.Src != openflow.FieldNone && m != nil && !s.Src.PrereqsMet(&m.Key, &m.Mask) {
			return errorf(ErrMatchInconsistent, "learn: source %s: the match does not meet its prerequisites", s.Src)
		}
		switch s.Dst {
		case openflow.LearnMatch:
			if !s.Field.PrereqsMet(&dst.Key, &dst.Mask) {
				return errorf(ErrMatchInconsistent, "learn: match on %s without its prerequisites", s.Field)
			}
			if s.Src == openflow.FieldNone {
				setSubfield(&dst.Key, s.Field, s.DstOfs, s.NBits, &s.Imm)
				maskSubfield(&dst.Mask, s.Field, s.DstOfs, s.NBits)
			}
		case openflow.LearnLoad:
			if !s.Field.PrereqsMet(&dst.Key, &dst.Mask) {
				return errorf(ErrMatchInconsistent, "learn: load into %s without its prerequisites", s.Field)
			}
			if s.Field == openflow.FieldCtMark || s.Field == openflow.FieldCtLabel || !settable(s.Field) {
				return errorf(ErrUnsupportedSetField, "learn: load into %s is not implemented", s.Field)
			}
		}
	}
	return nil
}

// relearn re-runs the learn actions of ukey k's flow, whose packets the
// datapath forwarded without upcalls since the last dump: the learned
// flows are refreshed, or learned again if they expired (OVS's XC_LEARN).
func (u *Udpif) relearn(k *ukey, now time.Time) {
	key := k.Key()
	out := &u.relearnOut
	u.x.Translate(&key, now, true, out)
	applyLearns(out, now)
}
