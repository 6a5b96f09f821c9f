package ofproto

import (
	"encoding/hex"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/govswitch/govswitch/datapath"
	"github.com/govswitch/govswitch/flow"
	"github.com/govswitch/govswitch/ofproto/maclearn"
	"github.com/govswitch/govswitch/ofproto/openflow"
)

func TestLACPDUEncode(t *testing.T) {
	actor := lacpInfo{SysPriority: 65534, SysID: [6]byte{2, 0, 0, 0, 0xaa, 1}, Key: 7, PortPriority: 65535, PortID: 1,
		State: lacpStateAct | lacpStateTime | lacpStateAgg | lacpStateSync | lacpStateCol | lacpStateDist}
	partner := lacpInfo{SysPriority: 65535, SysID: [6]byte{0x0a, 0x12, 0xfc, 0x22, 0xd2, 0xe6}, Key: 15, PortPriority: 255, PortID: 1,
		State: 0x3f}
	f := appendLACPFrame(nil, [6]byte{2, 0, 0, 0, 0, 1}, &actor, &partner)
	// The bytes one field per row, as lib/lacp.c lays them out.
	rows := []string{
		"0180c2000002", "020000000001", "8809",
		"01", "01",
		"01", "14", "fffe", "02000000aa01", "0007", "ffff", "0001", "3f", "000000",
		"02", "14", "ffff", "0a12fc22d2e6", "000f", "00ff", "0001", "3f", "000000",
		"03", "10", "0000", strings.Repeat("00", 64),
	}
	if got, w := hex.EncodeToString(f), strings.Join(rows, ""); got != w {
		t.Fatalf("frame\n got %s\nwant %s", got, w)
	}
	if len(f) != lacpFrameLen {
		t.Fatalf("frame is %d bytes, want %d", len(f), lacpFrameLen)
	}
	pl, ok := slowPayload(f)
	if !ok {
		t.Fatal("slowPayload refused our frame")
	}
	pdu, kind := parseLACPDU(pl)
	if kind != lacpPDULACP || pdu.Actor != actor || pdu.Partner != partner {
		t.Fatalf("parsed %v %+v, want LACP %+v %+v", kind, pdu, actor, partner)
	}
}

func TestLACPDUParse(t *testing.T) {
	good := appendLACPFrame(nil, [6]byte{2}, &lacpInfo{}, &lacpInfo{})[14:]
	mod := func(f func(b []byte)) []byte {
		b := append([]byte(nil), good...)
		f(b)
		return b
	}
	tests := []struct {
		name string
		b    []byte
		want lacpPDUKind
	}{
		{"LACPDU", good, lacpPDULACP},
		{"short", good[:109], lacpPDUBad},
		{"empty", nil, lacpPDUBad},
		{"marker", mod(func(b []byte) { b[0] = 2 }), lacpPDUMarker},
		{"other subtype", mod(func(b []byte) { b[0] = 10 }), lacpPDUBad},
		{"actor TLV type", mod(func(b []byte) { b[2] = 9 }), lacpPDUBad},
		{"actor TLV length", mod(func(b []byte) { b[3] = 19 }), lacpPDUBad},
		{"partner TLV type", mod(func(b []byte) { b[22] = 1 }), lacpPDUBad},
		{"partner TLV length", mod(func(b []byte) { b[23] = 21 }), lacpPDUBad},
		{"padded", append(append([]byte(nil), good...), 0, 0), lacpPDULACP},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if _, got := parseLACPDU(tc.b); got != tc.want {
				t.Errorf("kind %d, want %d", got, tc.want)
			}
		})
	}
	// A tagged frame's payload follows the tag.
	f := appendLACPFrame(nil, [6]byte{2}, &lacpInfo{}, &lacpInfo{})
	tag := append(append(append([]byte(nil), f[:12]...), 0x81, 0, 0, 10), f[12:]...)
	if pl, ok := slowPayload(tag); !ok || len(pl) != lacpPDULen {
		t.Errorf("tagged frame: payload %d bytes, ok %t", len(pl), ok)
	}
	if _, ok := slowPayload(f[:13]); ok {
		t.Error("slowPayload took a 13-byte frame")
	}
}

// lacpLink joins member a of machine x with member b of machine y: Run's
// PDUs for a reach b, and back, unless cut.
type lacpLink struct {
	x, y *LACP
	a, b string
	cut  bool
}

// lacpExchange runs every machine at now and delivers the PDUs over the
// links, a few rounds so that replies to replies arrive.
func lacpExchange(t *testing.T, links []*lacpLink, now time.Time) {
	t.Helper()
	for round := 0; round < 4; round++ {
		seen := map[*LACP]bool{}
		for _, l := range links {
			for _, m := range []*LACP{l.x, l.y} {
				if seen[m] {
					continue
				}
				seen[m] = true
				tx, _ := m.Run(now, nil)
				for _, p := range tx {
					for _, k := range links {
						var to *LACP
						var name string
						switch {
						case k.x == m && k.a == p.Member:
							to, name = k.y, k.b
						case k.y == m && k.b == p.Member:
							to, name = k.x, k.a
						default:
							continue
						}
						if k.cut {
							continue
						}
						f := appendLACPFrame(nil, [6]byte{2}, &p.Actor, &p.Partn)
						to.ProcessPDU(name, f[14:], now)
					}
				}
			}
		}
	}
}

func newLACPPair(t *testing.T, yActive, fallback bool) (*LACP, *LACP, []*lacpLink) {
	x := NewLACP("bond0", LACPConfig{Active: true, Fast: true, SysID: [6]byte{2, 0, 0, 0, 0, 1}, SysPriority: 65534, FallbackAB: fallback}, nil)
	y := NewLACP("peer", LACPConfig{Active: yActive, Fast: true, SysID: [6]byte{2, 0, 0, 0, 0, 2}, SysPriority: 65535}, nil)
	for i, n := range []string{"a", "b"} {
		x.RegisterMember(n, uint16(i+1), 0xffff, 0)
		y.RegisterMember(n, uint16(i+1), 0xffff, 0)
		x.carrierFirst(n, true)
		y.carrierFirst(n, true)
	}
	return x, y, []*lacpLink{{x: x, y: y, a: "a", b: "a"}, {x: x, y: y, a: "b", b: "b"}}
}

func TestLACPNegotiation(t *testing.T) {
	for _, yActive := range []bool{true, false} {
		x, y, links := newLACPPair(t, yActive, false)
		if x.Status() != LACPConfigured || x.MayEnable("a") {
			t.Fatalf("before any PDU: status %v, may_enable %t", x.Status(), x.MayEnable("a"))
		}
		// RegisterMember times the first expiry from the clock.
		start := time.Now()
		now := start
		lacpExchange(t, links, now)
		for _, m := range []*LACP{x, y} {
			if m.Status() != LACPNegotiated || !m.MayEnable("a") || !m.MayEnable("b") {
				t.Fatalf("partner active %t: %s status %v may_enable %t %t\n%+v", yActive, m.name, m.Status(), m.MayEnable("a"), m.MayEnable("b"), m.Show())
			}
		}
		s := x.Show()
		if s.Members[0].Status != "current" || !s.Members[0].Attached || s.Key != 1 ||
			s.Members[0].Partner.SysID != [6]byte{2, 0, 0, 0, 0, 2} || s.Members[0].Actor.State&lacpStateSync == 0 {
			t.Errorf("lacp/show state %+v", s)
		}

		// Link b stops carrying PDUs: after 3 s (fast) it expires, after 3
		// more it is defaulted; a stays.
		links[1].cut = true
		for i := 1; i <= 8; i++ {
			now = start.Add(time.Duration(i) * time.Second)
			lacpExchange(t, links, now)
		}
		if x.MayEnable("b") || !x.MayEnable("a") || x.Status() != LACPNegotiated {
			t.Errorf("b cut: may_enable a %t b %t, status %v", x.MayEnable("a"), x.MayEnable("b"), x.Status())
		}
		sm := x.Show().Members[1]
		if sm.Status != "defaulted" || sm.LinkExpired != 1 || sm.LinkDefaulted != 1 {
			t.Errorf("b cut: %+v, want defaulted after one expiry", sm)
		}
		// Back: b is current and attached again once a PDU crosses (a
		// defaulted partner asks for none faster than every 30 s).
		links[1].cut = false
		lacpExchange(t, links, now.Add(31*time.Second))
		if !x.MayEnable("b") {
			t.Errorf("b back: may_enable false: %+v", x.Show().Members[1])
		}
	}
}

func TestLACPCarrierAndFallback(t *testing.T) {
	x, _, links := newLACPPair(t, true, true)
	// No partner at all: with lacp-fallback-ab a defaulted member is
	// attached and may be enabled; the bond is negotiated only once a
	// partner speaks.
	for _, l := range links {
		l.cut = true
	}
	now := time.Now()
	for i := 0; i < 8; i++ {
		now = now.Add(time.Second)
		lacpExchange(t, links, now)
	}
	if !x.MayEnable("a") || !x.MayEnable("b") {
		t.Errorf("fallback-ab with no partner: may_enable a %t b %t", x.MayEnable("a"), x.MayEnable("b"))
	}
	// Carrier down: the member expires and stops sending.
	x.CarrierChanged("a", false, now)
	tx, _ := x.Run(now.Add(time.Hour), nil)
	for _, p := range tx {
		if p.Member == "a" {
			t.Error("a PDU went out on a member without carrier")
		}
	}
	if _, changed := x.ProcessPDU("a", appendLACPFrame(nil, [6]byte{2}, &lacpInfo{SysID: [6]byte{9}}, &lacpInfo{})[14:], now); !changed {
		t.Error("a PDU on a member without carrier does not ask for a run")
	}
	if s := x.Show().Members[0]; s.CarrierChanged != 1 || s.RxPDUs != 1 || s.Partner.SysID == [6]byte{9} {
		t.Errorf("after carrier down: %+v", s)
	}
	// Our own PDU coming back (a loop): never attached.
	x.CarrierChanged("a", true, now)
	own := lacpInfo{SysPriority: 65534, SysID: [6]byte{2, 0, 0, 0, 0, 1}, Key: 1, PortID: 2, State: 0x3f}
	x.ProcessPDU("a", appendLACPFrame(nil, [6]byte{2}, &own, &lacpInfo{})[14:], now)
	x.Run(now, nil)
	if s := x.Show().Members[0]; s.Attached {
		t.Errorf("looped member attached: %+v", s)
	}
}

// lacpBridge is bondBridge with bond0 running LACP in mode.
func lacpBridge(t testing.TB, mode BondMode, fallback bool) (*Bridge, *Xlator, *Bond) {
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
	x.ControllerPID.Store(99)
	mustAdd(t, x, 0, func(*flow.Key, *flow.Mask) {}, 0, apply(openflow.Output(openflow.PortNormal, 0)))
	b := &Bridge{Name: "br0", Ports: ports, MAC: x.MAC, Tables: x.Tables, X: x}
	b.SetDatapathID(0x0000020000000099)
	if errs := b.SetBonds([]BondConfig{{Name: "bond0", Mode: mode, Members: []string{"b2", "b1"},
		LACP: &LACPConfig{Active: true, Fast: true, FallbackAB: fallback}}}); errs != nil {
		t.Fatal(errs)
	}
	t.Cleanup(b.stopBondRunners)
	bd := ports.Snapshot().ByOF(1).Bond
	if bd == nil || bd.LACP() == nil {
		t.Fatal("bond0 has no LACP")
	}
	return b, x, bd
}

// partnerPDU is a PDU from a partner in sync on its port id.
func partnerPDU(port uint16) []byte {
	p := lacpInfo{SysPriority: 65535, SysID: [6]byte{0x0a, 0, 0, 0, 0, 9}, Key: 15, PortPriority: 255, PortID: port,
		State: lacpStateAct | lacpStateTime | lacpStateAgg | lacpStateSync | lacpStateCol | lacpStateDist}
	return appendLACPFrame(nil, [6]byte{0x0a, 0, 0, 0, 0, byte(port)}, &p, &lacpInfo{})
}

// negotiate has the partner speak on both members and the bond choose.
func negotiate(t *testing.T, b *Bridge, bd *Bond) {
	t.Helper()
	now := time.Now()
	for i, n := range []string{"b1", "b2"} {
		bd.lacp.carrierFirst(n, true)
		bd.lacp.ProcessPDU(n, partnerPDU(uint16(i + 1))[14:], now)
	}
	bd.lacp.Run(now, nil)
	b.Ports.republish()
	if st := b.Bonds()[0]; st.LACP != LACPNegotiated || !st.Members[0].Enabled || !st.Members[1].Enabled {
		t.Fatalf("after the partner spoke: %+v", st)
	}
}

func TestLACPSlowPathFlow(t *testing.T) {
	_, x, bd := lacpBridge(t, BondBalanceTCP, false)
	k := flow.Key{InPort: 12, EthSrc: [6]byte{0x0a, 0, 0, 0, 0, 2}, EthDst: lacpDst, EthType: EthTypeSlow}
	var out Out
	x.Translate(&k, t0, true, &out)
	if out.lacp != bd || out.lacpPort != "b2" {
		t.Fatalf("LACPDU on b2: lacp %p %q, want bond0's b2", out.lacp, out.lacpPort)
	}
	it := datapath.NewActionIter(out.Actions)
	if !it.Next() || it.Action().Type != datapath.ActionUserspace || it.Next() {
		t.Fatalf("actions %s, want one userspace action", datapath.FormatActions(out.Actions))
	}
	it = datapath.NewActionIter(out.Actions)
	it.Next()
	ud := it.Action().Userspace.Userdata
	if !isLACPSlowPath(ud) || it.Action().Userspace.PID != 99 {
		t.Fatalf("userdata %x (pid %d), want a slow_path(lacp) cookie to 99", ud, it.Action().Userspace.PID)
	}
	// OVS's user_action_cookie: type 2, ofp_in_port 2 (32 bits), reason
	// SLOW_LACP at offset 28.
	if ud[0] != 2 || ud[4] != 2 || ud[28] != 4 {
		t.Errorf("cookie %x", ud)
	}
	want := flow.Mask{InPort: ^uint32(0), RecircID: ^uint32(0), EthType: 0xffff}
	if out.WC != want {
		t.Errorf("megaflow mask %+v, want in_port, recirc_id and eth_type only", out.WC)
	}
	// The same frame on a port of no bond is NORMAL's business.
	k.InPort = 13
	x.Translate(&k, t0, true, &out)
	if out.lacp != nil {
		t.Error("a LACPDU on a port of no bond went to LACP")
	}
}

func TestLACPBalanceTCP(t *testing.T) {
	b, x, bd := lacpBridge(t, BondBalanceTCP, false)
	// Not negotiated: nothing goes to or comes from the bond.
	if got := xlate(x, tagged(13, 0, 0)); got != "0,14" {
		t.Errorf("flood from p3 before negotiation: %s, want 0,14", got)
	}
	if got := xlate(x, tagged(11, 0, 0)); got != "drop" {
		t.Errorf("broadcast on a member before negotiation: %s, want drop", got)
	}
	negotiate(t, b, bd)
	// Negotiated: each member takes its share by the 5-tuple hash, and
	// the megaflow holds the fields hashed.
	seen := map[string]bool{}
	var out Out
	for sport := uint16(1000); sport < 1064; sport++ {
		k := tagged(13, 0, 0)
		k.TpSrc = sport
		x.Translate(&k, t0, true, &out)
		a := datapath.FormatActions(out.Actions)
		seen[a] = true
		if out.WC.TpSrc != 0xffff || out.WC.TpDst != 0xffff || out.WC.IPv4Src != [4]byte{255, 255, 255, 255} || out.WC.NwProto != 0xff {
			t.Fatalf("mask %+v lacks the 5-tuple", out.WC)
		}
	}
	if !seen["0,11,14"] || !seen["0,12,14"] || len(seen) != 2 {
		t.Errorf("64 flows from p3 flooded as %v, want both members used, one each", seen)
	}
	// Broadcasts are accepted on any enabled member of a negotiated bond.
	if got := xlate(x, tagged(12, 0, 0)); got != "0,13,14" {
		t.Errorf("broadcast on b2: %s, want 0,13,14", got)
	}
	k := tagged(13, 0, 0)
	x.Translate(&k, t0, true, &out)
	if n := testing.AllocsPerRun(200, func() { x.Translate(&k, t0, true, &out) }); n != 0 {
		t.Errorf("balance-tcp translation allocates %.1f times", n)
	}
}

func TestLACPFallbackAB(t *testing.T) {
	b, x, bd := lacpBridge(t, BondBalanceTCP, true)
	// No partner ever: defaulted members are attached with
	// lacp-fallback-ab, and the bond runs active-backup.
	now := time.Now()
	for _, n := range []string{"b1", "b2"} {
		bd.lacp.carrierFirst(n, true)
	}
	for i := 0; i < 3; i++ {
		now = now.Add(4 * time.Second)
		bd.lacp.Run(now, nil)
	}
	b.Ports.republish()
	st := b.Bonds()[0]
	if st.LACP != LACPConfigured || st.Active == "" || !st.Members[0].Enabled {
		t.Fatalf("fallback-ab without partner: %+v", st)
	}
	act := "11"
	if st.Active == "b2" {
		act = "12"
	}
	if got := xlate(x, tagged(13, 0, 0)); got != "0,"+act+",14" {
		t.Errorf("flood from p3 in fallback: %s, want 0,%s,14", got, act)
	}
}

func TestBondUpdelay(t *testing.T) {
	b, _ := bondBridge(t, BondActiveBackup)
	bd := b.Ports.Snapshot().ByOF(1).Bond
	bd2 := b.newBond(BondConfig{Name: "bond0", Mode: BondActiveBackup, Members: []string{"b1", "b2"},
		Updelay: time.Hour, Downdelay: time.Hour})
	_ = bd
	for _, n := range []string{"b1", "b2"} {
		p := b.Ports.byName(n)
		np := *p
		np.Bond = bd2
		if err := b.Ports.Add(np); err != nil {
			t.Fatal(err)
		}
	}
	// b1's link goes down: with an hour of downdelay it stays enabled.
	setLink(t, b, "b1", true)
	st := b.Bonds()[0]
	if !st.Members[0].Enabled || st.Members[0].DelayLeft <= 0 {
		t.Fatalf("b1 down with downdelay: %+v", st.Members[0])
	}
	// Back up within the delay: nothing changes, no delay pending.
	setLink(t, b, "b1", false)
	if st = b.Bonds()[0]; !st.Members[0].Enabled || st.Members[0].DelayLeft != 0 {
		t.Fatalf("b1 back within downdelay: %+v", st.Members[0])
	}
	// A delay that has run out takes effect.
	setLink(t, b, "b2", true)
	bd2.mu.Lock()
	bd2.delay["b2"] = time.Now().Add(-time.Millisecond)
	bd2.mu.Unlock()
	b.Ports.republish()
	if st = b.Bonds()[0]; st.Members[1].Enabled {
		t.Fatalf("b2 after its downdelay ran out: %+v", st.Members[1])
	}
	// Both down: an updelay is skipped for the first member to come back,
	// as bond_choose_member does when no member is enabled.
	setLink(t, b, "b1", true)
	bd2.mu.Lock()
	bd2.delay["b1"] = time.Now().Add(-time.Millisecond)
	bd2.mu.Unlock()
	b.Ports.republish()
	if st = b.Bonds()[0]; st.Active != "" {
		t.Fatalf("both down: active %q", st.Active)
	}
	setLink(t, b, "b2", false)
	if st = b.Bonds()[0]; st.Active != "b2" || !st.Members[1].Enabled {
		t.Fatalf("b2 up with updelay and no member enabled: %+v", st)
	}
}

func TestLACPSlowPathText(t *testing.T) {
	_, x, _ := lacpBridge(t, BondActiveBackup, false)
	k := flow.Key{InPort: 11, EthDst: lacpDst, EthType: EthTypeSlow}
	var out Out
	x.Translate(&k, t0, true, &out)
	if got, want := datapath.FormatActions(out.Actions), "userspace(pid=99,slow_path(lacp))"; got != want {
		t.Errorf("actions %s, want %s (as ovs-dpctl prints OVS's)", got, want)
	}
}

func TestBondRebalance(t *testing.T) {
	b, _ := bondBridge(t, BondBalanceSLB)
	bd := b.newBond(BondConfig{Name: "bond0", Mode: BondBalanceSLB, Members: []string{"b1", "b2"}, RebalanceInterval: time.Second})
	t.Cleanup(func() { releaseBondAcct(bd) })
	if bd.acctID == 0 {
		t.Fatal("no accounting slot")
	}
	for _, n := range []string{"b1", "b2"} {
		p := b.Ports.byName(n)
		np := *p
		np.Bond = bd
		if err := b.Ports.Add(np); err != nil {
			t.Fatal(err)
		}
	}
	st := b.Ports.Snapshot().bonds[bd]
	// Four buckets of b1 carry 1 MB each, b2 nothing.
	var onB1 []int
	for h := 0; h < bondBuckets && len(onB1) < 4; h++ {
		if bd.buckets[h] == "b1" {
			onB1 = append(onB1, h)
			creditBond(bd.acctID, uint8(h), 1<<20)
		}
	}
	now := time.Now()
	if bd.rebalanceDue(now) {
		t.Fatal("due before an interval passed")
	}
	if !bd.rebalanceDue(now.Add(2 * time.Second)) {
		t.Fatal("not due after the interval")
	}
	if !bd.rebalance(st, now) {
		t.Fatal("nothing moved with 4 MB on b1 and none on b2")
	}
	moved := 0
	for _, h := range onB1 {
		if bd.buckets[h] == "b2" {
			moved++
		}
		if got := bd.tx[h].Load(); got != 1<<19 {
			t.Errorf("bucket %d load %d after decay, want %d", h, got, 1<<19)
		}
	}
	if moved != 2 {
		t.Errorf("%d of b1's 4 loaded buckets moved to b2, want 2 (an even split)", moved)
	}
	b.Ports.republish()
	bs := b.Bonds()[0]
	if !bs.Balanced || len(bs.Members[0].Hashes) != 2 || len(bs.Members[1].Hashes) != 2 || bs.Members[0].Hashes[0].KB != 512 {
		t.Errorf("bond/show state %+v", bs)
	}
	// Balanced: a second pass moves nothing.
	if bd.rebalance(b.Ports.Snapshot().bonds[bd], now) {
		t.Error("a balanced bond rebalanced again")
	}
}

// TestLACPCurrent: Interface lacp_current is empty for a port of no LACP
// bond; as OVS's lacp_member_is_current it is true while a member's
// partner is current or expired (an active bond's members start expired)
// and false once defaulted; the bond's runner tells the database layer
// when it changes, and only then.
func TestLACPCurrent(t *testing.T) {
	b, _, bd := lacpBridge(t, BondBalanceTCP, false)
	changed := make(chan struct{}, 8)
	b.SetStatusChanged(func() { changed <- struct{}{} })
	if _, ok := b.LACPCurrent("p3"); ok {
		t.Error("p3, of no bond, has lacp_current")
	}
	if _, ok := b.LACPCurrent("nonesuch"); ok {
		t.Error("a missing port has lacp_current")
	}
	want := func(what string, v bool) {
		t.Helper()
		for _, n := range []string{"b1", "b2"} {
			if cur, ok := b.LACPCurrent(n); !ok || cur != v {
				t.Errorf("%s %s: lacp_current %t (ok %t), want %t", n, what, cur, ok, v)
			}
		}
	}
	wantChange := func(what string) {
		t.Helper()
		bd.kick()
		select {
		case <-changed:
		case <-time.After(5 * time.Second):
			t.Fatalf("%s: the runner did not report lacp_current changing", what)
		}
	}
	want("before any PDU (expired)", true)
	// Let the runner take its first look (it may have before the hook
	// was set), and forget what it said.
	bd.kick()
	time.Sleep(200 * time.Millisecond)
	for len(changed) > 0 {
		<-changed
	}
	for _, n := range []string{"b1", "b2"} {
		bd.lacp.carrierFirst(n, true)
	}
	// No partner for the fast expiry time: defaulted.
	bd.lacp.Run(time.Now().Add(4*time.Second), nil)
	want("with no partner (defaulted)", false)
	wantChange("defaulted")
	negotiate(t, b, bd)
	want("after the partner spoke", true)
	wantChange("current")
	// Nothing changed: another run says nothing.
	bd.kick()
	select {
	case <-changed:
		t.Error("the runner reported a change when lacp_current stayed")
	case <-time.After(300 * time.Millisecond):
	}
}

// TestLACPBalanceTCPRecirc: with the datapath's hash action, a
// negotiated balance-tcp bond's output is hash(l4(basis)),recirc(id),
// whose megaflow holds no L4 field; the recirculated packet leaves by the
// member of its dp_hash's bucket, both members taking buckets, with the
// bucket's bits of dp_hash in the megaflow and the bytes credited to it.
func TestLACPBalanceTCPRecirc(t *testing.T) {
	dpSupportsHash.Store(true)
	t.Cleanup(func() { dpSupportsHash.Store(false) })
	b, x, bd := lacpBridge(t, BondBalanceTCP, false)
	negotiate(t, b, bd)
	var out Out
	k := tagged(13, 0, 0)
	k.EthType, k.NwProto, k.TpSrc, k.TpDst = flow.EthTypeIPv4, 6, 1000, 80
	x.Translate(&k, t0, true, &out)
	id := bd.recircID(&xctx{xstate: xstate{x: x, now: t0}})
	want := fmt.Sprintf("0,hash(l4(0)),recirc(%#x),14", id)
	if got := datapath.FormatActions(out.Actions); id == 0 || got != want {
		t.Fatalf("flood from p3: %s, want %s", got, want)
	}
	if out.WC.TpSrc != 0 || out.WC.TpDst != 0 || out.WC.IPv4Src != ([4]byte{}) || out.acct.bond != nil {
		t.Errorf("first stage mask %+v (acct %+v): hashed fields are the kernel's business", out.WC, out.acct)
	}
	if n := testing.AllocsPerRun(200, func() { x.Translate(&k, t0, true, &out) }); n != 0 {
		t.Errorf("balance-tcp recirculation translation allocates %.1f times", n)
	}
	if s := b.Bonds()[0]; s.RecircID != id {
		t.Errorf("bond/show's recirc id %d, want %d", s.RecircID, id)
	}

	seen := map[string]int{}
	for h := 0; h < 512; h += 3 {
		k2 := k
		k2.RecircID, k2.DPHash = id, uint32(h)
		x.Translate(&k2, t0, false, &out)
		a := datapath.FormatActions(out.Actions)
		seen[a]++
		st := b.Ports.Snapshot().bonds[bd]
		if want := itoa(st.buckets[uint8(h)].DPPort); a != want {
			t.Fatalf("dp_hash %#x: %s, want bucket %d's member %s", h, a, uint8(h), want)
		}
		if out.WC.DPHash != 0xff || out.WC.RecircID != ^uint32(0) || out.WC.TpSrc != 0 {
			t.Fatalf("second stage mask %+v", out.WC)
		}
		if out.acct.bond != bd || out.acct.bucket != uint8(h) {
			t.Fatalf("dp_hash %#x credited to %+v", h, out.acct)
		}
	}
	if seen["11"] == 0 || seen["12"] == 0 || len(seen) != 2 {
		t.Errorf("second stage outputs %v, want both members", seen)
	}

	// Without the hash action: the old form, the 5-tuple hashed here.
	dpSupportsHash.Store(false)
	x.Translate(&k, t0, true, &out)
	if got := datapath.FormatActions(out.Actions); got != "0,11,14" && got != "0,12,14" || out.WC.TpSrc != 0xffff {
		t.Errorf("without the hash action: %s (mask tp_src %#x), want an output to a member and the 5-tuple in the mask", got, out.WC.TpSrc)
	}
}
