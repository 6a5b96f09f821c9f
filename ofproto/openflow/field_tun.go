package openflow

import "github.com/govswitch/govswitch/flow"

// TunFlagOAM is the one public bit of tun_flags (NXM_NX_TUN_FLAGS), OVS's
// FLOW_TNL_PUB_F_OAM: the packet is a tunnel's OAM frame. In the flow's
// Tunnel.Flags it is flow.TunnelOAM.
const TunFlagOAM = 1 << 0

// tun_flags goes out masked whatever its mask (appendTLVs): its wire
// width is 16 bits, of which OVS gives one meaning, so a mask of that one
// bit is partial, as ovs-ofctl encodes it.
//
// tunFlagsShift places tun_flags' OAM bit on flow.TunnelOAM.
const tunFlagsShift = 3

// defTunnelFields defines the tunnel fields beyond tun_id, tun_src and
// tun_dst: the outer IPv6 addresses, the public tunnel flags and the
// VXLAN-GBP fields, Nicira
// extensions (NXM class 1) that OpenFlow 1.2+ carries as OXM too, matchable
// and set_field targets as in ovs-vswitchd 3.1 (meta-flow.xml: fields 109,
// 110 and 104).
func defTunnelFields(nx1 func(uint8) uint32) {
	defBytes(FieldTunIPv6Src, "tun_ipv6_src", nx1(109), noHeader, 16, true, both, preNone,
		func(k *flow.Key) []byte { return k.Tunnel.IPv6Src[:] })
	defBytes(FieldTunIPv6Dst, "tun_ipv6_dst", nx1(110), noHeader, 16, true, both, preNone,
		func(k *flow.Key) []byte { return k.Tunnel.IPv6Dst[:] })
	defInt(FieldTunFlags, "tun_flags", nx1(104), noHeader, 2, true, both, preNone,
		func(k *flow.Key) *uint16 { return &k.Tunnel.Flags }, tunFlagsShift, TunFlagOAM)
	// VXLAN Group Based Policy (meta-flow.xml: fields 38 and 39, NXM
	// only, which OpenFlow 1.2+ carries as it carries the other NXM
	// tunnel fields): the policy ID (16 bits) and the GBP header's
	// flag byte, each maskable, matches and set_field/load/move
	// targets. In a flow.Key they are Tunnel.GbpID and GbpFlags.
	defInt(FieldTunGbpID, "tun_gbp_id", nx1(38), noHeader, 2, true, both, preNone,
		func(k *flow.Key) *uint16 { return &k.Tunnel.GbpID }, 0, 0xffff)
	defInt(FieldTunGbpFlags, "tun_gbp_flags", nx1(39), noHeader, 1, true, both, preNone,
		func(k *flow.Key) *uint8 { return &k.Tunnel.GbpFlags }, 0, 0xff)
}
