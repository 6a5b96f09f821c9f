package vswitchd

import (
	"fmt"
	"strings"
	"testing"
)

// dupSteps adds to the bed's mirror m0 (h1's port as input, to h4's
// port) a mirror m1 of h2's port as output to the same port, pings h2
// from h1, and returns what h4 saw and the mirrors' statistics.
func (b *mirrorBed) dupSteps(t *testing.T, vsctl func(args ...string) string) (map[string]int, string) {
	t.Helper()
	b.configure(vsctl)
	vsctl("--", "--id=@b", "get", "Port", b.ports[1], "--", "--id=@d", "get", "Port", b.ports[3],
		"--", "--id=@m", "create", "Mirror", "name=m1", "select_dst_port=@b", "output_port=@d",
		"--", "add", "Bridge", b.name, "mirrors", "@m")
	// Static neighbours: no ARP, whose timing (a later unicast probe
	// counted in the statistics) is the hosts', not the switch's.
	for i, h := range b.hosts[:2] {
		j := 1 - i
		h.Exec("ip", "neigh", "replace", fmt.Sprintf("10.0.0.%d", j+1), "lladdr", b.macs[j].String(), "dev", "eth0", "nud", "permanent")
	}
	got := b.capture(t, []int{1})
	// Both rows' statistics are written together, every 5 s.
	waitMirrorStats(vsctl, func(s string) bool { return s != "{}" && !strings.HasSuffix(s, "tx_packets=0}") })
	return got, "m0 " + strings.TrimSpace(vsctl("get", "Mirror", "m0", "statistics")) +
		", m1 " + strings.TrimSpace(vsctl("get", "Mirror", "m1", "statistics"))
}

// TestIntegrationMirrorSameOutput: two mirrors with one output port, both
// selecting h1's echo requests to h2 (m0 as they enter by h1's port, m1
// as they leave by h2's), send one copy of each, as ovs-vswitchd 3.1
// (its dup_mirrors), not two; ovs-vswitchd first in the same boot, the
// frames and the Mirror statistics compared (issue 16).
func TestIntegrationMirrorSameOutput(t *testing.T) {
	b := newMirrorBed(t)

	o := startOVS(t)
	ovsFrames, ovsStats := b.dupSteps(t, func(args ...string) string { t.Helper(); return o.must(t, "ovs-vsctl", args...) })
	stopOVS(t, o, b.name)

	vsctl, _, _ := startGov(t, t.TempDir())
	govFrames, govStats := b.dupSteps(t, vsctl)

	t.Logf("ovs-vswitchd: %v\n%s\ngovswitchd:   %v\n%s", ovsFrames, ovsStats, govFrames, govStats)
	if icmpKinds(ovsFrames) != icmpKinds(govFrames) {
		t.Errorf("ICMP frames mirrored differ:\novs-vswitchd %s\ngovswitchd   %s", icmpKinds(ovsFrames), icmpKinds(govFrames))
	}
	if ovsFrames["h1>h2 echo"] != 3 || ovsStats != "m0 {tx_bytes=294, tx_packets=3}, m1 {tx_bytes=0, tx_packets=0}" {
		t.Errorf("ovs-vswitchd did not show the behaviour this test expects of it: %v", ovsFrames)
	}
	if ovsStats != govStats {
		t.Errorf("Mirror statistics differ:\novs-vswitchd:\n%s\ngovswitchd:\n%s", ovsStats, govStats)
	}
}
