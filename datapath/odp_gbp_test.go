package datapath

import (
	"bytes"
	"encoding/binary"
	"strings"
	"testing"

	"github.com/govswitch/govswitch/flow"
	"github.com/govswitch/govswitch/netlinkio"
)

// gbpOpts builds an OVS_VXLAN_EXT_GBP attribute holding w (host order).
func gbpOpts(w uint32) []byte {
	return netlinkio.AppendU32(nil, vxlanExtGBP, w)
}

// TestGbpWire: OVS_TUNNEL_KEY_ATTR_VXLAN_OPTS as govswitchd sends it,
// against include/uapi/linux/openvswitch.h and struct vxlan_metadata.
func TestGbpWire(t *testing.T) {
	tt := flow.Tunnel{GbpID: 0x1234, GbpFlags: 0x48}
	got := appendGbp(nil, &tt)
	want := []byte{
		0x0c, 0x00, 0x0b, 0x00, // len 12, OVS_TUNNEL_KEY_ATTR_VXLAN_OPTS (11)
		0x08, 0x00, 0x01, 0x00, // len 8, OVS_VXLAN_EXT_GBP
	}
	want = binary.NativeEndian.AppendUint32(want, 0x00481234) // flags 0x48 << 16 | id 0x1234
	if !bytes.Equal(got, want) {
		t.Fatalf("got  %x\nwant %x", got, want)
	}
	if len(got) != vxlanOptsLen {
		t.Errorf("%d bytes, vxlanOptsLen says %d", len(got), vxlanOptsLen)
	}
	var back flow.Tunnel
	if err := decodeVxlanOpts(got[4:], &back); err != nil || back != tt {
		t.Fatalf("decode: %v, %+v", err, back)
	}
	if b := appendGbp(nil, &flow.Tunnel{}); len(b) != 0 {
		t.Errorf("no gbp: appended %x", b)
	}
	for name, bad := range map[string][]byte{
		"short":     netlinkio.AppendAttr(nil, vxlanExtGBP, []byte{1, 2}),
		"duplicate": append(gbpOpts(1), gbpOpts(2)...),
		"truncated": gbpOpts(1)[:6],
	} {
		var tt flow.Tunnel
		if err := decodeVxlanOpts(bad, &tt); err == nil {
			t.Errorf("%s: decoded as %+v", name, tt)
		}
	}
	// The kernel sets nothing above the flag byte; such bits are dropped.
	if err := decodeVxlanOpts(gbpOpts(0xff400010), &back); err != nil || back.GbpID != 0x10 || back.GbpFlags != 0x40 {
		t.Errorf("high bits: %v %+v", err, back)
	}
}

// TestGbpMaskAndText: a match on the policy ID alone puts only its bits
// in the mask; the dump reads as ovs-dpctl's; a key with Geneve options
// keeps no GBP mask (the kernel has one block of options); set(tunnel)
// prints and parses back.
func TestGbpMaskAndText(t *testing.T) {
	var k flow.Key
	k.InPort = 3
	k.Tunnel = flow.Tunnel{ID: 0x64, IPv4Src: [4]byte{172, 31, 1, 1}, IPv4Dst: [4]byte{172, 31, 1, 100}, TTL: 64,
		Flags: flow.TunnelKey, GbpID: 16}
	k.EthType = flow.EthTypeARP
	var m flow.Mask
	m.InPort = ^uint32(0)
	m.Tunnel.GbpID = 0xffff
	FitMask(&k, &m)
	mb := AppendMask(nil, &k, &m)
	var gm flow.Mask
	if err := DecodeMask(mb, &k, &gm); err != nil || gm != m {
		t.Fatalf("mask round trip: %v\n got %+v\nwant %+v", err, gm.Tunnel, m.Tunnel)
	}
	masked := k.Apply(&m)
	if s := flow.Format(&masked, &m); !strings.Contains(s, "tunnel(vxlan(gbp(id=16)))") {
		t.Errorf("text %s", s)
	}
	m.Tunnel.GbpID, m.Tunnel.GbpFlags = 0xff00, 0x40
	k.Tunnel.GbpFlags = 0x48
	masked = k.Apply(&m)
	if s := flow.Format(&masked, &m); !strings.Contains(s, "tunnel(vxlan(gbp(id=0/0xff00,flags=0x40/0x40)))") {
		t.Errorf("partial text %s", s)
	}

	g := k
	g.Tunnel.Metadata.Opts[2] = 0x80
	g.Tunnel.Metadata.Present = 8
	g.Tunnel.Flags |= flow.TunnelUDPIF
	gm2 := m
	FitMask(&g, &gm2)
	if gm2.Tunnel.GbpID != 0 || gm2.Tunnel.GbpFlags != 0 {
		t.Errorf("geneve key kept a gbp mask %+v", gm2.Tunnel)
	}

	set := AppendSet(nil, KeyAttrTunnel, &flow.Key{Tunnel: flow.Tunnel{IPv4Dst: [4]byte{172, 31, 1, 1}, TTL: 64, TpDst: 4789, GbpID: 0x20}})
	txt := FormatActions(set)
	if want := "set(tunnel(dst=172.31.1.1,ttl=64,tp_dst=4789,vxlan(gbp(id=32,flags=0)),flags(0)))"; txt != want {
		t.Errorf("set text %s\nwant     %s", txt, want)
	}
	back, err := ParseActions(txt)
	if err != nil || !bytes.Equal(back, set) {
		t.Errorf("parse %q: %v\n got %x\nwant %x", txt, err, back, set)
	}
}

// FuzzDecodeVxlanOpts: no OVS_TUNNEL_KEY_ATTR_VXLAN_OPTS payload panics
// the decoder, and what decodes encodes back to the same tunnel.
// Seeds: testdata/fuzz/FuzzDecodeVxlanOpts/.
func FuzzDecodeVxlanOpts(f *testing.F) {
	f.Add(gbpOpts(0x10))
	f.Add(gbpOpts(0x00481234))
	f.Add(append(gbpOpts(1), 4, 0, 2, 0))
	f.Fuzz(func(t *testing.T, d []byte) {
		var tt flow.Tunnel
		if err := decodeVxlanOpts(d, &tt); err != nil {
			return
		}
		b := appendGbp(nil, &tt)
		var back flow.Tunnel
		if len(b) > 0 {
			if err := decodeVxlanOpts(b[4:], &back); err != nil {
				t.Fatalf("re-encoded %x does not decode: %v", b, err)
			}
		}
		if back != tt {
			t.Fatalf("decode, encode, decode: got %+v, want %+v", back, tt)
		}
	})
}

// TestGbpCodecAllocs: a key and mask with GBP encode and decode without
// allocating (the miss path carries them for every packet of a GBP port).
func TestGbpCodecAllocs(t *testing.T) {
	var k flow.Key
	k.InPort = 3
	k.Tunnel = flow.Tunnel{ID: 0x64, IPv4Src: [4]byte{172, 31, 1, 1}, IPv4Dst: [4]byte{172, 31, 1, 100}, TTL: 64,
		Flags: flow.TunnelKey, GbpID: 16, GbpFlags: 0x08}
	k.EthType = flow.EthTypeARP
	m := flow.ExactMask()
	buf := make([]byte, 0, 2*MaxKeyLen)
	enc := AppendKey(nil, &k)
	encm := AppendMask(nil, &k, &m)
	var dk flow.Key
	var dm flow.Mask
	for name, fn := range map[string]func(){
		"AppendKey":  func() { buf = AppendKey(buf[:0], &k) },
		"AppendMask": func() { buf = AppendMask(buf[:0], &k, &m) },
		"AppendSet":  func() { buf = AppendSet(buf[:0], KeyAttrTunnel, &k) },
		"DecodeKey": func() {
			if err := DecodeKey(enc, &dk); err != nil || dk.Tunnel.GbpID != 16 {
				t.Fatal(err)
			}
		},
		"DecodeMask": func() {
			if err := DecodeMask(encm, &k, &dm); err != nil {
				t.Fatal(err)
			}
		},
	} {
		if n := testing.AllocsPerRun(100, fn); n != 0 {
			t.Errorf("%s: %v allocations, want 0", name, n)
		}
	}
}
