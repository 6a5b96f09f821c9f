package testbed

import (
	"testing"

	"github.com/mdlayher/genetlink"
)

// TestIntegrationOVSFamilies resolves the generic netlink families of the
// openvswitch module and checks the versions openvswitch.h defines: the
// switch speaks exactly these, and a module that answers with others would
// misread our messages.
func TestIntegrationOVSFamilies(t *testing.T) {
	Require(t)
	c, err := genetlink.Dial(nil)
	if err != nil {
		t.Fatalf("dial generic netlink: %v", err)
	}
	defer c.Close()

	tests := []struct {
		name    string
		version uint8  // OVS_*_VERSION
		mcgroup string // OVS_*_MCGROUP the switch joins; "" if none needed
	}{
		{name: "ovs_datapath", version: 2},
		{name: "ovs_vport", version: 1, mcgroup: "ovs_vport"},
		{name: "ovs_flow", version: 1},
		{name: "ovs_packet", version: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, err := c.GetFamily(tt.name)
			if err != nil {
				t.Fatalf("resolve %s: %v", tt.name, err)
			}
			t.Logf("family %-12s id %d version %d groups %v", f.Name, f.ID, f.Version, f.Groups)
			if f.Name != tt.name {
				t.Errorf("asked for %s, got family %q", tt.name, f.Name)
			}
			if f.ID == 0 {
				t.Errorf("%s: family id 0", tt.name)
			}
			if f.Version != tt.version {
				t.Errorf("%s: version %d, want %d", tt.name, f.Version, tt.version)
			}
			if tt.mcgroup == "" {
				return
			}
			for _, g := range f.Groups {
				if g.Name == tt.mcgroup {
					if g.ID == 0 {
						t.Errorf("%s: multicast group %s has id 0", tt.name, g.Name)
					}
					return
				}
			}
			t.Errorf("%s: no multicast group %q in %v", tt.name, tt.mcgroup, f.Groups)
		})
	}
}
