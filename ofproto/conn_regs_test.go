package ofproto

import (
	"strings"
	"testing"

	"github.com/govswitch/govswitch/datapath"
	"github.com/govswitch/govswitch/flow"
	"github.com/govswitch/govswitch/ofproto/openflow"
)

// TestOfctlRegisters adds, with the real ovs-ofctl, flows that set, load
// and match registers as OVN does (reg, xreg, xxreg, metadata), and holds
// what dump-flows prints in 1.3 and 1.0 against what it prints for
// ovs-vswitchd 3.1 given the same flows (captured in the kernel test bed;
// ovs-vswitchd's NORMAL default flow left out).
func TestOfctlRegisters(t *testing.T) {
	needTool(t, "ovs-ofctl")
	s := newTestSwitch(t, 2, BridgeConfig{FailMode: FailSecure}, ConnConfig{})
	of13 := []string{"-O", "OpenFlow13"}
	for _, f := range []string{
		"priority=5,actions=set_field:0x1->xreg1,resubmit(,1)",
		"table=1,priority=6,xreg1=0x1,actions=set_field:0xa000000000000000000000000000001->xxreg0,output:1",
		"table=1,priority=7,xxreg1=0x10000000200000003/0xffffffffffffffffffffffff,actions=drop",
		"table=2,metadata=0x7,actions=load:0x3->NXM_NX_REG2[0..7],load:0x1->NXM_NX_XXREG1[64..95],load:5->OXM_OF_PKT_REG2[]",
	} {
		s.ofctl(t, of13, "add-flow", f)
	}
	s.checkDumpFlows(t, []ofctlDump{
		{of13, `OFPST_FLOW reply (OF1.3) (xid=0x2):
 cookie=0x0, table=0, n_packets=0, n_bytes=0, priority=5 actions=set_field:0x1->xreg1,resubmit(,1)
 cookie=0x0, table=1, n_packets=0, n_bytes=0, priority=7,reg5=0x1,reg6=0x2,reg7=0x3 actions=drop
 cookie=0x0, table=1, n_packets=0, n_bytes=0, priority=6,reg2=0,reg3=0x1 actions=set_field:0xa000000000000000000000000000001->xxreg0,output:1
 cookie=0x0, table=2, n_packets=0, n_bytes=0, metadata=0x7 actions=load:0x3->NXM_NX_REG2[0..7],load:0x1->NXM_NX_XXREG1[64..95],load:0x5->OXM_OF_PKT_REG2[]
`},
		{nil, `NXST_FLOW reply (xid=0x4):
 cookie=0x0, table=0, n_packets=0, n_bytes=0, priority=5 actions=load:0x1->OXM_OF_PKT_REG1[],resubmit(,1)
 cookie=0x0, table=1, n_packets=0, n_bytes=0, priority=7,reg5=0x1,reg6=0x2,reg7=0x3 actions=drop
 cookie=0x0, table=1, n_packets=0, n_bytes=0, priority=6,reg2=0,reg3=0x1 actions=load:0x1->NXM_NX_XXREG0[0..63],load:0xa00000000000000->NXM_NX_XXREG0[64..127],output:1
 cookie=0x0, table=2, n_packets=0, n_bytes=0, metadata=0x7 actions=load:0x3->NXM_NX_REG2[0..7],load:0x1->NXM_NX_XXREG1[64..95],load:0x5->OXM_OF_PKT_REG2[]
`},
	}...)
}

// TestXlateRegisters runs a packet through register writes and matches:
// registers are pipeline metadata that later tables read, never datapath
// fields.
func TestXlateRegisters(t *testing.T) {
	x := testBridge(t)
	var xreg1, xxreg0 [16]byte
	xreg1[7] = 1
	xxreg0[0], xxreg0[15] = 0x0a, 1
	setX := openflow.Action{Type: openflow.ActSetField, Field: openflow.FieldXReg1, Value: xreg1}
	setXX := openflow.Action{Type: openflow.ActSetField, Field: openflow.FieldXXReg0, Value: xxreg0}
	load := openflow.Action{Type: openflow.ActRegLoad, Field: openflow.FieldXXReg1, Ofs: 64, NBits: 32, Load: 7}
	mustAdd(t, x, 0, func(*flow.Key, *flow.Mask) {}, 5, apply(setX, setXX, load, openflow.Resubmit(openflow.PortInPort, 1)))
	// xreg1=1 is reg2=0,reg3=1; xxreg0=0x0a00…01 is reg0=0x0a000000 and
	// reg3=1 (again); xxreg1[64..95] is reg5.
	mustAdd(t, x, 1, func(k *flow.Key, m *flow.Mask) {
		k.Regs[0], k.Regs[2], k.Regs[3], k.Regs[5] = 0x0a000000, 0, 1, 7
		m.Regs[0], m.Regs[2], m.Regs[3], m.Regs[5] = ^uint32(0), ^uint32(0), ^uint32(0), ^uint32(0)
	}, 5, apply(openflow.Output(2, 0)))
	k := pkt(11)
	var out Out
	x.Translate(&k, t0, true, &out)
	if got := datapath.FormatActions(out.Actions); got != "12" {
		t.Errorf("actions %q, want 12 (dropped %q)", got, out.Dropped)
	}
}

// TestOfctlMove: move (NXAST_REG_MOVE) between registers and packet
// fields, added with the real ovs-ofctl over 1.3 and 1.0; dump-flows is
// held against ovs-vswitchd 3.1's for the same flows (captured in the
// bed).
func TestOfctlMove(t *testing.T) {
	needTool(t, "ovs-ofctl")
	s := newTestSwitch(t, 2, BridgeConfig{FailMode: FailSecure}, ConnConfig{})
	s.ofctl(t, []string{"-O", "OpenFlow13"}, "add-flow", "priority=8,reg3=0x5,actions=move:NXM_NX_REG0[]->NXM_NX_REG1[],move:NXM_NX_XXREG0[0..63]->OXM_OF_PKT_REG3[],move:NXM_NX_REG14[0..15]->NXM_NX_REG15[16..31],resubmit(,1)")
	s.ofctl(t, []string{"-O", "OpenFlow13"}, "add-flow", "table=1,priority=9,actions=move:NXM_OF_ETH_SRC[]->NXM_OF_ETH_DST[],set_field:0x7->metadata,output:1")
	s.ofctl(t, nil, "add-flow", "table=2,ip,actions=move:NXM_OF_IP_SRC[]->NXM_NX_REG0[],move:NXM_NX_REG1[0..7]->NXM_OF_IP_DST[24..31]")
	s.checkDumpFlows(t, []ofctlDump{
		{[]string{"-O", "OpenFlow13"}, `OFPST_FLOW reply (OF1.3) (xid=0x2):
 cookie=0x0, table=0, n_packets=0, n_bytes=0, priority=8,reg3=0x5 actions=move:NXM_NX_REG0[]->NXM_NX_REG1[],move:NXM_NX_XXREG0[0..63]->OXM_OF_PKT_REG3[],move:NXM_NX_REG14[0..15]->NXM_NX_REG15[16..31],resubmit(,1)
 cookie=0x0, table=1, n_packets=0, n_bytes=0, priority=9 actions=move:NXM_OF_ETH_SRC[]->NXM_OF_ETH_DST[],set_field:0x7->metadata,output:1
 cookie=0x0, table=2, n_packets=0, n_bytes=0, reset_counts ip actions=move:NXM_OF_IP_SRC[]->NXM_NX_REG0[],move:NXM_NX_REG1[0..7]->NXM_OF_IP_DST[24..31]
`},
		{nil, `NXST_FLOW reply (xid=0x4):
 cookie=0x0, table=0, n_packets=0, n_bytes=0, priority=8,reg3=0x5 actions=move:NXM_NX_REG0[]->NXM_NX_REG1[],move:NXM_NX_XXREG0[0..63]->OXM_OF_PKT_REG3[],move:NXM_NX_REG14[0..15]->NXM_NX_REG15[16..31],resubmit(,1)
 cookie=0x0, table=1, n_packets=0, n_bytes=0, priority=9 actions=move:NXM_OF_ETH_SRC[]->NXM_OF_ETH_DST[],load:0x7->OXM_OF_METADATA[],output:1
 cookie=0x0, table=2, n_packets=0, n_bytes=0, ip actions=move:NXM_OF_IP_SRC[]->NXM_NX_REG0[],move:NXM_NX_REG1[0..7]->NXM_OF_IP_DST[24..31]
`},
	}...)
}

// TestXlateMove: a move between registers feeds a later match, and a
// move from a packet field rewrites the packet and puts the source into
// the megaflow.
func TestXlateMove(t *testing.T) {
	x := testBridge(t)
	mv := func(src openflow.Field, srcOfs uint16, dst openflow.Field, ofs, n uint16) openflow.Action {
		return openflow.Action{Type: openflow.ActRegMove, Src: src, SrcOfs: srcOfs, Field: dst, Ofs: ofs, NBits: n}
	}
	// ip_dst's low byte (2) into reg7[8..15], then reg7 into xreg1's low
	// half (reg3).
	ip := func(k *flow.Key, m *flow.Mask) { k.EthType, m.EthType = flow.EthTypeIPv4, 0xffff }
	mustAdd(t, x, 0, ip, 5, apply(mv(openflow.FieldIPv4Dst, 0, openflow.FieldReg7, 8, 8),
		mv(openflow.FieldReg7, 0, openflow.FieldXReg1, 0, 32), openflow.Resubmit(openflow.PortInPort, 1)))
	mustAdd(t, x, 1, func(k *flow.Key, m *flow.Mask) { k.Regs[3], m.Regs[3] = 0x200, ^uint32(0) }, 5,
		apply(mv(openflow.FieldEthSrc, 0, openflow.FieldEthDst, 0, 48), openflow.Output(2, 0)))
	k := pkt(11)
	var out Out
	x.Translate(&k, t0, true, &out)
	want := "set(eth(dst=02:00:00:00:00:0a)),12"
	if got := datapath.FormatActions(out.Actions); got != want {
		t.Errorf("actions %q, want %q (dropped %q)", got, want, out.Dropped)
	}
	if out.WC.EthSrc != [6]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff} || out.WC.IPv4Dst != [4]byte{0xff, 0xff, 0xff, 0xff} {
		t.Errorf("megaflow lacks the move sources: eth_src %x ip_dst %x", out.WC.EthSrc, out.WC.IPv4Dst)
	}
}

// ofctlDump is what ovs-ofctl dump-flows with opts prints.
type ofctlDump struct {
	opts []string
	want string
}

// checkDumpFlows runs ovs-ofctl dump-flows with each dump's options and
// holds its output, durations and ages left out, to the one ovs-vswitchd
// 3.1 printed.
func (s *testSwitch) checkDumpFlows(t *testing.T, dumps ...ofctlDump) {
	t.Helper()
	for _, tc := range dumps {
		got := durations.ReplaceAllString(s.ofctl(t, tc.opts, "dump-flows"), "")
		if got != tc.want {
			t.Errorf("ovs-ofctl %s dump-flows:\n%s\nwant (ovs-vswitchd 3.1):\n%s", strings.Join(tc.opts, " "), got, tc.want)
		}
	}
}
