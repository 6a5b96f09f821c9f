package ofproto

import "testing"

// TestDeletePortWhoseVportVanished: the kernel drops a vport when its
// network device is deleted (ip link del); deleting the port afterwards
// succeeds and forgets it, as ovs-vswitchd does, rather than failing (OVS's
// "interface - add delete add same interface" test fails on the error).
func TestDeletePortWhoseVportVanished(t *testing.T) {
	s := newTestSwitch(t, 1, BridgeConfig{}, ConnConfig{})
	if _, err := s.prov.AddNetdev("p9"); err != nil {
		t.Fatal(err)
	}
	p, err := s.b.AddPort("p9", "system", 9)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.b.DP.DeleteVport(p.DPPort); err != nil {
		t.Fatal(err)
	}
	if err := s.b.DeletePort("p9"); err != nil {
		t.Fatalf("delete of a port whose vport is gone: %v", err)
	}
	if s.b.Ports.Snapshot().ByOF(p.OFPort) != nil {
		t.Error("port still on the bridge")
	}
}
