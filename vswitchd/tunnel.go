package vswitchd

import (
	"github.com/govswitch/govswitch/ofproto"
	"github.com/govswitch/govswitch/ovsdb"
)

// addTunnelPort adds the tunnel interface p (vxlan, geneve, gre, ip6gre)
// to b; options ovs-vswitchd would refuse, or that govswitchd does not
// implement, are an error for Interface.error.
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
