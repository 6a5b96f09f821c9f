package datapath

import "fmt"

// TunnelKinds are the tunnel types a datapath's shared tunnel vports carry,
// as Interface.type names them.
const (
	TunnelVXLAN  = "vxlan"
	TunnelGeneve = "geneve"
	TunnelGRE    = "gre"
	TunnelIP6GRE = "ip6gre"
	// ERSPAN type II and III over GRE (the version is per packet, in
	// the tunnel metadata), over IPv4 and IPv6.
	TunnelERSPAN    = "erspan"
	TunnelIP6ERSPAN = "ip6erspan"
	// TunnelGREL3 is GRE with options:packet_type=legacy_l3: the
	// packets in the tunnel have no Ethernet header. Its vport is
	// gre_sys too, a "gre" device where TunnelGRE's is a "gretap", so
	// the two cannot share a datapath.
	TunnelGREL3 = "gre_l3"
	// TunnelVXLANGPE is vxlan with options:exts=gpe and
	// packet_type=legacy_l3: VXLAN-GPE, whose header names the inner
	// protocol, carrying IP packets with no Ethernet header. Its vport
	// is vxlan_sys_PORT too, a vxlan device in GPE mode (ARPHRD_NONE)
	// where TunnelVXLAN's carries Ethernet frames, so the two cannot
	// share a UDP port.
	TunnelVXLANGPE = "vxlan_gpe"
	// TunnelVXLANGBP is vxlan with options:exts=gbp: VXLAN Group Based
	// Policy, whose header carries a 16-bit group policy ID and flags
	// (flow.Tunnel.GbpID, GbpFlags). Its vport is vxlan_sys_PORT too, a
	// vxlan device with IFLA_VXLAN_GBP, so ports with and without GBP
	// cannot share a UDP port, as in ovs-vswitchd.
	TunnelVXLANGBP = "vxlan_gbp"
	// TunnelBareUDP and TunnelGTPU are tunnel types govswitchd does not
	// carry; KernelTunnelProber says what the kernel makes of them.
	TunnelBareUDP = "bareudp"
	TunnelGTPU    = "gtpu"
)

// KernelTunnelProber is a datapath that can try to add the vport of a
// tunnel type govswitchd does not carry (TunnelBareUDP, TunnelGTPU) as
// ovs-vswitchd 3.1 adds it on Linux, so the switch refuses it with the
// kernel's own answer.
type KernelTunnelProber interface {
	// ProbeTunnelVport tries to add the vport of kind on dstPort, as
	// ovs-vswitchd does: for bareudp, a bareudp device over rtnetlink
	// carrying payload ethertype (all IP or MPLS with multiproto) and a
	// netdev vport, else the compat vport type; for gtpu the compat type
	// only. Whatever it made it removes again. It returns the kernel's
	// error where the kernel refuses the vport, as ovs-vswitchd would
	// meet it, and an error wrapping ErrNotSupported where the kernel
	// would have taken it: govswitchd has no translation for the type.
	ProbeTunnelVport(kind string, dstPort, ethertype uint16, multiproto bool) error
}

// TunnelVporter is a datapath that makes the shared tunnel vports itself,
// as ovs-vswitchd does on Linux: a lightweight-tunnel network device in
// collect-metadata mode created over rtnetlink and attached as a netdev
// vport, or the legacy tunnel vport type where that fails. A datapath that
// is not one (the in-memory datapath) gets the legacy vport types through
// AddVport.
type TunnelVporter interface {
	// AddTunnelVport returns the vport for tunnels of kind (TunnelVXLAN,
	// ...) on UDP port dstPort (0: the kind's default; ignored for GRE),
	// named as TunnelVportName says: the one the datapath already has,
	// or a new one.
	AddTunnelVport(kind string, dstPort uint16) (Vport, error)
	// DeleteTunnelVport deletes a vport AddTunnelVport returned, and the
	// network device made for it.
	DeleteTunnelVport(vp Vport) error
}

// TunnelDefaultPort is the IANA UDP port of a UDP tunnel kind, 0 for GRE.
func TunnelDefaultPort(kind string) uint16 {
	switch kind {
	case TunnelVXLAN, TunnelVXLANGPE, TunnelVXLANGBP:
		// ovs-vswitchd's default for VXLAN-GPE and -GBP is VXLAN's too.
		return 4789
	case TunnelGeneve:
		return 6081
	case TunnelGTPU:
		return 2152
	}
	return 0
}

// TunnelVportName is the name ovs-vswitchd gives the shared vport of
// tunnels of kind on dstPort: vxlan_sys_4789, genev_sys_6081, gre_sys,
// ip6gre_sys, erspan_sys, ip6erspan_sys.
func TunnelVportName(kind string, dstPort uint16) string {
	if dstPort == 0 {
		dstPort = TunnelDefaultPort(kind)
	}
	switch kind {
	case TunnelVXLAN, TunnelVXLANGPE, TunnelVXLANGBP:
		return fmt.Sprintf("vxlan_sys_%d", dstPort)
	case TunnelGeneve:
		return fmt.Sprintf("genev_sys_%d", dstPort)
	case TunnelGREL3:
		return "gre_sys"
	case TunnelBareUDP:
		return fmt.Sprintf("udp_sys_%d", dstPort)
	case TunnelGTPU:
		return fmt.Sprintf("gtpu_sys_%d", dstPort)
	}
	return kind + "_sys"
}

// TunnelLegacyType is the compat vport type of a tunnel kind, or 0 where
// the kernel has none (ip6gre, erspan, ip6erspan, and vxlan_gpe: the
// legacy vxlan vport knows no GPE; vxlan_gbp: govswitchd does not give
// the legacy vport its OVS_TUNNEL_ATTR_EXTENSION).
func TunnelLegacyType(kind string) VportType {
	switch kind {
	case TunnelVXLAN:
		return VportVXLAN
	case TunnelGeneve:
		return VportGeneve
	case TunnelGRE:
		return VportGRE
	}
	return 0
}
