package vswitchd

import (
	"os/exec"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"
)

// What a topology change does to the MAC learning table, on the
// spanning tree's loop (stpBed): h1 pings h2 once, so both bridges learn
// both hosts; then the root link loses its carrier (a1 down, b1 with
// it), B's alternate b2 takes over, and fdb/show of both bridges is read
// before and after. ovs-vswitchd 3.1 flushes the whole table under STP
// (802.1D), and under RSTP only the entries of the ports the topology
// change machine flushes (an edge port's survive), moving the old root
// port's entries to the new root port where it was an alternate. The
// same steps run against both switches in the same boot, and the
// tables must read the same.

// fdbRows is fdb/show's entries as "bridge port vlan mac", age left out,
// sorted.
func fdbRows(t *testing.T, ctl string, bridges ...string) []string {
	t.Helper()
	row := regexp.MustCompile(`(?m)^\s+(\d+|LOCAL)\s+(\d+)\s+([0-9a-f:]{17})\s+\d+$`)
	var out []string
	for _, br := range bridges {
		r := appctlAt(t, ctl, "fdb/show", br)
		if r.code != 0 {
			t.Fatalf("fdb/show %s: %d %s", br, r.code, r.err)
		}
		for _, m := range row.FindAllStringSubmatch(r.out, -1) {
			out = append(out, br+" "+strings.Join(m[1:], " "))
		}
	}
	sort.Strings(out)
	return out
}

// fdbAround is fdb/show of both bridges before and after a topology
// change.
type fdbAround struct {
	before, after []string
}

// fdbAroundFailover learns the hosts' addresses with one ping, reads the
// tables, takes a1 down, waits until stp/show or rstp/show (show) has b2
// as B's forwarding root port (rootRow matches that row), waits a
// second more for the switch to act on it, and reads the tables again.
// The hosts send nothing meanwhile (no IPv6, stale ARP entries are not
// probed), so nothing is learned again. a1 comes back up at the end.
func (s *stpBed) fdbAroundFailover(t *testing.T, who, ctl, show string, rootRow *regexp.Regexp) fdbAround {
	t.Helper()
	s.h1.Exec("ip", "neigh", "flush", "all")
	s.h2.Exec("ip", "neigh", "flush", "all")
	if out, _ := s.h1.Exec("ping", "-c", "2", "-i", "0.3", "-W", "1", "10.0.0.2"); parseLoss(t, out) == 2 {
		t.Fatalf("%s: h1 cannot ping h2:\n%s", who, out)
	}
	time.Sleep(500 * time.Millisecond)
	var r fdbAround
	r.before = fdbRows(t, ctl, s.a, s.b)
	setLink := func(state string) {
		if out, err := exec.Command("ip", "link", "set", s.links[0], state).CombinedOutput(); err != nil {
			t.Fatalf("ip link set %s %s: %v\n%s", s.links[0], state, err, out)
		}
	}
	setLink("down")
	defer setLink("up")
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(250 * time.Millisecond) {
		out := appctlAt(t, ctl, show, s.b).out
		if rootRow.MatchString(out) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %s did not take over as root port within 30 s of %s losing carrier:\n%s", who, s.links[3], s.links[1], out)
		}
	}
	time.Sleep(1500 * time.Millisecond)
	r.after = fdbRows(t, ctl, s.a, s.b)
	return r
}

// compareFDB fails the test where govswitchd's tables differ from
// ovs-vswitchd's.
func compareFDB(t *testing.T, ovs, gov fdbAround) {
	t.Helper()
	t.Logf("ovs-vswitchd fdb/show before:\n%s\nafter:\n%s", strings.Join(ovs.before, "\n"), strings.Join(ovs.after, "\n"))
	t.Logf("govswitchd fdb/show before:\n%s\nafter:\n%s", strings.Join(gov.before, "\n"), strings.Join(gov.after, "\n"))
	// Both hosts on both bridges: four entries, or the test proves nothing.
	if len(ovs.before) != 4 {
		t.Errorf("ovs-vswitchd learned %d entries, want 4: %q", len(ovs.before), ovs.before)
	}
	if strings.Join(gov.before, "\n") != strings.Join(ovs.before, "\n") {
		t.Errorf("fdb/show before the topology change:\novs-vswitchd %q\ngovswitchd   %q", ovs.before, gov.before)
	}
	if strings.Join(gov.after, "\n") != strings.Join(ovs.after, "\n") {
		t.Errorf("fdb/show after the topology change:\novs-vswitchd %q\ngovswitchd   %q", ovs.after, gov.after)
	}
}

// bothSwitches runs step against ovs-vswitchd, then against govswitchd,
// on bridges that configure builds.
func (s *stpBed) bothSwitches(t *testing.T, configure func(vsctl func(args ...string) string),
	step func(who, ctl string) fdbAround) (ovs, gov fdbAround) {
	t.Helper()
	o := startOVS(t)
	configure(func(args ...string) string { t.Helper(); return strings.TrimSpace(o.must(t, "ovs-vsctl", args...)) })
	ovs = step("ovs-vswitchd", o.ctl)
	o.exitCleanup(t, s.a)
	for deadline := time.Now().Add(5 * time.Second); linkExists(s.b) && time.Now().Before(deadline); {
		time.Sleep(50 * time.Millisecond)
	}
	for deadline := time.Now().Add(5 * time.Second); !s.linkUp(0) && time.Now().Before(deadline); {
		time.Sleep(50 * time.Millisecond)
	}
	g := startGovSwitch(t, t.TempDir())
	configure(func(args ...string) string { t.Helper(); return g.vsctl(t, args...) })
	gov = step("govswitchd", g.ctl)
	return ovs, gov
}

// linkUp reports whether loop link i has its carrier.
func (s *stpBed) linkUp(i int) bool {
	out, err := exec.Command("cat", "/sys/class/net/"+s.links[i]+"/carrier").CombinedOutput()
	return err == nil && strings.TrimSpace(string(out)) == "1"
}

// TestIntegrationSTPFlushOnTopologyChange: under STP a topology change
// flushes the whole MAC table, as ovs-vswitchd's does.
func TestIntegrationSTPFlushOnTopologyChange(t *testing.T) {
	s := newSTPBed(t)
	root := regexp.MustCompile(`(?m)^  ` + s.links[3] + `\s+root\s+forwarding\s`)
	ovs, gov := s.bothSwitches(t, s.configure, func(who, ctl string) fdbAround {
		s.converge(t, ctl, who)
		// The last port to forward started a topology change: for max
		// age plus forward delay (10 s) the root's BPDUs carry TC, and
		// each one flushes the table again. Learn after it.
		time.Sleep(12 * time.Second)
		return s.fdbAroundFailover(t, who, ctl, "stp/show", root)
	})
	compareFDB(t, ovs, gov)
}

// TestIntegrationRSTPFlushOnTopologyChange: under RSTP a topology change
// flushes only the entries of the ports it reaches, as ovs-vswitchd's
// does: the hosts' edge ports keep theirs.
func TestIntegrationRSTPFlushOnTopologyChange(t *testing.T) {
	s := newSTPBed(t)
	root := regexp.MustCompile(`(?m)^  ` + s.links[3] + `\s+Root\s+Forwarding\s`)
	ovs, gov := s.bothSwitches(t, s.configureRSTP, func(who, ctl string) fdbAround {
		s.convergeRSTP(t, ctl, who)
		return s.fdbAroundFailover(t, who, ctl, "rstp/show", root)
	})
	compareFDB(t, ovs, gov)
	if len(ovs.after) == 0 {
		t.Errorf("ovs-vswitchd flushed every entry under RSTP: the test shows no per-port flush")
	}
}
