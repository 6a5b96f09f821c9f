package ofproto

import (
	"strings"
	"testing"
	"time"

	"github.com/govswitch/govswitch/classifier"
	"github.com/govswitch/govswitch/datapath"
	"github.com/govswitch/govswitch/flow"
	"github.com/govswitch/govswitch/ofproto/openflow"
)

// TestTunMetadataXlate: a Geneve packet's option reaches the tables as
// tun_metadata0 through the TLV map; the megaflow matches the option's
// header exactly and its data (which goes out again); set_field of tun_metadata1
// goes out as a Geneve option in set(tunnel(...)); an unmapped critical
// option drops the packet; none of it allocates; and a mapping a flow
// matches cannot be deleted.
func TestTunMetadataXlate(t *testing.T) {
	bk, br0, g0 := geneveBridge(t, openflow.TLVMap{Class: 0xffff, Type: 0, Len: 4, Index: 0},
		openflow.TLVMap{Class: 0x0102, Type: 0x80, Len: 4, Index: 1})
	var err error
	p1 := br0.Ports.byName("p1")
	// Table 0: from g0 with tun_metadata0=0xa/0xff, set tun_metadata1 and go back out g0.
	var m classifier.Match
	m.Key.InPort, m.Mask.InPort = g0.OFPort, ^uint32(0)
	om := openflow.Match{Key: m.Key, Mask: m.Mask}
	var v flow.Key
	v.Tunnel.Metadata.Opts[3] = 0xa // tun_metadata0 at offset 0 (first mapped)
	om.Set(openflow.FieldTunMetadata0, &v)
	om.Mask.Tunnel.Metadata.Opts[0], om.Mask.Tunnel.Metadata.Opts[1], om.Mask.Tunnel.Metadata.Opts[2] = 0, 0, 0
	var set flow.Key
	loc := openflow.CurrentTunMDLayout()[1]
	copy(set.Tunnel.Metadata.Opts[loc.Off:], []byte{0, 0, 0x12, 0x34})
	fm := FlowMod{Command: CmdAdd, Match: classifier.Match{Key: om.Key, Mask: om.Mask}, Priority: 100, OutPort: openflow.PortAny,
		Instructions: openflow.Instructions{Apply: []openflow.Action{openflow.SetField(openflow.FieldTunMetadata0+1, &set), openflow.Output(p1.OFPort, 0),
			openflow.Output(openflow.PortInPort, 0)}}}
	if err := br0.Tables.Apply(&fm, time.Now()); err != nil {
		t.Fatal(err)
	}
	rx := flow.Metadata{InPort: g0.DPPort, Tunnel: flow.Tunnel{IPv4Src: [4]byte{10, 0, 0, 2}, IPv4Dst: [4]byte{10, 0, 0, 1},
		TTL: 64, TpDst: 6081, Flags: flow.TunnelKey | flow.TunnelUDPIF}}
	opts := []byte{0xff, 0xff, 0x00, 0x01, 0, 0, 0, 0x0a, 0x01, 0x03, 0x05, 0x00}
	copy(rx.Tunnel.Metadata.Opts[:], opts)
	rx.Tunnel.Metadata.Present = uint64(len(opts))
	var key flow.Key
	flow.ExtractInto(&key, synFrame(8), &rx)
	out := Out{Actions: make([]byte, 0, 1024)}
	now := time.Now()
	bk.Translate(&key, now, true, &out)
	// The received option goes out again (the flow keeps it), beside the one set.
	want := u32s(p1.DPPort) + ",set(tunnel(dst=10.0.0.2,ttl=64,tp_dst=6081,geneve({class=0xffff,type=0,len=4,0xa}{class=0x102,type=0x80,len=4,0x1234}),flags(df))),"
	if got := datapath.FormatActions(out.Actions); !strings.HasPrefix(got, want) {
		t.Errorf("actions %s, want %s...", got, want)
	}
	wm := out.WC.Tunnel.Metadata
	if wm.Present != 0xff || [12]byte(wm.Opts[:12]) != [12]byte{0xff, 0xff, 0xff, 0x1f, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x1f} {
		t.Errorf("megaflow geneve mask %x", wm.Opts[:12])
	}
	if got := flow.Format(&key, &out.WC); !strings.Contains(got, "geneve({class=0xffff,type=0,len=4,0xa}{class=0x103,type=0x5,len=0})") {
		t.Errorf("megaflow %s", got)
	}
	if n := testing.AllocsPerRun(500, func() { bk.Translate(&key, now, true, &out) }); n != 0 {
		t.Errorf("geneve translation allocates %v times", n)
	}
	// Another value of the option misses the rule.
	key.Tunnel.Metadata.Opts[7] = 0xb
	bk.Translate(&key, now, true, &out)
	if strings.Contains(datapath.FormatActions(out.Actions), "geneve") {
		t.Errorf("tun_metadata0=0xb matched 0xa/0xff: %s", datapath.FormatActions(out.Actions))
	}
	// An unmapped critical option drops the packet.
	key.Tunnel.Metadata.Opts[10] = 0x85
	bk.Translate(&key, now, true, &out)
	if len(out.Actions) != 0 || out.Dropped != "invalid geneve options" {
		t.Errorf("critical option: %s %q", datapath.FormatActions(out.Actions), out.Dropped)
	}
	err = br0.TLVs.apply(openflow.TLVTableDelete, []openflow.TLVMap{{Index: 0}}, br0.tunMDInUse)
	if f, ok := err.(*tlvFailure); !ok || f.code != openflow.TLVTableInvalidDel {
		t.Errorf("deleting a matched field's mapping: %v", err)
	}
}

// TestTunMetadataMoveMask: OVN reads the logical ports out of its Geneve
// option with two moves (tun_metadata0[16..30] into reg14, [0..15] into
// reg15); the megaflow matches the 31 bits read and leaves the option's
// top bit wildcarded, as ovs-vswitchd's does (0x30001/0x7fffffff).
func TestTunMetadataMoveMask(t *testing.T) {
	bk, br0, g0 := geneveBridge(t, openflow.TLVMap{Class: 0x0102, Type: 0x80, Len: 4, Index: 0})
	p1 := br0.Ports.byName("p1")
	var m classifier.Match
	m.Key.InPort, m.Mask.InPort = g0.OFPort, ^uint32(0)
	mv := func(ofs, n uint16, dst openflow.Field) openflow.Action {
		return openflow.Action{Type: openflow.ActRegMove, Src: openflow.FieldTunMetadata0, SrcOfs: ofs, Field: dst, NBits: n}
	}
	fm := FlowMod{Command: CmdAdd, Match: m, Priority: 100, OutPort: openflow.PortAny,
		Instructions: apply(mv(16, 15, openflow.FieldReg0+14), mv(0, 16, openflow.FieldReg0+15), openflow.Output(p1.OFPort, 0))}
	if err := br0.Tables.Apply(&fm, time.Now()); err != nil {
		t.Fatal(err)
	}
	rx := flow.Metadata{InPort: g0.DPPort, Tunnel: flow.Tunnel{IPv4Src: [4]byte{10, 0, 0, 2}, IPv4Dst: [4]byte{10, 0, 0, 1},
		TTL: 64, TpDst: 6081, Flags: flow.TunnelKey | flow.TunnelUDPIF}}
	opts := []byte{0x01, 0x02, 0x80, 0x01, 0x00, 0x03, 0x00, 0x01}
	copy(rx.Tunnel.Metadata.Opts[:], opts)
	rx.Tunnel.Metadata.Present = uint64(len(opts))
	var key flow.Key
	flow.ExtractInto(&key, synFrame(8), &rx)
	out := Out{Actions: make([]byte, 0, 1024)}
	bk.Translate(&key, time.Now(), true, &out)
	if got := datapath.FormatActions(out.Actions); got != u32s(p1.DPPort) {
		t.Errorf("actions %s, want %s", got, u32s(p1.DPPort))
	}
	if got := flow.Format(&key, &out.WC); !strings.Contains(got, "geneve({class=0x102,type=0x80,len=4,0x30001/0x7fffffff})") {
		t.Errorf("megaflow %s, want the option's 31 bits read", got)
	}
}

// geneveBridge is a backer whose br0 has geneve port g0 (remote 10.0.0.2)
// and a TLV map of maps, cleared when the test ends.
func geneveBridge(t *testing.T, maps ...openflow.TLVMap) (*Backer, *Bridge, Port) {
	t.Helper()
	bk, br0, _, _ := sharedBridges(t, UpcallConfig{})
	cfg, err := ParseTunnelConfig("g0", "geneve", map[string]string{"remote_ip": "10.0.0.2"})
	if err != nil {
		t.Fatal(err)
	}
	g0, err := br0.AddTunnelPort("g0", cfg, 0, PortVLAN{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { br0.TLVs.Apply(openflow.TLVTableClear, nil) })
	if err := br0.TLVs.Apply(openflow.TLVTableAdd, maps); err != nil {
		t.Fatal(err)
	}
	return bk, br0, g0
}
