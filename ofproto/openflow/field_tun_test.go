package openflow

import (
	"bytes"
	"net/netip"
	"testing"

	"github.com/govswitch/govswitch/flow"
)

// tunCaptures are ovs-ofctl 3.1's flow mods with the tunnel fields, in
// matches and as set_field targets, over NXM (OpenFlow 1.0) and OXM
// (OpenFlow 1.3). TestOvsOfctlTunnelFields records them (OFCTL_RECORD=1).
var tunCaptures = []capture{
	{"add-flow-tun-nxm", []string{"add-flow", "SW",
		"in_port=1,tun_id=0x64,tun_src=172.31.1.100,tun_dst=172.31.1.1/255.255.255.0,tun_flags=+oam," +
			"actions=set_field:0x65->tun_id,set_field:172.31.1.2->tun_dst,set_field:172.31.1.3->tun_src,output:2"}},
	{"add-flow-tun6-nxm", []string{"add-flow", "SW",
		"tun_ipv6_src=fc00::100,tun_ipv6_dst=fc00::/64,tun_flags=-oam,actions=set_field:fc00::2->tun_ipv6_dst,output:2"}},
	{"add-flow-tun-of13", []string{"-O", "OpenFlow13", "add-flow", "SW",
		"tun_id=0x64/0xff,tun_src=172.31.1.100,tun_ipv6_dst=fc00::1,tun_flags=+oam," +
			"actions=set_field:0x65->tun_id,set_field:fc00::2->tun_ipv6_src,set_field:10.1.1.1->tun_dst,output:2"}},
}

// TestOvsOfctlTunnelFields sends the tunnel flow mods with the real
// ovs-ofctl to a fake switch; with OFCTL_RECORD=1 it rewrites the
// checked-in captures.
func TestOvsOfctlTunnelFields(t *testing.T) {
	liveOrRecordCaptures(t, tunCaptures)
}

// TestTunnelFieldCaptures decodes the recorded tunnel flow mods, checks
// the match and the set_field targets, and re-encodes them to ovs-ofctl's
// bytes.
func TestTunnelFieldCaptures(t *testing.T) {
	ip4 := func(a, b, c, d byte) [4]byte { return [4]byte{a, b, c, d} }
	ip6 := func(s string) [16]byte { return netip.MustParseAddr(s).As16() }
	checks := map[string]func(t *testing.T, fm *FlowMod){
		"add-flow-tun-nxm": func(t *testing.T, fm *FlowMod) {
			k, m := fm.Match.Key.Tunnel, fm.Match.Mask.Tunnel
			if k.ID != 0x64 || m.ID != ^uint64(0) || k.IPv4Src != ip4(172, 31, 1, 100) || m.IPv4Src != ones4t ||
				k.IPv4Dst != ip4(172, 31, 1, 0) || m.IPv4Dst != ip4(255, 255, 255, 0) ||
				k.Flags != flow.TunnelOAM || m.Flags != flow.TunnelOAM {
				t.Errorf("match %+v / %+v", k, m)
			}
			acts := fm.Instructions.Apply
			if len(acts) != 4 || acts[0].Field != FieldTunnelID || acts[1].Field != FieldTunIPv4Dst || acts[2].Field != FieldTunIPv4Src {
				t.Errorf("actions %+v", acts)
			}
		},
		"add-flow-tun6-nxm": func(t *testing.T, fm *FlowMod) {
			k, m := fm.Match.Key.Tunnel, fm.Match.Mask.Tunnel
			var half [16]byte
			copy(half[:8], ones16t[:8])
			if k.IPv6Src != ip6("fc00::100") || k.IPv6Dst != ip6("fc00::") {
				t.Errorf("ipv6 %x %x", k.IPv6Src, k.IPv6Dst)
			}
			if m.IPv6Src != ones16t || m.IPv6Dst != half || k.Flags != 0 || m.Flags != flow.TunnelOAM {
				t.Errorf("match %+v / %+v", k, m)
			}
		},
		"add-flow-tun-of13": func(t *testing.T, fm *FlowMod) {
			k, m := fm.Match.Key.Tunnel, fm.Match.Mask.Tunnel
			if k.ID != 0x64 || m.ID != 0xff || k.IPv6Dst != ip6("fc00::1") || m.IPv6Dst != ones16t || k.Flags != flow.TunnelOAM {
				t.Errorf("match %+v / %+v", k, m)
			}
			acts := fm.Instructions.Apply
			if len(acts) != 4 || acts[1].Field != FieldTunIPv6Src || acts[2].Field != FieldTunIPv4Dst {
				t.Errorf("actions %+v", acts)
			}
		},
	}
	for _, c := range tunCaptures {
		t.Run(c.name, func(t *testing.T) {
			raws := readCapture(t, c.name)
			n := 0
			for i, raw := range raws {
				msg, err := Decode(raw)
				if err != nil {
					t.Fatalf("message %d (% x): %v", i, raw, err)
				}
				out, err := msg.Append(nil)
				if err != nil {
					t.Fatalf("message %d (%T): re-encode: %v", i, msg, err)
				}
				if !bytes.Equal(out, raw) {
					t.Errorf("message %d (%T) re-encodes differently:\n got % x\nwant % x", i, msg, out, raw)
				}
				if fm, ok := msg.(*FlowMod); ok {
					n++
					checks[c.name](t, fm)
				}
			}
			if n != 1 {
				t.Errorf("%d flow mods", n)
			}
		})
	}
}

var (
	ones4t  = [4]byte{0xff, 0xff, 0xff, 0xff}
	ones16t = [16]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}
)
