package vswitchd

import (
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/govswitch/govswitch/internal/testbed"
	"github.com/vishvananda/netlink"
)

// stpBed is a loop: two bridges joined by two veth pairs, and a host on
// each bridge.
//
//	h1 10.0.0.1 ── <n>h1 [A] <n>a1 ═══ <n>b1 [B] <n>h2 ── h2 10.0.0.2
//	                         <n>a2 ═══ <n>b2
//
// A has the lower bridge priority, so it is the root; B's root port is
// b1 (port number 1 beats 2 at equal cost) and b2 must block.
type stpBed struct {
	a, b   string // bridge names
	links  [4]string
	hostA  string
	hostB  string
	h1, h2 *testbed.Netns
}

func newSTPBed(t *testing.T) *stpBed {
	t.Helper()
	testbed.Require(t)
	n := bedSeq.Add(1)
	s := &stpBed{a: fmt.Sprintf("st%dA", n), b: fmt.Sprintf("st%dB", n)}
	for i, end := range []string{"a1", "b1", "a2", "b2"} {
		s.links[i] = fmt.Sprintf("st%d%s", n, end)
	}
	for i := 0; i < 4; i += 2 {
		la := netlink.NewLinkAttrs()
		la.Name = s.links[i]
		if err := netlink.LinkAdd(&netlink.Veth{LinkAttrs: la, PeerName: s.links[i+1]}); err != nil {
			t.Fatalf("veth %s <-> %s: %v", s.links[i], s.links[i+1], err)
		}
		name := s.links[i]
		t.Cleanup(func() {
			if l, err := netlink.LinkByName(name); err == nil {
				netlink.LinkDel(l)
			}
		})
	}
	for _, l := range s.links {
		// No IPv6 of their own: the links carry only what is bridged.
		os.WriteFile("/proc/sys/net/ipv6/conf/"+l+"/disable_ipv6", []byte("1"), 0o644)
		if out, err := exec.Command("ip", "link", "set", l, "up").CombinedOutput(); err != nil {
			t.Fatalf("ip link set %s up: %v\n%s", l, err, out)
		}
	}
	s.h1, s.h2 = testbed.NewNetns(t), testbed.NewNetns(t)
	s.hostA, s.hostB = fmt.Sprintf("st%dh1", n), fmt.Sprintf("st%dh2", n)
	testbed.Veth(t, s.hostA, s.h1, "eth0", "10.0.0.1/24")
	testbed.Veth(t, s.hostB, s.h2, "eth0", "10.0.0.2/24")
	return s
}

// configure builds both bridges with STP on and OVS's test timers
// (hello 1 s, max age 6 s, forward delay 4 s), every STP port number set.
func (s *stpBed) configure(vsctl func(args ...string) string) {
	for i, br := range []string{s.a, s.b} {
		vsctl("add-br", br, "--", "set", "Bridge", br, "stp_enable=true",
			"other_config:stp-system-id=00:00:00:00:00:0"+strconv.Itoa(i+1),
			"other_config:stp-priority="+[]string{"4096", "32768"}[i],
			"other_config:stp-hello-time=1", "other_config:stp-max-age=6", "other_config:stp-forward-delay=4")
		host := []string{s.hostA, s.hostB}[i]
		for j, p := range []string{s.links[i], s.links[i+2], host} {
			vsctl("add-port", br, p, "--", "set", "Port", p, "other_config:stp-port-num="+strconv.Itoa(j+1))
		}
	}
}

// stpRun is what one switch did.
type stpRun struct {
	show   map[string]string // stp/show per bridge
	status map[string]string // "bridge:key" and "port:key" -> value, stp_sec_in_state left out
	frames uint64            // frames on the loop's links while h1 pings h2
	loss   int
	stats  []string // the keys of B's root port's statistics
	// ofState is B's ports' OpenFlow 1.0 state lines (ovs-ofctl show),
	// which carry the STP state.
	ofState []string
	bpdu    []string // the datapath's BPDU flows into B, pid and statistics cut, sorted
	// failShow is B's stp/show after the root link lost its carrier and
	// the tree settled again; failLoss the pings lost then.
	failShow string
	failLoss int
}

var stpTable = regexp.MustCompile(`(?m)^  (\S+)\s+(root|designated|alternate|disabled)\s+(\S+)\s+(\d+)\s+(\d+\.\d+)$`)

// converge waits (up to 40 s) until stp/show says both bridges have all
// their ports settled: forwarding, or blocking.
func (s *stpBed) converge(t *testing.T, ctl, who string) {
	t.Helper()
	for deadline := time.Now().Add(40 * time.Second); ; time.Sleep(500 * time.Millisecond) {
		settled, out := 0, ""
		for _, br := range []string{s.a, s.b} {
			r := appctlAt(t, ctl, "stp/show", br)
			out += r.out + r.err
			for _, m := range stpTable.FindAllStringSubmatch(r.out, -1) {
				if m[3] == "forwarding" || m[3] == "blocking" {
					settled++
				}
			}
		}
		if settled == 6 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: spanning tree not settled after 40 s:\n%s", who, out)
		}
	}
}

// pingCounting pings h1->h2 three times from cold ARP caches and returns
// the pings lost and the frames the loop's links carried meanwhile (and
// for a second after, as a storm keeps going).
func (s *stpBed) pingCounting(t *testing.T) (loss int, frames uint64) {
	t.Helper()
	s.h1.Exec("ip", "neigh", "flush", "all")
	s.h2.Exec("ip", "neigh", "flush", "all")
	var before uint64
	for _, l := range s.links {
		before += linkCounter(t, l, "tx_packets")
	}
	out, _ := s.h1.Exec("ping", "-c", "3", "-i", "0.3", "-W", "1", "10.0.0.2")
	time.Sleep(time.Second)
	for _, l := range s.links {
		frames += linkCounter(t, l, "tx_packets")
	}
	return parseLoss(t, out), frames - before
}

func linkCounter(t *testing.T, dev, name string) uint64 {
	t.Helper()
	b, err := os.ReadFile("/sys/class/net/" + dev + "/statistics/" + name)
	if err != nil {
		t.Fatalf("%s: %v", dev, err)
	}
	n, _ := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
	return n
}

// run converges, pings h1->h2 from cold ARP caches and counts the frames
// the loop's links carried meanwhile, and reads stp/show, the status
// columns and the datapath's BPDU flows.
func (s *stpBed) run(t *testing.T, who, ctl string, vsctl func(args ...string) string, showB func() string) stpRun {
	t.Helper()
	s.converge(t, ctl, who)
	r := stpRun{show: map[string]string{}, status: map[string]string{}}
	port := ""
	for _, l := range strings.Split(showB(), "\n") {
		// LOCAL's state (its device's LINK_DOWN) is no part of STP.
		if m := regexp.MustCompile(`^ (\d+|LOCAL)\((\S+)\):`).FindStringSubmatch(l); m != nil {
			port = m[2]
		}
		if st, ok := strings.CutPrefix(strings.TrimSpace(l), "state:"); ok && port != s.b {
			r.ofState = append(r.ofState, port+": "+strings.TrimSpace(st))
		}
	}
	r.loss, r.frames = s.pingCounting(t)
	for _, br := range []string{s.a, s.b} {
		r.show[br] = appctlAt(t, ctl, "stp/show", br).out
	}
	// The status columns are refreshed every few seconds: wait until
	// every STP port of both bridges has its state there.
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(500 * time.Millisecond) {
		r.status = map[string]string{}
		for _, br := range []string{s.a, s.b} {
			for _, kv := range parseOVSMap(vsctl("get", "Bridge", br, "status")) {
				r.status[br+":"+kv[0]] = kv[1]
			}
		}
		ok := true
		for _, p := range append(s.links[:], s.hostA, s.hostB) {
			for _, kv := range parseOVSMap(vsctl("get", "Port", p, "status")) {
				if kv[0] != "stp_sec_in_state" {
					r.status[p+":"+kv[0]] = kv[1]
				}
			}
			if st := r.status[p+":stp_state"]; st != "forwarding" && st != "blocking" {
				ok = false
			}
		}
		if ok {
			break
		}
		if time.Now().After(deadline) {
			t.Errorf("%s: status columns not settled: %v", who, r.status)
			break
		}
	}
	// Port statistics: the BPDU counts, B's root port having received
	// A's BPDUs and none of them bad.
	for _, kv := range parseOVSMap(vsctl("get", "Port", s.links[1], "statistics")) {
		r.stats = append(r.stats, kv[0])
		if kv[0] == "stp_rx_count" && (kv[1] == "0" || kv[1] == "") || kv[0] == "stp_error_count" && kv[1] != "0" {
			t.Errorf("%s: Port %s statistics %s=%s", who, s.links[1], kv[0], kv[1])
		}
	}
	sort.Strings(r.stats)
	dump, err := exec.Command("ovs-dpctl", "dump-flows", "--names", "system@ovs-system").CombinedOutput()
	if err != nil {
		t.Fatalf("ovs-dpctl dump-flows: %v\n%s", err, dump)
	}
	cut := regexp.MustCompile(`, packets:.*, actions:`)
	pid := regexp.MustCompile(`pid=\d+`)
	for _, l := range strings.Split(string(dump), "\n") {
		// B's ports get A's Configuration BPDUs every hello; A's get
		// only B's occasional TCNs, whose flows come and go.
		if strings.Contains(l, "01:80:c2:00:00:00") && (strings.Contains(l, "in_port("+s.links[1]+")") || strings.Contains(l, "in_port("+s.links[3]+")")) {
			r.bpdu = append(r.bpdu, pid.ReplaceAllString(cut.ReplaceAllString(l, " actions:"), "pid=N"))
		}
	}
	sort.Strings(r.bpdu)
	return r
}

// failover takes the root link's carrier away (a1 down, so b1 has none)
// and waits until B's alternate port b2 is its forwarding root port; then
// h1 pings h2 again. The link comes back up at the end.
func (s *stpBed) failover(t *testing.T, who, ctl string, r *stpRun) {
	t.Helper()
	setLink := func(state string) {
		if out, err := exec.Command("ip", "link", "set", s.links[0], state).CombinedOutput(); err != nil {
			t.Fatalf("ip link set %s %s: %v\n%s", s.links[0], state, err, out)
		}
	}
	setLink("down")
	defer setLink("up")
	root := regexp.MustCompile(`(?m)^  ` + s.links[3] + `\s+root\s+forwarding\s`)
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(500 * time.Millisecond) {
		r.failShow = appctlAt(t, ctl, "stp/show", s.b).out
		if root.MatchString(r.failShow) {
			break
		}
		if time.Now().After(deadline) {
			t.Errorf("%s: %s did not take over as root port within 30 s of %s losing carrier:\n%s", who, s.links[3], s.links[1], r.failShow)
			return
		}
	}
	out, _ := s.h1.Exec("ping", "-c", "3", "-i", "0.3", "-W", "1", "10.0.0.2")
	r.failLoss = parseLoss(t, out)
	if r.failLoss != 0 {
		dump, _ := exec.Command("ovs-dpctl", "dump-flows", "--names", "system@ovs-system").CombinedOutput()
		t.Errorf("%s: after failover h1->h2 lost %d of 3 pings:\n%s\nfdb/show %s:\n%s\nfdb/show %s:\n%s\nstp/show:\n%s%s\ndatapath flows:\n%s",
			who, r.failLoss, out, s.a, appctlAt(t, ctl, "fdb/show", s.a).out, s.b, appctlAt(t, ctl, "fdb/show", s.b).out,
			appctlAt(t, ctl, "stp/show", s.a).out, r.failShow, dump)
	}
}

// parseOVSMap parses ovs-vsctl's {k=v, k="v"} into pairs. Lines around
// the map (ovs-vsctl's own warnings on stderr, such as timeval's
// "Unreasonably long ... poll interval" on a loaded bed) are skipped.
func parseOVSMap(s string) [][2]string {
	for _, l := range strings.Split(s, "\n") {
		if l = strings.TrimSpace(l); strings.HasPrefix(l, "{") {
			s = l
		}
	}
	s = strings.Trim(strings.TrimSpace(s), "{}")
	var out [][2]string
	for _, kv := range strings.Split(s, ", ") {
		k, v, ok := strings.Cut(kv, "=")
		if ok {
			out = append(out, [2]string{k, strings.Trim(v, `"`)})
		}
	}
	return out
}

func (s *stpBed) check(t *testing.T, who string, r stpRun) {
	t.Helper()
	if r.loss != 0 {
		t.Errorf("%s: h1->h2 lost %d of 3 pings", who, r.loss)
	}
	// Three pings and their ARP, and a BPDU a second from each designated
	// port: a few dozen frames. A loop without a blocked port melts into
	// thousands.
	if r.frames > 200 {
		t.Errorf("%s: the loop's links carried %d frames during 3 pings: a broadcast storm", who, r.frames)
	}
	blocking := 0
	for _, br := range []string{s.a, s.b} {
		for _, m := range stpTable.FindAllStringSubmatch(r.show[br], -1) {
			if m[3] == "blocking" {
				blocking++
				if m[1] != s.links[3] || m[2] != "alternate" {
					t.Errorf("%s: %s blocks as %s, want %s (alternate)", who, m[1], m[2], s.links[3])
				}
			}
		}
	}
	if blocking != 1 {
		t.Errorf("%s: %d ports blocking, want exactly 1:\n%s%s", who, blocking, r.show[s.a], r.show[s.b])
	}
	if !strings.Contains(r.show[s.a], "This bridge is the root") {
		t.Errorf("%s: %s is not the root:\n%s", who, s.a, r.show[s.a])
	}
	want := map[string]string{
		s.a + ":stp_bridge_id": "1000.000000000001", s.a + ":stp_designated_root": "1000.000000000001", s.a + ":stp_root_path_cost": "0",
		s.b + ":stp_bridge_id": "8000.000000000002", s.b + ":stp_designated_root": "1000.000000000001", s.b + ":stp_root_path_cost": "2",
		s.links[1] + ":stp_role": "root", s.links[3] + ":stp_role": "alternate", s.links[3] + ":stp_state": "blocking",
	}
	for k, v := range want {
		if r.status[k] != v {
			t.Errorf("%s: status %s = %q, want %q", who, k, r.status[k], v)
		}
	}
	if len(r.bpdu) == 0 || !strings.Contains(r.bpdu[0], "slow_path(stp)") {
		t.Errorf("%s: no BPDU flow with userspace(...slow_path(stp)) in the datapath: %q", who, r.bpdu)
	}
}

// TestIntegrationSTPLoop: a loop of two bridges with STP converges to one
// blocked port, pings cross it, and no storm runs; ovs-vswitchd 3.1 does
// the same in the same boot, and stp/show, the status columns and the
// BPDU megaflows read the same.
func TestIntegrationSTPLoop(t *testing.T) {
	s := newSTPBed(t)
	o := startOVS(t)
	ovsctl := func(args ...string) string { t.Helper(); return strings.TrimSpace(o.must(t, "ovs-vsctl", args...)) }
	s.configure(ovsctl)
	ovs := s.run(t, "ovs-vswitchd", o.ctl, ovsctl, func() string { return o.must(t, "ovs-ofctl", "show", s.b) })
	s.failover(t, "ovs-vswitchd", o.ctl, &ovs)
	t.Logf("ovs-vswitchd: %d frames, %d lost; stp/show:\n%s%s", ovs.frames, ovs.loss, ovs.show[s.a], ovs.show[s.b])
	o.exitCleanup(t, s.a)
	for deadline := time.Now().Add(5 * time.Second); linkExists(s.b) && time.Now().Before(deadline); {
		time.Sleep(50 * time.Millisecond)
	}

	g := startGovSwitch(t, t.TempDir())
	vsctl := func(args ...string) string { t.Helper(); return g.vsctl(t, args...) }
	s.configure(vsctl)
	gov := s.run(t, "govswitchd", g.ctl, vsctl, func() string {
		out, err := ofctlAt(g.mgmt(t, s.b), "show")
		if err != nil {
			t.Errorf("ovs-ofctl show %s: %v\n%s", s.b, err, out)
		}
		return out
	})
	s.failover(t, "govswitchd", g.ctl, &gov)
	t.Logf("govswitchd: %d frames, %d lost; stp/show:\n%s%s", gov.frames, gov.loss, gov.show[s.a], gov.show[s.b])

	s.check(t, "ovs-vswitchd", ovs)
	s.check(t, "govswitchd", gov)
	for _, br := range []string{s.a, s.b} {
		if gov.show[br] != ovs.show[br] {
			t.Errorf("stp/show %s differs:\novs-vswitchd:\n%s\ngovswitchd:\n%s", br, ovs.show[br], gov.show[br])
		}
	}
	for k, v := range ovs.status {
		if gov.status[k] != v {
			t.Errorf("status %s: govswitchd %q, ovs-vswitchd %q", k, gov.status[k], v)
		}
	}
	if t.Failed() {
		t.Logf("status columns:\novs-vswitchd %v\ngovswitchd   %v", ovs.status, gov.status)
	}
	t.Logf("OpenFlow 1.0 port states of %s:\novs-vswitchd %q\ngovswitchd   %q", s.b, ovs.ofState, gov.ofState)
	if strings.Join(gov.ofState, ",") != strings.Join(ovs.ofState, ",") || len(gov.ofState) != 3 {
		t.Errorf("ovs-ofctl show %s port states: govswitchd %q, ovs-vswitchd %q", s.b, gov.ofState, ovs.ofState)
	}
	if strings.Join(gov.stats, ",") != strings.Join(ovs.stats, ",") {
		t.Errorf("Port statistics keys: govswitchd %q, ovs-vswitchd %q", gov.stats, ovs.stats)
	}
	if gov.failShow != ovs.failShow {
		t.Errorf("stp/show %s after failover differs:\novs-vswitchd:\n%s\ngovswitchd:\n%s", s.b, ovs.failShow, gov.failShow)
	}
	t.Logf("BPDU flows:\novs-vswitchd %q\ngovswitchd   %q", ovs.bpdu, gov.bpdu)
	if strings.Join(gov.bpdu, "\n") != strings.Join(ovs.bpdu, "\n") {
		t.Errorf("BPDU megaflows differ:\novs-vswitchd %q\ngovswitchd   %q", ovs.bpdu, gov.bpdu)
	}
	// stp/tcn and a bridge without STP, as ovs-vswitchd answers them.
	if r := appctlAt(t, g.ctl, "stp/tcn", s.a); r.code != 0 || strings.TrimSpace(r.out) != "OK" {
		t.Errorf("stp/tcn: %d %q %q", r.code, r.out, r.err)
	}
	if r := appctlAt(t, g.ctl, "stp/show", "nosuchbr"); r.code == 0 || !strings.Contains(r.err, "no such stp object") {
		t.Errorf("stp/show nosuchbr: %d %q %q", r.code, r.out, r.err)
	}
	// With rstp_enable too, RSTP takes over, as in ovs-vswitchd: STP
	// stops and rstp/show answers.
	vsctl("set", "Bridge", s.b, "rstp_enable=true")
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		if r := appctlAt(t, g.ctl, "stp/show", s.b); r.code != 0 && appctlAt(t, g.ctl, "rstp/show", s.b).code == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Errorf("rstp_enable=true on %s: STP still runs, or RSTP does not", s.b)
			break
		}
	}
}
