package vswitchd

import (
	"fmt"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/govswitch/govswitch/internal/testbed"
)

// fdbAge cuts the age column of fdb/show and mdb/show lines.
var fdbAge = regexp.MustCompile(`(?m)\s+\d+$`)

// mirrorFlushSteps learns h1, h2 and h3 on a snooping bridge whose mirror
// selects h1's port, h2 joins 239.1.1.1, then it deletes h3's port (no
// mirror names it) and then h1's (the mirror's source), showing fdb/show
// and mdb/show, ages cut, after each step.
func (b *mirrorBed) mirrorFlushSteps(t *testing.T, vsctl func(args ...string) string, ctl string, raw *testbed.RawConn) []string {
	t.Helper()
	b.configure(vsctl)
	vsctl("set", "Bridge", b.name, "mcast_snooping_enable=true")
	time.Sleep(300 * time.Millisecond)
	var out []string
	show := func(step string) {
		t.Helper()
		time.Sleep(300 * time.Millisecond)
		for _, cmd := range []string{"fdb/show", "mdb/show"} {
			r := appctlAt(t, ctl, cmd, b.name)
			if r.code != 0 {
				t.Fatalf("ovs-appctl %s: %d %s", cmd, r.code, r.err)
			}
			// The rows after the heading, sorted: their order is the
			// tables' recency order, which the hosts' own background
			// traffic (IPv6 solicitations) shuffles.
			rows := strings.Split(strings.TrimRight(r.out, "\n"), "\n")
			var lines []string
			for _, l := range rows[1:] {
				if !strings.Contains(l, "LOCAL") {
					lines = append(lines, fdbAge.ReplaceAllString(l, " AGE"))
				}
			}
			sort.Strings(lines)
			out = append(out, fmt.Sprintf("%s: %s\n%s", step, cmd, strings.Join(append(rows[:1], lines...), "\n")))
		}
	}
	for _, p := range [][2]int{{0, 1}, {1, 2}} {
		if o, err := b.hosts[p[0]].Exec("ping", "-c", "2", "-i", "0.2", "-W", "2", fmt.Sprintf("10.0.0.%d", p[1]+1)); err != nil {
			t.Fatalf("h%d -> h%d: %v\n%s", p[0]+1, p[1]+1, err, o)
		}
	}
	if err := raw.Send(mcastIPFrame(2, [4]byte{239, 1, 1, 1}, 2, igmpMsg(0x16, 0, 0, 0, 239, 1, 1, 1))); err != nil {
		t.Fatal(err)
	}
	show("learned")
	vsctl("del-port", b.name, b.ports[2])
	show("an unmirrored port deleted")
	vsctl("del-port", b.name, b.ports[0])
	show("the mirror's source port deleted")
	return out
}

// TestIntegrationMirrorPortFlush: as ovs-vswitchd 3.1, deleting a port
// forgets the addresses learned on it, and deleting one a mirror selects
// as its source forgets the whole MAC table and the multicast snooping
// table too; ovs-vswitchd first in the same boot, fdb/show and mdb/show
// compared after each step (issue 16).
func TestIntegrationMirrorPortFlush(t *testing.T) {
	b := newMirrorBed(t)
	raw := testbed.OpenRaw(t, b.hosts[1], "eth0")

	o := startOVS(t)
	ovs := b.mirrorFlushSteps(t, func(args ...string) string { t.Helper(); return o.must(t, "ovs-vsctl", args...) }, o.ctl, raw)
	stopOVS(t, o, b.name)
	// del-port leaves the veths: the second run adds them again.
	g := startGovSwitch(t, t.TempDir())
	gov := b.mirrorFlushSteps(t, func(args ...string) string { t.Helper(); return g.vsctl(t, args...) }, g.ctl, raw)

	t.Logf("ovs-vswitchd:\n%s\ngovswitchd:\n%s", strings.Join(ovs, "\n"), strings.Join(gov, "\n"))
	if strings.Join(ovs, "\n") != strings.Join(gov, "\n") {
		t.Errorf("govswitchd's MAC and snooping tables differ from ovs-vswitchd's")
	}
	// What the test is about, in ovs-vswitchd's own output: h2's
	// address and group survive the first deletion, not the second.
	h2 := b.macs[1].String()
	if len(ovs) != 6 || !strings.Contains(ovs[2], h2) || !strings.Contains(ovs[3], "239.1.1.1") ||
		strings.Contains(ovs[4], h2) || strings.Contains(ovs[5], "239.1.1.1") {
		t.Errorf("ovs-vswitchd did not show the behaviour this test expects of it:\n%s", strings.Join(ovs, "\n"))
	}
}
