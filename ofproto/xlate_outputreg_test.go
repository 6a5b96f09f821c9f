package ofproto

import (
	"testing"

	"github.com/govswitch/govswitch/datapath"
	"github.com/govswitch/govswitch/flow"
	"github.com/govswitch/govswitch/ofproto/openflow"
)

func TestXlateExit(t *testing.T) {
	exit := openflow.Action{Type: openflow.ActExit}
	x := testBridge(t)
	// Table 1's exit ends the whole translation: table 0's later output
	// and the action set do not run.
	mustAdd(t, x, 0, func(*flow.Key, *flow.Mask) {}, 1, openflow.Instructions{
		Apply: []openflow.Action{openflow.Output(2, 0), openflow.Resubmit(openflow.PortInPort, 1), openflow.Output(3, 0)},
		Write: []openflow.Action{openflow.Output(openflow.PortLocal, 0)}})
	mustAdd(t, x, 1, func(*flow.Key, *flow.Mask) {}, 1, apply(exit, openflow.Output(3, 0)))
	var out Out
	k := pkt(11)
	x.Translate(&k, t0, true, &out)
	if got := datapath.FormatActions(out.Actions); got != "12" {
		t.Errorf("exit in a resubmit: %q, want 12", got)
	}
}

func TestXlateOutputRegMegaflow(t *testing.T) {
	x := testBridge(t)
	tcp := func(k *flow.Key, m *flow.Mask) {
		k.EthType, m.EthType = flow.EthTypeIPv4, 0xffff
		k.NwProto, m.NwProto = flow.IPProtoTCP, 0xff
	}
	mustAdd(t, x, 0, tcp, 1, apply(
		openflow.Action{Type: openflow.ActRegLoad, Field: openflow.FieldReg2, Ofs: 8, NBits: 8, Load: 2},
		openflow.Action{Type: openflow.ActOutputReg, Src: openflow.FieldReg2, SrcOfs: 8, NBits: 8, MaxLen: 0xffff},
		openflow.Action{Type: openflow.ActOutputReg, Src: openflow.FieldTCPSrc, NBits: 16, MaxLen: 0xffff}))
	var out Out
	k := pkt(11)
	k.TpSrc = 3
	x.Translate(&k, t0, true, &out)
	if got := datapath.FormatActions(out.Actions); got != "12,13" {
		t.Errorf("actions %q, want 12,13", got)
	}
	if out.WC.TpSrc != 0xffff {
		t.Errorf("tcp_src mask %#x: the output port came from it", out.WC.TpSrc)
	}
}
