package ofproto

import (
	"github.com/govswitch/govswitch/datapath"
	"github.com/govswitch/govswitch/flow"
	"github.com/govswitch/govswitch/ofproto/openflow"
)

// Translation of the conntrack actions: ct() becomes the kernel's
// OVS_ACTION_ATTR_CT (zone, commit/force, mark and labels under masks,
// helper, nat) and, with table=T, an OVS_ACTION_ATTR_RECIRC whose id
// freezes where the packet resumes (recirc.go); ct_clear becomes
// OVS_ACTION_ATTR_CT_CLEAR.

// resume starts a translation of a recirculated packet (key.RecircID != 0)
// where its frozen state says. ok is false when the id is unknown (freed,
// or another bridge's): the packet is dropped.
func (c *xctx) resume(key *flow.Key) bool {
	s, cont, ok := recircs.lookupCont(key.RecircID, c.now)
	if !ok || s.x != c.x {
		c.out.Dropped = "unknown recirculation id"
		if t := c.out.trace; t != nil {
			// As OVS's trace reports it: an error, and the translation
			// failed.
			c.trace(traceAction, " >>>> Recirculation context not found for ID %x <<<<", key.RecircID)
			t.failed = "No recirculation context"
		}
		return false
	}
	if s.bond != nil {
		c.bondResume(s.bond, key) // xlate_bond.go
		return true
	}
	c.flow.InPort = s.inPort
	c.flow.Regs = s.regs
	c.flow.OFMetadata = s.metadata
	if s.instr != nil {
		c.resumeFrozen(&s) // after pop_mpls: xlate_mpls.go
		return true
	}
	if cont != nil {
		c.table = s.table
		c.runContinuation(cont) // after pop_mpls deeper in: xlate_mpls.go
		return true
	}
	c.pipeline(s.table)
	return true
}

// ct translates a ct action.
func (c *xctx) ct(a *openflow.Action) {
	ct := a.Ct
	if ct == nil {
		return
	}
	if c.flow.EthType != flow.EthTypeIPv4 && c.flow.EthType != flow.EthTypeIPv6 {
		// The kernel's connection tracker takes IP packets only (it
		// refuses a ct action in a flow of another ethertype): the
		// action does nothing to them, and the ethertype, always in
		// the megaflow, keeps it so.
		return
	}
	// The tracker sees the packet as the actions so far made it.
	c.commit()
	var d datapath.CT
	d.Commit = ct.Flags&openflow.CtCommit != 0 && ct.Flags&openflow.CtForce == 0
	d.ForceCommit = ct.Flags&openflow.CtForce != 0
	d.Zone = ct.ZoneImm
	if ct.ZoneField != openflow.FieldNone {
		// The field's value is read into the spare capacity of the
		// actions buffer, memory the caller owns, so nothing escapes.
		acts := c.out.Actions
		if v, ok := ct.ZoneField.Value(acts[len(acts):len(acts)], &c.flow); ok {
			d.Zone = fieldBits16(v, ct.ZoneOfs)
		}
		cover := ct.ZoneField.Cover()
		c.out.WC.Or(&cover)
	}
	if d.Commit || d.ForceCommit {
		if name := c.x.backer.ctTimeout(d.Zone, &c.flow); name != nil {
			// The kernel's policies are per protocol.
			d.Timeout = name
			c.out.WC.NwProto = 0xff
		}
	}
	switch ct.Alg {
	case 21:
		d.Helper = helperFTP
	case 69:
		d.Helper = helperTFTP
	}
	for i := range ct.Actions {
		n := &ct.Actions[i]
		switch n.Type {
		case openflow.ActSetField:
			ctSetField(n, &d)
		case openflow.ActRegLoad:
			for b := uint16(0); b < n.NBits; b++ {
				p, on := n.Ofs+b, n.Load>>b&1 != 0
				switch {
				case n.Field == openflow.FieldCtMark && p < 32:
					d.MarkMask |= 1 << p
					if on {
						d.Mark |= 1 << p
					} else {
						d.Mark &^= 1 << p
					}
				case n.Field == openflow.FieldCtLabel && p < 128:
					d.LabelsMask[p/8] |= 1 << (p % 8)
					if on {
						d.Labels[p/8] |= 1 << (p % 8)
					} else {
						d.Labels[p/8] &^= 1 << (p % 8)
					}
				}
			}
		case openflow.ActRegMove:
			c.ctMove(n, &d)
		case openflow.ActNAT:
			c.nat(n.NAT, &d)
		}
	}
	c.out.Actions = datapath.AppendCT(c.out.Actions, &d)

	if ct.Table != openflow.CtNoRecirc {
		s := frozenState{x: c.x, table: ct.Table, inPort: c.flow.InPort, metadata: c.flow.OFMetadata, regs: c.flow.Regs}
		id := recircs.id(&s, c.now)
		if id == 0 {
			c.out.Actions = c.out.Actions[:0]
			c.out.Dropped = "recirculation ids exhausted"
			c.exit = true
			return
		}
		c.out.Actions = datapath.AppendRecirc(c.out.Actions, id)
	}
	// The conntrack fields belong to the recirculated instance: the rest
	// of this action list sees an untracked packet, as in ovs-vswitchd.
	clearCt(&c.flow)
}

// ctMove carries out a move into ct_mark or ct_label nested in ct: the
// source's bits, read from the packet as the pipeline has it, become the
// value the commit sets under the bits moved.
func (c *xctx) ctMove(n *openflow.Action, d *datapath.CT) {
	sn := n.Src.Size()
	if sn == 0 || n.NBits == 0 || int(n.SrcOfs)+int(n.NBits) > 8*sn {
		return
	}
	// Read into the spare capacity of the actions buffer: nothing escapes.
	acts := c.out.Actions
	src, ok := n.Src.Value(acts[len(acts):len(acts)], &c.flow)
	if !ok {
		return
	}
	cover := n.Src.Cover()
	c.out.WC.Or(&cover)
	for i := uint16(0); i < n.NBits; i++ {
		sp, p := int(n.SrcOfs+i), n.Ofs+i
		on := src[sn-1-sp/8]>>(sp%8)&1 != 0
		switch {
		case n.Field == openflow.FieldCtMark && p < 32:
			d.MarkMask |= 1 << p
			if on {
				d.Mark |= 1 << p
			} else {
				d.Mark &^= 1 << p
			}
		case n.Field == openflow.FieldCtLabel && p < 128:
			d.LabelsMask[p/8] |= 1 << (p % 8)
			if on {
				d.Labels[p/8] |= 1 << (p % 8)
			} else {
				d.Labels[p/8] &^= 1 << (p % 8)
			}
		}
	}
}

// ctClear translates ct_clear. As in ovs-vswitchd, a kernel without the
// ct_clear action gets none (the action predates it): the fields are
// still cleared for the rest of the pipeline.
func (c *xctx) ctClear() {
	clearCt(&c.flow)
	if f := ctFeatures.Load(); f == nil || f.CtClear {
		c.out.Actions = datapath.AppendCTClear(c.out.Actions)
	}
}

func clearCt(k *flow.Key) {
	k.CtState, k.CtZone, k.CtMark, k.CtLabels, k.CtOrig = 0, 0, 0, [16]byte{}, flow.CtTuple{}
}

// nat fills in the ct action's nat clause.
func (c *xctx) nat(n *openflow.NATAction, d *datapath.CT) {
	if n == nil {
		return
	}
	d.HasNAT = true
	d.NAT = datapath.NAT{
		Src: n.Flags&openflow.NATSrc != 0, Dst: n.Flags&openflow.NATDst != 0,
		IPMin: n.IPMin, IPMax: n.IPMax, ProtoMin: n.ProtoMin, ProtoMax: n.ProtoMax,
		Persistent: n.Flags&openflow.NATPersistent != 0, ProtoHash: n.Flags&openflow.NATProtoHash != 0,
		ProtoRandom: n.Flags&openflow.NATProtoRandom != 0,
	}
	// A port range applies to TCP, UDP and SCTP alike; the kernel needs
	// the protocol pinned to pick ports, as ovs-vswitchd's megaflow does.
	if n.ProtoMin != 0 {
		c.out.WC.NwProto = 0xff
	}
}

var (
	helperFTP  = []byte("ftp")
	helperTFTP = []byte("tftp")
)

// fieldBits16 returns 16 bits at bit ofs (0 the least significant) of the
// big-endian field value v.
func fieldBits16(v []byte, ofs uint16) uint16 {
	var x uint16
	n := len(v)
	for i := 0; i < 16; i++ {
		p := int(ofs) + i
		if p/8 < n && v[n-1-p/8]>>(p%8)&1 != 0 {
			x |= 1 << i
		}
	}
	return x
}

// lookupCtOrig is resubmit(,table,ct)'s lookup: table is searched as if
// the packet's addresses, IP protocol and ports were those of its
// connection's original-direction tuple (ct_nw_src ... ct_tp_dst), which
// lets one ACL judge both directions of a connection by how it began.
// The megaflow's bits move with the fields: a rule that reads nw_src
// here reads the tuple's source, so the datapath flow matches
// ct_nw_src. The packet itself is untouched: the swap is undone before
// the rule found runs. A packet with no tuple (untracked, invalid, or not
// IP) finds nothing, as in ovs-vswitchd, which reports "resubmit(ct) with
// non-tracked or non-IP packet!" and goes on with the next action.
func (c *xctx) lookupCtOrig(table uint8) *Rule {
	et := c.flow.EthType
	if c.flow.CtOrig.Proto == 0 || et != flow.EthTypeIPv4 && et != flow.EthTypeIPv6 {
		return nil
	}
	v4 := et == flow.EthTypeIPv4
	swapCtTuple(&c.flow, v4)
	swapCtTuple((*flow.Key)(&c.out.WC), v4)
	r := c.view.Lookup(table, &c.flow, &c.out.WC)
	swapCtTuple(&c.flow, v4)
	swapCtTuple((*flow.Key)(&c.out.WC), v4)
	return r
}

// swapCtTuple exchanges k's IP protocol, ports and addresses of the
// family (v4: IPv4, else IPv6) with those of its conntrack tuple; twice
// is the identity. It serves a Key and, converted, a Mask alike.
func swapCtTuple(k *flow.Key, v4 bool) {
	t := &k.CtOrig
	k.NwProto, t.Proto = t.Proto, k.NwProto
	if v4 {
		k.IPv4Src, t.IPv4Src = t.IPv4Src, k.IPv4Src
		k.IPv4Dst, t.IPv4Dst = t.IPv4Dst, k.IPv4Dst
	} else {
		k.IPv6Src, t.IPv6Src = t.IPv6Src, k.IPv6Src
		k.IPv6Dst, t.IPv6Dst = t.IPv6Dst, k.IPv6Dst
	}
	k.TpSrc, t.TpSrc = t.TpSrc, k.TpSrc
	k.TpDst, t.TpDst = t.TpDst, k.TpDst
}
