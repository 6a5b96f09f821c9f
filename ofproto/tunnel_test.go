package ofproto

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/govswitch/govswitch/classifier"
	"github.com/govswitch/govswitch/datapath"
	"github.com/govswitch/govswitch/flow"
	"github.com/govswitch/govswitch/netlinkio"
	"github.com/govswitch/govswitch/ofproto/openflow"
)

func TestParseTunnelConfig(t *testing.T) {
	for _, tc := range []struct {
		name, typ string
		opts      map[string]string
		err       string
		check     func(t *testing.T, c TunnelConfig)
	}{
		{name: "vxlan defaults", typ: "vxlan", opts: map[string]string{"remote_ip": "10.0.0.2"},
			check: func(t *testing.T, c TunnelConfig) {
				if c.DstPort != 4789 || c.TTL != 64 || !c.DontFragment || c.Csum || c.OutKeyPresent || c.InKeyPresent {
					t.Errorf("%+v", c)
				}
			}},
		{name: "key sets both", typ: "geneve", opts: map[string]string{"remote_ip": "10.0.0.2", "key": "0x10", "dst_port": "6082"},
			check: func(t *testing.T, c TunnelConfig) {
				if c.InKey != 16 || c.OutKey != 16 || !c.InKeyPresent || !c.OutKeyPresent || c.DstPort != 6082 {
					t.Errorf("%+v", c)
				}
			}},
		{name: "flow keys", typ: "gre", opts: map[string]string{"remote_ip": "flow", "in_key": "flow", "out_key": "5", "local_ip": "flow"},
			check: func(t *testing.T, c TunnelConfig) {
				if !c.RemoteFlow || !c.InKeyFlow || c.OutKeyFlow || c.OutKey != 5 || !c.LocalFlow {
					t.Errorf("%+v", c)
				}
			}},
		{name: "ip6gre", typ: "ip6gre", opts: map[string]string{"remote_ip": "fc00::1", "tos": "inherit", "ttl": "inherit", "csum": "true", "df_default": "false"},
			check: func(t *testing.T, c TunnelConfig) {
				if !c.Remote.Is6() || !c.TOSInherit || !c.TTLInherit || !c.Csum || c.DontFragment {
					t.Errorf("%+v", c)
				}
			}},
		{name: "no remote", typ: "vxlan", opts: map[string]string{}, err: "vxlan type requires valid 'remote_ip' argument"},
		{name: "bad remote", typ: "vxlan", opts: map[string]string{"remote_ip": "nonsense"}, err: "bad vxlan 'remote_ip'"},
		{name: "ip6gre v4 remote", typ: "ip6gre", opts: map[string]string{"remote_ip": "10.0.0.1"}, err: "bad ip6gre 'remote_ip'"},
		{name: "mixed families", typ: "vxlan", opts: map[string]string{"remote_ip": "10.0.0.1", "local_ip": "fc00::1"}, err: "one address family"},
		{name: "unknown option", typ: "vxlan", opts: map[string]string{"remote_ip": "10.0.0.1", "gbp_flags": "1"}, err: "'gbp_flags' is not supported"},
		{name: "egress_pkt_mark", typ: "gre", opts: map[string]string{"remote_ip": "10.0.0.1", "egress_pkt_mark": "4294967295"},
			check: func(t *testing.T, c TunnelConfig) {
				if !c.EgressMarkSet || c.EgressMark != 0xffffffff {
					t.Errorf("%+v", c)
				}
			}},
		{name: "egress_pkt_mark 0", typ: "vxlan", opts: map[string]string{"remote_ip": "10.0.0.1", "egress_pkt_mark": "0"},
			check: func(t *testing.T, c TunnelConfig) {
				if !c.EgressMarkSet || c.EgressMark != 0 {
					t.Errorf("%+v", c)
				}
			}},
		{name: "egress_pkt_mark hex", typ: "vxlan", opts: map[string]string{"remote_ip": "10.0.0.1", "egress_pkt_mark": "0x10"}, err: "bad vxlan 'egress_pkt_mark' \"0x10\""},
		{name: "egress_pkt_mark too big", typ: "vxlan", opts: map[string]string{"remote_ip": "10.0.0.1", "egress_pkt_mark": "4294967296"}, err: "bad vxlan 'egress_pkt_mark'"},
		{name: "egress_pkt_mark empty", typ: "vxlan", opts: map[string]string{"remote_ip": "10.0.0.1", "egress_pkt_mark": ""}, err: "bad vxlan 'egress_pkt_mark'"},
		{name: "vxlan-gpe", typ: "vxlan", opts: map[string]string{"remote_ip": "10.0.0.1", "exts": "gpe", "packet_type": "legacy_l3"},
			check: func(t *testing.T, c TunnelConfig) {
				if !c.GPE || !c.L3 || c.DstPort != 4789 || c.vportKind() != datapath.TunnelVXLANGPE {
					t.Errorf("%+v (vport kind %s)", c, c.vportKind())
				}
			}},
		{name: "vxlan-gpe dst_port", typ: "vxlan", opts: map[string]string{"remote_ip": "10.0.0.1", "exts": "gpe", "packet_type": "legacy_l3", "dst_port": "4790"},
			check: func(t *testing.T, c TunnelConfig) {
				if c.DstPort != 4790 || datapath.TunnelVportName(c.vportKind(), c.DstPort) != "vxlan_sys_4790" {
					t.Errorf("%+v", c)
				}
			}},
		{name: "gre legacy_l3 kind", typ: "gre", opts: map[string]string{"remote_ip": "10.0.0.1", "packet_type": "legacy_l3"},
			check: func(t *testing.T, c TunnelConfig) {
				if c.GPE || c.vportKind() != datapath.TunnelGREL3 {
					t.Errorf("%+v", c)
				}
			}},
		{name: "vxlan legacy_l3 without gpe", typ: "vxlan", opts: map[string]string{"remote_ip": "10.0.0.1", "packet_type": "legacy_l3"},
			err: "t0: legacy_l3 configured on VXLAN (without GPE) tunnel that cannot carry L3 traffic"},
		{name: "vxlan-gpe legacy_l2", typ: "vxlan", opts: map[string]string{"remote_ip": "10.0.0.1", "exts": "gpe"},
			err: "VXLAN-GPE packet_type=legacy_l2 is not supported by govswitchd"},
		{name: "vxlan-gpe legacy_l2 asked", typ: "vxlan", opts: map[string]string{"remote_ip": "10.0.0.1", "exts": "gpe", "packet_type": "legacy_l2"},
			err: "VXLAN-GPE packet_type=legacy_l2 is not supported by govswitchd"},
		{name: "vxlan gbp", typ: "vxlan", opts: map[string]string{"remote_ip": "10.0.0.1", "exts": "gbp"},
			check: func(t *testing.T, c TunnelConfig) {
				if !c.GBP || c.GPE || c.L3 || c.vportKind() != datapath.TunnelVXLANGBP {
					t.Errorf("%+v", c)
				}
			}},
		{name: "vxlan gpe,gbp", typ: "vxlan", opts: map[string]string{"remote_ip": "10.0.0.1", "exts": "gpe,gbp", "packet_type": "legacy_l3"}, err: "gpe and gbp together are not supported"},
		{name: "gbp on geneve", typ: "geneve", opts: map[string]string{"remote_ip": "10.0.0.1", "exts": "gbp"}, err: "geneve argument 'exts' is not supported"},
		{name: "vxlan unknown ext", typ: "vxlan", opts: map[string]string{"remote_ip": "10.0.0.1", "exts": "nsh"}, err: "t0: unknown extension 'nsh'"},
		{name: "exts on geneve", typ: "geneve", opts: map[string]string{"remote_ip": "10.0.0.1", "exts": "gpe"}, err: "geneve argument 'exts' is not supported"},
		{name: "vxlan-gpe over IPv6", typ: "vxlan", opts: map[string]string{"remote_ip": "fc00::1", "exts": "gpe", "packet_type": "legacy_l3"}, err: "legacy_l3 over IPv6 is not supported"},
		{name: "gre dst_port", typ: "gre", opts: map[string]string{"remote_ip": "10.0.0.1", "dst_port": "99"}, err: "does not support 'dst_port'"},
		{name: "bad key", typ: "gre", opts: map[string]string{"remote_ip": "10.0.0.1", "key": "x"}, err: "bad gre 'key'"},
		{name: "bad tos", typ: "gre", opts: map[string]string{"remote_ip": "10.0.0.1", "tos": "3"}, err: "invalid TOS"},
		{name: "packet_type", typ: "ip6gre", opts: map[string]string{"remote_ip": "fc00::1", "packet_type": "legacy_l2"},
			check: func(t *testing.T, c TunnelConfig) {}},
		{name: "packet_type ptap", typ: "gre", opts: map[string]string{"remote_ip": "10.0.0.1", "packet_type": "ptap"}, err: "packet_type=ptap is not supported"},
		{name: "erspan v1", typ: "erspan", opts: map[string]string{"remote_ip": "10.0.0.1", "key": "1", "erspan_ver": "1", "erspan_idx": "7"},
			check: func(t *testing.T, c TunnelConfig) {
				if c.ErspanVer != 1 || c.ErspanIdx != 7 || c.ErspanIdxFlow || c.OutKey != 1 || c.DstPort != 0 {
					t.Errorf("%+v", c)
				}
			}},
		{name: "erspan index is hex", typ: "erspan", opts: map[string]string{"remote_ip": "10.0.0.1", "erspan_ver": "1", "erspan_idx": "10"},
			check: func(t *testing.T, c TunnelConfig) {
				if c.ErspanIdx != 0x10 {
					t.Errorf("erspan_idx=10 is %#x, want 0x10 (OVS reads it in hex)", c.ErspanIdx)
				}
			}},
		{name: "ip6erspan v2", typ: "ip6erspan", opts: map[string]string{"remote_ip": "fc00::1", "key": "121", "erspan_ver": "2", "erspan_dir": "1", "erspan_hwid": "0x3f"},
			check: func(t *testing.T, c TunnelConfig) {
				if c.ErspanVer != 2 || c.ErspanDir != 1 || c.ErspanHwid != 0x3f || c.OutKey != 121 || !c.Remote.Is6() {
					t.Errorf("%+v", c)
				}
			}},
		{name: "erspan ver flow", typ: "erspan", opts: map[string]string{"remote_ip": "10.0.0.1", "erspan_ver": "flow", "erspan_idx": "3"},
			check: func(t *testing.T, c TunnelConfig) {
				if !c.ErspanVerFlow || !c.ErspanIdxFlow || !c.ErspanDirFlow || !c.ErspanHwidFlow {
					t.Errorf("erspan_ver=flow leaves a field fixed: %+v", c)
				}
			}},
		{name: "erspan hwid flow", typ: "erspan", opts: map[string]string{"remote_ip": "10.0.0.1", "erspan_ver": "2", "erspan_hwid": "flow"},
			check: func(t *testing.T, c TunnelConfig) {
				if c.ErspanVerFlow || c.ErspanDirFlow || !c.ErspanHwidFlow || c.ErspanVer != 2 {
					t.Errorf("%+v", c)
				}
			}},
		{name: "erspan bad version", typ: "erspan", opts: map[string]string{"remote_ip": "10.0.0.1", "erspan_ver": "3"}, err: "t0: invalid erspan version: 3"},
		{name: "erspan bad index", typ: "erspan", opts: map[string]string{"remote_ip": "10.0.0.1", "erspan_idx": "0x100000"}, err: "t0: invalid erspan index: 0x100000"},
		{name: "erspan bad dir", typ: "erspan", opts: map[string]string{"remote_ip": "10.0.0.1", "erspan_dir": "2"}, err: "t0: invalid erspan direction: 2"},
		{name: "erspan bad hwid", typ: "ip6erspan", opts: map[string]string{"remote_ip": "fc00::1", "erspan_hwid": "0x40"}, err: "t0: invalid erspan hardware ID: 0x40"},
		{name: "ip6erspan v4 remote", typ: "ip6erspan", opts: map[string]string{"remote_ip": "10.0.0.1"}, err: "bad ip6erspan 'remote_ip'"},
		{name: "erspan csum", typ: "erspan", opts: map[string]string{"remote_ip": "10.0.0.1", "csum": "true"}, err: "erspan type does not support 'csum'"},
		{name: "erspan option on gre", typ: "gre", opts: map[string]string{"remote_ip": "10.0.0.1", "erspan_ver": "1"}, err: "gre type does not support 'erspan_ver'"},
		{name: "unknown type", typ: "stt", opts: map[string]string{"remote_ip": "10.0.0.1"}, err: "not supported"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := ParseTunnelConfig("t0", tc.typ, tc.opts)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			tc.check(t, c)
		})
	}
}

// tunnelBridges puts a vxlan port v0 (key 100 to 10.0.0.2) on br0 and a
// vxlan port v1 (key=flow, remote_ip=flow) on br1 of one in-memory
// datapath: both on the one shared vport vxlan_sys_4789.
func tunnelBridges(t testing.TB) (bk *Backer, br0, br1 *Bridge, v0, v1 Port) {
	t.Helper()
	bk, br0, br1, _ = sharedBridges(t, UpcallConfig{})
	c0, err := ParseTunnelConfig("v0", "vxlan", map[string]string{"remote_ip": "10.0.0.2", "key": "100"})
	if err != nil {
		t.Fatal(err)
	}
	if v0, err = br0.AddTunnelPort("v0", c0, 0, PortVLAN{}); err != nil {
		t.Fatal(err)
	}
	c1, err := ParseTunnelConfig("v1", "vxlan", map[string]string{"remote_ip": "flow", "key": "flow"})
	if err != nil {
		t.Fatal(err)
	}
	if v1, err = br1.AddTunnelPort("v1", c1, 0, PortVLAN{}); err != nil {
		t.Fatal(err)
	}
	if _, err := br1.AddTunnelPort("v2", c1, 0, PortVLAN{}); err == nil || !strings.Contains(err.Error(), "same config as port 'v1'") {
		t.Fatalf("a second port like v1: %v", err)
	}
	return bk, br0, br1, v0, v1
}

// TestTunnelPortsShareVport: tunnel ports of two bridges use one datapath
// vport, which goes with the last of them.
func TestTunnelPortsShareVport(t *testing.T) {
	bk, br0, br1, v0, v1 := tunnelBridges(t)
	if v0.DPPort != v1.DPPort {
		t.Fatalf("v0 on datapath port %d, v1 on %d", v0.DPPort, v1.DPPort)
	}
	vp, err := bk.DP.Vport("vxlan_sys_4789")
	if err != nil || vp.PortNo != v0.DPPort || vp.Type != datapath.VportVXLAN {
		t.Fatalf("vxlan_sys_4789: %+v %v", vp, err)
	}
	if bk.Owner(vp.PortNo) == nil {
		t.Error("the shared vport has no owner: a restart would prune it")
	}
	if err := br0.DeletePort("v0"); err != nil {
		t.Fatal(err)
	}
	if _, err := bk.DP.Vport("vxlan_sys_4789"); err != nil {
		t.Fatalf("the vport went with v0 while v1 uses it: %v", err)
	}
	if err := br1.DeletePort("v1"); err != nil {
		t.Fatal(err)
	}
	if _, err := bk.DP.Vport("vxlan_sys_4789"); err == nil {
		t.Fatal("the vport outlived its last tunnel port")
	}
}

// TestTunnelXlate: output to a port-based tunnel port sets its tunnel and
// outputs to the shared vport; a packet from that vport enters the bridge
// whose port its key and remote address select, with the tunnel fields
// tnl_wc_init makes exact in the megaflow; a flow-based port takes the
// destination and key from set_field; neither path allocates.
func TestTunnelXlate(t *testing.T) {
	bk, br0, br1, v0, v1 := tunnelBridges(t)
	p1, p2 := br0.Ports.byName("p1"), br1.Ports.byName("p2")
	now := time.Now()
	addRule(t, br0, p1.OFPort, 0, openflow.Output(v0.OFPort, 0))
	addRule(t, br0, v0.OFPort, 0, openflow.Output(p1.OFPort, 0))
	var set flow.Key
	set.Tunnel.IPv4Dst, set.Tunnel.ID = [4]byte{10, 0, 0, 9}, 0x42
	addRule(t, br1, p2.OFPort, 0, openflow.SetField(openflow.FieldTunIPv4Dst, &set), openflow.SetField(openflow.FieldTunnelID, &set),
		openflow.Output(v1.OFPort, 0))
	addRule(t, br1, v1.OFPort, 0x43, openflow.Output(p2.OFPort, 0))

	out := Out{Actions: make([]byte, 0, 1024)}
	var key flow.Key
	flow.ExtractInto(&key, synFrame(6), &flow.Metadata{InPort: p1.DPPort})
	bk.Translate(&key, now, true, &out)
	if got, want := datapath.FormatActions(out.Actions), "set(tunnel(tun_id=0x64,dst=10.0.0.2,ttl=64,tp_dst=4789,flags(df|key))),"+u32s(v0.DPPort); got != want {
		t.Errorf("output to v0: %s, want %s", got, want)
	}
	if out.WC.Tunnel != (flow.Tunnel{}) {
		t.Errorf("an untunnelled packet's megaflow has tunnel bits %+v", out.WC.Tunnel)
	}
	if n := testing.AllocsPerRun(500, func() { bk.Translate(&key, now, true, &out) }); n != 0 {
		t.Errorf("tunnel output allocates %v times", n)
	}

	flow.ExtractInto(&key, synFrame(7), &flow.Metadata{InPort: p2.DPPort})
	bk.Translate(&key, now, true, &out)
	if got, want := datapath.FormatActions(out.Actions), "set(tunnel(tun_id=0x42,dst=10.0.0.9,ttl=64,tp_dst=4789,flags(df|key))),"+u32s(v1.DPPort); got != want {
		t.Errorf("flow-based output: %s, want %s", got, want)
	}

	// Receive: key 100 from 10.0.0.2 is v0's; key 0x43 from anywhere is v1's.
	rx := flow.Metadata{InPort: v0.DPPort, Tunnel: flow.Tunnel{ID: 100, IPv4Src: [4]byte{10, 0, 0, 2}, IPv4Dst: [4]byte{10, 0, 0, 1},
		TTL: 64, TpDst: 4789, Flags: flow.TunnelKey}}
	flow.ExtractInto(&key, synFrame(8), &rx)
	bk.Translate(&key, now, true, &out)
	if got, want := datapath.FormatActions(out.Actions), u32s(p1.DPPort); got != want {
		t.Errorf("from v0's remote: %s, want %s (%s)", got, want, out.Dropped)
	}
	if out.WC.Tunnel.ID != ^uint64(0) || out.WC.Tunnel.IPv4Src != ones4 || out.WC.Tunnel.TTL != 0 || out.WC.Tunnel.TpDst != 0 {
		t.Errorf("receive megaflow tunnel mask %+v", out.WC.Tunnel)
	}
	if n := testing.AllocsPerRun(500, func() { bk.Translate(&key, now, true, &out) }); n != 0 {
		t.Errorf("tunnel receive allocates %v times", n)
	}
	rx.Tunnel.ID, rx.Tunnel.IPv4Src = 0x43, [4]byte{10, 9, 9, 9}
	flow.ExtractInto(&key, synFrame(8), &rx)
	bk.Translate(&key, now, true, &out)
	if got, want := datapath.FormatActions(out.Actions), u32s(p2.DPPort); got != want {
		t.Errorf("to the flow-based port: %s, want %s (%s)", got, want, out.Dropped)
	}
	// A packet on the shared vport that no tunnel port takes is dropped,
	// by a megaflow that holds the fields the search read.
	rx.Tunnel.ID, rx.Tunnel.IPv4Src = 100, [4]byte{10, 9, 9, 9}
	br1.DeletePort("v1")
	flow.ExtractInto(&key, synFrame(8), &rx)
	bk.Translate(&key, now, true, &out)
	if len(out.Actions) != 0 || out.Dropped == "" || out.WC.Tunnel.ID != ^uint64(0) {
		t.Errorf("key 100 from 10.9.9.9: %s (%q)", datapath.FormatActions(out.Actions), out.Dropped)
	}
}

func u32s(v uint32) string { return itoa(v) }

// addRule adds a rule matching in_port (and tun_id when tunID is not 0)
// with actions acts to b's table 0.
func addRule(t *testing.T, b *Bridge, inPort uint32, tunID uint64, acts ...openflow.Action) {
	t.Helper()
	var m classifier.Match
	m.Key.InPort, m.Mask.InPort = inPort, ^uint32(0)
	if tunID != 0 {
		m.Key.Tunnel.ID, m.Mask.Tunnel.ID = tunID, ^uint64(0)
	}
	fm := FlowMod{Command: CmdAdd, Match: m, Priority: 100, OutPort: openflow.PortAny,
		Instructions: openflow.Instructions{Apply: acts}}
	if err := b.Tables.Apply(&fm, time.Now()); err != nil {
		t.Fatal(err)
	}
}

// TestTunnelXlateFlowIPv6: a flow-based remote takes the flow's IPv6
// destination when set_field gave it one and no IPv4 one.
func TestTunnelXlateFlowIPv6(t *testing.T) {
	bk, br0, _, _, _ := tunnelBridges(t)
	p3, err := br0.AddPort("p3", "system", 0)
	if err != nil {
		t.Fatal(err)
	}
	c, err := ParseTunnelConfig("v3", "vxlan", map[string]string{"remote_ip": "flow", "local_ip": "flow", "key": "7"})
	if err != nil {
		t.Fatal(err)
	}
	v3, err := br0.AddTunnelPort("v3", c, 0, PortVLAN{})
	if err != nil {
		t.Fatal(err)
	}
	var set flow.Key
	set.Tunnel.IPv6Dst = [16]byte{0: 0xfc, 15: 9}
	addRule(t, br0, p3.OFPort, 0, openflow.SetField(openflow.FieldTunIPv6Dst, &set), openflow.Output(v3.OFPort, 0))
	out := Out{Actions: make([]byte, 0, 1024)}
	var key flow.Key
	flow.ExtractInto(&key, synFrame(6), &flow.Metadata{InPort: p3.DPPort})
	bk.Translate(&key, time.Now(), true, &out)
	if got, want := datapath.FormatActions(out.Actions), "set(tunnel(tun_id=0x7,ipv6_dst=fc00::9,ttl=64,tp_dst=4789,flags(df|key))),"+u32s(v3.DPPort); got != want {
		t.Errorf("got %s, want %s", got, want)
	}
}

// TestTunnelXlateErspan: output to an erspan port carries its version and
// index in set(tunnel(...)) to the shared erspan_sys vport; an ip6erspan
// port with erspan_hwid=flow takes the hardware ID of the packet it
// forwards from a tunnel, which then joins the megaflow, and its own
// direction; a packet from erspan_sys enters by its key and remote.
func TestTunnelXlateErspan(t *testing.T) {
	bk, br0, _, prov := sharedBridges(t, UpcallConfig{})
	// The in-memory datapath has no ERSPAN vport type: the shared vports
	// are netdev vports, as the kernel datapath makes them.
	for _, n := range []string{"erspan_sys", "ip6erspan_sys"} {
		if _, err := prov.AddNetdev(n); err != nil {
			t.Fatal(err)
		}
		if _, err := bk.DP.AddVport(datapath.VportSpec{Name: n, Type: datapath.VportNetdev}); err != nil {
			t.Fatal(err)
		}
	}
	c4, err := ParseTunnelConfig("e4", "erspan", map[string]string{"remote_ip": "172.31.1.100", "key": "1", "erspan_ver": "1", "erspan_idx": "7"})
	if err != nil {
		t.Fatal(err)
	}
	e4, err := br0.AddTunnelPort("e4", c4, 0, PortVLAN{})
	if err != nil {
		t.Fatal(err)
	}
	c6, err := ParseTunnelConfig("e6", "ip6erspan", map[string]string{"remote_ip": "fc00:100::100", "key": "121",
		"erspan_ver": "2", "erspan_dir": "1", "erspan_hwid": "flow"})
	if err != nil {
		t.Fatal(err)
	}
	e6, err := br0.AddTunnelPort("e6", c6, 0, PortVLAN{})
	if err != nil {
		t.Fatal(err)
	}
	if e4.DPPort == e6.DPPort {
		t.Fatalf("erspan and ip6erspan share datapath port %d", e4.DPPort)
	}
	p1 := br0.Ports.byName("p1")
	addRule(t, br0, p1.OFPort, 0, openflow.Output(e4.OFPort, 0))
	addRule(t, br0, e4.OFPort, 0, openflow.Output(e6.OFPort, 0))
	now := time.Now()

	out := Out{Actions: make([]byte, 0, 1024)}
	var key flow.Key
	flow.ExtractInto(&key, synFrame(6), &flow.Metadata{InPort: p1.DPPort})
	bk.Translate(&key, now, true, &out)
	if got, want := datapath.FormatActions(out.Actions), "set(tunnel(tun_id=0x1,dst=172.31.1.100,ttl=64,erspan(ver=1,idx=0x7),flags(df|key))),"+u32s(e4.DPPort); got != want {
		t.Errorf("output to e4: %s, want %s", got, want)
	}
	if n := testing.AllocsPerRun(500, func() { bk.Translate(&key, now, true, &out) }); n != 0 {
		t.Errorf("erspan output allocates %v times", n)
	}

	// From e4 (type III metadata on the packet, as if set by a sender)
	// to e6: the hardware ID is the packet's, the direction e6's.
	rx := flow.Metadata{InPort: e4.DPPort, Tunnel: flow.Tunnel{ID: 1, IPv4Src: [4]byte{172, 31, 1, 100}, IPv4Dst: [4]byte{172, 31, 1, 1},
		TTL: 64, Flags: flow.TunnelKey, ErspanVer: 2, ErspanHwid: 0x15}}
	flow.ExtractInto(&key, synFrame(8), &rx)
	bk.Translate(&key, now, true, &out)
	if got, want := datapath.FormatActions(out.Actions), "set(tunnel(tun_id=0x79,ipv6_dst=fc00:100::100,ttl=64,erspan(ver=2,dir=1,hwid=0x5),flags(df|key))),"+u32s(e6.DPPort); got != want {
		t.Errorf("e4 to e6: %s, want %s (%s)", got, want, out.Dropped)
	}
	if out.WC.Tunnel.ErspanHwid != 0xff || out.WC.Tunnel.ErspanDir != 0 || out.WC.Tunnel.ErspanIdx != 0 {
		t.Errorf("megaflow ERSPAN mask %+v", out.WC.Tunnel)
	}
	// ovs-dpctl's text shows the low four bits of the hardware ID; the
	// action carries all six.
	var sent flow.Key
	err = datapath.WalkActions(out.Actions, func(a *datapath.Action) error {
		if a.Type == datapath.ActionSet && a.SetAttr == datapath.KeyAttrTunnel {
			return datapath.DecodeKey(netlinkio.AppendAttr(nil, uint16(datapath.KeyAttrTunnel), a.SetKey), &sent)
		}
		return nil
	})
	if err != nil || sent.Tunnel.ErspanHwid != 0x15 || sent.Tunnel.ErspanVer != 2 || sent.Tunnel.ErspanDir != 1 {
		t.Errorf("set(tunnel) ERSPAN %+v (%v), want ver 2, dir 1, hwid 0x15", sent.Tunnel, err)
	}
	// Another key on erspan_sys is no port's: dropped.
	rx.Tunnel.ID = 2
	flow.ExtractInto(&key, synFrame(8), &rx)
	bk.Translate(&key, now, true, &out)
	if len(out.Actions) != 0 || out.Dropped == "" {
		t.Errorf("key 2 from e4's remote: %s (%q)", datapath.FormatActions(out.Actions), out.Dropped)
	}
}

// TestTunnelXlateLegacyL3: OVS test 163's flows on a gre port with
// packet_type=legacy_l3. Out: the frame loses its Ethernet header before
// the tunnel. In: the IP packet gets a dummy one for the tables, pushed
// with the addresses the actions set at the output to an Ethernet port.
// gre ports of both packet types cannot share the datapath's gre_sys.
func TestTunnelXlateLegacyL3(t *testing.T) {
	bk, br0, _, _ := sharedBridges(t, UpcallConfig{})
	p1 := br0.Ports.byName("p1")
	c, err := ParseTunnelConfig("g0", "gre", map[string]string{"remote_ip": "172.31.1.1", "packet_type": "legacy_l3"})
	if err != nil || !c.L3 {
		t.Fatalf("legacy_l3: %+v %v", c, err)
	}
	g0, err := br0.AddTunnelPort("g0", c, 0, PortVLAN{})
	if err != nil {
		t.Fatal(err)
	}
	c3, err := ParseTunnelConfig("g2", "gre", map[string]string{"remote_ip": "172.31.1.3", "packet_type": "legacy_l3"})
	if err != nil {
		t.Fatal(err)
	}
	g2, err := br0.AddTunnelPort("g2", c3, 0, PortVLAN{})
	if err != nil || g2.DPPort != g0.DPPort {
		t.Fatalf("a second legacy_l3 port: %+v %v", g2, err)
	}
	c2, err := ParseTunnelConfig("g1", "gre", map[string]string{"remote_ip": "172.31.1.2"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := br0.AddTunnelPort("g1", c2, 0, PortVLAN{}); err == nil || !strings.Contains(err.Error(), "legacy_l3") {
		t.Errorf("an L2 gre port beside an L3 one: %v, want a refusal", err)
	}
	if _, err := ParseTunnelConfig("x", "vxlan", map[string]string{"remote_ip": "10.0.0.1", "packet_type": "legacy_l3"}); err == nil {
		t.Error("vxlan packet_type=legacy_l3 accepted")
	}
	src, dst := openflow.Action{Type: openflow.ActSetField, Field: openflow.FieldEthSrc}, setEthDst([6]byte{0, 0x12, 0x34, 0x56, 0x78, 0xbb})
	copy(src.Value[:], []byte{0, 0x12, 0x34, 0x56, 0x78, 0xaa})
	addRule(t, br0, p1.OFPort, 0, openflow.Output(g0.OFPort, 0))
	addRule(t, br0, g0.OFPort, 0, src, dst, openflow.Output(p1.OFPort, 0), openflow.Output(g2.OFPort, 0), openflow.Output(p1.OFPort, 0))
	now := time.Now()
	out := Out{Actions: make([]byte, 0, 1024)}

	var key flow.Key
	flow.ExtractInto(&key, synFrame(6), &flow.Metadata{InPort: p1.DPPort})
	bk.Translate(&key, now, true, &out)
	if got, want := datapath.FormatActions(out.Actions), "pop_eth,set(tunnel(dst=172.31.1.1,ttl=64,flags(df))),"+u32s(g0.DPPort); got != want {
		t.Errorf("output to g0: %s, want %s", got, want)
	}

	// In: the kernel's key of a packet from the gre device.
	flow.ExtractInto(&key, synFrame(7), &flow.Metadata{InPort: g0.DPPort, Tunnel: flow.Tunnel{IPv4Src: [4]byte{172, 31, 1, 1},
		IPv4Dst: [4]byte{172, 31, 1, 100}, TTL: 64}})
	key.L3, key.EthSrc, key.EthDst = true, [6]byte{}, [6]byte{}
	bk.Translate(&key, now, true, &out)
	want := "push_eth(src=00:12:34:56:78:aa,dst=00:12:34:56:78:bb)," + u32s(p1.DPPort) +
		",pop_eth,set(tunnel(dst=172.31.1.3,ttl=64,flags(df)))," + u32s(g0.DPPort) +
		",push_eth(src=00:12:34:56:78:aa,dst=00:12:34:56:78:bb)," + u32s(p1.DPPort)
	if got := datapath.FormatActions(out.Actions); got != want || out.Dropped != "" {
		t.Errorf("from g0: %s (%q)\n     want %s", got, out.Dropped, want)
	}
	if n := testing.AllocsPerRun(500, func() { bk.Translate(&key, now, true, &out) }); n != 0 {
		t.Errorf("legacy_l3 receive allocates %v times", n)
	}
	// The datapath's key and mask for it have no Ethernet attribute.
	fm := out.WC
	datapath.FitMask(&key, &fm)
	if s := flow.Format(&key, &fm); strings.Contains(s, "eth(") || !strings.Contains(s, "eth_type(0x0800),ipv4(") {
		t.Errorf("megaflow %s: want no eth()", s)
	}
}

// TestTunnelXlateVXLANGPE: a vxlan port with exts=gpe and
// packet_type=legacy_l3 (OVS test 162) is translated as a legacy_l3 gre
// port is: its vport is vxlan_sys_4789 in GPE mode, the frame loses its
// Ethernet header on the way out, and a packet from it gets one (with the
// addresses the actions set) at the output to an Ethernet port. A vxlan
// port without GPE cannot share its UDP port, and may use another.
func TestTunnelXlateVXLANGPE(t *testing.T) {
	bk, br0, _, _ := sharedBridges(t, UpcallConfig{})
	p1 := br0.Ports.byName("p1")
	c, err := ParseTunnelConfig("v0", "vxlan", map[string]string{"remote_ip": "172.31.1.1", "packet_type": "legacy_l3", "exts": "gpe"})
	if err != nil {
		t.Fatal(err)
	}
	v0, err := br0.AddTunnelPort("v0", c, 0, PortVLAN{})
	if err != nil {
		t.Fatal(err)
	}
	if vp, err := bk.DP.Vport("vxlan_sys_4789"); err != nil || vp.PortNo != v0.DPPort {
		t.Fatalf("vport of v0: %+v %v, want vxlan_sys_4789 as port %d", vp, err, v0.DPPort)
	}
	l2, err := ParseTunnelConfig("v1", "vxlan", map[string]string{"remote_ip": "172.31.1.2"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := br0.AddTunnelPort("v1", l2, 0, PortVLAN{}); err == nil || !strings.Contains(err.Error(), "exts=gpe (port 'v0') cannot share UDP port 4789") {
		t.Errorf("an L2 vxlan port on the GPE port's UDP port: %v, want a refusal", err)
	}
	l2o, err := ParseTunnelConfig("v2", "vxlan", map[string]string{"remote_ip": "172.31.1.2", "dst_port": "4790"})
	if err != nil {
		t.Fatal(err)
	}
	v2, err := br0.AddTunnelPort("v2", l2o, 0, PortVLAN{})
	if err != nil || v2.DPPort == v0.DPPort {
		t.Fatalf("an L2 vxlan port on another UDP port: %+v %v", v2, err)
	}
	// A legacy_l3 gre port is another vport, and no clash.
	g, err := ParseTunnelConfig("g0", "gre", map[string]string{"remote_ip": "172.31.1.1", "packet_type": "legacy_l3"})
	if err != nil {
		t.Fatal(err)
	}
	g0, err := br0.AddTunnelPort("g0", g, 0, PortVLAN{})
	if err != nil || g0.DPPort == v0.DPPort {
		t.Fatalf("a legacy_l3 gre port beside: %+v %v", g0, err)
	}

	src, dst := openflow.Action{Type: openflow.ActSetField, Field: openflow.FieldEthSrc}, setEthDst([6]byte{0, 0x12, 0x34, 0x56, 0x78, 0xbb})
	copy(src.Value[:], []byte{0, 0x12, 0x34, 0x56, 0x78, 0xaa})
	addRule(t, br0, p1.OFPort, 0, openflow.Output(v0.OFPort, 0))
	addRule(t, br0, v0.OFPort, 0, src, dst, openflow.Output(p1.OFPort, 0), openflow.Output(v2.OFPort, 0))
	now := time.Now()
	out := Out{Actions: make([]byte, 0, 1024)}

	var key flow.Key
	flow.ExtractInto(&key, synFrame(6), &flow.Metadata{InPort: p1.DPPort})
	bk.Translate(&key, now, true, &out)
	if got, want := datapath.FormatActions(out.Actions), "pop_eth,set(tunnel(dst=172.31.1.1,ttl=64,tp_dst=4789,flags(df))),"+u32s(v0.DPPort); got != want {
		t.Errorf("output to v0: %s, want %s", got, want)
	}

	// In: the kernel's key of a packet from the GPE device. The output
	// to the L2 vxlan port after p1 keeps the pushed Ethernet header.
	flow.ExtractInto(&key, synFrame(7), &flow.Metadata{InPort: v0.DPPort, Tunnel: flow.Tunnel{IPv4Src: [4]byte{172, 31, 1, 1},
		IPv4Dst: [4]byte{172, 31, 1, 100}, TTL: 64, TpDst: 4789}})
	key.L3, key.EthSrc, key.EthDst = true, [6]byte{}, [6]byte{}
	bk.Translate(&key, now, true, &out)
	want := "push_eth(src=00:12:34:56:78:aa,dst=00:12:34:56:78:bb)," + u32s(p1.DPPort) +
		",set(tunnel(dst=172.31.1.2,ttl=64,tp_dst=4790,flags(df)))," + u32s(v2.DPPort)
	if got := datapath.FormatActions(out.Actions); got != want || out.Dropped != "" {
		t.Errorf("from v0: %s (%q)\n     want %s", got, out.Dropped, want)
	}
	if n := testing.AllocsPerRun(500, func() { bk.Translate(&key, now, true, &out) }); n != 0 {
		t.Errorf("VXLAN-GPE receive allocates %v times", n)
	}
}

// TestTunnelVports: tnl/ports/show's list is the shared vports, each with
// its name, UDP port and how many tunnel ports of every bridge use it.
func TestTunnelVports(t *testing.T) {
	bk, _, br1, v0, _ := tunnelBridges(t)
	c, err := ParseTunnelConfig("g0", "gre", map[string]string{"remote_ip": "10.0.0.3"})
	if err != nil {
		t.Fatal(err)
	}
	g0, err := br1.AddTunnelPort("g0", c, 0, PortVLAN{})
	if err != nil {
		t.Fatal(err)
	}
	tvs, err := bk.TunnelVports()
	if err != nil {
		t.Fatal(err)
	}
	want := []TunnelVport{
		{PortNo: v0.DPPort, Name: "vxlan_sys_4789", Type: "vxlan", DstPort: 4789, Users: 2},
		{PortNo: g0.DPPort, Name: "gre_sys", Type: "gre", Users: 1},
	}
	if fmt.Sprint(tvs) != fmt.Sprint(want) {
		t.Errorf("TunnelVports %+v, want %+v", tvs, want)
	}
	if err := br1.DeletePort("g0"); err != nil {
		t.Fatal(err)
	}
	if tvs, _ = bk.TunnelVports(); len(tvs) != 1 || tvs[0].Users != 2 {
		t.Errorf("after g0 went: %+v", tvs)
	}
}

// TestTunnelXlateEgressMark: output to a tunnel port with egress_pkt_mark
// sets the skb mark before the tunnel and the output, matches the
// packet's mark exactly, and a second output to the same port sets
// nothing again; without the option no mark is set.
func TestTunnelXlateEgressMark(t *testing.T) {
	bk, br0, _, _ := sharedBridges(t, UpcallConfig{})
	c, err := ParseTunnelConfig("m0", "gre", map[string]string{"remote_ip": "10.0.0.5", "egress_pkt_mark": "42"})
	if err != nil {
		t.Fatal(err)
	}
	m0, err := br0.AddTunnelPort("m0", c, 0, PortVLAN{})
	if err != nil {
		t.Fatal(err)
	}
	p1 := br0.Ports.byName("p1")
	addRule(t, br0, p1.OFPort, 0, openflow.Output(m0.OFPort, 0), openflow.Output(m0.OFPort, 0))
	out := Out{Actions: make([]byte, 0, 1024)}
	var key flow.Key
	flow.ExtractInto(&key, synFrame(6), &flow.Metadata{InPort: p1.DPPort, Mark: 7})
	bk.Translate(&key, time.Now(), true, &out)
	tun := "set(tunnel(dst=10.0.0.5,ttl=64,flags(df))),"
	if got, want := datapath.FormatActions(out.Actions), "set(skb_mark(0x2a)),"+tun+u32s(m0.DPPort)+","+u32s(m0.DPPort); got != want {
		t.Errorf("output to m0: %s, want %s", got, want)
	}
	if out.WC.Mark != ^uint32(0) {
		t.Errorf("megaflow mark mask %#x, want exact", out.WC.Mark)
	}
	if n := testing.AllocsPerRun(500, func() { bk.Translate(&key, time.Now(), true, &out) }); n != 0 {
		t.Errorf("egress mark output allocates %v times", n)
	}
}

// TestTunnelXlateErspanFields: set_field to tun_erspan_ver, _dir and
// _hwid feeds an erspan_ver=flow port's set(tunnel(erspan(...))), and a
// rule matching tun_erspan_ver and tun_erspan_idx takes the packets from
// an erspan port whose metadata has them, with the fields in the
// megaflow, and not the others.
func TestTunnelXlateErspanFields(t *testing.T) {
	bk, br0, _, prov := sharedBridges(t, UpcallConfig{})
	if _, err := prov.AddNetdev("erspan_sys"); err != nil {
		t.Fatal(err)
	}
	if _, err := bk.DP.AddVport(datapath.VportSpec{Name: "erspan_sys", Type: datapath.VportNetdev}); err != nil {
		t.Fatal(err)
	}
	c, err := ParseTunnelConfig("ef", "erspan", map[string]string{"remote_ip": "172.31.1.100", "key": "1", "erspan_ver": "flow"})
	if err != nil {
		t.Fatal(err)
	}
	ef, err := br0.AddTunnelPort("ef", c, 0, PortVLAN{})
	if err != nil {
		t.Fatal(err)
	}
	p1 := br0.Ports.byName("p1")
	var set flow.Key
	set.Tunnel.ErspanVer, set.Tunnel.ErspanDir, set.Tunnel.ErspanHwid = 2, 1, 0x7
	addRule(t, br0, p1.OFPort, 0, openflow.SetField(openflow.FieldTunErspanVer, &set), openflow.SetField(openflow.FieldTunErspanDir, &set),
		openflow.SetField(openflow.FieldTunErspanHwid, &set), openflow.Output(ef.OFPort, 0))
	var m classifier.Match
	m.Key.InPort, m.Mask.InPort = ef.OFPort, ^uint32(0)
	m.Key.Tunnel.ErspanVer, m.Mask.Tunnel.ErspanVer = 1, 0xff
	m.Key.Tunnel.ErspanIdx, m.Mask.Tunnel.ErspanIdx = 7, ^uint32(0)
	fm := FlowMod{Command: CmdAdd, Match: m, Priority: 100, OutPort: openflow.PortAny,
		Instructions: openflow.Instructions{Apply: []openflow.Action{openflow.Output(p1.OFPort, 0)}}}
	if err := br0.Tables.Apply(&fm, time.Now()); err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	out := Out{Actions: make([]byte, 0, 1024)}
	var key flow.Key
	flow.ExtractInto(&key, synFrame(6), &flow.Metadata{InPort: p1.DPPort})
	bk.Translate(&key, now, true, &out)
	if got, want := datapath.FormatActions(out.Actions), "set(tunnel(tun_id=0x1,dst=172.31.1.100,ttl=64,erspan(ver=2,dir=1,hwid=0x7),flags(df|key))),"+u32s(ef.DPPort); got != want {
		t.Errorf("output to ef: %s, want %s", got, want)
	}
	rx := flow.Metadata{InPort: ef.DPPort, Tunnel: flow.Tunnel{ID: 1, IPv4Src: [4]byte{172, 31, 1, 100}, IPv4Dst: [4]byte{172, 31, 1, 1},
		TTL: 64, Flags: flow.TunnelKey, ErspanVer: 1, ErspanIdx: 7}}
	flow.ExtractInto(&key, synFrame(8), &rx)
	bk.Translate(&key, now, true, &out)
	if got, want := datapath.FormatActions(out.Actions), u32s(p1.DPPort); got != want {
		t.Errorf("from ef with idx 7: %s, want %s (%s)", got, want, out.Dropped)
	}
	if out.WC.Tunnel.ErspanVer != 0xff || out.WC.Tunnel.ErspanIdx == 0 {
		t.Errorf("megaflow ERSPAN mask %+v", out.WC.Tunnel)
	}
	rx.Tunnel.ErspanIdx = 8
	flow.ExtractInto(&key, synFrame(8), &rx)
	bk.Translate(&key, now, true, &out)
	// No rule takes it: the table miss floods it (NORMAL), to more
	// than the idx 7 rule's one port.
	if got := datapath.FormatActions(out.Actions); got == u32s(p1.DPPort) || !strings.Contains(got, ",") {
		t.Errorf("from ef with idx 8: %s, want the table miss's flood", got)
	}
}

// TestTunnelXlateGbp: a vxlan port with exts=gbp sends the packet's
// tun_gbp_id and tun_gbp_flags as set_field left them
// (set(tunnel(vxlan(gbp(...))))), a rule matching tun_gbp_id takes the
// packets from it that carry that policy ID, with the ID in the
// megaflow, and not the others; a port without gbp sends none, and the
// two cannot share a UDP port.
func TestTunnelXlateGbp(t *testing.T) {
	bk, br0, _, prov := sharedBridges(t, UpcallConfig{})
	if _, err := prov.AddNetdev("vxlan_sys_4789"); err != nil {
		t.Fatal(err)
	}
	c, err := ParseTunnelConfig("vx", "vxlan", map[string]string{"remote_ip": "172.31.1.100", "key": "100", "exts": "gbp"})
	if err != nil {
		t.Fatal(err)
	}
	vx, err := br0.AddTunnelPort("vx", c, 0, PortVLAN{})
	if err != nil {
		t.Fatal(err)
	}
	plain, _ := ParseTunnelConfig("vy", "vxlan", map[string]string{"remote_ip": "172.31.1.101"})
	if _, err := br0.AddTunnelPort("vy", plain, 0, PortVLAN{}); err == nil || !strings.Contains(err.Error(), "VXLAN-GBP, and non-VXLAN-GBP tunnels can't be configured on the same dst_port") {
		t.Errorf("plain vxlan beside gbp on 4789: %v", err)
	}
	p1 := br0.Ports.byName("p1")
	var set flow.Key
	set.Tunnel.GbpID, set.Tunnel.GbpFlags = 0x20, 0x08
	addRule(t, br0, p1.OFPort, 0, openflow.SetField(openflow.FieldTunGbpID, &set), openflow.SetField(openflow.FieldTunGbpFlags, &set),
		openflow.Output(vx.OFPort, 0))
	var m classifier.Match
	m.Key.InPort, m.Mask.InPort = vx.OFPort, ^uint32(0)
	m.Key.Tunnel.GbpID, m.Mask.Tunnel.GbpID = 0x10, 0xffff
	fm := FlowMod{Command: CmdAdd, Match: m, Priority: 100, OutPort: openflow.PortAny,
		Instructions: openflow.Instructions{Apply: []openflow.Action{openflow.Output(p1.OFPort, 0)}}}
	if err := br0.Tables.Apply(&fm, time.Now()); err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	out := Out{Actions: make([]byte, 0, 1024)}
	var key flow.Key
	flow.ExtractInto(&key, synFrame(6), &flow.Metadata{InPort: p1.DPPort})
	bk.Translate(&key, now, true, &out)
	if got, want := datapath.FormatActions(out.Actions), "set(tunnel(tun_id=0x64,dst=172.31.1.100,ttl=64,tp_dst=4789,vxlan(gbp(id=32,flags=0x8)),flags(df|key))),"+u32s(vx.DPPort); got != want {
		t.Errorf("output to vx: %s, want %s", got, want)
	}
	// set_field makes the field exact, as in OVS; the kernel gets no
	// GBP mask for an untunnelled key.
	wc := out.WC
	datapath.FitMask(&key, &wc)
	if wc.Tunnel.GbpID != 0 || wc.Tunnel.GbpFlags != 0 {
		t.Errorf("untunnelled megaflow matches GBP: %+v", wc.Tunnel)
	}
	if n := testing.AllocsPerRun(500, func() { bk.Translate(&key, now, true, &out) }); n != 0 {
		t.Errorf("GBP tunnel output allocates %v times", n)
	}
	rx := flow.Metadata{InPort: vx.DPPort, Tunnel: flow.Tunnel{ID: 100, IPv4Src: [4]byte{172, 31, 1, 100}, IPv4Dst: [4]byte{172, 31, 1, 1},
		TTL: 64, TpDst: 4789, Flags: flow.TunnelKey, GbpID: 0x10}}
	flow.ExtractInto(&key, synFrame(8), &rx)
	bk.Translate(&key, now, true, &out)
	if got, want := datapath.FormatActions(out.Actions), u32s(p1.DPPort); got != want {
		t.Errorf("from vx with id 16: %s, want %s (%s)", got, want, out.Dropped)
	}
	if out.WC.Tunnel.GbpID != 0xffff {
		t.Errorf("megaflow GBP mask %+v", out.WC.Tunnel)
	}
	if n := testing.AllocsPerRun(500, func() { bk.Translate(&key, now, true, &out) }); n != 0 {
		t.Errorf("GBP tunnel receive allocates %v times", n)
	}
	rx.Tunnel.GbpID = 0x11
	flow.ExtractInto(&key, synFrame(8), &rx)
	bk.Translate(&key, now, true, &out)
	if got := datapath.FormatActions(out.Actions); got == u32s(p1.DPPort) {
		t.Errorf("from vx with id 17: %s, the id 16 rule took it", got)
	}
}
