package datapath

import (
	"bytes"
	"errors"
	"net/netip"
	"reflect"
	"testing"

	"github.com/govswitch/govswitch/flow"
	"github.com/govswitch/govswitch/netlinkio"
)

func TestActionsGolden(t *testing.T) {
	if !littleEndian() {
		t.Skip("golden rows are written for a little-endian host")
	}
	k := flow.Key{IPv4Src: [4]byte{192, 168, 0, 1}, NwTTL: 9, NwProto: 6}
	m := flow.Mask{IPv4Src: [4]byte{0xff, 0xff, 0xff, 0}, NwProto: 0xff}
	var b []byte
	b = AppendPushVLAN(b, flow.EthTypeVLAN, 0x2000|10)
	b = AppendOutput(b, 3)
	b = AppendPopVLAN(b)
	b = AppendSetMasked(b, KeyAttrIPv4, &k, &m)
	b = AppendUserspace(b, 0x1234, []byte{1, 2, 3})
	b = AppendCT(b, &CT{Commit: true, Zone: 5})
	b = AppendSample(b, 0x80000000, AppendOutput(nil, 1))
	want := hexRows(t, `
		0800 0400 8100 300a          // PUSH_VLAN tpid 0x8100, tci pcp 1 | present | vid 10 (be16)
		0800 0100 03000000           // OUTPUT port 3 (u32, host order)
		0400 0500                    // POP_VLAN, no payload
		2000 0b00                    // SET_MASKED, 32 bytes
		  1c00 0700                  //   IPV4, 24 bytes: value then mask
		    c0a80000 00000000 00 00 00 00 // value: src 192.168.0.0 (masked), the rest zero
		    ffffff00 00000000 00 00 00 00 // mask: src /24; proto and frag never in a set mask
		1400 0200                    // USERSPACE, 20 bytes (the last attribute's padding included)
		  0800 0100 34120000         //   PID 0x1234
		  0700 0200 010203 00        //   USERDATA 01 02 03, padding
		1000 0c00                    // CT, 16 bytes
		  0400 0100                  //   COMMIT flag
		  0600 0200 0500 0000        //   ZONE 5 (u16), padding
		1800 0600                    // SAMPLE, 24 bytes
		  0800 0100 00000080         //   PROBABILITY 0x80000000 (about half)
		  0c00 0200                  //   ACTIONS
		    0800 0100 01000000       //     OUTPUT port 1
	`)
	if !bytes.Equal(b, want) {
		t.Errorf("actions:\n got %x\nwant %x", b, want)
	}
	const text = "push_vlan(vid=10,pcp=1),3,pop_vlan,set(ipv4(src=192.168.0.0/255.255.255.0))," +
		"userspace(pid=4660,userdata(010203)),ct(commit,zone=5),sample(sample=50.0%,actions(1))"
	if got := FormatActions(want); got != text {
		t.Errorf("FormatActions:\n got %s\nwant %s", got, text)
	}
	parsed, err := ParseActions(text)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(parsed, want) {
		t.Errorf("ParseActions:\n got %x\nwant %x", parsed, want)
	}
}

// TestActionText holds each action's text to the form ovs-dpctl prints:
// ParseActions then FormatActions gives the canonical text back.
// actionTextCases are action lists in ovs-dpctl text; out is the
// canonical text when it differs from in. ovsSkip says why OVS itself
// cannot take the input (TestOVSActionText).
const ovsPadsUserdata = "OVS's parser pads userdata to 8 bytes and adds an empty cookie"

var actionTextCases = []struct {
	name, in, out string
	ovsSkip       string
}{
	{"drop", "drop", "", ""},
	{"empty is drop", "", "drop", ""},
	{"outputs", "1,2,65535", "", ""},
	{"hex port", "0x10", "16", ""},
	{"userspace", "userspace(pid=1234,userdata(01020304))", "", ovsPadsUserdata},
	{"userspace all options", "userspace(pid=1,userdata(),actions,tunnel_out_port=4)", "", ovsPadsUserdata},
	{"userspace bare", "userspace(pid=7)", "", ovsPadsUserdata},
	{"userspace slow_path", "userspace(pid=9,slow_path(action))", "", ""},
	{"userspace ipfix", "userspace(pid=5,ipfix(output_port=4294967295))", "", ""},
	{"userspace ipfix tunnel_out_port", "userspace(pid=5,ipfix(output_port=4),tunnel_out_port=4)", "", ""},
	{"userspace flow_sample", "userspace(pid=5,flow_sample(probability=65535,collector_set_id=5,obs_domain_id=3,obs_point_id=4,output_port=2,egress),tunnel_out_port=2)", "", ""},
	{"userspace flow_sample ingress", "userspace(pid=5,flow_sample(probability=100,collector_set_id=1,obs_domain_id=0,obs_point_id=0,output_port=4294967295,ingress))", "", ""},
	{"userspace flow_sample default", "userspace(pid=5,flow_sample(probability=1,collector_set_id=1,obs_domain_id=2,obs_point_id=3,output_port=7))", "", ""},
	{"userspace slow_path reasons", "userspace(pid=9,slow_path(lacp,action))", "", "OVS 3.1 prints reasons joined by commas but does not parse them back"},
	{"set arp masked", "set(arp(sip=10.0.0.9,tip=10.0.0.1,op=2/0xff,sha=00:00:5e:00:00:09,tha=80:88:88:88:88:88))", "", ""},
	{"set arp full", "set(arp(sip=10.0.0.9,tip=10.0.0.1,op=2,sha=00:00:5e:00:00:09,tha=80:88:88:88:88:88))", "", ""},
	{"set icmp", "set(icmp(type=0,code=0))", "", ""},
	{"set icmpv6", "set(icmpv6(type=129,code=0))", "", ""},
	{"set nd full", "set(nd(target=fd00::99,sll=00:00:5e:00:00:09,tll=00:00:00:00:00:00))", "", ""},
	{"set nd masked", "set(nd(target=fd00::99))", "", ""},
	{"set nd sll", "set(nd(sll=00:00:5e:00:00:09))", "", ""},
	{"push_vlan", "push_vlan(vid=10,pcp=0),3", "", ""},
	{"push_vlan qinq", "push_vlan(tpid=0x88a8,vid=4095,pcp=7)", "", ""},
	{"push_vlan cfi=0", "push_vlan(vid=1,pcp=2,cfi=0)", "", ""},
	{"pop_vlan", "pop_vlan,pop_vlan,1", "", ""},
	{"set eth", "set(eth(src=00:11:22:33:44:55,dst=66:77:88:99:aa:bb))", "", ""},
	{"set eth masked", "set(eth(dst=66:77:88:99:aa:00/ff:ff:ff:ff:ff:00))", "", ""},
	{"set ipv4 full", "set(ipv4(src=10.0.0.1,dst=10.0.0.2,proto=6,tos=0,ttl=64,frag=no))", "", ""},
	{"set ipv4 masked", "set(ipv4(src=10.0.0.1,ttl=63))", "", ""},
	{"set ipv4 tos", "set(ipv4(tos=0x20/0xfc))", "", ""},
	{"set ipv6 masked", "set(ipv6(dst=2001:db8::1,label=0x12345,hlimit=5))", "", ""},
	{"set ipv6 prefix", "set(ipv6(src=2001:db8::/ffff:ffff::))", "", ""},
	{"set tcp", "set(tcp(src=80,dst=8080))", "", ""},
	{"set udp masked", "set(udp(dst=53))", "", ""},
	{"set sctp", "set(sctp(src=1/0xff))", "", ""},
	{"set skb_mark", "set(skb_mark(0x10))", "", ""},
	{"set skb_priority masked", "set(skb_priority(0x1/0xff))", "", ""},
	{"set ct_mark", "set(ct_mark(0x2a))", "", ""},
	{"set ct_label", "set(ct_label(0x1000000000000000000000000000000f))", "", ""},
	{"set mpls", "set(mpls(label=100,tc=3,ttl=64,bos=1))", "", ""},
	{"set tunnel", "set(tunnel(tun_id=0x2a,src=1.1.1.1,dst=2.2.2.2,tos=0x10,ttl=64,tp_dst=4789,flags(df|key)))", "", ""},
	{"set tunnel ipv6", "set(tunnel(ipv6_dst=2001:db8::9,ttl=1,flags(0)))", "", ""},
	{"sample", "sample(sample=50.0%,actions(1))", "", ""},
	{"sample nested", "sample(sample=10.0%,actions(push_vlan(vid=2,pcp=0),userspace(pid=9)))", "", ovsPadsUserdata},
	{"sample all", "sample(sample=100.0%,actions(drop))", "", "OVS prints actions(drop) but parses only actions()"},
	{"empty nested list", "sample(sample=100.0%,actions())", "sample(sample=100.0%,actions(drop))", ""},
	{"recirc", "recirc(0x1)", "", "OVS parses recirc IDs in decimal only"},
	{"recirc zero", "recirc(0)", "", ""},
	{"recirc decimal", "recirc(16)", "recirc(0x10)", ""},
	{"hash", "hash(l4(0)),recirc(2)", "hash(l4(0)),recirc(0x2)", "OVS 3.1 has no parser for hash"},
	{"push_mpls", "push_mpls(label=10,tc=1,ttl=64,bos=1,eth_type=0x8847)", "", "OVS has no parser for push_mpls"},
	{"pop_mpls", "pop_mpls(eth_type=0x800)", "", "OVS has no parser for pop_mpls"},
	{"add_mpls", "add_mpls(label=10,tc=0,ttl=2,bos=0,eth_type=0x8848)", "", "OVS has no parser for add_mpls"},
	{"ct bare", "ct", "", ""},
	{"ct commit zone", "ct(commit,zone=1)", "", ""},
	{"ct everything", "ct(commit,zone=65535,mark=0x1/0xff,label=0x5/0xff,helper=ftp,timeout=tp1)", "", ""},
	{"ct force_commit", "ct(force_commit,zone=2)", "", ""},
	{"ct commit and force_commit", "ct(commit,force_commit)", "", "OVS refuses both; the kernel takes them"},
	{"ct full mark", "ct(mark=0x1)", "ct(mark=0x1/0xffffffff)", ""},
	{"ct nat bare", "ct(nat)", "", ""},
	{"ct snat", "ct(commit,nat(src=10.0.0.1-10.0.0.9:1000-2000,persistent,random))", "", ""},
	{"ct dnat v6", "ct(commit,nat(dst=[2001:db8::1]-[2001:db8::2]:80))", "", ""},
	{"ct dnat one address", "ct(commit,nat(dst=10.1.1.1))", "", ""},
	{"ct_clear", "ct_clear,1", "", ""},
	{"trunc", "trunc(100),1", "", ""},
	{"push_eth", "push_eth(src=00:00:00:00:00:01,dst=00:00:00:00:00:02)", "", "OVS parses push_eth only with a type= it does not print"},
	{"pop_eth", "pop_eth", "", "OVS 3.1 does not parse pop_eth"},
	{"pop_nsh", "pop_nsh()", "", ""},
	{"push_nsh md1", "push_nsh(flags=0,ttl=63,mdtype=1,np=3,spi=0x1234,si=255,c1=0x11223344,c2=0x0,c3=0x0,c4=0x0),2", "", ""},
	{"set nsh", "set(nsh(ttl=7,spi=0x101,si=4,c1=0x100f0000/0xffff0000))", "", "OVS's dpctl/add-flow takes set(nsh) only on an NSH key"},
	{"set nsh base only", "set(nsh(flags=0x01/0x03,si=9))", "", "OVS's dpctl/add-flow takes set(nsh) only on an NSH key"},
	{"meter", "meter(0),meter(7)", "", ""},
	{"clone", "clone(2)", "", ""},
	{"clone nested", "clone(set(eth(dst=00:00:00:00:00:09)),clone(1,2),3)", "", ""},
	{"check_pkt_len", "check_pkt_len(size=200,gt(4),le(5))", "", ""},
	{"check_pkt_len empty", "check_pkt_len(size=1500,gt(2),le())", "check_pkt_len(size=1500,gt(2),le(drop))", ""},
	{"dec_ttl", "dec_ttl(le_1(userspace(pid=3))),2", "", "OVS has no parser for dec_ttl"},
}

func TestActionText(t *testing.T) {
	for _, tc := range actionTextCases {
		t.Run(tc.name, func(t *testing.T) {
			b, err := ParseActions(tc.in)
			if err != nil {
				t.Fatalf("ParseActions(%q): %v", tc.in, err)
			}
			want := tc.out
			if want == "" {
				want = tc.in
			}
			if got := FormatActions(b); got != want {
				t.Errorf("FormatActions(ParseActions(%q)) = %q, want %q", tc.in, got, want)
			}
			if err := walkAll(b); err != nil {
				t.Errorf("walk: %v", err)
			}
		})
	}
}

// walkAll walks b and every nested action list in it.
func walkAll(b []byte) error {
	return WalkActions(b, func(a *Action) error {
		for _, nested := range [][]byte{a.Actions, a.IfGreater, a.IfLessEq} {
			if err := walkAll(nested); err != nil {
				return err
			}
		}
		if a.Type == ActionSet || a.Type == ActionSetMasked {
			var k flow.Key
			var m flow.Mask
			return a.DecodeSet(&k, &m)
		}
		return nil
	})
}

func TestParseActionsErrors(t *testing.T) {
	for _, in := range []string{
		"x", "1,", ",1", "push_vlan(vid=5000,pcp=0)", "userspace(userdata(01))", "userspace(pid=1,userdata(0g))",
		"set(ipv4(src=1.2.3))", "set(ipv4(bogus=1))", "set(in_port(1))", "sample(sample=150%,actions(1))",
		"recirc(x)", "hash(crc(1))", "ct(bogus)", "ct(commit,nat(src,dst))", "check_pkt_len(size=1,gt(1))",
		"clone(1", "1)", "dec_ttl(1)", "trunc(99999999999)", "99999999999",
	} {
		if b, err := ParseActions(in); err == nil {
			t.Errorf("ParseActions(%q) = %x, want an error", in, b)
		}
	}
}

func TestActionIterDecodes(t *testing.T) {
	var b []byte
	b = AppendOutput(b, 7)
	b = AppendUserspaceAction(b, &Userspace{PID: 3, Userdata: []byte{9}, WithActions: true, TunnelOutPort: 4, HasTunnelOutPort: true})
	b = AppendPushVLAN(b, flow.EthTypeQinQ, 100)
	b = AppendRecirc(b, 5)
	b = AppendHash(b, HashAlgL4, 77)
	b = AppendPushMPLS(b, 0xabcde, flow.EthTypeMPLS)
	b = AppendPopMPLS(b, flow.EthTypeIPv4)
	b = AppendTrunc(b, 64)
	b = AppendMeter(b, 2)
	b = AppendCheckPktLen(b, 1000, AppendOutput(nil, 1), AppendOutput(nil, 2))
	b = AppendCT(b, &CT{Commit: true, MarkMask: 0xff, Mark: 1, Helper: []byte("ftp"), HasEventMask: true, EventMask: 3,
		HasNAT: true, NAT: NAT{Dst: true, IPMin: netip.MustParseAddr("10.0.0.1"), ProtoMin: 80}})
	b = AppendAttr99(b)
	want := []Action{
		{Type: ActionOutput, Port: 7},
		{Type: ActionUserspace, Userspace: Userspace{PID: 3, Userdata: []byte{9}, WithActions: true, TunnelOutPort: 4, HasTunnelOutPort: true}},
		{Type: ActionPushVLAN, VLAN: flow.VLAN{TPID: flow.EthTypeQinQ, TCI: flow.VLANPresent | 100}},
		{Type: ActionRecirc, ID: 5},
		{Type: ActionHash, HashAlg: HashAlgL4, HashBasis: 77},
		{Type: ActionPushMPLS, MPLSLSE: 0xabcde, EthType: flow.EthTypeMPLS},
		{Type: ActionPopMPLS, EthType: flow.EthTypeIPv4},
		{Type: ActionTrunc, MaxLen: 64},
		{Type: ActionMeter, ID: 2},
		{Type: ActionCheckPktLen, PktLen: 1000, IfGreater: AppendOutput(nil, 1), IfLessEq: AppendOutput(nil, 2)},
		{Type: ActionCT, CT: CT{Commit: true, MarkMask: 0xff, Mark: 1, Helper: []byte("ftp"), HasEventMask: true, EventMask: 3,
			HasNAT: true, NAT: NAT{Dst: true, IPMin: netip.MustParseAddr("10.0.0.1"), ProtoMin: 80}}},
		{Type: 99},
	}
	i := 0
	it := NewActionIter(b)
	for it.Next() {
		got := *it.Action()
		got.Data = nil
		if i >= len(want) {
			t.Fatalf("extra action %+v", got)
		}
		if !actionEqual(&got, &want[i]) {
			t.Errorf("action %d:\n got %+v\nwant %+v", i, got, want[i])
		}
		i++
	}
	if err := it.Err(); err != nil || i != len(want) {
		t.Errorf("walked %d actions, err %v; want %d, nil", i, err, len(want))
	}
}

// AppendAttr99 appends an action of a type the package does not know.
func AppendAttr99(b []byte) []byte { return netlinkio.AppendU8(b, 99, 1) }

func actionEqual(a, b *Action) bool { return reflect.DeepEqual(a, b) }

func TestActionIterErrors(t *testing.T) {
	nested := func(typ ActionType, inner []byte) []byte { return netlinkio.AppendAttr(nil, uint16(typ), inner) }
	tests := []struct {
		name string
		b    []byte
	}{
		{"short output", netlinkio.AppendU16(nil, uint16(ActionOutput), 1)},
		{"pop_vlan with payload", netlinkio.AppendU8(nil, uint16(ActionPopVLAN), 1)},
		{"truncated", AppendOutput(nil, 1)[:6]},
		{"userspace without pid", nested(ActionUserspace, netlinkio.AppendAttr(nil, userspaceAttrUserdata, []byte{1}))},
		{"sample without actions", nested(ActionSample, netlinkio.AppendU32(nil, sampleAttrProbability, 1))},
		{"set of two attributes", nested(ActionSet, netlinkio.AppendU32(netlinkio.AppendU32(nil, KeyAttrSkbMark, 1), KeyAttrPriority, 1))},
		{"set of in_port", nested(ActionSet, netlinkio.AppendU32(nil, KeyAttrInPort, 1))},
		{"set of short eth", nested(ActionSet, netlinkio.AppendAttr(nil, KeyAttrEthernet, make([]byte, 6)))},
		{"masked set of odd length", nested(ActionSetMasked, netlinkio.AppendAttr(nil, KeyAttrTCP, make([]byte, 6)))},
		{"masked tunnel", nested(ActionSetMasked, netlinkio.AppendAttr(nil, KeyAttrTunnel, nil))},
		{"ct mark of 4 bytes", nested(ActionCT, netlinkio.AppendU32(nil, ctAttrMark, 1))},
		{"nat both ways", nested(ActionCT, netlinkio.AppendAttr(nil, ctAttrNAT,
			netlinkio.AppendFlag(netlinkio.AppendFlag(nil, natAttrSrc), natAttrDst)))},
		{"check_pkt_len without lists", nested(ActionCheckPktLen, netlinkio.AppendU16(nil, cplAttrPktLen, 1))},
		{"dec_ttl empty", nested(ActionDecTTL, nil)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := WalkActions(tc.b, func(*Action) error { return nil })
			if !errors.Is(err, ErrAction) {
				t.Errorf("WalkActions = %v, want an ErrAction", err)
			}
		})
	}
}

func TestDecodeSet(t *testing.T) {
	k := flow.Key{EthSrc: mac1, EthDst: mac2, IPv6Src: v6a, IPv6Label: 0x12345, NwTTL: 3, TpSrc: 1, TpDst: 2, Mark: 9}
	m := flow.Mask{IPv6Src: [16]byte{0xff, 0xff}, IPv6Label: 0xffffffff, NwTTL: 0xff}
	tests := []struct {
		name  string
		b     []byte
		wantK flow.Key
		wantM flow.Mask
	}{
		{"set eth", AppendSet(nil, KeyAttrEthernet, &k), flow.Key{EthSrc: mac1, EthDst: mac2},
			flow.Mask{EthSrc: [6]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}, EthDst: [6]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}}},
		{"set udp", AppendSet(nil, KeyAttrUDP, &k), flow.Key{TpSrc: 1, TpDst: 2}, flow.Mask{TpSrc: 0xffff, TpDst: 0xffff}},
		{"set skb_mark", AppendSet(nil, KeyAttrSkbMark, &k), flow.Key{Mark: 9}, flow.Mask{Mark: 0xffffffff}},
		{"masked ipv6", AppendSetMasked(nil, KeyAttrIPv6, &k, &m),
			flow.Key{IPv6Src: [16]byte{0x20, 0x01}, IPv6Label: 0x12345, NwTTL: 3},
			flow.Mask{IPv6Src: [16]byte{0xff, 0xff}, IPv6Label: 0xfffff, NwTTL: 0xff}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			it := NewActionIter(tc.b)
			if !it.Next() {
				t.Fatal(it.Err())
			}
			var gk flow.Key
			var gm flow.Mask
			if err := it.Action().DecodeSet(&gk, &gm); err != nil {
				t.Fatal(err)
			}
			if gk != tc.wantK || gm != tc.wantM {
				t.Errorf("DecodeSet =\n%+v\n%+v\nwant\n%+v\n%+v", gk, gm, tc.wantK, tc.wantM)
			}
		})
	}
}

func TestActionAllocs(t *testing.T) {
	k := testKeys()[4].key
	m := flow.Mask{IPv4Src: [4]byte{0xff, 0xff, 0xff, 0xff}, NwTTL: 0xff}
	buf := make([]byte, 0, 1024)
	ud := []byte{1, 2, 3, 4}
	var acts []byte
	acts = AppendPushVLAN(acts, flow.EthTypeVLAN, 5)
	acts = AppendSetMasked(acts, KeyAttrIPv4, &k, &m)
	acts = AppendUserspace(acts, 9, ud)
	acts = AppendPopVLAN(acts)
	acts = AppendOutput(acts, 1)
	tests := []struct {
		name string
		fn   func()
	}{
		{"AppendOutput", func() { buf = AppendOutput(buf[:0], 1) }},
		{"AppendPushVLAN", func() { buf = AppendPushVLAN(buf[:0], flow.EthTypeVLAN, 10) }},
		{"AppendSetMasked", func() { buf = AppendSetMasked(buf[:0], KeyAttrIPv4, &k, &m) }},
		{"AppendSet", func() { buf = AppendSet(buf[:0], KeyAttrEthernet, &k) }},
		{"AppendUserspace", func() { buf = AppendUserspace(buf[:0], 1, ud) }},
		{"ActionIter", func() {
			it := NewActionIter(acts)
			n := 0
			for it.Next() {
				n++
			}
			if n != 5 || it.Err() != nil {
				t.Fatal(n, it.Err())
			}
		}},
	}
	for _, tc := range tests {
		if n := testing.AllocsPerRun(100, tc.fn); n != 0 {
			t.Errorf("%s: %v allocations, want 0", tc.name, n)
		}
	}
}

func BenchmarkActionIter(b *testing.B) {
	k := testKeys()[4].key
	m := flow.Mask{IPv4Src: [4]byte{0xff, 0xff, 0xff, 0xff}}
	var acts []byte
	acts = AppendPushVLAN(acts, flow.EthTypeVLAN, 5)
	acts = AppendSetMasked(acts, KeyAttrIPv4, &k, &m)
	acts = AppendOutput(acts, 1)
	acts = AppendUserspace(acts, 9, []byte{1, 2, 3, 4})
	b.ReportAllocs()
	for b.Loop() {
		it := NewActionIter(acts)
		for it.Next() {
		}
		if it.Err() != nil {
			b.Fatal(it.Err())
		}
	}
}
