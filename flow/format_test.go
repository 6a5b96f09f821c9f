package flow

import (
	"net/netip"
	"strings"
	"testing"
)

// Helpers that spell addresses the way the golden strings do.

func txtMAC(t testing.TB, s string) [6]byte {
	t.Helper()
	var a [6]byte
	if !parseMAC(s, &a) {
		t.Fatalf("bad MAC %q in test", s)
	}
	return a
}

func txtIP4(s string) [4]byte { return netip.MustParseAddr(s).As4() }

func txtIP6(s string) [16]byte { return netip.MustParseAddr(s).As16() }

// untagged marks both VLAN levels as "no tag", which the kernel (and Parse)
// implies for every flow with eth(...).
func txtUntagged(m *Mask) {
	m.VLANs[0].TCI, m.VLANs[1].TCI = 0xffff, 0xffff
}

func TestFormat(t *testing.T) {
	tests := []struct {
		name string
		k    Key
		m    Mask
		want string
	}{
		{
			name: "zero mask prints nothing",
			k:    Key{InPort: 3, EthType: EthTypeIPv4},
			want: "",
		},
		{
			name: "in_port only",
			k:    Key{InPort: 3},
			m:    Mask{InPort: 0xffffffff},
			want: "in_port(3)",
		},
		{
			name: "metadata numbers print in C %#x form",
			k:    Key{RecircID: 0, DPHash: 0xab, Priority: 7, Mark: 0x1234, InPort: 1},
			m:    Mask{RecircID: 0xffffffff, DPHash: 0xff, Priority: 0xffffffff, Mark: 0xffff0000, InPort: 0xffff},
			want: "recirc_id(0),dp_hash(0xab/0xff),skb_priority(0x7),in_port(1/0xffff),skb_mark(0/0xffff0000)",
		},
		{
			name: "value is printed masked",
			k:    Key{Mark: 0x1234},
			m:    Mask{Mark: 0xff00},
			want: "skb_mark(0x1200/0xff00)",
		},
		{
			name: "ct_state exact uses names joined by |",
			k:    Key{CtState: CtNew | CtTracked},
			m:    Mask{CtState: 0xffffffff},
			want: "ct_state(new|trk)",
		},
		{
			name: "ct_state exact and empty prints 0",
			m:    Mask{CtState: 0xffffffff},
			want: "ct_state(0)",
		},
		{
			name: "ct_state partially masked lists +/- from the lowest bit",
			k:    Key{CtState: CtTracked | CtEstablished},
			m:    Mask{CtState: CtNew | CtEstablished | CtTracked | CtInvalid},
			want: "ct_state(-new+est-inv+trk)",
		},
		{
			name: "ct zone mark label",
			k:    Key{CtZone: 5, CtMark: 0x10, CtLabels: [16]byte{0: 0x01, 15: 0x80}},
			m:    Mask{CtZone: 0xffff, CtMark: 0xf0, CtLabels: allOnes16},
			want: "ct_zone(0x5),ct_mark(0x10/0xf0),ct_label(0x80000000000000000000000000000001)",
		},
		{
			name: "ct label partially masked",
			k:    Key{CtLabels: [16]byte{0: 0x34, 1: 0x12}},
			m:    Mask{CtLabels: [16]byte{0: 0xff, 1: 0xff}},
			want: "ct_label(0x1234/0xffff)",
		},
		{
			name: "tunnel ipv4 with flags",
			k: Key{Tunnel: Tunnel{ID: 0x2a, IPv4Src: txtIP4("192.168.1.1"), IPv4Dst: txtIP4("192.168.1.2"),
				TTL: 64, TpDst: 4789, Flags: TunnelKey}},
			m: Mask{Tunnel: Tunnel{ID: ^uint64(0), IPv4Src: allOnes4, IPv4Dst: [4]byte{255, 255, 255, 0},
				TTL: 0xff, TpDst: 0xffff, Flags: TunnelDontFragment | TunnelCsum | TunnelKey}},
			want: "tunnel(tun_id=0x2a,src=192.168.1.1,dst=192.168.1.0/255.255.255.0,ttl=64,tp_dst=4789,flags(-df-csum+key))",
		},
		{
			name: "tunnel ipv6 exact flags and tos",
			k: Key{Tunnel: Tunnel{IPv6Src: txtIP6("2001:db8::1"), IPv6Dst: txtIP6("2001:db8::2"), TOS: 0x10,
				Flags: TunnelCsum | TunnelKey}},
			m: Mask{Tunnel: Tunnel{ID: ^uint64(0), IPv6Src: allOnes16, IPv6Dst: allOnes16, TOS: 0xff,
				Flags: tunnelFlagsWidth}},
			want: "tunnel(tun_id=0x0,ipv6_src=2001:db8::1,ipv6_dst=2001:db8::2,tos=0x10,flags(csum|key))",
		},
		{
			name: "tunnel flags in OVS's bit order, as the kernel dump shows them",
			k:    Key{Tunnel: Tunnel{Flags: TunnelKey | TunnelOAM}},
			m:    Mask{Tunnel: Tunnel{Flags: TunnelOAM | TunnelDontFragment | TunnelKey}},
			want: "tunnel(flags(+oam-df+key))",
		},
		{
			name: "tunnel flags exact in OVS's bit order",
			k:    Key{Tunnel: Tunnel{Flags: TunnelKey | TunnelOAM | TunnelCsum}},
			m:    Mask{Tunnel: Tunnel{Flags: tunnelFlagsWidth}},
			want: "tunnel(flags(oam|csum|key))",
		},
		{
			name: "eth with wildcarded addresses prints eth()",
			k:    Key{EthType: EthTypeARP},
			m:    Mask{EthType: 0xffff, VLANs: [2]VLAN{{TCI: 0xffff}, {TCI: 0xffff}}},
			want: "eth(),eth_type(0x0806)",
		},
		{
			name: "masked MAC",
			k:    Key{EthDst: [6]byte{0x01}},
			m:    Mask{EthDst: [6]byte{0x01}},
			want: "eth(dst=01:00:00:00:00:00/01:00:00:00:00:00)",
		},
		{
			name: "802.3 frame without ethertype",
			k:    Key{EthType: EthTypeNone},
			m:    Mask{EthType: 0xffff},
			want: "eth(),eth_type(0/0xffff)",
		},
		{
			name: "partial ethertype",
			k:    Key{EthType: 0x88cc},
			m:    Mask{EthType: 0xff00},
			want: "eth(),eth_type(0x8800/0xff00)",
		},
		{
			name: "vlan with partial vid and no pcp",
			k: Key{VLANs: [2]VLAN{{TPID: EthTypeVLAN, TCI: VLANPresent | 0x123}}, EthType: EthTypeIPv4,
				NwFrag: 0},
			m: Mask{VLANs: [2]VLAN{{TPID: 0xffff, TCI: VLANPresent | 0x0f0}, {TCI: 0xffff}}, EthType: 0xffff,
				NwFrag: FragAny | FragLater},
			want: "eth(),eth_type(0x8100),vlan(vid=32/0xf0),encap(eth_type(0x0800),ipv4(frag=no))",
		},
		{
			name: "vlan tag without present bit prints cfi=0",
			k:    Key{VLANs: [2]VLAN{{TPID: EthTypeVLAN}}},
			m:    Mask{VLANs: [2]VLAN{{TPID: 0xffff, TCI: 0xffff}, {TCI: 0xffff}}},
			want: "eth(),eth_type(0x8100),vlan(vid=0,pcp=0,cfi=0),encap()",
		},
		{
			name: "ipv4 partial masks",
			k: Key{EthType: EthTypeIPv4, IPv4Src: txtIP4("10.1.2.3"), NwProto: 6, NwTos: 0xb8, NwTTL: 64,
				NwFrag: FragAny},
			m: Mask{EthType: 0xffff, IPv4Src: [4]byte{255, 255, 0, 255}, NwProto: 0xff, NwTos: 0xfc,
				NwTTL: 0x80, NwFrag: FragAny | FragLater},
			want: "eth(),eth_type(0x0800),ipv4(src=10.1.0.3/255.255.0.255,proto=6,tos=0xb8/0xfc,ttl=0/0x80,frag=first)",
		},
		{
			name: "later fragment has no L4",
			k:    Key{EthType: EthTypeIPv4, NwProto: 17, NwFrag: FragAny | FragLater, TpSrc: 53},
			m:    Mask{EthType: 0xffff, NwProto: 0xff, NwFrag: FragAny | FragLater, TpSrc: 0xffff},
			want: "eth(),eth_type(0x0800),ipv4(proto=17,frag=later)",
		},
		{
			name: "tcp ports and flags",
			k:    Key{EthType: EthTypeIPv4, NwProto: 6, TpSrc: 0x1234, TpDst: 80, TCPFlags: 0x012},
			m:    Mask{EthType: 0xffff, NwProto: 0xff, TpSrc: 0xff00, TpDst: 0xffff, TCPFlags: 0x0fff},
			want: "eth(),eth_type(0x0800),ipv4(proto=6),tcp(src=4608/0xff00,dst=80),tcp_flags(syn|ack)",
		},
		{
			name: "tcp flags masked, unnamed high bits",
			k:    Key{EthType: EthTypeIPv4, NwProto: 6, TCPFlags: 0x202},
			m:    Mask{EthType: 0xffff, NwProto: 0xff, TCPFlags: 0x212},
			want: "eth(),eth_type(0x0800),ipv4(proto=6),tcp_flags(+syn-ack+[200])",
		},
		{
			name: "tcp flags exact zero",
			k:    Key{EthType: EthTypeIPv4, NwProto: 6},
			m:    Mask{EthType: 0xffff, NwProto: 0xff, TCPFlags: 0x0fff},
			want: "eth(),eth_type(0x0800),ipv4(proto=6),tcp_flags(0)",
		},
		{
			name: "icmp masks are 8 bits wide",
			k:    Key{EthType: EthTypeIPv4, NwProto: 1, TpSrc: 8, TpDst: 0},
			m:    Mask{EthType: 0xffff, NwProto: 0xff, TpSrc: 0xff, TpDst: 0xf0},
			want: "eth(),eth_type(0x0800),ipv4(proto=1),icmp(type=8,code=0/0xf0)",
		},
		{
			name: "icmp proto under ipv6 prints no icmp",
			k:    Key{EthType: EthTypeIPv6, NwProto: 1, TpSrc: 8},
			m:    Mask{EthType: 0xffff, NwProto: 0xff, TpSrc: 0xff},
			want: "eth(),eth_type(0x86dd),ipv6(proto=1)",
		},
		{
			name: "ipv6 label and prefix",
			k: Key{EthType: EthTypeIPv6, IPv6Src: txtIP6("2001:db8:1::"), IPv6Label: 0x12345, NwProto: 17,
				NwTos: 0, NwTTL: 255},
			m: Mask{EthType: 0xffff, IPv6Src: txtPrefix16(64), IPv6Label: 0xf0000, NwProto: 0xff, NwTos: 0xff,
				NwTTL: 0xff},
			want: "eth(),eth_type(0x86dd),ipv6(src=2001:db8:1::/ffff:ffff:ffff:ffff::,label=0x10000/0xf0000,proto=17,tclass=0,hlimit=255)",
		},
		{
			name: "nd only for solicit and advert",
			k: Key{EthType: EthTypeIPv6, NwProto: 58, TpSrc: 136, NDTarget: txtIP6("fe80::2"),
				NDTLL: [6]byte{0x52, 0x54, 0, 0, 0, 2}},
			m:    Mask{EthType: 0xffff, NwProto: 0xff, TpSrc: 0xff, NDTarget: allOnes16, NDTLL: allOnes6},
			want: "eth(),eth_type(0x86dd),ipv6(proto=58),icmpv6(type=136),nd(target=fe80::2,tll=52:54:00:00:00:02)",
		},
		{
			name: "no nd for echo",
			k:    Key{EthType: EthTypeIPv6, NwProto: 58, TpSrc: 128, NDTarget: txtIP6("fe80::2")},
			m:    Mask{EthType: 0xffff, NwProto: 0xff, TpSrc: 0xff, NDTarget: allOnes16},
			want: "eth(),eth_type(0x86dd),ipv6(proto=58),icmpv6(type=128)",
		},
		{
			name: "arp op masked",
			k:    Key{EthType: EthTypeARP, IPv4Src: txtIP4("10.0.0.1"), NwProto: 2},
			m:    Mask{EthType: 0xffff, IPv4Src: allOnes4, NwProto: 0x0f},
			want: "eth(),eth_type(0x0806),arp(sip=10.0.0.1,op=2/0xf)",
		},
		{
			name: "rarp uses arp()",
			k:    Key{EthType: EthTypeRARP, NwProto: 3},
			m:    Mask{EthType: 0xffff, NwProto: 0xff},
			want: "eth(),eth_type(0x8035),arp(op=3/0xff)",
		},
		{
			name: "nsh exact md type 1",
			k: Key{EthType: EthTypeNSH, NSH: NSH{TTL: 63, MDType: 1, NP: 3, SPI: 0x1234, SI: 255,
				C: [4]uint32{0x11223344}}},
			m:    Mask{EthType: 0xffff, NSH: NSH{Flags: 0xff, TTL: 0xff, MDType: 0xff, NP: 0xff, SPI: NSHSPIMask, SI: 0xff, C: [4]uint32{^uint32(0), ^uint32(0), ^uint32(0), ^uint32(0)}}},
			want: "eth(),eth_type(0x894f),nsh(flags=0,ttl=63,mdtype=1,np=3,spi=0x1234,si=255,c1=0x11223344,c2=0x0,c3=0x0,c4=0x0)",
		},
		{
			name: "nsh masked prints only what is matched",
			k:    Key{EthType: EthTypeNSH, NSH: NSH{Flags: 1, NP: 3, SPI: 0x100, SI: 3, C: [4]uint32{0, 0x500}}},
			m:    Mask{EthType: 0xffff, NSH: NSH{Flags: 0x0f, NP: 0xff, SPI: NSHSPIMask, SI: 0xff, C: [4]uint32{0, 0xff00}}},
			want: "eth(),eth_type(0x894f),nsh(flags=0x01/0x0f,np=3,spi=0x100,si=3,c2=0x500/0x0000ff00)",
		},
		{
			name: "mpls exact",
			k:    Key{EthType: EthTypeMPLS, MPLSLSE: 100<<12 | 3<<9 | 1<<8 | 64},
			m:    Mask{EthType: 0xffff, MPLSLSE: 0xffffffff},
			want: "eth(),eth_type(0x8847),mpls(label=100,tc=3,ttl=64,bos=1)",
		},
		{
			name: "mpls masked prints every sub-field with OVS's radixes",
			k:    Key{EthType: EthTypeMPLSM, MPLSLSE: 100<<12 | 1<<8 | 64},
			m:    Mask{EthType: 0xffff, MPLSLSE: 0xfffff<<12 | 1<<8 | 0xff},
			want: "eth(),eth_type(0x8848),mpls(label=100/0xfffff,tc=0/0,ttl=64/0xff,bos=1/1)",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := Format(&tc.k, &tc.m); got != tc.want {
				t.Errorf("Format =\n  %s\nwant\n  %s", got, tc.want)
			}
		})
	}
}

func txtPrefix16(n int) [16]byte {
	var m [16]byte
	for i := 0; i < n; i++ {
		m[i/8] |= 0x80 >> (i % 8)
	}
	return m
}

func TestKeyString(t *testing.T) {
	tcp := Key{
		InPort: 1,
		EthSrc: [6]byte{0x52, 0x54, 0, 0, 0, 1}, EthDst: [6]byte{0x52, 0x54, 0, 0, 0, 2},
		EthType: EthTypeIPv4,
		IPv4Src: txtIP4("10.0.0.1"), IPv4Dst: txtIP4("10.0.0.2"),
		NwProto: IPProtoTCP, NwTTL: 64,
		TpSrc: 40000, TpDst: 80, TCPFlags: 0x002,
	}
	tagged := tcp
	tagged.VLANs[0] = VLAN{TPID: EthTypeVLAN, TCI: VLANPresent | 3<<13 | 100}
	nd := Key{
		InPort: 2, Mark: 9, CtState: CtTracked | CtNew, RecircID: 1,
		EthType: EthTypeIPv6, IPv6Src: txtIP6("fe80::1"), IPv6Dst: txtIP6("ff02::1:ff00:2"),
		NwProto: IPProtoICMPv6, NwTTL: 255, TpSrc: 135,
		NDTarget: txtIP6("fe80::2"), NDSLL: [6]byte{0x52, 0x54, 0, 0, 0, 1},
	}
	tests := []struct {
		name string
		k    Key
		want string
	}{
		{
			name: "the issue's tcp example",
			k:    tcp,
			want: "in_port(1),eth(src=52:54:00:00:00:01,dst=52:54:00:00:00:02),eth_type(0x0800)," +
				"ipv4(src=10.0.0.1,dst=10.0.0.2,proto=6,tos=0,ttl=64,frag=no),tcp(src=40000,dst=80),tcp_flags(syn)",
		},
		{
			name: "802.1Q",
			k:    tagged,
			want: "in_port(1),eth(src=52:54:00:00:00:01,dst=52:54:00:00:00:02),eth_type(0x8100),vlan(vid=100,pcp=3)," +
				"encap(eth_type(0x0800),ipv4(src=10.0.0.1,dst=10.0.0.2,proto=6,tos=0,ttl=64,frag=no),tcp(src=40000,dst=80),tcp_flags(syn))",
		},
		{
			name: "neighbor solicitation with metadata",
			k:    nd,
			want: "recirc_id(0x1),in_port(2),skb_mark(0x9),ct_state(new|trk),eth(src=00:00:00:00:00:00,dst=00:00:00:00:00:00)," +
				"eth_type(0x86dd),ipv6(src=fe80::1,dst=ff02::1:ff00:2,label=0,proto=58,tclass=0,hlimit=255,frag=no)," +
				"icmpv6(type=135,code=0),nd(target=fe80::2,sll=52:54:00:00:00:01,tll=00:00:00:00:00:00)",
		},
		{
			name: "tunnelled arp",
			k: Key{Tunnel: Tunnel{ID: 7, IPv4Src: txtIP4("1.1.1.1"), IPv4Dst: txtIP4("2.2.2.2"), TTL: 64,
				Flags: TunnelKey | TunnelDontFragment}, InPort: 4, EthType: EthTypeARP, NwProto: 1,
				IPv4Src: txtIP4("10.0.0.1"), IPv4Dst: txtIP4("10.0.0.2")},
			want: "tunnel(tun_id=0x7,src=1.1.1.1,dst=2.2.2.2,ttl=64,flags(df|key)),in_port(4)," +
				"eth(src=00:00:00:00:00:00,dst=00:00:00:00:00:00),eth_type(0x0806)," +
				"arp(sip=10.0.0.1,tip=10.0.0.2,op=1/0xff,sha=00:00:00:00:00:00,tha=00:00:00:00:00:00)",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := tc.k.String()
			if got != tc.want {
				t.Fatalf("String =\n  %s\nwant\n  %s", got, tc.want)
			}
			k, m, err := Parse(got)
			if err != nil {
				t.Fatalf("Parse(String()): %v", err)
			}
			if k != tc.k {
				t.Errorf("Parse(String()) key differs:\n got %#v\nwant %#v", k, tc.k)
			}
			if want := stackMask(&tc.k); m != want {
				t.Errorf("Parse(String()) mask differs:\n got %#v\nwant %#v", m, want)
			}
		})
	}
}

func TestAppendIPv6LikeInetNtop(t *testing.T) {
	// Expected strings are glibc inet_ntop's, which OVS prints.
	tests := []struct{ name, in, want string }{
		{"unspecified", "::", "::"},
		{"loopback", "::1", "::1"},
		{"ipv4 compatible", "::10.0.0.1", "::10.0.0.1"},
		{"seven zero groups stay hex", "::2", "::2"},
		{"ipv4 mapped", "::ffff:10.0.0.1", "::ffff:10.0.0.1"},
		{"first longest run", "2001:db8:0:0:1:0:0:1", "2001:db8::1:0:0:1"},
		{"single zero group not compressed", "2001:db8:0:1:1:1:1:1", "2001:db8:0:1:1:1:1:1"},
		{"trailing run", "ffff:ffff:ffff:ffff::", "ffff:ffff:ffff:ffff::"},
		{"no zeros", "1:2:3:4:5:6:7:8", "1:2:3:4:5:6:7:8"},
		{"solicited node", "ff02::1:ff00:2", "ff02::1:ff00:2"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a := txtIP6(tc.in)
			if got := string(appendIPv6(nil, &a)); got != tc.want {
				t.Errorf("appendIPv6(%s) = %s, want %s", tc.in, got, tc.want)
			}
		})
	}
}

func TestAppendFormatAllocs(t *testing.T) {
	k := Key{
		Tunnel: Tunnel{ID: 1, IPv4Src: txtIP4("1.1.1.1"), IPv4Dst: txtIP4("2.2.2.2"), TTL: 64, Flags: TunnelKey},
		InPort: 1, CtState: CtTracked | CtEstablished, CtLabels: [16]byte{1},
		VLANs:   [2]VLAN{{TPID: EthTypeQinQ, TCI: VLANPresent | 10}, {TPID: EthTypeVLAN, TCI: VLANPresent | 20}},
		EthType: EthTypeIPv6, IPv6Src: txtIP6("2001:db8::1"), IPv6Dst: txtIP6("::ffff:10.0.0.1"),
		NwProto: IPProtoTCP, NwTTL: 64, TpSrc: 1, TpDst: 2, TCPFlags: 0x12,
	}
	m := stackMask(&k)
	m.IPv6Src = txtPrefix16(64)
	m.CtState = 0x3f
	buf := make([]byte, 0, 1024)
	out := AppendFormat(buf, &k, &m)
	if !strings.Contains(string(out), "encap(eth_type(0x8100),vlan(vid=20,pcp=0),encap(eth_type(0x86dd)") {
		t.Fatalf("unexpected text %s", out)
	}
	allocs := testing.AllocsPerRun(100, func() {
		buf = AppendFormat(buf[:0], &k, &m)
	})
	if allocs != 0 {
		t.Errorf("AppendFormat allocates %v times per call, want 0", allocs)
	}
}

func BenchmarkAppendFormat(b *testing.B) {
	k := Key{
		InPort: 1, EthSrc: [6]byte{1, 2, 3, 4, 5, 6}, EthDst: [6]byte{6, 5, 4, 3, 2, 1},
		EthType: EthTypeIPv4, IPv4Src: txtIP4("10.0.0.1"), IPv4Dst: txtIP4("10.0.0.2"),
		NwProto: IPProtoTCP, NwTTL: 64, TpSrc: 40000, TpDst: 80, TCPFlags: 0x10,
	}
	m := stackMask(&k)
	buf := make([]byte, 0, 512)
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		buf = AppendFormat(buf[:0], &k, &m)
	}
}
