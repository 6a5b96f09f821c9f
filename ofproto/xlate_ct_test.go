package ofproto

import (
	"fmt"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/govswitch/govswitch/datapath"
	"github.com/govswitch/govswitch/flow"
	"github.com/govswitch/govswitch/ofproto/openflow"
)

func ctAct(c openflow.CtAction) openflow.Action { return openflow.Action{Type: openflow.ActCT, Ct: &c} }

// firewall installs the classic stateful firewall: untracked IP goes
// through conntrack into table 1; there new connections from port 1 are
// committed and sent to port 2, established ones pass both ways, the rest
// is dropped.
func firewall(t *testing.T, x *Xlator) {
	t.Helper()
	ip := func(k *flow.Key, m *flow.Mask) { k.EthType, m.EthType = flow.EthTypeIPv4, 0xffff }
	mustAdd(t, x, 0, func(k *flow.Key, m *flow.Mask) { ip(k, m); m.CtState = flow.CtTracked }, 1,
		apply(ctAct(openflow.CtAction{Table: 1})))
	mustAdd(t, x, 1, func(k *flow.Key, m *flow.Mask) {
		ip(k, m)
		k.InPort, m.InPort = 1, ^uint32(0)
		k.CtState, m.CtState = flow.CtTracked|flow.CtNew, flow.CtTracked|flow.CtNew
	}, 10, apply(ctAct(openflow.CtAction{Flags: openflow.CtCommit, Table: openflow.CtNoRecirc}), openflow.Output(2, 0)))
	mustAdd(t, x, 1, func(k *flow.Key, m *flow.Mask) {
		ip(k, m)
		k.InPort, m.InPort = 1, ^uint32(0)
		k.CtState, m.CtState = flow.CtTracked|flow.CtEstablished, flow.CtTracked|flow.CtEstablished
	}, 10, apply(openflow.Output(2, 0)))
	mustAdd(t, x, 1, func(k *flow.Key, m *flow.Mask) {
		ip(k, m)
		k.InPort, m.InPort = 2, ^uint32(0)
		k.CtState, m.CtState = flow.CtTracked|flow.CtEstablished, flow.CtTracked|flow.CtEstablished
	}, 10, apply(openflow.Output(1, 0)))
}

func TestXlateCtFirewall(t *testing.T) {
	x := testBridge(t)
	firewall(t, x)
	var out Out
	k := pkt(11)
	x.Translate(&k, t0, true, &out)
	acts := datapath.FormatActions(out.Actions)
	var id uint32
	if _, err := fmt.Sscanf(acts, "ct,recirc(%v)", &id); err != nil || id == 0 {
		t.Fatalf("stage 0 actions %q (dropped %q), want ct,recirc(ID)", acts, out.Dropped)
	}
	if out.WC.CtState != flow.CtTracked || out.WC.RecircID != ^uint32(0) {
		t.Errorf("stage 0 mask ct_state %#x recirc_id %#x", out.WC.CtState, out.WC.RecircID)
	}
	// The same state freezes to the same id.
	k2 := pkt(11)
	k2.TpSrc++
	var out2 Out
	x.Translate(&k2, t0, true, &out2)
	if got := datapath.FormatActions(out2.Actions); got != acts {
		t.Errorf("second packet %q, want %q (one id per frozen state)", got, acts)
	}

	stage := func(dp uint32, state uint32) (string, *Out) {
		k := pkt(dp)
		var o0 Out
		x.Translate(&k, t0, true, &o0)
		var id uint32
		fmt.Sscanf(datapath.FormatActions(o0.Actions), "ct,recirc(%v)", &id)
		k.RecircID, k.CtState = id, state
		var o Out
		x.Translate(&k, t0, true, &o)
		return datapath.FormatActions(o.Actions), &o
	}
	for _, tc := range []struct {
		name  string
		dp    uint32
		state uint32
		want  string
	}{
		{"new from inside is committed", 11, flow.CtTracked | flow.CtNew, "ct(commit),12"},
		{"established from inside", 11, flow.CtTracked | flow.CtEstablished, "12"},
		{"established reply from outside", 12, flow.CtTracked | flow.CtEstablished | flow.CtReplyDir, "11"},
		{"new from outside is dropped", 12, flow.CtTracked | flow.CtNew, "drop"},
		{"invalid is dropped", 11, flow.CtTracked | flow.CtInvalid, "drop"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, o := stage(tc.dp, tc.state)
			if got != tc.want {
				t.Errorf("actions %q, want %q (dropped %q)", got, tc.want, o.Dropped)
			}
			if o.WC.RecircID != ^uint32(0) || o.WC.CtState == 0 {
				t.Errorf("mask recirc_id %#x ct_state %#x", o.WC.RecircID, o.WC.CtState)
			}
			if o.NRules > 0 && o.Rules[0].Value.Table != 1 {
				t.Errorf("credited rule in table %d, want 1", o.Rules[0].Value.Table)
			}
		})
	}
	// An id nobody allocated drops.
	k3 := pkt(11)
	k3.RecircID = 0x7fffffff
	var o3 Out
	x.Translate(&k3, t0, true, &o3)
	if len(o3.Actions) != 0 || o3.Dropped == "" {
		t.Errorf("unknown recirc id: actions %q dropped %q", datapath.FormatActions(o3.Actions), o3.Dropped)
	}
	// Another bridge's id drops too.
	y := testBridge(t)
	var o4 Out
	k4 := pkt(11)
	k4.RecircID = id
	y.Translate(&k4, t0, true, &o4)
	if len(o4.Actions) != 0 {
		t.Errorf("another bridge's recirc id: %q", datapath.FormatActions(o4.Actions))
	}
}

func TestXlateCtOptions(t *testing.T) {
	var label [16]byte
	label[15] = 2
	mark := openflow.Action{Type: openflow.ActSetField, Field: openflow.FieldCtMark}
	mark.Value[3] = 7
	lab := openflow.Action{Type: openflow.ActSetField, Field: openflow.FieldCtLabel, Value: label}
	nat := openflow.Action{Type: openflow.ActNAT, NAT: &openflow.NATAction{Flags: openflow.NATSrc | openflow.NATProtoRandom,
		IPMin: netip.MustParseAddr("10.0.0.1"), IPMax: netip.MustParseAddr("10.0.0.9"), ProtoMin: 1000, ProtoMax: 2000}}
	loadMark := openflow.Action{Type: openflow.ActRegLoad, Field: openflow.FieldCtMark, Ofs: 4, NBits: 4, Load: 0xa}
	for _, tc := range []struct {
		name string
		ct   openflow.CtAction
		regs func(k *flow.Key)
		want string
	}{
		{"commit zone mark label", openflow.CtAction{Flags: openflow.CtCommit, ZoneImm: 5, Table: openflow.CtNoRecirc,
			Actions: []openflow.Action{mark, lab}}, nil,
			"ct(commit,zone=5,mark=0x7/0xffffffff,label=0x2)"},
		{"load bits of the mark", openflow.CtAction{Flags: openflow.CtCommit, Table: openflow.CtNoRecirc,
			Actions: []openflow.Action{loadMark}}, nil, "ct(commit,mark=0xa0/0xf0)"},
		{"force, helper, snat", openflow.CtAction{Flags: openflow.CtCommit | openflow.CtForce, Alg: 21, Table: openflow.CtNoRecirc,
			Actions: []openflow.Action{nat}}, nil,
			"ct(force_commit,helper=ftp,nat(src=10.0.0.1-10.0.0.9:1000-2000,random))"},
		{"mark from a register", openflow.CtAction{Flags: openflow.CtCommit, Table: openflow.CtNoRecirc,
			Actions: []openflow.Action{{Type: openflow.ActRegMove, Src: openflow.FieldReg1, SrcOfs: 8, Field: openflow.FieldCtMark, Ofs: 0, NBits: 8}}},
			func(k *flow.Key) { k.Regs[1] = 0x00003400 }, "ct(commit,mark=0x34/0xff)"},
		{"zone from a register", openflow.CtAction{ZoneField: openflow.FieldReg0, ZoneOfs: 16, Table: openflow.CtNoRecirc},
			func(k *flow.Key) { k.Regs[0] = 0x00070000 }, "ct(zone=7)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			x := testBridge(t)
			mustAdd(t, x, 0, func(k *flow.Key, m *flow.Mask) { k.EthType, m.EthType = flow.EthTypeIPv4, 0xffff }, 1,
				apply(ctAct(tc.ct), openflow.Output(2, 0)))
			k := pkt(11)
			if tc.regs != nil {
				tc.regs(&k)
			}
			var out Out
			x.Translate(&k, t0, true, &out)
			if got := datapath.FormatActions(out.Actions); got != tc.want+",12" {
				t.Errorf("actions %q, want %q", got, tc.want+",12")
			}
		})
	}
}

// TestXlateCtRegsFrozen: the registers a stage set survive recirculation.
func TestXlateCtRegsFrozen(t *testing.T) {
	x := testBridge(t)
	load := openflow.Action{Type: openflow.ActRegLoad, Field: openflow.FieldReg3, NBits: 32, Load: 42}
	mustAdd(t, x, 0, func(k *flow.Key, m *flow.Mask) { k.EthType, m.EthType = flow.EthTypeIPv4, 0xffff }, 1,
		apply(load, ctAct(openflow.CtAction{Table: 2})))
	mustAdd(t, x, 2, func(k *flow.Key, m *flow.Mask) { k.Regs[3], m.Regs[3] = 42, ^uint32(0) }, 1, apply(openflow.Output(3, 0)))
	k := pkt(11)
	var out Out
	x.Translate(&k, t0, true, &out)
	var id uint32
	if _, err := fmt.Sscanf(datapath.FormatActions(out.Actions), "ct,recirc(%v)", &id); err != nil {
		t.Fatal(datapath.FormatActions(out.Actions))
	}
	k.RecircID, k.CtState = id, flow.CtTracked|flow.CtNew
	x.Translate(&k, t0, true, &out)
	if got := datapath.FormatActions(out.Actions); got != "13" {
		t.Errorf("stage 2 %q, want 13 (reg3 frozen)", got)
	}
}

func TestCtChecks(t *testing.T) {
	x := testBridge(t)
	add := func(m func(k *flow.Key, m *flow.Mask), acts ...openflow.Action) error {
		fm := FlowMod{Command: CmdAdd, Match: match(m), Instructions: apply(acts...), OutPort: openflow.PortAny}
		return x.Tables.Apply(&fm, t0)
	}
	ip := func(k *flow.Key, m *flow.Mask) { k.EthType, m.EthType = flow.EthTypeIPv4, 0xffff }
	nat := openflow.Action{Type: openflow.ActNAT, NAT: &openflow.NATAction{}}
	mark := openflow.Action{Type: openflow.ActSetField, Field: openflow.FieldCtMark}
	if err := add(ip, nat); ErrKind(err) != ErrBadSetArgument {
		t.Errorf("nat outside ct: %v", err)
	}
	if err := add(ip, mark); ErrKind(err) != ErrBadSetArgument {
		t.Errorf("ct_mark outside ct: %v", err)
	}
	if err := add(func(k *flow.Key, m *flow.Mask) { m.CtState = 0x100 }); ErrKind(err) != ErrBadMask {
		t.Errorf("ct_state bit 8: %v", err)
	}
	// A datapath without zones (UML's) refuses zones in actions and matches.
	old := ctFeatures.Load()
	defer ctFeatures.Store(old)
	noteDatapathFeatures(datapath.Features{CtProbed: true, Recirc: true, CtState: true, Conntrack: true, CtMark: true, CtLabel: true, CtNAT: true})
	if err := add(ip, ctAct(openflow.CtAction{ZoneImm: 1, Table: openflow.CtNoRecirc})); ErrKind(err) != ErrCtDatapathAction {
		t.Errorf("ct zone without zones: %v", err)
	}
	if err := add(func(k *flow.Key, m *flow.Mask) { ip(k, m); k.CtZone, m.CtZone = 1, 0xffff }); ErrKind(err) != ErrCtDatapathMatch {
		t.Errorf("ct_zone match without zones: %v", err)
	}
	if err := add(ip, ctAct(openflow.CtAction{Table: 1})); err != nil {
		t.Errorf("ct(table=1): %v", err)
	}
	noteDatapathFeatures(datapath.Features{CtProbed: true})
	err := add(ip, ctAct(openflow.CtAction{Table: 1}))
	if ErrKind(err) != ErrCtDatapathAction {
		t.Errorf("ct without conntrack: %v", err)
	}
	for _, v := range []uint8{openflow.Version10, openflow.Version13} {
		typ, code := flowModError(v, err)
		if !strings.Contains(fmt.Sprint(typ, code), map[uint8]string{1: "1 265", 4: "65535 42"}[v]) {
			t.Errorf("version %d: error %d/%d", v, typ, code)
		}
	}
}

// TestXlateCtAllocs: the recirculated stage translates without allocating.
func TestXlateCtAllocs(t *testing.T) {
	x := testBridge(t)
	firewall(t, x)
	out := Out{Actions: make([]byte, 0, 1024)}
	k := pkt(11)
	x.Translate(&k, t0, true, &out)
	var id uint32
	fmt.Sscanf(datapath.FormatActions(out.Actions), "ct,recirc(%v)", &id)
	now := t0
	n := testing.AllocsPerRun(1000, func() {
		k.RecircID, k.CtState = 0, 0
		k.TpSrc++
		x.Translate(&k, now, true, &out)
		k.RecircID, k.CtState = id, flow.CtTracked|flow.CtNew
		x.Translate(&k, now, true, &out)
	})
	if n != 0 {
		t.Errorf("ct translation allocates %v per packet", n)
	}
}

// TestRecircSweep: the revalidator frees recirculation ids no ukey names
// once they are older than the grace period, and keeps the others.
func TestRecircSweep(t *testing.T) {
	b, _ := dummyBridge(t, noPeriodicPass)
	u := b.Udpif
	now := t0
	kept := recircs.id(&frozenState{x: b.X, table: 1}, now)
	byKey := recircs.id(&frozenState{x: b.X, table: 2}, now)
	gone := recircs.id(&frozenState{x: b.X, table: 3}, now)
	other := recircs.id(&frozenState{x: testBridge(t), table: 3}, now)
	// A ukey whose actions recirculate to kept, one whose key matches byKey.
	for i, fill := range []func(k *ukey){
		func(k *ukey) {
			k.actions = datapath.AppendRecirc(datapath.AppendCT(k.actions[:0], &datapath.CT{}), kept)
		},
		func(k *ukey) {
			key := flow.Key{RecircID: byKey}
			m := flow.Mask{RecircID: ^uint32(0)}
			u.ukeys.setFlow(k, &key, &m)
		},
	} {
		ufid := datapath.UFID{byte(i + 1)}
		if k, _ := u.ukeys.Insert(&ufid, fill); k == nil {
			t.Fatal("insert failed")
		}
	}
	if n := recircs.sweep(u, now.Add(time.Second)); n != 0 {
		t.Errorf("swept %d ids within the grace period", n)
	}
	if n := recircs.sweep(u, now.Add(recircGrace+time.Second)); n != 1 {
		t.Errorf("swept %d ids, want 1", n)
	}
	for _, tc := range []struct {
		id   uint32
		live bool
	}{{kept, true}, {byKey, true}, {gone, false}, {other, true}} {
		if _, ok := recircs.lookup(tc.id, now); ok != tc.live {
			t.Errorf("id %d: live %v, want %v", tc.id, ok, tc.live)
		}
	}
}

func TestXlateCtClear(t *testing.T) {
	x := testBridge(t)
	mustAdd(t, x, 0, func(k *flow.Key, m *flow.Mask) {}, 1,
		apply(openflow.Action{Type: openflow.ActCTClear}, openflow.Output(2, 0)))
	k := pkt(11)
	k.CtState = flow.CtTracked | flow.CtEstablished
	var out Out
	x.Translate(&k, t0, true, &out)
	if got := datapath.FormatActions(out.Actions); got != "ct_clear,12" {
		t.Errorf("actions %q, want ct_clear,12", got)
	}
	old := ctFeatures.Load()
	defer ctFeatures.Store(old)
	noteDatapathFeatures(datapath.Features{CtProbed: true, Conntrack: true, CtState: true})
	x.Translate(&k, t0, true, &out)
	if got := datapath.FormatActions(out.Actions); got != "12" {
		t.Errorf("without kernel ct_clear: actions %q, want 12", got)
	}
}

// TestRecircForget: a stopped bridge's ids go, other bridges' stay.
func TestRecircForget(t *testing.T) {
	b, _ := dummyBridge(t, noPeriodicPass)
	other := testBridge(t)
	mine := recircs.id(&frozenState{x: b.X, table: 4}, t0)
	theirs := recircs.id(&frozenState{x: other, table: 4}, t0)
	b.Udpif.Start()
	b.Udpif.Stop()
	if _, ok := recircs.lookup(mine, t0); ok {
		t.Errorf("the stopped bridge's id %d survived", mine)
	}
	if _, ok := recircs.lookup(theirs, t0); !ok {
		t.Errorf("another bridge's id %d went", theirs)
	}
}

// TestXlateQueues: set_queue and enqueue select a linux-htb class by skb
// priority (1:queue+1), as ovs-vswitchd's xlate: set_queue for the
// outputs after it, enqueue for its own output only; the priority the
// packet came with is matched.
func TestXlateQueues(t *testing.T) {
	setQueue := func(q uint32) openflow.Action { return openflow.Action{Type: openflow.ActSetQueue, Queue: q} }
	enqueue := func(port, q uint32) openflow.Action {
		return openflow.Action{Type: openflow.ActEnqueue, Port: port, Queue: q}
	}
	for _, tc := range []struct {
		name string
		acts []openflow.Action
		want string
	}{
		{"set_queue", []openflow.Action{setQueue(1), openflow.Output(2, 0)}, "set(skb_priority(0x10002)),12"},
		{"enqueue", []openflow.Action{enqueue(2, 3), openflow.Output(3, 0)},
			"set(skb_priority(0x10004)),12,set(skb_priority(0)),13"},
		{"queue beyond the kernel's", []openflow.Action{setQueue(0xf000), openflow.Output(2, 0)}, "12"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			x := testBridge(t)
			mustAdd(t, x, 0, func(*flow.Key, *flow.Mask) {}, 1, apply(tc.acts...))
			k := pkt(11)
			var out Out
			x.Translate(&k, t0, true, &out)
			if got := datapath.FormatActions(out.Actions); got != tc.want {
				t.Errorf("actions %q, want %q", got, tc.want)
			}
			if strings.Contains(tc.want, "priority") != (out.WC.Priority == ^uint32(0)) {
				t.Errorf("priority mask %#x", out.WC.Priority)
			}
		})
	}
}
