package ofproto

import (
	"testing"
	"time"

	"github.com/govswitch/govswitch/datapath"
	"github.com/govswitch/govswitch/flow"
	"github.com/govswitch/govswitch/ofproto/maclearn"
	"github.com/govswitch/govswitch/ofproto/openflow"
)

// testBridge has ports 1..3 on datapath ports 11..13 and LOCAL on 0, so
// OpenFlow and datapath numbers differ and a mix-up shows.
func testBridge(t *testing.T) *Xlator {
	t.Helper()
	ports := NewPorts()
	for _, p := range []Port{
		{OFPort: openflow.PortLocal, DPPort: 0, Name: "br0", Type: "internal"},
		{OFPort: 1, DPPort: 11, Name: "p1"},
		{OFPort: 2, DPPort: 12, Name: "p2"},
		{OFPort: 3, DPPort: 13, Name: "p3", NoFlood: true},
	} {
		if err := ports.Add(p); err != nil {
			t.Fatal(err)
		}
	}
	return &Xlator{Tables: NewTables(), Ports: ports, MAC: maclearn.New(0, 0)}
}

func mustAdd(t testing.TB, x *Xlator, table uint8, m func(k *flow.Key, m *flow.Mask), prio uint16, in openflow.Instructions) {
	t.Helper()
	fm := FlowMod{Command: CmdAdd, Table: table, Match: match(m), Priority: prio, Instructions: in, OutPort: openflow.PortAny}
	if err := x.Tables.Apply(&fm, t0); err != nil {
		t.Fatal(err)
	}
}

func apply(acts ...openflow.Action) openflow.Instructions { return openflow.Instructions{Apply: acts} }

var (
	macA = [6]byte{0x02, 0, 0, 0, 0, 0xa}
	macB = [6]byte{0x02, 0, 0, 0, 0, 0xb}
)

// pkt is a TCP/IPv4 packet from macA to macB arriving on datapath port dp.
func pkt(dp uint32) flow.Key {
	return flow.Key{InPort: dp, EthSrc: macA, EthDst: macB, EthType: flow.EthTypeIPv4,
		IPv4Src: [4]byte{10, 0, 0, 1}, IPv4Dst: [4]byte{10, 0, 0, 2}, NwProto: flow.IPProtoTCP, NwTTL: 64,
		TpSrc: 40000, TpDst: 80}
}

func TestXlateActions(t *testing.T) {
	anyMatch := func(*flow.Key, *flow.Mask) {}
	tests := []struct {
		name  string
		in    openflow.Instructions
		inDP  uint32
		want  string
		setup func(x *Xlator)
	}{
		{"drop", apply(), 11, "drop", nil},
		{"output maps to datapath port", apply(openflow.Output(2, 0)), 11, "12", nil},
		{"output to the input port is dropped", apply(openflow.Output(1, 0)), 11, "drop", nil},
		{"in_port", apply(openflow.Output(openflow.PortInPort, 0)), 11, "11", nil},
		{"local", apply(openflow.Output(openflow.PortLocal, 0)), 11, "0", nil},
		// Flooding follows OpenFlow port order; LOCAL (0xfffffffe) is last.
		{"flood skips input and no-flood", apply(openflow.Output(openflow.PortFlood, 0)), 11, "12,0", nil},
		{"all skips only input", apply(openflow.Output(openflow.PortAll, 0)), 11, "12,13,0", nil},
		{"push vlan (1.0 set_vlan_vid)", apply(openflow.Action{Type: openflow.ActSetVLANVID, VLANVID: 10},
			openflow.Output(2, 0)), 11, "push_vlan(vid=10,pcp=0),12", nil},
		{"controller without a controller path drops", apply(openflow.Output(openflow.PortController, 0xffff)), 11, "drop", nil},
		{"controller", apply(openflow.Output(openflow.PortController, 128)), 11,
			"userspace(pid=77,userdata(01010000008000000000000000000000))",
			func(x *Xlator) { x.ControllerPID.Store(77) }},
		{"two outputs", apply(openflow.Output(2, 0), openflow.Output(3, 0)), 11, "12,13", nil},
		{"unknown input port", apply(openflow.Output(2, 0)), 99, "drop", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			x := testBridge(t)
			if tt.setup != nil {
				tt.setup(x)
			}
			mustAdd(t, x, 0, anyMatch, 0, tt.in)
			k := pkt(tt.inDP)
			var out Out
			x.Translate(&k, t0, true, &out)
			if got := datapath.FormatActions(out.Actions); got != tt.want {
				t.Errorf("actions %q, want %q (dropped: %q)", got, tt.want, out.Dropped)
			}
		})
	}
}

func TestXlateSetFields(t *testing.T) {
	x := testBridge(t)
	newKey := pkt(11)
	newKey.EthDst = [6]byte{0x02, 0, 0, 0, 0, 0xcc}
	newKey.IPv4Dst = [4]byte{192, 168, 1, 1}
	newKey.TpDst = 8080
	var acts []openflow.Action
	// Find the fields by what they set, through the codec's own table.
	for _, probe := range []struct {
		set func(k *flow.Key)
	}{
		{func(k *flow.Key) { k.EthDst = newKey.EthDst }},
		{func(k *flow.Key) { k.IPv4Dst = newKey.IPv4Dst }},
		{func(k *flow.Key) { k.TpDst = newKey.TpDst }},
	} {
		f := fieldSetting(t, probe.set)
		acts = append(acts, openflow.SetField(f, &newKey))
	}
	acts = append(acts, openflow.Output(2, 0))
	mustAdd(t, x, 0, func(k *flow.Key, m *flow.Mask) {
		k.EthType, m.EthType = flow.EthTypeIPv4, 0xffff
		k.NwProto, m.NwProto = flow.IPProtoTCP, 0xff
	}, 5, apply(acts...))
	k := pkt(11)
	var out Out
	x.Translate(&k, t0, true, &out)
	got := datapath.FormatActions(out.Actions)
	want := "set(eth(dst=02:00:00:00:00:cc)),set(ipv4(dst=192.168.1.1)),set(tcp(dst=8080)),12"
	if got != want {
		t.Errorf("actions\n got %s\nwant %s", got, want)
	}
	// The sets depend on the packet being TCP over IPv4 and not a later
	// fragment: those bits are in the megaflow.
	if out.WC.EthType != 0xffff || out.WC.NwProto != 0xff || out.WC.NwFrag == 0 {
		t.Errorf("megaflow misses the sets' prerequisites: %s", flow.Format(&k, &out.WC))
	}
}

// fieldSetting finds the OpenFlow field whose SetValue changes what set
// changes, by probing the codec's fields.
func fieldSetting(t *testing.T, set func(*flow.Key)) openflow.Field {
	t.Helper()
	var want flow.Key
	set(&want)
	var buf [16]byte
	for f := openflow.Field(1); f < 255; f++ {
		n := f.Size()
		if n == 0 {
			continue
		}
		v, ok := f.Value(buf[:0], &want)
		if !ok {
			continue
		}
		var k flow.Key
		if f.SetValue(&k, v) && k == want {
			return f
		}
	}
	t.Fatal("no field sets that")
	return 0
}

func TestXlateMegaflowNormal(t *testing.T) {
	x := testBridge(t)
	mustAdd(t, x, 0, func(*flow.Key, *flow.Mask) {}, 0, apply(openflow.Output(openflow.PortNormal, 0)))
	// A → B: B unknown, flood; A learned on port 1.
	k := pkt(11)
	var out Out
	x.Translate(&k, t0, true, &out)
	if got := datapath.FormatActions(out.Actions); got != "0,12" {
		t.Errorf("unknown dst: %s, want flood 0,12 (LOCAL first, as OVS)", got)
	}
	if !out.Learned {
		t.Errorf("source not learned")
	}
	// B → A from port 2: A is known on port 1: unicast.
	r := pkt(12)
	r.EthSrc, r.EthDst = macB, macA
	x.Translate(&r, t0, true, &out)
	if got := datapath.FormatActions(out.Actions); got != "11" {
		t.Errorf("known dst: %s, want 11", got)
	}
	// NORMAL's megaflow: in_port, both MACs, VLAN — no L3 or L4 bits.
	wc := out.WC
	if wc.EthSrc != ones6 || wc.EthDst != ones6 || wc.InPort != ^uint32(0) {
		t.Errorf("NORMAL megaflow lacks L2 bits: %s", flow.Format(&r, &wc))
	}
	if wc.IPv4Src != [4]byte{} || wc.IPv4Dst != [4]byte{} || wc.TpDst != 0 || wc.TpSrc != 0 || wc.NwProto != 0 {
		t.Errorf("NORMAL megaflow has L3/L4 bits: %s", flow.Format(&r, &wc))
	}
	// A → B again: B is now known on port 2.
	x.Translate(&k, t0, true, &out)
	if got := datapath.FormatActions(out.Actions); got != "12" {
		t.Errorf("after learning B: %s, want 12", got)
	}
	// Broadcast floods.
	b := pkt(11)
	b.EthDst = ones6
	x.Translate(&b, t0, true, &out)
	if got := datapath.FormatActions(out.Actions); got != "0,12" {
		t.Errorf("broadcast: %s", got)
	}
}

func TestXlateL4ACLMegaflow(t *testing.T) {
	x := testBridge(t)
	for i := uint16(0); i < 50; i++ {
		port := 1000 + i
		mustAdd(t, x, 0, func(k *flow.Key, m *flow.Mask) {
			k.EthType, m.EthType = flow.EthTypeIPv4, 0xffff
			k.NwProto, m.NwProto = flow.IPProtoTCP, 0xff
			k.TpDst, m.TpDst = port, 0xffff
		}, 10, apply())
	}
	mustAdd(t, x, 0, func(*flow.Key, *flow.Mask) {}, 0, apply(openflow.Output(2, 0)))
	k := pkt(11)
	var out Out
	x.Translate(&k, t0, true, &out)
	if got := datapath.FormatActions(out.Actions); got != "12" {
		t.Errorf("actions %s", got)
	}
	if out.WC.TpDst == 0 {
		t.Errorf("an L4 ACL's megaflow must consult tp_dst: %s", flow.Format(&k, &out.WC))
	}
	if out.WC.IPv4Src != [4]byte{} || out.WC.TpSrc != 0 {
		t.Errorf("the ACL never reads ip src or tp_src: %s", flow.Format(&k, &out.WC))
	}
	// Soundness: another packet equal under the mask translates the same.
	k2 := k
	k2.IPv4Src = [4]byte{172, 16, 0, 9}
	k2.TpSrc = 1234
	var out2 Out
	x.Translate(&k2, t0, true, &out2)
	if string(out2.Actions) != string(out.Actions) {
		t.Errorf("packets equal under the megaflow translate differently")
	}
}

func TestXlatePipeline(t *testing.T) {
	x := testBridge(t)
	// table 0: metadata then goto 1; table 1 matches metadata, resubmits
	// to table 2 which outputs; an action set output runs at the end.
	mustAdd(t, x, 0, func(*flow.Key, *flow.Mask) {}, 0, openflow.Instructions{
		WriteMetadata: true, Metadata: 0x5, MetadataMask: 0xff, GotoTable: true, Table: 1})
	mustAdd(t, x, 1, func(k *flow.Key, m *flow.Mask) { k.OFMetadata, m.OFMetadata = 5, 0xff }, 1, openflow.Instructions{
		Apply: []openflow.Action{openflow.Resubmit(openflow.PortInPort, 2)},
		Write: []openflow.Action{openflow.Output(openflow.PortLocal, 0)},
	})
	mustAdd(t, x, 2, func(*flow.Key, *flow.Mask) {}, 0, apply(openflow.Output(2, 0)))
	k := pkt(11)
	var out Out
	x.Translate(&k, t0, true, &out)
	if got := datapath.FormatActions(out.Actions); got != "12,0" {
		t.Errorf("pipeline: %s, want 12,0", got)
	}
	if out.NRules != 3 {
		t.Errorf("matched %d rules, want 3", out.NRules)
	}
	// The lookup consulted metadata, so the raw mask says so; metadata is
	// OpenFlow-only, and fitting the mask for the datapath drops it.
	if out.WC.OFMetadata == 0 {
		t.Errorf("the lookup consulted metadata, the raw mask should say so")
	}
	fitted := out.WC
	datapath.FitMask(&k, &fitted)
	if fitted.OFMetadata != 0 {
		t.Errorf("FitMask kept OpenFlow metadata")
	}
}

func TestXlateResubmitLoop(t *testing.T) {
	x := testBridge(t)
	mustAdd(t, x, 0, func(*flow.Key, *flow.Mask) {}, 0, apply(openflow.Output(2, 0), openflow.Resubmit(openflow.PortInPort, 0)))
	k := pkt(11)
	var out Out
	x.Translate(&k, t0, true, &out)
	if len(out.Actions) != 0 || out.Dropped == "" {
		t.Errorf("a resubmit loop should drop: %s (%q)", datapath.FormatActions(out.Actions), out.Dropped)
	}
}

func TestXlateMiss(t *testing.T) {
	x := testBridge(t)
	k := pkt(11)
	var out Out
	x.Translate(&k, t0, true, &out)
	if len(out.Actions) != 0 {
		t.Errorf("miss without controller: %s", datapath.FormatActions(out.Actions))
	}
	x.ControllerPID.Store(5)
	x.MissToController.Store(true)
	x.Translate(&k, t0, true, &out)
	u, ok := ParseControllerUserdata(userdataOf(t, out.Actions))
	if !ok || u.Reason != ReasonNoMatch || u.Cookie != ^uint64(0) || !out.Controller {
		t.Errorf("miss to controller: %+v %v", u, ok)
	}
}

func userdataOf(t *testing.T, acts []byte) []byte {
	t.Helper()
	it := datapath.NewActionIter(acts)
	for it.Next() {
		if a := it.Action(); a.Type == datapath.ActionUserspace {
			return append([]byte(nil), a.Userspace.Userdata...)
		}
	}
	t.Fatalf("no userspace action in %s", datapath.FormatActions(acts))
	return nil
}

func TestXlateAllocs(t *testing.T) {
	x := testBridge(t)
	mustAdd(t, x, 0, func(*flow.Key, *flow.Mask) {}, 0, apply(openflow.Output(openflow.PortNormal, 0)))
	for i := uint16(0); i < 20; i++ {
		port := 2000 + i
		mustAdd(t, x, 0, func(k *flow.Key, m *flow.Mask) {
			k.EthType, m.EthType = flow.EthTypeIPv4, 0xffff
			k.NwProto, m.NwProto = flow.IPProtoTCP, 0xff
			k.TpDst, m.TpDst = port, 0xffff
		}, 10, apply(openflow.Output(2, 0)))
	}
	out := Out{Actions: make([]byte, 0, 1024)}
	k := pkt(11)
	now := t0
	n := testing.AllocsPerRun(1000, func() {
		k.TpSrc++
		now = now.Add(time.Millisecond)
		x.Translate(&k, now, true, &out)
	})
	if n != 0 {
		t.Errorf("Translate allocates %v per packet", n)
	}
}

func BenchmarkXlateNormal(b *testing.B) {
	x := &Xlator{Tables: NewTables(), Ports: NewPorts(), MAC: maclearn.New(0, 0)}
	for i := uint32(1); i <= 4; i++ {
		x.Ports.Add(Port{OFPort: i, DPPort: i, Name: string(rune('a' + i))})
	}
	fm := FlowMod{Command: CmdAdd, Instructions: apply(openflow.Output(openflow.PortNormal, 0)), OutPort: openflow.PortAny}
	x.Tables.Apply(&fm, t0)
	out := Out{Actions: make([]byte, 0, 1024)}
	k := pkt(1)
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		k.TpSrc = uint16(i)
		x.Translate(&k, t0, true, &out)
	}
}
