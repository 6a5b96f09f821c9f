package ofproto

// patchOutput is output to a patch port: as ovs-vswitchd's
// patch_port_output, the translation continues in the peer's bridge, the
// packet entering its table 0 on the peer port with metadata and registers
// cleared and an empty action set of its own; whatever the peer's rules do
// is appended to this translation's datapath actions, and their lookups
// join its megaflow, so one datapath flow covers both bridges. Afterwards
// the packet is as it was before the output (the peer's changes are
// undone for later actions), and the peer's exit or failure does not end
// this bridge's translation. Crossing counts as a resubmit: a loop of
// patch ports ends at the resubmit depth limit.
func (c *xctx) patchOutput(pt *Port) {
	bk := c.x.backer
	if bk == nil {
		return
	}
	pb, pp := bk.set.Load().peerOf(pt)
	if pb == nil {
		return // not connected: the packet goes nowhere, as in OVS
	}
	if c.deep() >= MaxResubmitDepth || c.resubmits >= MaxResubmits {
		c.out.Dropped = "resubmit limit exceeded"
		return
	}
	c.depth++
	c.resubmits++
	// The crossing's packets count as sent on pt and received on pp,
	// credited as rules are: per upcall and per datapath flow stats.
	c.note(&pt.patch.tx)
	c.note(&pp.patch.rx)
	x, view, ports, inPort := c.x, c.view, c.ports, c.inPort
	flow, table, cookie := c.flow, c.table, c.cookie
	actionSet, nActionSet := c.actionSet, c.nActionSet

	c.x, c.view, c.ports, c.inPort = pb.X, pb.Tables.View(), pb.Ports.Snapshot(), pp
	c.flow.InPort = pp.OFPort
	c.flow.OFMetadata = 0
	c.flow.Regs = [len(c.flow.Regs)]uint32{}
	c.nActionSet = 0
	c.pipeline(0)
	if !c.exit {
		c.runActionSet()
	}

	c.x, c.view, c.ports, c.inPort = x, view, ports, inPort
	c.flow, c.table, c.cookie = flow, table, cookie
	c.actionSet, c.nActionSet = actionSet, nActionSet
	c.exit = false
	c.depth--
}
