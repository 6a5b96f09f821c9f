package ofproto

import (
	"bytes"
	"encoding/hex"
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
// it takes the extended userdata; with none set it keeps the plain form.
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
	k = pkt(12)
	x.Translate(&k, t0, true, &out)
	acts = parseActs(t, out.Actions)
	if len(acts) != 1 || acts[0].Type != datapath.ActionUserspace || acts[0].Userspace.Userdata[0] != UserdataController {
		t.Fatalf("actions %+v, want the plain controller userdata", acts)
	}
}
