package vswitchd

import (
	"fmt"
	"net"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"github.com/govswitch/govswitch/internal/testbed"
)

// patchPinRun configures bridges bra (the host's port as port 1, patch
// port pa as port 2) and brb (patch port pb as port 5), bra forwarding
// to pa and brb sending everything to the controller, sends UDP frames
// from the host, and returns the packet-in line ovs-ofctl monitor printed
// for brb.
func patchPinRun(t *testing.T, h *testbed.Netns, mac net.HardwareAddr, port, suffix string,
	vsctl func(args ...string) string, mgmt func(br string) string) string {
	t.Helper()
	a, b := "pa"+suffix, "pb"+suffix
	vsctl("add-br", "bra", "--", "set-fail-mode", "bra", "secure",
		"--", "add-port", "bra", port, "--", "set", "Interface", port, "ofport_request=1",
		"--", "add-port", "bra", a, "--", "set", "Interface", a, "type=patch", "options:peer="+b, "ofport_request=2",
		"--", "add-br", "brb", "--", "set-fail-mode", "brb", "secure",
		"--", "add-port", "brb", b, "--", "set", "Interface", b, "type=patch", "options:peer="+a, "ofport_request=5")
	ma, mb := mgmt("bra"), mgmt("brb")
	for _, c := range []struct{ mgmt, flow string }{{ma, "in_port=1,actions=output:2"}, {mb, "actions=controller"}} {
		if out, err := ofctlAt(c.mgmt, "add-flow", c.flow); err != nil {
			t.Fatalf("add-flow %s: %v\n%s", c.flow, err, out)
		}
	}
	w := startMonitor(t, mb, nil, "65534")
	time.Sleep(time.Second)
	tx := testbed.OpenRaw(t, h, "eth0")
	defer tx.Close()
	peer := net.HardwareAddr{0x02, 0, 0, 0, 0, 0x99}
	for i := range 3 {
		if err := tx.Send(udpFrame(mac, peer, 4000+uint16(i), 4001)); err != nil {
			t.Fatal(err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	all := w.waitFor(t, "PACKET_IN")
	line := regexp.MustCompile(`.*PACKET_IN.*`).FindString(all)
	t.Logf("ovs-ofctl monitor brb:\n%s", all)
	return regexp.MustCompile(` \(xid=0x[0-9a-f]+\)`).ReplaceAllString(line, "")
}

// TestIntegrationPatchPortPacketIn: a packet-in sent by the rules of a
// bridge reached through a patch port reaches that bridge's controller
// (ovs-ofctl monitor brb) and names the patch port as its in_port, as
// ovs-vswitchd 3.1 does in the same bed.
func TestIntegrationPatchPortPacketIn(t *testing.T) {
	testbed.Require(t)
	n := bedSeq.Add(1)
	h := testbed.NewNetns(t)
	port := fmt.Sprintf("pp%d", n)
	mac := testbed.Veth(t, port, h, "eth0", "10.0.0.1/24")

	o := startOVS(t)
	ovs := patchPinRun(t, h, mac, port, "o", func(args ...string) string { return o.must(t, "ovs-vsctl", args...) },
		func(br string) string { return filepath.Join(o.dir, br+".mgmt") })
	o.exitCleanup(t, "bra")

	g := startGovSwitch(t, t.TempDir())
	gov := patchPinRun(t, h, mac, port, "g", func(args ...string) string { t.Helper(); return g.vsctl(t, args...) },
		func(br string) string { return g.mgmt(t, br) })

	want := regexp.MustCompile(`in_port=5 \(via action\)`)
	if !want.MatchString(ovs) {
		t.Errorf("ovs-vswitchd's packet-in: %q, want in_port=5 (via action)", ovs)
	}
	if gov != ovs {
		t.Errorf("packet-in on brb\n govswitchd:   %q\n ovs-vswitchd: %q", gov, ovs)
	}
}
