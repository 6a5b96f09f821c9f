package vswitchd

import (
	"os/exec"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"
)

// RSTP on the spanning tree's loop (stp_integration_test.go's stpBed):
// two bridges joined twice, a host on each, A the root by priority.

// configureRSTP builds both bridges with RSTP on and the protocol's
// default timers (hello 2 s, max age 20 s, forward delay 15 s), every
// RSTP port number set.
func (s *stpBed) configureRSTP(vsctl func(args ...string) string) {
	for i, br := range []string{s.a, s.b} {
		vsctl("add-br", br, "--", "set", "Bridge", br, "rstp_enable=true",
			"other_config:rstp-address=00:00:00:00:00:0"+strconv.Itoa(i+1),
			"other_config:rstp-priority="+[]string{"4096", "32768"}[i])
		host := []string{s.hostA, s.hostB}[i]
		for j, p := range []string{s.links[i], s.links[i+2], host} {
			vsctl("add-port", br, p, "--", "set", "Port", p, "other_config:rstp-port-num="+strconv.Itoa(j+1))
		}
	}
}

var rstpTable = regexp.MustCompile(`(?m)^  (\S+)\s+(Root|Designated|Alternate|Backup|Disabled)\s+(\S+)\s+(\d+)\s+(\d+\.\d+)$`)

// rstpRun is what one switch did.
type rstpRun struct {
	settle time.Duration     // from configuration to every port settled
	show   map[string]string // rstp/show per bridge
	rows   []string          // the port rows of both rstp/show tables, sorted
	status map[string]string // "bridge:key" and "port:key" -> value, of the rstp_status columns
	stats  []string          // the keys of B's root port's rstp_statistics
	frames uint64            // frames on the loop's links while h1 pings h2
	loss   int
	// failShow is B's rstp/show after the root link lost its carrier and
	// the alternate took over; failLoss the pings lost then.
	failShow string
	failLoss int
	// ofState is B's ports' OpenFlow 1.0 state lines (ovs-ofctl show),
	// which carry the RSTP state as STP bits; bpdu the datapath's BPDU
	// flows into B, pid and statistics cut, sorted.
	ofState []string
	bpdu    []string
}

// rstpSettled reports whether every port of the table forwards, but
// alternate and backup ports, which discard.
func rstpSettled(show string) (settled, ports int) {
	for _, m := range rstpTable.FindAllStringSubmatch(show, -1) {
		ports++
		if m[3] == "Forwarding" || m[3] == "Discarding" && (m[2] == "Alternate" || m[2] == "Backup") {
			settled++
		}
	}
	return settled, ports
}

// convergeRSTP waits (up to 40 s) until rstp/show says both bridges
// have all their ports settled.
func (s *stpBed) convergeRSTP(t *testing.T, ctl, who string) {
	t.Helper()
	for deadline := time.Now().Add(40 * time.Second); ; time.Sleep(250 * time.Millisecond) {
		settled, out := 0, ""
		for _, br := range []string{s.a, s.b} {
			x := appctlAt(t, ctl, "rstp/show", br)
			out += x.out + x.err
			n, _ := rstpSettled(x.out)
			settled += n
		}
		if settled == 6 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: rapid spanning tree not settled after 40 s:\n%s", who, out)
		}
	}
}

func (s *stpBed) runRSTP(t *testing.T, who, ctl string, vsctl func(args ...string) string, showB func() string) rstpRun {
	t.Helper()
	start := time.Now()
	s.configureRSTP(vsctl)
	r := rstpRun{show: map[string]string{}, status: map[string]string{}}
	s.convergeRSTP(t, ctl, who)
	r.settle = time.Since(start)
	r.loss, r.frames = s.pingCounting(t)
	for _, br := range []string{s.a, s.b} {
		r.show[br] = appctlAt(t, ctl, "rstp/show", br).out
		for _, m := range rstpTable.FindAllStringSubmatch(r.show[br], -1) {
			r.rows = append(r.rows, br+" "+strings.Join(m[1:], " "))
		}
	}
	sort.Strings(r.rows)
	// The status columns are refreshed every few seconds: wait until
	// every port of both bridges has its settled state there.
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(500 * time.Millisecond) {
		r.status = map[string]string{}
		for _, br := range []string{s.a, s.b} {
			for _, kv := range parseOVSMap(vsctl("get", "Bridge", br, "rstp_status")) {
				r.status[br+":"+kv[0]] = kv[1]
			}
		}
		ok := true
		for _, p := range append(s.links[:], s.hostA, s.hostB) {
			for _, kv := range parseOVSMap(vsctl("get", "Port", p, "rstp_status")) {
				r.status[p+":"+kv[0]] = kv[1]
			}
			st, role := r.status[p+":rstp_port_state"], r.status[p+":rstp_port_role"]
			if st != "Forwarding" && !(st == "Discarding" && role == "Alternate") {
				ok = false
			}
		}
		if ok {
			break
		}
		if time.Now().After(deadline) {
			t.Errorf("%s: rstp_status columns not settled: %v", who, r.status)
			break
		}
	}
	for _, kv := range parseOVSMap(vsctl("get", "Port", s.links[1], "rstp_statistics")) {
		r.stats = append(r.stats, kv[0])
		if kv[0] == "rstp_rx_count" && (kv[1] == "0" || kv[1] == "") || kv[0] == "rstp_error_count" && kv[1] != "0" {
			t.Errorf("%s: Port %s rstp_statistics %s=%s", who, s.links[1], kv[0], kv[1])
		}
	}
	sort.Strings(r.stats)
	port := ""
	for _, l := range strings.Split(showB(), "\n") {
		if m := regexp.MustCompile(`^ (\d+|LOCAL)\((\S+)\):`).FindStringSubmatch(l); m != nil {
			port = m[2]
		}
		if st, ok := strings.CutPrefix(strings.TrimSpace(l), "state:"); ok && port != s.b {
			r.ofState = append(r.ofState, port+": "+strings.TrimSpace(st))
		}
	}
	dump, err := exec.Command("ovs-dpctl", "dump-flows", "--names", "system@ovs-system").CombinedOutput()
	if err != nil {
		t.Fatalf("ovs-dpctl dump-flows: %v\n%s", err, dump)
	}
	cut := regexp.MustCompile(`, packets:.*, actions:`)
	pid := regexp.MustCompile(`pid=\d+`)
	for _, l := range strings.Split(string(dump), "\n") {
		// B's ports get A's BPDUs every hello.
		if strings.Contains(l, "01:80:c2:00:00:00") && (strings.Contains(l, "in_port("+s.links[1]+")") || strings.Contains(l, "in_port("+s.links[3]+")")) {
			r.bpdu = append(r.bpdu, pid.ReplaceAllString(cut.ReplaceAllString(l, " actions:"), "pid=N"))
		}
	}
	sort.Strings(r.bpdu)
	return r
}

// failoverRSTP takes the root link's carrier away (a1 down, so b1 has
// none) and waits until B's alternate port b2 is its forwarding root
// port; then h1 pings h2 again. The link comes back up at the end.
func (s *stpBed) failoverRSTP(t *testing.T, who, ctl string, r *rstpRun) {
	t.Helper()
	setLink := func(state string) {
		if out, err := exec.Command("ip", "link", "set", s.links[0], state).CombinedOutput(); err != nil {
			t.Fatalf("ip link set %s %s: %v\n%s", s.links[0], state, err, out)
		}
	}
	setLink("down")
	defer setLink("up")
	root := regexp.MustCompile(`(?m)^  ` + s.links[3] + `\s+Root\s+Forwarding\s`)
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(250 * time.Millisecond) {
		r.failShow = appctlAt(t, ctl, "rstp/show", s.b).out
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
		t.Errorf("%s: after failover h1->h2 lost %d of 3 pings:\n%s\nrstp/show:\n%s%s\ndatapath flows:\n%s",
			who, r.failLoss, out, appctlAt(t, ctl, "rstp/show", s.a).out, r.failShow, dump)
	}
}

func (s *stpBed) checkRSTP(t *testing.T, who string, r rstpRun) {
	t.Helper()
	if r.loss != 0 {
		t.Errorf("%s: h1->h2 lost %d of 3 pings", who, r.loss)
	}
	// Three pings and their ARP, and a BPDU every 2 s from each
	// designated port: a few dozen frames. A loop without a discarding
	// port melts into thousands.
	if r.frames > 200 {
		t.Errorf("%s: the loop's links carried %d frames during 3 pings: a broadcast storm", who, r.frames)
	}
	discarding, roots := 0, 0
	for _, br := range []string{s.a, s.b} {
		if strings.Contains(r.show[br], "This bridge is the root") {
			roots++
		}
		for _, m := range rstpTable.FindAllStringSubmatch(r.show[br], -1) {
			if m[3] == "Discarding" {
				discarding++
				if m[1] != s.links[3] || m[2] != "Alternate" {
					t.Errorf("%s: %s discards as %s, want %s (Alternate)", who, m[1], m[2], s.links[3])
				}
			}
		}
	}
	if discarding != 1 || roots != 1 || !strings.Contains(r.show[s.a], "This bridge is the root") {
		t.Errorf("%s: %d ports discarding and %d roots, want 1 and 1 (%s):\n%s%s", who, discarding, roots, s.a,
			r.show[s.a], r.show[s.b])
	}
	want := map[string]string{
		s.a + ":rstp_bridge_id": "1.000.000000000001", s.a + ":rstp_root_id": "1.000.000000000001", s.a + ":rstp_root_path_cost": "0",
		s.b + ":rstp_bridge_id": "8.000.000000000002", s.b + ":rstp_root_id": "1.000.000000000001", s.b + ":rstp_root_path_cost": "2000",
		s.b + ":rstp_designated_id": "1.000.000000000001", s.b + ":rstp_bridge_port_id": "8001",
		s.links[1] + ":rstp_port_role": "Root", s.links[1] + ":rstp_port_state": "Forwarding",
		s.links[3] + ":rstp_port_role": "Alternate", s.links[3] + ":rstp_port_state": "Discarding",
		s.links[3] + ":rstp_designated_bridge_id": "1.000.000000000001", s.links[3] + ":rstp_designated_port_id": "8002",
	}
	for k, v := range want {
		if r.status[k] != v {
			t.Errorf("%s: rstp_status %s = %q, want %q", who, k, r.status[k], v)
		}
	}
}

// TestIntegrationRSTPLoop: a loop of two bridges with RSTP settles to one
// discarding (alternate) port, pings cross it, no storm runs, and when
// the root port's link goes the alternate takes over; ovs-vswitchd 3.1
// does the same in the same boot, and rstp/show's port rows and the
// rstp_status columns read the same.
func TestIntegrationRSTPLoop(t *testing.T) {
	s := newSTPBed(t)
	o := startOVS(t)
	ovsctl := func(args ...string) string { t.Helper(); return strings.TrimSpace(o.must(t, "ovs-vsctl", args...)) }
	ovs := s.runRSTP(t, "ovs-vswitchd", o.ctl, ovsctl, func() string { return o.must(t, "ovs-ofctl", "show", s.b) })
	s.failoverRSTP(t, "ovs-vswitchd", o.ctl, &ovs)
	t.Logf("ovs-vswitchd: settled in %v, %d frames, %d lost; rstp/show:\n%s%s", ovs.settle, ovs.frames, ovs.loss,
		ovs.show[s.a], ovs.show[s.b])
	o.exitCleanup(t, s.a)
	for deadline := time.Now().Add(5 * time.Second); linkExists(s.b) && time.Now().Before(deadline); {
		time.Sleep(50 * time.Millisecond)
	}

	g := startGovSwitch(t, t.TempDir())
	vsctl := func(args ...string) string { t.Helper(); return g.vsctl(t, args...) }
	gov := s.runRSTP(t, "govswitchd", g.ctl, vsctl, func() string {
		out, err := ofctlAt(g.mgmt(t, s.b), "show")
		if err != nil {
			t.Errorf("ovs-ofctl show %s: %v\n%s", s.b, err, out)
		}
		return out
	})
	s.failoverRSTP(t, "govswitchd", g.ctl, &gov)
	t.Logf("govswitchd: settled in %v, %d frames, %d lost; rstp/show:\n%s%s", gov.settle, gov.frames, gov.loss,
		gov.show[s.a], gov.show[s.b])

	s.checkRSTP(t, "ovs-vswitchd", ovs)
	s.checkRSTP(t, "govswitchd", gov)
	if strings.Join(gov.rows, "\n") != strings.Join(ovs.rows, "\n") {
		t.Errorf("rstp/show port rows differ:\novs-vswitchd:\n%s\ngovswitchd:\n%s", strings.Join(ovs.rows, "\n"),
			strings.Join(gov.rows, "\n"))
	}
	for k, v := range ovs.status {
		if gov.status[k] != v {
			t.Errorf("rstp_status %s: govswitchd %q, ovs-vswitchd %q", k, gov.status[k], v)
		}
	}
	if strings.Join(gov.stats, ",") != strings.Join(ovs.stats, ",") {
		t.Errorf("rstp_statistics keys: govswitchd %q, ovs-vswitchd %q", gov.stats, ovs.stats)
	}
	for _, br := range []string{s.a, s.b} {
		g, o := gov.show[br], ovs.show[br]
		if i := strings.Index(o, "\n  Interface"); i > 0 && (len(g) < i || g[:i] != o[:i]) {
			t.Errorf("rstp/show %s heads differ:\novs-vswitchd:\n%s\ngovswitchd:\n%s", br, o, g)
		}
	}
	rows := func(show string) (out []string) {
		for _, m := range rstpTable.FindAllStringSubmatch(show, -1) {
			out = append(out, strings.Join(m[1:], " "))
		}
		return out
	}
	if g, o := rows(gov.failShow), rows(ovs.failShow); strings.Join(g, "\n") != strings.Join(o, "\n") {
		t.Errorf("rstp/show %s after failover differs:\novs-vswitchd:\n%s\ngovswitchd:\n%s", s.b, ovs.failShow, gov.failShow)
	}
	t.Logf("rstp/show %s after failover (govswitchd):\n%s", s.b, gov.failShow)
	if t.Failed() {
		t.Logf("rstp_status columns:\novs-vswitchd %v\ngovswitchd   %v", ovs.status, gov.status)
	}
	t.Logf("OpenFlow 1.0 port states of %s:\novs-vswitchd %q\ngovswitchd   %q", s.b, ovs.ofState, gov.ofState)
	if strings.Join(gov.ofState, ",") != strings.Join(ovs.ofState, ",") || len(gov.ofState) != 3 {
		t.Errorf("ovs-ofctl show %s port states: govswitchd %q, ovs-vswitchd %q", s.b, gov.ofState, ovs.ofState)
	}
	// BPDUs go to the switch (userspace, slow_path(stp)), not to NORMAL.
	t.Logf("BPDU flows:\novs-vswitchd %q\ngovswitchd   %q", ovs.bpdu, gov.bpdu)
	if len(gov.bpdu) == 0 || !strings.Contains(gov.bpdu[0], "slow_path(stp)") ||
		strings.Join(gov.bpdu, "\n") != strings.Join(ovs.bpdu, "\n") {
		t.Errorf("BPDU megaflows:\novs-vswitchd %q\ngovswitchd   %q", ovs.bpdu, gov.bpdu)
	}
	if r := appctlAt(t, g.ctl, "rstp/show", "nosuchbr"); r.code == 0 || !strings.Contains(r.err, "No such RSTP object") {
		t.Errorf("rstp/show nosuchbr: %d %q %q", r.code, r.out, r.err)
	}
}
