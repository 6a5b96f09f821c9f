package vswitchd

import (
	"fmt"
	"net"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/govswitch/govswitch/internal/testbed"
	"github.com/govswitch/govswitch/ovsdb/ovsdbtest"
)

// patchRun is what one switch did in TestIntegrationPatchPorts.
type patchRun struct {
	normalLoss, flowsLoss int
	normalTCP, flowsTCP   bool
	dps                   string   // ovs-dpctl dump-dps
	ports                 []string // ovs-dpctl show's port lines, numbers cut, sorted
	normalFlows, ofFlows  []string // IPv4 megaflows by port name, statistics cut, sorted
	ofctlShow             string   // ovs-ofctl show of the first bridge
	ofFlowsDump           string   // ovs-ofctl dump-flows of the second bridge
	errPeer               string   // Interface error of a patch port with no peer option
	paTx, pbRx            string   // ovs-ofctl dump-ports' packet counts of the patch ports, after NORMAL
}

// patchSteps joins b's two veths through two bridges, b.name (with v1)
// and b.name+"p" (with v2), and a patch pair between them, with vsctl;
// pings and connects h1 to h2 through NORMAL and then through explicit
// flows, and records what the real OVS tools show. mgmt names a bridge's
// OpenFlow management socket.
func patchSteps(t *testing.T, b *bed, vsctl func(args ...string) string, mgmt func(br string) string) patchRun {
	t.Helper()
	brA, brB := b.name, b.name+"p"
	pa, pb := b.name+"pa", b.name+"pb"
	vsctl("add-br", brA, "--", "add-port", brA, b.v1,
		"--", "add-port", brA, pa, "--", "set", "Interface", pa, "type=patch", "options:peer="+pb)
	vsctl("add-br", brB, "--", "add-port", brB, b.v2,
		"--", "add-port", brB, pb, "--", "set", "Interface", pb, "type=patch", "options:peer="+pa)
	var r patchRun
	// Both switches fill the error column only once they tried the port.
	vsctl("--", "add-port", brA, b.name+"px", "--", "set", "Interface", b.name+"px", "type=patch")
	r.errPeer = strings.TrimSpace(vsctl("get", "Interface", b.name+"px", "error"))
	vsctl("del-port", brA, b.name+"px")

	ofctl := func(br string, args ...string) string {
		t.Helper()
		full := append([]string{args[0], "unix:" + mgmt(br)}, args[1:]...)
		out, err := exec.Command("ovs-ofctl", full...).CombinedOutput()
		if err != nil {
			t.Fatalf("ovs-ofctl %s: %v\n%s", strings.Join(full, " "), err, out)
		}
		return string(out)
	}
	var ln net.Listener
	if err := b.h2.Do(func() (err error) { ln, err = net.Listen("tcp", "10.0.0.2:7100"); return }); err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()

	r.normalLoss = b.ping(t, 3)
	r.normalTCP = b.tcpConnect(t, 7100)
	r.normalFlows = patchFlows(t, b)
	r.dps = dumpDPs(t)
	out, err := exec.Command("ovs-dpctl", "show").CombinedOutput()
	if err != nil {
		t.Fatalf("ovs-dpctl show: %v\n%s", err, out)
	}
	num := regexp.MustCompile(`^  port \d+: `)
	for _, l := range strings.Split(string(out), "\n") {
		if num.MatchString(l) {
			r.ports = append(r.ports, num.ReplaceAllString(l, "  port N: "))
		}
	}
	sort.Strings(r.ports)
	r.ofctlShow = ofctl(brA, "show")
	// ovs-vswitchd refreshes port counters every few seconds.
	time.Sleep(6 * time.Second)
	count := func(br, port, dir string) string {
		m := regexp.MustCompile(dir + ` pkts=(\d+)`).FindStringSubmatch(ofctl(br, "dump-ports", port))
		if m == nil {
			return "none"
		}
		return m[1]
	}
	r.paTx, r.pbRx = count(brA, pa, "tx"), count(brB, pb, "rx")

	// Explicit flows in place of NORMAL: each bridge forwards between its
	// veth and its patch port, by name.
	for _, br := range []struct{ name, host, patch string }{{brA, b.v1, pa}, {brB, b.v2, pb}} {
		ofctl(br.name, "del-flows")
		ofctl(br.name, "add-flow", fmt.Sprintf("in_port=%s,actions=output:%s", br.host, br.patch))
		ofctl(br.name, "add-flow", fmt.Sprintf("in_port=%s,actions=output:%s", br.patch, br.host))
	}
	// The datapath flows NORMAL made are narrower than the new rules
	// need: OVS keeps or deletes them by their packet rate
	// (min-revalidate-pps), so start both from an empty flow table to
	// compare the megaflows the explicit flows make.
	if out, err := exec.Command("ovs-dpctl", "del-flows").CombinedOutput(); err != nil {
		t.Fatalf("ovs-dpctl del-flows: %v\n%s", err, out)
	}
	for _, h := range []*testbed.Netns{b.h1, b.h2} {
		h.Exec("ip", "neigh", "flush", "all")
	}
	r.flowsLoss = b.ping(t, 3)
	r.flowsTCP = b.tcpConnect(t, 7100)
	r.ofFlows = patchFlows(t, b)
	// The flows with their statistics cut, in a fixed order (ovs-vswitchd
	// lists rules of one priority in no particular order).
	stats := regexp.MustCompile(`duration=[^,]*, |n_packets=\d+, n_bytes=\d+, |idle_age=\d+, `)
	dump := strings.Split(strings.TrimSpace(stats.ReplaceAllString(ofctl(brB, "dump-flows"), "")), "\n")
	sort.Strings(dump)
	r.ofFlowsDump = strings.Join(dump, "\n")
	return r
}

// patchFlows pings h1->h2 once more and returns the datapath's IPv4 flows
// (ports by name, statistics cut), sorted.
func patchFlows(t *testing.T, b *bed) []string {
	t.Helper()
	b.ping(t, 1)
	out, err := exec.Command("ovs-dpctl", "dump-flows", "--names").CombinedOutput()
	if err != nil {
		t.Fatalf("ovs-dpctl dump-flows: %v\n%s", err, out)
	}
	stats := regexp.MustCompile(`, packets:.*, actions:`)
	var flows []string
	for _, l := range strings.Split(string(out), "\n") {
		if strings.Contains(l, "eth_type(0x0800)") {
			flows = append(flows, stats.ReplaceAllString(l, " actions:"))
		}
	}
	sort.Strings(flows)
	return flows
}

// TestIntegrationPatchPorts: two bridges joined by a patch pair carry
// ping and TCP between a namespace on each, through NORMAL and through
// explicit flows; all of it on the one datapath ovs-system, with no
// datapath port for the patch ports and one megaflow per direction that
// outputs straight to the far veth. ovs-vswitchd 3.1 runs the same steps
// first in the same boot: ovs-dpctl's view must be the same.
func TestIntegrationPatchPorts(t *testing.T) {
	b := newBed(t)

	o := startOVS(t)
	ovs := patchSteps(t, b, func(args ...string) string { return o.must(t, "ovs-vsctl", args...) },
		func(br string) string { return filepath.Join(o.dir, br+".mgmt") })
	if r := appctlAt(t, o.ctl, "exit", "--cleanup"); r.code != 0 {
		t.Fatalf("ovs-vswitchd exit --cleanup: %d %s", r.code, r.err)
	}
	for deadline := time.Now().Add(5 * time.Second); linkExists(b.name) || linkExists(b.name+"p"); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("ovs-vswitchd's exit --cleanup left %s for 5 s", b.name)
		}
	}

	srv := ovsdbtest.Start(t)
	ctl := filepath.Join(b.rundir, "gov.ctl")
	d, err := NewForOVSDB(Config{Datapath: "system", Rundir: b.rundir, Pidfile: "-", Handlers: 1, Unixctl: ctl}, nil, testLog{t})
	if err != nil {
		t.Fatal(err)
	}
	defer runOVSDB(t, d, srv.Remote, 15*time.Second)()
	vsctl := func(args ...string) string {
		t.Helper()
		out, err := srv.Vsctl(15*time.Second, args...)
		if err != nil {
			t.Fatalf("ovs-vsctl %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return out
	}
	gov := patchSteps(t, b, vsctl, func(br string) string { return filepath.Join(b.rundir, br+".mgmt") })
	govShow := appctlAt(t, ctl, "dpif/show")
	govDump := appctlAt(t, ctl, "dpif/dump-flows", b.name+"p")

	for _, r := range []struct {
		name string
		run  patchRun
	}{{"ovs-vswitchd", ovs}, {"govswitchd", gov}} {
		s := r.run
		t.Logf("%s: datapaths %q; ports %q\nNORMAL megaflows %q\nexplicit-flow megaflows %q", r.name, s.dps, s.ports, s.normalFlows, s.ofFlows)
		if s.normalLoss != 0 || !s.normalTCP {
			t.Errorf("%s: through NORMAL lost %d of 3 pings, TCP connected %v", r.name, s.normalLoss, s.normalTCP)
		}
		if s.flowsLoss != 0 || !s.flowsTCP {
			t.Errorf("%s: through explicit flows lost %d of 3 pings, TCP connected %v", r.name, s.flowsLoss, s.flowsTCP)
		}
		if strings.TrimSpace(s.dps) != "system@ovs-system" {
			t.Errorf("%s: ovs-dpctl dump-dps %q, want system@ovs-system alone", r.name, s.dps)
		}
		if s.paTx == "none" || s.paTx == "0" || s.pbRx == "none" || s.pbRx == "0" {
			t.Errorf("%s: the patch ports counted tx %s, rx %s packets after the pings", r.name, s.paTx, s.pbRx)
		}
		if !strings.Contains(s.ofctlShow, "("+b.name+"pa): addr:") {
			t.Errorf("%s: ovs-ofctl show lacks the patch port:\n%s", r.name, s.ofctlShow)
		}
	}
	for _, c := range []struct {
		what     string
		ovs, gov any
	}{
		{"ovs-dpctl show ports", ovs.ports, gov.ports},
		{"NORMAL megaflows", ovs.normalFlows, gov.normalFlows},
		{"explicit-flow megaflows", ovs.ofFlows, gov.ofFlows},
		{"ovs-ofctl dump-flows", ovs.ofFlowsDump, gov.ofFlowsDump},
		{"Interface error without options:peer", ovs.errPeer, gov.errPeer},
	} {
		if fmt.Sprint(c.ovs) != fmt.Sprint(c.gov) {
			t.Errorf("%s differ:\novs-vswitchd %q\ngovswitchd   %q", c.what, c.ovs, c.gov)
		}
	}
	if len(gov.normalFlows) == 0 || slices.ContainsFunc(gov.ports, func(p string) bool { return strings.Contains(p, "pa") }) {
		t.Errorf("govswitchd: no megaflow, or a datapath port for a patch port: %q %q", gov.normalFlows, gov.ports)
	}
	if !strings.Contains(govShow.out, "    "+b.name+"pa 2/none: (patch: peer="+b.name+"pb)\n") {
		t.Errorf("dpif/show:\n%s%s", govShow.out, govShow.err)
	}
	// dpif/dump-flows of the second bridge: the flows entering on its
	// veth, none of the first bridge's.
	if govDump.code != 0 || strings.Contains(govDump.out, "in_port("+dpPort(t, b.v1)+")") || !strings.Contains(govDump.out, "in_port("+dpPort(t, b.v2)+")") {
		t.Errorf("dpif/dump-flows %sp:\n%s%s", b.name, govDump.out, govDump.err)
	}
}
