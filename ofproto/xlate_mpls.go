package ofproto

import (
	"fmt"
	"strings"

	"github.com/govswitch/govswitch/datapath"
	"github.com/govswitch/govswitch/flow"
	"github.com/govswitch/govswitch/ofproto/openflow"
)

// Translation of the MPLS actions (push_mpls, pop_mpls, set_mpls_label,
// set_mpls_tc, set_mpls_ttl, dec_mpls_ttl and set_field on mpls_label and
// mpls_tc) as ofproto-dpif-xlate.c translates them.
//
// flow.Key holds the top label stack entry only, so the datapath's
// packet is tracked as OVS tracks its stack where that is enough: a push
// onto a packet without labels and a pop of its only label are committed
// lazily (commitMPLS), a set of the top entry becomes set(mpls(...)). A
// push onto a labelled packet, and a pop that leaves labels, are emitted
// at once; after the latter the new top entry is known only to the
// datapath, so the translation recirculates before it needs it, as after
// a pop to a non-MPLS ethertype, whose L3 header was never parsed:
// wasMPLS (OVS's was_mpls) makes the next action that reads or writes
// anything above L2 freeze the translation (mplsFreeze) behind a recirc
// action, and the packet resumes there with the datapath's new key.

const (
	mplsLabelMask = 0xfffff000
	mplsTCMask    = 0x00000e00
	mplsBoSMask   = 0x00000100
	mplsTTLMask   = 0x000000ff
)

func isMPLS(t uint16) bool { return t == flow.EthTypeMPLS || t == flow.EthTypeMPLSM }

// mplsAction carries out one MPLS action on the flow.
func (c *xctx) mplsAction(a *openflow.Action) {
	f, wc := &c.flow, &c.out.WC
	if c.encap.lseUnknown {
		// After a decap that left labels, only the datapath knows the
		// top entry.
		c.unsupportedHere(a.Type.String() + " after a decap that left labels")
		return
	}
	switch a.Type {
	case openflow.ActPushMPLS:
		c.pushMPLS(a.EthType)
	case openflow.ActPopMPLS:
		c.popMPLS(a.EthType)
	case openflow.ActSetMPLSLabel:
		if isMPLS(f.EthType) {
			wc.MPLSLSE |= mplsLabelMask
			f.MPLSLSE = f.MPLSLSE&^mplsLabelMask | uint32(a.Load)<<12&mplsLabelMask
		}
	case openflow.ActSetMPLSTC:
		if isMPLS(f.EthType) {
			wc.MPLSLSE |= mplsTCMask
			f.MPLSLSE = f.MPLSLSE&^mplsTCMask | uint32(a.VLANPCP)<<9&mplsTCMask
		}
	case openflow.ActSetMPLSTTL:
		if isMPLS(f.EthType) {
			wc.MPLSLSE |= mplsTTLMask
			f.MPLSLSE = f.MPLSLSE&^mplsTTLMask | uint32(a.TTL)
		}
	case openflow.ActDecMPLSTTL:
		if !isMPLS(f.EthType) {
			return
		}
		wc.MPLSLSE |= mplsTTLMask
		if ttl := f.MPLSLSE & mplsTTLMask; ttl > 1 {
			f.MPLSLSE = f.MPLSLSE&^mplsTTLMask | (ttl - 1)
			return
		}
		// TTL expired: as dec_ttl, the packet goes no further.
		c.out.Actions = c.out.Actions[:0]
		c.out.Dropped = "mpls ttl expired"
		c.exit = true
	}
}

// pushMPLS pushes a label stack entry, as OVS's flow_push_mpls: onto an
// IP packet label 0 (2 for IPv6), the DSCP's top bits as TC and the IP
// TTL; onto any other packet without labels TTL 64; onto a labelled one a
// copy of the top entry without bottom of stack.
func (c *xctx) pushMPLS(ethType uint16) {
	f, wc := &c.flow, &c.out.WC
	if isMPLS(f.EthType) {
		// The entry below is the datapath's: emit the push now.
		c.commit()
		wc.MPLSLSE = ^uint32(0)
		lse := f.MPLSLSE &^ mplsBoSMask
		c.out.Actions = datapath.AppendPushMPLS(c.out.Actions, lse, ethType)
		f.EthType, f.MPLSLSE = ethType, lse
		c.base.EthType, c.base.MPLSLSE = ethType, lse
		return
	}
	// Header changes so far belong to the L3 header the push hides.
	c.commit()
	label, tc, ttl := uint32(0), uint32(0), uint32(64)
	if f.EthType == flow.EthTypeIPv6 {
		label = 2
	}
	if f.EthType == flow.EthTypeIPv4 || f.EthType == flow.EthTypeIPv6 {
		tc = uint32(f.NwTos&0xfc) >> 2
		wc.NwTos |= 0xfc
		wc.NwTTL = 0xff
		if f.NwTTL != 0 {
			ttl = uint32(f.NwTTL)
		}
	}
	f.MPLSLSE = label<<12 | tc<<9&mplsTCMask | mplsBoSMask | ttl
	f.EthType = ethType
}

// popMPLS pops the top label stack entry; ethType is the ethertype the
// packet has after it.
func (c *xctx) popMPLS(ethType uint16) {
	f, wc := &c.flow, &c.out.WC
	if !isMPLS(f.EthType) {
		return
	}
	wc.MPLSLSE |= mplsBoSMask
	if f.MPLSLSE&mplsBoSMask == 0 {
		// Labels remain below: the datapath pops now, and knows the new
		// top entry; recirculate before it matters.
		c.commit()
		c.out.Actions = datapath.AppendPopMPLS(c.out.Actions, ethType)
		f.EthType, f.MPLSLSE = ethType, 0
		c.base.EthType, c.base.MPLSLSE = ethType, 0
		c.wasMPLS = true
		return
	}
	if isMPLS(ethType) {
		// The only label popped, yet the packet is to stay MPLS: there
		// is no entry to expose. OVS keeps the packet as it is.
		return
	}
	f.EthType, f.MPLSLSE = ethType, 0
	c.wasMPLS = true
}

// commitMPLS emits what turns the datapath's label stack (base) into the
// flow's: commit's MPLS step, run before the L3 sets (a popped packet's
// L3 header is writable only once the label is gone).
func (c *xctx) commitMPLS(acts []byte) []byte {
	f, b, wc := &c.flow, &c.base, &c.out.WC
	bm, fm := isMPLS(b.EthType), isMPLS(f.EthType)
	switch {
	case !bm && fm:
		acts = datapath.AppendPushMPLS(acts, f.MPLSLSE, f.EthType)
	case bm && !fm:
		acts = datapath.AppendPopMPLS(acts, f.EthType)
	case bm && fm && f.MPLSLSE != b.MPLSLSE:
		// set(mpls) writes the whole entry: all of it is now part of
		// the megaflow.
		wc.MPLSLSE = ^uint32(0)
		acts = datapath.AppendSet(acts, datapath.KeyAttrMPLS, f)
	default:
		return acts
	}
	b.EthType, b.MPLSLSE = f.EthType, f.MPLSLSE
	return acts
}

// mplsNeedsRecirc reports whether a, after a pop_mpls whose L3 header
// the datapath has not parsed, must see the packet as parsed after a
// recirculation: OVS's recirc_for_mpls. Outputs and L2 changes do not.
func mplsNeedsRecirc(a *openflow.Action) bool {
	switch a.Type {
	case openflow.ActOutput, openflow.ActEnqueue, openflow.ActOutputTrunc,
		openflow.ActSetVLANVID, openflow.ActSetVLANPCP, openflow.ActSetQueue, openflow.ActGroup:
		return false
	case openflow.ActSetField, openflow.ActRegLoad:
		return !l2Field(a.Field)
	case openflow.ActEncap:
		// push_eth: a decap to IP is followed by it before the
		// recirculation (xlate_encap.go).
		return uint32(a.Load) != openflow.PacketTypeEthernet
	}
	return true
}

// l2Field reports whether f is below L3 or pipeline metadata (OVS's
// !mf_is_l3_or_higher).
func l2Field(f openflow.Field) bool {
	switch f {
	case openflow.FieldEthSrc, openflow.FieldEthDst, openflow.FieldEthType,
		openflow.FieldVLANVID, openflow.FieldVLANPCP, openflow.FieldVLANTCI,
		openflow.FieldMPLSLabel, openflow.FieldMPLSTC, openflow.FieldMPLSBOS,
		openflow.FieldPktMark, openflow.FieldMetadata, openflow.FieldTunnelID,
		openflow.FieldInPort, openflow.FieldNXMInPort:
		return true
	}
	return f >= openflow.FieldReg0 && f <= openflow.FieldReg15 ||
		f >= openflow.FieldXReg0 && f <= openflow.FieldXXReg3
}

// mplsFreeze recirculates the packet and resumes the translation at
// rest, the tail of in's apply-actions (all of them run: rest may be
// empty, then the rule's other instructions run), once the datapath has
// parsed what is under the popped label. Only a rule's own action list
// at the top of the pipeline can be resumed so; elsewhere (inside a
// resubmit, clone, group or packet-out) the translation ends in a drop.
func (c *xctx) mplsFreeze(rest []openflow.Action, in *openflow.Instructions) {
	c.recircFreeze(rest, in, nil)
}

// recircFreeze is mplsFreeze with, when h is not nil, the datapath's hash
// of the packet (h's algorithm and basis) taken before the recirculation:
// a dp_hash select group's freeze (xlate_group.go), whose rest starts at
// the group action.
func (c *xctx) recircFreeze(rest []openflow.Action, in *openflow.Instructions, h *groupHash) {
	c.hashFreeze = nil
	if c.encap.noEth {
		// Popped to IP and no encap(ethernet) yet: the recirculated
		// key would have no Ethernet header (xlate_encap.go).
		c.unsupportedHere("recirculation of a packet without an Ethernet header")
		return
	}
	if in == nil || c.depth != 0 || len(rest) > len(in.Apply) {
		// Deeper in (a resubmit, clone or packet-out), the translation
		// is frozen as a controller pause freezes it, each level adding
		// what it has left as it unwinds, and resumes from the
		// continuation: finishRecircFreeze.
		c.commit()
		c.freezeRest(rest)
		c.ctrl = ctrlState{pausing: true, recirc: true, hash: h}
		c.exit = true
		return
	}
	c.commit()
	s := frozenState{x: c.x, table: c.table, inPort: c.flow.InPort, metadata: c.flow.OFMetadata, regs: c.flow.Regs,
		instr: in, act: len(in.Apply) - len(rest), cookie: c.cookie}
	id := recircs.id(&s, c.now)
	if id == 0 {
		c.out.Actions = c.out.Actions[:0]
		c.out.Dropped = "recirculation ids exhausted"
		c.exit = true
		return
	}
	if h != nil {
		c.out.Actions = datapath.AppendHash(c.out.Actions, h.alg, h.basis)
	}
	c.out.Actions = datapath.AppendRecirc(c.out.Actions, id)
	c.encap.freezeNext = false
	c.exit = true
	if t := c.out.trace; t != nil && c.out.NRules > 0 {
		// OVS's trace lists the actions a rule ran: not those frozen.
		// The group that asked for the hash ran; the action an MPLS
		// freeze stopped at did not.
		t.cutRule, t.cutActs = c.out.NRules, s.act
		if h != nil {
			t.cutActs++
		}
	}
}

// finishRecircFreeze ends a translation frozen deeper than a rule's own
// actions (mplsFreeze): the continuation gets a recirculation id (equal
// continuations with equal pipeline metadata share one) and the packet
// recirculates to resume it.
func (c *xctx) finishRecircFreeze(cont *openflow.Continuation) {
	h := c.ctrl.hash
	c.ctrl = ctrlState{}
	body, err := appendContinuationBody(nil, cont)
	if err != nil {
		c.out.Actions = c.out.Actions[:0]
		c.out.Dropped = "cannot freeze: " + err.Error()
		return
	}
	// The entry keeps its own copy: cont's slices are this Out's buffers.
	kept := &openflow.Continuation{ActionSet: append([]openflow.Action(nil), cont.ActionSet...),
		Actions: append([]openflow.Action(nil), cont.Actions...), Unrolls: append([]openflow.Unroll(nil), cont.Unrolls...)}
	s := frozenState{x: c.x, table: c.table, inPort: c.inPortOF(), metadata: c.flow.OFMetadata, regs: c.flow.Regs,
		cont: string(body)}
	id := recircs.idCont(&s, kept, c.now)
	if id == 0 {
		c.out.Actions = c.out.Actions[:0]
		c.out.Dropped = "recirculation ids exhausted"
		return
	}
	if h != nil {
		c.out.Actions = datapath.AppendHash(c.out.Actions, h.alg, h.basis)
	}
	c.out.Actions = datapath.AppendRecirc(c.out.Actions, id)
}

// resumeFrozen runs the rest of a frozen rule's instructions (s.instr
// from action s.act), for a packet back from mplsFreeze's recirculation.
func (c *xctx) resumeFrozen(s *frozenState) {
	in := s.instr
	c.table, c.cookie = s.table, s.cookie
	if s.act > len(in.Apply) {
		return
	}
	if t := c.out.trace; t != nil {
		c.traceThaw(s)
		t.actions = true
	}
	if c.doActionsIn(in.Apply[s.act:], in) && !c.exit && !c.ctrl.pausing {
		if c.out.trace != nil {
			c.out.trace.actions = false
		}
		c.finishRule(in)
	}
	if c.out.trace != nil {
		c.out.trace.actions = false
	}
}

// traceThaw writes what OVS's trace says of a thawed rule: the frozen
// actions it restores (an unroll_xlate that restores the rule's table
// and cookie, then what was left of the rule's instructions), and the
// unroll_xlate run.
func (c *xctx) traceThaw(s *frozenState) {
	unroll := fmt.Sprintf("unroll_xlate(table=%d, cookie=%d)", s.table, s.cookie)
	rest := instructionList(s.instr)[s.act:]
	c.trace(traceAction, "thaw")
	c.trace(traceNested, "Resuming from table %d", s.table)
	c.trace(8, "Restoring actions: %s", strings.Join(append([]string{unroll}, rest...), ","))
	c.trace(traceAction, "%s", unroll)
	c.trace(traceAction, "restored state: table=%d, cookie=%s", s.table, cHex(s.cookie))
}

// mplsCheckAction is the flow_mod check of an MPLS action against the
// packet k/m as the actions before it leave it, as OVS's check_PUSH_MPLS,
// check_POP_MPLS and check_set_mpls: push_mpls makes it MPLS (with no
// known L3 protocol), pop_mpls and the MPLS sets need it MPLS
// (OFPBAC_MATCH_INCONSISTENT otherwise).
func mplsCheckAction(a *openflow.Action, k *flow.Key, m *flow.Mask) error {
	mpls := m.EthType == 0xffff && isMPLS(k.EthType)
	switch a.Type {
	case openflow.ActPushMPLS:
		k.EthType, m.EthType = a.EthType, 0xffff
		k.NwProto, m.NwProto = 0, 0
	case openflow.ActPopMPLS:
		if !mpls {
			return errorf(ErrMatchInconsistent, "pop_mpls: the packet is not MPLS")
		}
		k.EthType = a.EthType
		k.MPLSLSE, m.MPLSLSE = 0, 0
	case openflow.ActEncap:
		if pt := uint32(a.Load); pt == openflow.PacketTypeMPLS || pt == openflow.PacketTypeMPLSMC {
			k.EthType, m.EthType = uint16(pt), 0xffff
			k.NwProto, m.NwProto = 0, 0
		}
	case openflow.ActDecap:
		switch pt := uint32(a.Load); {
		case pt == openflow.PacketTypeNextProto:
		case (pt == openflow.PacketTypeIPv4 || pt == openflow.PacketTypeIPv6) && mpls:
			// An IP packet, its header parsed after a recirculation.
			k.EthType, m.EthType = uint16(pt), 0xffff
			k.MPLSLSE, m.MPLSLSE = 0, 0
		default:
			// What is under the label is parsed after a recirculation.
			k.EthType, m.EthType = 0, 0
		}
	case openflow.ActSetMPLSLabel, openflow.ActSetMPLSTC, openflow.ActSetMPLSTTL, openflow.ActDecMPLSTTL:
		if !mpls {
			return errorf(ErrMatchInconsistent, "%s: the packet is not MPLS", a.Type)
		}
	}
	return nil
}
