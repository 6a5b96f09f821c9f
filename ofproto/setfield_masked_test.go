package ofproto

import (
	"fmt"
	"net"
	"testing"

	"github.com/govswitch/govswitch/datapath"
	"github.com/govswitch/govswitch/flow"
	"github.com/govswitch/govswitch/ofproto/openflow"
)

// TestOfctlMaskedSetField: OpenFlow 1.5's masked set_field, added with
// the real ovs-ofctl as ovn-controller sends it (register bits, ct_mark
// and ct_label bits inside ct()), dumps over 1.5 as set_field and over
// 1.3 and 1.0 as NXAST_REG_LOADs, one per run of mask bits: the text
// ovs-vswitchd 3.1 gives for the same flows (captured from ovs-vswitchd
// --enable-dummy).
func TestOfctlMaskedSetField(t *testing.T) {
	needTool(t, "ovs-ofctl")
	s := newTestSwitch(t, 2, BridgeConfig{FailMode: FailSecure}, ConnConfig{})
	of15 := []string{"-O", "OpenFlow15"}
	for _, f := range []string{
		"priority=5,actions=set_field:0x5/0x5->reg0,set_field:0/0x1000->reg10,load:1->NXM_NX_REG10[0],resubmit(,1)",
		"table=1,ip,reg0=0x5/0x5,actions=ct(commit,zone=NXM_NX_REG13[0..15],exec(set_field:0/0x1->ct_mark,set_field:0x1000000000000/0xffff000000000000->ct_label)),output:1",
	} {
		s.ofctl(t, of15, "add-flow", f)
	}
	s.checkDumpFlows(t, []ofctlDump{
		{of15, `OFPST_FLOW reply (OF1.5) (xid=0x2):
 cookie=0x0, table=0, n_packets=0, n_bytes=0, priority=5 actions=set_field:0x5/0x5->reg0,set_field:0/0x1000->reg10,set_field:0x1/0x1->reg10,resubmit(,1)
 cookie=0x0, table=1, n_packets=0, n_bytes=0, ip,reg0=0x5/0x5 actions=ct(commit,zone=NXM_NX_REG13[0..15],exec(set_field:0/0x1->ct_mark,set_field:0x1000000000000/0xffff000000000000->ct_label)),output:1
`},
		{[]string{"-O", "OpenFlow13"}, `OFPST_FLOW reply (OF1.3) (xid=0x2):
 cookie=0x0, table=0, n_packets=0, n_bytes=0, priority=5 actions=load:0x1->NXM_NX_REG0[0],load:0x1->NXM_NX_REG0[2],load:0->NXM_NX_REG10[12],load:0x1->NXM_NX_REG10[0],resubmit(,1)
 cookie=0x0, table=1, n_packets=0, n_bytes=0, ip,reg0=0x5/0x5 actions=ct(commit,zone=NXM_NX_REG13[0..15],exec(load:0->NXM_NX_CT_MARK[0],load:0x1->NXM_NX_CT_LABEL[48..63])),output:1
`},
		{nil, `NXST_FLOW reply (xid=0x4):
 cookie=0x0, table=0, n_packets=0, n_bytes=0, priority=5 actions=load:0x1->NXM_NX_REG0[0],load:0x1->NXM_NX_REG0[2],load:0->NXM_NX_REG10[12],load:0x1->NXM_NX_REG10[0],resubmit(,1)
 cookie=0x0, table=1, n_packets=0, n_bytes=0, ip,reg0=0x5/0x5 actions=ct(commit,zone=NXM_NX_REG13[0..15],exec(load:0->NXM_NX_CT_MARK[0],load:0x1->NXM_NX_CT_LABEL[48..63])),output:1
`},
	}...)
}

func maskedSet(f openflow.Field, value, mask []byte) openflow.Action {
	a := openflow.Action{Type: openflow.ActSetField, Field: f, Masked: true}
	copy(a.Value[:], value)
	copy(a.Mask[:], mask)
	return a
}

// TestXlateMaskedSetField: a masked set_field changes only its mask's
// bits, of a register (which a later table matches) and of a packet field
// (the datapath's set then writes the field as the packet now has it).
func TestXlateMaskedSetField(t *testing.T) {
	x := testBridge(t)
	// reg0 starts 0xf0f0: bits 0..3 become 0x5, the rest stay.
	mustAdd(t, x, 0, func(*flow.Key, *flow.Mask) {}, 5, apply(
		openflow.Action{Type: openflow.ActRegLoad, Field: openflow.FieldReg0, NBits: 32, Load: 0xf0f0},
		maskedSet(openflow.FieldReg0, []byte{3: 0x05}, []byte{3: 0x0f}),
		maskedSet(openflow.FieldEthDst, []byte{5: 0x01}, []byte{5: 0xff}),
		openflow.Resubmit(openflow.PortInPort, 1)))
	mustAdd(t, x, 1, func(k *flow.Key, m *flow.Mask) { k.Regs[0], m.Regs[0] = 0xf0f5, ^uint32(0) }, 5,
		apply(openflow.Output(2, 0)))
	k := pkt(11)
	dst := k.EthDst
	dst[5] = 0x01
	var out Out
	x.Translate(&k, t0, true, &out)
	want := fmt.Sprintf("set(eth(dst=%s)),12", net.HardwareAddr(dst[:]))
	if got := datapath.FormatActions(out.Actions); got != want {
		t.Errorf("actions %q, want %q (dropped %q)", got, want, out.Dropped)
	}
	// Only the written byte of eth_dst becomes exact in the megaflow.
	if out.WC.EthDst != [6]byte{5: 0xff} {
		t.Errorf("megaflow eth_dst mask %x, want the masked set_field's 0000000000ff", out.WC.EthDst)
	}
}

// TestXlateCtMaskedSetField: masked set_fields of ct_mark and ct_label
// inside ct() become the ct action's mark and labels under their masks.
func TestXlateCtMaskedSetField(t *testing.T) {
	x := testBridge(t)
	ct := openflow.CtAction{Flags: openflow.CtCommit, Table: openflow.CtNoRecirc, Actions: []openflow.Action{
		maskedSet(openflow.FieldCtMark, []byte{3: 0x2}, []byte{3: 0x3}),
		maskedSet(openflow.FieldCtLabel, []byte{9: 1}, []byte{8: 0xff, 9: 0xff}),
	}}
	mustAdd(t, x, 0, func(k *flow.Key, m *flow.Mask) { k.EthType, m.EthType = flow.EthTypeIPv4, 0xffff }, 1,
		apply(ctAct(ct), openflow.Output(2, 0)))
	k := pkt(11)
	var out Out
	x.Translate(&k, t0, true, &out)
	want := "ct(commit,mark=0x2/0x3,label=0x1000000000000/0xffff000000000000),12"
	if got := datapath.FormatActions(out.Actions); got != want {
		t.Errorf("actions %q, want %q", got, want)
	}
}

// TestApplyMaskedSetFieldAllocs: the masked set on the translation path
// (which keeps a scratch buffer) allocates nothing.
func TestApplyMaskedSetFieldAllocs(t *testing.T) {
	a := maskedSet(openflow.FieldXXReg1, []byte{15: 1}, []byte{8: 0xff, 15: 1})
	b := maskedSet(openflow.FieldEthDst, []byte{5: 1}, []byte{5: 0xff})
	var k flow.Key
	var scratch [16]byte
	if n := testing.AllocsPerRun(100, func() { a.ApplySetFieldScratch(&k, &scratch); b.ApplySetFieldScratch(&k, &scratch) }); n != 0 {
		t.Errorf("%v allocations per masked set_field", n)
	}
}
