package datapath

import (
	"bytes"
	"encoding/binary"
	"strings"
	"testing"

	"github.com/govswitch/govswitch/flow"
)

// erspanMeta builds a struct erspan_metadata: the version in host order
// (as the kernel's int), then the eight bytes of the union.
func erspanMeta(ver uint32, union ...byte) []byte {
	b := binary.NativeEndian.AppendUint32(nil, ver)
	return append(b, union...)
}

// TestErspanOptsWire: the erspan_metadata govswitchd sends, field by
// field against include/uapi/linux/erspan.h.
func TestErspanOptsWire(t *testing.T) {
	for _, tc := range []struct {
		name string
		t    flow.Tunnel
		want []byte
	}{
		{name: "v1 index", t: flow.Tunnel{ErspanVer: 1, ErspanIdx: 0x12345},
			want: erspanMeta(1,
				0x00, 0x01, 0x23, 0x45, // index, big-endian
				0x00, 0x00, 0x00, 0x00, // (the rest of the union)
			)},
		{name: "v2 egress hwid 0x3f", t: flow.Tunnel{ErspanVer: 2, ErspanDir: 1, ErspanHwid: 0x3f},
			want: erspanMeta(2,
				0x00, 0x00, 0x00, 0x00, // timestamp: the device's
				0x00, 0x00, // sgt
				0x03, // p=0 ft=0 hwid bits 5-4 = 0b11
				0xf8, // hwid bits 3-0 = 0xf, dir=1, gra=0, o=0
			)},
		{name: "v2 ingress hwid 7", t: flow.Tunnel{ErspanVer: 2, ErspanHwid: 7},
			want: erspanMeta(2,
				0x00, 0x00, 0x00, 0x00, // timestamp
				0x00, 0x00, // sgt
				0x00, // hwid bits 5-4 = 0
				0x70, // hwid bits 3-0 = 7, dir=0
			)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := make([]byte, erspanOptsLen)
			putErspanOpts(got, tc.t.ErspanVer, &tc.t)
			if !bytes.Equal(got, tc.want) {
				t.Fatalf("got  %x\nwant %x", got, tc.want)
			}
			var back flow.Tunnel
			if err := decodeErspanOpts(got, &back, false); err != nil || back != tc.t {
				t.Fatalf("decode: %v, %+v, want %+v", err, back, tc.t)
			}
		})
	}
}

// TestErspanOptsDecode: what the kernel passes up from a type III header
// (this one from OVS's ip6erspan v2 test packet, with its timestamp and P
// bit) keeps the version, direction and hardware ID; malformed payloads
// are errors.
func TestErspanOptsDecode(t *testing.T) {
	d := erspanMeta(2,
		0xaf, 0x51, 0x4f, 0x9b, // timestamp
		0x00, 0x00, // sgt
		0x80, // p=1, ft=0, hwid bits 5-4 = 0
		0x70, // hwid bits 3-0 = 7, dir=0 (ingress)
	)
	var got flow.Tunnel
	if err := decodeErspanOpts(d, &got, false); err != nil {
		t.Fatal(err)
	}
	if want := (flow.Tunnel{ErspanVer: 2, ErspanHwid: 7}); got != want {
		t.Errorf("got %+v, want %+v", got, want)
	}
	for name, bad := range map[string][]byte{
		"short":       erspanMeta(1, 0, 0, 0, 7),
		"long":        erspanMeta(1, 0, 0, 0, 7, 0, 0, 0, 0, 0),
		"version 256": erspanMeta(256, 0, 0, 0, 0, 0, 0, 0, 0),
	} {
		var tt flow.Tunnel
		if err := decodeErspanOpts(bad, &tt, false); err == nil {
			t.Errorf("%s: decoded as %+v", name, tt)
		}
	}
}

// erspanKey is a packet's key from erspan_sys with type II metadata.
func erspanKey() flow.Key {
	var k flow.Key
	k.InPort = 4
	k.Tunnel = flow.Tunnel{ID: 1, IPv4Src: [4]byte{172, 31, 1, 1}, IPv4Dst: [4]byte{172, 31, 1, 100}, TTL: 64,
		Flags: flow.TunnelKey | flow.TunnelDontFragment, ErspanVer: 1, ErspanIdx: 7}
	k.EthType = flow.EthTypeARP
	return k
}

// TestErspanMask: a mask matches ERSPAN fields only with the version, and
// only those of the key's version; a mask that matches none leaves the
// attribute out; a key without ERSPAN metadata has no ERSPAN mask; the
// dumped text is ovs-dpctl's.
func TestErspanMask(t *testing.T) {
	k := erspanKey()
	var m flow.Mask
	m.InPort = ^uint32(0)
	m.Tunnel.ErspanIdx, m.Tunnel.ErspanDir, m.Tunnel.ErspanHwid = ^uint32(0), 0xff, 0xff
	FitMask(&k, &m)
	if m.Tunnel.ErspanVer != 0xff || m.Tunnel.ErspanDir != 0 || m.Tunnel.ErspanHwid != 0 || m.Tunnel.ErspanIdx != ^uint32(0) {
		t.Errorf("fitted v1 mask %+v", m.Tunnel)
	}
	mb := AppendMask(nil, &k, &m)
	var gm flow.Mask
	if err := DecodeMask(mb, &k, &gm); err != nil || gm != m {
		t.Fatalf("mask round trip: %v\n got %+v\nwant %+v", err, gm.Tunnel, m.Tunnel)
	}
	masked := k.Apply(&m)
	if s := flow.Format(&masked, &m); !strings.Contains(s, "tunnel(erspan(ver=1,idx=0x7/0xffffffff))") {
		t.Errorf("v1 dump: %s", s)
	}

	k2 := k
	k2.Tunnel.ErspanVer, k2.Tunnel.ErspanIdx, k2.Tunnel.ErspanDir, k2.Tunnel.ErspanHwid = 2, 0, 1, 0x17
	m2 := flow.ExactMask()
	FitMask(&k2, &m2)
	if m2.Tunnel.ErspanIdx != 0 || m2.Tunnel.ErspanDir != 1 || m2.Tunnel.ErspanHwid != 0x3f {
		t.Errorf("fitted v2 mask %+v", m2.Tunnel)
	}
	// OVS prints the bit fields of erspan_md2: dir's mask is 1, hwid's
	// the low four bits.
	if s := flow.Format(&k2, &m2); !strings.Contains(s, "erspan(ver=2,dir=1/0x1,hwid=0x7/0xf)") {
		t.Errorf("v2 dump: %s", s)
	}

	// No ERSPAN bits in the mask: no ERSPAN attribute in it.
	var none flow.Mask
	none.Tunnel.ID = ^uint64(0)
	FitMask(&k, &none)
	if b := AppendMask(nil, &k, &none); hasTunnelAttr(t, b, tunAttrERSPANOpts) {
		t.Errorf("a mask without ERSPAN bits carries the attribute: %x", b)
	}
	if b := AppendKey(nil, &k); !hasTunnelAttr(t, b, tunAttrERSPANOpts) {
		t.Errorf("the key lacks its ERSPAN attribute: %x", b)
	}
	// A key without ERSPAN metadata keeps no ERSPAN mask.
	plain := k
	plain.Tunnel.ErspanVer, plain.Tunnel.ErspanIdx = 0, 0
	em := flow.ExactMask()
	FitMask(&plain, &em)
	if em.Tunnel.ErspanVer != 0 || em.Tunnel.ErspanIdx != 0 {
		t.Errorf("mask of a key without ERSPAN %+v", em.Tunnel)
	}
}

// hasTunnelAttr reports whether encoded key or mask b has a tunnel
// attribute with the nested attribute typ.
func hasTunnelAttr(t *testing.T, b []byte, typ uint16) bool {
	t.Helper()
	for i := 0; i+4 <= len(b); {
		l := int(binary.NativeEndian.Uint16(b[i:]))
		if l < 4 || i+l > len(b) {
			t.Fatalf("bad attribute at %d", i)
		}
		if binary.NativeEndian.Uint16(b[i+2:])&0x3fff == uint16(KeyAttrTunnel) {
			in := b[i+4 : i+l]
			for j := 0; j+4 <= len(in); {
				nl := int(binary.NativeEndian.Uint16(in[j:]))
				if nl < 4 {
					t.Fatalf("bad nested attribute")
				}
				if binary.NativeEndian.Uint16(in[j+2:]) == typ {
					return true
				}
				j += (nl + 3) &^ 3
			}
			return false
		}
		i += (l + 3) &^ 3
	}
	return false
}

// TestErspanSetText: set(tunnel(...)) with ERSPAN metadata in ovs-dpctl's
// words (format_odp_tun_erspan_opt without a mask), parsed back to the
// same action; an erspan(...) of a version the kernel lacks is refused.
func TestErspanSetText(t *testing.T) {
	for _, tc := range []struct {
		name string
		t    flow.Tunnel
		want string
	}{
		{name: "v1", t: flow.Tunnel{ID: 1, IPv4Dst: [4]byte{172, 31, 1, 100}, TTL: 64, Flags: flow.TunnelKey | flow.TunnelDontFragment, ErspanVer: 1, ErspanIdx: 7},
			want: "set(tunnel(tun_id=0x1,dst=172.31.1.100,ttl=64,erspan(ver=1,idx=0x7),flags(df|key)))"},
		{name: "v2", t: flow.Tunnel{ID: 121, IPv6Dst: [16]byte{0: 0xfc, 2: 1, 15: 0x10}, TTL: 64, Flags: flow.TunnelKey, ErspanVer: 2, ErspanDir: 1, ErspanHwid: 7},
			want: "set(tunnel(tun_id=0x79,ipv6_dst=fc00:100::10,ttl=64,erspan(ver=2,dir=1,hwid=0x7),flags(key)))"},
		{name: "v1 index 0", t: flow.Tunnel{IPv4Dst: [4]byte{10, 0, 0, 1}, TTL: 64, ErspanVer: 1},
			want: "set(tunnel(dst=10.0.0.1,ttl=64,erspan(ver=1,idx=0),flags(0)))"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var k flow.Key
			k.Tunnel = tc.t
			b := AppendSet(nil, KeyAttrTunnel, &k)
			if got := FormatActions(b); got != tc.want {
				t.Fatalf("got  %s\nwant %s", got, tc.want)
			}
			pb, err := ParseActions(tc.want)
			if err != nil || !bytes.Equal(pb, b) {
				t.Fatalf("parse: %v\n got %x\nwant %x", err, pb, b)
			}
		})
	}
	for _, bad := range []string{
		"set(tunnel(dst=10.0.0.1,ttl=64,erspan(ver=3),flags(0)))",
		"set(tunnel(dst=10.0.0.1,ttl=64,erspan(ver=1,hwid=1),flags(0)))",
		"set(tunnel(dst=10.0.0.1,ttl=64,erspan(ver=2,sgt=1),flags(0)))",
	} {
		if _, err := ParseActions(bad); err == nil {
			t.Errorf("%s parsed", bad)
		}
	}
}

// FuzzDecodeErspanOpts: no erspan_metadata payload panics the decoder,
// and what decodes encodes back to a payload that decodes the same.
// Seeds: testdata/fuzz/FuzzDecodeErspanOpts/.
func FuzzDecodeErspanOpts(f *testing.F) {
	f.Add(erspanMeta(1, 0, 0, 0, 7, 0, 0, 0, 0), false)
	f.Add(erspanMeta(2, 0xaf, 0x51, 0x4f, 0x9b, 0, 0, 0x80, 0x70), false)
	f.Add(erspanMeta(0xffffffff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff), true)
	f.Fuzz(func(t *testing.T, d []byte, isMask bool) {
		var tt flow.Tunnel
		if err := decodeErspanOpts(d, &tt, isMask); err != nil {
			return
		}
		ver := tt.ErspanVer
		if isMask {
			// A mask's layout is its key's: try both.
			ver = 1 + uint8(len(d)%2)
		}
		p := make([]byte, erspanOptsLen)
		putErspanOpts(p, ver, &tt)
		var back flow.Tunnel
		if err := decodeErspanOpts(p, &back, isMask); err != nil {
			t.Fatalf("re-encoded %x does not decode: %v", p, err)
		}
		if !isMask && back != tt {
			t.Fatalf("decode, encode, decode: got %+v, want %+v", back, tt)
		}
		if back.ErspanDir > 1 || back.ErspanHwid > 0x3f {
			t.Fatalf("fields out of range: %+v", back)
		}
	})
}
