package ofproto

import (
	"testing"
	"time"

	"github.com/govswitch/govswitch/datapath"
	"github.com/govswitch/govswitch/flow"
	"github.com/govswitch/govswitch/ofproto/maclearn"
	"github.com/govswitch/govswitch/ofproto/openflow"
)

func mustTunnel(t testing.TB, tag int, qinq string, cvlans ...int) PortVLAN {
	t.Helper()
	v := mustVLAN(t, "dot1q-tunnel", tag)
	if err := v.SetTunnel(cvlans, qinq); err != nil {
		t.Fatal(err)
	}
	return v
}

// qinqBridge has dot1q-tunnel ports of S-VLAN 4094 beside a trunk and an
// access port of VLAN 4094, behind NORMAL:
//
//	p1 dp11 dot1q-tunnel 4094 cvlans=100,200   p3 dp13 trunk (all VLANs)
//	p2 dp12 dot1q-tunnel 4094 (all cvlans)     p4 dp14 access 4094
//	p5 dp15 dot1q-tunnel 4094 cvlans=100, qinq-ethtype=802.1q
//	LOCAL dp0 trunk
func qinqBridge(t testing.TB) *Xlator {
	t.Helper()
	ports := NewPorts()
	for _, p := range []Port{
		{OFPort: openflow.PortLocal, DPPort: 0, Name: "br0", Type: "internal"},
		{OFPort: 1, DPPort: 11, Name: "p1", VLAN: mustTunnel(t, 4094, "", 100, 200)},
		{OFPort: 2, DPPort: 12, Name: "p2", VLAN: mustTunnel(t, 4094, "")},
		{OFPort: 3, DPPort: 13, Name: "p3", VLAN: mustVLAN(t, "", -1)},
		{OFPort: 4, DPPort: 14, Name: "p4", VLAN: mustVLAN(t, "", 4094)},
		{OFPort: 5, DPPort: 15, Name: "p5", VLAN: mustTunnel(t, 4094, "802.1q", 100)},
	} {
		if err := ports.Add(p); err != nil {
			t.Fatal(err)
		}
	}
	x := &Xlator{Tables: NewTables(), Ports: ports, MAC: maclearn.New(0, 0)}
	mustAdd(t, x, 0, func(*flow.Key, *flow.Mask) {}, 0, apply(openflow.Output(openflow.PortNormal, 0)))
	return x
}

// qinq returns a broadcast frame on datapath port dp with an outer tag of
// TPID tpid and VID outer (none when outer is 0) over an 802.1Q tag of VID
// inner (none when 0).
func qinq(dp uint32, tpid, outer, inner uint16) flow.Key {
	k := pkt(dp)
	k.EthDst = ones6
	i := 0
	if outer != 0 {
		k.VLANs[0] = flow.VLAN{TPID: tpid, TCI: outer | flow.VLANPresent}
		i++
	}
	if inner != 0 {
		k.VLANs[i] = flow.VLAN{TPID: flow.EthTypeVLAN, TCI: inner | flow.VLANPresent}
	}
	return k
}

func TestNormalDot1qTunnel(t *testing.T) {
	tests := []struct {
		name string
		key  flow.Key
		want string
		// The megaflow's VLAN TCI masks, outer and inner (before the
		// datapath's fitting).
		wantMask [2]uint16
	}{
		// C-VLAN 100 into the tunnel: out of the other tunnel ports as
		// it came, then with the S-tag pushed to the trunks; the access
		// port of VLAN 4094 carries no frame with an inner tag.
		{"customer VLAN in", qinq(11, 0, 0, 100),
			"12,15,push_vlan(tpid=0x88a8,vid=4094,pcp=0),0,13", [2]uint16{0x1fff, 0xffff}},
		{"customer VLAN not admitted", qinq(11, 0, 0, 300), "drop", [2]uint16{0x1fff, 0}},
		{"untagged not admitted by a cvlans list", qinq(11, 0, 0, 0), "drop", [2]uint16{0x1fff, 0}},
		// Untagged into a tunnel port of all C-VLANs: customer VLAN 0,
		// which the access port of the S-VLAN carries, untagged.
		{"untagged in, all cvlans", qinq(12, 0, 0, 0),
			"14,push_vlan(tpid=0x88a8,vid=4094,pcp=0),0,13", [2]uint16{0x1fff, 0x1fff}},
		// S-VLAN 4094 over C-VLAN 100 from the trunk: the tunnel ports
		// that admit C-VLAN 100 get it with the S-tag popped.
		// Out of a tunnel port with cvlans the whole inner TCI is in
		// the megaflow, as OVS's check_and_set_cvlan_mask has it.
		{"double-tagged from the trunk", qinq(13, flow.EthTypeQinQ, 4094, 100),
			"0,pop_vlan,11,12,15", [2]uint16{0xffff, 0xffff}},
		{"double-tagged, C-VLAN not admitted by p1 and p5", qinq(13, flow.EthTypeQinQ, 4094, 300),
			"0,pop_vlan,12", [2]uint16{0xffff, 0x1fff}},
		// An S-VLAN-only frame from the trunk is customer VLAN 0: the
		// access port and the tunnel port of all cvlans, untagged.
		{"S-tagged only from the trunk", qinq(13, flow.EthTypeQinQ, 4094, 0),
			"0,pop_vlan,12,14", [2]uint16{0xffff, 0x1fff}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			x := qinqBridge(t)
			var out Out
			x.Translate(&tt.key, t0, true, &out)
			if got := datapath.FormatActions(out.Actions); got != tt.want {
				t.Errorf("actions %s, want %s", got, tt.want)
			}
			if got := [2]uint16{out.WC.VLANs[0].TCI, out.WC.VLANs[1].TCI}; got != tt.wantMask {
				t.Errorf("VLAN TCI masks %#04x, want %#04x", got, tt.wantMask)
			}
		})
	}
}

// The 802.1q qinq-ethtype pushes an 802.1Q S-tag.
func TestNormalDot1qTunnelEthtype(t *testing.T) {
	x := qinqBridge(t)
	var out Out
	k := qinq(15, 0, 0, 100)
	x.Translate(&k, t0, true, &out)
	if got, want := datapath.FormatActions(out.Actions), "11,12,push_vlan(vid=4094,pcp=0),0,13"; got != want {
		t.Errorf("actions %s, want %s", got, want)
	}
}

// Addresses behind a tunnel port are learned in its S-VLAN, whatever
// customer VLAN they speak in.
func TestNormalDot1qTunnelLearning(t *testing.T) {
	x := qinqBridge(t)
	var out Out
	k := qinq(11, 0, 0, 200)
	x.Translate(&k, t0, true, &out)
	if p, ok := x.MAC.Lookup(4094, macA, t0); !ok || p != 1 {
		t.Fatalf("macA in VLAN 4094: port %d %v, want port 1", p, ok)
	}
	if _, ok := x.MAC.Lookup(200, macA, t0); ok {
		t.Fatalf("macA learned in its customer VLAN 200")
	}
	// Back from the trunk, S-VLAN 4094 over C-VLAN 200: unicast to p1
	// with the S-tag popped.
	r := qinq(13, flow.EthTypeQinQ, 4094, 200)
	r.EthSrc, r.EthDst = macB, macA
	x.Translate(&r, t0, true, &out)
	if got := datapath.FormatActions(out.Actions); got != "pop_vlan,11" {
		t.Errorf("to macA: %s, want pop_vlan,11", got)
	}
	// ... but not in a customer VLAN p1 does not admit.
	r = qinq(13, flow.EthTypeQinQ, 4094, 300)
	r.EthSrc, r.EthDst = macB, macA
	x.Translate(&r, t0, true, &out)
	if got := datapath.FormatActions(out.Actions); got != "drop" {
		t.Errorf("to macA in C-VLAN 300: %s, want drop", got)
	}
}

// A frame of two tags on an access port of the outer VLAN was forwarded
// with its inner tag; as in OVS, an access port only takes frames of its
// VLAN with no inner tag.
func TestNormalAccessRefusesInnerTag(t *testing.T) {
	x := vlanBridge(t)
	var out Out
	k := qinq(14, flow.EthTypeVLAN, 10, 20) // trunk p4, 10 over 20
	x.Translate(&k, t0, true, &out)
	if got, want := datapath.FormatActions(out.Actions), "0,15,16"; got != want {
		t.Errorf("actions %s, want %s (no access port)", got, want)
	}
}

func TestVLANLimit(t *testing.T) {
	t.Cleanup(func() { SetVLANLimit(0) })
	ports := NewPorts()
	for _, p := range []Port{{OFPort: 1, DPPort: 11, Name: "p1"}, {OFPort: 2, DPPort: 12, Name: "p2"}} {
		if err := ports.Add(p); err != nil {
			t.Fatal(err)
		}
	}
	x := &Xlator{Tables: NewTables(), Ports: ports, MAC: maclearn.New(0, 0)}
	mustAdd(t, x, 0, func(*flow.Key, *flow.Mask) {}, 1, apply(openflow.Output(openflow.PortNormal, 0)))
	// Test 153 of OVS's kernel suite: dl_type=0x8100 drops the C-VLAN
	// frames once vlan-limit is 1.
	mustAdd(t, x, 0, func(k *flow.Key, m *flow.Mask) { k.EthType, m.EthType = flow.EthTypeVLAN, 0xffff }, 100,
		openflow.Instructions{})
	double := qinq(11, flow.EthTypeQinQ, 4094, 100)
	single := qinq(11, flow.EthTypeQinQ, 4094, 0)

	tests := []struct {
		limit       int
		key         flow.Key
		want        string
		wantVLANs1  flow.VLAN // the megaflow's inner tag mask, fitted
		wantEthType uint16
	}{
		{0, double, "12", flow.VLAN{TPID: 0xffff, TCI: 0x1000}, 0xffff},
		{2, double, "12", flow.VLAN{TPID: 0xffff, TCI: 0x1000}, 0xffff},
		{1, double, "drop", flow.VLAN{TPID: 0xffff, TCI: 0x1000}, 0xffff},
		{1, single, "12", flow.VLAN{TCI: 0xffff}, 0xffff},
	}
	for _, tt := range tests {
		SetVLANLimit(tt.limit)
		var out Out
		k := tt.key
		x.Translate(&k, t0, true, &out)
		if k != tt.key {
			t.Errorf("limit %d: Translate changed its key", tt.limit)
		}
		got := datapath.FormatActions(out.Actions)
		datapath.FitMask(&k, &out.WC)
		if got != tt.want || out.WC.VLANs[1] != tt.wantVLANs1 || out.WC.EthType != tt.wantEthType {
			t.Errorf("limit %d, %d tags: %s inner mask %+v eth_type %#x, want %s %+v %#x", tt.limit, vlanCount(&k),
				got, out.WC.VLANs[1], out.WC.EthType, tt.want, tt.wantVLANs1, tt.wantEthType)
		}
		// The datapath takes the megaflow, and the masked key, as the
		// revalidator translates it again, gives the same actions.
		var back flow.Mask
		if err := datapath.DecodeMask(datapath.AppendMask(nil, &k, &out.WC), &k, &back); err != nil || back != out.WC {
			t.Errorf("limit %d: the mask does not round-trip: %v", tt.limit, err)
		}
		masked := k
		mw, kw := out.WC.Words(), masked.Words()
		for i := range kw {
			kw[i] &= mw[i]
		}
		var again Out
		x.Translate(&masked, t0, false, &again)
		if a := datapath.FormatActions(again.Actions); a != got {
			t.Errorf("limit %d: the masked key translates to %s, the key to %s", tt.limit, a, got)
		}
	}
}

// The limited translation allocates nothing per packet.
func TestVLANLimitAllocs(t *testing.T) {
	t.Cleanup(func() { SetVLANLimit(0) })
	SetVLANLimit(1)
	x := qinqBridge(t)
	out := Out{Actions: make([]byte, 0, 1024)}
	k := qinq(13, flow.EthTypeQinQ, 4094, 100)
	now := t0
	n := testing.AllocsPerRun(1000, func() {
		now = now.Add(time.Millisecond)
		k.EthSrc[5]++
		x.Translate(&k, now, true, &out)
	})
	if n != 0 {
		t.Errorf("Translate under vlan-limit allocates %v per run", n)
	}
}

func TestRateLimit(t *testing.T) {
	r := rateLimit{rate: 1, burst: 5, tokens: 5}
	n := 0
	for i := 0; i < 20; i++ {
		if r.allow(t0) {
			n++
		}
	}
	if n != 5 {
		t.Errorf("burst: %d allowed, want 5", n)
	}
	if !r.allow(t0.Add(1100*time.Millisecond)) || r.allow(t0.Add(1200*time.Millisecond)) {
		t.Errorf("after a second: want one more")
	}
}
