package openflow

import (
	"encoding/hex"
	"errors"
	"net/netip"
	"os/exec"
	"strings"
	"testing"
)

// ctFlushUDP is what `ovs-ofctl -O OpenFlow13 ct-flush br0 zone=5
// 'ct_nw_src=10.1.1.1,ct_nw_dst=10.1.1.2,ct_nw_proto=17,ct_tp_src=1,ct_tp_dst=2'
// 'ct_nw_src=10.1.1.2'` sends.
var ctFlushUDP = "" +
	"04 04 0088 00000001" + // OpenFlow 1.3 header, OFPT_EXPERIMENTER, length 136
	"00002320 00000020" + // NX_VENDOR_ID, NXT_CT_FLUSH (32)
	"11 00000000000000" + // ip_proto 17, 7 zero bytes
	"0000 0048 00000000" + // NXT_CT_ORIG_TUPLE, length 72, header padding
	"0000 0014 00000000000000000000ffff0a010101 00000000" + // NXT_CT_TUPLE_SRC 10.1.1.1 (mapped), padding
	"0001 0014 00000000000000000000ffff0a010102 00000000" + // NXT_CT_TUPLE_DST 10.1.1.2
	"0002 0006 0001 0000" + // NXT_CT_TUPLE_SRC_PORT 1
	"0003 0006 0002 0000" + // NXT_CT_TUPLE_DST_PORT 2
	"0001 0020 00000000" + // NXT_CT_REPLY_TUPLE, length 32
	"0000 0014 00000000000000000000ffff0a010102 00000000" + // NXT_CT_TUPLE_SRC 10.1.1.2
	"0002 0006 0005 0000" // NXT_CT_ZONE_ID 5

// ctFlushICMP6 is `ovs-ofctl -O OpenFlow15 ct-flush br0
// 'ct_ipv6_src=fc00::1,ct_ipv6_dst=fc00::2,ct_nw_proto=58,icmp_id=7,icmp_type=128'`.
var ctFlushICMP6 = "" +
	"06 04 0088 00000001" + // OpenFlow 1.5 header, length 136
	"00002320 00000020" + // NX_VENDOR_ID, NXT_CT_FLUSH
	"3a 00000000000000" + // ip_proto 58
	"0000 0050 00000000" + // NXT_CT_ORIG_TUPLE, length 80
	"0000 0014 fc000000000000000000000000000001 00000000" + // NXT_CT_TUPLE_SRC fc00::1
	"0001 0014 fc000000000000000000000000000002 00000000" + // NXT_CT_TUPLE_DST fc00::2
	"0004 0006 0007 0000" + // NXT_CT_TUPLE_ICMP_ID 7
	"0005 0005 80 000000" + // NXT_CT_TUPLE_ICMP_TYPE 128
	"0006 0005 00 000000" + // NXT_CT_TUPLE_ICMP_CODE 0
	"0001 0020 00000000" + // NXT_CT_REPLY_TUPLE, length 32: for ICMP always
	"0004 0006 0000 0000" + // NXT_CT_TUPLE_ICMP_ID 0
	"0005 0005 00 000000" + // NXT_CT_TUPLE_ICMP_TYPE 0
	"0006 0005 00 000000" // NXT_CT_TUPLE_ICMP_CODE 0

func unhex(t testing.TB, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(strings.ReplaceAll(s, " ", ""))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestCtFlushRoundTrip(t *testing.T) {
	a := netip.MustParseAddr
	for _, c := range []struct {
		name string
		hex  string
		want CtFlush
	}{
		{"udp zone 5", ctFlushUDP, CtFlush{Envelope: Envelope{Version: Version13, Xid: 1}, Proto: 17, Family: afInet,
			Orig:    CtFlushTuple{Src: a("10.1.1.1"), Dst: a("10.1.1.2"), SrcPort: 1, DstPort: 2},
			Reply:   CtFlushTuple{Src: a("10.1.1.2")},
			HasZone: true, Zone: 5}},
		{"icmpv6", ctFlushICMP6, CtFlush{Envelope: Envelope{Version: Version15, Xid: 1}, Proto: 58, Family: afInet6,
			Orig: CtFlushTuple{Src: a("fc00::1"), Dst: a("fc00::2"), ICMPID: 7, ICMPType: 128}}},
		{"empty", "01 04 0018 00000009 00002320 00000020 00 00000000000000",
			CtFlush{Envelope: Envelope{Version: Version10, Xid: 9}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			raw := unhex(t, c.hex)
			m, err := Decode(raw)
			if err != nil {
				t.Fatal(err)
			}
			got, ok := m.(*CtFlush)
			if !ok {
				t.Fatalf("decoded %T", m)
			}
			if *got != c.want {
				t.Errorf("decoded %+v\nwant    %+v", *got, c.want)
			}
			b, err := c.want.Append(nil)
			if err != nil {
				t.Fatal(err)
			}
			if hex.EncodeToString(b) != hex.EncodeToString(raw) {
				t.Errorf("encoded %x\nwant    %x", b, raw)
			}
		})
	}
}

// TestCtFlushOfpPrint: ovs-ofctl 3.1 decodes what Append encodes as the
// flush it means.
func TestCtFlushOfpPrint(t *testing.T) {
	if _, err := exec.LookPath("ovs-ofctl"); err != nil {
		t.Skip("no ovs-ofctl")
	}
	for _, c := range []struct{ hex, want string }{
		{ctFlushUDP, "NXT_CT_FLUSH (OF1.3) (xid=0x1): zone=5 'ct_nw_src=10.1.1.1,ct_nw_dst=10.1.1.2,ct_tp_src=1,ct_tp_dst=2,ct_nw_proto=17' 'ct_nw_src=10.1.1.2,ct_nw_dst=::,ct_tp_src=0,ct_tp_dst=0'"},
		{ctFlushICMP6, "NXT_CT_FLUSH (OF1.5) (xid=0x1): zone=0 'ct_ipv6_src=fc00::1,ct_ipv6_dst=fc00::2,icmp_id=7,icmp_type=128,icmp_code=0,ct_nw_proto=58' 'ct_ipv6_src=::,ct_ipv6_dst=::,icmp_id=0,icmp_type=0,icmp_code=0'"},
	} {
		out, err := exec.Command("ovs-ofctl", "ofp-print", strings.ReplaceAll(c.hex, " ", "")).CombinedOutput()
		if err != nil {
			t.Fatalf("ovs-ofctl ofp-print: %v: %s", err, out)
		}
		if got := strings.TrimSpace(string(out)); got != c.want {
			t.Errorf("ovs-ofctl ofp-print:\n%s\nwant\n%s", got, c.want)
		}
	}
}

// TestCtFlushBad: malformed flushes get ovs-vswitchd's errors and no
// panic.
func TestCtFlushBad(t *testing.T) {
	hdr := "04 04 %s 00000001 00002320 00000020"
	for _, c := range []struct {
		name       string
		body       string
		typ, code  uint16
		errLength  bool
		experiment uint32
	}{
		{"nonzero pad", "11 00000000000001", ErrTypeBadRequest, 515, false, 0},
		{"short property", "11 00000000000000 0002 0003 00000000", 13, 3, true, 0},
		{"missing padding", "11 00000000000000 0002 0006 0005", 13, 3, true, 0},
		{"short zone", "11 00000000000000 0002 0005 00 000000", 13, 3, true, 0},
		{"short address", "11 00000000000000 0000 0010 00000000 0000 0008 0a010101", 13, 3, true, 0},
		{"mixed families", "11 00000000000000 0000 0038 00000000" +
			"0000 0014 00000000000000000000ffff0a010101 00000000" +
			"0001 0014 fc000000000000000000000000000002 00000000", 13, 4, false, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			body := unhex(t, c.body)
			raw := unhex(t, strings.Replace(hdr, "%s", "0000", 1))
			raw = append(raw, body...)
			raw[2], raw[3] = byte(len(raw)>>8), byte(len(raw))
			if c.name == "nonzero pad" {
				c.typ, c.code, c.experiment = Err13TypeExperimenter, 4, NXVendorID // 1.3: Nicira's experimenter code
			}
			_, err := Decode(raw)
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("error %v, want an OpenFlow error", err)
			}
			if e.Type != c.typ || e.Code != c.code || e.Experimenter != c.experiment || errors.Is(err, ErrBadLength) != c.errLength {
				t.Errorf("error %v (type %d code %d exp %#x), want type %d code %d exp %#x", err, e.Type, e.Code, e.Experimenter, c.typ, c.code, c.experiment)
			}
		})
	}
}

// FuzzDecodeCtFlush: the NXT_CT_FLUSH decoder never panics, and what it
// accepts encodes and decodes to itself.
func FuzzDecodeCtFlush(f *testing.F) {
	for _, h := range []string{ctFlushUDP, ctFlushICMP6} {
		b := unhex(f, h)
		f.Add(b[16:])
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		raw := append(unhex(t, "04 04 0000 00000001 00002320 00000020"), body...)
		if len(raw) > 0xffff {
			return
		}
		raw[2], raw[3] = byte(len(raw)>>8), byte(len(raw))
		m, err := Decode(raw)
		if err != nil {
			return
		}
		cf, ok := m.(*CtFlush)
		if !ok {
			t.Fatalf("decoded %T", m)
		}
		b, err := cf.Append(nil)
		if err != nil {
			t.Fatal(err)
		}
		m2, err := Decode(b)
		if err != nil {
			t.Fatalf("re-decoding %x: %v", b, err)
		}
		again := *m2.(*CtFlush)
		// Ports of an ICMP flush and ICMP fields of another are not
		// encoded.
		want := *cf
		for _, tp := range []*CtFlushTuple{&want.Orig, &want.Reply} {
			if isICMPProto(want.Proto) {
				tp.SrcPort, tp.DstPort = 0, 0
			} else {
				tp.ICMPID, tp.ICMPType, tp.ICMPCode = 0, 0, 0
			}
		}
		if again != want {
			t.Errorf("round trip:\n%+v\n%+v", again, want)
		}
	})
}
