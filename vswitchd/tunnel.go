package vswitchd

import (
	"strings"

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
