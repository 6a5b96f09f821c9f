package datapath

import (
	"bytes"
	"errors"
	"testing"

	"github.com/govswitch/govswitch/flow"
	"github.com/govswitch/govswitch/netlinkio"
)

// upcallFrame is an Ethernet/IPv4/UDP frame.
var upcallFrame = []byte{
	0x02, 0, 0, 0, 0, 0x0b, 0x02, 0, 0, 0, 0, 0x0a, 0x08, 0x00, // eth
	0x45, 0, 0, 28, 0, 0, 0x40, 0, 64, 17, 0, 0, 10, 0, 0, 1, 10, 0, 0, 2, // ipv4
	0, 7, 0, 9, 0, 8, 0, 0, // udp
}

func TestDecodeUpcall(t *testing.T) {
	key := flow.Extract(upcallFrame, flow.Metadata{InPort: 3})
	tests := []struct {
		name string
		up   Upcall
	}{
		{"miss", Upcall{Cmd: UpcallMiss, Key: key, Packet: upcallFrame}},
		{"action", Upcall{Cmd: UpcallAction, Key: key, Packet: upcallFrame, Userdata: []byte{1, 2, 3},
			Actions: AppendOutput(nil, 2), MRU: 1400, Len: 2000, Hash: 0x1_0000_1234}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := AppendUpcall(nil, 42, &tt.up)
			var got Upcall
			idx, err := DecodeUpcall(b, &got)
			if err != nil || idx != 42 {
				t.Fatalf("DecodeUpcall = %d, %v", idx, err)
			}
			if got.Cmd != tt.up.Cmd || got.Key != tt.up.Key || !bytes.Equal(got.Packet, tt.up.Packet) ||
				!bytes.Equal(got.Userdata, tt.up.Userdata) || !bytes.Equal(got.Actions, tt.up.Actions) ||
				got.MRU != tt.up.MRU || got.Len != tt.up.Len || got.Hash != tt.up.Hash {
				t.Errorf("got %+v\nwant %+v", got, tt.up)
			}
			if (tt.up.Userdata == nil) != (got.Userdata == nil) {
				t.Errorf("userdata nil-ness: got %v want %v", got.Userdata, tt.up.Userdata)
			}
			var enc []byte
			enc = AppendKey(enc, &key)
			if !bytes.Equal(got.KeyAttrs, enc) {
				t.Errorf("KeyAttrs differ from AppendKey")
			}
		})
	}
}

func TestDecodeUpcallErrors(t *testing.T) {
	good := AppendUpcall(nil, 1, &Upcall{Cmd: UpcallMiss, Key: flow.Extract(upcallFrame, flow.Metadata{}), Packet: upcallFrame})
	noKey := []byte{1, 1, 0, 0, 1, 0, 0, 0}
	noKey = netlinkio.AppendAttr(noKey, PacketAttrPacket, upcallFrame)
	badCmd := append([]byte{3}, good[1:]...)
	tests := []struct {
		name string
		in   []byte
		want error
	}{
		{"empty", nil, ErrUpcall},
		{"header only", good[:4], ErrUpcall},
		{"bad command", badCmd, ErrUpcall},
		{"no key", noKey, ErrUpcall},
		{"truncated attribute", good[:len(good)-3], ErrUpcall},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var u Upcall
			if _, err := DecodeUpcall(tt.in, &u); !errors.Is(err, tt.want) {
				t.Errorf("err = %v, want %v", err, tt.want)
			}
		})
	}
}

func TestDecodeUpcallAllocs(t *testing.T) {
	b := AppendUpcall(nil, 1, &Upcall{Cmd: UpcallAction, Key: flow.Extract(upcallFrame, flow.Metadata{InPort: 1}), Packet: upcallFrame, Userdata: []byte{9}})
	var u Upcall
	if n := testing.AllocsPerRun(100, func() {
		if _, err := DecodeUpcall(b, &u); err != nil {
			t.Fatal(err)
		}
	}); n != 0 {
		t.Errorf("DecodeUpcall: %v allocs/op, want 0", n)
	}
}

// BenchmarkDecodeUpcall measures the handler's per-upcall work after
// recvmmsg: split the datagram and decode the upcall with its key.
func BenchmarkDecodeUpcall(b *testing.B) {
	body := AppendUpcall(nil, 1, &Upcall{Cmd: UpcallMiss, Key: flow.Extract(upcallFrame, flow.Metadata{InPort: 1}), Packet: upcallFrame})
	msg, start := netlinkio.BeginMessage(nil, 0x20, 0, 1, 1)
	msg = append(msg[:start+netlinkio.HeaderLen], body...)
	msg = netlinkio.EndMessage(msg, start)
	var u Upcall
	b.ReportAllocs()
	b.SetBytes(int64(len(msg)))
	for b.Loop() {
		it := netlinkio.NewMessageIter(msg)
		if !it.Next() {
			b.Fatal(it.Err())
		}
		if _, err := DecodeUpcall(it.Data(), &u); err != nil {
			b.Fatal(err)
		}
	}
}

// FuzzDecodeUpcall: DecodeUpcall never panics, and what it decodes
// re-encodes to a message that decodes the same.
func FuzzDecodeUpcall(f *testing.F) {
	f.Add(AppendUpcall(nil, 1, &Upcall{Cmd: UpcallMiss, Key: flow.Extract(upcallFrame, flow.Metadata{InPort: 1}), Packet: upcallFrame}))
	f.Add(AppendUpcall(nil, 7, &Upcall{Cmd: UpcallAction, Key: flow.Extract(upcallFrame, flow.Metadata{}), Packet: upcallFrame[:20], Userdata: []byte{1}, MRU: 9, Len: 99, Hash: 5}))
	f.Add([]byte{1, 1, 0, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		var u Upcall
		idx, err := DecodeUpcall(b, &u)
		if err != nil {
			return
		}
		re := AppendUpcall(nil, idx, &u)
		var u2 Upcall
		idx2, err := DecodeUpcall(re, &u2)
		if err != nil || idx2 != idx || u2.Key != u.Key || !bytes.Equal(u2.Packet, u.Packet) || !bytes.Equal(u2.Userdata, u.Userdata) {
			t.Fatalf("re-decode: %v\n%+v\n%+v", err, u, u2)
		}
	})
}

// egressTunKey is an OVS_PACKET_ATTR_EGRESS_TUN_KEY payload as the 6.1
// kernel sends it for a vxlan port (ovs_nla_put_tunnel_info: the set's
// key and destination, the route's source address and the UDP source
// port the device chose), with little-endian attribute headers.
var egressTunKey = []byte{
	0x0c, 0x00, 0x00, 0x00, 0, 0, 0, 0, 0, 0, 0, 0x64, // ID 100
	0x08, 0x00, 0x01, 0x00, 172, 31, 1, 1, // IPV4_SRC
	0x08, 0x00, 0x02, 0x00, 172, 31, 1, 2, // IPV4_DST
	0x05, 0x00, 0x04, 0x00, 64, 0, 0, 0, // TTL 64
	0x04, 0x00, 0x05, 0x00, // DONT_FRAGMENT
	0x06, 0x00, 0x09, 0x00, 0xc8, 0x32, 0, 0, // TP_SRC 51250
	0x06, 0x00, 0x0a, 0x00, 0x12, 0xb5, 0, 0, // TP_DST 4789
}

// TestDecodeEgressTunnel: an action upcall's egress tunnel key is
// decoded into Upcall.EgressTunnelKey; one that is malformed fails the
// upcall; an upcall without one has none.
func TestDecodeEgressTunnel(t *testing.T) {
	key := flow.Extract(upcallFrame, flow.Metadata{InPort: 3})
	up := Upcall{Cmd: UpcallAction, Key: key, Packet: upcallFrame, Userdata: []byte{1}, EgressTunnel: egressTunKey}
	var got Upcall
	if _, err := DecodeUpcall(AppendUpcall(nil, 1, &up), &got); err != nil {
		t.Fatal(err)
	}
	want := flow.Tunnel{ID: 100, IPv4Src: [4]byte{172, 31, 1, 1}, IPv4Dst: [4]byte{172, 31, 1, 2}, TTL: 64, TpSrc: 51250,
		TpDst: 4789, Flags: flow.TunnelKey | flow.TunnelDontFragment}
	if !got.HasEgressTunnel || got.EgressTunnelKey != want {
		t.Errorf("egress tunnel %v %+v, want %+v", got.HasEgressTunnel, got.EgressTunnelKey, want)
	}
	up.EgressTunnel = egressTunKey[:len(egressTunKey)-4] // TP_DST cut short
	if _, err := DecodeUpcall(AppendUpcall(nil, 1, &up), &got); !errors.Is(err, ErrUpcall) {
		t.Errorf("a truncated egress tunnel key: %v, want ErrUpcall", err)
	}
	up.EgressTunnel = nil
	if _, err := DecodeUpcall(AppendUpcall(nil, 1, &up), &got); err != nil || got.HasEgressTunnel ||
		got.EgressTunnelKey != (flow.Tunnel{}) {
		t.Errorf("no egress tunnel key: %v %v %+v", err, got.HasEgressTunnel, got.EgressTunnelKey)
	}
}

// FuzzDecodeEgressTunnel: the egress tunnel key decoder never panics, and
// what it accepts encodes (as a set(tunnel) would) to attributes that
// decode the same.
func FuzzDecodeEgressTunnel(f *testing.F) {
	f.Add(egressTunKey)
	f.Add(egressTunKey[:20])
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		var tun flow.Tunnel
		if err := DecodeEgressTunnel(b, &tun); err != nil {
			return
		}
		re := appendTunnel(nil, 1, &tun, &tun, false)
		var tun2 flow.Tunnel
		if err := DecodeEgressTunnel(re[netlinkio.AttrHeaderLen:], &tun2); err != nil || tun2 != tun {
			t.Fatalf("re-decode: %v\n%+v\n%+v", err, tun, tun2)
		}
	})
}
