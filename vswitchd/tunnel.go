package vswitchd

import (
	"strings"

	"github.com/govswitch/govswitch/datapath"
	"github.com/govswitch/govswitch/flow"
	"github.com/govswitch/govswitch/ofproto"
	"github.com/govswitch/govswitch/ovsdb"
)

// addTunnelPort adds the tunnel interface p (vxlan, geneve, gre, ip6gre,
// erspan, ip6erspan) to b; options ovs-vswitchd would refuse, or that
// govswitchd does not implement, are an error for Interface.error.
func addTunnelPort(b *ofproto.Bridge, p *ovsdb.PortConfig, ofport uint32, v ofproto.PortVLAN) error {
	cfg, err := ofproto.ParseTunnelConfig(p.Name, p.Type, p.Options)
	if err != nil {
		return err
	}
	_, err = b.AddTunnelPort(p.Name, cfg, ofport, v)
	return err
}

// tunnelOptionsText is p's options as the database's PortConfig.Tunnel
// has them, "" for a port that is not a tunnel.
func tunnelOptionsText(p *ofproto.Port) string { return p.TunnelOptions() }

// dpctlTunnelConfig is the configuration dpctl/show prints after a
// shared tunnel vport's kind, as ovs-dpctl shows it: ovs-dpctl opens the
// device as a netdev of that type with no options, so it prints the
// defaults of one, where an ERSPAN type's include its version 0.
func dpctlTunnelConfig(kind string) string {
	if kind == datapath.TunnelERSPAN || kind == datapath.TunnelIP6ERSPAN {
		return "erspan_ver=0, packet_type=ptap"
	}
	return "packet_type=ptap"
}

// tunnelShowConfig is what dpif/show prints after a tunnel port's type, as
// ovs-vswitchd prints its netdev's configuration: ": k=v, k=v" with the
// options sorted by name; "" for other ports.
func tunnelShowConfig(p *ofproto.Port) string {
	opts := p.TunnelOptions() // "k=v,k=v," sorted
	if opts == "" {
		return ""
	}
	return ": " + strings.ReplaceAll(strings.TrimSuffix(opts, ","), ",", ", ")
}

// dumpedTunnelMask is m with the tunnel fields ovs-dpctl would not print
// cleared: the kernel's masks always carry a tunnel attribute, but its
// keys carry one only for a tunnelled packet, without the zero tos and UDP
// ports and, without the key flag, the id; ovs-dpctl prints the fields
// the key has. The result is a copy; m is not changed.
func dumpedTunnelMask(k *flow.Key, m *flow.Mask) *flow.Mask {
	t := &k.Tunnel
	if m.Tunnel == (flow.Tunnel{}) {
		return m
	}
	c := *m
	mt := &c.Tunnel
	if *t == (flow.Tunnel{}) {
		*mt = flow.Tunnel{}
		return &c
	}
	if t.Flags&flow.TunnelKey == 0 {
		mt.ID = 0
	}
	if t.IPv4Src == ([4]byte{}) {
		mt.IPv4Src = [4]byte{}
	}
	if t.IPv4Dst == ([4]byte{}) {
		mt.IPv4Dst = [4]byte{}
	}
	if t.IPv6Src == ([16]byte{}) {
		mt.IPv6Src = [16]byte{}
	}
	if t.IPv6Dst == ([16]byte{}) {
		mt.IPv6Dst = [16]byte{}
	}
	if t.TOS == 0 {
		mt.TOS = 0
	}
	if t.TpSrc == 0 {
		mt.TpSrc = 0
	}
	if t.TpDst == 0 {
		mt.TpDst = 0
	}
	return &c
}
