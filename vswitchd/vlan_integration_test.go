package vswitchd

import (
	"fmt"
	"net"
	"os/exec"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/govswitch/govswitch/internal/testbed"
)

// vlanBed is four hosts on one bridge, configured with ovs-vsctl:
//
//	h1 10.0.0.1  port <name>a  tag=10          OpenFlow port 1
//	h2 10.0.0.2  port <name>b  tag=10          OpenFlow port 2
//	h3 10.0.0.3  port <name>c  tag=20          OpenFlow port 3
//	h4 eth0.10 (a Linux VLAN device) 10.0.0.4  port <name>d  trunks=10,20  OpenFlow port 4
//
// h4's eth0 itself has an address on another subnet, so that its untagged
// frames are VLAN 0, which no other port carries.
type vlanBed struct {
	name   string
	hosts  [4]*testbed.Netns
	ports  [4]string
	macs   [4]net.HardwareAddr
	rundir string
}

func newVLANBed(t *testing.T) *vlanBed {
	t.Helper()
	testbed.Require(t)
	n := bedSeq.Add(1)
	b := &vlanBed{name: fmt.Sprintf("gv%d", n), rundir: t.TempDir()}
	for i := range b.hosts {
		b.hosts[i] = testbed.NewNetns(t)
		b.ports[i] = fmt.Sprintf("gv%d%c", n, 'a'+i)
		cidr := fmt.Sprintf("10.0.0.%d/24", i+1)
		if i == 3 {
			cidr = "10.9.9.4/24"
		}
		b.macs[i] = testbed.Veth(t, b.ports[i], b.hosts[i], "eth0", cidr)
	}
	// h3 also has an address in h4's untagged subnet, for the native modes.
	if out, err := b.hosts[2].Exec("ip", "addr", "add", "10.9.9.3/24", "dev", "eth0"); err != nil {
		t.Fatalf("h3: ip addr add: %v\n%s", err, out)
	}
	for _, args := range [][]string{
		{"ip", "link", "add", "link", "eth0", "name", "eth0.10", "type", "vlan", "id", "10"},
		{"ip", "addr", "add", "10.0.0.4/24", "dev", "eth0.10"},
		{"ip", "link", "set", "eth0.10", "up"},
	} {
		if out, err := b.hosts[3].Exec(args[0], args[1:]...); err != nil {
			t.Fatalf("h4: %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	return b
}

// configure builds the bridge with ovs-vsctl (vsctl runs it against the
// switch under test and fails the test on an error).
func (b *vlanBed) configure(vsctl func(args ...string) string) {
	vsctl("add-br", b.name)
	settings := []string{"tag=10", "tag=10", "tag=20", "trunks=10,20"}
	for i, p := range b.ports {
		vsctl("add-port", b.name, p, settings[i], "--", "set", "Interface", p, "ofport_request="+strconv.Itoa(i+1))
	}
}

// vlanRun is what one switch did with the vlanBed.
type vlanRun struct {
	loss  map[string]int // "h1->h2": pings lost of vlanPings
	fdb   string         // fdb/show after the pings
	flows []string       // IPv4 megaflows between h1 and h4, as ovs-dpctl shows them
}

const vlanPings = 3

// pings pings between the hosts: which pairs reach each other shows the
// VLANs. Every host's ARP cache starts empty, so the first frames are
// broadcasts flooded within a VLAN.
func (b *vlanBed) pings(t *testing.T) vlanRun {
	t.Helper()
	r := vlanRun{loss: map[string]int{}}
	for _, h := range b.hosts {
		h.Exec("ip", "neigh", "flush", "all")
	}
	for _, p := range []struct{ from, to int }{{1, 2}, {1, 4}, {2, 4}, {1, 3}, {3, 4}} {
		out, _ := b.hosts[p.from-1].Exec("ping", "-c", strconv.Itoa(vlanPings), "-i", "0.2", "-W", "1",
			fmt.Sprintf("10.0.0.%d", p.to))
		r.loss[fmt.Sprintf("h%d->h%d", p.from, p.to)] = parseLoss(t, out)
	}
	return r
}

// ipFlows pings h1->h4 once more and returns the datapath's IPv4 flows
// between h1's and h4's ports (by name, statistics cut), sorted: NORMAL's
// megaflows, VLAN match and tag actions included.
func (b *vlanBed) ipFlows(t *testing.T, dp string) []string {
	t.Helper()
	if out, _ := b.hosts[0].Exec("ping", "-c", "2", "-i", "0.2", "-W", "1", "10.0.0.4"); parseLoss(t, out) != 0 {
		t.Errorf("h1->h4 lost pings:\n%s", out)
	}
	out, err := exec.Command("ovs-dpctl", "dump-flows", "--names", dp).CombinedOutput()
	if err != nil {
		t.Fatalf("ovs-dpctl dump-flows %s: %v\n%s", dp, err, out)
	}
	stats := regexp.MustCompile(`, packets:.*, actions:`)
	var flows []string
	for _, l := range strings.Split(string(out), "\n") {
		if !strings.Contains(l, "0x0800") || !(strings.Contains(l, "in_port("+b.ports[0]+")") || strings.Contains(l, "in_port("+b.ports[3]+")")) {
			continue
		}
		flows = append(flows, stats.ReplaceAllString(l, " actions:"))
	}
	sort.Strings(flows)
	return flows
}

// nativePings makes h4's trunk native in VLAN 20, untagged and then
// tagged, and pings h4's untagged address from h3 (access 20) and its VLAN
// 10 device from h1: native-untagged carries both, native-tagged sends
// VLAN 20 to h4 tagged, which h4 (no VLAN 20 device) does not take.
func (b *vlanBed) nativePings(t *testing.T, vsctl func(args ...string) string) map[string]int {
	t.Helper()
	loss := map[string]int{}
	for _, mode := range []string{"native-untagged", "native-tagged"} {
		vsctl("set", "Port", b.ports[3], "vlan_mode="+mode, "tag=20")
		for _, h := range b.hosts {
			h.Exec("ip", "neigh", "flush", "all")
		}
		for _, p := range []struct {
			from int
			to   string
		}{{3, "10.9.9.4"}, {1, "10.0.0.4"}} {
			out, _ := b.hosts[p.from-1].Exec("ping", "-c", "2", "-i", "0.2", "-W", "1", p.to)
			loss[fmt.Sprintf("%s h%d->%s", mode, p.from, p.to)] = parseLoss(t, out)
		}
	}
	vsctl("clear", "Port", b.ports[3], "vlan_mode", "tag")
	return loss
}

// fdbEntries parses fdb/show into "port/VLAN/MAC" strings.
var fdbLine = regexp.MustCompile(`(?m)^\s*(\S+)\s+(\d+)\s+([0-9a-f:]{17})\s+\d+$`)

func fdbEntries(out string) map[string]bool {
	m := map[string]bool{}
	for _, f := range fdbLine.FindAllStringSubmatch(out, -1) {
		m[f[1]+"/"+f[2]+"/"+f[3]] = true
	}
	return m
}

// checkVLANRun holds one switch's run to what the VLANs mean.
func checkVLANRun(t *testing.T, who string, b *vlanBed, r vlanRun) {
	t.Helper()
	want := map[string]int{
		"h1->h2": 0,         // access 10 to access 10
		"h1->h4": 0,         // access 10 to the trunk's VLAN 10 device
		"h2->h4": 0,         //
		"h1->h3": vlanPings, // VLAN 10 to VLAN 20
		"h3->h4": vlanPings, // VLAN 20 to h4's VLAN 10 address
	}
	for k, w := range want {
		if r.loss[k] != w {
			t.Errorf("%s: %s lost %d of %d pings, want %d lost", who, k, r.loss[k], vlanPings, w)
		}
	}
	if !strings.HasPrefix(r.fdb, " port  VLAN  MAC                Age\n") {
		t.Errorf("%s: fdb/show heading:\n%s", who, r.fdb)
	}
	got := fdbEntries(r.fdb)
	for _, e := range []string{"1/10/" + b.macs[0].String(), "2/10/" + b.macs[1].String(), "4/10/" + b.macs[3].String()} {
		if !got[e] {
			t.Errorf("%s: fdb/show lacks port/VLAN/MAC %s:\n%s", who, e, r.fdb)
		}
	}
	for e := range got {
		for i, vlan := range []string{"10", "10", "20"} {
			if strings.HasSuffix(e, "/"+b.macs[i].String()) && !strings.HasPrefix(e, strconv.Itoa(i+1)+"/"+vlan+"/") {
				t.Errorf("%s: fdb/show has h%d's address as %s, want only port %d VLAN %s:\n%s", who, i+1, e, i+1, vlan, r.fdb)
			}
		}
	}
}

// TestIntegrationVLAN: access ports of one VLAN reach each other and a
// trunk's Linux VLAN device, and not another VLAN's port; fdb/show learns
// each address in its VLAN. The same bridge on ovs-vswitchd 3.1 first, in
// the same boot, is the reference: the same pings pass and fail.
func TestIntegrationVLAN(t *testing.T) {
	b := newVLANBed(t)

	// ovs-vswitchd 3.1.
	o := startOVS(t)
	b.configure(func(args ...string) string { return o.must(t, "ovs-vsctl", args...) })
	ovs := b.pings(t)
	ovs.fdb = appctlAt(t, o.ctl, "fdb/show", b.name).out
	ovs.flows = b.ipFlows(t, "system@ovs-system")
	ovsNative := b.nativePings(t, func(args ...string) string { return o.must(t, "ovs-vsctl", args...) })
	t.Logf("ovs-vswitchd: pings lost %v; fdb/show:\n%s", ovs.loss, ovs.fdb)
	o.exitCleanup(t, b.name)

	// govswitchd from its own ovsdb-server.
	g := startGovSwitch(t, b.rundir)
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
	gov := b.pings(t)
	gov.fdb = appctlAt(t, g.ctl, "fdb/show", b.name).out
	gov.flows = b.ipFlows(t, "system@ovs-system")
	govNative := b.nativePings(t, vsctl)
	t.Logf("govswitchd: pings lost %v; fdb/show:\n%s", gov.loss, gov.fdb)

	checkVLANRun(t, "ovs-vswitchd", b, ovs)
	checkVLANRun(t, "govswitchd", b, gov)
	// The same megaflows: VLAN matched with OVS's mask, tags pushed and
	// popped alike.
	t.Logf("IPv4 megaflows h1<->h4:\novs-vswitchd %q\ngovswitchd   %q", ovs.flows, gov.flows)
	if !slices.Equal(ovs.flows, gov.flows) {
		t.Errorf("megaflows differ:\novs-vswitchd %q\ngovswitchd   %q", ovs.flows, gov.flows)
	}
	push := fmt.Sprintf("in_port(%s),eth(src=%s,dst=%s),eth_type(0x0800),ipv4(frag=no) actions:push_vlan(vid=10,pcp=0),%s",
		b.ports[0], b.macs[0], b.macs[3], b.ports[3])
	pop := fmt.Sprintf("in_port(%s),eth(src=%s,dst=%s),eth_type(0x8100),vlan(vid=10,pcp=0),encap(eth_type(0x0800),ipv4(frag=no)) actions:pop_vlan,%s",
		b.ports[3], b.macs[3], b.macs[0], b.ports[0])
	for _, want := range []string{push, pop} {
		if !slices.ContainsFunc(gov.flows, func(f string) bool { return strings.HasSuffix(f, want) }) {
			t.Errorf("govswitchd's megaflows lack %s:\n%q", want, gov.flows)
		}
	}
	for k, l := range ovs.loss {
		if gov.loss[k] != l {
			t.Errorf("%s: govswitchd lost %d pings, ovs-vswitchd %d", k, gov.loss[k], l)
		}
	}

	// The native modes, against ovs-vswitchd and what they mean.
	t.Logf("native modes, pings lost of 2:\novs-vswitchd %v\ngovswitchd   %v", ovsNative, govNative)
	for k, w := range map[string]int{
		"native-untagged h3->10.9.9.4": 0, "native-untagged h1->10.0.0.4": 0,
		"native-tagged h3->10.9.9.4": 2, "native-tagged h1->10.0.0.4": 0,
	} {
		if ovsNative[k] != w || govNative[k] != w {
			t.Errorf("%s: lost ovs-vswitchd %d, govswitchd %d of 2, want %d", k, ovsNative[k], govNative[k], w)
		}
	}

	// The VLAN of a running port changes at once: h3 joins VLAN 10.
	vsctl("set", "Port", b.ports[2], "tag=10")
	if out, _ := b.hosts[0].Exec("ping", "-c", "2", "-i", "0.2", "-W", "1", "10.0.0.3"); parseLoss(t, out) != 0 {
		t.Errorf("after tag=10 on %s: h1->h3 lost pings:\n%s", b.ports[2], out)
	}
	// Refused loudly: QinQ tunnels are not implemented.
	out, _ := g.srv.Vsctl(15*time.Second, "set", "Port", b.ports[2], "vlan_mode=dot1q-tunnel")
	t.Logf("vlan_mode=dot1q-tunnel: %s", out)
	if e := vsctl("get", "Interface", b.ports[2], "error"); !strings.Contains(e, "dot1q-tunnel") {
		t.Errorf("dot1q-tunnel: Interface error %s, want it refused", e)
	}
}
