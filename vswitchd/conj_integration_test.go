package vswitchd

import (
	"encoding/binary"
	"fmt"
	"net"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/govswitch/govswitch/internal/testbed"
)

// conjBed is four hosts on a fail-mode=secure bridge, h3 behind a
// conjunctive ACL: UDP to h3 passes only from h1 or h2 (clause 1) and to
// port 9001 or 9002 (clause 2).
type conjBed struct {
	name   string
	hosts  [4]*testbed.Netns
	ports  [4]string
	macs   [4]net.HardwareAddr
	rundir string
}

var conjFlows = []string{
	"priority=100,ip,nw_src=10.0.0.1,actions=conjunction(7,1/2)",
	"priority=100,ip,nw_src=10.0.0.2,actions=conjunction(7,1/2)",
	"priority=100,udp,tp_dst=9001,actions=conjunction(7,2/2)",
	"priority=100,udp,tp_dst=9002,actions=conjunction(7,2/2)",
	"priority=100,conj_id=7,ip,actions=output:3",
	"priority=1,actions=drop",
}

func newConjBed(t *testing.T) *conjBed {
	t.Helper()
	testbed.Require(t)
	n := bedSeq.Add(1)
	b := &conjBed{name: fmt.Sprintf("gj%d", n), rundir: t.TempDir()}
	for i := range b.hosts {
		b.hosts[i] = testbed.NewNetns(t)
		b.ports[i] = fmt.Sprintf("gj%d%c", n, 'a'+i)
		b.macs[i] = testbed.Veth(t, b.ports[i], b.hosts[i], "eth0", fmt.Sprintf("10.0.0.%d/24", i+1))
	}
	return b
}

func (b *conjBed) configure(vsctl func(args ...string) string) {
	// Datapath flows must outlive the test's steps for the megaflow
	// comparison: at load 20 the steps take longer than the 10 s default.
	vsctl("set", "Open_vSwitch", ".", "other_config:max-idle=60000")
	vsctl("add-br", b.name, "--", "set", "Bridge", b.name, "fail-mode=secure")
	for i, p := range b.ports {
		vsctl("add-port", b.name, p, "--", "set", "Interface", p, "ofport_request="+strconv.Itoa(i+1))
	}
}

// conjFrame is a UDP frame from host from (0-based) to h3, port dport.
func (b *conjBed) conjFrame(from int, dport uint16) []byte {
	f := udpFrame(b.macs[from], b.macs[2], 30000, dport)
	ip := f[14:]
	copy(ip[12:16], []byte{10, 0, 0, byte(from + 1)})
	copy(ip[16:20], []byte{10, 0, 0, 3})
	ip[10], ip[11] = 0, 0
	setIPv4Checksum(ip)
	return f
}

type conjRun struct {
	got       map[string]int // frames of 3 that reached h3, per "hN:port"
	flows     []string       // dump-flows, timings cut
	megaflows []string
}

func (b *conjBed) steps(t *testing.T, ofctl func(args ...string) (string, error)) conjRun {
	t.Helper()
	for _, f := range conjFlows {
		if out, err := ofctl("add-flow", f); err != nil {
			t.Fatalf("add-flow %s: %v\n%s", f, err, out)
		}
	}
	r := conjRun{got: map[string]int{}}
	rx := testbed.OpenRaw(t, b.hosts[2], "eth0")
	defer rx.Close()
	for _, c := range []struct {
		from  int
		dport uint16
	}{{0, 9001}, {0, 9002}, {0, 9003}, {1, 9002}, {3, 9001}, {3, 9003}} {
		tx := testbed.OpenRaw(t, b.hosts[c.from], "eth0")
		for i := 0; i < 3; i++ {
			if err := tx.Send(b.conjFrame(c.from, c.dport)); err != nil {
				t.Fatal(err)
			}
		}
		tx.Close()
		n := 0
		for {
			if _, err := rx.Recv(1500*time.Millisecond, func(f []byte) bool {
				return len(f) >= 42 && f[23] == 17 && f[29] == byte(c.from+1) && binary.BigEndian.Uint16(f[36:]) == c.dport
			}); err != nil {
				break
			}
			n++
		}
		r.got[fmt.Sprintf("h%d:%d", c.from+1, c.dport)] = n
	}
	out, err := ofctl("dump-flows")
	if err != nil {
		t.Fatalf("dump-flows: %v\n%s", err, out)
	}
	r.flows = cutFlowLines(out)
	dp, err := exec.Command("ovs-dpctl", "dump-flows", "--names", "system@ovs-system").CombinedOutput()
	if err != nil {
		t.Fatalf("ovs-dpctl dump-flows: %v\n%s", err, dp)
	}
	for _, l := range strings.Split(string(dp), "\n") {
		if strings.Contains(l, "0x0800") {
			r.megaflows = append(r.megaflows, dpStats.ReplaceAllString(l, " actions:"))
		}
	}
	sort.Strings(r.megaflows)
	return r
}

// TestIntegrationConjunction: a conjunctive ACL lets exactly the allowed
// traffic reach h3, as ovs-vswitchd 3.1 does with the same flows in the
// same boot, and ovs-ofctl dump-flows prints the same flows for both.
func TestIntegrationConjunction(t *testing.T) {
	b := newConjBed(t)

	o := startOVS(t)
	b.configure(func(args ...string) string { return o.must(t, "ovs-vsctl", args...) })
	ovsMgmt := filepath.Join(o.dir, b.name+".mgmt")
	ovs := b.steps(t, func(args ...string) (string, error) { return ofctlAt(ovsMgmt, args...) })
	o.exitCleanup(t, b.name)

	g := startGovSwitch(t, b.rundir)
	b.configure(func(args ...string) string { t.Helper(); return g.vsctl(t, args...) })
	govMgmt := g.mgmt(t, b.name)
	gov := b.steps(t, func(args ...string) (string, error) { return ofctlAt(govMgmt, args...) })

	t.Logf("ovs-vswitchd: %v\nflows:\n%s\nmegaflows:\n%s", ovs.got, strings.Join(ovs.flows, "\n"), strings.Join(ovs.megaflows, "\n"))
	t.Logf("govswitchd: %v\nflows:\n%s\nmegaflows:\n%s", gov.got, strings.Join(gov.flows, "\n"), strings.Join(gov.megaflows, "\n"))
	want := map[string]int{"h1:9001": 3, "h1:9002": 3, "h1:9003": 0, "h2:9002": 3, "h4:9001": 0, "h4:9003": 0}
	for k, w := range want {
		if ovs.got[k] != w || gov.got[k] != w {
			t.Errorf("%s: ovs-vswitchd delivered %d, govswitchd %d of 3, want %d", k, ovs.got[k], gov.got[k], w)
		}
	}
	// The same megaflows: the conjunction's clauses unwildcard what
	// ovs-vswitchd's do (the source prefix a trie narrowed included).
	if strings.Join(ovs.megaflows, "\n") != strings.Join(gov.megaflows, "\n") {
		t.Errorf("megaflows differ:\novs-vswitchd:\n%s\ngovswitchd:\n%s", strings.Join(ovs.megaflows, "\n"), strings.Join(gov.megaflows, "\n"))
	}
	if strings.Join(ovs.flows, "\n") != strings.Join(gov.flows, "\n") {
		t.Errorf("dump-flows differs:\novs-vswitchd:\n%s\ngovswitchd:\n%s", strings.Join(ovs.flows, "\n"), strings.Join(gov.flows, "\n"))
	}
}
