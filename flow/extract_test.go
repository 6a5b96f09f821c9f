package flow

import (
	"encoding/hex"
	"strings"
	"testing"
)

// h decodes hex rows, ignoring spaces.
func xhex(rows ...string) []byte {
	b, err := hex.DecodeString(strings.ReplaceAll(strings.Join(rows, ""), " ", ""))
	if err != nil {
		panic(err)
	}
	return b
}

func xcat(parts ...[]byte) []byte {
	var out []byte
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

var (
	xmacDst = [6]byte{0x02, 0, 0, 0, 0, 0x01}
	xmacSrc = [6]byte{0x02, 0, 0, 0, 0, 0x02}
)

// eth is an Ethernet header from xmacSrc to xmacDst; typ is the rows after
// the addresses (tags and type).
func xeth(typ ...string) []byte {
	return xcat(xhex(
		"020000000001", // destination
		"020000000002", // source
	), xhex(typ...))
}

// ip4 is a 20-byte IPv4 header 10.0.0.1 -> 10.0.0.2 with the given
// protocol and flags/fragment-offset word.
func xip4(proto, frag string) []byte {
	return xhex(
		"45",       // version 4, IHL 5
		"b9",       // DS byte: DSCP 46, ECN 1
		"0000",     // total length (not checked)
		"1234",     // identification
		frag,       // flags, fragment offset
		"40",       // TTL 64
		proto,      // protocol
		"0000",     // checksum (not checked)
		"0a000001", // source
		"0a000002", // destination
	)
}

// ip6 is a 40-byte IPv6 header fe80::1 -> fe80::2 with the given next
// header.
func xip6(next string) []byte {
	return xhex(
		"6b912345", // version 6, traffic class 0xb9, flow label 0x12345
		"0000",     // payload length (not checked)
		next,       // next header
		"ff",       // hop limit
		"fe800000000000000000000000000001",
		"fe800000000000000000000000000002",
	)
}

var (
	xip4Src  = [4]byte{10, 0, 0, 1}
	xip4Dst  = [4]byte{10, 0, 0, 2}
	xip6Src  = [16]byte{0xfe, 0x80, 15: 1}
	xip6Dst  = [16]byte{0xfe, 0x80, 15: 2}
	xtarget6 = [16]byte{0x20, 0x01, 0x0d, 0xb8, 15: 9}
)

// keyL2 is the Key of an untagged frame from xmacSrc to xmacDst.
func xkeyL2(typ uint16) Key {
	return Key{EthDst: xmacDst, EthSrc: xmacSrc, EthType: typ}
}

func xkeyIP4(proto uint8) Key {
	k := xkeyL2(EthTypeIPv4)
	k.IPv4Src, k.IPv4Dst, k.NwProto, k.NwTos, k.NwTTL = xip4Src, xip4Dst, proto, 0xb9, 64
	return k
}

func xkeyIP6(proto uint8) Key {
	k := xkeyL2(EthTypeIPv6)
	k.IPv6Src, k.IPv6Dst, k.NwProto, k.NwTos, k.NwTTL, k.IPv6Label = xip6Src, xip6Dst, proto, 0xb9, 0xff, 0x12345
	return k
}

func xwith(k Key, f func(*Key)) Key {
	f(&k)
	return k
}

var (
	xudpHdr = xhex(
		"1f90", // source port 8080
		"0035", // destination port 53
		"0008", // length
		"0000", // checksum
	)
	xndTarget = xhex("20010db8000000000000000000000009")
	xsllOpt   = xhex("01", "01", "0a0b0c0d0e0f") // type 1 (source LL), 1 unit, address
	xtllOpt   = xhex("02", "01", "1a1b1c1d1e1f") // type 2 (target LL), 1 unit, address
	xsll      = [6]byte{0x0a, 0x0b, 0x0c, 0x0d, 0x0e, 0x0f}
	xtll      = [6]byte{0x1a, 0x1b, 0x1c, 0x1d, 0x1e, 0x1f}
)

func xudpPorts(k Key) Key { k.TpSrc, k.TpDst = 8080, 53; return k }

// The cases pin down the kernel's behaviour where a general-purpose parser
// would differ; each says which rule of net/openvswitch/flow.c it checks.
var extractCases = []struct {
	name string
	pkt  []byte
	want Key
}{
	{"empty frame", nil, Key{}},
	{"destination only", xhex("0200000000010202"), Key{EthDst: xmacDst}},
	{"no type", xhex("020000000001", "020000000002", "08"), Key{EthDst: xmacDst, EthSrc: xmacSrc}},
	{"unknown ethertype", xeth("88b5", "0102"), xkeyL2(0x88b5)},

	// IPv4.
	{
		"tcp4 all 12 flag bits",
		xcat(xeth("0800"), xip4("06", "4000"), xhex(
			"0050", // source port 80
			"c000", // destination port 49152
			"00000001 00000002",
			"5f", "ff", // data offset 5, reserved bits 0x0e, NS, then CWR..FIN
			"ffff 0000 0000",
		)),
		xwith(xkeyIP4(6), func(k *Key) { k.TpSrc, k.TpDst, k.TCPFlags = 80, 0xc000, 0x0fff }),
	},
	{
		"tcp4 data offset below 5 reads no ports",
		xcat(xeth("0800"), xip4("06", "0000"), xhex("0050 c000 00000001 00000002", "40", "02", "ffff 0000 0000")),
		xkeyIP4(6),
	},
	{
		"tcp4 options cut short read no ports",
		xcat(xeth("0800"), xip4("06", "0000"), xhex("0050 c000 00000001 00000002", "60", "02", "ffff 0000 0000", "0204")),
		xkeyIP4(6),
	},
	{
		"ipv4 IHL below 5 reads no L3",
		xcat(xeth("0800"), xhex("44"), xip4("06", "0000")[1:]),
		xkeyL2(EthTypeIPv4),
	},
	{
		"ipv4 IHL past the frame reads no L3",
		xcat(xeth("0800"), xhex("4f"), xip4("11", "0000")[1:], xudpHdr),
		xkeyL2(EthTypeIPv4),
	},
	{
		"ipv4 options then udp",
		xcat(xeth("0800"), xhex("46"), xip4("11", "0000")[1:], xhex("94040000" /* router alert */), xudpHdr),
		xudpPorts(xkeyIP4(17)),
	},
	{
		"ipv4 first fragment reads ports",
		xcat(xeth("0800"), xip4("11", "2000" /* MF */), xudpHdr),
		xwith(xudpPorts(xkeyIP4(17)), func(k *Key) { k.NwFrag = FragAny }),
	},
	{
		"ipv4 later fragment reads no ports",
		xcat(xeth("0800"), xip4("11", "0001" /* offset 8 */), xudpHdr),
		xwith(xkeyIP4(17), func(k *Key) { k.NwFrag = FragAny | FragLater }),
	},
	{
		"udp4 of 7 bytes reads no ports",
		xcat(xeth("0800"), xip4("11", "0000"), xudpHdr[:7]),
		xkeyIP4(17),
	},
	{
		"sctp4",
		xcat(xeth("0800"), xip4("84", "0000"), xhex("0b59", "0b5a", "01020304", "00000000")),
		xwith(xkeyIP4(132), func(k *Key) { k.TpSrc, k.TpDst = 2905, 2906 }),
	},
	{
		"icmp4 type and code",
		xcat(xeth("0800"), xip4("01", "0000"), xhex("03", "0d", "0000", "00000000")),
		xwith(xkeyIP4(1), func(k *Key) { k.TpSrc, k.TpDst = 3, 13 }),
	},
	{
		"icmp4 of 7 bytes reads no type",
		xcat(xeth("0800"), xip4("01", "0000"), xhex("03", "0d", "0000", "000000")),
		xkeyIP4(1),
	},
	{
		"icmpv6 inside ipv4 is not read",
		xcat(xeth("0800"), xip4("3a", "0000"), xhex("87", "00", "0000", "00000000")),
		xkeyIP4(58),
	},

	// ARP.
	{
		"arp request",
		xcat(xeth("0806"), xhex(
			"0001",     // Ethernet
			"0800",     // IPv4
			"06", "04", // hlen, plen
			"0001",         // request
			"020000000002", // sha
			"0a000001",     // spa
			"000000000000", // tha
			"0a000002",     // tpa
		)),
		xwith(xkeyL2(EthTypeARP), func(k *Key) {
			k.NwProto, k.IPv4Src, k.IPv4Dst, k.ArpSHA = 1, xip4Src, xip4Dst, xmacSrc
		}),
	},
	{
		"rarp reply",
		xcat(xeth("8035"), xhex("0001 0800 06 04", "0004", "020000000002 0a000001 020000000001 0a000002")),
		xwith(xkeyL2(EthTypeRARP), func(k *Key) {
			k.NwProto, k.IPv4Src, k.IPv4Dst, k.ArpSHA, k.ArpTHA = 4, xip4Src, xip4Dst, xmacSrc, xmacDst
		}),
	},
	{
		"arp opcode above 0xff keeps addresses",
		xcat(xeth("0806"), xhex("0001 0800 06 04", "0101", "020000000002 0a000001 000000000000 0a000002")),
		xwith(xkeyL2(EthTypeARP), func(k *Key) { k.IPv4Src, k.IPv4Dst, k.ArpSHA = xip4Src, xip4Dst, xmacSrc }),
	},
	{
		"arp with hlen 8 is not read",
		xcat(xeth("0806"), xhex("0001 0800", "08", "04", "0001", "0200000000020000 0a000001 0000000000000000 0a000002")),
		xkeyL2(EthTypeARP),
	},
	{
		"arp of 27 bytes is not read",
		xcat(xeth("0806"), xhex("0001 0800 06 04 0001 020000000002 0a000001 000000000000 0a0000")),
		xkeyL2(EthTypeARP),
	},

	// VLANs.
	{
		"802.1q tag",
		xcat(xeth("8100", "a00a" /* PCP 5, DEI 0, VID 10 */, "0800"), xip4("11", "0000"), xudpHdr),
		xwith(xudpPorts(xkeyIP4(17)), func(k *Key) { k.VLANs[0] = VLAN{TPID: 0x8100, TCI: 0xb00a} }),
	},
	{
		"802.1ad over 802.1q, DEI dropped",
		xcat(xeth("88a8", "3064" /* PCP 1, DEI 1, VID 100 */, "8100", "0fff", "0800"), xip4("11", "0000"), xudpHdr),
		xwith(xudpPorts(xkeyIP4(17)), func(k *Key) {
			k.VLANs = [2]VLAN{{TPID: 0x88a8, TCI: 0x3064}, {TPID: 0x8100, TCI: 0x1fff}}
		}),
	},
	{
		"third tag is the ethertype",
		xcat(xeth("8100", "0001", "8100", "0002", "88a8", "0003", "0800"), xip4("11", "0000"), xudpHdr),
		xwith(xkeyL2(EthTypeQinQ), func(k *Key) {
			k.VLANs = [2]VLAN{{TPID: 0x8100, TCI: 0x1001}, {TPID: 0x8100, TCI: 0x1002}}
		}),
	},
	{
		"tag without a type after it is not parsed",
		xeth("8100", "0001", "08"),
		xkeyL2(EthTypeVLAN),
	},

	// 802.3.
	{
		"802.3 without snap",
		xeth("0026", "4242 03", "000000"),
		xkeyL2(EthTypeNone),
	},
	{
		"802.3 with snap ethertype",
		xcat(xeth("0030", "aa", "aa", "03", "000000", "0800"), xip4("11", "0000"), xudpHdr),
		xudpPorts(xkeyIP4(17)),
	},
	{
		"snap control byte not checked",
		xcat(xeth("0030", "aa aa", "f3", "000000", "0800"), xip4("11", "0000"), xudpHdr),
		xudpPorts(xkeyIP4(17)),
	},
	{
		"snap with an OUI",
		xcat(xeth("0030", "aa aa 03", "00000c", "0800"), xip4("11", "0000")),
		xkeyL2(EthTypeNone),
	},
	{
		"snap with a length for a type",
		xeth("0030", "aa aa 03 000000", "0100", "00"),
		xkeyL2(EthTypeNone),
	},
	{
		"snap of 7 bytes",
		xeth("0030", "aa aa 03 000000 08"),
		xkeyL2(EthTypeNone),
	},

	// MPLS.
	{
		"mpls stack: top entry",
		xeth("8847", "00064 0 40" /* label 100, TC 0, not bottom, TTL 64 */, "000c8 1 3f" /* bottom */, "45"),
		xwith(xkeyL2(EthTypeMPLS), func(k *Key) { k.MPLSLSE = 0x00064040 }),
	},
	{
		"mpls stack without bottom reports no label",
		xeth("8848", "00064040", "000c8040"),
		xkeyL2(EthTypeMPLSM),
	},

	// IPv6.
	{
		"ipv6 of 39 bytes reads no L3",
		xcat(xeth("86dd"), xip6("11")[:39]),
		xkeyL2(EthTypeIPv6),
	},
	{
		"udp6 after hop-by-hop, routing, destination options",
		xcat(xeth("86dd"), xip6("00"),
			xhex("2b", "00", "010400000000"),                     // HBH -> routing, 8 bytes, PadN
			xhex("3c", "00", "00", "00", "00000000"),             // routing -> dest opts
			xhex("11", "01", "010c", "000000000000000000000000"), // dest opts -> UDP, 16 bytes
			xudpHdr),
		xudpPorts(xkeyIP6(17)),
	},
	{
		"udp6 after AH (length in 4-byte units)",
		xcat(xeth("86dd"), xip6("33"), xhex("11", "01" /* 12 bytes */, "0000", "00000001", "00000002"), xudpHdr),
		xudpPorts(xkeyIP6(17)),
	},
	{
		"esp ends the walk",
		xcat(xeth("86dd"), xip6("32"), xhex("00000001 00000002")),
		xkeyIP6(50),
	},
	{
		"no next header",
		xcat(xeth("86dd"), xip6("00"), xhex("3b 00 010400000000"), xudpHdr),
		xkeyIP6(59),
	},
	{
		"ipv6 first fragment reads ports",
		xcat(xeth("86dd"), xip6("2c"), xhex("11", "00", "0001" /* offset 0, M */, "00000001"), xudpHdr),
		xwith(xudpPorts(xkeyIP6(17)), func(k *Key) { k.NwFrag = FragAny }),
	},
	{
		"ipv6 atomic fragment",
		xcat(xeth("86dd"), xip6("2c"), xhex("11 00", "0000", "00000001"), xudpHdr),
		xwith(xudpPorts(xkeyIP6(17)), func(k *Key) { k.NwFrag = FragAny }),
	},
	{
		"ipv6 later fragment is protocol 44",
		xcat(xeth("86dd"), xip6("2c"), xhex("11 00", "0008" /* offset 1 */, "00000001"), xudpHdr),
		xwith(xkeyIP6(44), func(k *Key) { k.NwFrag = FragAny | FragLater }),
	},
	{
		"ipv6 later fragment before an extension header",
		xcat(xeth("86dd"), xip6("2c"), xhex("3c 00 0008 00000001"), xhex("11 00 010400000000"), xudpHdr),
		xwith(xkeyIP6(59), func(k *Key) { k.NwFrag = FragAny }),
	},
	{
		"ipv6 fragment header of 3 bytes",
		xcat(xeth("86dd"), xip6("2c"), xhex("11 00 00")),
		xwith(xkeyIP6(59), func(k *Key) { k.NwFrag = FragAny }),
	},
	{
		"ipv6 fragment header of 1 byte",
		xcat(xeth("86dd"), xip6("2c"), xhex("11")),
		xkeyIP6(59),
	},
	{
		"extension header running past the frame",
		xcat(xeth("86dd"), xip6("3c"), xhex("11 04 0000")),
		xkeyIP6(17),
	},
	{
		"tcp6",
		xcat(xeth("86dd"), xip6("06"), xhex("0050 c000 00000001 00000002", "50", "12", "ffff 0000 0000")),
		xwith(xkeyIP6(6), func(k *Key) { k.TpSrc, k.TpDst, k.TCPFlags = 80, 0xc000, 0x012 }),
	},

	// ICMPv6 and Neighbor Discovery.
	{
		"icmpv6 echo",
		xcat(xeth("86dd"), xip6("3a"), xhex("80", "00", "0000", "00010001")),
		xwith(xkeyIP6(58), func(k *Key) { k.TpSrc = 128 }),
	},
	{
		"icmpv6 of 7 bytes reads no type",
		xcat(xeth("86dd"), xip6("3a"), xhex("80 00 0000 000100")),
		xkeyIP6(58),
	},
	{
		"neighbor solicitation with source LL",
		xcat(xeth("86dd"), xip6("3a"), xhex("87", "00", "0000", "00000000"), xndTarget, xsllOpt),
		xwith(xkeyIP6(58), func(k *Key) { k.TpSrc, k.NDTarget, k.NDSLL = 135, xtarget6, xsll }),
	},
	{
		"neighbor advertisement with both LL options",
		xcat(xeth("86dd"), xip6("3a"), xhex("88 00 0000 e0000000"), xndTarget, xtllOpt, xsllOpt),
		xwith(xkeyIP6(58), func(k *Key) { k.TpSrc, k.NDTarget, k.NDSLL, k.NDTLL = 136, xtarget6, xsll, xtll }),
	},
	{
		"neighbor solicitation of 23 bytes",
		xcat(xeth("86dd"), xip6("3a"), xhex("87 00 0000 00000000"), xndTarget[:15]),
		xwith(xkeyIP6(58), func(k *Key) { k.TpSrc = 135 }),
	},
	{
		"neighbor solicitation with code 1 has no ND fields",
		xcat(xeth("86dd"), xip6("3a"), xhex("87", "01", "0000 00000000"), xndTarget, xsllOpt),
		xwith(xkeyIP6(58), func(k *Key) { k.TpSrc, k.TpDst = 135, 1 }),
	},
	{
		"repeated source LL clears ND fields",
		xcat(xeth("86dd"), xip6("3a"), xhex("87 00 0000 00000000"), xndTarget, xsllOpt, xtllOpt, xsllOpt),
		xwith(xkeyIP6(58), func(k *Key) { k.TpSrc = 135 }),
	},
	{
		"repeated all-zero source LL is not a repeat",
		xcat(xeth("86dd"), xip6("3a"), xhex("87 00 0000 00000000"), xndTarget, xhex("01 01 000000000000"), xsllOpt),
		xwith(xkeyIP6(58), func(k *Key) { k.TpSrc, k.NDTarget, k.NDSLL = 135, xtarget6, xsll }),
	},
	{
		"zero-length option ends the walk, keeping what was read",
		xcat(xeth("86dd"), xip6("3a"), xhex("87 00 0000 00000000"), xndTarget, xsllOpt, xhex("02 00 1a1b1c1d1e1f"), xtllOpt),
		xwith(xkeyIP6(58), func(k *Key) { k.TpSrc, k.NDTarget, k.NDSLL = 135, xtarget6, xsll }),
	},
	{
		"option longer than the frame ends the walk",
		xcat(xeth("86dd"), xip6("3a"), xhex("88 00 0000 00000000"), xndTarget, xtllOpt, xhex("01 02 0a0b0c0d0e0f")),
		xwith(xkeyIP6(58), func(k *Key) { k.TpSrc, k.NDTarget, k.NDTLL = 136, xtarget6, xtll }),
	},
	{
		"16-byte LL option is ignored",
		xcat(xeth("86dd"), xip6("3a"), xhex("87 00 0000 00000000"), xndTarget, xhex("01 02 0a0b0c0d0e0f 0000000000000000"), xsllOpt),
		xwith(xkeyIP6(58), func(k *Key) { k.TpSrc, k.NDTarget, k.NDSLL = 135, xtarget6, xsll }),
	},
	{
		"nsh md type 1 (the frame of OVS's test 'nsh - decap header')",
		xcat(xeth("894f"), xhex(
			"0206",                                // ver 0, flags 0, ttl 8, length 6 words
			"01",                                  // md type 1
			"03",                                  // next protocol: Ethernet
			"000064 03",                           // spi 0x64, si 3
			"01020304 05060708 090a0b0c 0d0e0f10", // c1..c4
		), xeth("0800")),
		xwith(xkeyL2(EthTypeNSH), func(k *Key) {
			k.NSH = NSH{TTL: 8, MDType: 1, NP: 3, SPI: 0x64, SI: 3,
				C: [4]uint32{0x01020304, 0x05060708, 0x090a0b0c, 0x0d0e0f10}}
		}),
	},
	{
		"nsh flags, md type 2 keys no context",
		xcat(xeth("894f"), xhex("3fc3", "02", "01", "abcdef ff", "0001 02 01 00000000")),
		xwith(xkeyL2(EthTypeNSH), func(k *Key) { k.NSH = NSH{Flags: 3, TTL: 0x3f, MDType: 2, NP: 1, SPI: 0xabcdef, SI: 0xff} }),
	},
	{
		"nsh md type 1 of the wrong length is not keyed",
		xcat(xeth("894f"), xhex("0207", "01", "03", "000064 03", "01020304 05060708 090a0b0c 0d0e0f10 00000000")),
		xkeyL2(EthTypeNSH),
	},
	{
		"nsh version 1 is not keyed",
		xcat(xeth("894f"), xhex("4206", "01", "03", "000064 03", "01020304 05060708 090a0b0c 0d0e0f10")),
		xkeyL2(EthTypeNSH),
	},
	{
		"nsh cut short is not keyed",
		xcat(xeth("894f"), xhex("0206", "01", "03", "000064 03", "01020304")),
		xkeyL2(EthTypeNSH),
	},
	{
		"trailing bytes under 8 are not an option",
		xcat(xeth("86dd"), xip6("3a"), xhex("87 00 0000 00000000"), xndTarget, xsllOpt, xhex("01 01 0102")),
		xwith(xkeyIP6(58), func(k *Key) { k.TpSrc, k.NDTarget, k.NDSLL = 135, xtarget6, xsll }),
	},
}

func TestExtract(t *testing.T) {
	for _, tc := range extractCases {
		t.Run(tc.name, func(t *testing.T) {
			got := Extract(tc.pkt, Metadata{})
			if got != tc.want {
				exact := ExactMask()
				t.Errorf("Extract(%x):\n%s", tc.pkt, extractDiffKeys(&got, &tc.want, &exact))
			}
			var into Key
			into.Regs[3] = 7 // ExtractInto must overwrite every field
			ExtractInto(&into, tc.pkt, nil)
			if into != got {
				t.Errorf("ExtractInto differs from Extract")
			}
		})
	}
}

func TestExtractMetadata(t *testing.T) {
	md := Metadata{
		InPort: 3, Priority: 4, Mark: 5, RecircID: 6, DPHash: 7,
		Tunnel:  Tunnel{ID: 42, IPv4Src: [4]byte{1, 2, 3, 4}, TTL: 9, Flags: TunnelKey},
		CtState: CtTracked | CtNew, CtZone: 8, CtMark: 9, CtLabels: [16]byte{15: 1},
	}
	pkt := xcat(xeth("0800"), xip4("11", "0000"), xudpHdr)
	want := xudpPorts(xkeyIP4(17))
	want.InPort, want.Priority, want.Mark, want.RecircID, want.DPHash = 3, 4, 5, 6, 7
	want.Tunnel, want.CtState, want.CtZone, want.CtMark, want.CtLabels = md.Tunnel, md.CtState, 8, 9, md.CtLabels
	if got := Extract(pkt, md); got != want {
		exact := ExactMask()
		t.Errorf("Extract:\n%s", extractDiffKeys(&got, &want, &exact))
	}
	if mk := metadataKey(&md); mk != Extract(nil, md) {
		t.Errorf("Extract of an empty frame is not metadataKey")
	}
}

// extractBenchPackets are one packet of each kind the benchmarks and the
// allocation test run over.
var extractBenchPackets = []struct {
	name string
	pkt  []byte
}{
	{"TCP4", xcat(xeth("0800"), xip4("06", "4000"), xhex("0050 c000 00000001 00000002 5012 ffff 0000 0000"), make([]byte, 64))},
	{"UDP6Ext", xcat(xeth("86dd"), xip6("00"), xhex("2c 00 010400000000"), xhex("3c 00 0001 00000001"), xhex("11 01 010c 000000000000000000000000"), xudpHdr, make([]byte, 64))},
	{"ARP", xcat(xeth("0806"), xhex("0001 0800 06 04 0001 020000000002 0a000001 000000000000 0a000002"), make([]byte, 18))},
	{"VLAN", xcat(xeth("88a8", "3064", "8100", "0fff", "0800"), xip4("11", "0000"), xudpHdr, make([]byte, 64))},
	{"ND", xcat(xeth("86dd"), xip6("3a"), xhex("88 00 0000 e0000000"), xndTarget, xtllOpt, xsllOpt)},
	{"SNAP", xcat(xeth("0030", "aa aa 03 000000 0800"), xip4("84", "0000"), xhex("0b59 0b5a 01020304 00000000"))},
}

func TestExtractAllocs(t *testing.T) {
	md := &Metadata{InPort: 1}
	var k Key
	for _, p := range extractBenchPackets {
		if n := testing.AllocsPerRun(100, func() { ExtractInto(&k, p.pkt, md) }); n != 0 {
			t.Errorf("ExtractInto(%s): %v allocations, want 0", p.name, n)
		}
		if n := testing.AllocsPerRun(100, func() { k = Extract(p.pkt, *md) }); n != 0 {
			t.Errorf("Extract(%s): %v allocations, want 0", p.name, n)
		}
		if k.EthType == 0 {
			t.Errorf("%s: extracted no EthType", p.name)
		}
	}
	for _, p := range genPackets(t, 1) {
		if n := testing.AllocsPerRun(100, func() { ExtractInto(&k, p.data, md) }); n != 0 {
			t.Errorf("ExtractInto(%s): %v allocations, want 0", p.kind, n)
		}
		if n := testing.AllocsPerRun(100, func() { k = Extract(p.data, *md) }); n != 0 {
			t.Errorf("Extract(%s): %v allocations, want 0", p.kind, n)
		}
	}
}

func BenchmarkExtractInto(b *testing.B) {
	md := &Metadata{InPort: 1}
	for _, p := range extractBenchPackets {
		b.Run(p.name, func(b *testing.B) {
			var k Key
			b.ReportAllocs()
			b.SetBytes(int64(len(p.pkt)))
			for b.Loop() {
				ExtractInto(&k, p.pkt, md)
			}
		})
	}
}

func BenchmarkExtract(b *testing.B) {
	md := Metadata{InPort: 1}
	for _, p := range extractBenchPackets {
		b.Run(p.name, func(b *testing.B) {
			var k Key
			b.ReportAllocs()
			for b.Loop() {
				k = Extract(p.pkt, md)
			}
			_ = k
		})
	}
}
