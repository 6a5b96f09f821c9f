package ofproto

import (
	"fmt"
	"net"
	"strings"
	"testing"

	"github.com/govswitch/govswitch/datapath"
	"github.com/govswitch/govswitch/flow"
	"github.com/govswitch/govswitch/ofproto/openflow"
)

// TestOfctlStack adds, with the real ovs-ofctl, the push/pop flows
// ovn-controller installs (its ARP responder swaps the Ethernet and IP
// addresses through the stack) and holds what dump-flows prints to what
// was added, in OpenFlow 1.5 and 1.0; a push whose field the match does
// not provide, and a pop into a field the switch cannot write, are refused.
func TestOfctlStack(t *testing.T) {
	needTool(t, "ovs-ofctl")
	s := newTestSwitch(t, 2, BridgeConfig{FailMode: FailSecure}, ConnConfig{})
	acts := "push:NXM_OF_ETH_SRC[],push:NXM_OF_ETH_DST[],pop:NXM_OF_ETH_SRC[],pop:NXM_OF_ETH_DST[],push:NXM_NX_REG0[8..15],pop:NXM_NX_XXREG1[100..107],output:2"
	s.ofctl(t, []string{"-O", "OpenFlow15"}, "add-flow", "priority=8,actions="+acts)
	s.ofctl(t, nil, "add-flow", "table=1,arp,actions=push:NXM_OF_ARP_SPA[],push:NXM_OF_ARP_TPA[],pop:NXM_NX_REG1[],pop:NXM_NX_REG2[]")
	for _, opts := range [][]string{{"-O", "OpenFlow15"}, nil} {
		out := s.ofctl(t, opts, "dump-flows")
		for _, want := range []string{"priority=8 actions=" + acts,
			"arp actions=push:NXM_OF_ARP_SPA[],push:NXM_OF_ARP_TPA[],pop:NXM_NX_REG1[],pop:NXM_NX_REG2[]"} {
			if !strings.Contains(out, want) {
				t.Errorf("dump-flows %v lacks %q:\n%s", opts, want, out)
			}
		}
	}
	if out, err := s.ofctlErr(nil, "add-flow", "table=2,actions=push:NXM_OF_ARP_SPA[]"); err == nil {
		t.Errorf("push of arp_spa without an arp match was accepted:\n%s", out)
	}
	// The IPv6 flow label is rewritten, so it can be popped into.
	if out, err := s.ofctlErr(nil, "add-flow", "table=2,ipv6,actions=pop:NXM_NX_IPV6_LABEL[]"); err != nil {
		t.Errorf("pop into ipv6_label was refused: %v\n%s", err, out)
	}
}

// TestXlateStack swaps the Ethernet addresses through the stack, as
// ovn-controller's ARP responder does: the packet leaves with them
// swapped, both join the megaflow, and popping an empty stack drops.
func TestXlateStack(t *testing.T) {
	x := testBridge(t)
	st := func(typ openflow.ActionType, f openflow.Field, ofs, n uint16) openflow.Action {
		return openflow.Action{Type: typ, Field: f, Ofs: ofs, NBits: n}
	}
	mustAdd(t, x, 0, func(*flow.Key, *flow.Mask) {}, 5, apply(
		st(openflow.ActStackPush, openflow.FieldEthSrc, 0, 48), st(openflow.ActStackPush, openflow.FieldEthDst, 0, 48),
		st(openflow.ActStackPop, openflow.FieldEthSrc, 0, 48), st(openflow.ActStackPop, openflow.FieldEthDst, 0, 48),
		// The low byte of reg0 into the high byte of reg1.
		openflow.Action{Type: openflow.ActRegLoad, Field: openflow.FieldReg0, NBits: 8, Load: 0xab},
		st(openflow.ActStackPush, openflow.FieldReg0, 0, 8), st(openflow.ActStackPop, openflow.FieldReg1, 24, 8),
		openflow.Resubmit(openflow.PortInPort, 1)))
	mustAdd(t, x, 1, func(k *flow.Key, m *flow.Mask) { k.Regs[1], m.Regs[1] = 0xab000000, ^uint32(0) }, 5,
		apply(openflow.Output(2, 0)))
	k := pkt(11)
	var out Out
	x.Translate(&k, t0, true, &out)
	want := fmt.Sprintf("set(eth(src=%s,dst=%s)),12", net.HardwareAddr(k.EthDst[:]), net.HardwareAddr(k.EthSrc[:]))
	if got := datapath.FormatActions(out.Actions); got != want {
		t.Errorf("actions %q, want %q (dropped %q)", got, want, out.Dropped)
	}
	ones := [6]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}
	if out.WC.EthSrc != ones || out.WC.EthDst != ones {
		t.Errorf("megaflow lacks the pushed fields: eth_src %x eth_dst %x", out.WC.EthSrc, out.WC.EthDst)
	}
	if n := testing.AllocsPerRun(100, func() { x.Translate(&k, t0, true, &out) }); n != 0 {
		t.Errorf("translation with push and pop allocates %.0f times", n)
	}

	y := testBridge(t)
	mustAdd(t, y, 0, func(*flow.Key, *flow.Mask) {}, 5, apply(st(openflow.ActStackPop, openflow.FieldReg0, 0, 32), openflow.Output(2, 0)))
	y.Translate(&k, t0, true, &out)
	if len(out.Actions) != 0 || out.Dropped == "" {
		t.Errorf("pop from an empty stack: actions %q, dropped %q", datapath.FormatActions(out.Actions), out.Dropped)
	}
}
