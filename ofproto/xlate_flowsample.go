package ofproto

import "github.com/govswitch/govswitch/ofproto/openflow"

// flowSample translates the sample action (NXAST_SAMPLE, SAMPLE2,
// SAMPLE3) as ovs-vswitchd's xlate_sample_action: on a bridge with IPFIX
// (a bridge exporter or any collector set) it commits the pending header
// changes and appends a datapath sample action with the 16-bit
// probability scaled to 32 bits (p<<16|p: the same fraction) around a
// userspace action carrying a flow-sample cookie: the collector set,
// observation domain and point, the sampling port's datapath port
// (ODPP_NONE without one) and the direction. The IPFIX upcall
// (ipfix_bridge.go) exports the sample through the collector set's
// exporter. On a bridge without IPFIX the action does nothing, as in
// OVS. A sampling port that is the packet's input port samples it
// entering, as with none. With the collector set's tunnel sampling and a
// tunnel port (of a type IPFIX has tunnel elements for) as sampling port,
// the port's tunnel metadata is committed first (set(tunnel(...)), as
// an output to it would) and the userspace action names the tunnel's
// datapath port, so that the upcall carries the datapath's egress tunnel
// key for the record's tunnel elements.
func (c *xctx) flowSample(a *openflow.Action) {
	st := c.x.ipfix.Load()
	if st == nil {
		return
	}
	out, tunOut := odppNone, odppNone
	var tunPort *Port
	if a.Port != openflow.PortAny && a.Port != c.flow.InPort {
		pt := c.ports.ByOF(a.Port)
		if pt == nil || pt.IsPatch() {
			return // OVS: "can't use unknown port in flow sample action"; the rest translates
		}
		out = pt.DPPort
		if exp := st.sets[a.Queue]; exp != nil && exp.Config().TunnelSampling && c.ipfixTunnelPort(out) {
			tunOut, tunPort = out, pt
		}
	}
	c.commit()
	if tunPort != nil {
		saved := c.flow.Tunnel
		if t, ok := c.tunnelHeader(tunPort); ok {
			c.commitTunnel(&t)
		}
		c.flow.Tunnel = saved
	}
	p := uint32(a.MaxLen)
	ck := SampleCookie{Type: cookieTypeFlowSample, InPort: ovsPort(c.flow.InPort), UUID: st.uuid, Probability: a.MaxLen,
		CollectorSet: a.Queue, Domain: a.Group, Point: uint32(a.Load), Output: out, Direction: uint32(a.TTL)}
	c.ipfixSample(p<<16|p, &ck, tunOut)
}
