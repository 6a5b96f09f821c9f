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
// tun_dst: the outer IPv6 addresses and the public tunnel flags, Nicira
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
}
