package datapath

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"net"
	"testing"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"

	"github.com/govswitch/govswitch/flow"
)

// buildPacket serializes layers with lengths and checksums computed.
func buildPacket(t testing.TB, ls ...gopacket.SerializableLayer) []byte {
	t.Helper()
	buf := gopacket.NewSerializeBuffer()
	for _, l := range ls {
		if n, ok := l.(interface {
			SetNetworkLayerForChecksum(gopacket.NetworkLayer) error
		}); ok {
			for _, nl := range ls {
				if netl, ok := nl.(gopacket.NetworkLayer); ok {
					if err := n.SetNetworkLayerForChecksum(netl); err != nil {
						t.Fatal(err)
					}
				}
			}
		}
	}
	if err := gopacket.SerializeLayers(buf, gopacket.SerializeOptions{FixLengths: true, ComputeChecksums: true}, ls...); err != nil {
		t.Fatal(err)
	}
	return append([]byte(nil), buf.Bytes()...)
}

// checksumsValid reports whether pkt's checksums are what gopacket
// computes for its headers: decode, re-serialize with checksums, compare.
func checksumsValid(t testing.TB, pkt []byte) bool {
	t.Helper()
	p := gopacket.NewPacket(pkt, layers.LayerTypeEthernet, gopacket.Default)
	var ls []gopacket.SerializableLayer
	var netl gopacket.NetworkLayer
	for _, l := range p.Layers() {
		if nl, ok := l.(gopacket.NetworkLayer); ok {
			netl = nl
		}
		switch l := l.(type) {
		case *layers.TCP:
			l.SetNetworkLayerForChecksum(netl)
		case *layers.UDP:
			l.SetNetworkLayerForChecksum(netl)
		}
		if sl, ok := l.(gopacket.SerializableLayer); ok {
			ls = append(ls, sl)
		} else if pl, ok := l.(*gopacket.Payload); ok {
			ls = append(ls, pl)
		}
	}
	buf := gopacket.NewSerializeBuffer()
	if err := gopacket.SerializeLayers(buf, gopacket.SerializeOptions{ComputeChecksums: true}, ls...); err != nil {
		t.Fatal(err)
	}
	return bytes.Equal(buf.Bytes(), pkt)
}

var (
	hwA = net.HardwareAddr{0, 0, 0, 0, 0, 1}
	hwB = net.HardwareAddr{0, 0, 0, 0, 0, 2}
)

func tcp4Packet(t testing.TB) []byte {
	tcp := &layers.TCP{SrcPort: 1234, DstPort: 80, Seq: 7, SYN: true, Window: 100}
	return buildPacket(t,
		&layers.Ethernet{SrcMAC: hwA, DstMAC: hwB, EthernetType: layers.EthernetTypeIPv4},
		&layers.IPv4{Version: 4, IHL: 5, TTL: 64, Protocol: layers.IPProtocolTCP,
			SrcIP: net.IP{10, 0, 0, 1}, DstIP: net.IP{10, 0, 0, 2}}, tcp, gopacket.Payload("hello"))
}

func udp6Packet(t testing.TB) []byte {
	return buildPacket(t,
		&layers.Ethernet{SrcMAC: hwA, DstMAC: hwB, EthernetType: layers.EthernetTypeIPv6},
		&layers.IPv6{Version: 6, HopLimit: 9, NextHeader: layers.IPProtocolUDP, FlowLabel: 0x12345,
			SrcIP: net.ParseIP("2001:db8::1"), DstIP: net.ParseIP("2001:db8::2")},
		&layers.UDP{SrcPort: 4000, DstPort: 4001}, gopacket.Payload("data"))
}

func udp4NoCsumPacket(t testing.TB) []byte {
	p := buildPacket(t,
		&layers.Ethernet{SrcMAC: hwA, DstMAC: hwB, EthernetType: layers.EthernetTypeIPv4},
		&layers.IPv4{Version: 4, IHL: 5, TTL: 64, Protocol: layers.IPProtocolUDP,
			SrcIP: net.IP{10, 0, 0, 1}, DstIP: net.IP{10, 0, 0, 2}},
		&layers.UDP{SrcPort: 1, DstPort: 2}, gopacket.Payload("x"))
	binary.BigEndian.PutUint16(p[14+20+6:], 0)
	return p
}

func sctp4Packet(t testing.TB) []byte {
	p := buildPacket(t,
		&layers.Ethernet{SrcMAC: hwA, DstMAC: hwB, EthernetType: layers.EthernetTypeIPv4},
		&layers.IPv4{Version: 4, IHL: 5, TTL: 64, Protocol: layers.IPProtocolSCTP,
			SrcIP: net.IP{10, 0, 0, 1}, DstIP: net.IP{10, 0, 0, 2}},
		gopacket.Payload([]byte{0, 9, 0, 10, 0, 0, 0, 1, 0, 0, 0, 0, 1, 2, 3, 4}))
	return p
}

// extract returns the flow key of pkt.
func extract(pkt []byte) flow.Key {
	return flow.Extract(pkt, flow.Metadata{})
}

type outRec struct {
	port uint32
	pkt  []byte
}

func TestExecute(t *testing.T) {
	tcp4 := tcp4Packet(t)
	udp6 := udp6Packet(t)
	tests := []struct {
		name  string
		pkt   []byte
		acts  string
		check func(t *testing.T, outs []outRec)
	}{
		{"output twice", tcp4, "1,2", func(t *testing.T, outs []outRec) {
			if len(outs) != 2 || outs[0].port != 1 || outs[1].port != 2 || !bytes.Equal(outs[1].pkt, tcp4) {
				t.Errorf("outputs %v", outs)
			}
		}},
		{"drop", tcp4, "drop", func(t *testing.T, outs []outRec) {
			if len(outs) != 0 {
				t.Errorf("outputs %v", outs)
			}
		}},
		{"push and pop vlan", tcp4, "push_vlan(vid=10,pcp=3),1,pop_vlan,2", func(t *testing.T, outs []outRec) {
			k := extract(outs[0].pkt)
			if k.VLANs[0] != (flow.VLAN{TPID: flow.EthTypeVLAN, TCI: flow.VLANPresent | 3<<13 | 10}) || k.EthType != flow.EthTypeIPv4 {
				t.Errorf("pushed: %v", k)
			}
			if !bytes.Equal(outs[1].pkt, tcp4) {
				t.Errorf("push then pop changed the packet")
			}
		}},
		{"set eth", tcp4, "set(eth(src=00:00:00:00:00:0a,dst=00:00:00:00:00:0b)),1", func(t *testing.T, outs []outRec) {
			k := extract(outs[0].pkt)
			if k.EthSrc != [6]byte{5: 10} || k.EthDst != [6]byte{5: 11} {
				t.Errorf("got %v", k)
			}
		}},
		{"set ipv4 masked", tcp4, "set(ipv4(src=192.168.1.0/255.255.255.0,ttl=7)),1", func(t *testing.T, outs []outRec) {
			k := extract(outs[0].pkt)
			if k.IPv4Src != [4]byte{192, 168, 1, 1} || k.NwTTL != 7 || k.IPv4Dst != [4]byte{10, 0, 0, 2} {
				t.Errorf("got %v", k)
			}
			if !checksumsValid(t, outs[0].pkt) {
				t.Errorf("bad checksums")
			}
		}},
		{"set ipv4 tos and tcp ports", tcp4, "set(ipv4(tos=0xb8)),set(tcp(src=1,dst=2)),1", func(t *testing.T, outs []outRec) {
			k := extract(outs[0].pkt)
			if k.NwTos != 0xb8 || k.TpSrc != 1 || k.TpDst != 2 {
				t.Errorf("got %v", k)
			}
			if !checksumsValid(t, outs[0].pkt) {
				t.Errorf("bad checksums")
			}
		}},
		{"set ipv6", udp6, "set(ipv6(dst=2001:db8::99,label=0xfffff,tclass=0x20,hlimit=1)),set(udp(dst=9)),1", func(t *testing.T, outs []outRec) {
			k := extract(outs[0].pkt)
			if k.IPv6Dst != [16]byte{0x20, 0x01, 0x0d, 0xb8, 15: 0x99} || k.IPv6Label != 0xfffff || k.NwTos != 0x20 ||
				k.NwTTL != 1 || k.TpDst != 9 || k.TpSrc != 4000 {
				t.Errorf("got %v", k)
			}
			if !checksumsValid(t, outs[0].pkt) {
				t.Errorf("bad checksums")
			}
		}},
		{"udp without checksum keeps none", udp4NoCsumPacket(t), "set(ipv4(dst=1.2.3.4)),set(udp(src=7)),1", func(t *testing.T, outs []outRec) {
			if c := binary.BigEndian.Uint16(outs[0].pkt[14+20+6:]); c != 0 {
				t.Errorf("udp checksum %#x, want 0", c)
			}
		}},
		{"set sctp", sctp4Packet(t), "set(sctp(dst=99)),1", func(t *testing.T, outs []outRec) {
			p := append([]byte(nil), outs[0].pkt[34:]...)
			got := binary.LittleEndian.Uint32(p[8:])
			clear(p[8:12])
			if want := crc32.Checksum(p, crc32.MakeTable(crc32.Castagnoli)); got != want || binary.BigEndian.Uint16(p[2:]) != 99 {
				t.Errorf("sctp crc %#x want %#x, port %d", got, want, binary.BigEndian.Uint16(p[2:]))
			}
		}},
		{"push and pop mpls", tcp4, "push_mpls(label=5,tc=0,ttl=9,bos=1,eth_type=0x8847),1,pop_mpls(eth_type=0x800),2", func(t *testing.T, outs []outRec) {
			k := extract(outs[0].pkt)
			if k.EthType != flow.EthTypeMPLS || k.MPLSLSE != 5<<12|1<<8|9 {
				t.Errorf("pushed: %v", k)
			}
			if !bytes.Equal(outs[1].pkt, tcp4) {
				t.Errorf("push then pop changed the packet")
			}
		}},
		{"trunc applies to one output", tcp4, "trunc(20),1,2", func(t *testing.T, outs []outRec) {
			if len(outs[0].pkt) != 20 || len(outs[1].pkt) != len(tcp4) {
				t.Errorf("lengths %d, %d", len(outs[0].pkt), len(outs[1].pkt))
			}
		}},
		{"clone keeps the original", tcp4, "clone(push_vlan(vid=1,pcp=0),1),2", func(t *testing.T, outs []outRec) {
			if len(outs[0].pkt) != len(tcp4)+4 || !bytes.Equal(outs[1].pkt, tcp4) {
				t.Errorf("outputs %d and %d bytes", len(outs[0].pkt), len(outs[1].pkt))
			}
		}},
		{"check_pkt_len", tcp4, "check_pkt_len(size=50,gt(1),le(2)),check_pkt_len(size=1000,gt(3),le(4))", func(t *testing.T, outs []outRec) {
			if len(outs) != 2 || outs[0].port != 1 || outs[1].port != 4 {
				t.Errorf("outputs %v", outs)
			}
		}},
		{"sample all and none", tcp4, "sample(sample=100.0%,actions(1)),sample(sample=0.0%,actions(2))", func(t *testing.T, outs []outRec) {
			if len(outs) != 1 || outs[0].port != 1 {
				t.Errorf("outputs %v", outs)
			}
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			orig := append([]byte(nil), tc.pkt...)
			var e Executor
			e.Sample = func(p uint32) bool { return p == 0xffffffff }
			var outs []outRec
			e.Output = func(port uint32, p []byte) { outs = append(outs, outRec{port, append([]byte(nil), p...)}) }
			b, err := ParseActions(tc.acts)
			if err != nil {
				t.Fatal(err)
			}
			if err := e.Execute(tc.pkt, &flow.Key{InPort: 5}, b); err != nil {
				t.Fatalf("Execute: %v", err)
			}
			if !bytes.Equal(tc.pkt, orig) {
				t.Errorf("Execute modified its input")
			}
			tc.check(t, outs)
		})
	}
}

func TestExecuteMetadata(t *testing.T) {
	pkt := tcp4Packet(t)
	var e Executor
	var gotMark, gotRecirc, gotPID uint32
	var ud []byte
	e.Userspace = func(u Userspace, md flow.Key, p []byte) {
		gotMark, gotPID, ud = md.Mark, u.PID, append(ud, u.Userdata...)
	}
	e.Recirc = func(md flow.Key, p []byte) { gotRecirc = md.RecircID }
	b, err := ParseActions("set(skb_mark(0x33)),userspace(pid=4,userdata(abcd)),recirc(0x9)")
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Execute(pkt, &flow.Key{Mark: 1}, b); err != nil {
		t.Fatal(err)
	}
	if gotMark != 0x33 || gotPID != 4 || !bytes.Equal(ud, []byte{0xab, 0xcd}) || gotRecirc != 9 {
		t.Errorf("mark %#x pid %d userdata %x recirc %d", gotMark, gotPID, ud, gotRecirc)
	}
}

func TestExecuteErrors(t *testing.T) {
	pkt := tcp4Packet(t)
	tests := []struct {
		name, acts string
		want       error
	}{
		{"ct", "ct(commit)", ErrActionUnsupported},
		{"hash", "hash(l4(0))", ErrActionUnsupported},
		{"recirc without callback", "recirc(1)", ErrActionUnsupported},
		{"set ipv6 on ipv4", "set(ipv6(hlimit=1))", ErrAction},
		{"set udp on tcp", "set(udp(src=1))", ErrAction},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b, err := ParseActions(tc.acts)
			if err != nil {
				t.Fatal(err)
			}
			var e Executor
			if err := e.Execute(pkt, &flow.Key{}, b); !errors.Is(err, tc.want) {
				t.Errorf("Execute = %v, want %v", err, tc.want)
			}
		})
	}
}

func TestExecuteAllocs(t *testing.T) {
	pkt := tcp4Packet(t)
	b, err := ParseActions("push_vlan(vid=10,pcp=0),set(ipv4(src=10.1.1.1,ttl=3)),set(tcp(dst=8080)),1,pop_vlan,clone(2),3")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	e := Executor{Output: func(uint32, []byte) { n++ }}
	md := flow.Key{InPort: 1}
	if err := e.Execute(pkt, &md, b); err != nil {
		t.Fatal(err)
	}
	if allocs := testing.AllocsPerRun(100, func() {
		if err := e.Execute(pkt, &md, b); err != nil {
			t.Fatal(err)
		}
	}); allocs != 0 {
		t.Errorf("Execute: %v allocations, want 0", allocs)
	}
}

func BenchmarkExecute(b *testing.B) {
	pkt := tcp4Packet(b)
	acts, err := ParseActions("push_vlan(vid=10,pcp=0),set(ipv4(src=10.1.1.1,ttl=3)),1")
	if err != nil {
		b.Fatal(err)
	}
	e := Executor{Output: func(uint32, []byte) {}}
	md := flow.Key{InPort: 1}
	b.ReportAllocs()
	for b.Loop() {
		if err := e.Execute(pkt, &md, acts); err != nil {
			b.Fatal(err)
		}
	}
}

// TestChecksumsValidCatchesCorruption keeps the checksum oracle honest.
func TestChecksumsValidCatchesCorruption(t *testing.T) {
	for _, p := range [][]byte{tcp4Packet(t), udp6Packet(t)} {
		if !checksumsValid(t, p) {
			t.Fatalf("a freshly built packet fails the check")
		}
		p[len(p)-1] ^= 1 // payload bit: the L4 checksum no longer matches
		if checksumsValid(t, p) {
			t.Errorf("a corrupted packet passes the check")
		}
	}
}
