package vswitchd

import (
	"encoding/binary"
	"fmt"
	"net"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/govswitch/govswitch/internal/testbed"
)

// groupBed is three hosts on one bridge, configured with ovs-vsctl:
// h1 (OpenFlow port 1) sends, h2 (port 2) and h3 (port 3) receive. The
// same groups, meters and traffic run against ovs-vswitchd 3.1 and then
// govswitchd.
type groupBed struct {
	name   string
	hosts  [3]*testbed.Netns
	ports  [3]string
	macs   [3]net.HardwareAddr
	rundir string
}

func newGroupBed(t *testing.T) *groupBed {
	t.Helper()
	testbed.Require(t)
	n := bedSeq.Add(1)
	b := &groupBed{name: fmt.Sprintf("gg%d", n), rundir: t.TempDir()}
	for i := range b.hosts {
		b.hosts[i] = testbed.NewNetns(t)
		b.ports[i] = fmt.Sprintf("gg%d%c", n, 'a'+i)
		b.macs[i] = testbed.Veth(t, b.ports[i], b.hosts[i], "eth0", fmt.Sprintf("10.0.0.%d/24", i+1))
	}
	return b
}

func (b *groupBed) configure(vsctl func(args ...string) string) {
	vsctl("add-br", b.name, "--", "set", "Bridge", b.name, "fail-mode=secure")
	for i, p := range b.ports {
		vsctl("add-port", b.name, p, "--", "set", "Interface", p, "ofport_request="+strconv.Itoa(i+1))
	}
}

// groupRun is what one switch did.
type groupRun struct {
	selectGot [2]int // frames of 64 flows to the select group at h2, h3
	selectDP  string // the datapath flows of the select group's traffic
	allGot    [2]int // frames of 20 to the all group at h2, h3
	ffGot     [2]int // frames of 20 to the ff group at h2, h3 with h2's link up
	ffDownGot [2]int // ... with h2's link down
	ffBackGot [2]int // ... with it back up
	// ffDownAfter and ffBackAfter are how long after the carrier changed
	// the switch took to send the frames the other way.
	ffDownAfter, ffBackAfter time.Duration
	meterGot                 int    // frames of 200 through a 10 pktps meter at h2
	meterStats               string // meter-stats after
	groupStats               string // dump-group-stats after
	// What ovs-ofctl prints that must be the same for both switches.
	groups13, groups15 []string // dump-groups lines, sorted
	meterFeatures      string
	meters             string // dump-meters
}

// counter counts the test's UDP frames (destination port dport) reaching
// one host, from a raw socket opened before the frames are sent.
type counter struct {
	rx    *testbed.RawConn
	dport uint16
}

func (c *counter) drain(quiet time.Duration) int {
	n := 0
	for {
		_, err := c.rx.Recv(quiet, func(f []byte) bool {
			return len(f) >= 42 && f[23] == 17 && binary.BigEndian.Uint16(f[36:]) == c.dport
		})
		if err != nil {
			return n
		}
		n++
	}
}

// send sends n UDP frames from h1 to h2's address, source ports from
// sport up (one flow each when distinct), gap apart, and returns how many
// h2 and h3 received.
func (b *groupBed) send(t *testing.T, n int, sport, dport uint16, distinct bool, gap time.Duration) [2]int {
	t.Helper()
	tx := testbed.OpenRaw(t, b.hosts[0], "eth0")
	defer tx.Close()
	rx := [2]*counter{{testbed.OpenRaw(t, b.hosts[1], "eth0"), dport}, {testbed.OpenRaw(t, b.hosts[2], "eth0"), dport}}
	defer rx[0].rx.Close()
	defer rx[1].rx.Close()
	var got [2]int
	done := make(chan struct{})
	for i := range rx {
		go func(i int) {
			defer func() { done <- struct{}{} }()
			// Frames keep coming while the sender sends: drain until
			// quiet for longer than the gap.
			got[i] = rx[i].drain(gap + 1500*time.Millisecond)
		}(i)
	}
	for i := 0; i < n; i++ {
		sp := sport
		if distinct {
			sp += uint16(i)
		}
		if err := tx.Send(udpFrame(b.macs[0], b.macs[1], sp, dport)); err != nil {
			t.Fatal(err)
		}
		if gap > 0 {
			time.Sleep(gap)
		}
	}
	<-done
	<-done
	return got
}

// settle sends single frames to dport until one reaches host want (1: h2,
// 2: h3), as the switch takes a link change in its own time, and returns
// how long that took; it fails the test after 15 s.
func (b *groupBed) settle(t *testing.T, dport uint16, want int) time.Duration {
	t.Helper()
	tx := testbed.OpenRaw(t, b.hosts[0], "eth0")
	defer tx.Close()
	rx := testbed.OpenRaw(t, b.hosts[want], "eth0")
	defer rx.Close()
	start := time.Now()
	for time.Since(start) < 15*time.Second {
		if err := tx.Send(udpFrame(b.macs[0], b.macs[1], 20000, dport)); err != nil {
			t.Fatal(err)
		}
		if _, err := rx.Recv(200*time.Millisecond, func(f []byte) bool {
			return len(f) >= 42 && f[23] == 17 && binary.BigEndian.Uint16(f[36:]) == dport
		}); err == nil {
			return time.Since(start)
		}
	}
	t.Fatalf("port %d: frames did not move to h%d within 15 s of the link change", dport, want+1)
	return 0
}

// setLink sets h's eth0 up or down, which takes the carrier off its
// veth peer, the bridge's port.
func setLink(t *testing.T, h *testbed.Netns, up bool) {
	t.Helper()
	state := "down"
	if up {
		state = "up"
	}
	if out, err := h.Exec("ip", "link", "set", "eth0", state); err != nil {
		t.Fatalf("ip link set eth0 %s: %v\n%s", state, err, out)
	}
}

// waitCarrier waits until the bridge's port dev has (or lacks) carrier
// as the kernel reports it.
func waitCarrier(t *testing.T, dev string, up bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		ifi, err := net.InterfaceByName(dev)
		if err == nil && (ifi.Flags&net.FlagRunning != 0) == up {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: carrier not %v within 10s", dev, up)
		}
	}
}

var dpStats = regexp.MustCompile(`, packets:[^,]*, bytes:[^,]*, used:[^,]*(, flags:[^,]*)?, actions:`)

// steps runs the groups and the meter on a configured switch; ofctl runs
// the real ovs-ofctl against it, dp names its datapath for ovs-dpctl.
func (b *groupBed) steps(t *testing.T, ofctl func(args ...string) (string, error), dp string) groupRun {
	t.Helper()
	must := func(args ...string) string {
		t.Helper()
		out, err := ofctl(args...)
		if err != nil {
			t.Fatalf("ovs-ofctl %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return out
	}
	var r groupRun
	must("-O", "OpenFlow13", "add-group", "group_id=1,type=select,bucket=output:2,bucket=output:3")
	must("-O", "OpenFlow13", "add-group", "group_id=2,type=all,bucket=output:2,bucket=output:3")
	must("-O", "OpenFlow13", "add-group", "group_id=3,type=ff,bucket=watch_port:2,output:2,bucket=watch_port:3,output:3")
	must("-O", "OpenFlow13", "add-flow", "priority=10,udp,in_port=1,tp_dst=9001,actions=group:1")
	must("-O", "OpenFlow13", "add-flow", "priority=10,udp,in_port=1,tp_dst=9002,actions=group:2")
	must("-O", "OpenFlow13", "add-flow", "priority=10,udp,in_port=1,tp_dst=9003,actions=group:3")

	r.selectGot = b.send(t, 64, 20000, 9001, true, 2*time.Millisecond)
	out, err := exec.Command("ovs-dpctl", "dump-flows", dp).CombinedOutput()
	if err != nil {
		t.Fatalf("ovs-dpctl dump-flows %s: %v\n%s", dp, err, out)
	}
	for _, l := range strings.Split(string(out), "\n") {
		if strings.Contains(l, "dst=9001") {
			r.selectDP += dpStats.ReplaceAllString(l, " actions:") + "\n"
		}
	}
	r.allGot = b.send(t, 20, 20000, 9002, false, 5*time.Millisecond)
	r.ffGot = b.send(t, 20, 20000, 9003, false, 5*time.Millisecond)
	setLink(t, b.hosts[1], false)
	waitCarrier(t, b.ports[1], false)
	r.ffDownAfter = b.settle(t, 9003, 2)
	r.ffDownGot = b.send(t, 20, 20000, 9003, false, 5*time.Millisecond)
	setLink(t, b.hosts[1], true)
	waitCarrier(t, b.ports[1], true)
	r.ffBackAfter = b.settle(t, 9003, 1)
	r.ffBackGot = b.send(t, 20, 20000, 9003, false, 5*time.Millisecond)
	r.groupStats = must("-O", "OpenFlow13", "dump-group-stats")
	must("-O", "OpenFlow15", "add-group", "group_id=4,type=select,selection_method=hash,fields(ip_src,nw_proto),bucket=bucket_id:7,weight:5,output:2,bucket=output:3")
	r.groups13 = sortedGroupLines(must("-O", "OpenFlow13", "dump-groups"))
	r.groups15 = sortedGroupLines(must("-O", "OpenFlow15", "dump-groups"))
	r.meterFeatures = must("-O", "OpenFlow13", "meter-features")

	// 200 frames at about 200 per second through a meter of 10 packets per
	// second (its bucket holds 10: OVS sets the burst to the rate).
	must("-O", "OpenFlow13", "add-meter", "meter=1,pktps,stats,bands=type=drop,rate=10")
	must("-O", "OpenFlow13", "add-flow", "priority=10,udp,in_port=1,tp_dst=9004,actions=meter:1,output:2")
	got := b.send(t, 200, 20000, 9004, false, 5*time.Millisecond)
	r.meterGot = got[0]
	r.meterStats = must("-O", "OpenFlow13", "meter-stats")
	r.meters = must("-O", "OpenFlow13", "dump-meters")
	return r
}

// checkGroupRun holds one switch's run to what the groups mean.
func checkGroupRun(t *testing.T, who string, r groupRun) {
	t.Helper()
	t.Logf("%s: select %v, all %v, ff %v / down %v (failed over %v after the carrier went) / up %v (%v), meter %d of 200\nselect's datapath flows:\n%s%s%s",
		who, r.selectGot, r.allGot, r.ffGot, r.ffDownGot, r.ffDownAfter.Round(time.Millisecond), r.ffBackGot,
		r.ffBackAfter.Round(time.Millisecond), r.meterGot, r.selectDP, r.groupStats, r.meterStats)
	if r.selectGot[0]+r.selectGot[1] != 64 || r.selectGot[0] < 8 || r.selectGot[1] < 8 {
		t.Errorf("%s: 64 flows to the select group reached h2, h3 as %v: want each flow once, both buckets used", who, r.selectGot)
	}
	if r.allGot != [2]int{20, 20} {
		t.Errorf("%s: 20 frames to the all group reached h2, h3 as %v, want every frame to both", who, r.allGot)
	}
	if r.ffGot != [2]int{20, 0} || r.ffDownGot != [2]int{0, 20} || r.ffBackGot != [2]int{20, 0} {
		t.Errorf("%s: fast failover sent 20 frames as %v, with h2's link down %v, back up %v; want h2, then h3, then h2",
			who, r.ffGot, r.ffDownGot, r.ffBackGot)
	}
	if r.meterGot < 5 || r.meterGot > 60 {
		t.Errorf("%s: a 10 pktps meter passed %d of 200 frames sent in about a second", who, r.meterGot)
	}
	if !strings.Contains(r.meterStats, "meter:1 flow_count:1 packet_in_count:200 ") {
		t.Errorf("%s: meter-stats:\n%s", who, r.meterStats)
	}
	if !strings.Contains(r.groupStats, "group_id=2,") || !strings.Contains(r.groupStats, "ref_count=1,packet_count=20,") {
		t.Errorf("%s: dump-group-stats:\n%s", who, r.groupStats)
	}
}

// TestIntegrationGroupsMeters: select spreads flows over its buckets, all
// copies to every bucket, fast failover follows the watched port's link,
// and a meter drops above its rate — with real packets, as ovs-vswitchd
// 3.1 does in the same bed.
func TestIntegrationGroupsMeters(t *testing.T) {
	b := newGroupBed(t)

	o := startOVS(t)
	b.configure(func(args ...string) string { return o.must(t, "ovs-vsctl", args...) })
	ovsMgmt := filepath.Join(o.dir, b.name+".mgmt")
	ovs := b.steps(t, func(args ...string) (string, error) {
		return ofctlAt(ovsMgmt, args...)
	}, "system@ovs-system")
	o.exitCleanup(t, b.name)
	for _, h := range b.hosts {
		h.Exec("ip", "neigh", "flush", "all")
	}

	g := startGovSwitch(t, b.rundir)
	b.configure(func(args ...string) string { t.Helper(); return g.vsctl(t, args...) })
	govMgmt := g.mgmt(t, b.name)
	gov := b.steps(t, func(args ...string) (string, error) { return ofctlAt(govMgmt, args...) }, "system@ovs-system")

	checkGroupRun(t, "ovs-vswitchd", ovs)
	checkGroupRun(t, "govswitchd", gov)
	for _, c := range []struct {
		what     string
		ovs, gov string
	}{
		{"dump-groups (1.3)", strings.Join(ovs.groups13, "\n"), strings.Join(gov.groups13, "\n")},
		{"dump-groups (1.5)", strings.Join(ovs.groups15, "\n"), strings.Join(gov.groups15, "\n")},
		{"meter-features", ovs.meterFeatures, gov.meterFeatures},
		{"dump-meters", ovs.meters, gov.meters},
	} {
		if c.ovs != c.gov {
			t.Errorf("%s differs:\novs-vswitchd:\n%s\ngovswitchd:\n%s", c.what, c.ovs, c.gov)
		} else {
			t.Logf("%s, as both print it:\n%s", c.what, c.gov)
		}
	}
	// The select group hashes in the datapath, for both: one first-stage
	// datapath flow, with no L4 port in its mask, for all 64 UDP flows
	// (the second stage matches dp_hash: TestIntegrationSelectGroupDPHash).
	for who, dp := range map[string]string{"ovs-vswitchd": ovs.selectDP, "govswitchd": gov.selectDP} {
		if n := strings.Count(dp, "\n"); n != 1 || !strings.Contains(dp, "actions:hash(l4(0)),recirc(") {
			t.Errorf("%s: %d first-stage datapath flows for 64 select flows, want one that hashes and recirculates:\n%s", who, n, dp)
		}
	}
}

// sortedGroupLines are the group lines of dump-groups, sorted (the order
// is ovs-vswitchd's hash order).
func sortedGroupLines(out string) []string {
	var lines []string
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, " group_id=") {
			lines = append(lines, l)
		}
	}
	sort.Strings(lines)
	return lines
}

// ofctlAt runs ovs-ofctl with args, inserting the switch's management
// socket after the command (the first argument that is no option and no
// option's value).
func ofctlAt(mgmt string, args ...string) (string, error) {
	i := 0
	for i < len(args) && strings.HasPrefix(args[i], "-") {
		if args[i] == "-O" {
			i++
		}
		i++
	}
	if i >= len(args) {
		return "", fmt.Errorf("ovs-ofctl %v: no command", args)
	}
	full := append(append(append([]string{}, args[:i+1]...), "unix:"+mgmt), args[i+1:]...)
	out, err := exec.Command("ovs-ofctl", full...).CombinedOutput()
	return string(out), err
}
