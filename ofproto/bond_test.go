package ofproto

import (
	"strings"
	"testing"

	"github.com/govswitch/govswitch/datapath"
	"github.com/govswitch/govswitch/flow"
	"github.com/govswitch/govswitch/ofproto/maclearn"
	"github.com/govswitch/govswitch/ofproto/openflow"
)

// bondBridge is a NORMAL bridge with bond0 = {b1 dp11, b2 dp12}, and p3
// dp13, p4 dp14 and LOCAL dp0 on their own.
func bondBridge(t testing.TB, mode BondMode) (*Bridge, *Xlator) {
	t.Helper()
	return bondBridgeDP(t, mode, nil)
}

// bondBridgeDP is bondBridge over datapath dp (nil: none).
func bondBridgeDP(t testing.TB, mode BondMode, dp datapath.Datapath) (*Bridge, *Xlator) {
	t.Helper()
	ports := NewPorts()
	for _, p := range []Port{
		{OFPort: openflow.PortLocal, DPPort: 0, Name: "br0", Type: "internal"},
		{OFPort: 1, DPPort: 11, Name: "b1", HWAddr: [6]byte{2, 0, 0, 0, 0, 1}},
		{OFPort: 2, DPPort: 12, Name: "b2", HWAddr: [6]byte{2, 0, 0, 0, 0, 2}},
		{OFPort: 3, DPPort: 13, Name: "p3"},
		{OFPort: 4, DPPort: 14, Name: "p4"},
	} {
		if err := ports.Add(p); err != nil {
			t.Fatal(err)
		}
	}
	x := &Xlator{Tables: NewTables(), Ports: ports, MAC: maclearn.New(0, 0)}
	mustAdd(t, x, 0, func(*flow.Key, *flow.Mask) {}, 0, apply(openflow.Output(openflow.PortNormal, 0)))
	b := &Bridge{Name: "br0", Ports: ports, MAC: x.MAC, Tables: x.Tables, X: x, DP: dp}
	if errs := b.SetBonds([]BondConfig{{Name: "bond0", Mode: mode, Members: []string{"b2", "b1"}}}); errs != nil {
		t.Fatal(errs)
	}
	t.Cleanup(b.stopBondRunners)
	return b, x
}

func xlate(x *Xlator, k flow.Key) string {
	var out Out
	x.Translate(&k, t0, true, &out)
	return datapath.FormatActions(out.Actions)
}

func setLink(t *testing.T, b *Bridge, name string, down bool) {
	t.Helper()
	p := b.Ports.byName(name)
	np := *p
	np.LinkDown = down
	if err := b.Ports.Add(np); err != nil {
		t.Fatal(err)
	}
}

func TestBondActiveBackup(t *testing.T) {
	b, x := bondBridge(t, BondActiveBackup)
	st := b.Bonds()
	if len(st) != 1 || st[0].Active != "b1" || !st[0].Members[0].Enabled || !st[0].Members[1].Enabled {
		t.Fatalf("bonds %+v, want bond0 with b1 active, both enabled", st)
	}
	// Flooded from p3: one copy to the bond, on its active member.
	k := tagged(13, 0, 0)
	if got := xlate(x, k); got != "0,11,14" {
		t.Errorf("flood from p3: %s, want 0,11,14", got)
	}
	// Arriving on the backup member: dropped, and not learned.
	k = tagged(12, 0, 0)
	k.EthSrc = macB
	if got := xlate(x, k); got != "drop" {
		t.Errorf("broadcast on the backup member: %s, want drop", got)
	}
	k = pkt(12)
	if got := xlate(x, k); got != "drop" {
		t.Errorf("unicast on the backup member: %s, want drop", got)
	}
	// On the active member: flooded, not back into the bond; learned
	// on the bond (its lowest port, 1).
	k = tagged(11, 0, 0)
	if got := xlate(x, k); got != "0,13,14" {
		t.Errorf("broadcast on the active member: %s, want 0,13,14", got)
	}
	if p, ok := x.MAC.Lookup(0, macA, t0); !ok || p != 1 {
		t.Fatalf("macA learned on %d %v, want 1", p, ok)
	}
	r := pkt(13)
	r.EthSrc, r.EthDst = macB, macA
	if got := xlate(x, r); got != "11" {
		t.Errorf("p3 to macA: %s, want 11", got)
	}
	// b1 loses carrier: b2 becomes active and carries the flow.
	setLink(t, b, "b1", true)
	if st := b.Bonds(); st[0].Active != "b2" || st[0].Members[0].Enabled {
		t.Fatalf("after b1 down: %+v", st)
	}
	if got := xlate(x, r); got != "12" {
		t.Errorf("p3 to macA after failover: %s, want 12", got)
	}
	// b1 back: b2 stays active, as OVS keeps its last active member.
	setLink(t, b, "b1", false)
	if st := b.Bonds(); st[0].Active != "b2" {
		t.Fatalf("after b1 up: active %s, want b2", st[0].Active)
	}
	if ch, err := b.SetActiveMember("bond0", "b1"); err != nil || !ch {
		t.Fatalf("set-active-member b1: %v %v", ch, err)
	}
	if got := xlate(x, r); got != "11" {
		t.Errorf("p3 to macA after set-active-member: %s, want 11", got)
	}
	if ch, err := b.SetActiveMember("bond0", "b1"); err != nil || ch {
		t.Errorf("set-active-member again: %v %v, want no change", ch, err)
	}
	setLink(t, b, "b2", true)
	if _, err := b.SetActiveMember("bond0", "b2"); err == nil || err.Error() != "cannot make disabled member active" {
		t.Errorf("set-active-member to a disabled member: %v", err)
	}
	if _, err := b.SetActiveMember("bond9", "b2"); err == nil || err.Error() != "no such bond" {
		t.Errorf("no such bond: %v", err)
	}
	// Both down: nothing leaves by the bond.
	setLink(t, b, "b1", true)
	if got := xlate(x, r); got != "drop" {
		t.Errorf("all members down: %s, want drop", got)
	}
	if got := xlate(x, tagged(13, 0, 0)); got != "0,14" {
		t.Errorf("flood with the bond down: %s, want 0,14", got)
	}
}

func TestBondSLB(t *testing.T) {
	b, x := bondBridge(t, BondBalanceSLB)
	// Source MACs spread over both members, each flow to one.
	seen := map[string]int{}
	for i := 0; i < 64; i++ {
		k := pkt(13)
		k.EthSrc = [6]byte{2, 0, 0, 1, 0, byte(i)}
		k.EthDst = ones6
		got := xlate(x, k)
		if got != "0,11,14" && got != "0,12,14" {
			t.Fatalf("flood from p3: %s", got)
		}
		seen[got]++
	}
	if len(seen) != 2 {
		t.Errorf("64 source MACs used %v: want both members", seen)
	}
	// Broadcast on the non-active member: dropped. Unicast there:
	// accepted and learned on the bond.
	k := tagged(12, 0, 0)
	if got := xlate(x, k); got != "drop" {
		t.Errorf("broadcast on b2: %s, want drop", got)
	}
	k = pkt(12)
	if got := xlate(x, k); got != "0,13,14" {
		t.Errorf("unicast on b2 (unknown dst): %s, want 0,13,14", got)
	}
	// macC learned on p3; the same source arriving on the bond is our
	// flood coming back: dropped, unless a gratuitous ARP.
	macC := [6]byte{2, 0, 0, 0, 0, 0xc}
	k = pkt(13)
	k.EthSrc = macC
	xlate(x, k)
	k = pkt(11)
	k.EthSrc = macC
	if got := xlate(x, k); got != "drop" {
		t.Errorf("source learned on p3 arriving on b1: %s, want drop", got)
	}
	g := tagged(11, 0, 0)
	g.EthSrc, g.EthType, g.NwProto = macC, flow.EthTypeARP, 2
	if got := xlate(x, g); got != "0,13,14" {
		t.Errorf("gratuitous ARP from a moved host: %s, want 0,13,14", got)
	}
	// A member down: every source goes to the other.
	setLink(t, b, "b1", true)
	for i := 0; i < 16; i++ {
		k := pkt(13)
		k.EthSrc = [6]byte{2, 0, 0, 1, 0, byte(i)}
		k.EthDst = ones6
		if got := xlate(x, k); got != "0,12,14" {
			t.Fatalf("flood with b1 down: %s, want 0,12,14", got)
		}
	}
}

func TestBondSetBondsErrors(t *testing.T) {
	b, x := bondBridge(t, BondActiveBackup)
	errs := b.SetBonds([]BondConfig{{Name: "bond0", Members: []string{"b1", "nope"}}})
	if err := errs["bond0"]; err == nil || !strings.Contains(err.Error(), "nope") {
		t.Fatalf("missing member: %v", errs)
	}
	// The bond is gone: b1 and b2 are ports of their own again.
	if len(b.Bonds()) != 0 {
		t.Fatalf("bonds %+v after a bad config", b.Bonds())
	}
	if got := xlate(x, tagged(13, 0, 0)); got != "0,11,12,14" {
		t.Errorf("flood without the bond: %s", got)
	}
}

func TestBondAllocs(t *testing.T) {
	_, x := bondBridge(t, BondBalanceSLB)
	out := Out{Actions: make([]byte, 0, 1024)}
	k := pkt(13)
	r := pkt(11)
	r.EthSrc, r.EthDst = macB, macA
	x.Translate(&k, t0, true, &out) // learn macA on p3
	n := testing.AllocsPerRun(1000, func() {
		k.EthSrc[5]++
		k.EthDst = ones6
		x.Translate(&k, t0, false, &out)
		x.Translate(&r, t0, false, &out)
	})
	if n != 0 {
		t.Errorf("bond translation allocates %v per packet", n)
	}
	_, x = bondBridge(t, BondBalanceSLB)
	st := x.Ports.Snapshot().bondNamed("bond0")
	var src [6]byte
	n = testing.AllocsPerRun(1000, func() {
		src[5]++
		if st.outputMember(src, 10) == nil {
			t.Fatal("no member")
		}
	})
	if n != 0 {
		t.Errorf("member choice allocates %v", n)
	}
}

func BenchmarkXlateNormalBond(b *testing.B) {
	_, x := bondBridge(b, BondBalanceSLB)
	out := Out{Actions: make([]byte, 0, 1024)}
	k := pkt(13)
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		k.TpSrc = uint16(i)
		x.Translate(&k, t0, true, &out)
	}
}

func TestBondSLBAllMembersActive(t *testing.T) {
	b, x := bondBridge(t, BondBalanceSLB)
	if errs := b.SetBonds([]BondConfig{{Name: "bond0", Mode: BondBalanceSLB, Members: []string{"b1", "b2"}, AllMembersActive: true}}); errs != nil {
		t.Fatal(errs)
	}
	if got := xlate(x, tagged(12, 0, 0)); got != "0,13,14" {
		t.Errorf("broadcast on the non-active member with all-members-active: %s, want 0,13,14", got)
	}
}

// TestBondHash holds bond/hash to what ovs-vswitchd 3.1 answered in the
// UML bed (TestIntegrationBondSLB compares the two live).
func TestBondHash(t *testing.T) {
	for _, tt := range []struct {
		mac   [6]byte
		vlan  uint16
		basis uint32
		want  uint8
	}{
		{[6]byte{0, 0, 0, 0, 0, 1}, 0, 0, 68},
		{[6]byte{0x02, 0x42, 0xac, 0x11, 0, 0x02}, 10, 0, 25},
		{[6]byte{0xfe, 0xdc, 0xba, 0x98, 0x76, 0x54}, 4095, 12345, 36},
	} {
		if got := BondHash(tt.mac, tt.vlan, tt.basis); got != tt.want {
			t.Errorf("BondHash(%x, %d, %d) = %d, want %d", tt.mac, tt.vlan, tt.basis, got, tt.want)
		}
	}
}

// A bond whose Port is an access port of VLAN 10 (both members carry it,
// as the Port's columns configure every Interface): frames from a trunk
// leave by the active member untagged; the bond takes one copy.
func TestBondVLAN(t *testing.T) {
	b, x := bondBridge(t, BondActiveBackup)
	for _, n := range []string{"b1", "b2"} {
		if err := b.SetPortVLAN(n, mustVLAN(t, "access", 10)); err != nil {
			t.Fatal(err)
		}
	}
	if got := xlate(x, tagged(13, 10, 0)); got != "0,14,pop_vlan,11" {
		t.Errorf("VLAN 10 from trunk p3: %s, want 0,14,pop_vlan,11", got)
	}
	if got := xlate(x, tagged(13, 20, 0)); got != "0,14" {
		t.Errorf("VLAN 20 from trunk p3: %s, want 0,14", got)
	}
	if got := xlate(x, tagged(11, 0, 0)); got != "push_vlan(vid=10,pcp=0),0,13,14" {
		t.Errorf("untagged on the active member: %s", got)
	}
}
