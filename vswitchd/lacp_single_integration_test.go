package vswitchd

import (
	"fmt"
	"os/exec"
	"regexp"
	"strings"
	"testing"

	"github.com/govswitch/govswitch/internal/testbed"
)

// lacpPairBed is two bridges joined by one veth pair whose ends run LACP
// as ports of one interface (a bundle of one, no bond), with a host on
// each bridge:
//
//	h1 eth0 10.0.0.1 <-> <name>a on bridge <name>;  <name>l (lacp) <-> <name>r (lacp) on bridge <name>x;  <name>d <-> h2 eth0 10.0.0.2
type lacpPairBed struct {
	brA, brB     string
	a, l, r, d   string
	h1, h2       *testbed.Netns
	rundir       string
	sysA, sysB   string
	fastLACPArgs []string
}

func newLACPPairBed(t *testing.T) *lacpPairBed {
	t.Helper()
	testbed.Require(t)
	n := bedSeq.Add(1)
	p := fmt.Sprintf("gv%d", n)
	b := &lacpPairBed{brA: p, brB: p + "x", a: p + "a", l: p + "l", r: p + "r", d: p + "d",
		h1: testbed.NewNetns(t), h2: testbed.NewNetns(t), rundir: t.TempDir(),
		sysA: "02:00:00:00:aa:01", sysB: "02:00:00:00:bb:01"}
	testbed.Veth(t, b.a, b.h1, "eth0", "10.0.0.1/24")
	testbed.Veth(t, b.d, b.h2, "eth0", "10.0.0.2/24")
	if out, err := exec.Command("ip", "link", "add", b.l, "type", "veth", "peer", "name", b.r).CombinedOutput(); err != nil {
		t.Fatalf("ip link add: %v\n%s", err, out)
	}
	t.Cleanup(func() { exec.Command("ip", "link", "del", b.l).Run() })
	for _, dev := range []string{b.l, b.r} {
		if out, err := exec.Command("ip", "link", "set", dev, "up").CombinedOutput(); err != nil {
			t.Fatalf("ip link set %s up: %v\n%s", dev, err, out)
		}
	}
	return b
}

// configure makes both bridges; the LACP ports have fixed system ids and
// OpenFlow port numbers, so lacp/show reads the same for both switches.
func (b *lacpPairBed) configure(vsctl func(args ...string) string) {
	vsctl("add-br", b.brA)
	vsctl("add-port", b.brA, b.a, "--", "set", "Interface", b.a, "ofport_request=1")
	vsctl("add-port", b.brA, b.l, "lacp=active", "other_config:lacp-time=fast", "other_config:lacp-system-id="+b.sysA,
		"--", "set", "Interface", b.l, "ofport_request=2")
	vsctl("add-br", b.brB)
	vsctl("add-port", b.brB, b.d, "--", "set", "Interface", b.d, "ofport_request=1")
	vsctl("add-port", b.brB, b.r, "lacp=active", "other_config:lacp-time=fast", "other_config:lacp-system-id="+b.sysB,
		"--", "set", "Interface", b.r, "ofport_request=2")
}

func (b *lacpPairBed) pingLoss(t *testing.T, n int) (int, string) {
	t.Helper()
	out, _ := b.h1.Exec("ping", "-c", fmt.Sprint(n), "-i", "0.2", "-W", "1", "10.0.0.2")
	return parseLoss(t, out), out
}

// lacpPairRun is what one switch did.
type lacpPairRun struct {
	showL, showR, bondShow, curL, curR string
	loss                               int
	// alone: the peer's LACP off (no partner); fallback: then
	// lacp-fallback-ab=true on ours.
	showAlone, curAlone, showFallback, curFallback string
	lossAlone, lossFallback                        int
}

var (
	singleNegotiated = regexp.MustCompile(`(?s)status: active negotiated\n.*member: gv\d+[lr]: current attached\n.*may_enable: true\n.*partner state: activity timeout synchronized collecting distributing\n`)
	singleDefaulted  = regexp.MustCompile(`(?s)member: gv\d+l: defaulted`)
)

func (b *lacpPairBed) steps(t *testing.T, who, ctl string, vsctl func(args ...string) string) lacpPairRun {
	t.Helper()
	var r lacpPairRun
	b.configure(vsctl)
	for _, p := range []string{b.l, b.r} {
		if e := strings.TrimSpace(vsctl("get", "Interface", p, "error")); e != "[]" {
			t.Errorf("%s: Interface %s error %s", who, p, e)
		}
	}
	r.showL = waitAppctl(t, ctl, singleNegotiated, "lacp/show", b.l)
	r.showR = waitAppctl(t, ctl, singleNegotiated, "lacp/show", b.r)
	r.curL = waitLACPCurrent(t, vsctl, b.l, "true")
	r.curR = waitLACPCurrent(t, vsctl, b.r, "true")
	r.bondShow = appctlAt(t, ctl, "bond/show").out
	var out string
	r.loss, out = b.pingLoss(t, 5)
	t.Logf("%s negotiated: ping h1->h2:\n%s", who, out)

	// The peer stops LACP: ours hears nothing, expires, then defaults
	// (fast rate: 3 s), and is not attached to a partner any more.
	vsctl("set", "Port", b.r, "lacp=off")
	r.curAlone = waitLACPCurrent(t, vsctl, b.l, "false")
	r.showAlone = waitAppctl(t, ctl, singleDefaulted, "lacp/show", b.l)
	r.lossAlone, out = b.pingLoss(t, 5)
	t.Logf("%s with no partner: ping h1->h2:\n%s", who, out)

	vsctl("set", "Port", b.l, "other_config:lacp-fallback-ab=true")
	r.showFallback = waitAppctl(t, ctl, regexp.MustCompile(`(?s)member: gv\d+l: defaulted.*may_enable: true`), "lacp/show", b.l)
	r.curFallback = strings.TrimSpace(vsctl("get", "Interface", b.l, "lacp_current"))
	r.lossFallback, out = b.pingLoss(t, 5)
	t.Logf("%s with no partner, lacp-fallback-ab: ping h1->h2:\n%s", who, out)
	return r
}

// TestIntegrationLACPSingleInterface: LACP on ports of one interface (a
// bundle with LACP and no bond, issue 16) between two bridges negotiates,
// and ping crosses it; with the peer's LACP off, ours defaults; with
// lacp-fallback-ab, its member may be enabled again. lacp/show, bond/show,
// lacp_current and what ping gets through read as ovs-vswitchd 3.1's at
// each step, ovs-vswitchd doing the same in the same boot first.
func TestIntegrationLACPSingleInterface(t *testing.T) {
	b := newLACPPairBed(t)

	o := startOVS(t)
	ovsVsctl := func(args ...string) string { return o.must(t, "ovs-vsctl", args...) }
	ovs := b.steps(t, "ovs-vswitchd", o.ctl, ovsVsctl)
	stopOVS(t, o, b.brA)

	vsctl, ctl, _ := startGov(t, b.rundir)
	gov := b.steps(t, "govswitchd", ctl, vsctl)

	for _, c := range []struct{ what, ovs, gov string }{
		{"lacp/show of ours negotiated", ovs.showL, gov.showL},
		{"lacp/show of the peer negotiated", ovs.showR, gov.showR},
		{"bond/show", ovs.bondShow, gov.bondShow},
		{"lacp_current negotiated", ovs.curL + " " + ovs.curR, gov.curL + " " + gov.curR},
		{"ping loss negotiated", fmt.Sprint(ovs.loss), fmt.Sprint(gov.loss)},
		{"lacp/show with no partner", ovs.showAlone, gov.showAlone},
		{"lacp_current with no partner", ovs.curAlone, gov.curAlone},
		{"ping loss with no partner", fmt.Sprint(ovs.lossAlone), fmt.Sprint(gov.lossAlone)},
		{"lacp/show with lacp-fallback-ab", ovs.showFallback, gov.showFallback},
		{"lacp_current with lacp-fallback-ab", ovs.curFallback, gov.curFallback},
		{"ping loss with lacp-fallback-ab", fmt.Sprint(ovs.lossFallback), fmt.Sprint(gov.lossFallback)},
	} {
		t.Logf("%s:\novs-vswitchd:\n%s\ngovswitchd:\n%s", c.what, c.ovs, c.gov)
		if c.ovs != c.gov {
			t.Errorf("%s differs:\novs-vswitchd:\n%s\ngovswitchd:\n%s", c.what, c.ovs, c.gov)
		}
	}
	if gov.loss != 0 {
		t.Errorf("govswitchd: ping over the negotiated LACP link lost %d of 5", gov.loss)
	}
	if gov.curL != "true" || gov.curAlone != "false" {
		t.Errorf("govswitchd lacp_current: negotiated %s, alone %s; want true, false", gov.curL, gov.curAlone)
	}
}
