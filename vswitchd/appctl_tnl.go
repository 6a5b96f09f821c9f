package vswitchd

import (
	"fmt"
	"strings"

	"github.com/govswitch/govswitch/datapath"
	"github.com/govswitch/govswitch/flow"
	"github.com/govswitch/govswitch/ofproto"
)

// tnlPortsUsage is tnl/ports/show's help. ovs-vswitchd lists there the
// ports its userspace tunnel termination listens on, which it has only
// with the userspace datapath (with the kernel's it lists none);
// govswitchd lists the kernel's shared tunnel vports, which are what
// terminate its tunnels.
const tnlPortsUsage = "[-v] (the datapath's shared tunnel vports)"

// tnlPortsShow is tnl/ports/show [-v]: "Listening ports:", then each
// shared tunnel vport as "NAME (DP_PORT) ref_cnt=N", N the tunnel ports
// of every bridge on it, in ovs-vswitchd's shape. With -v each line is
// instead what the vport receives, "NAME (DP_PORT) : " and the packets in
// ovs-dpctl's flow syntax, one line per address family: the devices
// govswitchd makes (in collect-metadata mode) take their tunnel's packets
// to any local address, so no eth(dst=...) nor ipv4(dst=...) is matched;
// vxlan and geneve take both IPv4 and IPv6, the GRE types the family of
// their type.
func (d *Daemon) tnlPortsShow(args []string) (string, error) {
	verbose := false
	if len(args) > 0 {
		if !strings.EqualFold(args[0], "-v") {
			return "", fmt.Errorf("tnl/ports/show: unknown option %q (-v is the only one)", args[0])
		}
		verbose = true
	}
	var sb strings.Builder
	sb.WriteString("Listening ports:\n")
	for _, bk := range d.backers() {
		tvs, err := bk.TunnelVports()
		if err != nil {
			return "", err
		}
		for _, tv := range tvs {
			if !verbose {
				fmt.Fprintf(&sb, "%s (%d) ref_cnt=%d\n", tv.Name, tv.PortNo, tv.Users)
				continue
			}
			for _, m := range tunnelVportMatches(&tv) {
				fmt.Fprintf(&sb, "%s (%d) : %s\n", tv.Name, tv.PortNo, m)
			}
		}
	}
	return sb.String(), nil
}

// tunnelVportMatches is what shared tunnel vport tv receives, per address
// family, in ovs-dpctl's flow syntax (see tnlPortsShow).
func tunnelVportMatches(tv *ofproto.TunnelVport) []string {
	var ethTypes []uint16
	proto := uint8(47) // GRE
	switch tv.Type {
	case datapath.TunnelVXLAN, datapath.TunnelGeneve:
		ethTypes, proto = []uint16{flow.EthTypeIPv4, flow.EthTypeIPv6}, 17
	case datapath.TunnelIP6GRE, datapath.TunnelIP6ERSPAN:
		ethTypes = []uint16{flow.EthTypeIPv6}
	default:
		ethTypes = []uint16{flow.EthTypeIPv4}
	}
	out := make([]string, 0, len(ethTypes))
	for _, et := range ethTypes {
		k := flow.Key{EthType: et, NwProto: proto}
		m := flow.Mask{EthType: 0xffff, NwProto: 0xff, NwFrag: 3}
		if proto == 17 {
			k.TpDst, m.TpDst = tv.DstPort, 0xffff
		}
		// No Ethernet field is matched: ovs-dpctl's syntax would
		// print an empty eth() for the key's L2 layer.
		out = append(out, strings.TrimPrefix(flow.Format(&k, &m), "eth(),"))
	}
	return out
}
