package vswitchd

import (
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// TestIntegrationQoSHFSC: a linux-hfsc QoS row with two queues becomes the
// hfsc qdisc and classes ovs-vswitchd 3.1 makes for it in the same boot
// (tc shows the same), queue 0 (the default class) holds TCP through the
// port to its max-rate, set_queue:1 to queue 1's, and clearing the QoS
// gives the device its default qdisc back.
func TestIntegrationQoSHFSC(t *testing.T) {
	b := newBed(t)
	tc := func(args ...string) string {
		t.Helper()
		out, err := exec.Command("tc", args...).CombinedOutput()
		if err != nil {
			t.Fatalf("tc %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	addPorts := func(vsctl func(args ...string) string) {
		vsctl("add-br", b.name)
		for i, p := range []string{b.v1, b.v2} {
			vsctl("add-port", b.name, p, "--", "set", "Interface", p, "ofport_request="+strconv.Itoa(i+1))
		}
	}
	setQoS := func(vsctl func(args ...string) string) {
		vsctl("set", "port", b.v2, "qos=@qos", "--",
			"--id=@qos", "create", "qos", "type=linux-hfsc", "other-config:max-rate=3000000", "queues:0=@q0", "queues:1=@q1", "--",
			"--id=@q0", "create", "queue", "other_config:min-rate=2000000", "other_config:max-rate=3000000", "--",
			"--id=@q1", "create", "queue", "other_config:max-rate=1000000")
	}

	o := startOVS(t)
	ovsctl := func(args ...string) string { return o.must(t, "ovs-vsctl", args...) }
	addPorts(ovsctl)
	setQoS(ovsctl)
	ovsQdisc, ovsClasses := tc("qdisc", "show", "dev", b.v2), tc("class", "show", "dev", b.v2)
	ovsShow := appctlAt(t, o.ctl, "qos/show", b.v2).out
	t.Logf("ovs-vswitchd: tc qdisc:\n%stc class:\n%sqos/show:\n%s", ovsQdisc, ovsClasses, ovsShow)
	o.exitCleanup(t, b.name)
	tc("qdisc", "del", "dev", b.v2, "root")

	g := startGovSwitch(t, b.rundir)
	vsctl := func(args ...string) string { t.Helper(); return g.vsctl(t, args...) }
	rate := func() float64 { return tcpRate(t, b.h1, b.h2, "10.0.0.2:7310") }
	addPorts(vsctl)
	if loss := b.ping(t, 3); loss != 0 {
		t.Fatalf("lost %d of 3 pings before QoS", loss)
	}
	free := rate()
	setQoS(vsctl)
	govQdisc, govClasses := tc("qdisc", "show", "dev", b.v2), tc("class", "show", "dev", b.v2)
	t.Logf("govswitchd: tc qdisc:\n%stc class:\n%s", govQdisc, govClasses)
	if !strings.Contains(govQdisc, "qdisc hfsc 1: root") || !strings.Contains(govQdisc, "default 1") {
		t.Errorf("qdiscs:\n%s", govQdisc)
	}
	// qos/show alike, but for the counters.
	counters := regexp.MustCompile(`(tx_\w+): \d+`)
	govShow := appctlAt(t, g.ctl, "qos/show", b.v2).out
	t.Logf("govswitchd: qos/show:\n%s", govShow)
	if c, o := counters.ReplaceAllString(govShow, "$1: N"), counters.ReplaceAllString(ovsShow, "$1: N"); c != o || !strings.Contains(c, "tx_packets: N") {
		t.Errorf("qos/show differs:\novs-vswitchd\n%sgovswitchd\n%s", ovsShow, govShow)
	}
	if r := appctlAt(t, g.ctl, "qos/show", b.v1); r.out != "QoS not configured on "+b.v1+"\n" {
		t.Errorf("qos/show %s without QoS: %q %q", b.v1, r.out, r.err)
	}
	if govClasses != ovsClasses {
		t.Errorf("tc classes differ:\novs-vswitchd\n%sgovswitchd\n%s", ovsClasses, govClasses)
	}
	for _, want := range []string{"class hfsc 1:fffe parent 1: sc m1 0bit d 0us m2 3Mbit ul m1 0bit d 0us m2 3Mbit",
		"class hfsc 1:1 parent 1:fffe sc m1 0bit d 0us m2 2Mbit ul m1 0bit d 0us m2 3Mbit",
		"class hfsc 1:2 parent 1:fffe sc m1 0bit d 0us m2 8bit ul m1 0bit d 0us m2 1Mbit"} {
		if !strings.Contains(govClasses, want) {
			t.Errorf("classes lack %q:\n%s", want, govClasses)
		}
	}

	shaped := rate()
	t.Logf("TCP through %s: %.1f Mbit/s without QoS, %.2f Mbit/s in queue 0 (max-rate 3 Mbit/s)", b.v2, free/1e6, shaped/1e6)
	if shaped > 3.6e6 || shaped < 1e6 {
		t.Errorf("TCP through the 3 Mbit/s queue 0 at %.2f Mbit/s", shaped/1e6)
	}
	if free < 2*shaped {
		t.Errorf("without QoS only %.2f Mbit/s: the bed cannot show the limit", free/1e6)
	}
	mgmt := g.mgmt(t, b.name)
	if out, err := ofctlAt(mgmt, "add-flow", "priority=10,tcp,in_port=1,actions=set_queue:1,NORMAL"); err != nil {
		t.Fatalf("add-flow: %v\n%s", err, out)
	}
	q1 := rate()
	t.Logf("TCP through queue 1 (max-rate 1 Mbit/s): %.2f Mbit/s", q1/1e6)
	if q1 > 1.25e6 || q1 < 0.3e6 {
		t.Errorf("TCP through the 1 Mbit/s queue 1 at %.2f Mbit/s", q1/1e6)
	}
	vsctl("clear", "port", b.v2, "qos")
	if q := tc("qdisc", "show", "dev", b.v2); strings.Contains(q, "hfsc") {
		t.Errorf("%s keeps hfsc after its QoS is cleared:\n%s", b.v2, q)
	}
}
