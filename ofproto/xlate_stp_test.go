package ofproto

import (
	"strings"
	"testing"
	"time"

	"github.com/govswitch/govswitch/datapath"
	"github.com/govswitch/govswitch/flow"
	"github.com/govswitch/govswitch/ofproto/openflow"
	"github.com/govswitch/govswitch/ofproto/stp"
)

// stpXlator is testBridge with NORMAL, a spanning tree on, and p1..p3 in
// the given STP states.
func stpXlator(t *testing.T, states ...stp.State) *Xlator {
	t.Helper()
	x := testBridge(t)
	x.ControllerPID.Store(77)
	mustAdd(t, x, 0, func(*flow.Key, *flow.Mask) {}, 0, apply(openflow.Output(openflow.PortNormal, 0)))
	for i, s := range states {
		p := *x.Ports.Snapshot().ByOF(uint32(i + 1))
		p.STP = s
		if err := x.Ports.Add(p); err != nil {
			t.Fatal(err)
		}
	}
	x.stp.Store(&stpBridge{})
	return x
}

func TestXlateSTP(t *testing.T) {
	bcast := func(dp uint32) flow.Key {
		k := pkt(dp)
		k.EthDst = [6]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}
		return k
	}
	bpdu := flow.Key{InPort: 11, EthSrc: macA, EthDst: stp.MulticastAddr, EthType: flow.EthTypeNone}
	tests := []struct {
		name   string
		states []stp.State
		key    flow.Key
		want   string
		learns bool
	}{
		// p3 is NoFlood in testBridge: floods go to LOCAL and p1/p2.
		{"all forwarding", []stp.State{stp.Forwarding, stp.Forwarding}, bcast(11), "0,12", true},
		{"blocking output skipped", []stp.State{stp.Forwarding, stp.Blocking}, bcast(11), "0", true},
		{"listening output skipped", []stp.State{stp.Forwarding, stp.Listening}, bcast(11), "0", true},
		{"blocking input dropped", []stp.State{stp.Blocking, stp.Forwarding}, bcast(11), "", false},
		{"disabled STP port input dropped", []stp.State{stp.Disabled, stp.Forwarding}, bcast(11), "", false},
		{"learning input learns, goes nowhere", []stp.State{stp.Learning, stp.Forwarding}, bcast(11), "", true},
		{"port outside the tree forwards", []stp.State{0, stp.Blocking}, bcast(11), "0", true},
		{"BPDU to userspace", []stp.State{stp.Blocking, stp.Forwarding}, bpdu, "userspace(pid=77,slow_path(stp))", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			x := stpXlator(t, tc.states...)
			var out Out
			x.Translate(&tc.key, t0, true, &out)
			if got := datapath.FormatActions(out.Actions); got != tc.want && !(tc.want == "" && got == "drop") {
				t.Errorf("actions %s, want %s", got, tc.want)
			}
			if _, ok := x.MAC.Lookup(0, macA, t0); ok != tc.learns {
				t.Errorf("learned %v, want %v", ok, tc.learns)
			}
			if out.WC.EthDst != ones6 {
				t.Errorf("megaflow does not match the destination: %x", out.WC.EthDst)
			}
		})
	}
}

func TestXlateSTPOutputToBlockingPort(t *testing.T) {
	x := stpXlator(t, stp.Forwarding, stp.Blocking)
	mustAdd(t, x, 0, func(k *flow.Key, m *flow.Mask) { k.InPort, m.InPort = 1, ^uint32(0) }, 10,
		apply(openflow.Output(2, 0), openflow.Output(openflow.PortLocal, 0)))
	k := pkt(11)
	var out Out
	x.Translate(&k, t0, true, &out)
	if got := datapath.FormatActions(out.Actions); got != "0" {
		t.Errorf("output:2 (blocking),LOCAL gives %s, want 0", got)
	}
}

func TestXlateSTPAllocs(t *testing.T) {
	x := stpXlator(t, stp.Forwarding, stp.Forwarding)
	out := Out{Actions: make([]byte, 0, 1024)}
	k := pkt(11)
	now := t0
	if n := testing.AllocsPerRun(1000, func() {
		k.TpSrc++
		now = now.Add(time.Millisecond)
		x.Translate(&k, now, true, &out)
	}); n != 0 {
		t.Errorf("Translate on an STP bridge allocates %v per packet", n)
	}
}

func TestSTPCookie(t *testing.T) {
	if !isSTPCookie(stpCookie[:]) || isSTPCookie(stpCookie[:40]) {
		t.Fatal("isSTPCookie")
	}
	var acts []byte
	acts = datapath.AppendUserspace(acts, 9, stpCookie[:])
	if got := datapath.FormatActions(acts); !strings.Contains(got, "slow_path(stp)") {
		t.Errorf("format %s", got)
	}
}

func TestSTPPortState10(t *testing.T) {
	for _, c := range []struct {
		s    stp.State
		v    uint8
		want uint32
	}{
		{0, openflow.Version10, 0}, {stp.Listening, openflow.Version10, 0}, {stp.Learning, openflow.Version10, 1 << 8},
		{stp.Forwarding, openflow.Version10, 2 << 8}, {stp.Blocking, openflow.Version10, 3 << 8},
		{stp.Blocking, openflow.Version13, 0},
	} {
		p := Port{OFPort: 1, STP: c.s}
		if op, _ := ofPort(&p, c.v); op.State != c.want {
			t.Errorf("%v in version %d: state %#x, want %#x", c.s, c.v, op.State, c.want)
		}
	}
}
