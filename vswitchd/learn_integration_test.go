package vswitchd

import (
	"fmt"
	"net"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/govswitch/govswitch/internal/testbed"
)

// learnBed is three hosts on a fail-mode=secure bridge whose only
// forwarding is a MAC learning switch built from the learn action.
type learnBed struct {
	name   string
	hosts  [3]*testbed.Netns
	ports  [3]string
	macs   [3]net.HardwareAddr
	rundir string
}

func newLearnBed(t *testing.T) *learnBed {
	t.Helper()
	testbed.Require(t)
	n := bedSeq.Add(1)
	b := &learnBed{name: fmt.Sprintf("gl%d", n), rundir: t.TempDir()}
	for i := range b.hosts {
		b.hosts[i] = testbed.NewNetns(t)
		b.ports[i] = fmt.Sprintf("gl%d%c", n, 'a'+i)
		b.macs[i] = testbed.Veth(t, b.ports[i], b.hosts[i], "eth0", fmt.Sprintf("10.0.0.%d/24", i+1))
	}
	return b
}

func (b *learnBed) configure(vsctl func(args ...string) string) {
	vsctl("add-br", b.name, "--", "set", "Bridge", b.name, "fail-mode=secure")
	for i, p := range b.ports {
		vsctl("add-port", b.name, p, "--", "set", "Interface", p, "ofport_request="+strconv.Itoa(i+1))
	}
}

// learnFlows is the classic learn-based MAC learning switch: table 0
// learns, into table 10, that frames to the source address go to the
// input port (reg0), then table 10 sets reg0 for a known destination and
// table 2 outputs to the port in reg0 (output:NXM_NX_REG0[0..15]),
// flooding when it is unset.
var learnFlows = []string{
	"table=0,priority=0,actions=learn(table=10,cookie=0x5,hard_timeout=300,delete_learned," +
		"NXM_OF_ETH_DST[]=NXM_OF_ETH_SRC[],load:NXM_OF_IN_PORT[]->NXM_NX_REG0[0..15]),resubmit(,1)",
	"table=1,priority=0,actions=resubmit(,10),resubmit(,2)",
	"table=2,priority=10,reg0=0,actions=flood",
	"table=2,priority=5,actions=output:NXM_NX_REG0[0..15]",
}

// learnRun is what one switch did.
type learnRun struct {
	loss      map[string]int
	learned   []string // dump-flows table=10, OpenFlow 1.0, timings cut, sorted
	learned13 []string // the same in OpenFlow 1.3
	megaflows []string // IPv4 datapath flows from h1's port, stats cut, sorted
	afterDel  string   // dump-flows table=10 after the learning flow is deleted
}

var flowTimes = regexp.MustCompile(`(duration|idle_age|hard_age)=[^,]*, |n_packets=\d+, n_bytes=\d+, `)

func cutFlowLines(out string) []string {
	var lines []string
	for _, l := range strings.Split(out, "\n") {
		if strings.Contains(l, "table=") {
			lines = append(lines, flowTimes.ReplaceAllString(strings.TrimSpace(l), ""))
		}
	}
	sort.Strings(lines)
	return lines
}

func (b *learnBed) steps(t *testing.T, ofctl func(args ...string) (string, error)) learnRun {
	t.Helper()
	must := func(args ...string) string {
		t.Helper()
		out, err := ofctl(args...)
		if err != nil {
			t.Fatalf("ovs-ofctl %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return out
	}
	for _, f := range learnFlows {
		must("add-flow", f)
	}
	r := learnRun{loss: map[string]int{}}
	for _, h := range b.hosts {
		h.Exec("ip", "neigh", "flush", "all")
	}
	for _, p := range []struct{ from, to int }{{1, 2}, {1, 3}, {2, 3}} {
		out, _ := b.hosts[p.from-1].Exec("ping", "-c", "3", "-i", "0.2", "-W", "1", fmt.Sprintf("10.0.0.%d", p.to))
		r.loss[fmt.Sprintf("h%d->h%d", p.from, p.to)] = parseLoss(t, out)
	}
	r.learned = cutFlowLines(must("dump-flows", "table=10"))
	r.learned13 = cutFlowLines(must("-O", "OpenFlow13", "dump-flows", "table=10"))
	// Unicast from h1 to h2 now goes by learned flows: one megaflow to
	// h2's port only.
	if out, _ := b.hosts[0].Exec("ping", "-c", "2", "-i", "0.2", "-W", "1", "10.0.0.2"); parseLoss(t, out) != 0 {
		t.Errorf("h1->h2 after learning lost pings:\n%s", out)
	}
	out, err := exec.Command("ovs-dpctl", "dump-flows", "--names", "system@ovs-system").CombinedOutput()
	if err != nil {
		t.Fatalf("ovs-dpctl dump-flows: %v\n%s", err, out)
	}
	for _, l := range strings.Split(string(out), "\n") {
		if strings.Contains(l, "in_port("+b.ports[0]+")") && strings.Contains(l, "0x0800") {
			r.megaflows = append(r.megaflows, dpStats.ReplaceAllString(l, " actions:"))
		}
	}
	sort.Strings(r.megaflows)
	// delete_learned: the learned flows go with the flow that learned them.
	must("del-flows", "table=0")
	r.afterDel = strings.Join(cutFlowLines(must("dump-flows", "table=10")), "\n")
	return r
}

// TestIntegrationLearnMAC: a MAC learning switch made of learn actions
// forwards pings between three namespaces; ovs-ofctl dump-flows shows the
// same learned flows, in 1.0 and 1.3, as for ovs-vswitchd 3.1 after the
// same steps in the same boot, the datapath holds the same megaflows,
// and delete_learned removes the learned flows with their learner.
func TestIntegrationLearnMAC(t *testing.T) {
	b := newLearnBed(t)

	o := startOVS(t)
	b.configure(func(args ...string) string { return o.must(t, "ovs-vsctl", args...) })
	ovsMgmt := filepath.Join(o.dir, b.name+".mgmt")
	ovs := b.steps(t, func(args ...string) (string, error) { return ofctlAt(ovsMgmt, args...) })
	o.exitCleanup(t, b.name)

	g := startGovSwitch(t, b.rundir)
	b.configure(func(args ...string) string { t.Helper(); return g.vsctl(t, args...) })
	govMgmt := g.mgmt(t, b.name)
	gov := b.steps(t, func(args ...string) (string, error) { return ofctlAt(govMgmt, args...) })

	t.Logf("ovs-vswitchd: lost %v\nlearned:\n%s\nmegaflows:\n%s", ovs.loss, strings.Join(ovs.learned, "\n"), strings.Join(ovs.megaflows, "\n"))
	t.Logf("govswitchd: lost %v\nlearned:\n%s\nmegaflows:\n%s", gov.loss, strings.Join(gov.learned, "\n"), strings.Join(gov.megaflows, "\n"))
	for k := range ovs.loss {
		if ovs.loss[k] != 0 || gov.loss[k] != 0 {
			t.Errorf("%s: lost ovs-vswitchd %d, govswitchd %d of 3", k, ovs.loss[k], gov.loss[k])
		}
	}
	if len(gov.learned) != 3 {
		t.Errorf("govswitchd learned %d flows, want one per host", len(gov.learned))
	}
	for i, m := range b.macs {
		want := fmt.Sprintf("dl_dst=%s actions=load:0x%x->NXM_NX_REG0[0..15]", m, i+1)
		if !slices.ContainsFunc(gov.learned, func(l string) bool { return strings.HasSuffix(l, want) }) {
			t.Errorf("govswitchd's learned flows lack %q", want)
		}
	}
	for _, c := range []struct {
		what     string
		ovs, gov []string
	}{
		{"learned flows (1.0)", ovs.learned, gov.learned},
		{"learned flows (1.3)", ovs.learned13, gov.learned13},
		{"megaflows from h1", ovs.megaflows, gov.megaflows},
	} {
		if !slices.Equal(c.ovs, c.gov) {
			t.Errorf("%s differ:\novs-vswitchd:\n%s\ngovswitchd:\n%s", c.what, strings.Join(c.ovs, "\n"), strings.Join(c.gov, "\n"))
		}
	}
	if ovs.afterDel != "" || gov.afterDel != "" {
		t.Errorf("delete_learned left flows:\novs-vswitchd:\n%s\ngovswitchd:\n%s", ovs.afterDel, gov.afterDel)
	}
}
