package vswitchd

import (
	"net/netip"
	"testing"
)

// TestSFlowAgentAddress: the agent device's address, else the agent as
// an IP address, else the source the routes give for the collector; a row
// that yields none is refused.
func TestSFlowAgentAddress(t *testing.T) {
	for _, tc := range []struct {
		name, agent string
		targets     []string
		want        string
		err         bool
	}{
		{"device", "lo", []string{"192.0.2.1:6343"}, "127.0.0.1", false},
		{"IP address", "198.51.100.7", []string{"127.0.0.1:6343"}, "198.51.100.7", false},
		{"route to the collector", "", []string{"127.0.0.1:6343"}, "127.0.0.1", false},
		{"no such device: the route", "nosuchdev0", []string{"127.0.0.2:6343"}, "127.0.0.1", false},
		{"nothing", "nosuchdev0", []string{"bad"}, "", true},
	} {
		got, err := sflowAgentAddress(tc.agent, tc.targets)
		if tc.err {
			if err == nil {
				t.Errorf("%s: %v, want an error", tc.name, got)
			}
			continue
		}
		if err != nil || got != netip.MustParseAddr(tc.want) {
			t.Errorf("%s: %v %v, want %s", tc.name, got, err, tc.want)
		}
	}
}
