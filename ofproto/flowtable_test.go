package ofproto

import (
	"testing"
	"time"

	"github.com/govswitch/govswitch/classifier"
	"github.com/govswitch/govswitch/flow"
	"github.com/govswitch/govswitch/ofproto/openflow"
)

var t0 = time.Unix(1_700_000_000, 0)

// match builds a classifier match from field setters on a key and a mask.
func match(set func(k *flow.Key, m *flow.Mask)) classifier.Match {
	var cm classifier.Match
	if set != nil {
		set(&cm.Key, &cm.Mask)
	}
	return cm
}

func tcpDst(port uint16) classifier.Match {
	return match(func(k *flow.Key, m *flow.Mask) {
		k.EthType, m.EthType = flow.EthTypeIPv4, 0xffff
		k.NwProto, m.NwProto = flow.IPProtoTCP, 0xff
		k.TpDst, m.TpDst = port, 0xffff
	})
}

func ipv4() classifier.Match {
	return match(func(k *flow.Key, m *flow.Mask) { k.EthType, m.EthType = flow.EthTypeIPv4, 0xffff })
}

func out(port uint32) openflow.Instructions {
	return openflow.Instructions{Apply: []openflow.Action{openflow.Output(port, 0)}}
}

func addFlow(t *testing.T, ts *Tables, fm FlowMod) {
	t.Helper()
	fm.Command = CmdAdd
	if fm.OutPort == 0 {
		fm.OutPort = openflow.PortAny
	}
	if err := ts.Apply(&fm, t0); err != nil {
		t.Fatalf("add %+v: %v", fm.Match, err)
	}
}

func tcpKey(dst uint16) flow.Key {
	return flow.Key{EthType: flow.EthTypeIPv4, NwProto: flow.IPProtoTCP, TpDst: dst}
}

func outPortOf(r *Rule) uint32 {
	if r == nil || len(r.Value.Instructions.Apply) == 0 {
		return 0
	}
	return r.Value.Instructions.Apply[0].Port
}

func TestAddLookupPriority(t *testing.T) {
	ts := NewTables()
	addFlow(t, ts, FlowMod{Match: ipv4(), Priority: 10, Instructions: out(1)})
	addFlow(t, ts, FlowMod{Match: tcpDst(80), Priority: 20, Instructions: out(2)})
	var wc flow.Mask
	k := tcpKey(80)
	if got := outPortOf(ts.Lookup(0, &k, &wc)); got != 2 {
		t.Errorf("tcp/80 -> %d, want 2", got)
	}
	k = tcpKey(22)
	if got := outPortOf(ts.Lookup(0, &k, &wc)); got != 1 {
		t.Errorf("tcp/22 -> %d, want 1", got)
	}
	if ts.Len() != 2 {
		t.Errorf("len %d", ts.Len())
	}
}

func TestAddReplacesIdentical(t *testing.T) {
	for _, reset := range []bool{false, true} {
		ts := NewTables()
		addFlow(t, ts, FlowMod{Match: tcpDst(80), Priority: 5, Instructions: out(1), Cookie: 1})
		k := tcpKey(80)
		ts.Lookup(0, &k, &flow.Mask{}).Value.Credit(3, 300, t0.Add(time.Second))
		fm := FlowMod{Match: tcpDst(80), Priority: 5, Instructions: out(2), Cookie: 2}
		if reset {
			fm.Flags = FlagResetCounts
		}
		addFlow(t, ts, fm)
		r := ts.Lookup(0, &k, &flow.Mask{})
		p, b := r.Value.Stats()
		if ts.Len() != 1 || outPortOf(r) != 2 || r.Value.Cookie != 2 {
			t.Fatalf("replace: len %d out %d cookie %d", ts.Len(), outPortOf(r), r.Value.Cookie)
		}
		if want := uint64(3); reset {
			if p != 0 || b != 0 {
				t.Errorf("reset counts kept %d/%d", p, b)
			}
		} else if p != want || b != 300 {
			t.Errorf("replaced flow's counters %d/%d, want carried over", p, b)
		}
	}
}

func TestCheckOverlap(t *testing.T) {
	ts := NewTables()
	addFlow(t, ts, FlowMod{Match: ipv4(), Priority: 10, Instructions: out(1)})
	tests := []struct {
		name string
		fm   FlowMod
		want ErrorKind
	}{
		{"overlapping same priority", FlowMod{Match: tcpDst(80), Priority: 10, Flags: FlagCheckOverlap}, ErrOverlap},
		{"other priority", FlowMod{Match: tcpDst(80), Priority: 11, Flags: FlagCheckOverlap}, 0},
		{"identical replaces", FlowMod{Match: ipv4(), Priority: 10, Flags: FlagCheckOverlap}, 0},
		{"disjoint", FlowMod{Match: match(func(k *flow.Key, m *flow.Mask) { k.EthType, m.EthType = flow.EthTypeARP, 0xffff }),
			Priority: 10, Flags: FlagCheckOverlap}, 0},
		{"no flag", FlowMod{Match: tcpDst(443), Priority: 10}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fm := tt.fm
			fm.Command = CmdAdd
			err := ts.Apply(&fm, t0)
			if ErrKind(err) != tt.want || (tt.want == 0) != (err == nil) {
				t.Errorf("err = %v, want kind %d", err, tt.want)
			}
		})
	}
}

func TestModify(t *testing.T) {
	setup := func() *Tables {
		ts := NewTables()
		addFlow(t, ts, FlowMod{Match: ipv4(), Priority: 1, Instructions: out(1), Cookie: 0xa})
		addFlow(t, ts, FlowMod{Match: tcpDst(80), Priority: 2, Instructions: out(1), Cookie: 0xb})
		addFlow(t, ts, FlowMod{Match: tcpDst(22), Priority: 3, Instructions: out(1), Cookie: 0xb})
		return ts
	}
	ports := func(ts *Tables) [3]uint32 {
		var r [3]uint32
		for i, k := range []flow.Key{{EthType: flow.EthTypeIPv4}, tcpKey(80), tcpKey(22)} {
			r[i] = outPortOf(ts.Lookup(0, &k, &flow.Mask{}))
		}
		return r
	}
	tests := []struct {
		name    string
		fm      FlowMod
		want    [3]uint32
		wantLen int
	}{
		{"loose by ipv4 modifies all three", FlowMod{Command: CmdModify, Match: ipv4()}, [3]uint32{9, 9, 9}, 3},
		{"loose by tcp/80 modifies one", FlowMod{Command: CmdModify, Match: tcpDst(80)}, [3]uint32{1, 9, 1}, 3},
		{"strict needs the priority", FlowMod{Command: CmdModifyStrict, Match: tcpDst(80), Priority: 3}, [3]uint32{1, 1, 1}, 3},
		{"strict exact", FlowMod{Command: CmdModifyStrict, Match: tcpDst(22), Priority: 3}, [3]uint32{1, 1, 9}, 3},
		{"cookie filter", FlowMod{Command: CmdModify, Match: ipv4(), Cookie: 0xb, CookieMask: 0xff}, [3]uint32{1, 9, 9}, 3},
		{"1.1+ modify of nothing adds nothing", FlowMod{Command: CmdModify, Match: tcpDst(443), Priority: 7}, [3]uint32{1, 1, 1}, 3},
		{"1.0 modify of nothing adds", FlowMod{Command: CmdModify, Match: tcpDst(443), Priority: 7, ModifyAdds: true}, [3]uint32{1, 1, 1}, 4},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ts := setup()
			k := tcpKey(80)
			ts.Lookup(0, &k, &flow.Mask{}).Value.Credit(5, 500, t0)
			v := ts.Version()
			fm := tt.fm
			fm.Instructions = out(9)
			fm.OutPort = openflow.PortAny
			if err := ts.Apply(&fm, t0.Add(time.Second)); err != nil {
				t.Fatal(err)
			}
			if got := ports(ts); got != tt.want {
				t.Errorf("outputs %v, want %v", got, tt.want)
			}
			if ts.Len() != tt.wantLen {
				t.Errorf("len %d, want %d", ts.Len(), tt.wantLen)
			}
			r := ts.Lookup(0, &k, &flow.Mask{})
			if p, _ := r.Value.Stats(); p != 5 || r.Value.Created != t0 {
				t.Errorf("modify lost counters (%d) or creation time (%v)", p, r.Value.Created)
			}
			if tt.want != [3]uint32{1, 1, 1} || tt.wantLen == 4 {
				if ts.Version() == v {
					t.Errorf("version not bumped")
				}
			}
		})
	}
	// 1.0 modify sets the cookie; 1.1+ keeps it.
	ts := setup()
	ts.Apply(&FlowMod{Command: CmdModify, Match: tcpDst(80), SetCookie: true, NewCookie: 0x77, OutPort: openflow.PortAny, Instructions: out(4)}, t0)
	k := tcpKey(80)
	if c := ts.Lookup(0, &k, &flow.Mask{}).Value.Cookie; c != 0x77 {
		t.Errorf("cookie %#x after 1.0 modify", c)
	}
}

func TestDelete(t *testing.T) {
	setup := func() (*Tables, *[]Removed) {
		ts := NewTables()
		var removed []Removed
		ts.OnRemoved = func(r Removed) { removed = append(removed, r) }
		addFlow(t, ts, FlowMod{Match: ipv4(), Priority: 1, Instructions: out(1), Flags: FlagSendFlowRem})
		addFlow(t, ts, FlowMod{Match: tcpDst(80), Priority: 2, Instructions: out(2), Flags: FlagSendFlowRem})
		addFlow(t, ts, FlowMod{Match: tcpDst(22), Priority: 3, Instructions: out(2)})
		addFlow(t, ts, FlowMod{Table: 3, Match: tcpDst(80), Priority: 2, Instructions: out(2)})
		return ts, &removed
	}
	tests := []struct {
		name        string
		fm          FlowMod
		wantLen     int
		wantRemoved int // flow_removed reports (SEND_FLOW_REM flows only)
	}{
		{"loose all in table 0", FlowMod{Command: CmdDelete, Table: 0, OutPort: openflow.PortAny}, 1, 2},
		{"loose all tables", FlowMod{Command: CmdDelete, Table: openflow.TableAll, OutPort: openflow.PortAny}, 0, 2},
		{"loose tcp/80 all tables", FlowMod{Command: CmdDelete, Table: openflow.TableAll, Match: tcpDst(80), OutPort: openflow.PortAny}, 2, 1},
		{"out_port filter", FlowMod{Command: CmdDelete, Table: 0, Match: ipv4(), OutPort: 2}, 2, 1},
		{"strict wrong priority", FlowMod{Command: CmdDeleteStrict, Table: 0, Match: tcpDst(80), Priority: 9, OutPort: openflow.PortAny}, 4, 0},
		{"strict", FlowMod{Command: CmdDeleteStrict, Table: 0, Match: tcpDst(80), Priority: 2, OutPort: openflow.PortAny}, 3, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ts, removed := setup()
			fm := tt.fm
			if err := ts.Apply(&fm, t0); err != nil {
				t.Fatal(err)
			}
			if ts.Len() != tt.wantLen || len(*removed) != tt.wantRemoved {
				t.Errorf("len %d removed %d, want %d and %d", ts.Len(), len(*removed), tt.wantLen, tt.wantRemoved)
			}
			for _, r := range *removed {
				if r.Reason != RemovedDelete {
					t.Errorf("reason %d", r.Reason)
				}
			}
		})
	}
}

func TestTimeouts(t *testing.T) {
	ts := NewTables()
	var removed []Removed
	ts.OnRemoved = func(r Removed) { removed = append(removed, r) }
	addFlow(t, ts, FlowMod{Match: tcpDst(1), Priority: 1, IdleTimeout: 10, Flags: FlagSendFlowRem})
	addFlow(t, ts, FlowMod{Match: tcpDst(2), Priority: 1, HardTimeout: 5, Flags: FlagSendFlowRem})
	addFlow(t, ts, FlowMod{Match: tcpDst(3), Priority: 1, IdleTimeout: 10, HardTimeout: 30})
	addFlow(t, ts, FlowMod{Match: tcpDst(4), Priority: 1})

	if n := ts.Expire(t0.Add(4 * time.Second)); n != 0 {
		t.Fatalf("expired %d at 4s", n)
	}
	// Traffic on flows 1 and 3 keeps them alive past their idle timeout.
	for _, d := range []uint16{1, 3} {
		k := tcpKey(d)
		ts.Lookup(0, &k, &flow.Mask{}).Value.Credit(1, 60, t0.Add(8*time.Second))
	}
	if n := ts.Expire(t0.Add(12 * time.Second)); n != 1 || len(removed) != 1 || removed[0].Reason != RemovedHardTimeout {
		t.Fatalf("at 12s: expired %d, removed %+v; want flow 2 by hard timeout", n, removed)
	}
	if n := ts.Expire(t0.Add(18 * time.Second)); n != 2 || len(removed) != 2 || removed[1].Reason != RemovedIdleTimeout {
		t.Fatalf("at 18s: expired %d; want flows 1 and 3 idle (only 1 reported)", n)
	}
	if ts.Len() != 1 || len(ts.timed) != 0 {
		t.Errorf("len %d, timed %d", ts.Len(), len(ts.timed))
	}
}

func TestLimitsAndBadRequests(t *testing.T) {
	ts := NewTables()
	ts.MaxFlows = 2
	addFlow(t, ts, FlowMod{Match: tcpDst(1), Priority: 1})
	addFlow(t, ts, FlowMod{Match: tcpDst(2), Priority: 1})
	tests := []struct {
		name string
		fm   FlowMod
		want ErrorKind
	}{
		{"full", FlowMod{Command: CmdAdd, Match: tcpDst(3), Priority: 1}, ErrTableFull},
		{"replacing while full is fine", FlowMod{Command: CmdAdd, Match: tcpDst(2), Priority: 1}, 0},
		{"add to all tables", FlowMod{Command: CmdAdd, Table: openflow.TableAll}, ErrBadTableID},
		{"goto backwards", FlowMod{Command: CmdAdd, Table: 3, Instructions: openflow.Instructions{GotoTable: true, Table: 2}}, ErrBadGotoTable},
		{"goto a missing table", FlowMod{Command: CmdAdd, Table: 3, Instructions: openflow.Instructions{GotoTable: true, Table: 255}}, ErrBadGotoTable},
		{"group", FlowMod{Command: CmdAdd, Instructions: openflow.Instructions{Apply: []openflow.Action{{Type: openflow.ActGroup, Group: 1}}}}, ErrBadOutGroup},
		{"output to OFPP_MAX", FlowMod{Command: CmdAdd, Instructions: out(openflow.PortMax)}, ErrBadOutPort},
		{"set ip_src without an IPv4 match", FlowMod{Command: CmdAdd, Instructions: openflow.Instructions{Apply: []openflow.Action{
			openflow.SetField(ipSrcField(t), &flow.Key{IPv4Src: [4]byte{1, 2, 3, 4}})}}}, ErrMatchInconsistent},
		{"unknown command", FlowMod{Command: 9}, ErrBadCommand},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fm := tt.fm
			fm.OutPort = openflow.PortAny
			if err := ts.Apply(&fm, t0); ErrKind(err) != tt.want || (err == nil) != (tt.want == 0) {
				t.Errorf("err %v, want kind %d", err, tt.want)
			}
		})
	}
}

func TestSelectForStats(t *testing.T) {
	ts := NewTables()
	addFlow(t, ts, FlowMod{Match: tcpDst(80), Priority: 1, Instructions: out(1), Cookie: 1})
	addFlow(t, ts, FlowMod{Table: 1, Match: tcpDst(22), Priority: 1, Instructions: out(2), Cookie: 2})
	all := classifier.Match{}
	if n := len(ts.Select(openflow.TableAll, &all, 0, 0, openflow.PortAny)); n != 2 {
		t.Errorf("all: %d", n)
	}
	if n := len(ts.Select(1, &all, 0, 0, openflow.PortAny)); n != 1 {
		t.Errorf("table 1: %d", n)
	}
	if n := len(ts.Select(openflow.TableAll, &all, 2, ^uint64(0), openflow.PortAny)); n != 1 {
		t.Errorf("cookie: %d", n)
	}
	if n := len(ts.Select(openflow.TableAll, &all, 0, 0, 1)); n != 1 {
		t.Errorf("out_port: %d", n)
	}
}

// ipSrcField finds the OpenFlow field that sets IPv4Src.
func ipSrcField(t *testing.T) openflow.Field {
	return fieldSetting(t, func(k *flow.Key) { k.IPv4Src = [4]byte{1, 2, 3, 4} })
}

// TestModifyAllTables: a modify aimed at every table changes each table
// holding a match, as one change: a goto_table that would point backwards
// from one of them fails the whole modify, and no table changes.
func TestModifyAllTables(t *testing.T) {
	ts := NewTables()
	addFlow(t, ts, FlowMod{Table: 0, Match: tcpDst(80), Priority: 5, Instructions: out(1)})
	addFlow(t, ts, FlowMod{Table: 3, Match: tcpDst(80), Priority: 5, Instructions: out(1)})
	actions := func() (a0, a3 uint32) {
		m := tcpDst(80)
		return ts.Table(0).Snapshot().Find(&m, 5).Value.Instructions.Apply[0].Port,
			ts.Table(3).Snapshot().Find(&m, 5).Value.Instructions.Apply[0].Port
	}
	bad := FlowMod{Command: CmdModify, Table: openflow.TableAll, Match: tcpDst(80), OutPort: openflow.PortAny,
		Instructions: openflow.Instructions{Apply: out(2).Apply, GotoTable: true, Table: 2}}
	if err := ts.Apply(&bad, t0); ErrKind(err) != ErrBadGotoTable {
		t.Fatalf("modify with a goto backwards from table 3: %v", err)
	}
	if a0, a3 := actions(); a0 != 1 || a3 != 1 {
		t.Fatalf("a failed modify changed tables: outputs %d, %d", a0, a3)
	}
	good := FlowMod{Command: CmdModify, Table: openflow.TableAll, Match: tcpDst(80), OutPort: openflow.PortAny, Instructions: out(2)}
	if err := ts.Apply(&good, t0); err != nil {
		t.Fatal(err)
	}
	if a0, a3 := actions(); a0 != 2 || a3 != 2 {
		t.Fatalf("modify of all tables: outputs %d, %d, want 2, 2", a0, a3)
	}
	adds := FlowMod{Command: CmdModify, Table: openflow.TableAll, Match: tcpDst(81), Priority: 7, ModifyAdds: true,
		OutPort: openflow.PortAny, Instructions: out(3)}
	if err := ts.Apply(&adds, t0); err != nil || ts.Len() != 3 || ts.Table(0).Snapshot().Len() != 2 {
		t.Fatalf("a 1.0 modify of nothing adds to table 0: err %v, %d flows", err, ts.Len())
	}
}

// TestCreditForwardsToSuccessor: credits for a rule a modify replaced (a
// datapath flow translated before the modify) go to the rule now in the
// table, as OVS's rule->new_rule forwards them: the last use always, the
// counts unless the modify reset them.
func TestCreditForwardsToSuccessor(t *testing.T) {
	ts := NewTables()
	now := time.Unix(1000, 0)
	add := FlowMod{Command: CmdAdd, OutPort: openflow.PortAny, IdleTimeout: 5,
		Instructions: openflow.Instructions{Apply: []openflow.Action{openflow.Output(1, 0)}}}
	if err := ts.Apply(&add, now); err != nil {
		t.Fatal(err)
	}
	first := ts.View().Table(0).Find(&classifier.Match{}, 0)
	mod := FlowMod{Command: CmdModify, OutPort: openflow.PortAny,
		Instructions: openflow.Instructions{Apply: []openflow.Action{openflow.Output(2, 0)}}}
	if err := ts.Apply(&mod, now); err != nil {
		t.Fatal(err)
	}
	second := ts.View().Table(0).Find(&classifier.Match{}, 0)
	first.Value.Credit(3, 300, now.Add(4*time.Second))
	if p, b := second.Value.Stats(); p != 3 || b != 300 || !second.Value.LastUsed().Equal(now.Add(4*time.Second)) {
		t.Errorf("successor has %d/%d used %v", p, b, second.Value.LastUsed())
	}
	if n := ts.Expire(now.Add(6 * time.Second)); n != 0 {
		t.Errorf("the rule expired %d while the old one's flow was in use", n)
	}
	mod.Flags = FlagResetCounts
	if err := ts.Apply(&mod, now); err != nil {
		t.Fatal(err)
	}
	third := ts.View().Table(0).Find(&classifier.Match{}, 0)
	first.Value.Credit(1, 100, now.Add(7*time.Second))
	if p, _ := third.Value.Stats(); p != 0 || !third.Value.LastUsed().Equal(now.Add(7*time.Second)) {
		t.Errorf("after a reset: successor has %d packets, used %v", p, third.Value.LastUsed())
	}
	if p, _ := second.Value.Stats(); p != 3 {
		t.Errorf("the reset modify's predecessor kept %d packets, want 3", p)
	}
}
