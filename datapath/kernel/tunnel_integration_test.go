package kernel

import (
	"fmt"
	"os/exec"
	"strings"
	"testing"

	"github.com/govswitch/govswitch/datapath"
	"github.com/govswitch/govswitch/internal/testbed"
	"github.com/vishvananda/netlink"
)

// TestIntegrationTunnelVXLANGPE: the VXLAN-GPE vport (OVS test 162) is
// vxlan_sys_PORT, a vxlan device without Ethernet in metadata mode, GPE,
// learning off, on its UDP port, as ovs-vswitchd makes it; asking for it
// again finds it, a vxlan vport without GPE on that UDP port is refused
// while it is there (and the other way round), and deleting it deletes
// the device.
func TestIntegrationTunnelVXLANGPE(t *testing.T) {
	const dev = "vxlan_sys_4791"
	dp, vp := newTunnelVport(t, "gx", datapath.TunnelVXLANGPE, 4791, "link/none", "vxlan", "external", "nolearning", "dstport 4791", "gpe")
	again, err := dp.AddTunnelVport(datapath.TunnelVXLANGPE, 4791)
	if err != nil || again.PortNo != vp.PortNo {
		t.Errorf("again: %+v %v, want port %d", again, err, vp.PortNo)
	}
	if _, err := dp.AddTunnelVport(datapath.TunnelVXLAN, 4791); err == nil || !strings.Contains(err.Error(), "GPE mode") {
		t.Errorf("a vxlan vport without GPE on the GPE device's port: %v, want a refusal", err)
	}
	if err := dp.DeleteTunnelVport(vp); err != nil {
		t.Fatal(err)
	}
	if _, err := netlink.LinkByName(dev); err == nil {
		t.Errorf("device %s outlived its vport", dev)
	}
	l2, err := dp.AddTunnelVport(datapath.TunnelVXLAN, 4791)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := dp.AddTunnelVport(datapath.TunnelVXLANGPE, 4791); err == nil || !strings.Contains(err.Error(), "without GPE") {
		t.Errorf("a GPE vport on an Ethernet vxlan device's port: %v, want a refusal", err)
	}
	if err := dp.DeleteTunnelVport(l2); err != nil {
		t.Fatal(err)
	}
}

// TestIntegrationTunnelVXLANGBP: the vport of vxlan ports with exts=gbp
// is vxlan_sys_PORT, an Ethernet vxlan device in metadata mode with gbp,
// learning off, as ovs-vswitchd makes it; asking again finds it; a vxlan
// vport without GBP, or one in GPE mode, on that UDP port is refused while
// it is there, and a GBP one on a plain vxlan device's port too.
func TestIntegrationTunnelVXLANGBP(t *testing.T) {
	const dev = "vxlan_sys_4792"
	dp, vp := newTunnelVport(t, "gb", datapath.TunnelVXLANGBP, 4792, "link/ether", "vxlan", "external", "nolearning", "dstport 4792", " gbp")
	again, err := dp.AddTunnelVport(datapath.TunnelVXLANGBP, 4792)
	if err != nil || again.PortNo != vp.PortNo {
		t.Errorf("again: %+v %v, want port %d", again, err, vp.PortNo)
	}
	for _, kind := range []string{datapath.TunnelVXLAN, datapath.TunnelVXLANGPE} {
		if _, err := dp.AddTunnelVport(kind, 4792); err == nil || !strings.Contains(err.Error(), "with GBP") {
			t.Errorf("a %s vport on the GBP device's port: %v, want a refusal", kind, err)
		}
	}
	if err := dp.DeleteTunnelVport(vp); err != nil {
		t.Fatal(err)
	}
	if _, err := netlink.LinkByName(dev); err == nil {
		t.Errorf("device %s outlived its vport", dev)
	}
	l2, err := dp.AddTunnelVport(datapath.TunnelVXLAN, 4792)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := dp.AddTunnelVport(datapath.TunnelVXLANGBP, 4792); err == nil || !strings.Contains(err.Error(), "without GPE or GBP") {
		t.Errorf("a GBP vport on a plain vxlan device's port: %v, want a refusal", err)
	}
	if err := dp.DeleteTunnelVport(l2); err != nil {
		t.Fatal(err)
	}
}

// newTunnelVport makes a datapath named after prefix and a tunnel vport of
// kind on UDP port, checks it is the netdev vxlan_sys_PORT and that
// ip -d link shows each of words on it; both go at the test's end.
func newTunnelVport(t *testing.T, prefix, kind string, port uint16, words ...string) (*Datapath, datapath.Vport) {
	t.Helper()
	testbed.Require(t)
	name := uniqueName(prefix)
	p, err := Provider{}.Create(name, datapath.Config{})
	if err != nil {
		t.Fatal(err)
	}
	dp := p.(*Datapath)
	dev := fmt.Sprintf("vxlan_sys_%d", port)
	t.Cleanup(func() {
		dp.Close()
		Provider{}.Delete(name)
		exec.Command("ip", "link", "del", dev).Run()
	})
	vp, err := dp.AddTunnelVport(kind, port)
	if err != nil {
		t.Fatal(err)
	}
	if vp.Name != dev || vp.Type != datapath.VportNetdev {
		t.Fatalf("vport %+v: want netdev %s", vp, dev)
	}
	out, err := exec.Command("ip", "-d", "link", "show", dev).CombinedOutput()
	if err != nil {
		t.Fatalf("ip -d link show %s: %v\n%s", dev, err, out)
	}
	t.Logf("%s", out)
	for _, w := range words {
		if !strings.Contains(string(out), w) {
			t.Errorf("device %s lacks %q", dev, w)
		}
	}
	return dp, vp
}
