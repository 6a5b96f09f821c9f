package ofproto

import (
	"time"

	"github.com/govswitch/govswitch/classifier"
	"github.com/govswitch/govswitch/flow"
	"github.com/govswitch/govswitch/ofproto/openflow"
)

// The fin_timeout action (NXAST_FIN_TIMEOUT). When a TCP packet with FIN
// or RST set runs through a rule holding fin_timeout(idle_timeout=N,
// hard_timeout=M), the rule's idle and hard timeouts are lowered to N and
// M seconds (only lowered; a zero leaves that timeout alone), so the rule
// of a closed connection goes soon. As in OVS (xlate_fin_timeout,
// ofproto_rule_reduce_timeouts) the hard timeout still runs from the
// rule's creation or last modify, not from the FIN.
//
// A packet reaches a rule two ways, and both count, as in OVS:
//   - the packet of an upcall: translation records which rules ran a
//     fin_timeout (Out.fins) and the caller lowers them when the packet's
//     own TCP flags say FIN or RST (applyFinTimeouts);
//   - a packet the datapath forwarded by itself: the kernel ORs the TCP
//     flags of a flow's packets into its stats, and the revalidator, when
//     a flow whose translation ran a fin_timeout (ukey.fin) shows FIN or
//     RST among them, translates its key again and lowers the same way
//     (finRevalidate; OVS's XC_FIN_TIMEOUT).
//
// Translation itself changes nothing (it may be a trace or a
// re-translation), and the action makes the megaflow match the IP
// protocol, as OVS's does: the TCP flags stay wildcarded, so FINs and
// other segments share one datapath flow and the stats carry the FIN.

// maxFinTimeouts is how many fin_timeout actions one translation
// remembers; more are rare (one per rule is the use) and dropped.
const maxFinTimeouts = 4

// TCP flag bits that trigger a fin_timeout.
const (
	tcpFIN = 0x001
	tcpRST = 0x004
)

// finReq is one fin_timeout a translation ran: the rule holding it, the
// tables the rule is in, and its timeouts.
type finReq struct {
	ts         *Tables
	r          *Rule
	idle, hard uint16
}

// finTimeout translates a fin_timeout action of the rule being run.
func (c *xctx) finTimeout(a *openflow.Action) {
	c.out.WC.NwProto = 0xff
	idle, hard := a.FinTimeouts()
	o := c.out
	if c.rule == nil || idle == 0 && hard == 0 || o.nFins == len(o.fins) {
		return // no rule: a packet-out's or a resume's own actions, as OVS's ctx->rule
	}
	o.fins[o.nFins] = finReq{ts: c.x.Tables, r: c.rule, idle: idle, hard: hard}
	o.nFins++
}

// applyFinTimeouts lowers the timeouts of the rules whose fin_timeout the
// translation in o ran, when tcpFlags (the packet's, or a datapath flow's
// accumulated flags) hold FIN or RST, and forgets them either way. It
// allocates nothing.
func (o *Out) applyFinTimeouts(tcpFlags uint16) {
	if tcpFlags&(tcpFIN|tcpRST) != 0 {
		for i := range o.fins[:o.nFins] {
			f := &o.fins[i]
			f.ts.ReduceTimeouts(f.r, f.idle, f.hard)
		}
	}
	clear(o.fins[:o.nFins])
	o.nFins = 0
}

// finRevalidate is the revalidator's half: the datapath flow of ukey k,
// whose translation ran a fin_timeout, forwarded packets whose TCP flags
// (accumulated by the kernel) are tcpFlags. The key is translated again,
// without side effects, to find the rules, as relearn does for learn.
func (u *Udpif) finRevalidate(k *ukey, tcpFlags uint16, now time.Time) {
	if tcpFlags&(tcpFIN|tcpRST) == 0 {
		return
	}
	key := k.Key()
	out := &u.relearnOut
	u.x.Translate(&key, now, false, out)
	out.applyFinTimeouts(tcpFlags)
}

// reduceTimeout lowers t to max when max is nonzero and t is zero (no
// timeout) or higher, as OVS's reduce_timeout.
func reduceTimeout(max, t uint16) uint16 {
	if max != 0 && (t == 0 || t > max) {
		return max
	}
	return t
}

// ReduceTimeouts lowers rule r's idle and hard timeouts to idle and hard
// seconds (see reduceTimeout), as a fin_timeout does when a FIN or RST
// passes, and makes r expire by them. A rule no longer in ts is left
// alone. It takes the tables' mutex only when a timeout comes down, so a
// stream of FINs against a rule already lowered costs one atomic load
// each. It reports whether anything changed.
func (ts *Tables) ReduceTimeouts(r *Rule, idle, hard uint16) bool {
	e := r.Value
	lowered := func() (uint32, bool) {
		oi, oh := e.Timeouts()
		ni, nh := reduceTimeout(idle, oi), reduceTimeout(hard, oh)
		return uint32(ni)<<16 | uint32(nh), ni != oi || nh != oh
	}
	if _, ok := lowered(); !ok {
		return false
	}
	ts.mu.Lock()
	defer ts.mu.Unlock()
	// Under mu the view is the committed one and timed is exact: a rule
	// with a timeout is live iff it is in timed; one without, iff the
	// table still holds it.
	if _, ok := ts.timed[r]; !ok {
		if int(e.Table) >= NumTables || ts.View().Table(e.Table).Find(&r.Match, r.Priority) != r {
			return false
		}
	}
	t, ok := lowered() // writers hold mu: no CAS needed
	if !ok {
		return false
	}
	e.timeouts.Store(t)
	ts.timed[r] = struct{}{}
	return true
}

// checkFinTimeout refuses a fin_timeout in a flow whose match is not TCP,
// as ovs-vswitchd's check_FIN_TIMEOUT does in OpenFlow 1.1 and later
// (OFPBAC_MATCH_INCONSISTENT; FlowMod.finAnyMatch says when not). A
// non-TCP packet has no FIN, so such a fin_timeout only never fires.
func checkFinTimeout(in *openflow.Instructions, m *classifier.Match) error {
	if m.Key.NwProto == 6 && m.Mask.NwProto == 0xff && (m.Key.EthType == flow.EthTypeIPv4 || m.Key.EthType == flow.EthTypeIPv6) {
		return nil
	}
	var walk func([]openflow.Action) bool
	walk = func(acts []openflow.Action) bool {
		for i := range acts {
			if acts[i].Type == openflow.ActFinTimeout || walk(acts[i].Nested) {
				return true
			}
		}
		return false
	}
	if walk(in.Apply) || walk(in.Write) {
		return errorf(ErrMatchInconsistent, "fin_timeout in a flow that does not match TCP")
	}
	return nil
}
