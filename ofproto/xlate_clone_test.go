package ofproto

import (
	"testing"

	"github.com/govswitch/govswitch/datapath"
	"github.com/govswitch/govswitch/flow"
	"github.com/govswitch/govswitch/ofproto/openflow"
)

func setEthDst(mac [6]byte) openflow.Action {
	a := openflow.Action{Type: openflow.ActSetField, Field: openflow.FieldEthDst}
	copy(a.Value[:], mac[:])
	return a
}

func TestXlateClone(t *testing.T) {
	macC := [6]byte{0x50, 0x54, 0, 0, 0, 0x0a}
	ct := openflow.Action{Type: openflow.ActCT, Ct: &openflow.CtAction{Flags: openflow.CtCommit, Table: openflow.CtNoRecirc}}
	tests := []struct {
		name string
		acts []openflow.Action
		want string
	}{
		// Reversible: no datapath clone; the output after the clone
		// sees the packet as it was, restored by a set action.
		{"reversible", []openflow.Action{
			{Type: openflow.ActClone, Nested: []openflow.Action{setEthDst(macC), openflow.Output(2, 0)}},
			openflow.Output(3, 0)},
			"set(eth(dst=50:54:00:00:00:0a)),12,set(eth(dst=02:00:00:00:00:0b)),13"},
		// A clone with no output changes nothing: test 30's first flow.
		{"no output", []openflow.Action{
			{Type: openflow.ActClone, Nested: []openflow.Action{setEthDst(macC)}}, openflow.Output(2, 0)},
			"12"},
		{"empty", []openflow.Action{{Type: openflow.ActClone, Nested: []openflow.Action{}}, openflow.Output(2, 0)}, "12"},
		// Conntrack cannot be undone: a datapath clone, committed
		// before, with the base restored after.
		{"ct", []openflow.Action{setEthDst(macC),
			{Type: openflow.ActClone, Nested: []openflow.Action{ct, openflow.Output(2, 0)}},
			openflow.Output(3, 0)},
			"set(eth(dst=50:54:00:00:00:0a)),clone(ct(commit),12),13"},
		{"nested", []openflow.Action{
			{Type: openflow.ActClone, Nested: []openflow.Action{setEthDst(macC),
				{Type: openflow.ActClone, Nested: []openflow.Action{ct}}}},
			openflow.Output(2, 0)},
			"set(eth(dst=50:54:00:00:00:0a)),clone(ct(commit)),set(eth(dst=02:00:00:00:00:0b)),12"},
		{"trunc", []openflow.Action{
			{Type: openflow.ActOutputTrunc, Port: 2, TruncLen: 100}, openflow.Output(3, 0),
			{Type: openflow.ActOutputTrunc, Port: 1, TruncLen: 100}, // the input port: nothing
			{Type: openflow.ActOutputTrunc, Port: openflow.PortFlood, TruncLen: 100}},
			"trunc(100),12,13"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			x := testBridge(t)
			if err := checkSupported(tc.acts); err != nil {
				t.Fatal(err)
			}
			mustAdd(t, x, 0, func(k *flow.Key, m *flow.Mask) {}, 1, apply(tc.acts...))
			out := translate(x, pkt(11))
			if got := datapath.FormatActions(out.Actions); got != tc.want {
				t.Errorf("actions %s\n         want %s", got, tc.want)
			}
		})
	}
}

func TestXlateCheckPktLarger(t *testing.T) {
	x := testBridge(t)
	cpl := openflow.Action{Type: openflow.ActCheckPktLarger, MaxLen: 200, Field: openflow.FieldReg0, Ofs: 3, NBits: 1}
	// Table 0: the check, then a resubmit to table 1 and a goto to
	// table 2, both of which branch on the bit, then an output after the
	// resubmit's caller (in table 3's resubmit).
	mustAdd(t, x, 0, func(k *flow.Key, m *flow.Mask) {}, 1, openflow.Instructions{
		Apply: []openflow.Action{openflow.Resubmit(openflow.PortInPort, 3), openflow.Output(1, 0)}})
	mustAdd(t, x, 3, func(k *flow.Key, m *flow.Mask) {}, 1, openflow.Instructions{
		Apply:     []openflow.Action{cpl, openflow.Resubmit(openflow.PortInPort, 1)},
		GotoTable: true, Table: 4})
	big := func(k *flow.Key, m *flow.Mask) { k.Regs[0], m.Regs[0] = 8, 8 }
	mustAdd(t, x, 1, big, 10, apply(openflow.Output(2, 0)))
	mustAdd(t, x, 1, func(k *flow.Key, m *flow.Mask) {}, 1, apply(openflow.Output(3, 0)))
	mustAdd(t, x, 4, big, 10, apply(openflow.Output(openflow.PortLocal, 0)))
	out := translate(x, pkt(11))
	// The output to port 1 after the resubmit runs once, after the
	// check (its caller goes on), and outputs nothing: it is the input
	// port.
	want := "check_pkt_len(size=200,gt(12,0),le(13))"
	if got := datapath.FormatActions(out.Actions); got != want {
		t.Errorf("actions %s\n         want %s", got, want)
	}
	// A list after the check inside a clone stops at the clone's end.
	x2 := testBridge(t)
	mustAdd(t, x2, 0, func(k *flow.Key, m *flow.Mask) {}, 1, apply(
		openflow.Action{Type: openflow.ActClone, Nested: []openflow.Action{cpl, openflow.Output(2, 0)}},
		openflow.Output(3, 0)))
	out = translate(x2, pkt(11))
	want = "check_pkt_len(size=200,gt(12),le(12)),13"
	if got := datapath.FormatActions(out.Actions); got != want {
		t.Errorf("in a clone: actions %s\n         want %s", got, want)
	}
}

func TestXlateCloneAllocs(t *testing.T) {
	x := testBridge(t)
	ct := openflow.Action{Type: openflow.ActCT, Ct: &openflow.CtAction{Flags: openflow.CtCommit, Table: openflow.CtNoRecirc}}
	mustAdd(t, x, 0, func(k *flow.Key, m *flow.Mask) {}, 1, apply(
		openflow.Action{Type: openflow.ActClone, Nested: []openflow.Action{setEthDst(macA), ct, openflow.Output(2, 0)}},
		openflow.Action{Type: openflow.ActOutputTrunc, Port: 2, TruncLen: 100},
		openflow.Action{Type: openflow.ActCheckPktLarger, MaxLen: 200, Field: openflow.FieldReg0, NBits: 1},
		openflow.Output(3, 0)))
	k := pkt(11)
	var out Out
	x.Translate(&k, t0, false, &out)
	if n := testing.AllocsPerRun(100, func() { x.Translate(&k, t0, false, &out) }); n != 0 {
		t.Errorf("%v allocations per translation", n)
	}
}
