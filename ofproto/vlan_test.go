package ofproto

import (
	"testing"
	"time"

	"github.com/govswitch/govswitch/datapath"
	"github.com/govswitch/govswitch/flow"
	"github.com/govswitch/govswitch/ofproto/maclearn"
	"github.com/govswitch/govswitch/ofproto/openflow"
)

func mustVLAN(t testing.TB, mode string, tag int, trunks ...int) PortVLAN {
	t.Helper()
	v, err := NewPortVLAN(mode, tag, trunks)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// vlanBridge has a port of each VLAN mode, behind NORMAL:
//
//	p1 dp11 access 10       p4 dp14 trunk (all VLANs)
//	p2 dp12 access 10       p5 dp15 native-untagged 20, trunks 10,20
//	p3 dp13 access 20       p6 dp16 native-tagged 10
//	LOCAL dp0 trunk
func vlanBridge(t testing.TB) *Xlator {
	t.Helper()
	ports := NewPorts()
	for _, p := range []Port{
		{OFPort: openflow.PortLocal, DPPort: 0, Name: "br0", Type: "internal"},
		{OFPort: 1, DPPort: 11, Name: "p1", VLAN: mustVLAN(t, "", 10)},
		{OFPort: 2, DPPort: 12, Name: "p2", VLAN: mustVLAN(t, "access", 10)},
		{OFPort: 3, DPPort: 13, Name: "p3", VLAN: mustVLAN(t, "", 20)},
		{OFPort: 4, DPPort: 14, Name: "p4", VLAN: mustVLAN(t, "", -1)},
		{OFPort: 5, DPPort: 15, Name: "p5", VLAN: mustVLAN(t, "native-untagged", 20, 10, 20)},
		{OFPort: 6, DPPort: 16, Name: "p6", VLAN: mustVLAN(t, "native-tagged", 10)},
	} {
		if err := ports.Add(p); err != nil {
			t.Fatal(err)
		}
	}
	x := &Xlator{Tables: NewTables(), Ports: ports, MAC: maclearn.New(0, 0)}
	mustAdd(t, x, 0, func(*flow.Key, *flow.Mask) {}, 0, apply(openflow.Output(openflow.PortNormal, 0)))
	return x
}

// tagged returns a broadcast frame on datapath port dp with an 802.1Q tag
// of vid and pcp, or untagged when vid and pcp are 0.
func tagged(dp uint32, vid, pcp uint16) flow.Key {
	k := pkt(dp)
	k.EthDst = ones6
	if vid != 0 || pcp != 0 {
		k.VLANs[0] = flow.VLAN{TPID: flow.EthTypeVLAN, TCI: vid | pcp<<13 | flow.VLANPresent}
	}
	return k
}

func TestNormalVLANFlood(t *testing.T) {
	tests := []struct {
		name     string
		key      flow.Key
		want     string
		wantMask uint16 // the megaflow's VLAN TCI mask
	}{
		// Untagged on an access port: VLAN 10. Access ports get it
		// untagged first, then one push serves every trunk.
		{"access in", tagged(11, 0, 0), "12,push_vlan(vid=10,pcp=0),0,14,15,16", 0x1fff},
		{"access port drops tagged", tagged(11, 10, 0), "drop", 0x1fff},
		{"access port takes priority-tagged", tagged(11, 0, 3),
			"pop_vlan,push_vlan(vid=10,pcp=3),0,14,15,16,pop_vlan,12", 0xffff},
		{"trunk in, VLAN 10", tagged(14, 10, 0), "0,15,16,pop_vlan,11,12", 0xffff},
		{"trunk in keeps the priority", tagged(14, 10, 5), "0,15,16,pop_vlan,11,12", 0xffff},
		// Untagged on a trunk is VLAN 0: only trunks of all VLANs carry it,
		// not the native ports (never VLAN 0) nor access ports of VLAN 10.
		{"trunk in, untagged", tagged(14, 0, 0), "0", 0x1fff},
		{"native-untagged in, untagged is its VLAN", tagged(15, 0, 0), "13,push_vlan(vid=20,pcp=0),0,14,16", 0x1fff},
		{"native-untagged in, VLAN 10", tagged(15, 10, 0), "0,14,16,pop_vlan,11,12", 0xffff},
		{"native-untagged drops VLANs not trunked", tagged(15, 30, 0), "drop", 0x1fff},
		{"native-tagged in, untagged", tagged(16, 0, 0), "11,12,push_vlan(vid=10,pcp=0),0,14,15", 0x1fff},
		// To p5 VLAN 20 is native and so goes untagged.
		{"trunk in, VLAN 20", tagged(14, 20, 0), "0,16,pop_vlan,13,15", 0xffff},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			x := vlanBridge(t)
			var out Out
			x.Translate(&tt.key, t0, true, &out)
			if got := datapath.FormatActions(out.Actions); got != tt.want {
				t.Errorf("actions %s, want %s", got, tt.want)
			}
			if got := out.WC.VLANs[0].TCI; got != tt.wantMask {
				t.Errorf("VLAN TCI mask %#04x, want %#04x", got, tt.wantMask)
			}
		})
	}
}

func TestNormalVLANLearning(t *testing.T) {
	x := vlanBridge(t)
	var out Out
	// macA speaks on p1 (access 10): learned in VLAN 10.
	k := tagged(11, 0, 0)
	x.Translate(&k, t0, true, &out)
	if _, ok := x.MAC.Lookup(10, macA, t0); !ok {
		t.Fatalf("macA not learned in VLAN 10")
	}
	if _, ok := x.MAC.Lookup(0, macA, t0); ok {
		t.Fatalf("macA learned in VLAN 0")
	}
	// To macA in VLAN 10 from the trunk: unicast, untagged, to p1.
	r := tagged(14, 10, 0)
	r.EthSrc, r.EthDst = macB, macA
	x.Translate(&r, t0, true, &out)
	if got := datapath.FormatActions(out.Actions); got != "pop_vlan,11" {
		t.Errorf("VLAN 10 to macA: %s, want pop_vlan,11", got)
	}
	// To macA in VLAN 20: macA is unknown there, so flood VLAN 20.
	r = tagged(14, 20, 0)
	r.EthSrc, r.EthDst = macB, macA
	x.Translate(&r, t0, true, &out)
	if got := datapath.FormatActions(out.Actions); got != "0,16,pop_vlan,13,15" {
		t.Errorf("VLAN 20 to macA: %s, want the VLAN 20 flood", got)
	}
	// Access to access in one VLAN: no tag change, VID and presence in the
	// megaflow as in OVS.
	r = tagged(12, 0, 0)
	r.EthSrc, r.EthDst = macB, macA
	x.Translate(&r, t0, true, &out)
	if got := datapath.FormatActions(out.Actions); got != "11" || out.WC.VLANs[0].TCI != 0x1fff {
		t.Errorf("p2 to macA: %s mask %#04x, want 11 mask 0x1fff", got, out.WC.VLANs[0].TCI)
	}
}

func TestNewPortVLAN(t *testing.T) {
	tests := []struct {
		name   string
		mode   string
		tag    int
		trunks []int
		want   string
		err    bool
	}{
		{"nothing is a trunk of all", "", -1, nil, "trunk", false},
		{"a tag alone is access", "", 10, nil, "access tag=10", false},
		{"trunk ignores its tag", "trunk", 10, []int{1, 2}, "trunk trunks=1,2", false},
		{"native carries its VLAN, never 0", "native-untagged", 5, []int{0, 7}, "native-untagged tag=5 trunks=5,7", false},
		{"access with trunks", "access", 3, []int{4}, "", true},
		{"dot1q-tunnel: its tag is the S-VLAN, trunks do not apply", "dot1q-tunnel", 4094, []int{1}, "dot1q-tunnel tag=4094", false},
		{"bad mode", "qinq", 3, nil, "", true},
		{"bad tag", "", 4096, nil, "", true},
		{"bad trunk", "trunk", -1, []int{5000}, "", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v, err := NewPortVLAN(tt.mode, tt.tag, tt.trunks)
			if (err != nil) != tt.err {
				t.Fatalf("err %v, want error %v", err, tt.err)
			}
			if err == nil && v.String() != tt.want {
				t.Errorf("%s, want %s", v.String(), tt.want)
			}
		})
	}
}

// NORMAL across VLAN ports (tag changes, grouped flooding, per-VLAN
// learning) allocates nothing per packet.
func TestNormalVLANAllocs(t *testing.T) {
	x := vlanBridge(t)
	out := Out{Actions: make([]byte, 0, 1024)}
	keys := []flow.Key{tagged(14, 10, 5), tagged(11, 0, 0), tagged(15, 0, 0), tagged(11, 0, 3)}
	now := t0
	n := testing.AllocsPerRun(1000, func() {
		now = now.Add(time.Millisecond)
		for i := range keys {
			keys[i].EthSrc[5]++
			x.Translate(&keys[i], now, true, &out)
		}
	})
	if n != 0 {
		t.Errorf("Translate across VLAN ports allocates %v per run", n)
	}
}

// BenchmarkNormalVLAN floods a frame from a trunk into VLAN 10 (two
// access ports untagged, the others tagged), beside BenchmarkXlateNormal's
// bridge without VLANs.
func BenchmarkNormalVLAN(b *testing.B) {
	x := vlanBridge(b)
	out := Out{Actions: make([]byte, 0, 1024)}
	k := tagged(14, 10, 0)
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		k.TpSrc = uint16(i)
		x.Translate(&k, t0, true, &out)
	}
}

// TestNormalPriorityTags: an access port with priority-tags=if-nonzero
// gets a frame of nonzero priority with an 802.1Q header of VLAN 0 that
// carries it, as ovs-vswitchd's output_normal gives it; with priority 0
// it goes untagged, and "always" does not tag it either (an access port's
// output has no TPID to keep, as in OVS's xvlan_put). Ports without the
// setting are unchanged.
func TestNormalPriorityTags(t *testing.T) {
	for _, tt := range []struct {
		name string
		mode PriorityTagsMode
		key  flow.Key
		want string
	}{
		{"if-nonzero, priority 5", PriorityTagsIfNonzero, tagged(14, 10, 5), "0,15,16,pop_vlan,11,push_vlan(vid=0,pcp=5),12"},
		{"if-nonzero, priority 0", PriorityTagsIfNonzero, tagged(14, 10, 0), "0,15,16,pop_vlan,11,12"},
		{"always, priority 0", PriorityTagsAlways, tagged(14, 10, 0), "0,15,16,pop_vlan,11,12"},
		{"never, priority 5", PriorityTagsNever, tagged(14, 10, 5), "0,15,16,pop_vlan,11,12"},
		{"if-nonzero, untagged in on an access port", PriorityTagsIfNonzero, tagged(11, 0, 0), "12,push_vlan(vid=10,pcp=0),0,14,15,16"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			x := vlanBridge(t)
			p2 := *x.Ports.Snapshot().ByOF(2)
			p2.VLAN.PriorityTags = tt.mode
			if err := x.Ports.Add(p2); err != nil {
				t.Fatal(err)
			}
			var out Out
			x.Translate(&tt.key, t0, true, &out)
			if got := datapath.FormatActions(out.Actions); got != tt.want {
				t.Errorf("actions %s, want %s", got, tt.want)
			}
		})
	}
	if ParsePriorityTags("true") != PriorityTagsIfNonzero || ParsePriorityTags("if-nonzero") != PriorityTagsIfNonzero ||
		ParsePriorityTags("always") != PriorityTagsAlways || ParsePriorityTags("false") != PriorityTagsNever || ParsePriorityTags("") != PriorityTagsNever {
		t.Error("priority-tags values read unlike ovs-vswitchd")
	}
}
