package conntrack

import (
	"encoding/binary"
	"net/netip"
	"testing"

	"github.com/mdlayher/netlink"
	"golang.org/x/sys/unix"
)

// message builds a ctnetlink conntrack message's payload, as the kernel
// sends it: nfgenmsg, then nested big-endian attributes.
func message(t testing.TB, e Entry) []byte {
	ae := netlink.NewAttributeEncoder()
	ae.ByteOrder = binary.BigEndian
	tuple := func(typ uint16, tp Tuple) {
		ae.Nested(typ, func(n *netlink.AttributeEncoder) error {
			n.Nested(ctaTupleIP, func(ip *netlink.AttributeEncoder) error {
				if tp.Src.Is4() {
					ip.Bytes(ctaIPv4Src, tp.Src.AsSlice())
					ip.Bytes(ctaIPv4Dst, tp.Dst.AsSlice())
				} else {
					ip.Bytes(ctaIPv6Src, tp.Src.AsSlice())
					ip.Bytes(ctaIPv6Dst, tp.Dst.AsSlice())
				}
				return nil
			})
			n.Nested(ctaTupleProto, func(p *netlink.AttributeEncoder) error {
				p.Uint8(ctaProtoNum, tp.Proto)
				if tp.Proto == unix.IPPROTO_ICMP {
					p.Uint16(ctaProtoICMPID, tp.ICMPID)
					p.Uint8(ctaProtoICMPType, tp.ICMPType)
					p.Uint8(ctaProtoICMPCode, tp.ICMPCode)
				} else {
					p.Uint16(ctaProtoSrcPort, tp.SrcPort)
					p.Uint16(ctaProtoDstPort, tp.DstPort)
				}
				return nil
			})
			return nil
		})
	}
	tuple(ctaTupleOrig, e.Orig)
	tuple(ctaTupleReply, e.Reply)
	ae.Uint32(ctaStatus, e.Status)
	ae.Uint32(ctaTimeout, e.Timeout)
	ae.Uint32(ctaMark, e.Mark)
	ae.Uint32(ctaID, e.ID)
	if e.Zone != 0 {
		ae.Uint16(ctaZone, e.Zone)
	}
	if e.HasTCPState {
		ae.Nested(ctaProtoinfo, func(n *netlink.AttributeEncoder) error {
			n.Nested(ctaProtoinfoTCP, func(tcp *netlink.AttributeEncoder) error {
				tcp.Uint8(ctaProtoinfoTCPState, e.TCPState)
				return nil
			})
			return nil
		})
	}
	if e.Labels != ([16]byte{}) {
		ae.Bytes(ctaLabels, e.Labels[:])
	}
	if e.Helper != "" {
		ae.Nested(ctaHelp, func(n *netlink.AttributeEncoder) error {
			n.String(ctaHelpName, e.Helper)
			return nil
		})
	}
	b, err := ae.Encode()
	if err != nil {
		t.Fatal(err)
	}
	return append([]byte{unix.AF_INET, 0, 0, 0}, b...)
}

var (
	a1, a2 = netip.MustParseAddr("10.0.0.1"), netip.MustParseAddr("10.0.0.2")
	udp    = Entry{Orig: Tuple{Src: a1, Dst: a2, Proto: unix.IPPROTO_UDP, SrcPort: 1234, DstPort: 53},
		Reply: Tuple{Src: a2, Dst: a1, Proto: unix.IPPROTO_UDP, SrcPort: 53, DstPort: 1234}, Timeout: 30, ID: 77, Status: 8}
	icmp = Entry{Orig: Tuple{Src: a1, Dst: a2, Proto: unix.IPPROTO_ICMP, ICMPID: 9, ICMPType: 8},
		Reply: Tuple{Src: a2, Dst: a1, Proto: unix.IPPROTO_ICMP, ICMPID: 9}, Zone: 5, Mark: 3}
	tcp = Entry{Orig: Tuple{Src: a1, Dst: a2, Proto: unix.IPPROTO_TCP, SrcPort: 40000, DstPort: 80},
		Reply: Tuple{Src: a2, Dst: a1, Proto: unix.IPPROTO_TCP, SrcPort: 80, DstPort: 40000}, TCPState: 3, HasTCPState: true}
)

// The want texts follow ovs-dpctl 3.1's dump-conntrack (lib/ct-dpif.c).
func TestParseAndFormat(t *testing.T) {
	tests := []struct {
		name           string
		e              Entry
		verbose, stats bool
		want           string
	}{
		{"udp", udp, false, false, "udp,orig=(src=10.0.0.1,dst=10.0.0.2,sport=1234,dport=53),reply=(src=10.0.0.2,dst=10.0.0.1,sport=53,dport=1234)"},
		{"udp -m -s", udp, true, true, "udp,orig=(src=10.0.0.1,dst=10.0.0.2,sport=1234,dport=53),reply=(src=10.0.0.2,dst=10.0.0.1,sport=53,dport=1234),id=77,status=CONFIRMED,timeout=30"},
		{"icmp in a zone", icmp, false, false, "icmp,orig=(src=10.0.0.1,dst=10.0.0.2,id=9,type=8,code=0),reply=(src=10.0.0.2,dst=10.0.0.1,id=9,type=0,code=0),zone=5,mark=3"},
		{"tcp", tcp, false, false, "tcp,orig=(src=10.0.0.1,dst=10.0.0.2,sport=40000,dport=80),reply=(src=10.0.0.2,dst=10.0.0.1,sport=80,dport=40000),protoinfo=(state=ESTABLISHED)"},
		// Labels are the bitmap, label 4 in the first byte; OVS prints the
		// number, then protoinfo, then the helper.
		{"tcp with labels and a helper", func() Entry {
			e := tcp
			e.Labels[0], e.Helper = 0x10, "ftp"
			return e
		}(), false, false, "tcp,orig=(src=10.0.0.1,dst=10.0.0.2,sport=40000,dport=80),reply=(src=10.0.0.2,dst=10.0.0.1,sport=80,dport=40000),labels=0x10,protoinfo=(state=ESTABLISHED),helper=ftp"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, err := ParseEntry(message(t, tt.e))
			if err != nil {
				t.Fatal(err)
			}
			if e != tt.e {
				t.Errorf("parsed %+v\nwant   %+v", e, tt.e)
			}
			if got := e.Format(tt.verbose, tt.stats); got != tt.want {
				t.Errorf("got  %s\nwant %s", got, tt.want)
			}
		})
	}
}

func TestParseEntryRejects(t *testing.T) {
	good := message(t, udp)
	for name, b := range map[string][]byte{
		"empty":        nil,
		"no attrs":     {2, 0, 0, 0},
		"truncated":    good[:len(good)-3],
		"short header": {2, 0},
	} {
		if _, err := ParseEntry(b); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

func TestTCPStateName(t *testing.T) {
	for st, want := range map[uint8]string{0: "CLOSED", 1: "SYN_SENT", 2: "ESTABLISHED", 3: "ESTABLISHED", 4: "FIN_WAIT_1",
		7: "TIME_WAIT", 8: "CLOSING", 9: "SYN_SENT", 200: "CLOSED"} {
		if got := TCPStateName(st); got != want {
			t.Errorf("state %d: %s, want %s", st, got, want)
		}
	}
}

// FuzzParseEntry: the decoder of the kernel's messages never panics, and
// what it accepts formats.
func FuzzParseEntry(f *testing.F) {
	for _, e := range []Entry{udp, icmp, tcp} {
		f.Add(message(f, e))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		e, err := ParseEntry(b)
		if err != nil {
			return
		}
		_ = e.Format(true, true)
	})
}

// TestEncodeKey: Delete names a connection by what the kernel sent for
// it: the original tuple (ICMP ids and all) and the zone.
func TestEncodeKey(t *testing.T) {
	for _, e := range []Entry{udp, icmp, tcp} {
		b, err := encodeKey(&e)
		if err != nil {
			t.Fatal(err)
		}
		ad, err := netlink.NewAttributeDecoder(b)
		if err != nil {
			t.Fatal(err)
		}
		ad.ByteOrder = binary.BigEndian
		var got Tuple
		var zone uint16
		for ad.Next() {
			switch ad.Type() {
			case ctaTupleOrig:
				ad.Nested(func(n *netlink.AttributeDecoder) error { return parseTuple(n, &got) })
			case ctaZone:
				zone = ad.Uint16()
			default:
				t.Errorf("unexpected attribute %d", ad.Type())
			}
		}
		if err := ad.Err(); err != nil {
			t.Fatal(err)
		}
		if got != e.Orig || zone != e.Zone {
			t.Errorf("encoded %+v zone %d, want %+v zone %d", got, zone, e.Orig, e.Zone)
		}
	}
}
