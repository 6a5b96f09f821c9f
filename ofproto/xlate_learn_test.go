package ofproto

import (
	"errors"
	"testing"
	"time"

	"github.com/govswitch/govswitch/classifier"
	"github.com/govswitch/govswitch/datapath"
	"github.com/govswitch/govswitch/flow"
	"github.com/govswitch/govswitch/ofproto/openflow"
)

func learnAct(l openflow.LearnAction) openflow.Action {
	return openflow.Action{Type: openflow.ActLearn, Learn: &l}
}

// macLearning installs the classic learn-based MAC learning switch:
// table 0 learns "packets to my source address go to my port" into table
// 10 and resubmits there; table 10 outputs by reg0, or floods when reg0 is
// unset (priority 0).
func macLearning(t *testing.T, x *Xlator, flags uint16, hard uint16) {
	t.Helper()
	mustAdd(t, x, 0, func(*flow.Key, *flow.Mask) {}, 0x8000, apply(
		learnAct(openflow.LearnAction{Table: 10, Priority: 0x8000, Flags: flags, Cookie: 0x77, HardTimeout: hard,
			Specs: []openflow.LearnSpec{
				{Dst: openflow.LearnMatch, NBits: 48, Src: openflow.FieldEthSrc, Field: openflow.FieldEthDst},
				{Dst: openflow.LearnLoad, NBits: 16, Src: openflow.FieldNXMInPort, Field: openflow.FieldReg0},
			}}),
		openflow.Resubmit(openflow.PortInPort, 1)))
	mustAdd(t, x, 1, func(*flow.Key, *flow.Mask) {}, 0, apply(openflow.Resubmit(openflow.PortInPort, 10),
		openflow.Resubmit(openflow.PortInPort, 2)))
	mustAdd(t, x, 2, func(k *flow.Key, m *flow.Mask) { m.Regs[0] = 0xffff }, 10, apply(openflow.Output(openflow.PortFlood, 0)))
	for _, p := range []uint32{1, 2, 3} {
		mustAdd(t, x, 2, func(k *flow.Key, m *flow.Mask) { k.Regs[0], m.Regs[0] = p, 0xffff }, 10, apply(openflow.Output(p, 0)))
	}
}

func TestXlateLearnMAC(t *testing.T) {
	x := testBridge(t)
	macLearning(t, x, 0, 0)
	var out Out
	k := pkt(11) // A → B on port 1
	x.Translate(&k, t0, true, &out)
	if got := datapath.FormatActions(out.Actions); got != "12,0" {
		t.Errorf("first packet: %q, want flood to 12 and 0 (13 is no-flood)", got)
	}
	if out.WC.EthSrc != [6]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff} || !out.HasLearn {
		t.Errorf("megaflow eth_src %x, HasLearn %v: learn's source must be exact", out.WC.EthSrc, out.HasLearn)
	}
	if n := x.Tables.Table(10).Snapshot().Len(); n != 0 {
		t.Fatalf("table 10 has %d flows before applyLearns: a learned flow shows only to later translations", n)
	}
	v := x.Tables.Version()
	applyLearns(&out, t0)
	if x.Tables.Version() == v || x.Tables.Table(10).Snapshot().Len() != 1 {
		t.Fatalf("no flow learned")
	}
	var r *Rule
	for r = range x.Tables.Table(10).Snapshot().Rules(&matchAll) {
	}
	e := r.Value
	if r.Match.Key.EthDst != macA || r.Match.Mask.EthDst != [6]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff} ||
		r.Priority != 0x8000 || e.Cookie != 0x77 || len(e.Instructions.Apply) != 1 {
		t.Fatalf("learned %+v %+v", r.Match, e)
	}
	if a := e.Instructions.Apply[0]; a.Type != openflow.ActRegLoad || a.Field != openflow.FieldReg0 || a.NBits != 16 || a.Load != 1 {
		t.Errorf("learned action %+v, want load:1->reg0[0..15]", a)
	}
	// Learning the same again changes nothing in the tables.
	v = x.Tables.Version()
	x.Translate(&k, t0, true, &out)
	applyLearns(&out, t0.Add(time.Second))
	if x.Tables.Version() != v {
		t.Error("relearning an identical flow bumped the tables")
	}
	// B answers from port 2: learned, and it reaches A by the learned flow.
	kb := pkt(12)
	kb.EthSrc, kb.EthDst = macB, macA
	x.Translate(&kb, t0, true, &out)
	if got := datapath.FormatActions(out.Actions); got != "11" {
		t.Errorf("reply: %q, want 11", got)
	}
	applyLearns(&out, t0)
	x.Translate(&k, t0, true, &out)
	if got := datapath.FormatActions(out.Actions); got != "12" {
		t.Errorf("A → B after learning B: %q, want 12", got)
	}
	// A moves to port 3: the learned flow is modified.
	k3 := pkt(13)
	x.Translate(&k3, t0, true, &out)
	applyLearns(&out, t0)
	x.Translate(&kb, t0, true, &out)
	if got := datapath.FormatActions(out.Actions); got != "13" {
		t.Errorf("B → A after A moved: %q, want 13", got)
	}
	if n := x.Tables.Table(10).Snapshot().Len(); n != 2 {
		t.Errorf("table 10 has %d flows, want 2", n)
	}
}

var matchAll classifier.Match

func TestXlateLearnHardTimeoutRefresh(t *testing.T) {
	x := testBridge(t)
	macLearning(t, x, 0, 10)
	var out Out
	k := pkt(11)
	x.Translate(&k, t0, true, &out)
	applyLearns(&out, t0)
	x.Translate(&k, t0, true, &out)
	applyLearns(&out, t0.Add(8*time.Second)) // refresh
	if n := x.Tables.Expire(t0.Add(12 * time.Second)); n != 0 {
		t.Errorf("expired %d flows 4 s after a refresh of a 10 s hard timeout", n)
	}
	if n := x.Tables.Expire(t0.Add(19 * time.Second)); n != 1 {
		t.Errorf("expired %d flows 11 s after the refresh, want 1", n)
	}
}

func TestXlateLearnDeleteLearned(t *testing.T) {
	x := testBridge(t)
	macLearning(t, x, openflow.LearnDeleteLearned, 0)
	// An unrelated flow in table 10 with another cookie stays.
	mustAdd(t, x, 10, func(k *flow.Key, m *flow.Mask) { k.EthType, m.EthType = 0x88cc, 0xffff }, 5, apply())
	var out Out
	k := pkt(11)
	x.Translate(&k, t0, true, &out)
	applyLearns(&out, t0)
	if n := x.Tables.Table(10).Snapshot().Len(); n != 2 {
		t.Fatalf("table 10: %d flows", n)
	}
	del := FlowMod{Command: CmdDeleteStrict, Table: 0, Priority: 0x8000, OutPort: openflow.PortAny}
	if err := x.Tables.Apply(&del, t0); err != nil {
		t.Fatal(err)
	}
	if n := x.Tables.Table(10).Snapshot().Len(); n != 1 {
		t.Errorf("after deleting the learning flow table 10 has %d flows, want 1 (the learned one gone)", n)
	}
	if len(x.Tables.learned) != 0 {
		t.Errorf("learned counts left: %v", x.Tables.learned)
	}
}

func TestXlateLearnLimit(t *testing.T) {
	x := testBridge(t)
	mustAdd(t, x, 0, func(*flow.Key, *flow.Mask) {}, 0x8000, apply(
		learnAct(openflow.LearnAction{Table: 10, Priority: 1, Limit: 1, Flags: openflow.LearnWriteResult,
			ResultDst: openflow.FieldReg5, ResultOfs: 3, V2: true,
			Specs: []openflow.LearnSpec{{Dst: openflow.LearnMatch, NBits: 48, Src: openflow.FieldEthSrc, Field: openflow.FieldEthDst}}}),
		openflow.Resubmit(openflow.PortInPort, 1)))
	mustAdd(t, x, 1, func(k *flow.Key, m *flow.Mask) { k.Regs[5], m.Regs[5] = 8, 8 }, 1, apply(openflow.Output(2, 0)))
	var out Out
	k := pkt(11)
	x.Translate(&k, t0, true, &out)
	if got := datapath.FormatActions(out.Actions); got != "12" {
		t.Errorf("under the limit: %q, want 12 (result bit set)", got)
	}
	applyLearns(&out, t0)
	k.EthSrc = macB
	x.Translate(&k, t0, true, &out)
	if got := datapath.FormatActions(out.Actions); got != "drop" && got != "" {
		t.Errorf("at the limit: %q, want drop (result bit clear)", got)
	}
	applyLearns(&out, t0)
	if n := x.Tables.Table(10).Snapshot().Len(); n != 1 {
		t.Errorf("table 10: %d flows, want 1 (limit 1)", n)
	}
}

func TestCheckLearn(t *testing.T) {
	ipSrc := openflow.LearnSpec{Dst: openflow.LearnMatch, NBits: 32, Src: openflow.FieldIPv4Src, Field: openflow.FieldIPv4Dst}
	for _, c := range []struct {
		name string
		l    openflow.LearnAction
		ip   bool
		kind ErrorKind
	}{
		{"source without prerequisites", openflow.LearnAction{Specs: []openflow.LearnSpec{ipSrc}}, false, ErrMatchInconsistent},
		{"destination without prerequisites", openflow.LearnAction{Specs: []openflow.LearnSpec{ipSrc}}, true, ErrMatchInconsistent},
		{"fin timeouts", openflow.LearnAction{FinIdleTimeout: 3}, true, 0}, // xlate_fintimeout.go
		{"good", openflow.LearnAction{Specs: []openflow.LearnSpec{
			{Dst: openflow.LearnMatch, NBits: 16, Field: openflow.FieldEthType, Imm: [16]byte{14: 8}}, ipSrc}}, true, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			m := match(func(k *flow.Key, m *flow.Mask) {
				if c.ip {
					k.EthType, m.EthType = flow.EthTypeIPv4, 0xffff
				}
			})
			in := openflow.Instructions{Apply: []openflow.Action{learnAct(c.l)}}
			err := checkActions(&in, &m)
			var e *Error
			switch {
			case c.kind == 0 && err != nil:
				t.Fatalf("refused: %v", err)
			case c.kind != 0 && (!errors.As(err, &e) || e.Kind != c.kind):
				t.Fatalf("err %v, want kind %d", err, c.kind)
			}
		})
	}
}

// TestXlateAllocsWithLearnRules: flows without learn translate without
// allocating even when learn flows share the tables.
func TestXlateAllocsWithLearnRules(t *testing.T) {
	x := testBridge(t)
	macLearning(t, x, 0, 0)
	mustAdd(t, x, 0, func(k *flow.Key, m *flow.Mask) { k.EthType, m.EthType = flow.EthTypeIPv4, 0xffff }, 0x9000,
		apply(openflow.Output(2, 0)))
	out := Out{Actions: make([]byte, 0, 1024)}
	k := pkt(11)
	n := testing.AllocsPerRun(1000, func() {
		k.TpSrc++
		x.Translate(&k, t0, true, &out)
		applyLearns(&out, t0)
	})
	if n != 0 {
		t.Errorf("Translate allocates %v per packet", n)
	}
}

// TestXlateLearnOutputReg is the learn switch of ovs-actions(7): the
// learned flows load the port into reg0 and table 2 outputs to it.
func TestXlateLearnOutputReg(t *testing.T) {
	x := testBridge(t)
	mustAdd(t, x, 0, func(*flow.Key, *flow.Mask) {}, 0x8000, apply(
		learnAct(openflow.LearnAction{Table: 10, Priority: 0x8000, Specs: []openflow.LearnSpec{
			{Dst: openflow.LearnMatch, NBits: 48, Src: openflow.FieldEthSrc, Field: openflow.FieldEthDst},
			{Dst: openflow.LearnLoad, NBits: 16, Src: openflow.FieldNXMInPort, Field: openflow.FieldReg0},
		}}),
		openflow.Resubmit(openflow.PortInPort, 10), openflow.Resubmit(openflow.PortInPort, 2)))
	mustAdd(t, x, 2, func(k *flow.Key, m *flow.Mask) { m.Regs[0] = 0xffff }, 10, apply(openflow.Output(openflow.PortFlood, 0)))
	mustAdd(t, x, 2, func(*flow.Key, *flow.Mask) {}, 5, apply(openflow.Action{Type: openflow.ActOutputReg,
		Src: openflow.FieldReg0, NBits: 16, MaxLen: 0xffff}))
	var out Out
	kb := pkt(12)
	kb.EthSrc, kb.EthDst = macB, macA
	x.Translate(&kb, t0, true, &out)
	applyLearns(&out, t0)
	k := pkt(11)
	x.Translate(&k, t0, true, &out)
	if got := datapath.FormatActions(out.Actions); got != "12" {
		t.Errorf("A → B by output:reg0: %q, want 12", got)
	}
}
