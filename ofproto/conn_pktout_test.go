package ofproto

import (
	"bytes"
	"encoding/hex"
	"testing"
	"time"
)

// TestOfctlPacketOutResubmit: a packet-out whose actions resubmit to a
// table runs the packet through that table's flows, as ovs-vswitchd does
// (OVN's controller sends its packets back into the pipeline this way),
// and a resubmit runs the rule it finds whole, goto_table included.
func TestOfctlPacketOutResubmit(t *testing.T) {
	needTool(t, "ovs-ofctl")
	s := newTestSwitch(t, 2, BridgeConfig{FailMode: FailSecure}, ConnConfig{})
	s.ofctl(t, nil, "add-flow", "in_port=1,actions=set_field:0x7->reg0,resubmit(,1)")
	// The rule resubmitted to runs whole: its goto_table too.
	s.ofctl(t, []string{"-O", "OpenFlow13"}, "add-flow", "table=1,reg0=0x7,actions=goto_table:2")
	s.ofctl(t, nil, "add-flow", "table=2,actions=output:2")
	s.ofctl(t, nil, "add-flow", "in_port=controller,actions=resubmit(,1),set_field:0x7->reg0,resubmit(,1)")
	fr := frame(7, 8)
	for _, opts := range [][]string{nil, {"-O", "OpenFlow13"}} {
		s.ofctl(t, opts, "packet-out", "in_port=1 packet="+hex.EncodeToString(fr)+" actions=resubmit(,0)")
		if got, err := s.devs["p2"].Recv(2 * time.Second); err != nil || !bytes.Equal(got, fr) {
			t.Errorf("%v packet-out resubmit(,0): p2 got % x (%v), want % x", opts, got, err, fr)
		}
		s.ofctl(t, opts, "packet-out", "in_port=controller packet="+hex.EncodeToString(fr)+" actions=resubmit(,0)")
		if got, err := s.devs["p2"].Recv(2 * time.Second); err != nil || !bytes.Equal(got, fr) {
			t.Errorf("%v packet-out in_port=controller resubmit(,0): p2 got % x (%v), want % x", opts, got, err, fr)
		}
	}
}
