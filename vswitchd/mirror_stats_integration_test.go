package vswitchd

import (
	"strings"
	"testing"
	"time"
)

// mirrorStatsRun is what one switch's Mirror row said.
type mirrorStatsRun struct {
	before, after, list string
}

// waitMirrorStats polls Mirror m0's statistics until want(s) holds, and
// returns what it read last.
func waitMirrorStats(vsctl func(args ...string) string, want func(string) bool) string {
	var got string
	for deadline := time.Now().Add(25 * time.Second); time.Now().Before(deadline); time.Sleep(250 * time.Millisecond) {
		if got = strings.TrimSpace(vsctl("get", "Mirror", "m0", "statistics")); want(got) {
			break
		}
	}
	return got
}

// statsSteps: with static neighbours (no ARP), h1 sends h2 ten 142-byte
// echo requests; the mirror selects h1's port as input, so it is sent
// exactly those.
func (b *mirrorBed) statsSteps(t *testing.T, who string, vsctl func(args ...string) string) mirrorStatsRun {
	t.Helper()
	var r mirrorStatsRun
	b.configure(vsctl)
	for i, h := range b.hosts[:3] {
		for j := range b.hosts[:3] {
			if i != j {
				h.Exec("ip", "neigh", "replace", "10.0.0."+string(rune('1'+j)), "lladdr", b.macs[j].String(), "dev", "eth0", "nud", "permanent")
			}
		}
	}
	r.before = waitMirrorStats(vsctl, func(s string) bool { return s != "{}" })
	out, _ := b.hosts[0].Exec("ping", "-c", "10", "-i", "0.2", "-W", "1", "-s", "100", "10.0.0.2")
	if l := parseLoss(t, out); l != 0 {
		t.Errorf("%s: h1->h2 lost %d of 10:\n%s", who, l, out)
	}
	r.after = waitMirrorStats(vsctl, func(s string) bool { return strings.Contains(s, "tx_packets=10}") })
	r.list = strings.TrimSpace(vsctl("--columns=name,statistics", "list", "Mirror", "m0"))
	return r
}

// TestIntegrationMirrorStats: the Mirror table's statistics column counts
// the packets (and their bytes, as received) the mirror was sent, from
// the upcalled packets and the datapath flows' stats, refreshed every 5
// s; it reads as ovs-vswitchd 3.1's after the same traffic, ovs-vswitchd
// first in the same boot (issue 16).
func TestIntegrationMirrorStats(t *testing.T) {
	b := newMirrorBed(t)

	o := startOVS(t)
	ovsctl := func(args ...string) string { return o.must(t, "ovs-vsctl", args...) }
	ovs := b.statsSteps(t, "ovs-vswitchd", ovsctl)
	stopOVS(t, o, b.name)

	vsctl, _, _ := startGov(t, t.TempDir())
	gov := b.statsSteps(t, "govswitchd", vsctl)

	for _, c := range []struct{ what, ovs, gov string }{
		{"statistics before traffic", ovs.before, gov.before},
		{"statistics after ten echo requests", ovs.after, gov.after},
		{"ovs-vsctl list Mirror", ovs.list, gov.list},
	} {
		t.Logf("%s:\novs-vswitchd: %s\ngovswitchd:   %s", c.what, c.ovs, c.gov)
		if c.ovs != c.gov {
			t.Errorf("%s differs:\novs-vswitchd: %s\ngovswitchd:   %s", c.what, c.ovs, c.gov)
		}
	}
	if want := "{tx_bytes=1420, tx_packets=10}"; gov.after != want {
		t.Errorf("govswitchd: statistics %s, want %s", gov.after, want)
	}
}
