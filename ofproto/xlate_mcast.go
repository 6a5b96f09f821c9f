package ofproto

import (
	"github.com/govswitch/govswitch/datapath"
	"github.com/govswitch/govswitch/flow"
	"github.com/govswitch/govswitch/ofproto/mcast"
)

// NORMAL with multicast snooping (Bridge mcast_snooping_enable), as
// ovs-vswitchd 3.1's xlate_normal: an IP frame to a multicast (not the
// broadcast) address takes this path instead of the MAC table.
//
//   - IGMP and MLD are slow-pathed: every such packet comes to userspace,
//     where it updates the snooping table (on the miss and slow paths,
//     which have the packet), so that members do not age out while their
//     flow sits in the datapath. Reports and leaves go to the router
//     ports and the flood-reports ports; queries and other messages are
//     flooded.
//   - Other IPv4 multicast to 224.0.0.x (and IPv6 to ff02::1) is flooded
//     (RFC 4541 2.1.2).
//   - Multicast to a known group goes to its member ports, the flood
//     ports and the router ports of the VLAN, in that order and each list
//     whole (a port in two lists gets two copies, as in OVS); to an
//     unknown group it is flooded, or with
//     mcast-snooping-disable-flood-unregistered sent to the router and
//     flood ports only.
//
// The megaflow gains what those decisions read, as OVS's: the IP
// protocol, the ICMPv6 type for IPv6, and the whole destination address
// of non-IGMP IPv4 and of non-MLD IPv6.

// mcastNormal is NORMAL's multicast branch for a frame of VLAN vlan,
// internal tags ix, with snooping table ms.
func (c *xctx) mcastNormal(ms *mcast.Table, vlan uint16, ix *xvlan) {
	wc := &c.out.WC
	f := &c.flow
	ports := c.out.mcastPorts[:0]
	defer func() { c.out.mcastPorts = ports[:0] }()
	if f.EthType == flow.EthTypeIPv4 {
		wc.NwProto = 0xff
		if f.NwProto == ipProtoIGMP {
			c.out.Slow |= datapath.SlowAction
			typ := uint8(0)
			var pkt mcast.Frame
			ok := false
			if c.packet != nil {
				if pkt, ok = mcast.Parse(c.packet); ok {
					typ = pkt.Type()
				}
			}
			if ok && c.learn && c.inPort != nil && (mcast.IsIGMPMembership(typ) || typ == mcast.IGMPQuery) {
				ms.Update(&pkt, vlan, c.learnPort(), c.now)
			}
			if !mcast.IsIGMPMembership(typ) {
				c.normalFlood(vlan, ix)
				return
			}
			ports = c.mcastReportPorts(ms, vlan, ports)
			c.mcastOutputs(ports, vlan, ix)
			return
		}
		wc.IPv4Dst = [4]byte{0xff, 0xff, 0xff, 0xff}
		if f.IPv4Dst[0] == 224 && f.IPv4Dst[1] == 0 && f.IPv4Dst[2] == 0 {
			c.normalFlood(vlan, ix)
			return
		}
		ports = c.mcastDataPorts(ms, mcast.IPv4Group(vlan, f.IPv4Dst), vlan, ports)
		c.mcastOutputs(ports, vlan, ix)
		return
	}
	// IPv6.
	wc.NwProto = 0xff
	if f.NwProto == flow.IPProtoICMPv6 {
		wc.TpSrc = 0xffff
		if typ := uint8(f.TpSrc); f.TpSrc <= 0xff && mcast.IsMLD(typ) {
			c.out.Slow |= datapath.SlowAction
			if c.packet != nil && c.learn && c.inPort != nil {
				if pkt, ok := mcast.Parse(c.packet); ok {
					ms.Update(&pkt, vlan, c.learnPort(), c.now)
				}
			}
			if typ == mcast.MLDQuery {
				c.normalFlood(vlan, ix)
				return
			}
			ports = c.mcastReportPorts(ms, vlan, ports)
			c.mcastOutputs(ports, vlan, ix)
			return
		}
	}
	wc.IPv6Dst = ones16
	if f.IPv6Dst == allHosts6 {
		c.normalFlood(vlan, ix)
		return
	}
	ports = c.mcastDataPorts(ms, mcast.Group{VLAN: vlan, Addr: f.IPv6Dst}, vlan, ports)
	c.mcastOutputs(ports, vlan, ix)
}

const ipProtoIGMP = 2

var (
	allHosts6 = [16]byte{0xff, 0x02, 15: 1}
)

// mcastFloodMark is a port-list entry that stands for "flood": an
// unregistered group with flood-unregistered on.
const mcastFloodMark = ^uint32(0)

// mcastReportPorts appends where a report or leave goes: the VLAN's
// router ports, then the flood-reports ports but the input port's.
func (c *xctx) mcastReportPorts(ms *mcast.Table, vlan uint16, ports []uint32) []uint32 {
	ports = ms.Mrouters(vlan, ports)
	return ms.FloodReportsPorts(ports)
}

// mcastDataPorts appends where multicast data to group g goes.
func (c *xctx) mcastDataPorts(ms *mcast.Table, g mcast.Group, vlan uint16, ports []uint32) []uint32 {
	ports, known := ms.Members(g, ports)
	switch {
	case known:
		ports = ms.FloodPorts(ports)
		ports = ms.Mrouters(vlan, ports)
	case ms.FloodUnregistered():
		ports = append(ports, mcastFloodMark)
	default:
		ports = ms.Mrouters(vlan, ports)
		ports = ms.FloodPorts(ports)
	}
	return ports
}

// mcastOutputs outputs the frame to each port of the list in turn (to
// the flood when the list says so), leaving out the input port's bundle
// and ports that are gone.
func (c *xctx) mcastOutputs(ports []uint32, vlan uint16, ix *xvlan) {
	if len(ports) == 1 && ports[0] == mcastFloodMark {
		c.normalFlood(vlan, ix)
		return
	}
	for _, p := range ports {
		pt := c.ports.ByOF(p)
		if pt == nil || c.inPort != nil && c.sameBundle(pt) || p == c.flow.InPort {
			continue
		}
		c.normalOutput(pt, vlan, ix)
	}
}
