package ofproto

import (
	"github.com/govswitch/govswitch/datapath"
	"github.com/govswitch/govswitch/flow"
)

// tunnelInPort is the tunnel port of this bridge that a packet from a
// shared tunnel vport arrived on (nil when it is none of this bridge's),
// found as ovs-vswitchd's tnl_port_receive finds it; the tunnel fields that
// choice read join the megaflow.
func (c *xctx) tunnelInPort(key *flow.Key) *Port {
	bk := c.x.backer
	if bk == nil || key.Tunnel == (flow.Tunnel{}) {
		return nil
	}
	te := bk.set.Load().tunnelReceiver(key)
	if te == nil || te.b.X != c.x {
		return nil
	}
	tunnelReceiveMask(key, &c.out.WC)
	return c.ports.ByOF(te.p.OFPort)
}

// tunnelReceiveMask adds to wc the tunnel fields a tunnel port's receive
// decision reads, those ovs-vswitchd's tnl_wc_init makes exact: the key,
// the outer addresses of the packet's family, the tos, and the df, csum
// and key flags. The outer ttl and UDP ports stay wildcarded.
func tunnelReceiveMask(key *flow.Key, wc *flow.Mask) {
	t := &key.Tunnel
	wc.Tunnel.ID = ^uint64(0)
	if t.IPv6Src != [16]byte{} || t.IPv6Dst != [16]byte{} {
		wc.Tunnel.IPv6Src, wc.Tunnel.IPv6Dst = ones16, ones16
	} else {
		wc.Tunnel.IPv4Src, wc.Tunnel.IPv4Dst = ones4, ones4
	}
	wc.Tunnel.Flags |= flow.TunnelDontFragment | flow.TunnelCsum | flow.TunnelKey
	wc.Tunnel.TOS = 0xff
}

var (
	ones4  = [4]byte{0xff, 0xff, 0xff, 0xff}
	ones16 = [16]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}
)

// tunnelOutput is output to tunnel port pt, as ovs-vswitchd's
// tnl_port_send: the packet's tunnel metadata becomes the port's (or, for
// options set to "flow", the flow's tun_id, tun_src and tun_dst, which
// then join the megaflow), committed as set(tunnel(...)) before an output
// to the vport the datapath's tunnels of the type share, after
// set(skb_mark) for a port with egress_pkt_mark. A flow-based
// destination the flow leaves zero drops the packet, as in OVS. The
// metadata is the flow's again after the output.
func (c *xctx) tunnelOutput(pt *Port) {
	f := &c.flow
	saved := f.Tunnel
	t, ok := c.tunnelHeader(pt)
	if !ok {
		return // no destination: nothing to send to
	}
	// An L3 port (packet_type=legacy_l3) takes the packet without its
	// Ethernet header: pop_eth first (xlate_encap.go).
	var l3 l3Output
	if pt.tunnel.cfg.L3 && !c.beginL3Output(&l3) {
		f.Tunnel = saved
		return
	}
	if cfg := &pt.tunnel.cfg; cfg.EgressMarkSet {
		// As tnl_port_send: the packet leaves with the port's mark,
		// committed as set(skb_mark) before the output, and the flow
		// keeps it after (ovs-vswitchd does not restore it), so the
		// megaflow matches the mark exactly.
		f.Mark = cfg.EgressMark
		c.out.WC.Mark = ^uint32(0)
	}
	c.commitTunnel(&t)
	c.ipfixOutput(pt.DPPort) // ipfix_bridge.go: after the set, so the datapath's egress tunnel key is the port's
	c.out.Actions = datapath.AppendOutput(c.out.Actions, pt.DPPort)
	f.Tunnel = saved
	if pt.tunnel.cfg.L3 {
		c.endL3Output(&l3)
	}
}

// commitTunnel commits the pending header changes and then tunnel
// metadata t as set(tunnel(...)), unless the datapath's packet already
// has it; the flow's tunnel is t after it.
func (c *xctx) commitTunnel(t *flow.Tunnel) {
	c.commit()
	if c.base.Tunnel != *t {
		c.flow.Tunnel = *t
		c.out.Actions = datapath.AppendSet(c.out.Actions, datapath.KeyAttrTunnel, &c.flow)
		c.base.Tunnel = *t
	}
}

// tunnelHeader is the tunnel metadata a packet sent to tunnel port pt
// gets, as tnl_port_send computes it; ok is false when a flow-based
// destination is zero. The flow fields it reads join the megaflow.
func (c *xctx) tunnelHeader(pt *Port) (t flow.Tunnel, ok bool) {
	cfg := &pt.tunnel.cfg
	f := &c.flow
	// A flow-based field depends on the packet only when it came from a
	// tunnel (else it is zero or what the actions set): only then does it
	// join the megaflow, whose key has no tunnel attribute otherwise.
	var discard flow.Mask
	wc := &discard
	if c.inPort != nil && c.inPort.tunnel != nil {
		wc = &c.out.WC
	}
	t = flow.Tunnel{TTL: cfg.TTL, TOS: cfg.TOS}
	if cfg.OutKeyFlow {
		t.ID = f.Tunnel.ID
		wc.Tunnel.ID = ^uint64(0)
	} else {
		t.ID = cfg.OutKey
	}
	if cfg.OutKeyPresent {
		t.Flags |= flow.TunnelKey
	}
	// A flow-based destination is the flow's IPv6 one when it has that
	// and no IPv4 one (set_field:...->tun_ipv6_dst).
	ipv6 := isIPv6OnlyType(cfg.Type) || cfg.Remote.Is6() ||
		cfg.RemoteFlow && f.Tunnel.IPv4Dst == [4]byte{} && f.Tunnel.IPv6Dst != [16]byte{}
	switch {
	case cfg.RemoteFlow && ipv6:
		t.IPv6Dst = f.Tunnel.IPv6Dst
		wc.Tunnel.IPv6Dst = ones16
	case cfg.RemoteFlow:
		t.IPv4Dst = f.Tunnel.IPv4Dst
		wc.Tunnel.IPv4Dst = ones4
	case ipv6:
		t.IPv6Dst = cfg.Remote.As16()
	default:
		t.IPv4Dst = cfg.Remote.As4()
	}
	if t.IPv4Dst == [4]byte{} && t.IPv6Dst == [16]byte{} {
		return t, false
	}
	switch {
	case cfg.LocalFlow && ipv6:
		t.IPv6Src = f.Tunnel.IPv6Src
		wc.Tunnel.IPv6Src = ones16
	case cfg.LocalFlow:
		t.IPv4Src = f.Tunnel.IPv4Src
		wc.Tunnel.IPv4Src = ones4
	case cfg.Local.Is6():
		t.IPv6Src = cfg.Local.As16()
	case cfg.Local.Is4():
		t.IPv4Src = cfg.Local.As4()
	}
	ip := f.EthType == flow.EthTypeIPv4 || f.EthType == flow.EthTypeIPv6
	if ip {
		// The outer header takes the inner ECN bits, as in OVS
		// (tnl_port_send matches them).
		c.out.WC.NwTos |= 3
	}
	if cfg.TOSInherit && ip {
		t.TOS = f.NwTos &^ 3
		c.out.WC.NwTos |= 0xfc
	}
	if cfg.TTLInherit && ip {
		t.TTL = f.NwTTL
		c.out.WC.NwTTL = 0xff
	}
	if cfg.DontFragment {
		t.Flags |= flow.TunnelDontFragment
	}
	if cfg.Csum {
		t.Flags |= flow.TunnelCsum
	}
	t.TpDst = cfg.DstPort
	if cfg.Type == datapath.TunnelGeneve {
		c.tunMDOutput(&t, wc) // tun_metadata.go
	}
	if isERSPANType(cfg.Type) {
		erspanOutput(cfg, &t, &f.Tunnel, wc)
	}
	if cfg.GBP {
		// As tnl_port_send leaves them: the packet's group policy ID
		// and flags, as it arrived with them or as set_field made
		// them, go into the GBP header; the megaflow matches what
		// arrived (an untunnelled packet has none: fitTunnel).
		t.GbpID, t.GbpFlags = f.Tunnel.GbpID, f.Tunnel.GbpFlags
		wc.Tunnel.GbpID, wc.Tunnel.GbpFlags = 0xffff, 0xff
	}
	return t, true
}

// erspanOutput fills the ERSPAN metadata of tunnel t, sent to an erspan
// or ip6erspan port of configuration cfg, as tnl_port_send does: each
// field is the port's, or for one set to "flow" the packet's (ft, whose
// bits then join the megaflow in wc). The kernel builds the ERSPAN header
// of the packet's version from it; with no version it drops the packet,
// as it does for ovs-vswitchd.
func erspanOutput(cfg *TunnelConfig, t, ft *flow.Tunnel, wc *flow.Mask) {
	t.ErspanVer, t.ErspanIdx, t.ErspanDir, t.ErspanHwid = cfg.ErspanVer, cfg.ErspanIdx, cfg.ErspanDir, cfg.ErspanHwid
	if cfg.ErspanVerFlow {
		t.ErspanVer = ft.ErspanVer
		wc.Tunnel.ErspanVer = 0xff
	}
	if cfg.ErspanIdxFlow {
		t.ErspanIdx = ft.ErspanIdx
		wc.Tunnel.ErspanIdx = ^uint32(0)
	}
	if cfg.ErspanDirFlow {
		t.ErspanDir = ft.ErspanDir
		wc.Tunnel.ErspanDir = 0xff
	}
	if cfg.ErspanHwidFlow {
		t.ErspanHwid = ft.ErspanHwid
		wc.Tunnel.ErspanHwid = 0xff
	}
	// The datapath carries the fields of the version only.
	switch t.ErspanVer {
	case 1:
		t.ErspanDir, t.ErspanHwid = 0, 0
	case 2:
		t.ErspanIdx = 0
	default:
		t.ErspanIdx, t.ErspanDir, t.ErspanHwid = 0, 0, 0
	}
}

// tunnelPortOf is the tunnel port of b a packet with key (from a shared
// tunnel vport) arrived on, nil when none: a packet-in names it as its
// in_port.
func (b *Bridge) tunnelPortOf(key *flow.Key) *Port {
	if b.Backer == nil || key.Tunnel == (flow.Tunnel{}) {
		return nil
	}
	te := b.Backer.set.Load().tunnelReceiver(key)
	if te == nil || te.b != b {
		return nil
	}
	return b.Ports.Snapshot().ByOF(te.p.OFPort)
}
