package kernel

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net"

	"github.com/govswitch/govswitch/datapath"
	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netlink/nl"
	"golang.org/x/sys/unix"
)

// tunnelMTU is the MTU ovs-vswitchd gives the tunnel devices it creates:
// as large as the device allows, so that the datapath, not the device,
// decides what fits.
const tunnelMTU = 65000

// AddTunnelVport returns the shared vport of tunnels of kind on dstPort,
// as ovs-vswitchd 3.1 makes it on Linux (lib/dpif-netlink-rtnl.c): a
// network device of the kind's lightweight-tunnel type in collect-metadata
// mode (vxlan and geneve "external" on dstPort, gretap, ip6gretap, erspan,
// ip6erspan, gre for TunnelGREL3, vxlan in GPE mode for TunnelVXLANGPE, vxlan
// with IFLA_VXLAN_GBP for TunnelVXLANGBP), made
// over rtnetlink and attached as a netdev vport. Where the kernel refuses
// the device (a module missing, a kernel without metadata mode), the legacy
// tunnel vport type (OVS_VPORT_TYPE_VXLAN, GENEVE, GRE, with the UDP port
// in OVS_TUNNEL_ATTR_DST_PORT) is tried, as ovs-vswitchd falls back to it;
// ip6gre, erspan and ip6erspan have no legacy type. A vport of that name the datapath already has
// (an earlier run's) is returned as it is. It needs CAP_NET_ADMIN.
func (d *Datapath) AddTunnelVport(kind string, dstPort uint16) (datapath.Vport, error) {
	if dstPort == 0 {
		dstPort = datapath.TunnelDefaultPort(kind)
	}
	name := datapath.TunnelVportName(kind, dstPort)
	if vp, err := d.Vport(name); err == nil {
		// gre_sys is a "gre" device for TunnelGREL3, a "gretap" one
		// for TunnelGRE: one left over of the other kind would carry
		// the wrong packets.
		if l, lerr := netlink.LinkByName(name); lerr == nil && (kind == datapath.TunnelGREL3) != (l.Type() == "gre") &&
			(kind == datapath.TunnelGRE || kind == datapath.TunnelGREL3) {
			return datapath.Vport{}, fmt.Errorf("add tunnel vport %s: the datapath has it as a %s device", name, l.Type())
		}
		// So is vxlan_sys_PORT a vxlan device in GPE mode (without
		// Ethernet: ARPHRD_NONE) for TunnelVXLANGPE only, and one
		// with GBP for TunnelVXLANGBP only.
		if l, lerr := netlink.LinkByName(name); lerr == nil && l.Type() == "vxlan" && isVxlanKind(kind) && vxlanMode(l) != kind {
			return datapath.Vport{}, fmt.Errorf("add tunnel vport %s: the datapath has it as a vxlan device %s", name, vxlanModeText(vxlanMode(l)))
		}
		return vp, nil
	}
	rtErr := d.makeTunnelDevice(kind, name, dstPort)
	if rtErr == nil {
		vp, err := d.AddVport(datapath.VportSpec{Name: name, Type: datapath.VportNetdev})
		if err == nil {
			return vp, nil
		}
		if l, lerr := netlink.LinkByName(name); lerr == nil {
			netlink.LinkDel(l)
		}
		rtErr = err
	}
	legacy := datapath.TunnelLegacyType(kind)
	if legacy == 0 {
		return datapath.Vport{}, fmt.Errorf("add tunnel vport %s: %w", name, rtErr)
	}
	vp, err := d.AddVport(datapath.VportSpec{Name: name, Type: legacy, DstPort: dstPort})
	if err != nil {
		return datapath.Vport{}, fmt.Errorf("add tunnel vport %s: over rtnetlink: %v; as a %s vport: %w", name, rtErr, legacy, err)
	}
	return vp, nil
}

// makeTunnelDevice creates (or finds, when one of the right kind is left
// over) the collect-metadata device name of kind and sets it up.
func (d *Datapath) makeTunnelDevice(kind, name string, dstPort uint16) error {
	attrs := netlink.NewLinkAttrs()
	attrs.Name = name
	attrs.MTU = tunnelMTU
	var link netlink.Link
	switch kind {
	case datapath.TunnelVXLAN:
		link = &netlink.Vxlan{LinkAttrs: attrs, FlowBased: true, Port: int(dstPort), UDP6ZeroCSumRx: true}
	case datapath.TunnelVXLANGBP:
		// As dpif_netlink_rtnl_create for exts=gbp: the vxlan device
		// of TunnelVXLAN with IFLA_VXLAN_GBP.
		link = &netlink.Vxlan{LinkAttrs: attrs, FlowBased: true, Port: int(dstPort), UDP6ZeroCSumRx: true, GBP: true}
	case datapath.TunnelGeneve:
		link = &netlink.Geneve{LinkAttrs: attrs, FlowBased: true, Dport: dstPort}
	case datapath.TunnelGRE:
		link = &netlink.Gretap{LinkAttrs: attrs, FlowBased: true, Local: net.IPv4zero}
	case datapath.TunnelIP6GRE:
		link = &netlink.Gretap{LinkAttrs: attrs, FlowBased: true, Local: net.IPv6zero}
	case datapath.TunnelERSPAN, datapath.TunnelIP6ERSPAN:
		return makeErspanDevice(kind, name)
	case datapath.TunnelVXLANGPE:
		return makeVxlanGPEDevice(name, dstPort)
	case datapath.TunnelGREL3:
		// Its packets reach the datapath without an Ethernet header
		// (the device is ARPHRD_NONE in metadata mode), as
		// ovs-vswitchd's legacy_l3 "gre" device.
		link = &netlink.Gretun{LinkAttrs: attrs, FlowBased: true, Local: net.IPv4zero}
	default:
		return fmt.Errorf("tunnel kind %q: %w", kind, datapath.ErrNotSupported)
	}
	if old, err := netlink.LinkByName(name); err == nil {
		if old.Type() != link.Type() {
			return fmt.Errorf("device %s exists and is a %s, not a %s", name, old.Type(), link.Type())
		}
		if isVxlanKind(kind) && vxlanMode(old) != kind {
			return fmt.Errorf("device %s exists and is a vxlan device %s", name, vxlanModeText(vxlanMode(old)))
		}
		link = old
	} else if err := netlink.LinkAdd(link); err != nil {
		// Some kernels refuse the large MTU at creation: the device's
		// default serves.
		attrs.MTU = 0
		link2 := link
		switch l := link2.(type) {
		case *netlink.Vxlan:
			l.LinkAttrs = attrs
		case *netlink.Geneve:
			l.LinkAttrs = attrs
		case *netlink.Gretap:
			l.LinkAttrs = attrs
		case *netlink.Gretun:
			l.LinkAttrs = attrs
		}
		if err2 := netlink.LinkAdd(link2); err2 != nil {
			return fmt.Errorf("create %s device %s: %w", link.Type(), name, errors.Join(err, err2))
		}
	}
	if err := netlink.LinkSetUp(link); err != nil {
		netlink.LinkDel(link)
		return fmt.Errorf("set %s up: %w", name, err)
	}
	return nil
}

// DeleteTunnelVport deletes the vport and, for a netdev vport, the device
// AddTunnelVport made for it (the kernel deletes a legacy vport's own).
func (d *Datapath) DeleteTunnelVport(vp datapath.Vport) error {
	err := d.DeleteVport(vp.PortNo)
	if vp.Type == datapath.VportNetdev {
		if l, lerr := netlink.LinkByName(vp.Name); lerr == nil {
			if derr := netlink.LinkDel(l); derr != nil {
				err = errors.Join(err, fmt.Errorf("delete device %s: %w", vp.Name, derr))
			}
		}
	}
	return err
}

var _ datapath.TunnelVporter = (*Datapath)(nil)

// bareudp's rtnetlink attributes (IFLA_BAREUDP_*, linux/if_link.h) and
// the low end of the source ports ovs-vswitchd gives it.
const (
	iflaBareUDPPort       = 1
	iflaBareUDPEthertype  = 2
	iflaBareUDPSrcPortMin = 3
	iflaBareUDPMultiproto = 4
	bareUDPSrcPortMin     = 49153
)

// ProbeTunnelVport is datapath.KernelTunnelProber's: the steps of
// ovs-vswitchd's dpif_netlink_port_add for a bareudp or gtpu port,
// undone at once.
func (d *Datapath) ProbeTunnelVport(kind string, dstPort, ethertype uint16, multiproto bool) error {
	var compat datapath.VportType
	switch kind {
	case datapath.TunnelBareUDP:
		compat = datapath.VportBareUDP
	case datapath.TunnelGTPU:
		compat = datapath.VportGTPU
		if dstPort == 0 {
			dstPort = datapath.TunnelDefaultPort(kind)
		}
	default:
		return fmt.Errorf("tunnel kind %q: %w", kind, datapath.ErrNotSupported)
	}
	name := datapath.TunnelVportName(kind, dstPort)
	if kind == datapath.TunnelBareUDP {
		err := createRawLink("bareudp", name, func(data *nl.RtAttr) {
			var b [2]byte
			binary.BigEndian.PutUint16(b[:], ethertype)
			data.AddRtAttr(iflaBareUDPEthertype, append([]byte(nil), b[:]...))
			data.AddRtAttr(iflaBareUDPSrcPortMin, nl.Uint16Attr(bareUDPSrcPortMin))
			binary.BigEndian.PutUint16(b[:], dstPort)
			data.AddRtAttr(iflaBareUDPPort, append([]byte(nil), b[:]...))
			if multiproto {
				data.AddRtAttr(iflaBareUDPMultiproto, nil)
			}
		})
		if err == nil {
			if l, lerr := netlink.LinkByName(name); lerr == nil {
				netlink.LinkDel(l)
			}
			return fmt.Errorf("the kernel made bareudp device %s, but govswitchd does not carry bareudp tunnels: %w", name, datapath.ErrNotSupported)
		}
	}
	vp, err := d.AddVport(datapath.VportSpec{Name: name, Type: compat})
	if err != nil {
		return err
	}
	d.DeleteVport(vp.PortNo)
	return fmt.Errorf("the kernel took %s vport %s, but govswitchd does not carry %s tunnels: %w", compat, name, kind, datapath.ErrNotSupported)
}

var _ datapath.KernelTunnelProber = (*Datapath)(nil)

// makeErspanDevice creates (or finds) the collect-metadata erspan or
// ip6erspan device name, as ovs-vswitchd's dpif_netlink_rtnl_create does:
// the rtnetlink kind named for the tunnel type, IFLA_GRE_COLLECT_METADATA
// and nothing else in its data (the version, index, direction and
// hardware ID come with each packet's tunnel metadata), up, with the
// large MTU. The netlink package has no link type for these kinds, so the
// request is built here.
func makeErspanDevice(kind, name string) error {
	if old, err := netlink.LinkByName(name); err == nil {
		if old.Type() != kind {
			return fmt.Errorf("device %s exists and is a %s, not a %s", name, old.Type(), kind)
		}
		if err := netlink.LinkSetUp(old); err != nil {
			return fmt.Errorf("set %s up: %w", name, err)
		}
		return nil
	}
	return createRawLink(kind, name, func(data *nl.RtAttr) {
		data.AddRtAttr(nl.IFLA_GRE_COLLECT_METADATA, nil)
	})
}

// makeVxlanGPEDevice creates (or finds) the vxlan device name in GPE mode
// on UDP port dstPort, as ovs-vswitchd's dpif_netlink_rtnl_create makes
// it for exts=gpe: collect metadata, learning off (the kernel refuses GPE
// with learning, which it turns on when the attribute is absent), zero
// UDP checksums over IPv6 taken, IFLA_VXLAN_GPE. The device has no
// Ethernet (ARPHRD_NONE): the GPE header's next-protocol field says what
// it carries, IPv4 or IPv6 from the packet's ethertype. The netlink
// package's Vxlan has no GPE flag, so the request is built here.
func makeVxlanGPEDevice(name string, dstPort uint16) error {
	if old, err := netlink.LinkByName(name); err == nil {
		if old.Type() != "vxlan" || !isVxlanGPE(old) {
			return fmt.Errorf("device %s exists and is a %s (%s), not a vxlan device in GPE mode", name, old.Type(), old.Attrs().EncapType)
		}
		if err := netlink.LinkSetUp(old); err != nil {
			return fmt.Errorf("set %s up: %w", name, err)
		}
		return nil
	}
	return createRawLink("vxlan", name, func(data *nl.RtAttr) {
		data.AddRtAttr(unix.IFLA_VXLAN_LEARNING, nl.Uint8Attr(0))
		data.AddRtAttr(unix.IFLA_VXLAN_COLLECT_METADATA, nl.Uint8Attr(1))
		data.AddRtAttr(unix.IFLA_VXLAN_UDP_ZERO_CSUM6_RX, nl.Uint8Attr(1))
		data.AddRtAttr(unix.IFLA_VXLAN_GPE, nil)
		var port [2]byte
		binary.BigEndian.PutUint16(port[:], dstPort)
		data.AddRtAttr(unix.IFLA_VXLAN_PORT, port[:])
	})
}

// isVxlanGPE reports whether vxlan device l is in GPE mode: the only
// vxlan devices without Ethernet (the netlink package does not decode
// IFLA_VXLAN_GPE).
func isVxlanGPE(l netlink.Link) bool {
	return l.Type() == "vxlan" && l.Attrs().EncapType == "none"
}

// isVxlanKind reports whether tunnel kind's device is a vxlan one.
func isVxlanKind(kind string) bool {
	return kind == datapath.TunnelVXLAN || kind == datapath.TunnelVXLANGPE || kind == datapath.TunnelVXLANGBP
}

// vxlanMode is the tunnel kind whose device vxlan device l is: in GPE
// mode, with GBP, or plain.
func vxlanMode(l netlink.Link) string {
	switch {
	case isVxlanGPE(l):
		return datapath.TunnelVXLANGPE
	case isVxlanGBP(l):
		return datapath.TunnelVXLANGBP
	}
	return datapath.TunnelVXLAN
}

// vxlanModeText words vxlanMode's answer for an error.
func vxlanModeText(kind string) string {
	switch kind {
	case datapath.TunnelVXLANGPE:
		return "in GPE mode"
	case datapath.TunnelVXLANGBP:
		return "with GBP"
	}
	return "without GPE or GBP"
}

// isVxlanGBP reports whether vxlan device l has the Group Based Policy
// extension (IFLA_VXLAN_GBP).
func isVxlanGBP(l netlink.Link) bool {
	v, ok := l.(*netlink.Vxlan)
	return ok && v.GBP
}

// createRawLink creates network device name of rtnetlink kind, up, with
// the large MTU (or the device's default where that is refused, as for
// the other kinds), and the IFLA_INFO_DATA attributes data adds.
func createRawLink(kind, name string, data func(*nl.RtAttr)) error {
	create := func(mtu uint32) error {
		req := nl.NewNetlinkRequest(unix.RTM_NEWLINK, unix.NLM_F_CREATE|unix.NLM_F_EXCL|unix.NLM_F_ACK)
		msg := nl.NewIfInfomsg(unix.AF_UNSPEC)
		msg.Flags, msg.Change = unix.IFF_UP, unix.IFF_UP
		req.AddData(msg)
		req.AddData(nl.NewRtAttr(unix.IFLA_IFNAME, nl.ZeroTerminated(name)))
		if mtu != 0 {
			req.AddData(nl.NewRtAttr(unix.IFLA_MTU, nl.Uint32Attr(mtu)))
		}
		info := nl.NewRtAttr(unix.IFLA_LINKINFO, nil)
		info.AddRtAttr(nl.IFLA_INFO_KIND, nl.NonZeroTerminated(kind))
		data(info.AddRtAttr(nl.IFLA_INFO_DATA, nil))
		req.AddData(info)
		_, err := req.Execute(unix.NETLINK_ROUTE, 0)
		return err
	}
	if err := create(tunnelMTU); err != nil {
		if err2 := create(0); err2 != nil {
			return fmt.Errorf("create %s device %s: %w", kind, name, errors.Join(err, err2))
		}
	}
	return nil
}
