package vswitchd

import (
	"fmt"
	"net"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/govswitch/govswitch/internal/testbed"
)

// bridgeAddrSteps configures a bridge with two ports and reports, after
// each step, the bridge device's address, Bridge datapath_id and what
// ovs-ofctl show says of the dpid and of LOCAL's address, as
// "mac dpid ofctl-dpid ofctl-local-addr".
func bridgeAddrSteps(t *testing.T, bridge string, ports [2]string, vsctl func(args ...string) string,
	mgmt func() string) []string {
	t.Helper()
	vsctl("add-br", bridge)
	for _, p := range ports {
		vsctl("add-port", bridge, p)
	}
	dpidRE := regexp.MustCompile(`dpid:([0-9a-f]{16})`)
	localRE := regexp.MustCompile(`LOCAL\(` + bridge + `\): addr:([0-9a-f:]{17})`)
	var out []string
	observe := func(step string) {
		t.Helper()
		want := "" // what the step must lead to, polled for: the switch applies it after ovs-vsctl returns
		var last string
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(100 * time.Millisecond) {
			ifi, err := net.InterfaceByName(bridge)
			if err != nil {
				t.Fatal(err)
			}
			show, err := ofctlAt(mgmt(), "show")
			if err != nil {
				t.Fatalf("ovs-ofctl show: %v\n%s", err, show)
			}
			var dp, local string
			if m := dpidRE.FindStringSubmatch(show); m != nil {
				dp = m[1]
			}
			if m := localRE.FindStringSubmatch(show); m != nil {
				local = m[1]
			}
			last = fmt.Sprintf("%s: %s %s %s %s", step, ifi.HardwareAddr, strings.Trim(strings.TrimSpace(vsctl("get", "Bridge", bridge, "datapath_id")), `"`), dp, local)
			mac := strings.ReplaceAll(ifi.HardwareAddr.String(), ":", "")
			// Settled: every view agrees and the id follows the address
			// (or the configured id in the datapath-id step).
			if want = "0000" + mac; step == "datapath-id" {
				want = "0000000000001234"
			}
			if strings.Count(last, want) == 2 && dp == want && local == ifi.HardwareAddr.String() {
				break
			}
			if time.Now().After(deadline) {
				t.Errorf("%s: not settled in 10 s, want datapath id %s: %s", step, want, last)
				break
			}
		}
		out = append(out, last)
	}
	observe("ports with local addresses")
	if o, err := exec.Command("ip", "link", "set", ports[1], "address", "00:1b:21:0a:0b:0c").CombinedOutput(); err != nil {
		t.Fatalf("ip link set address: %v: %s", err, o)
	}
	// The address is picked at reconfiguration, as in OVS: any database
	// change makes one.
	vsctl("set", "Bridge", bridge, "external_ids:step=global-port")
	observe("a globally administered port address")
	vsctl("set", "Bridge", bridge, `other_config:hwaddr="00:11:22:33:44:55"`)
	observe("hwaddr")
	vsctl("set", "Bridge", bridge, "other_config:datapath-id=0x1234")
	observe("datapath-id")
	return out
}

// TestIntegrationBridgeAddress: the bridge's Ethernet address and datapath
// id as ovs-vswitchd 3.1 picks them, step for step in the same boot: from
// the Bridge row's UUID while its ports have only locally administered
// addresses, the lowest globally administered port address once there is
// one, other_config:hwaddr over both, other_config:datapath-id over the
// address; the device, Bridge datapath_id and ovs-ofctl show agree.
func TestIntegrationBridgeAddress(t *testing.T) {
	testbed.Require(t)
	n := bedSeq.Add(1)
	bridge := fmt.Sprintf("ga%d", n)
	ports := [2]string{fmt.Sprintf("ga%da", n), fmt.Sprintf("ga%db", n)}
	for _, p := range ports {
		testbed.Veth(t, p, testbed.NewNetns(t), "eth0", "")
	}
	// OVS's struct uuid is four native words: on this little-endian
	// machine the first group's bytes come reversed, then the third's.
	uuidMAC := func(uuid string) string {
		g := strings.Split(strings.TrimSpace(uuid), "-")
		b := func(s string, i int) string { return s[i : i+2] }
		mac, err := net.ParseMAC(strings.Join([]string{b(g[0], 6), b(g[0], 4), b(g[0], 2), b(g[0], 0), b(g[2], 2), b(g[2], 0)}, ":"))
		if err != nil {
			t.Fatalf("uuid %q: %v", uuid, err)
		}
		mac[0] = mac[0]&^1 | 2
		return mac.String()
	}

	o := startOVS(t)
	ovsVsctl := func(args ...string) string { t.Helper(); return o.must(t, "ovs-vsctl", args...) }
	ovs := bridgeAddrSteps(t, bridge, ports, ovsVsctl, func() string { return o.dir + "/" + bridge + ".mgmt" })
	ovsUUID := uuidMAC(ovsVsctl("get", "Bridge", bridge, "_uuid"))
	o.exitCleanup(t, bridge)
	// The port's address goes back to a local one for the second run.
	if out, err := exec.Command("ip", "link", "set", ports[1], "address", "02:00:00:0a:0b:0c").CombinedOutput(); err != nil {
		t.Fatalf("ip link set address: %v: %s", err, out)
	}

	g := startGovSwitch(t, t.TempDir())
	govVsctl := func(args ...string) string { t.Helper(); return g.vsctl(t, args...) }
	gov := bridgeAddrSteps(t, bridge, ports, govVsctl, func() string { return g.mgmt(t, bridge) })
	govUUID := uuidMAC(govVsctl("get", "Bridge", bridge, "_uuid"))

	t.Logf("ovs-vswitchd (uuid address %s):\n%s", ovsUUID, strings.Join(ovs, "\n"))
	t.Logf("govswitchd (uuid address %s):\n%s", govUUID, strings.Join(gov, "\n"))
	// The first step differs by the UUIDs only; the others are equal.
	if !strings.HasPrefix(ovs[0], "ports with local addresses: "+ovsUUID) {
		t.Errorf("ovs-vswitchd's first address is not its UUID's %s: %s", ovsUUID, ovs[0])
	}
	if !strings.HasPrefix(gov[0], "ports with local addresses: "+govUUID) {
		t.Errorf("govswitchd's first address is not its UUID's %s (as ovs-vswitchd's is): %s", govUUID, gov[0])
	}
	for i := 1; i < len(ovs) && i < len(gov); i++ {
		if ovs[i] != gov[i] {
			t.Errorf("step %d:\n ovs-vswitchd %s\n govswitchd   %s", i, ovs[i], gov[i])
		}
	}
}
