package ofproto

import (
	"testing"

	"github.com/govswitch/govswitch/datapath"
	"github.com/govswitch/govswitch/flow"
	"github.com/govswitch/govswitch/ofproto/openflow"
	"github.com/govswitch/govswitch/ofproto/rstp"
	"github.com/govswitch/govswitch/ofproto/stp"
)

// rstpXlator is testBridge with NORMAL, a rapid spanning tree on, and
// p1..p3 in the given RSTP states.
func rstpXlator(t *testing.T, states ...rstp.State) *Xlator {
	t.Helper()
	x := testBridge(t)
	x.ControllerPID.Store(77)
	mustAdd(t, x, 0, func(*flow.Key, *flow.Mask) {}, 0, apply(openflow.Output(openflow.PortNormal, 0)))
	for i, s := range states {
		p := *x.Ports.Snapshot().ByOF(uint32(i + 1))
		p.RSTP = s
		if err := x.Ports.Add(p); err != nil {
			t.Fatal(err)
		}
	}
	x.rstp.Store(&rstpBridge{})
	return x
}

func TestXlateRSTP(t *testing.T) {
	bcast := func(dp uint32) flow.Key {
		k := pkt(dp)
		k.EthDst = [6]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}
		return k
	}
	bpdu := flow.Key{InPort: 11, EthSrc: macA, EthDst: stp.MulticastAddr, EthType: flow.EthTypeNone}
	tests := []struct {
		name   string
		states []rstp.State
		key    flow.Key
		want   string
		learns bool
	}{
		// p3 is NoFlood in testBridge: floods go to LOCAL and p1/p2.
		{"all forwarding", []rstp.State{rstp.Forwarding, rstp.Forwarding}, bcast(11), "0,12", true},
		{"discarding output skipped", []rstp.State{rstp.Forwarding, rstp.Discarding}, bcast(11), "0", true},
		{"discarding input dropped", []rstp.State{rstp.Discarding, rstp.Forwarding}, bcast(11), "", false},
		{"learning input learns, goes nowhere", []rstp.State{rstp.Learning, rstp.Forwarding}, bcast(11), "", true},
		{"port outside the tree forwards", []rstp.State{rstp.Disabled, rstp.Discarding}, bcast(11), "0", true},
		{"BPDU to userspace, not to NORMAL", []rstp.State{rstp.Forwarding, rstp.Forwarding}, bpdu,
			"userspace(pid=77,slow_path(stp))", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			x := rstpXlator(t, tc.states...)
			var out Out
			x.Translate(&tc.key, t0, true, &out)
			if got := datapath.FormatActions(out.Actions); got != tc.want && !(tc.want == "" && got == "drop") {
				t.Errorf("actions %s, want %s", got, tc.want)
			}
			if _, ok := x.MAC.Lookup(0, macA, t0); ok != tc.learns {
				t.Errorf("learned %v, want %v", ok, tc.learns)
			}
		})
	}
}

func TestRSTPPortState10(t *testing.T) {
	for _, c := range []struct {
		s    rstp.State
		want uint32
	}{
		{rstp.Disabled, 0}, {rstp.Discarding, 0}, {rstp.Learning, 1 << 8}, {rstp.Forwarding, 2 << 8},
	} {
		p := Port{OFPort: 1, RSTP: c.s}
		if op, _ := ofPort(&p, openflow.Version10); op.State != c.want {
			t.Errorf("%v: state %#x, want %#x", c.s, op.State, c.want)
		}
	}
}
