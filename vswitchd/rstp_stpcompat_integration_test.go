package vswitchd

import (
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"
)

// RSTP's compatibility with 802.1D-1998 (802.1D-2004 17.24, port
// protocol migration), on the spanning tree's loop (stpBed): one bridge
// runs RSTP, the other STP. The RSTP bridge's ports fall back to
// Configuration BPDUs once they hear the STP bridge's, so that the two
// agree on one tree and the loop blocks. The same steps run against
// ovs-vswitchd 3.1 and govswitchd in the same boot; rstp/show and
// stp/show must read the same.

// configureMixed builds A and B, the one running rstpOn RSTP and the
// other STP, with the same times on both (hello 2 s, the only one RSTP
// has; max age 6 s; forward delay 4 s). A has the lower priority, so it
// is the root.
func (s *stpBed) configureMixed(vsctl func(args ...string) string, rstpOn string) {
	for i, br := range []string{s.a, s.b} {
		prio := []string{"4096", "32768"}[i]
		addr := "00:00:00:00:00:0" + strconv.Itoa(i+1)
		key := "stp"
		args := []string{"add-br", br, "--", "set", "Bridge", br}
		if br == rstpOn {
			key = "rstp"
			args = append(args, "rstp_enable=true", "other_config:rstp-address="+addr, "other_config:rstp-priority="+prio,
				"other_config:rstp-max-age=6", "other_config:rstp-forward-delay=4")
		} else {
			args = append(args, "stp_enable=true", "other_config:stp-system-id="+addr, "other_config:stp-priority="+prio,
				"other_config:stp-hello-time=2", "other_config:stp-max-age=6", "other_config:stp-forward-delay=4")
		}
		vsctl(args...)
		host := []string{s.hostA, s.hostB}[i]
		for j, p := range []string{s.links[i], s.links[i+2], host} {
			vsctl("add-port", br, p, "--", "set", "Port", p, "other_config:"+key+"-port-num="+strconv.Itoa(j+1))
		}
	}
}

// mixedRun is what one switch did.
type mixedRun struct {
	show   map[string]string // rstp/show or stp/show per bridge
	rows   []string          // their port rows, sorted
	frames uint64            // frames on the loop's links while h1 pings h2
	loss   int
	// mcheckRows are the port rows after rstp-port-mcheck=true on the
	// RSTP bridge's loop ports and a few hellos (the STP bridge is still
	// there: they fall back again); mcheckFrames the frames of a ping
	// then.
	mcheckRows   []string
	mcheckFrames uint64
	// stpErrors is, per loop port of the STP bridge, whether its
	// stp_error_count is above 0 (ovs-vswitchd's STP counts the 36-byte
	// TCNs of its RSTP as bad BPDUs).
	stpErrors map[string]bool
}

// runMixed configures, waits until both tables have every port settled
// and stay so, pings h1->h2 from cold ARP caches counting the frames the
// loop's links carry, and reads the tables.
func (s *stpBed) runMixed(t *testing.T, who, ctl, rstpOn string, vsctl func(args ...string) string) mixedRun {
	t.Helper()
	s.configureMixed(vsctl, rstpOn)
	r := mixedRun{show: map[string]string{}}
	read := func() (settled int, out string) {
		for _, br := range []string{s.a, s.b} {
			cmd := "stp/show"
			if br == rstpOn {
				cmd = "rstp/show"
			}
			x := appctlAt(t, ctl, cmd, br)
			r.show[br] = x.out
			out += x.out + x.err
			if br == rstpOn {
				n, _ := rstpSettled(x.out)
				settled += n
			} else {
				for _, m := range stpTable.FindAllStringSubmatch(x.out, -1) {
					if m[3] == "forwarding" || m[3] == "blocking" {
						settled++
					}
				}
			}
		}
		return settled, out
	}
	for deadline, stable := time.Now().Add(60*time.Second), 0; stable < 8; time.Sleep(500 * time.Millisecond) {
		if n, out := read(); n == 6 {
			stable++
		} else if stable = 0; time.Now().After(deadline) {
			t.Fatalf("%s: the mixed tree did not settle within 60 s:\n%s", who, out)
		}
	}
	rows := func() (rows []string) {
		read()
		for _, br := range []string{s.a, s.b} {
			re := stpTable
			if br == rstpOn {
				re = rstpTable
			}
			for _, m := range re.FindAllStringSubmatch(r.show[br], -1) {
				rows = append(rows, br+" "+strings.Join(m[1:], " "))
			}
		}
		sort.Strings(rows)
		return rows
	}
	r.loss, r.frames = s.pingCounting(t)
	r.rows = rows()
	i, j := 0, 1
	if rstpOn == s.b {
		i, j = 1, 0
	}
	r.stpErrors = map[string]bool{}
	for _, l := range []string{s.links[j], s.links[j+2]} {
		for _, kv := range parseOVSMap(vsctl("get", "Port", l, "statistics")) {
			if kv[0] == "stp_error_count" {
				r.stpErrors[l] = kv[1] != "0"
			}
		}
	}
	for _, l := range []string{s.links[i], s.links[i+2]} {
		vsctl("set", "Port", l, "other_config:rstp-port-mcheck=true")
	}
	time.Sleep(8 * time.Second)
	_, r.mcheckFrames = s.pingCounting(t)
	r.mcheckRows = rows()
	return r
}

// TestIntegrationRSTPWithSTPPeer: an RSTP bridge and an STP bridge
// joined twice settle to one tree with one port blocking the loop, with
// either as the root, as under ovs-vswitchd; rstp/show and stp/show
// read the same.
func TestIntegrationRSTPWithSTPPeer(t *testing.T) {
	for _, tc := range []struct{ name, rstpOn string }{{"RSTPRoot", "A"}, {"STPRoot", "B"}} {
		t.Run(tc.name, func(t *testing.T) {
			s := newSTPBed(t)
			rstpOn := map[string]string{"A": s.a, "B": s.b}[tc.rstpOn]
			var ovs, gov mixedRun
			o := startOVS(t)
			ovs = s.runMixed(t, "ovs-vswitchd", o.ctl, rstpOn,
				func(args ...string) string { t.Helper(); return strings.TrimSpace(o.must(t, "ovs-vsctl", args...)) })
			o.exitCleanup(t, s.a)
			for deadline := time.Now().Add(5 * time.Second); linkExists(s.b) && time.Now().Before(deadline); {
				time.Sleep(50 * time.Millisecond)
			}
			g := startGovSwitch(t, t.TempDir())
			gov = s.runMixed(t, "govswitchd", g.ctl, rstpOn, func(args ...string) string { t.Helper(); return g.vsctl(t, args...) })
			for _, r := range []struct {
				who string
				r   mixedRun
			}{{"ovs-vswitchd", ovs}, {"govswitchd", gov}} {
				t.Logf("%s: %d frames, %d lost, STP bad BPDUs %v:\n%s%s", r.who, r.r.frames, r.r.loss, r.r.stpErrors, r.r.show[s.a], r.r.show[s.b])
				if r.r.loss != 0 {
					t.Errorf("%s: h1->h2 lost %d of 3 pings", r.who, r.r.loss)
				}
				if r.r.frames > 200 {
					t.Errorf("%s: the loop's links carried %d frames during 3 pings: a broadcast storm", r.who, r.r.frames)
				}
				blocking := 0
				for _, row := range r.r.rows {
					if regexp.MustCompile(` (blocking|Discarding) `).MatchString(row) {
						blocking++
					}
				}
				if blocking != 1 {
					t.Errorf("%s: %d ports block the loop, want 1: %q", r.who, blocking, r.r.rows)
				}
			}
			if strings.Join(gov.mcheckRows, "\n") != strings.Join(ovs.mcheckRows, "\n") || gov.mcheckFrames > 200 {
				t.Errorf("after rstp-port-mcheck: govswitchd %d frames during 3 pings, ovs-vswitchd %d; port rows:\novs-vswitchd:\n%s\ngovswitchd:\n%s",
					gov.mcheckFrames, ovs.mcheckFrames, strings.Join(ovs.mcheckRows, "\n"), strings.Join(gov.mcheckRows, "\n"))
			}
			if fmt.Sprint(gov.stpErrors) != fmt.Sprint(ovs.stpErrors) || len(ovs.stpErrors) != 2 {
				t.Errorf("STP bridge's bad BPDU counts above 0: govswitchd %v, ovs-vswitchd %v", gov.stpErrors, ovs.stpErrors)
			}
			if strings.Join(gov.rows, "\n") != strings.Join(ovs.rows, "\n") {
				t.Errorf("port rows differ:\novs-vswitchd:\n%s\ngovswitchd:\n%s", strings.Join(ovs.rows, "\n"),
					strings.Join(gov.rows, "\n"))
			}
			for _, br := range []string{s.a, s.b} {
				g, o := gov.show[br], ovs.show[br]
				if i := strings.Index(o, "\n  Interface"); i > 0 && (len(g) < i || g[:i] != o[:i]) {
					t.Errorf("%s heads differ:\novs-vswitchd:\n%s\ngovswitchd:\n%s", br, o, g)
				}
			}
		})
	}
}
