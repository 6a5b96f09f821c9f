package ofproto

import (
	"github.com/govswitch/govswitch/datapath"
	"github.com/govswitch/govswitch/netlinkio"
	"github.com/govswitch/govswitch/ofproto/openflow"
)

// Translation of clone(...), output(port=..,max_len=..) (output_trunc)
// and check_pkt_larger(N)->dst, as ofproto-dpif-xlate.c translates them
// for a datapath that has OVS_ACTION_ATTR_CLONE, _TRUNC and
// _CHECK_PKT_LEN (Linux 4.9, 4.10 and 5.2 and later).
//
// None of this allocates: the nested datapath attributes are written in
// place into out.Actions, and the state saved around a nested
// translation lives on the stack.

// Attribute numbers inside OVS_ACTION_ATTR_CHECK_PKT_LEN.
const (
	cplAttrPktLen    = 1
	cplAttrIfGreater = 2
	cplAttrIfLessEq  = 3
)

// reversible reports whether list's translation can be undone by the set
// actions a later commit emits, so that a clone of it needs no datapath
// clone: OVS's reversible_actions. Conntrack, meters, truncation (and
// encap/decap) change the packet
// in ways no set action undoes.
func reversible(list []openflow.Action) bool {
	for i := range list {
		switch list[i].Type {
		case openflow.ActCT, openflow.ActMeter, openflow.ActNAT, openflow.ActOutputTrunc, openflow.ActEncap, openflow.ActDecap:
			return false
		}
	}
	return true
}

// clone runs a's nested actions on a copy of the packet: afterwards the
// flow, the action set and (for a datapath clone) the datapath's view of
// the packet are what they were before. Like OVS, the clone runs a copy
// of the action set at its end.
func (c *xctx) clone(a *openflow.Action) {
	savedSet, savedN := c.actionSet, c.nActionSet
	savedFlow, wasMPLS := c.flow, c.wasMPLS
	c.cloneActions(a)
	c.flow, c.wasMPLS = savedFlow, wasMPLS
	c.actionSet, c.nActionSet = savedSet, savedN
}

func (c *xctx) cloneActions(a *openflow.Action) {
	if reversible(a.Nested) {
		c.doActions(a.Nested)
		if !c.exit && !c.ctrl.pausing {
			c.runActionSet()
		}
		return
	}
	// Commit first, so that the header changes made before the clone are
	// not emitted twice, inside the clone and again after it.
	c.commit()
	savedBase, savedEncap := c.base, c.encap
	acts, start := netlinkio.BeginNested(c.out.Actions, uint16(datapath.ActionClone))
	c.out.Actions = acts
	c.doActions(a.Nested)
	if !c.exit && !c.ctrl.pausing {
		c.runActionSet()
	}
	c.base, c.encap = savedBase, savedEncap
	if len(c.out.Actions) < start+4 {
		return // the translation was cut short (a drop): nothing to close
	}
	if len(c.out.Actions) == start+4 {
		c.out.Actions = c.out.Actions[:start] // an empty clone does nothing
		return
	}
	c.out.Actions = netlinkio.EndNested(c.out.Actions, start)
}

// outputTrunc outputs to a.Port at most a.TruncLen bytes of the packet:
// OVS_ACTION_ATTR_TRUNC, which holds until the next output. As in OVS,
// only a real port of this bridge qualifies (not a reserved port, the
// input port, or a patch port, whose far side the truncation would not
// reach); the others output nothing.
func (c *xctx) outputTrunc(a *openflow.Action) {
	switch a.Port {
	case openflow.PortTable, openflow.PortNormal, openflow.PortFlood, openflow.PortAll,
		openflow.PortController, openflow.PortAny, openflow.PortInPort:
		return
	}
	if a.Port == c.flow.InPort {
		return
	}
	pt := c.ports.ByOF(a.Port)
	if pt == nil || pt.IsPatch() {
		return
	}
	c.out.Actions = datapath.AppendTrunc(c.out.Actions, a.TruncLen)
	c.slowIfOff(FeatureTrunc) // backer_features.go
	c.output(a.Port, 0)
}

// checkPktLarger translates check_pkt_larger(N)->dst and everything after
// it: the rest of its action list (rest) and, when that list is a rule's
// apply-actions (in non-nil), the rule's other instructions and the
// tables they go to. All of it is translated twice, with dst's bit set
// and with it clear, into the two branches of one
// OVS_ACTION_ATTR_CHECK_PKT_LEN, as OVS does; the list's caller then goes
// on as after any action list.
func (c *xctx) checkPktLarger(a *openflow.Action, rest []openflow.Action, in *openflow.Instructions) {
	c.commit()
	savedSet, savedN := c.actionSet, c.nActionSet
	savedFlow, savedBase, wasMPLS, encap := c.flow, c.base, c.wasMPLS, c.encap
	acts, outer := netlinkio.BeginNested(c.out.Actions, uint16(datapath.ActionCheckPktLen))
	acts = netlinkio.AppendU16(acts, cplAttrPktLen, a.MaxLen)
	c.out.Actions = acts

	c.cplBranch(a, 1, cplAttrIfGreater, rest, in)
	exit := c.exit
	c.flow, c.base, c.wasMPLS, c.encap = savedFlow, savedBase, wasMPLS, encap
	c.actionSet, c.nActionSet = savedSet, savedN
	c.exit = false
	ok := !c.ctrl.pausing && len(c.out.Actions) >= outer+4
	if ok {
		c.cplBranch(a, 0, cplAttrIfLessEq, rest, in)
		ok = !c.ctrl.pausing && len(c.out.Actions) >= outer+4
	}
	c.flow, c.base, c.wasMPLS, c.encap = savedFlow, savedBase, wasMPLS, encap
	c.actionSet, c.nActionSet = savedSet, savedN
	if !ok {
		// A drop cut the actions short, or a controller(pause) froze
		// the translation inside a branch, which a continuation cannot
		// express: drop rather than half-apply.
		c.ctrl.pausing = false
		c.out.Actions = c.out.Actions[:0]
		c.out.Dropped = "translation under check_pkt_larger cut short"
		c.exit = true
		return
	}
	c.out.Actions = netlinkio.EndNested(c.out.Actions, outer)
	c.exit = exit
}

// cplBranch translates one branch of check_pkt_larger with the bit set
// to bit.
func (c *xctx) cplBranch(a *openflow.Action, bit uint64, attr uint16, rest []openflow.Action, in *openflow.Instructions) {
	acts, start := netlinkio.BeginNested(c.out.Actions, attr)
	c.out.Actions = acts
	c.regLoad(&openflow.Action{Type: openflow.ActRegLoad, Field: a.Field, Ofs: a.Ofs, NBits: 1, Load: bit})
	if c.doActionsIn(rest, in) && in != nil && !c.exit && !c.ctrl.pausing {
		c.finishRule(in)
	}
	if !c.exit && !c.ctrl.pausing {
		c.runActionSet()
	}
	if len(c.out.Actions) >= start+4 {
		c.out.Actions = netlinkio.EndNested(c.out.Actions, start)
	}
}

// finishRule carries out a rule's instructions after its apply-actions,
// and the tables its goto_table leads to, as runRule and the loop that
// called it would have.
func (c *xctx) finishRule(in *openflow.Instructions) {
	if in.Clear {
		c.nActionSet = 0
	}
	for i := range in.Write {
		c.writeAction(in.Write[i])
	}
	if in.WriteMetadata {
		c.flow.OFMetadata = c.flow.OFMetadata&^in.MetadataMask | in.Metadata&in.MetadataMask
	}
	if !in.GotoTable {
		return
	}
	for table := in.Table; !c.exit && int(table) < NumTables; {
		c.table = table
		r := c.view.Lookup(table, &c.flow, &c.out.WC)
		if r == nil {
			if c.depth == 0 {
				c.miss(table)
			}
			return
		}
		next, ok := c.runRule(r)
		if !ok {
			return
		}
		table = next
	}
}
