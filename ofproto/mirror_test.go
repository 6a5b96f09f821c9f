package ofproto

import (
	"testing"

	"github.com/govswitch/govswitch/datapath"
	"github.com/govswitch/govswitch/flow"
	"github.com/govswitch/govswitch/ofproto/maclearn"
	"github.com/govswitch/govswitch/ofproto/openflow"
)

// mirrorBridge is a NORMAL bridge of p1..p4 (dp 11..14) and LOCAL (dp0),
// p3 an access port of VLAN 10 when vlan is set.
func mirrorBridge(t testing.TB, vlan bool, cfgs ...MirrorConfig) (*Bridge, *Xlator) {
	t.Helper()
	ports := NewPorts()
	p3 := Port{OFPort: 3, DPPort: 13, Name: "p3"}
	if vlan {
		p3.VLAN = mustVLAN(t, "access", 10)
	}
	for _, p := range []Port{
		{OFPort: openflow.PortLocal, DPPort: 0, Name: "br0", Type: "internal"},
		{OFPort: 1, DPPort: 11, Name: "p1"},
		{OFPort: 2, DPPort: 12, Name: "p2"},
		p3,
		{OFPort: 4, DPPort: 14, Name: "p4"},
	} {
		if err := ports.Add(p); err != nil {
			t.Fatal(err)
		}
	}
	x := &Xlator{Tables: NewTables(), Ports: ports, MAC: maclearn.New(0, 0)}
	mustAdd(t, x, 0, func(*flow.Key, *flow.Mask) {}, 0, apply(openflow.Output(openflow.PortNormal, 0)))
	b := &Bridge{Name: "br0", Ports: ports, MAC: x.MAC, Tables: x.Tables, X: x}
	if err := b.SetMirrors(cfgs); err != nil {
		t.Fatal(err)
	}
	return b, x
}

func TestMirror(t *testing.T) {
	bcast := func(dp uint32) flow.Key {
		k := pkt(dp)
		k.EthDst = ones6
		return k
	}
	tests := []struct {
		name string
		vlan bool
		cfg  MirrorConfig
		key  flow.Key
		want string
	}{
		{"no mirror selects it", false, MirrorConfig{Name: "m", SrcPorts: []string{"p2"}, OutputPort: "p4"}, bcast(11), "0,12,13"},
		{"ingress: the copy first, p4 out of the flood", false,
			MirrorConfig{Name: "m", SrcPorts: []string{"p1"}, OutputPort: "p4"}, bcast(11), "14,0,12,13"},
		{"egress to p2", false, MirrorConfig{Name: "m", DstPorts: []string{"p2"}, OutputPort: "p4"}, bcast(11), "0,14,12,13"},
		{"egress: once, though selected twice", false,
			MirrorConfig{Name: "m", DstPorts: []string{"p2", "p3"}, SrcPorts: []string{"p1"}, OutputPort: "p4"}, bcast(11), "14,0,12,13"},
		{"select_all", false, MirrorConfig{Name: "m", SelectAll: true, OutputPort: "p4"}, bcast(12), "14,0,11,13"},
		{"arriving on the output port: dropped by NORMAL", false,
			MirrorConfig{Name: "m", SrcPorts: []string{"p1"}, OutputPort: "p4"}, bcast(14), "drop"},
		{"select_vlan, not that VLAN", false,
			MirrorConfig{Name: "m", SelectAll: true, VLANs: []uint16{10}, OutputPort: "p4"}, bcast(11), "0,12,13"},
		{"select_vlan 10 from an access port of 10, tagged to the trunk", true,
			MirrorConfig{Name: "m", SrcPorts: []string{"p3"}, VLANs: []uint16{10}, OutputPort: "p4"}, bcast(13),
			"push_vlan(vid=10,pcp=0),14,0,11,12"},
		{"output_vlan: flooded in VLAN 20, tagged", false,
			MirrorConfig{Name: "m", SrcPorts: []string{"p1"}, OutputVLAN: 20}, bcast(11),
			"push_vlan(vid=20,pcp=0),0,12,13,14,pop_vlan,0,12,13,14"},
		{"snaplen: the copy truncated, the flood whole", false,
			MirrorConfig{Name: "m", SrcPorts: []string{"p1"}, OutputPort: "p4", Snaplen: 64}, bcast(11), "trunc(64),14,0,12,13"},
		{"snaplen on egress", false,
			MirrorConfig{Name: "m", DstPorts: []string{"p2"}, OutputPort: "p4", Snaplen: 100}, bcast(11), "0,trunc(100),14,12,13"},
		{"snaplen 65535 is whole packets", false,
			MirrorConfig{Name: "m", SrcPorts: []string{"p1"}, OutputPort: "p4", Snaplen: 65535}, bcast(11), "14,0,12,13"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, x := mirrorBridge(t, tt.vlan, tt.cfg)
			if got := xlate(x, tt.key); got != tt.want {
				t.Errorf("actions %s, want %s", got, tt.want)
			}
		})
	}
}

func TestMirrorUnicastAndChange(t *testing.T) {
	b, x := mirrorBridge(t, false, MirrorConfig{Name: "m", DstPorts: []string{"p2"}, OutputPort: "p4"})
	// macB learned on p2; macA -> macB goes to p2, and a copy to p4.
	k := pkt(12)
	k.EthSrc, k.EthDst = macB, macA
	xlate(x, k)
	if got := xlate(x, pkt(11)); got != "14,12" {
		t.Errorf("to macB: %s, want 14,12", got)
	}
	// The mirror removed: no copy.
	if err := b.SetMirrors(nil); err != nil {
		t.Fatal(err)
	}
	if got := xlate(x, pkt(11)); got != "12" {
		t.Errorf("without the mirror: %s, want 12", got)
	}
	if err := b.SetMirrors([]MirrorConfig{{Name: "m"}}); err == nil {
		t.Errorf("a mirror without output accepted")
	}
}

func TestMirrorAllocs(t *testing.T) {
	_, x := mirrorBridge(t, true, MirrorConfig{Name: "m", SelectAll: true, VLANs: []uint16{10}, OutputPort: "p4"})
	out := Out{Actions: make([]byte, 0, 1024)}
	k := pkt(13)
	n := testing.AllocsPerRun(1000, func() {
		k.TpSrc++
		x.Translate(&k, t0, false, &out)
	})
	if n != 0 {
		t.Errorf("mirrored translation allocates %v per packet", n)
	}
	if got := datapath.FormatActions(out.Actions); got == "" {
		t.Fatal("no actions")
	}
}

// TestMirrorStats: a translation that mirrors notes the mirror's
// counter among its rules, so the credits of upcalled packets and of the
// datapath flow reach Mirror statistics, as OVS's mirror_update_stats; a
// translation that does not mirror leaves it alone. The counts outlive a
// change of the mirror's settings, a mirror made afresh starts at zero,
// and a mirror without its output port has no statistics.
func TestMirrorStats(t *testing.T) {
	b, x := mirrorBridge(t, false,
		MirrorConfig{Name: "m", SrcPorts: []string{"p1"}, OutputPort: "p4"},
		MirrorConfig{Name: "gone", SrcPorts: []string{"p1"}, OutputPort: "nonesuch"})
	if got := b.MirrorStats(); len(got) != 1 || got["m"] != (MirrorStats{}) {
		t.Fatalf("before traffic: %+v, want m at zero only", got)
	}
	credit := func(k flow.Key, packets, bytes uint64) {
		var out Out
		x.Translate(&k, t0, true, &out)
		for i := 0; i < out.NRules; i++ {
			out.Rules[i].Value.Credit(packets, bytes, t0)
		}
	}
	k := pkt(11)
	k.EthDst = ones6
	credit(k, 1, 60)        // the upcalled packet
	credit(k, 9, 900)       // its datapath flow, later
	credit(pkt(12), 5, 500) // from p2: not mirrored
	if got := b.MirrorStats()["m"]; got != (MirrorStats{Packets: 10, Bytes: 960}) {
		t.Errorf("after traffic: %+v, want 10 packets, 960 bytes", got)
	}
	if err := b.SetMirrors([]MirrorConfig{{Name: "m", SelectAll: true, OutputPort: "p4"}, {Name: "n", SelectAll: true, OutputPort: "p3"}}); err != nil {
		t.Fatal(err)
	}
	got := b.MirrorStats()
	if got["m"] != (MirrorStats{Packets: 10, Bytes: 960}) || got["n"] != (MirrorStats{}) {
		t.Errorf("after a change of settings: %+v, want m kept and n at zero", got)
	}
	if err := b.SetMirrors(nil); err != nil {
		t.Fatal(err)
	}
	if err := b.SetMirrors([]MirrorConfig{{Name: "m", SelectAll: true, OutputPort: "p4"}}); err != nil {
		t.Fatal(err)
	}
	if got := b.MirrorStats()["m"]; got != (MirrorStats{}) {
		t.Errorf("a mirror removed and made again: %+v, want zero", got)
	}
}
