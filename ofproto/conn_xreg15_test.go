package ofproto

import (
	"bytes"
	"encoding/hex"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/govswitch/govswitch/datapath"
	"github.com/govswitch/govswitch/flow"
	"github.com/govswitch/govswitch/ofproto/openflow"
)

// TestOfctlXRegs15PacketOut: a 1.5 packet-out's match starts the
// pipeline with its registers (ovs-ofctl carries reg and xreg there as
// OXM_OF_PKT_REG pairs), so a resubmit finds the flow that matches them;
// without them the packet finds nothing. ovs-ofctl drops them below 1.5.
// The rule found counts the packet.
func TestOfctlXRegs15PacketOut(t *testing.T) {
	needTool(t, "ovs-ofctl")
	s := newTestSwitch(t, 2, BridgeConfig{FailMode: FailSecure}, ConnConfig{})
	of15 := []string{"-O", "OpenFlow15"}
	s.ofctl(t, of15, "add-flow", "table=1,reg12=0x7,reg15=0x8000,metadata=0x9,actions=output:2")
	fr := frame(7, 8)
	pkt := " packet=" + hex.EncodeToString(fr) + " actions=resubmit(,1)"
	s.ofctl(t, of15, "packet-out", "in_port=1,reg15=0x8000,xreg6=0x700000000,metadata=0x9"+pkt)
	if got, err := s.devs["p2"].Recv(2 * time.Second); err != nil || !bytes.Equal(got, fr) {
		t.Errorf("1.5 packet-out with registers: p2 got % x (%v), want % x", got, err, fr)
	}
	// The rule the resubmit ran counts the packet, as ovs-vswitchd's does.
	if out := s.ofctl(t, of15, "dump-flows"); !strings.Contains(out, "n_packets=1,") {
		t.Errorf("the resubmitted rule did not count the packet-out:\n%s", out)
	}
	for _, tc := range []struct {
		opts  []string
		match string
	}{
		{of15, "in_port=1,reg15=0x8000,xreg6=0x800000000,metadata=0x9"}, // reg12 wrong
		{[]string{"-O", "OpenFlow13"}, "in_port=1,reg15=0x8000,xreg6=0x700000000,metadata=0x9"},
	} {
		s.ofctl(t, tc.opts, "packet-out", tc.match+pkt)
		if got, err := s.devs["p2"].Recv(200 * time.Millisecond); err == nil {
			t.Errorf("%v packet-out %s: p2 got % x, want nothing", tc.opts, tc.match, got)
		}
	}
}

// TestXlateControllerRegisters: a plain output:CONTROLLER after the
// pipeline set registers or metadata reports them in the packet-in's match,
// as ovs-vswitchd does (TestIntegrationXRegs15 holds the bytes to its), so
// it takes the extended userdata, without allocating; with none set it
// keeps the plain form.
func TestXlateControllerRegisters(t *testing.T) {
	x := testBridge(t)
	x.ControllerPID.Store(77)
	ctl := openflow.Output(openflow.PortController, 128)
	mustAdd(t, x, 0, func(k *flow.Key, m *flow.Mask) { k.InPort, m.InPort = 1, ^uint32(0) }, 1,
		apply(openflow.Action{Type: openflow.ActRegLoad, Field: openflow.FieldReg3, NBits: 32, Load: 5},
			openflow.Action{Type: openflow.ActRegLoad, Field: openflow.FieldReg14, Ofs: 0, NBits: 2, Load: 3}, ctl))
	mustAdd(t, x, 0, func(k *flow.Key, m *flow.Mask) { k.InPort, m.InPort = 2, ^uint32(0) }, 1, apply(ctl))
	var out Out
	k := pkt(11)
	x.Translate(&k, t0, true, &out)
	acts := parseActs(t, out.Actions)
	if len(acts) != 1 || acts[0].Type != datapath.ActionUserspace {
		t.Fatalf("actions %+v, want one userspace action", acts)
	}
	ext := parsePacketInExt(acts[0].Userspace.Userdata)
	if ext == nil {
		t.Fatalf("userdata % x is not the extended form", acts[0].Userspace.Userdata)
	}
	var md openflow.Match
	if err := openflow.DecodeNXM(openflow.Version13, ext.Metadata, &md); err != nil ||
		md.Key.Regs[3] != 5 || md.Key.Regs[14] != 3 || md.Mask.Regs[3] != ^uint32(0) || md.Mask.Regs[2] != 0 || md.Key.InPort != 1 {
		t.Errorf("metadata %v: %s", err, &md)
	}
	// The extended form allocates nothing once the Out has grown.
	if n := testing.AllocsPerRun(100, func() { k := pkt(11); x.Translate(&k, t0, true, &out) }); n != 0 {
		t.Errorf("translating output:CONTROLLER with registers allocates %v times", n)
	}
	k = pkt(12)
	x.Translate(&k, t0, true, &out)
	acts = parseActs(t, out.Actions)
	if len(acts) != 1 || acts[0].Type != datapath.ActionUserspace || acts[0].Userspace.Userdata[0] != UserdataController {
		t.Fatalf("actions %+v, want the plain controller userdata", acts)
	}
}

// TestPacketInXRegs15: a 1.5 packet-in, in both formats, carries the
// registers as OXM_OF_PKT_REG pairs (the bytes TestIntegrationXRegs15
// holds to ovs-vswitchd's), NXM_NX_REG below 1.5, and ovs-ofctl prints
// the same registers from either.
func TestPacketInXRegs15(t *testing.T) {
	needTool(t, "ovs-ofctl")
	var md openflow.Match
	md.Key.InPort, md.Mask.InPort = 1, ^uint32(0)
	md.Key.Regs[3], md.Mask.Regs[3] = 5, ^uint32(0)
	md.Key.Regs[14], md.Mask.Regs[14] = 3, ^uint32(0)
	md.Key.Regs[15], md.Mask.Regs[15] = 1, ^uint32(0)
	pkt := make([]byte, 42)
	xreg1 := []byte{0x80, 0x01, 0x03, 0x10, 0, 0, 0, 0, 0, 0, 0, 5, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff}
	xreg7 := []byte{0x80, 0x01, 0x0e, 0x08, 0, 0, 0, 3, 0, 0, 0, 1}
	reg3 := []byte{0x00, 0x01, 0x06, 0x04, 0, 0, 0, 5}
	for _, v := range []uint8{openflow.Version13, openflow.Version15} {
		env := openflow.Envelope{Version: v}
		for _, m := range []openflow.Msg{
			&openflow.PacketIn{Envelope: env, BufferID: openflow.NoBuffer, TotalLen: 42, InPort: 1,
				Reason: openflow.PacketInAction, Match: md, Data: pkt},
			&openflow.PacketIn2{Envelope: env, BufferID: openflow.NoBuffer, Packet: pkt, Reason: openflow.PacketInAction, Metadata: md},
		} {
			raw, err := m.Append(nil)
			if err != nil {
				t.Fatal(err)
			}
			has15 := bytes.Contains(raw, xreg1) && bytes.Contains(raw, xreg7) && !bytes.Contains(raw, reg3)
			has13 := bytes.Contains(raw, reg3) && !bytes.Contains(raw, []byte{0x80, 0x01})
			if v == openflow.Version15 && !has15 || v == openflow.Version13 && !has13 {
				t.Errorf("%T version %d: % x", m, v, raw)
			}
			if got := ofpPrint(t, raw); !strings.Contains(got, "reg3=0x5,reg14=0x3,reg15=0x1,in_port=1") {
				t.Errorf("%T version %d: ovs-ofctl prints\n%s", m, v, got)
			}
		}
	}
}

// TestOfctlXRegs15Dump: the flows of TestIntegrationXRegs15, added with
// the real ovs-ofctl over 1.5 and 1.3, dump in both versions as
// ovs-vswitchd 3.1 dumped them in the bed (its lines, sorted, with the
// counters of the bed's traffic zeroed: none here).
func TestOfctlXRegs15Dump(t *testing.T) {
	needTool(t, "ovs-ofctl")
	s := newTestSwitch(t, 2, BridgeConfig{FailMode: FailSecure}, ConnConfig{})
	of13, of15 := []string{"-O", "OpenFlow13"}, []string{"-O", "OpenFlow15"}
	for _, f := range []string{
		"priority=10,in_port=1,udp,actions=set_field:0x5->reg3,set_field:0x100000002->xreg2," +
			"set_field:0xa000000000000000000000000000001->xxreg3,resubmit(,1)",
		"table=1,priority=10,udp,tp_dst=9001,reg3=0x5,xreg2=0x100000002,xxreg3=0xa000000000000000000000000000001,actions=output:2",
		"table=1,priority=9,reg3=0x5/0xf,reg4=0x1,xreg7=0x100000000/0xffff00000000,actions=controller(max_len=128)",
		"table=1,priority=7,reg3=0x5/0xf,reg4=0x1,actions=set_field:0x300000000/0x300000000->xreg7,controller(max_len=128)",
		"table=1,priority=8,reg12=0x7,reg15=0x8000,actions=output:2",
	} {
		s.ofctl(t, of15, "add-flow", f)
	}
	for _, f := range []string{
		"table=2,priority=5,xxreg0=0x1/0xff,reg10=0x3,actions=drop",
		"table=2,priority=6,reg0=0x1,reg1=0x2/0xff00ff,actions=load:0x1->NXM_NX_REG5[0..7],set_field:0x3/0xf->xxreg1,output:2",
		"table=2,priority=7,xreg5=0xffffffff00000000/0xffffffff00000000,xreg6=0x1,actions=move:NXM_NX_REG14[]->NXM_NX_REG15[],output:2",
	} {
		s.ofctl(t, of13, "add-flow", f)
	}
	const (
		l0   = "cookie=0x0, table=0, n_packets=0, n_bytes=0, priority=10,udp,in_port=1 actions=set_field:0x5->reg3,set_field:0x100000002->xreg2,set_field:0xa000000000000000000000000000001->xxreg3,resubmit(,1)"
		t19  = "cookie=0x0, table=1, n_packets=0, n_bytes=0, priority=9,reg3=0x5/0xf,reg4=0x1,reg14=0x1/0xffff actions=CONTROLLER:128"
		t18  = "cookie=0x0, table=1, n_packets=0, n_bytes=0, priority=8,reg12=0x7,reg15=0x8000 actions=output:2"
		t110 = "cookie=0x0, table=1, n_packets=0, n_bytes=0, priority=10,udp,reg3=0x5,reg4=0x1,reg5=0x2,reg12=0xa000000,reg13=0,reg14=0,reg15=0x1,tp_dst=9001 actions=output:2"
		t25  = "cookie=0x0, table=2, n_packets=0, n_bytes=0, priority=5,reg3=0x1/0xff,reg10=0x3 actions=drop"
		t27  = "cookie=0x0, table=2, n_packets=0, n_bytes=0, priority=7,reg10=0xffffffff,reg12=0,reg13=0x1 actions=move:NXM_NX_REG14[]->NXM_NX_REG15[],output:2"
	)
	for _, tc := range []struct {
		opts []string
		want []string
	}{
		{of13, []string{l0, t19,
			"cookie=0x0, table=1, n_packets=0, n_bytes=0, priority=7,reg3=0x5/0xf,reg4=0x1 actions=load:0x3->OXM_OF_PKT_REG7[32..33],CONTROLLER:128",
			t18, t110, t25,
			"cookie=0x0, table=2, n_packets=0, n_bytes=0, priority=6,reg0=0x1,reg1=0x2/0xff00ff actions=load:0x1->NXM_NX_REG5[0..7],load:0x3->NXM_NX_XXREG1[0..3],output:2",
			t27}},
		{of15, []string{l0, t19,
			"cookie=0x0, table=1, n_packets=0, n_bytes=0, priority=7,reg3=0x5/0xf,reg4=0x1 actions=set_field:0x300000000/0x300000000->xreg7,CONTROLLER:128",
			t18, t110, t25,
			"cookie=0x0, table=2, n_packets=0, n_bytes=0, priority=6,reg0=0x1,reg1=0x2/0xff00ff actions=set_field:0x1/0xff->reg5,set_field:0x3/0xf->xxreg1,output:2",
			t27}},
	} {
		var got []string
		for _, l := range strings.Split(durations.ReplaceAllString(s.ofctl(t, tc.opts, "dump-flows"), ""), "\n") {
			if strings.Contains(l, "table=") {
				got = append(got, strings.TrimSpace(l))
			}
		}
		sort.Strings(got)
		sort.Strings(tc.want)
		if strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
			t.Errorf("%v dump-flows:\n%s\nwant (ovs-vswitchd 3.1):\n%s", tc.opts, strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
		}
	}
}
