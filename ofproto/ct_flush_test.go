package ofproto

import (
	"errors"
	"strings"
	"sync"
	"testing"
)

// TestCtFlushZoneOvsOfctl sends NXT_CT_FLUSH_ZONE with the real
// `ovs-ofctl ct-flush-zone` (what ovn-controller sends for a logical
// port's zone) in OpenFlow 1.0 and 1.5: the zone reaches the datapath's
// flush, a failed flush is not the controller's error, and a datapath that
// cannot flush refuses the message.
func TestCtFlushZoneOvsOfctl(t *testing.T) {
	needTool(t, "ovs-ofctl")
	s := newTestSwitch(t, 2, BridgeConfig{FailMode: FailSecure}, ConnConfig{})
	var mu sync.Mutex
	var zones []uint16
	fail := false
	s.b.Backer.SetFlushCtZone(func(z uint16) error {
		mu.Lock()
		defer mu.Unlock()
		zones = append(zones, z)
		if fail {
			return errors.New("no conntrack here")
		}
		return nil
	})
	for _, ver := range []string{"OpenFlow10", "OpenFlow15"} {
		s.ofctl(t, []string{"-O", ver}, "ct-flush-zone", "4")
	}
	mu.Lock()
	fail = true
	mu.Unlock()
	s.ofctl(t, []string{"-O", "OpenFlow15"}, "ct-flush-zone", "65535")
	mu.Lock()
	got := zones
	mu.Unlock()
	if len(got) != 3 || got[0] != 4 || got[1] != 4 || got[2] != 65535 {
		t.Errorf("zones flushed: %v, want [4 4 65535]", got)
	}
	// A second switch, whose datapath cannot flush.
	s = newTestSwitch(t, 2, BridgeConfig{FailMode: FailSecure}, ConnConfig{})
	if out, err := s.ofctlErr([]string{"-O", "OpenFlow15"}, "ct-flush-zone", "1"); err == nil || !strings.Contains(err.Error(), "OFPBRC_BAD_SUBTYPE") {
		t.Errorf("without a flush: want OFPBRC_BAD_SUBTYPE, got %v %s", err, out)
	}
}
