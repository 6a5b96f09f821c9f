package ofproto

import (
	"strings"
	"testing"

	"github.com/govswitch/govswitch/ofproto/openflow"
)

// TestSnoopOfctl: "ovs-ofctl snoop" on the bridge's snoop socket prints
// what a controller and the switch say to each other, and nothing of
// service connections.
func TestSnoopOfctl(t *testing.T) {
	s := newTestSwitch(t, 2, BridgeConfig{FailMode: FailSecure}, ConnConfig{})
	mon := s.startOfctl(t, "snoop", "unix:"+s.m.SnoopPath())
	waitFor(t, "snooper", func() bool {
		l := s.m.snoop.list.Load()
		return l != nil && len(*l) == 1
	})
	svc := s.dialMgmt(t)
	svc.handshake(4, 4)
	svc.v = 4
	svc.send(&openflow.DescStatsRequest{})
	svc.recv()
	ctl, _ := s.pipe(t, ConnController)
	ctl.handshake(4, 4)
	ctl.v = 4
	ctl.send(&openflow.FeaturesRequest{})
	ctl.recv()
	out := mon.waitFor(t, "OFPT_FEATURES_REPLY (OF1.3)")
	if !strings.Contains(out, "OFPT_FEATURES_REQUEST (OF1.3)") || !strings.Contains(out, "dpid:") {
		t.Errorf("ovs-ofctl snoop printed:\n%s", out)
	}
	if strings.Contains(out, "OFPST_DESC") {
		t.Errorf("a service connection was snooped:\n%s", out)
	}
}
