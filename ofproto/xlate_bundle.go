package ofproto

import "github.com/govswitch/govswitch/ofproto/openflow"

// bundle chooses one live member port, as ovs-vswitchd's bundle_execute,
// and outputs to it (bundle) or writes its number into the destination
// (bundle_load; OpenFlow 1.0's OFPP_NONE, 0xffff, when no member lives).
// A member lives when its port exists and can send (portLive); the
// reserved ports bundle allows (IN_PORT, TABLE, NORMAL, FLOOD, ALL, NONE)
// always live. Liveness is no datapath field: a port's change of state
// makes the revalidator translate again.
func (c *xctx) bundle(a *openflow.Action) {
	b := a.Hash
	if b == nil {
		return
	}
	port := openflow.PortAny
	switch b.Algorithm {
	case openflow.BundleActiveBackup:
		for _, m := range b.Members {
			if c.memberLive(m) {
				port = m
				break
			}
		}
	case openflow.BundleHRW:
		if len(b.Members) > 1 {
			maskHashFields(&c.flow, &c.out.WC, b.Fields)
		}
		h := flowHashFields(&c.flow, b.Fields, b.Basis)
		best, bestH := -1, uint32(0)
		for i, m := range b.Members {
			if !c.memberLive(m) {
				continue
			}
			if w := hash2Words(uint32(i), h); best < 0 || w > bestH {
				best, bestH = i, w
			}
		}
		if best >= 0 {
			port = b.Members[best]
		}
	}
	if a.Field != openflow.FieldNone {
		p, _ := openflow.Port32To10(port)
		c.loadSubfield(a.Field, a.Ofs, a.NBits, uint64(p))
		return
	}
	c.output(port, 0)
}

// memberLive is ovs-vswitchd's member_enabled_cb.
func (c *xctx) memberLive(p uint32) bool {
	switch p {
	case openflow.PortInPort, openflow.PortTable, openflow.PortNormal, openflow.PortFlood, openflow.PortAll, openflow.PortAny:
		return true
	case openflow.PortController:
		return false
	}
	return c.portLive(p)
}
