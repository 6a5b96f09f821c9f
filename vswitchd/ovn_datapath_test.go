package vswitchd

import (
	"strings"
	"testing"
	"time"
)

// TestOVSDBDatapathCapabilities creates Datapath rows as ovn-controller
// does (one per datapath type, named in Open_vSwitch:datapaths) and
// checks that the switch fills the capabilities of its own type with the
// features it probed, and leaves another type's row alone.
func TestOVSDBDatapathCapabilities(t *testing.T) {
	s := startOVSDBSwitch(t)
	s.must(t, "add-br", "br-int")
	s.must(t, "--", "--id=@dp", "create", "Datapath", "external_ids:made-by=test",
		"--", "--id=@other", "create", "Datapath", "external_ids:made-by=test",
		"--", "set", "Open_vSwitch", ".", "datapaths:dummy=@dp", "datapaths:netdev=@other")
	var caps string
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		caps = strings.TrimSpace(s.must(t, "--no-wait", "get", "Open_vSwitch", ".", "datapaths:dummy"))
		caps = strings.TrimSpace(s.must(t, "--no-wait", "get", "Datapath", caps, "capabilities"))
		if caps != "{}" {
			break
		}
	}
	// The dummy datapath has UFIDs, two VLAN headers and zones, and makes
	// no other conntrack claim, as dpif/show-dp-features says.
	for _, want := range []string{`ufid="true"`, `max_vlan_headers="2"`, `ct_zone="true"`, `recirc="false"`, `ct_state_nat="false"`} {
		if !strings.Contains(caps, want) {
			t.Errorf("capabilities of the dummy type lack %s: %s", want, caps)
		}
	}
	other := strings.TrimSpace(s.must(t, "--no-wait", "get", "Open_vSwitch", ".", "datapaths:netdev"))
	if got := strings.TrimSpace(s.must(t, "--no-wait", "get", "Datapath", other, "capabilities")); got != "{}" {
		t.Errorf("a type the switch does not serve got capabilities %s", got)
	}
}
