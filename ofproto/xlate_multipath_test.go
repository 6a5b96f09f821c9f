package ofproto

import (
	"net"
	"testing"

	"github.com/govswitch/govswitch/datapath"
	"github.com/govswitch/govswitch/flow"
	"github.com/govswitch/govswitch/ofproto/openflow"
)

// multipathRefActions are 16 multipath actions, one per register: every
// hash field set under each algorithm, and with n_links 65536 and modulo_n
// the low 16 bits of each hash itself.
var multipathRefActions = []openflow.Action{
	openflow.Multipath(openflow.HashEthSrc, 0, openflow.MultipathModuloN, 7, 0, openflow.FieldReg0, 0, 32),
	openflow.Multipath(openflow.HashSymmetricL4, 17, openflow.MultipathHashThreshold, 5, 0, openflow.FieldReg1, 0, 32),
	openflow.Multipath(openflow.HashSymmetricL3L4, 3, openflow.MultipathHRW, 9, 0, openflow.FieldReg2, 0, 32),
	openflow.Multipath(openflow.HashSymmetricL3L4UDP, 1000, openflow.MultipathIterHash, 6, 16, openflow.FieldReg3, 0, 32),
	openflow.Multipath(openflow.HashNwSrc, 5, openflow.MultipathHRW, 100, 0, openflow.FieldReg4, 0, 32),
	openflow.Multipath(openflow.HashNwDst, 9, openflow.MultipathModuloN, 1000, 0, openflow.FieldReg5, 0, 32),
	openflow.Multipath(openflow.HashSymmetricL3, 2, openflow.MultipathHashThreshold, 3, 0, openflow.FieldReg6, 0, 32),
	openflow.Multipath(openflow.HashSymmetricL4, 0, openflow.MultipathModuloN, 65536, 0, openflow.FieldReg7, 0, 32),
	openflow.Multipath(openflow.HashSymmetricL3L4, 0, openflow.MultipathModuloN, 65536, 0, openflow.FieldReg8, 0, 32),
	openflow.Multipath(openflow.HashEthSrc, 0, openflow.MultipathModuloN, 65536, 0, openflow.FieldReg9, 0, 32),
	openflow.Multipath(openflow.HashSymmetricL3L4UDP, 0, openflow.MultipathModuloN, 65536, 0, openflow.FieldReg10, 0, 32),
	openflow.Multipath(openflow.HashNwSrc, 1, openflow.MultipathModuloN, 65536, 0, openflow.FieldReg11, 0, 32),
	openflow.Multipath(openflow.HashNwDst, 1, openflow.MultipathModuloN, 65536, 0, openflow.FieldReg12, 0, 32),
	openflow.Multipath(openflow.HashSymmetricL3, 0, openflow.MultipathModuloN, 65536, 0, openflow.FieldReg13, 0, 32),
	openflow.Multipath(openflow.HashSymmetricL4, 1, openflow.MultipathIterHash, 1000, 1024, openflow.FieldReg14, 0, 32),
	openflow.Multipath(openflow.HashSymmetricL4, 1, openflow.MultipathHRW, 64, 0, openflow.FieldReg15, 0, 32),
}

// TestMultipathLinksAsOVS: the links ovs-vswitchd 3.1 (Debian's build)
// chooses for the same actions and packets, read from the Final flow line
// of `ovs-appctl ofproto/trace br0 in_port=1,<packet>` against
// ovs-vswitchd --enable-dummy with one flow carrying
// multipathRefActions, in ovs-ofctl syntax:
//
//	multipath(eth_src,0,modulo_n,7,0,NXM_NX_REG0[]),
//	multipath(symmetric_l4,17,hash_threshold,5,0,NXM_NX_REG1[]),
//	multipath(symmetric_l3l4,3,hrw,9,0,NXM_NX_REG2[]),
//	multipath(symmetric_l3l4+udp,1000,iter_hash,6,16,NXM_NX_REG3[]),
//	multipath(nw_src,5,hrw,100,0,NXM_NX_REG4[]),
//	multipath(nw_dst,9,modulo_n,1000,0,NXM_NX_REG5[]),
//	multipath(symmetric_l3,2,hash_threshold,3,0,NXM_NX_REG6[]),
//	multipath(symmetric_l4,0,modulo_n,65536,0,NXM_NX_REG7[]), ...
//	(REG8..13 as REG7 for symmetric_l3l4, eth_src, symmetric_l3l4+udp,
//	nw_src basis 1, nw_dst basis 1, symmetric_l3),
//	multipath(symmetric_l4,1,iter_hash,1000,1024,NXM_NX_REG14[]),
//	multipath(symmetric_l4,1,hrw,64,0,NXM_NX_REG15[])
func TestMultipathLinksAsOVS(t *testing.T) {
	mac := func(s string) [6]byte {
		m, err := net.ParseMAC(s)
		if err != nil {
			t.Fatal(err)
		}
		return [6]byte(m)
	}
	ip4 := func(s string) [4]byte { return [4]byte(net.ParseIP(s).To4()) }
	ip6 := func(s string) [16]byte { return [16]byte(net.ParseIP(s).To16()) }
	src, dst := mac("00:11:22:33:44:55"), mac("66:77:88:99:aa:bb")
	v4 := func(proto uint8, s, d string, sp, dp uint16) flow.Key {
		return flow.Key{EthSrc: src, EthDst: dst, EthType: flow.EthTypeIPv4, IPv4Src: ip4(s), IPv4Dst: ip4(d),
			NwProto: proto, TpSrc: sp, TpDst: dp}
	}
	v6 := func(proto uint8, s, d string, sp, dp uint16) flow.Key {
		return flow.Key{EthSrc: src, EthDst: dst, EthType: flow.EthTypeIPv6, IPv6Src: ip6(s), IPv6Dst: ip6(d),
			NwProto: proto, TpSrc: sp, TpDst: dp}
	}
	vlan := v4(6, "10.0.0.1", "10.0.0.2", 1234, 80)
	vlan.VLANs[0] = flow.VLAN{TPID: flow.EthTypeVLAN, TCI: flow.VLANPresent | 5}
	frag := v4(17, "10.0.0.9", "10.0.0.8", 7, 9)
	frag.NwFrag = flow.FragAny
	rev := v4(6, "10.0.0.2", "10.0.0.1", 80, 1234)
	rev.EthSrc = mac("00:11:22:33:44:56")
	for _, tc := range []struct {
		name string
		k    flow.Key
		want [16]uint32
	}{
		{"tcp,nw_src=10.0.0.1,nw_dst=10.0.0.2,tp_src=1234,tp_dst=80", v4(6, "10.0.0.1", "10.0.0.2", 1234, 80),
			[16]uint32{0, 0x3, 0x5, 0x5, 0x44, 0x18b, 0, 0x7ed1, 0x1676, 0xcd18, 0x1676, 0x78bd, 0xce31, 0xd19b, 0xaf, 0x35}},
		{"udp,nw_src=192.168.1.10,nw_dst=172.16.5.4,udp_src=5353,udp_dst=53", v4(17, "192.168.1.10", "172.16.5.4", 5353, 53),
			[16]uint32{0, 0x1, 0x1, 0, 0x56, 0x246, 0, 0xaf34, 0x7852, 0xcd18, 0xbec6, 0xd3d4, 0xe627, 0x28fe, 0x3b1, 0x25}},
		{"icmp,nw_src=10.1.2.3,nw_dst=10.3.2.1,icmp_type=8,icmp_code=0", v4(1, "10.1.2.3", "10.3.2.1", 8, 0),
			[16]uint32{0, 0x2, 0x1, 0x3, 0x3e, 0x2bf, 0x1, 0xe531, 0x337b, 0xcd18, 0x337b, 0x61c6, 0x909c, 0xcead, 0x25e, 0x2c}},
		{"tcp6,ipv6_src=2001:db8::1,ipv6_dst=2001:db8::2,tp_src=40000,tp_dst=443", v6(6, "2001:db8::1", "2001:db8::2", 40000, 443),
			[16]uint32{0, 0x1, 0x8, 0x3, 0x3c, 0x3be, 0x2, 0x752f, 0xeb9e, 0xcd18, 0xeb9e, 0xbcd1, 0x5cd4, 0x77f0, 0xde, 0x32}},
		{"udp6,ipv6_src=fe80::1:2:3:4,ipv6_dst=ff02::fb,udp_src=5353,udp_dst=5300", v6(17, "fe80::1:2:3:4", "ff02::fb", 5353, 5300),
			[16]uint32{0, 0x3, 0x4, 0, 0x5c, 0x32d, 0x1, 0xca69, 0x4114, 0xcd18, 0x4d6a, 0xe617, 0xcbf2, 0xba66, 0x2af, 0x3b}},
		{"arp,arp_spa=10.0.0.1,arp_tpa=10.0.0.2,arp_op=1", flow.Key{EthSrc: src, EthDst: dst, EthType: flow.EthTypeARP,
			IPv4Src: ip4("10.0.0.1"), IPv4Dst: ip4("10.0.0.2"), NwProto: 1},
			[16]uint32{0, 0x3, 0, 0, 0x2a, 0x9, 0x1, 0x4279, 0xf572, 0xcd18, 0xf572, 0x1, 0x1, 0xb052, 0x2bf, 0x17}},
		{"dl_type=0x88cc", flow.Key{EthSrc: src, EthDst: dst, EthType: 0x88cc},
			[16]uint32{0, 0, 0x3, 0x1, 0x2a, 0x9, 0x1, 0x3118, 0x62b, 0xcd18, 0x62b, 0x1, 0x1, 0xb84f, 0xd1, 0x3}},
		{"tcp,dl_vlan=5,...", vlan,
			[16]uint32{0, 0x2, 0x5, 0x5, 0x44, 0x18b, 0, 0x690e, 0x1676, 0xcd18, 0x1676, 0x78bd, 0xce31, 0xd19b, 0x1f9, 0x3c}},
		{"udp,nw_src=10.0.0.9,nw_dst=10.0.0.8,ip_frag=first,udp_src=7,udp_dst=9", frag,
			[16]uint32{0, 0x4, 0x3, 0x3, 0x8, 0x12d, 0, 0x4d3d, 0xeed, 0xcd18, 0xeed, 0x1970, 0x6864, 0xba4a, 0xeb, 0x14}},
		{"sctp,nw_src=1.2.3.4,nw_dst=5.6.7.8,sctp_src=100,sctp_dst=200", v4(132, "1.2.3.4", "5.6.7.8", 100, 200),
			[16]uint32{0, 0x2, 0x1, 0x5, 0x26, 0x2bd, 0x1, 0x2320, 0x4d18, 0xcd18, 0x4d18, 0x501, 0x141a, 0xbae4, 0xfd, 0x16}},
		{"tcp,dl_src=00:11:22:33:44:56,nw_src=10.0.0.2,nw_dst=10.0.0.1,tp_src=80,tp_dst=1234", rev,
			[16]uint32{0x1, 0x4, 0x5, 0x5, 0x45, 0x28a, 0, 0xf02e, 0x1676, 0xa30e, 0x1676, 0xce31, 0x78bd, 0xd19b, 0x35e, 0x37}},
	} {
		var got [16]uint32
		for i := range multipathRefActions {
			m := multipathRefActions[i].Hash
			got[i] = uint32(multipathLink(flowHashFields(&tc.k, m.Fields, m.Basis), m.Algorithm, uint32(m.MaxLink)+1, m.Arg))
		}
		if got != tc.want {
			t.Errorf("%s:\n got %#x\nwant %#x", tc.name, got, tc.want)
		}
	}
}

// TestXlateMultipath: multipath's link, written into reg0, picks the
// output in the next table; the megaflow holds the hashed fields (here
// symmetric_l3l4+udp of a UDP packet: addresses, protocol, ports) and
// no more, and the same translation allocates nothing.
func TestXlateMultipath(t *testing.T) {
	x := testBridge(t)
	mustAdd(t, x, 0, func(*flow.Key, *flow.Mask) {}, 5, apply(
		openflow.Multipath(openflow.HashSymmetricL3L4UDP, 0, openflow.MultipathHRW, 2, 0, openflow.FieldReg0, 0, 16),
		openflow.Resubmit(openflow.PortInPort, 1)))
	for link, port := range []uint32{2, 3} {
		mustAdd(t, x, 1, func(k *flow.Key, m *flow.Mask) { k.Regs[0], m.Regs[0] = uint32(link), ^uint32(0) }, 5,
			apply(openflow.Output(port, 0)))
	}
	seen := map[string]bool{}
	for sp := uint16(1000); sp < 1016; sp++ {
		k := pkt(11)
		k.NwProto, k.TpSrc = flow.IPProtoUDP, sp
		var out Out
		x.Translate(&k, t0, true, &out)
		h := flowHashFields(&k, openflow.HashSymmetricL3L4UDP, 0)
		want := "12"
		if multipathLink(h, openflow.MultipathHRW, 2, 0) == 1 {
			want = "13"
		}
		got := datapath.FormatActions(out.Actions)
		if got != want {
			t.Errorf("udp source port %d: actions %q, want %q (dropped %q)", sp, got, want, out.Dropped)
		}
		seen[got] = true
		wc := out.WC
		if wc.IPv4Src != [4]byte{255, 255, 255, 255} || wc.IPv4Dst != [4]byte{255, 255, 255, 255} || wc.NwProto != 0xff ||
			wc.TpSrc != 0xffff || wc.TpDst != 0xffff {
			t.Errorf("megaflow %+v lacks the hashed fields", wc)
		}
		if wc.EthSrc != [6]byte{} || wc.EthDst != [6]byte{} {
			t.Errorf("megaflow holds Ethernet addresses %x %x, which symmetric_l3l4+udp does not hash", wc.EthSrc, wc.EthDst)
		}
	}
	if len(seen) != 2 {
		t.Errorf("16 source ports took links %v, want both", seen)
	}
	k := pkt(11)
	var out Out
	if n := testing.AllocsPerRun(100, func() { x.Translate(&k, t0, true, &out) }); n != 0 {
		t.Errorf("multipath translation allocates %.0f times", n)
	}
}

// TestMaskHashFields: what each hash set adds to the megaflow, as
// ovs-vswitchd's flow_mask_hash_fields: symmetric_l4 leaves UDP ports
// out and takes ICMP's type and code as 8 bits; symmetric_l3l4+udp
// leaves a fragment's ports out.
func TestMaskHashFields(t *testing.T) {
	udp := pkt(1)
	udp.NwProto = flow.IPProtoUDP
	icmp := pkt(1)
	icmp.NwProto, icmp.TpSrc, icmp.TpDst = 1, 8, 0
	frag := udp
	frag.NwFrag = flow.FragAny
	for _, tc := range []struct {
		name   string
		k      flow.Key
		fields openflow.HashFields
		ports  [2]uint16
	}{
		{"symmetric_l4 udp", udp, openflow.HashSymmetricL4, [2]uint16{0, 0}},
		{"symmetric_l4 icmp", icmp, openflow.HashSymmetricL4, [2]uint16{0xff, 0xff}},
		{"symmetric_l4 tcp", pkt(1), openflow.HashSymmetricL4, [2]uint16{0xffff, 0xffff}},
		{"symmetric_l3l4+udp udp", udp, openflow.HashSymmetricL3L4UDP, [2]uint16{0xffff, 0xffff}},
		{"symmetric_l3l4+udp fragment", frag, openflow.HashSymmetricL3L4UDP, [2]uint16{0, 0}},
		{"symmetric_l3l4 udp", udp, openflow.HashSymmetricL3L4, [2]uint16{0, 0}},
		{"nw_src tcp", pkt(1), openflow.HashNwSrc, [2]uint16{0, 0}},
	} {
		var wc flow.Mask
		maskHashFields(&tc.k, &wc, tc.fields)
		if got := [2]uint16{wc.TpSrc, wc.TpDst}; got != tc.ports {
			t.Errorf("%s: port masks %#x, want %#x", tc.name, got, tc.ports)
		}
	}
}
