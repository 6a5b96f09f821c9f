package ofproto

import (
	"github.com/govswitch/govswitch/datapath"
	"github.com/govswitch/govswitch/flow"
)

// Mirroring in translation (mirror.go): the hooks xlate.go calls. A bridge
// without mirrors pays one nil check per output.

// mirrorIngress mirrors the packet as it arrived, to the mirrors that
// select its input port, before any action runs (as xlate_actions'
// mirror_ingress_packet).
func (c *xctx) mirrorIngress() {
	ms := c.ports.mirrors
	c.mirrorVID = c.base.VLANs[0].TCI&flow.VLANVIDMask | 0x8000
	if c.inPort == nil {
		return
	}
	for i := range ms.list {
		m := &ms.list[i]
		if m.all || m.src[c.inPort.OFPort] {
			c.mirrorOutput(m)
		}
	}
}

// mirrorEgress mirrors the packet about to be output to pt, to the mirrors
// that select pt.
func (c *xctx) mirrorEgress(pt *Port) {
	ms := c.ports.mirrors
	for i := range ms.list {
		m := &ms.list[i]
		if c.mirrored&m.bit == 0 && (m.all || m.dst[pt.OFPort]) {
			c.mirrorOutput(m)
		}
	}
}

// mirrorVLAN is the VLAN the packet belongs to by its input port, for
// select_vlan and for tagging the copies; ok is false when the input port
// does not carry the frame's VLAN (then nothing is mirrored, as OVS's
// mirror_packet). The VID joins the megaflow.
func (c *xctx) mirrorVLAN() (vlan uint16, ok bool) {
	c.out.WC.VLANs[0].TCI |= flow.VLANVIDMask | flow.VLANPresent
	in := &trunkAll
	if c.inPort != nil {
		in = &c.inPort.VLAN
	}
	vid := c.base.VLANs[0].TCI & flow.VLANVIDMask
	if c.mirrorVID&0x8000 != 0 {
		vid = c.mirrorVID & flow.VLANVIDMask
	}
	return in.inputVLAN(vid)
}

// mirrorOutput sends a copy of the packet as it is now to m's output.
func (c *xctx) mirrorOutput(m *mirror) {
	if c.mirrored&m.bit != 0 {
		return
	}
	vlan, ok := c.mirrorVLAN()
	if !ok || m.vlans != nil && !m.vlans.Has(vlan) {
		return
	}
	// The mirrors with the same output are served too: one copy, counted
	// in this mirror's statistics only (as OVS's used_mirrors).
	c.mirrored |= m.dup
	if m.stats != nil {
		c.note(m.stats) // counted as OVS's mirror_update_stats: xlate.go
	}
	// A copy's outputs are cut to the mirror's snaplen (emitOutput);
	// an egress mirror met on the way sets its own, and this one's
	// comes back after.
	saved := c.mirrorSnaplen
	c.mirrorSnaplen = m.snaplen
	defer func() { c.mirrorSnaplen = saved }()
	if m.out != nil {
		if !c.sameBundle(m.out) {
			x := c.xvlanIn(vlan)
			c.normalOutput(m.out, vlan, &x)
		}
		return
	}
	// Remote SPAN: flood the copy in the output VLAN, tagged as each
	// port carries that VLAN.
	savedVLANs := c.flow.VLANs
	x := c.xvlanIn(m.outVLAN)
	for _, pt := range c.ports.FloodOrder() {
		if c.sameBundle(pt) || pt.IsPatch() || pt.Bond == nil && pt.Down || !pt.VLAN.includes(m.outVLAN) ||
			c.ports.mirrors.outPorts[pt.OFPort] || pt.Bond != nil && c.bondFloodSkip(pt) {
			continue
		}
		out := pt
		if pt.Bond != nil {
			if out = c.bondOutput(pt, m.outVLAN); out == nil {
				continue
			}
		}
		c.flow.VLANs = c.normalHeader(pt, &x)
		c.emitOutput(out)
		c.flow.VLANs = savedVLANs
	}
}

// mirrorTrunc, before an output of a mirror's copy, cuts that output to
// the mirror's snaplen with the trunc action (the kernel applies it to
// the next output only), as ovs-vswitchd's compose_output_action; without
// the datapath's trunc the flow goes to the slow path, as OVS's.
func (c *xctx) mirrorTrunc() {
	if c.mirrorSnaplen == 0 {
		return
	}
	c.out.Actions = datapath.AppendTrunc(c.out.Actions, c.mirrorSnaplen)
	c.slowIfOff(FeatureTrunc) // backer_features.go
}

// mirrorOut reports whether pt is a mirror output port, which NORMAL
// neither takes packets from nor sends to.
func (c *xctx) mirrorOut(pt *Port) bool {
	return c.ports.mirrors != nil && c.ports.mirrors.outPorts[pt.OFPort]
}
