package datapath

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"testing"

	"github.com/govswitch/govswitch/flow"
)

func inetSum(b []byte) uint16 {
	var s uint32
	for i := 0; i+1 < len(b); i += 2 {
		s += uint32(binary.BigEndian.Uint16(b[i:]))
	}
	if len(b)%2 == 1 {
		s += uint32(b[len(b)-1]) << 8
	}
	for s>>16 != 0 {
		s = s&0xffff + s>>16
	}
	return ^uint16(s)
}

// TestExecutorSlowSets: the ARP and ICMP sets the kernel refuses run on
// the packet bytes in userspace; ICMP's checksum stays valid.
func TestExecutorSlowSets(t *testing.T) {
	arp, _ := hex.DecodeString(
		"ffffffffffff" + "808888888888" + "0806" + // Ethernet
			"0001" + "0800" + "06" + "04" + "0001" + // htype, ptype, hlen, plen, op
			"808888888888" + "0a000001" + // sha, spa
			"000000000000" + "0a000009") // tha, tpa
	acts, err := ParseActions("set(arp(sip=10.0.0.9,tip=10.0.0.1,op=2/0xff,sha=00:00:5e:00:00:09,tha=80:88:88:88:88:88)),1")
	if err != nil {
		t.Fatal(err)
	}
	var got []byte
	e := Executor{Output: func(_ uint32, pkt []byte) { got = append([]byte(nil), pkt...) }}
	md := flow.Key{InPort: 1}
	if err := e.Execute(arp, &md, acts); err != nil {
		t.Fatal(err)
	}
	want := "ffffffffffff" + "808888888888" + "0806" + "0001" + "0800" + "06" + "04" + "0002" +
		"00005e000009" + "0a000009" + "808888888888" + "0a000001"
	if hex.EncodeToString(got) != want {
		t.Errorf("ARP after set:\n%x\nwant\n%s", got, want)
	}

	// An ICMP echo request becomes a reply.
	icmp, _ := hex.DecodeString(
		"020000000002" + "020000000001" + "0800" +
			"4500001c00000000400100000a0000010a000002" + // IPv4, checksum left 0
			"0800f7fd00010001") // echo request id 1 seq 1, valid checksum
	if inetSum(icmp[34:]) != 0 {
		t.Fatalf("test packet's ICMP checksum is wrong")
	}
	acts, err = ParseActions("set(icmp(type=0,code=0)),1")
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Execute(icmp, &md, acts); err != nil {
		t.Fatal(err)
	}
	if got[34] != 0 || got[35] != 0 || inetSum(got[34:]) != 0 {
		t.Errorf("ICMP after set: %x (checksum %s)", got[34:], map[bool]string{true: "ok", false: "bad"}[inetSum(got[34:]) == 0])
	}

	// A set of ARP fields on a packet that is not ARP fails.
	if err := e.Execute(icmp, &md, mustParse(t, "set(arp(op=2/0xff))")); err == nil {
		t.Error("set arp on an IPv4 packet ran")
	}
}

// TestExecutorSetND: a set of nd_target and nd_sll rewrites a neighbour
// solicitation's target and source link-layer address option, and one of
// nd_tll an advertisement's target link-layer address option; the ICMPv6
// checksum stays valid. A packet that is no ND message is left alone.
func TestExecutorSetND(t *testing.T) {
	ns := func(typ, opt byte) []byte {
		b, _ := hex.DecodeString(
			"333300000001" + "020000000001" + "86dd" +
				"6000000000203aff" + "fd000000000000000000000000000001" + "ff020000000000000000000001ff0002" +
				"87000000" + "00000000" + "fd000000000000000000000000000002" + // type, code, checksum 0; reserved; target
				"0101020000000001") // SLL option
		b[54] = typ
		b[78] = opt
		binary.BigEndian.PutUint16(b[56:], icmp6Sum(b[22:38], b[38:54], b[54:]))
		return b
	}
	var got []byte
	e := Executor{Output: func(_ uint32, pkt []byte) { got = append([]byte(nil), pkt...) }}
	md := flow.Key{InPort: 1}
	for _, tc := range []struct {
		name, acts string
		pkt        []byte
		target     string
		opt        string
	}{
		{"solicitation, target and sll", "set(nd(target=fd00::99,sll=00:00:5e:00:00:09)),1", ns(135, 1),
			"fd000000000000000000000000000099", "010100005e000009"},
		{"advertisement, tll full", "set(nd(target=fd00::2,sll=00:00:00:00:00:00,tll=00:00:5e:00:00:0a)),1", ns(136, 2),
			"fd000000000000000000000000000002", "020100005e00000a"},
		{"solicitation, only the tll", "set(nd(tll=00:00:5e:00:00:0a)),1", ns(135, 1),
			"fd000000000000000000000000000002", "0101020000000001"},
		{"echo request untouched", "set(nd(target=fd00::99)),1", ns(128, 1),
			"fd000000000000000000000000000002", "0101020000000001"},
	} {
		if err := e.Execute(tc.pkt, &md, mustParse(t, tc.acts)); err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if h := hex.EncodeToString(got[62:78]); h != tc.target {
			t.Errorf("%s: target %s, want %s", tc.name, h, tc.target)
		}
		if h := hex.EncodeToString(got[78:86]); h != tc.opt {
			t.Errorf("%s: option %s, want %s", tc.name, h, tc.opt)
		}
		if s := icmp6Sum(got[22:38], got[38:54], got[54:]); s != 0 {
			t.Errorf("%s: ICMPv6 checksum does not verify (%#x)", tc.name, s)
		}
	}
}

// icmp6Sum is the ICMPv6 checksum over the pseudo-header and msg: 0 when
// msg carries a valid one.
func icmp6Sum(src, dst, msg []byte) uint16 {
	var ph []byte
	ph = append(ph, src...)
	ph = append(ph, dst...)
	ph = binary.BigEndian.AppendUint32(ph, uint32(len(msg)))
	ph = append(ph, 0, 0, 0, 58)
	return inetSum(append(ph, msg...))
}

func mustParse(t *testing.T, s string) []byte {
	t.Helper()
	b, err := ParseActions(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// FuzzExecuteSlow runs actions, slow-path sets among them, on arbitrary
// packets: the executor must never panic, whatever the packet's headers.
func FuzzExecuteSlow(f *testing.F) {
	arp, _ := hex.DecodeString("ffffffffffff8088888888880806000108000604000180888888888" + "80a000001000000000000" + "0a000009")
	icmp, _ := hex.DecodeString("020000000002020000000001080045000" + "01c00000000400100000a0000010a0000020800f7fd00010001")
	for _, s := range []string{
		"set(arp(sip=10.0.0.9,tip=10.0.0.1,op=2/0xff,sha=00:00:5e:00:00:09,tha=80:88:88:88:88:88)),1",
		"set(arp(sip=10.0.0.9,tip=10.0.0.1,op=2,sha=00:00:5e:00:00:09,tha=80:88:88:88:88:88)),pop_vlan,1",
		"set(icmp(type=0,code=0)),1", "push_vlan(vid=5,pcp=0),set(icmpv6(type=129,code=0)),2",
		"add_mpls(label=2,tc=0,ttl=64,bos=1,eth_type=0x8847),push_eth(src=00:00:00:00:00:01,dst=00:00:00:00:00:02),2",
		"pop_eth,pop_mpls(eth_type=0x6558),1", "pop_eth,pop_mpls(eth_type=0x800),push_eth(src=00:00:00:00:00:01,dst=00:00:00:00:00:02),1",
		"pop_eth,push_eth(src=00:00:00:00:00:01,dst=00:00:00:00:00:02),clone(pop_eth,1),1",
	} {
		a := mustParseF(f, s)
		f.Add(arp, a)
		f.Add(icmp, a)
		f.Add(arp[:30], a)
	}
	f.Fuzz(func(t *testing.T, pkt, actions []byte) {
		var e Executor
		md := flow.Key{InPort: 1}
		_ = e.Execute(pkt, &md, actions)
	})
}

func mustParseF(f *testing.F, s string) []byte {
	b, err := ParseActions(s)
	if err != nil {
		f.Fatal(err)
	}
	return b
}

// TestExecutorPacketTypes: OVS test 45's encapsulation and test 49's
// decapsulation, in userspace: add_mpls and push_eth put an MPLS label
// and a new Ethernet header before the frame; pop_eth and pop_mpls to TEB
// take them off again.
func TestExecutorPacketTypes(t *testing.T) {
	inner, _ := hex.DecodeString("36b1ee7c010236b1ee7c01030800" + "4500001c00000000400100000a0000010a000002" + "0800f7fd00010001")
	var got []byte
	e := Executor{Output: func(_ uint32, pkt []byte) { got = append([]byte(nil), pkt...) }}
	md := flow.Key{InPort: 1}
	enc := mustParse(t, "add_mpls(label=2,tc=0,ttl=64,bos=1,eth_type=0x8847),push_eth(src=00:00:00:00:00:01,dst=00:00:00:00:00:02),2")
	if err := e.Execute(inner, &md, enc); err != nil {
		t.Fatal(err)
	}
	want := "000000000002" + "000000000001" + "8847" + "00002140" + hex.EncodeToString(inner)
	if hex.EncodeToString(got) != want {
		t.Fatalf("encapsulated:\n%x\nwant\n%s", got, want)
	}
	outer := got
	var md2 flow.Key
	var back []byte
	e.Recirc = func(m flow.Key, pkt []byte) { md2, back = m, append([]byte(nil), pkt...) }
	if err := e.Execute(outer, &md, mustParse(t, "pop_eth,pop_mpls(eth_type=0x6558),recirc(0x5)")); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(back, inner) || md2.RecircID != 5 {
		t.Errorf("decapsulated (recirc %d):\n%x\nwant\n%x", md2.RecircID, back, inner)
	}
	if err := e.Execute(inner, &md, mustParse(t, "push_eth(src=00:00:00:00:00:01,dst=00:00:00:00:00:02)")); err == nil {
		t.Error("push_eth on an Ethernet frame ran")
	}

	// OVS test 38's decap: the label of an Ethernet MPLS frame popped
	// to IPv4, then a new Ethernet header of that type.
	mplsIP, _ := hex.DecodeString("36b1ee7c010236b1ee7c0103" + "8847" + "00002140" + hex.EncodeToString(inner[14:]))
	back = nil
	if err := e.Execute(mplsIP, &md, mustParse(t,
		"pop_eth,pop_mpls(eth_type=0x800),push_eth(src=00:00:00:00:00:01,dst=00:00:00:00:00:02),recirc(0x6)")); err != nil {
		t.Fatal(err)
	}
	if want := "000000000002" + "000000000001" + "0800" + hex.EncodeToString(inner[14:]); hex.EncodeToString(back) != want || md2.RecircID != 6 {
		t.Errorf("decapsulated to IPv4 (recirc %d):\n%x\nwant\n%s", md2.RecircID, back, want)
	}
}
