package vswitchd

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/govswitch/govswitch/internal/testbed"
	"github.com/govswitch/govswitch/ovsdb/ovsdbtest"
)

// qinqBed is three hosts on one bridge, as OVS's "802.1ad - 802.1q
// tunnel" test (156) and "802.1ad - vlan_limit" (153) use them:
//
//	h1 port <name>a dot1q-tunnel tag=4094 cvlans=100,200   OpenFlow port 1
//	   eth0 10.1.1.1, eth0.100 10.2.0.1, eth0.200 10.3.0.1, eth0.300 10.4.0.1
//	h2 port <name>b the same                                OpenFlow port 2
//	   eth0 10.1.1.2, eth0.100 10.2.0.2, eth0.200 10.3.0.2, eth0.300 10.4.0.2
//	h3 port <name>c trunk                                   OpenFlow port 3
//	   eth0.4094 (802.1ad), on it eth0.4094.100 10.2.0.3
//
// h1 and h2 are customers that tag their own VLANs; h3 sits on the
// provider's side and sees their C-VLAN 100 inside S-VLAN 4094.
type qinqBed struct {
	name   string
	hosts  [3]*testbed.Netns
	ports  [3]string
	macs   [3]net.HardwareAddr
	rundir string
}

func newQinQBed(t *testing.T) *qinqBed {
	t.Helper()
	testbed.Require(t)
	n := bedSeq.Add(1)
	b := &qinqBed{name: fmt.Sprintf("gq%d", n), rundir: t.TempDir()}
	for i := range b.hosts {
		b.hosts[i] = testbed.NewNetns(t)
		b.ports[i] = fmt.Sprintf("gq%d%c", n, 'a'+i)
		cidr := fmt.Sprintf("10.1.1.%d/24", i+1)
		b.macs[i] = testbed.Veth(t, b.ports[i], b.hosts[i], "eth0", cidr)
	}
	sh := func(h int, args ...string) {
		t.Helper()
		if out, err := b.hosts[h].Exec(args[0], args[1:]...); err != nil {
			t.Fatalf("h%d: %s: %v\n%s", h+1, strings.Join(args, " "), err, out)
		}
	}
	for h := 0; h < 2; h++ {
		for i, vid := range []string{"100", "200", "300"} {
			dev := "eth0." + vid
			sh(h, "ip", "link", "add", "link", "eth0", "name", dev, "type", "vlan", "id", vid)
			sh(h, "ip", "addr", "add", fmt.Sprintf("10.%d.0.%d/24", i+2, h+1), "dev", dev)
			sh(h, "ip", "link", "set", dev, "up")
		}
	}
	sh(2, "ip", "link", "add", "link", "eth0", "name", "eth0.4094", "type", "vlan", "protocol", "802.1ad", "id", "4094")
	sh(2, "ip", "link", "set", "eth0.4094", "up")
	sh(2, "ip", "link", "add", "link", "eth0.4094", "name", "eth0.4094.100", "type", "vlan", "id", "100")
	sh(2, "ip", "addr", "add", "10.2.0.3/24", "dev", "eth0.4094.100")
	sh(2, "ip", "link", "set", "eth0.4094.100", "up")
	return b
}

// configure builds the bridge with ovs-vsctl, with vlan-limit=0 as OVS's
// 802.1ad tests start, and a max-idle that keeps the datapath flows for
// the whole test, so that both switches' megaflows can be compared however
// slowly the bed runs.
func (b *qinqBed) configure(vsctl func(args ...string) string) {
	vsctl("set", "Open_vSwitch", ".", "other_config:vlan-limit=0", "other_config:max-idle=120000")
	vsctl("add-br", b.name)
	settings := [][]string{
		{"vlan_mode=dot1q-tunnel", "tag=4094", "cvlans=100,200"},
		{"vlan_mode=dot1q-tunnel", "tag=4094", "cvlans=100,200"},
		nil,
	}
	for i, p := range b.ports {
		args := append(append([]string{"add-port", b.name, p}, settings[i]...),
			"--", "set", "Interface", p, "ofport_request="+strconv.Itoa(i+1))
		vsctl(args...)
	}
}

// qinqRun is what one switch did with the qinqBed.
type qinqRun struct {
	loss    map[string]int // "h1->10.2.0.2": pings lost of 3
	fdb     string
	flows   []string       // IPv4 megaflows, as ovs-dpctl shows them
	limited map[string]int // pings lost under vlan-limit=1 and a dl_type=0x8100 drop
	warned  bool           // the log has the dot1q-tunnel drop warning for VLAN 300
}

var qinqPingTargets = []string{"10.2.0.2", "10.3.0.2", "10.4.0.2", "10.1.1.2", "10.2.0.3"}

func (b *qinqBed) ping(t *testing.T, to string) int {
	t.Helper()
	out, _ := b.hosts[0].Exec("ping", "-c", "3", "-i", "0.2", "-W", "1", to)
	return parseLoss(t, out)
}

// run pings from h1 to each target, reads fdb/show and the megaflows,
// then sets vlan-limit=1 with a flow dropping ethertype 0x8100 (test
// 153's steps) and pings again. ofctl runs an ovs-ofctl command and its
// flow argument against the bridge.
func (b *qinqBed) run(t *testing.T, vsctl func(args ...string) string, ofctl func(args ...string), ctl string) qinqRun {
	t.Helper()
	r := qinqRun{loss: map[string]int{}, limited: map[string]int{}}
	for _, h := range b.hosts {
		h.Exec("ip", "neigh", "flush", "all")
	}
	// The first ping of a pair may be lost to ARP across the tunnel.
	b.ping(t, "10.2.0.2")
	b.ping(t, "10.2.0.3")
	for _, to := range qinqPingTargets {
		r.loss["h1->"+to] = b.ping(t, to)
	}
	r.fdb = appctlAt(t, ctl, "fdb/show", b.name).out
	for _, to := range []string{"10.2.0.2", "10.3.0.2", "10.2.0.3"} {
		b.hosts[0].Exec("ping", "-c", "1", "-W", "1", to)
	}
	out, err := exec.Command("ovs-dpctl", "dump-flows", "--names", "system@ovs-system").CombinedOutput()
	if err != nil {
		t.Fatalf("ovs-dpctl dump-flows: %v\n%s", err, out)
	}
	stats := regexp.MustCompile(`, packets:.*, actions:`)
	for _, l := range strings.Split(string(out), "\n") {
		if strings.Contains(l, "0x0800") && strings.Contains(l, "in_port("+b.name) {
			r.flows = append(r.flows, stats.ReplaceAllString(l, " actions:"))
		}
	}
	sort.Strings(r.flows)

	if res := appctlAt(t, ctl, "revalidator/purge"); res.code != 0 {
		t.Fatalf("revalidator/purge: %d %s", res.code, res.err)
	}
	vsctl("set", "Open_vSwitch", ".", "other_config:vlan-limit=1")
	ofctl("add-flow", "priority=100,dl_type=0x8100,actions=drop")
	for _, to := range []string{"10.2.0.2", "10.2.0.3"} {
		r.limited["h1->"+to] = b.ping(t, to)
	}
	ofctl("del-flows", "dl_type=0x8100")
	vsctl("set", "Open_vSwitch", ".", "other_config:vlan-limit=0")
	return r
}

var qinqWarning = regexp.MustCompile(`dropping VLAN 300 packet received on dot1q-tunnel port \S+ that excludes this VLAN`)

// checkQinQRun holds one switch's run to what the tunnel means.
func checkQinQRun(t *testing.T, who string, b *qinqBed, r qinqRun) {
	t.Helper()
	for to, want := range map[string]int{
		"10.2.0.2": 0, // C-VLAN 100 through the tunnel
		"10.3.0.2": 0, // C-VLAN 200
		"10.4.0.2": 3, // C-VLAN 300: not in cvlans
		"10.1.1.2": 3, // untagged: C-VLAN 0, not in cvlans
		"10.2.0.3": 0, // C-VLAN 100 in S-VLAN 4094 on the trunk
	} {
		if got := r.loss["h1->"+to]; got != want {
			t.Errorf("%s: h1->%s lost %d of 3 pings, want %d", who, to, got, want)
		}
	}
	got := fdbEntries(r.fdb)
	for i := range b.hosts {
		if e := fmt.Sprintf("%d/4094/%s", i+1, b.macs[i]); !got[e] {
			t.Errorf("%s: fdb/show lacks port/VLAN/MAC %s (every address in the S-VLAN):\n%s", who, e, r.fdb)
		}
	}
	for e := range got {
		if !strings.Contains(e, "/4094/") {
			t.Errorf("%s: fdb/show has %s outside the S-VLAN:\n%s", who, e, r.fdb)
		}
	}
	// Under vlan-limit=1 h3's double-tagged replies are ethertype 0x8100
	// to the tables, and dropped; h2's single-tagged ones are not.
	if r.limited["h1->10.2.0.2"] != 0 || r.limited["h1->10.2.0.3"] != 3 {
		t.Errorf("%s: vlan-limit=1 with dl_type=0x8100 dropped: lost %v, want h1->10.2.0.2 0 and h1->10.2.0.3 3", who, r.limited)
	}
	if !r.warned {
		t.Errorf("%s: no %q in the log", who, qinqWarning)
	}
}

// TestIntegrationQinQ: dot1q-tunnel ports carry their customers' VLANs
// inside S-VLAN 4094, admit only the cvlans listed, learn every address in
// the S-VLAN, and hand the traffic to a trunk double-tagged; vlan-limit=1
// makes a double-tagged frame ethertype 0x8100 to the tables. The same
// bridge on ovs-vswitchd 3.1 first, in the same boot, is the reference.
func TestIntegrationQinQ(t *testing.T) {
	b := newQinQBed(t)

	o := startOVS(t)
	ovsctl := func(args ...string) string { return o.must(t, "ovs-vsctl", args...) }
	b.configure(ovsctl)
	ovs := b.run(t, ovsctl, func(args ...string) { o.must(t, "ovs-ofctl", args[0], b.name, args[1]) }, o.ctl)
	log, _ := os.ReadFile(filepath.Join(o.dir, "ovs-vswitchd.log"))
	ovs.warned = qinqWarning.Match(log)
	t.Logf("ovs-vswitchd: pings lost %v, under vlan-limit=1 %v; fdb/show:\n%s", ovs.loss, ovs.limited, ovs.fdb)
	o.exitCleanup(t, b.name)

	logFile := filepath.Join(b.rundir, "govswitchd.log")
	g := startGovSwitchLogging(t, b.rundir, logFile)
	vsctl := func(args ...string) string { t.Helper(); return g.vsctl(t, args...) }
	b.configure(vsctl)
	for i, p := range b.ports {
		if e := vsctl("get", "Interface", p, "error"); e != "[]" {
			t.Errorf("port %s: Interface error %s", p, e)
		}
		if got := vsctl("get", "Interface", p, "ofport"); got != strconv.Itoa(i+1) {
			t.Errorf("port %s: ofport %s, want %d", p, got, i+1)
		}
	}
	mgmt := g.mgmt(t, b.name)
	gov := b.run(t, vsctl, func(args ...string) {
		t.Helper()
		if out, err := ofctlAt(mgmt, args...); err != nil {
			t.Fatalf("ovs-ofctl %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}, g.ctl)
	log, _ = os.ReadFile(logFile)
	gov.warned = qinqWarning.Match(log)
	t.Logf("govswitchd: pings lost %v, under vlan-limit=1 %v; fdb/show:\n%s", gov.loss, gov.limited, gov.fdb)

	checkQinQRun(t, "ovs-vswitchd", b, ovs)
	checkQinQRun(t, "govswitchd", b, gov)
	t.Logf("IPv4 megaflows:\novs-vswitchd %q\ngovswitchd   %q", ovs.flows, gov.flows)
	if !slices.Equal(ovs.flows, gov.flows) {
		t.Errorf("megaflows differ:\novs-vswitchd %q\ngovswitchd   %q", ovs.flows, gov.flows)
	}
	push := fmt.Sprintf("in_port(%s),eth(src=%s,dst=%s),eth_type(0x8100),vlan(vid=100),encap(eth_type(0x0800),ipv4(frag=no)) actions:push_vlan(tpid=0x88a8,vid=4094,pcp=0),%s",
		b.ports[0], b.macs[0], b.macs[2], b.ports[2])
	if !slices.ContainsFunc(gov.flows, func(f string) bool { return strings.HasSuffix(f, push) }) {
		t.Errorf("govswitchd's megaflows lack %s:\n%q", push, gov.flows)
	}
}

// startGovSwitchLogging is startGovSwitch with a log file, which the
// test reads for NORMAL's warnings.
func startGovSwitchLogging(t *testing.T, rundir, logFile string) *govSwitch {
	t.Helper()
	g := &govSwitch{srv: ovsdbtest.Start(t), rundir: rundir, ctl: filepath.Join(rundir, "gov.ctl")}
	d, err := NewForOVSDB(Config{Datapath: "system", Rundir: rundir, Pidfile: "-", Handlers: 1,
		Unixctl: g.ctl, LogFile: logFile}, nil, testLog{t})
	if err != nil {
		t.Fatal(err)
	}
	g.d = d
	t.Cleanup(runOVSDB(t, d, g.srv.Remote, 15*time.Second))
	return g
}
