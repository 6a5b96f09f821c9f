package vswitchd

import (
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/govswitch/govswitch/internal/testbed"
)

// bpduSteps sends frames to an STP, an LACP and a CDP address and to a
// plain multicast group from one namespace through a NORMAL bridge, with
// forward-bpdu off and then on, and reports which reached the other
// namespace; then sets dp-desc and dp-sn and reports ovs-ofctl
// dump-desc's serial and datapath lines.
func bpduSteps(t *testing.T, bridge string, ports [2]string, hosts [2]*testbed.Netns, vsctl func(args ...string) string,
	mgmt func() string) []string {
	t.Helper()
	vsctl("add-br", bridge)
	for _, p := range ports {
		vsctl("add-port", bridge, p)
	}
	tx, rx := testbed.OpenRaw(t, hosts[0], "eth0"), testbed.OpenRaw(t, hosts[1], "eth0")
	src := net.HardwareAddr{0x00, 0x1b, 0x21, 0, 0, 1}
	dsts := []string{"01:80:c2:00:00:00", "01:80:c2:00:00:02", "01:00:0c:cc:cc:cc", "01:00:5e:00:00:fb"}
	var out []string
	try := func(step string) {
		t.Helper()
		for _, d := range dsts {
			dst, _ := net.ParseMAC(d)
			f := make([]byte, 60)
			copy(f, dst)
			copy(f[6:], src)
			f[12], f[13] = 0x88, 0xb5 // IEEE's local experimental ethertype
			copy(f[14:], step)
			got := "dropped"
			// The switch may still be applying the step: a few tries.
			for i := 0; i < 5 && got == "dropped"; i++ {
				tx.Send(f)
				if _, err := rx.Recv(time.Second, func(b []byte) bool {
					return len(b) >= 14 && net.HardwareAddr(b[:6]).String() == d && b[12] == 0x88 && b[13] == 0xb5
				}); err == nil {
					got = "forwarded"
				}
				if step == "forward-bpdu=false" || d == dsts[len(dsts)-1] {
					break // one try tells: the expected outcome is no frame, or it comes at once
				}
			}
			out = append(out, fmt.Sprintf("%s: %s %s", step, d, got))
		}
	}
	try("forward-bpdu=false")
	vsctl("set", "Bridge", bridge, "other_config:forward-bpdu=true")
	try("forward-bpdu=true")
	vsctl("set", "Bridge", bridge, "other_config:dp-desc=rack7", "other_config:dp-sn=SN-42")
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		desc, err := ofctlAt(mgmt(), "dump-desc")
		if err != nil {
			t.Fatalf("ovs-ofctl dump-desc: %v\n%s", err, desc)
		}
		var lines []string
		for _, l := range strings.Split(desc, "\n") {
			if l = strings.TrimSpace(l); strings.HasPrefix(l, "Serial Num:") || strings.HasPrefix(l, "DP Description:") {
				lines = append(lines, l)
			}
		}
		if strings.Contains(desc, "SN-42") || time.Now().After(deadline) {
			out = append(out, lines...)
			break
		}
	}
	return out
}

// TestIntegrationForwardBPDU: NORMAL drops frames to IEEE 802.1D's and
// Cisco's link-local protocol addresses unless the bridge's
// other_config:forward-bpdu is true, and dump-desc reports dp-sn and
// dp-desc, as ovs-vswitchd 3.1 does in the same boot.
func TestIntegrationForwardBPDU(t *testing.T) {
	testbed.Require(t)
	n := bedSeq.Add(1)
	bridge := fmt.Sprintf("gf%d", n)
	ports := [2]string{fmt.Sprintf("gf%da", n), fmt.Sprintf("gf%db", n)}
	var hosts [2]*testbed.Netns
	for i, p := range ports {
		hosts[i] = testbed.NewNetns(t)
		testbed.Veth(t, p, hosts[i], "eth0", "")
	}

	o := startOVS(t)
	ovs := bpduSteps(t, bridge, ports, hosts, func(args ...string) string { t.Helper(); return o.must(t, "ovs-vsctl", args...) },
		func() string { return o.dir + "/" + bridge + ".mgmt" })
	o.exitCleanup(t, bridge)

	g := startGovSwitch(t, t.TempDir())
	gov := bpduSteps(t, bridge, ports, hosts, func(args ...string) string { t.Helper(); return g.vsctl(t, args...) },
		func() string { return g.mgmt(t, bridge) })

	t.Logf("ovs-vswitchd:\n%s\ngovswitchd:\n%s", strings.Join(ovs, "\n"), strings.Join(gov, "\n"))
	if strings.Join(ovs, "\n") != strings.Join(gov, "\n") {
		t.Errorf("govswitchd differs from ovs-vswitchd")
	}
	if len(ovs) != 10 || !strings.Contains(ovs[0], "dropped") || !strings.Contains(ovs[4], "forwarded") || !strings.Contains(ovs[3], "forwarded") {
		t.Errorf("ovs-vswitchd did not show the behaviour this test expects of it: %q", ovs)
	}
}
