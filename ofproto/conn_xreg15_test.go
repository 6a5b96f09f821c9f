package ofproto

import (
	"bytes"
	"encoding/hex"
	"testing"
	"time"
)

// TestOfctlXRegs15PacketOut: a 1.5 packet-out's match starts the
// pipeline with its registers (ovs-ofctl carries reg and xreg there as
// OXM_OF_PKT_REG pairs), so a resubmit finds the flow that matches them;
// without them the packet finds nothing. ovs-ofctl drops them below 1.5.
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
