package vswitchd

import (
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"
)

// lacpBond makes the peer's eth0 and eth1 a Linux 802.3ad bond (LACP,
// fast rate, MII monitoring every 50 ms) addressed 10.0.0.1, hashing
// layer 3+4 as our balance-tcp does.
func (b *bondBed) lacpBond(t *testing.T) {
	t.Helper()
	b.peerRun(t, "ip", "link", "add", "bond0", "type", "bond", "mode", "802.3ad", "miimon", "50",
		"lacp_rate", "fast", "xmit_hash_policy", "layer3+4")
	for _, e := range []string{"eth0", "eth1"} {
		b.peerRun(t, "ip", "link", "set", e, "down")
		b.peerRun(t, "ip", "link", "set", e, "master", "bond0")
	}
	b.peerRun(t, "ip", "addr", "add", "10.0.0.1/24", "dev", "bond0")
	b.peerRun(t, "ip", "link", "set", "bond0", "up")
}

// lacpArgs are the bond's settings: a fixed system id, so lacp/show
// reads the same for both switches (each would take its bridge's MAC).
// The members' OpenFlow ports and aggregation key are fixed too: OVS
// numbers a bond's interfaces, and takes the first it registers as the
// key member, in the order of a hash map.
func (b *bondBed) lacpArgs() []string {
	return []string{"lacp=active", "bond_mode=balance-tcp", "other_config:lacp-time=fast",
		"other_config:lacp-system-id=02:00:00:00:aa:01", "other_config:bond-rebalance-interval=0",
		"--", "set", "Interface", b.members[0], "ofport_request=1", "other_config:lacp-aggregation-key=7",
		"--", "set", "Interface", b.members[1], "ofport_request=2", "other_config:lacp-aggregation-key=7"}
}

// lacpRun is what one switch did with the LACP bed.
type lacpRun struct {
	show, lacpShow, failed, lacpFailed, back string
	stats, dpFlow                            string
	// lacp_current of the first member: negotiated, down, back; and of
	// the port of no bond.
	current, currentDown, currentBack, currentPlain string
}

// waitLACPCurrent polls Interface iface's lacp_current until it reads
// want, and returns what it read last.
func waitLACPCurrent(t *testing.T, vsctl func(args ...string) string, iface, want string) string {
	t.Helper()
	var got string
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		if got = strings.TrimSpace(vsctl("get", "Interface", iface, "lacp_current")); got == want {
			break
		}
	}
	return got
}

// waitAppctl polls an appctl command until its output matches re.
func waitAppctl(t *testing.T, ctl string, re *regexp.Regexp, args ...string) string {
	t.Helper()
	var out string
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		out = appctlAt(t, ctl, args...).out
		if re.MatchString(out) {
			return out
		}
	}
	dp, _ := exec.Command("ovs-dpctl", "dump-flows", "system@ovs-system").CombinedOutput()
	t.Fatalf("%s never matched %s:\n%s\nlacp/show:\n%s\nlacp/show-stats:\n%s\novs-dpctl dump-flows:\n%s", strings.Join(args, " "), re, out,
		appctlAt(t, ctl, "lacp/show").out, appctlAt(t, ctl, "lacp/show-stats").out, dp)
	return out
}

var (
	bothEnabled    = regexp.MustCompile(`(?s)lacp_status: negotiated\n.*member gv\d+a: enabled\n.*member gv\d+b: enabled\n`)
	aDisabled      = regexp.MustCompile(`(?s)member gv\d+a: disabled\n.*member gv\d+b: enabled\n`)
	bothAttached   = regexp.MustCompile(`(?s)status: active negotiated\n.*member: gv\d+a: current attached\n.*partner state: activity timeout aggregation synchronized collecting distributing\n.*member: gv\d+b: current attached\n.*partner state: activity timeout aggregation synchronized collecting distributing\n`)
	lacpFlowLine   = regexp.MustCompile(`(?m)^.*eth_type\(0x8809\).*slow_path\(lacp\).*$`)
	lacpDPStats    = regexp.MustCompile(`packets:\d+, bytes:\d+, used:[^,]+, `)
	dpPID          = regexp.MustCompile(`pid=\d+`)
	dpInPort       = regexp.MustCompile(`in_port\(\d+\)`)
	recircID       = regexp.MustCompile(`(?m)^(bond may use recirculation: yes, Recirc-ID : )\d+$`)
	lacpStatsShape = regexp.MustCompile(`(?s)---- bond0 statistics ----\n\nmember: gv\d+a:\n  TX PDUs: [1-9]\d*\n  RX PDUs: [1-9]\d*\n  RX Bad PDUs: 0\n  RX Marker Request PDUs: 0\n.*member: gv\d+b:\n  TX PDUs: [1-9]\d*\n  RX PDUs: [1-9]\d*\n  RX Bad PDUs: 0\n`)
)

// lacpSteps: LACP negotiates with the Linux bond, ping and TCP cross the
// balance-tcp bond, a member's link goes down (our side) and traffic
// goes on over the other, the member comes back and is attached again.
func (b *bondBed) lacpSteps(t *testing.T, who, ctl string, port int, vsctl func(args ...string) string) lacpRun {
	t.Helper()
	var r lacpRun
	b.peer.Exec("ip", "neigh", "flush", "all")
	b.h2.Exec("ip", "neigh", "flush", "all")
	waitAppctl(t, ctl, bothEnabled, "bond/show", "bond0")
	// Which member is active (for multicast) is up to the switch (OVS
	// takes the first of a hash map): make it the first on both.
	appctlAt(t, ctl, "bond/set-active-member", "bond0", b.members[0])
	r.show = waitAppctl(t, ctl, regexp.MustCompile(`member `+b.members[0]+`: enabled\n  active member\n`), "bond/show", "bond0")
	r.lacpShow = waitAppctl(t, ctl, bothAttached, "lacp/show", "bond0")
	r.current = waitLACPCurrent(t, vsctl, b.members[0], "true")
	r.currentPlain = strings.TrimSpace(vsctl("get", "Interface", b.port, "lacp_current"))
	if l, out := b.pingLoss(t, 3); l != 0 {
		t.Errorf("%s: peer->h2 over the LACP bond lost %d of 3:\n%s\nbond/show:\n%s", who, l, out, r.show)
	}
	b.echoServer(t, port)
	c := b.tcpConn(t, port)
	if err := echo(c, "before"); err != nil {
		t.Errorf("%s: TCP over the LACP bond: %v", who, err)
	}
	dp, _ := exec.Command("ovs-dpctl", "dump-flows", "system@ovs-system").CombinedOutput()
	// Either member's flow: the datapath port numbers are the switch's.
	r.dpFlow = dpPID.ReplaceAllString(lacpDPStats.ReplaceAllString(lacpFlowLine.FindString(string(dp)), ""), "pid=N")
	r.dpFlow = dpInPort.ReplaceAllString(r.dpFlow, "in_port(N)")
	if r.dpFlow == "" {
		t.Errorf("%s: no slow_path(lacp) datapath flow in ovs-dpctl dump-flows:\n%s", who, dp)
	}
	r.stats = appctlAt(t, ctl, "lacp/show-stats", "bond0").out
	if !lacpStatsShape.MatchString(r.stats) || strings.Count(r.stats, "Carrier Status Changed: 0\n") != 2 {
		t.Errorf("%s: lacp/show-stats:\n%s", who, r.stats)
	}

	if out, err := exec.Command("ip", "link", "set", b.members[0], "down").CombinedOutput(); err != nil {
		t.Fatalf("ip link set %s down: %v\n%s", b.members[0], err, out)
	}
	r.failed = waitAppctl(t, ctl, aDisabled, "bond/show", "bond0")
	r.lacpFailed = appctlAt(t, ctl, "lacp/show", "bond0").out
	// No PDUs: expired, then (fast rate, 3 s later) defaulted.
	r.currentDown = waitLACPCurrent(t, vsctl, b.members[0], "false")
	if err := echo(c, "after failover"); err != nil {
		t.Errorf("%s: TCP over the LACP failover: %v", who, err)
	}
	if l, out := b.pingLoss(t, 3); l != 0 {
		t.Errorf("%s: peer->h2 with %s down lost %d of 3:\n%s\nbond/show:\n%s", who, b.members[0], l, out, r.failed)
	}
	if out, err := exec.Command("ip", "link", "set", b.members[0], "up").CombinedOutput(); err != nil {
		t.Fatalf("ip link set %s up: %v\n%s", b.members[0], err, out)
	}
	r.back = waitAppctl(t, ctl, bothEnabled, "bond/show", "bond0")
	waitAppctl(t, ctl, bothAttached, "lacp/show", "bond0")
	r.currentBack = waitLACPCurrent(t, vsctl, b.members[0], "true")
	if err := echo(c, "back"); err != nil {
		t.Errorf("%s: TCP with both members back: %v", who, err)
	}
	if l, out := b.pingLoss(t, 3); l != 0 {
		t.Errorf("%s: peer->h2 with both members back lost %d of 3:\n%s", who, l, out)
	}
	return r
}

// TestIntegrationBondLACP: a balance-tcp bond with LACP facing a Linux
// 802.3ad bond negotiates, carries ping and TCP, keeps them over a
// member's link going down and coming back; LACPDUs reach userspace
// through a slow_path(lacp) datapath flow. lacp/show and bond/show read
// as ovs-vswitchd 3.1's (bond/show less its rebalancing lines, and the
// recirculation id, which each switch allocates), ovs-vswitchd doing the
// same in the same boot first.
func TestIntegrationBondLACP(t *testing.T) {
	b := newBondBed(t)
	b.lacpBond(t)

	o := startOVS(t)
	ovsVsctl := func(args ...string) string { return o.must(t, "ovs-vsctl", args...) }
	b.configure(ovsVsctl, b.lacpArgs()...)
	ovs := b.lacpSteps(t, "ovs-vswitchd", o.ctl, 7011, ovsVsctl)
	stopOVS(t, o, b.name)

	vsctl, ctl, _ := startGov(t, b.rundir)
	b.configure(vsctl, b.lacpArgs()...)
	for _, p := range b.members {
		if e := vsctl("get", "Interface", p, "error"); e != "[]" {
			t.Errorf("member %s: Interface error %s", p, e)
		}
	}
	gov := b.lacpSteps(t, "govswitchd", ctl, 7012, vsctl)

	// The recirculation ids are each switch's own.
	norm := func(s string) string { return recircID.ReplaceAllString(bondShowNorm(s), "${1}N") }
	for _, c := range []struct{ what, ovs, gov string }{
		{"bond/show", norm(ovs.show), norm(gov.show)},
		{"lacp/show", ovs.lacpShow, gov.lacpShow},
		{"bond/show with a member down", norm(ovs.failed), norm(gov.failed)},
		{"lacp/show with a member down", ovs.lacpFailed, gov.lacpFailed},
		{"bond/show with both back", norm(ovs.back), norm(gov.back)},
		{"LACP datapath flow", ovs.dpFlow, gov.dpFlow},
		{"lacp_current negotiated", ovs.current, gov.current},
		{"lacp_current with the member down", ovs.currentDown, gov.currentDown},
		{"lacp_current with the member back", ovs.currentBack, gov.currentBack},
		{"lacp_current of a port of no bond", ovs.currentPlain, gov.currentPlain},
	} {
		t.Logf("%s:\novs-vswitchd:\n%s\ngovswitchd:\n%s", c.what, c.ovs, c.gov)
		if c.ovs != c.gov {
			t.Errorf("%s differs:\novs-vswitchd:\n%s\ngovswitchd:\n%s", c.what, c.ovs, c.gov)
		}
	}
	// Not only the same: what lacp_current means (current or expired
	// partner: true; defaulted: false; no LACP: empty).
	for _, c := range []struct{ what, got, want string }{
		{"negotiated", gov.current, "true"}, {"member down", gov.currentDown, "false"},
		{"member back", gov.currentBack, "true"}, {"port of no bond", gov.currentPlain, "[]"},
	} {
		if c.got != c.want {
			t.Errorf("govswitchd lacp_current %s: %s, want %s", c.what, c.got, c.want)
		}
	}
	t.Logf("lacp/show-stats:\novs-vswitchd:\n%s\ngovswitchd:\n%s", ovs.stats, gov.stats)
}
