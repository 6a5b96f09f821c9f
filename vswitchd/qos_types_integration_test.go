package vswitchd

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// qosTypeCase is one QoS row put on a port: its type, other_config and
// queues (id to the queue's other_config), and whether the port's QoS is
// cleared after it (else the next case replaces it, type to type).
type qosTypeCase struct {
	name   string
	typ    string
	config []string
	queues map[int][]string
	keep   bool
	// ovsStale is in tc qdisc show of ovs-vswitchd's, govNew in
	// govswitchd's, where the two differ on purpose.
	ovsStale, govNew string
}

var qosTypeCases = []qosTypeCase{
	{name: "htb, four queues", typ: "linux-htb", config: []string{"max-rate=5000000"}, queues: map[int][]string{
		0: {"min-rate=2000000", "max-rate=3000000", "burst=3000000", "priority=5"},
		1: {"max-rate=1000000"}, 2: {"min-rate=1500000", "burst=80000"}, 7: {"priority=3"}}},
	{name: "htb without queue 0", typ: "linux-htb", config: []string{"max-rate=3000000"}, queues: map[int][]string{
		1: {"min-rate=1000000"}, 2: nil}},
	{name: "hfsc without queue 0", typ: "linux-hfsc", queues: map[int][]string{3: {"min-rate=1000000"}, 1: nil}},
	{name: "sfq defaults", typ: "linux-sfq"},
	{name: "sfq", typ: "linux-sfq", config: []string{"quantum=3000", "perturb=7"}},
	{name: "sfq to change in place", typ: "linux-sfq", config: []string{"quantum=3000"}, keep: true},
	// ovs-vswitchd only notes the new settings of a qdisc of the same
	// type: the kernel keeps quantum 3000. govswitchd sets it up anew.
	{name: "sfq changed in place", typ: "linux-sfq", config: []string{"quantum=4000"}, ovsStale: "quantum 3000b", govNew: "quantum 4000b"},
	{name: "htb to change in place", typ: "linux-htb", config: []string{"max-rate=5000000"}, queues: map[int][]string{
		0: {"min-rate=2000000"}, 1: {"max-rate=1000000"}, 2: nil, 7: {"priority=3"}}, keep: true},
	{name: "htb changed in place", typ: "linux-htb", config: []string{"max-rate=4000000"}, queues: map[int][]string{
		2: {"min-rate=1000000"}, 5: nil}},
	{name: "codel defaults", typ: "linux-codel"},
	{name: "codel", typ: "linux-codel", config: []string{"target=3000", "limit=500", "interval=50000"}},
	{name: "fq_codel defaults", typ: "linux-fq_codel"},
	{name: "fq_codel", typ: "linux-fq_codel", config: []string{"target=4000", "limit=2000", "interval=200000", "flows=256", "quantum=1000"}},
	{name: "netem defaults", typ: "linux-netem"},
	{name: "netem then htb", typ: "linux-netem", config: []string{"latency=20000", "limit=500", "loss=10"}, keep: true},
	{name: "htb after netem", typ: "linux-htb", queues: map[int][]string{0: nil}, keep: true},
	{name: "noop after htb", typ: "linux-noop", keep: true},
	{name: "cleared after noop", typ: ""},
	{name: "netem loss over 100", typ: "linux-netem", config: []string{"loss=200"}},
	{name: "linux-default", typ: "linux-default"},
}

// qosTypeSnap is what tc and qos/show print after one case.
type qosTypeSnap struct {
	qdisc, class, show, after string
}

// qosTypeVolatile are the counters that differ between runs.
var qosTypeVolatile = regexp.MustCompile(`(tx_\w+|direct_packets_stat) \d+|(tx_\w+): \d+`)

func (s qosTypeSnap) masked() qosTypeSnap {
	m := func(x string) string { return qosTypeVolatile.ReplaceAllString(x, "$1$2 N") }
	return qosTypeSnap{m(s.qdisc), m(s.class), m(s.show), m(s.after)}
}

// runQoSTypes puts each case's QoS on dev through vsctl and returns what
// tc and qos/show (over ctl) print, and tc's qdisc once the QoS is
// cleared. A case with an empty type only clears the port's QoS; after
// it, dev's root qdisc is deleted, as linux-noop leaves the one before.
func runQoSTypes(t *testing.T, vsctl func(args ...string) string, ctl, dev string) []qosTypeSnap {
	var out []qosTypeSnap
	for _, c := range qosTypeCases {
		if c.typ == "" {
			vsctl("clear", "port", dev, "qos")
			var s qosTypeSnap
			s.qdisc, s.class = tcOut(t, "qdisc", "show", "dev", dev), tcOut(t, "class", "show", "dev", dev)
			s.show = appctlAt(t, ctl, "qos/show", dev).out
			out = append(out, s)
			exec.Command("tc", "qdisc", "del", "dev", dev, "root").Run()
			continue
		}
		args := []string{"set", "port", dev, "qos=@qos", "--", "--id=@qos", "create", "qos", "type=" + c.typ}
		for _, kv := range c.config {
			args = append(args, "other-config:"+kv)
		}
		for id := range c.queues {
			args = append(args, fmt.Sprintf("queues:%d=@q%d", id, id))
		}
		for id, kvs := range c.queues {
			args = append(args, "--", fmt.Sprintf("--id=@q%d", id), "create", "queue")
			if len(kvs) == 0 {
				args = append(args, "other_config={}")
			}
			for _, kv := range kvs {
				args = append(args, "other_config:"+kv)
			}
		}
		vsctl(args...)
		var s qosTypeSnap
		s.qdisc, s.class = tcOut(t, "qdisc", "show", "dev", dev), tcOut(t, "class", "show", "dev", dev)
		r := appctlAt(t, ctl, "qos/show", dev)
		s.show = r.out + r.err
		if !c.keep {
			vsctl("clear", "port", dev, "qos")
			s.after = tcOut(t, "qdisc", "show", "dev", dev)
		}
		out = append(out, s)
	}
	return out
}

func tcOut(t *testing.T, args ...string) string {
	t.Helper()
	out, err := exec.Command("tc", args...).CombinedOutput()
	if err != nil {
		t.Fatalf("tc %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// TestIntegrationQoSTypes: every QoS type ovs-vswitchd 3.1 runs on
// Linux, put on a port by the same ovs-vsctl commands, gives the same
// qdisc and classes (tc), the same qos/show (settings and queues in
// ovs-vswitchd's hash order; counters aside) and qos/show-types, and
// clearing it leaves what ovs-vswitchd leaves, for each switch in turn
// in one boot. A netem QoS with a loss over 100% fails loudly (a WARN
// naming the interface) and leaves the default qdisc, as in OVS. Traffic
// agrees: TCP through a 3 Mbit/s htb queue runs at ovs-vswitchd's rate,
// a netem losing 50% loses about half the pings under either switch, and
// a netem delay shows in ping's round trips through govswitchd.
func TestIntegrationQoSTypes(t *testing.T) {
	b := newBed(t)
	addPorts := func(vsctl func(args ...string) string) {
		vsctl("add-br", b.name)
		for i, p := range []string{b.v1, b.v2} {
			vsctl("add-port", b.name, p, "--", "set", "Interface", p, "ofport_request="+strconv.Itoa(i+1))
		}
	}

	// Traffic under each switch's htb and netem: TCP through a 3 Mbit/s
	// htb queue, and pings through a netem that loses half.
	traffic := func(vsctl func(args ...string) string, port string) (rate float64, lost int) {
		vsctl("set", "port", b.v2, "qos=@qos", "--", "--id=@qos", "create", "qos", "type=linux-htb",
			"other-config:max-rate=3000000", "queues:0=@q0", "--",
			"--id=@q0", "create", "queue", "other_config:min-rate=2000000", "other_config:max-rate=3000000")
		rate = tcpRate(t, b.h1, b.h2, "10.0.0.2:"+port)
		vsctl("set", "port", b.v2, "qos=@qos", "--", "--id=@qos", "create", "qos", "type=linux-netem", "other-config:loss=50")
		out, _ := b.h1.Exec("ping", "-c", "60", "-i", "0.05", "-W", "1", "10.0.0.2")
		lost = parseLoss(t, out)
		vsctl("clear", "port", b.v2, "qos")
		return rate, lost
	}

	o := startOVS(t)
	ovsctl := func(args ...string) string { return o.must(t, "ovs-vsctl", args...) }
	addPorts(ovsctl)
	ovsSnaps := runQoSTypes(t, ovsctl, o.ctl, b.v2)
	ovsRate, ovsLost := traffic(ovsctl, "7320")
	ovsTypes := appctlAt(t, o.ctl, "qos/show-types", b.v2)
	t.Logf("ovs-vswitchd: qos/show-types:\n%s", ovsTypes.out)
	o.exitCleanup(t, b.name)
	exec.Command("tc", "qdisc", "del", "dev", b.v2, "root").Run()

	logFile := filepath.Join(b.rundir, "gov.log")
	g := startGovSwitchLogging(t, b.rundir, logFile)
	vsctl := func(args ...string) string { t.Helper(); return g.vsctl(t, args...) }
	addPorts(vsctl)
	govSnaps := runQoSTypes(t, vsctl, g.ctl, b.v2)
	govRate, govLost := traffic(vsctl, "7321")
	t.Logf("TCP through htb queue 0 (max-rate 3 Mbit/s): ovs-vswitchd %.2f Mbit/s, govswitchd %.2f Mbit/s; "+
		"pings lost of 60 through netem loss 50%%: ovs-vswitchd %d, govswitchd %d", ovsRate/1e6, govRate/1e6, ovsLost, govLost)
	if govRate > 3.6e6 || govRate < 1e6 || govRate < 0.8*ovsRate || govRate > 1.25*ovsRate {
		t.Errorf("TCP through govswitchd's 3 Mbit/s htb at %.2f Mbit/s, ovs-vswitchd's at %.2f", govRate/1e6, ovsRate/1e6)
	}
	// 60 pings each lost at 50%: 30 ± 3.9 (1 sd).
	for _, l := range []int{ovsLost, govLost} {
		if l < 15 || l > 45 {
			t.Errorf("%d of 60 pings lost through a netem losing 50%%", l)
		}
	}
	for i, c := range qosTypeCases {
		ov, gv := ovsSnaps[i], govSnaps[i]
		t.Logf("%s: ovs-vswitchd\ntc qdisc:\n%stc class:\n%sqos/show:\n%safter clear:\n%s", c.name, ov.qdisc, ov.class, ov.show, ov.after)
		if c.ovsStale != "" {
			if !strings.Contains(ov.qdisc, c.ovsStale) || !strings.Contains(gv.qdisc, c.govNew) {
				t.Errorf("%s: ovs-vswitchd's qdisc lacks %q or govswitchd's %q:\n%s%s", c.name, c.ovsStale, c.govNew, ov.qdisc, gv.qdisc)
			}
			ov.qdisc, gv.qdisc = "", ""
		}
		if ov.masked() != gv.masked() {
			t.Errorf("%s: govswitchd differs:\ntc qdisc:\n%stc class:\n%sqos/show:\n%safter clear:\n%s", c.name, gv.qdisc, gv.class, gv.show, gv.after)
		}
	}
	if r := appctlAt(t, g.ctl, "qos/show-types", b.v2); r != ovsTypes {
		t.Errorf("qos/show-types: ovs-vswitchd %+v, govswitchd %+v", ovsTypes, r)
	}
	// What the comparison stands on: the kinds really were set up.
	for name, want := range map[string]string{"htb, four queues": "qdisc htb 1: root", "sfq defaults": "qdisc sfq 1: root",
		"codel defaults": "qdisc codel 1: root", "fq_codel defaults": "qdisc fq_codel 1: root", "netem then htb": "qdisc netem 1: root",
		"htb after netem": "qdisc htb 1: root", "hfsc without queue 0": "qdisc hfsc 1: root"} {
		i := slices.IndexFunc(qosTypeCases, func(c qosTypeCase) bool { return c.name == name })
		if !strings.Contains(govSnaps[i].qdisc, want) {
			t.Errorf("%s: no %q:\n%s", name, want, govSnaps[i].qdisc)
		}
	}
	for _, want := range []string{"limit 500 delay 20ms loss 10%", "quantum 3000b", "perturb 7sec"} {
		found := false
		for _, s := range govSnaps {
			found = found || strings.Contains(s.qdisc, want)
		}
		if !found {
			t.Errorf("no qdisc with %q", want)
		}
	}
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		log, _ := os.ReadFile(logFile)
		if regexp.MustCompile(`WARN.*interface ` + b.v2 + `: QoS: .*loss was 200`).Match(log) {
			break
		}
		if time.Now().After(deadline) {
			t.Errorf("no WARN for the netem loss of 200%% in:\n%s", log)
			break
		}
	}

	// netem's delay on v2 holds each ping to h2 by it.
	before := pingMin(t, b)
	vsctl("set", "port", b.v2, "qos=@qos", "--", "--id=@qos", "create", "qos", "type=linux-netem", "other-config:latency=50000")
	delayed := pingMin(t, b)
	t.Logf("ping round trip through %s: %.2f ms, %.2f ms with netem latency 50 ms", b.v2, before, delayed)
	if delayed-before < 45 || delayed-before > 70 {
		t.Errorf("netem latency 50 ms adds %.2f ms to the round trip", delayed-before)
	}
	vsctl("clear", "port", b.v2, "qos")
	if after := pingMin(t, b); after > before+20 {
		t.Errorf("round trip %.2f ms after netem is cleared", after)
	}
}

var pingMinRE = regexp.MustCompile(`= ([\d.]+)/[\d.]+/`)

// pingMin returns the shortest round trip of 5 pings from h1 to h2, in
// ms (UML's one CPU stretches some).
func pingMin(t *testing.T, b *bed) float64 {
	t.Helper()
	out, _ := b.h1.Exec("ping", "-c", "5", "-i", "0.2", "-W", "2", "10.0.0.2")
	if loss := parseLoss(t, out); loss != 0 {
		t.Fatalf("lost %d of 5 pings:\n%s", loss, out)
	}
	m := pingMinRE.FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no round trip in:\n%s", out)
	}
	v, _ := strconv.ParseFloat(m[1], 64)
	return v
}
