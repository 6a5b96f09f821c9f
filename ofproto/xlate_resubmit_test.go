package ofproto

import (
	"testing"

	"github.com/govswitch/govswitch/datapath"
	"github.com/govswitch/govswitch/flow"
	"github.com/govswitch/govswitch/ofproto/openflow"
)

// TestXlateForwardResubmits: a pipeline that resubmits only forward, as
// OVN's does through well over 64 tables across its logical datapaths,
// is not a deep translation (OVS deepens only on a resubmit to the same
// or an earlier table); one that resubmits back to its own table still
// stops at MaxResubmitDepth.
func TestXlateForwardResubmits(t *testing.T) {
	x := testBridge(t)
	any := func(*flow.Key, *flow.Mask) {}
	for tb := uint8(0); tb < 200; tb++ {
		mustAdd(t, x, tb, any, 1, apply(openflow.Resubmit(openflow.PortInPort, tb+1)))
	}
	mustAdd(t, x, 200, any, 1, apply(openflow.Output(2, 0)))
	k := pkt(11)
	var out Out
	x.Translate(&k, t0, true, &out)
	if got := datapath.FormatActions(out.Actions); got != "12" {
		t.Errorf("200 forward resubmits: actions %q (dropped %q), want 12", got, out.Dropped)
	}
	y := testBridge(t)
	mustAdd(t, y, 0, any, 1, apply(openflow.Resubmit(openflow.PortInPort, 0), openflow.Output(2, 0)))
	var o2 Out
	k = pkt(11)
	y.Translate(&k, t0, true, &o2)
	if o2.Dropped != "resubmit limit exceeded" {
		t.Errorf("resubmit(,0) from table 0: actions %q dropped %q", datapath.FormatActions(o2.Actions), o2.Dropped)
	}
}
