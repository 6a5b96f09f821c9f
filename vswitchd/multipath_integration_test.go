package vswitchd

import (
	"encoding/binary"
	"fmt"
	"net"
	"os/exec"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/govswitch/govswitch/internal/testbed"
)

// spreadBed is one sender and three receivers on one bridge: h1 on port
// 1, r2..r4 on ports 2..4.
type spreadBed struct {
	name  string
	hosts [4]*testbed.Netns
	ports [4]string
	macs  [4]net.HardwareAddr
}

func newSpreadBed(t *testing.T) *spreadBed {
	t.Helper()
	testbed.Require(t)
	n := bedSeq.Add(1)
	b := &spreadBed{name: fmt.Sprintf("gm%d", n)}
	for i := range b.hosts {
		b.hosts[i] = testbed.NewNetns(t)
		b.ports[i] = fmt.Sprintf("gm%d%c", n, 'a'+i)
		b.macs[i] = testbed.Veth(t, b.ports[i], b.hosts[i], "eth0", fmt.Sprintf("10.0.0.%d/24", i+1))
	}
	return b
}

// spreadPhase is one step of the spread test: its flows, whether port 3
// has lost its link (r3's end of the veth down), the first UDP source
// port of its frames, and its groups (ovs-ofctl -O OpenFlow15 add-group).
type spreadPhase struct {
	name   string
	flows  []string
	p3Off  bool
	sport  uint16
	groups []string
}

// spreadFrames is how many UDP flows each phase sends.
const spreadFrames = 24

var spreadPhases = []spreadPhase{
	{"multipath", []string{
		"table=0,priority=100,in_port=1,udp,actions=multipath(symmetric_l3l4+udp,0,hrw,3,0,NXM_NX_REG0[0..1]),resubmit(,1)",
		"table=1,priority=100,reg0=0,actions=output:2",
		"table=1,priority=100,reg0=1,actions=output:3",
		"table=1,priority=100,reg0=2,actions=output:4",
	}, false, 1000, nil},
	{"multipath iter_hash", []string{
		"table=0,priority=100,in_port=1,udp,actions=multipath(symmetric_l4,1,modulo_n,2,0,NXM_NX_REG2[0]),multipath(symmetric_l3l4+udp,7,iter_hash,3,4,NXM_NX_REG1[]),resubmit(,1)",
		"table=1,priority=100,reg1=0,actions=output:2",
		"table=1,priority=100,reg1=1,actions=output:3",
		"table=1,priority=100,reg1=2,actions=output:4",
	}, false, 2000, nil},
	{"bundle hrw", []string{
		"table=0,priority=100,in_port=1,udp,actions=bundle(symmetric_l3l4+udp,5,hrw,ofport,members:2,3,4)",
	}, false, 3000, nil},
	{"bundle hrw, port 3 without link", []string{
		"table=0,priority=100,in_port=1,udp,actions=bundle(symmetric_l3l4+udp,5,hrw,ofport,members:2,3,4)",
	}, true, 3000, nil},
	{"bundle_load active_backup, port 3 without link", []string{
		"table=0,priority=100,in_port=1,udp,actions=bundle_load(eth_src,0,active_backup,ofport,NXM_NX_REG0[],members:3,4,2),resubmit(,1)",
		"table=1,priority=100,reg0=2,actions=output:2",
		"table=1,priority=100,reg0=3,actions=output:3",
		"table=1,priority=100,reg0=4,actions=output:4",
	}, true, 4000, nil},
}

// port3Up reports whether ovs-ofctl show's reply shows port 3 with its
// link.
func (b *spreadBed) port3Up(show string) bool {
	i := strings.Index(show, "3("+b.ports[2]+")")
	if i < 0 {
		return false
	}
	return !strings.Contains(strings.SplitN(show[i:], "speed", 2)[0], "LINK_DOWN")
}

// waitPort3 waits until show's output says port 3's link is up or down.
func (b *spreadBed) waitPort3(t *testing.T, up bool, show func() string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		out := show()
		if b.port3Up(out) == up {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("port 3 link up %v for 10 s, want %v:\n%s", !up, up, out)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// spreadRun is what one switch did: per phase, the receiver (2..4) of
// each source port, the flows as ovs-ofctl dump-flows printed them, and
// the datapath flows' keys and masks.
type spreadRun struct {
	arrivals [][]int
	dumps    []string
	dpKeys   [][]string
	dpDumps  []string
}

// run sends each phase's frames from h1 and records where they arrived.
// ofctl adds a flow or dumps them; linkUp waits until the switch sees
// port 3's link as up or down.
func (b *spreadBed) run(t *testing.T, phases []spreadPhase, ofctl func(args ...string) string, linkUp func(up bool)) spreadRun {
	t.Helper()
	var r spreadRun
	tx := testbed.OpenRaw(t, b.hosts[0], "eth0")
	var rxs [3]*testbed.RawConn
	for i := range rxs {
		rxs[i] = testbed.OpenRaw(t, b.hosts[i+1], "eth0")
	}
	for _, ph := range phases {
		ofctl("del-flows")
		if ph.groups != nil {
			ofctl("del-groups", "-O", "OpenFlow15")
		}
		for _, g := range ph.groups {
			ofctl("add-group", "-O", "OpenFlow15", g)
		}
		for _, f := range ph.flows {
			ofctl("add-flow", f)
		}
		if _, err := b.hosts[2].Exec("ip", "link", "set", "eth0", map[bool]string{true: "down", false: "up"}[ph.p3Off]); err != nil {
			t.Fatal(err)
		}
		linkUp(!ph.p3Off)
		got := make([]int, spreadFrames)
		var mu sync.Mutex
		var wg sync.WaitGroup
		for i, rx := range rxs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					f, err := rx.Recv(2*time.Second, func(f []byte) bool {
						return len(f) >= 42 && f[23] == 17 && binary.BigEndian.Uint16(f[36:]) == 9999
					})
					if err != nil {
						return
					}
					if n := int(binary.BigEndian.Uint16(f[34:])) - int(ph.sport); n >= 0 && n < spreadFrames {
						mu.Lock()
						if got[n] != 0 && got[n] != i+2 {
							got[n] = -1 // arrived at two receivers
						} else {
							got[n] = i + 2
						}
						mu.Unlock()
					}
				}
			}()
		}
		for i := range spreadFrames {
			// Each flow twice: the second frame meets the datapath
			// flow the first one's upcall installed.
			for range 2 {
				if err := tx.Send(udpFrame(b.macs[0], b.macs[1], ph.sport+uint16(i), 9999)); err != nil {
					t.Fatal(err)
				}
				time.Sleep(15 * time.Millisecond)
			}
		}
		wg.Wait()
		r.arrivals = append(r.arrivals, got)
		r.dumps = append(r.dumps, flowActions(ofctl("dump-flows")))
		dp, _ := exec.Command("ovs-dpctl", "dump-flows", "system@ovs-system").CombinedOutput()
		r.dpKeys = append(r.dpKeys, dpMatches(string(dp), ph.sport))
		r.dpDumps = append(r.dpDumps, string(dp))
		t.Logf("%s: arrivals %v\novs-dpctl dump-flows:\n%s", ph.name, got, dp)
	}
	b.hosts[2].Exec("ip", "link", "set", "eth0", "up")
	return r
}

// flowActions is a dump-flows reply reduced to each flow's match and
// actions, sorted.
func flowActions(dump string) string {
	stats := regexp.MustCompile(`(cookie|duration|n_packets|n_bytes|idle_age|hard_age)=[^,]*, ?`)
	var lines []string
	for _, l := range strings.Split(dump, "\n") {
		if strings.Contains(l, "actions=") {
			lines = append(lines, strings.TrimSpace(stats.ReplaceAllString(l, "")))
		}
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}

// dpMatches is the sorted, deduplicated match part of the datapath
// flows ovs-dpctl dumped for a phase's UDP flows (source ports from
// sport, or any when the mask leaves them out) and second stages after a
// dp_hash, in_port, recirc_id and the dp_hash value aside (the switches
// number datapath ports and recirculations apart).
func dpMatches(dp string, sport uint16) []string {
	seen := map[string]bool{}
	src := regexp.MustCompile(`udp\(src=(\d+)`)
	inPort := regexp.MustCompile(`in_port\(\d+\)`)
	recirc := regexp.MustCompile(`recirc_id\(0x[0-9a-f]+\)`) // the switches number recirculations apart
	// A second stage's dp_hash values are the earlier phases' too, while
	// their flows idle out; its mask is what counts (where each flow
	// went, the arrivals).
	dpHash := regexp.MustCompile(`dp_hash\(0x[0-9a-f]+/|dp_hash\(0/`)
	for _, l := range strings.Split(dp, "\n") {
		i := strings.Index(l, ", packets:")
		if i < 0 || !strings.Contains(l, "proto=17") && !strings.Contains(l, "dp_hash(") {
			continue
		}
		// A flow whose mask leaves the ports out (active_backup
		// hashes nothing) serves every phase's frames.
		if m := src.FindStringSubmatch(l); m != nil {
			if p, _ := strconv.Atoi(m[1]); p < int(sport) || p >= int(sport)+spreadFrames {
				continue
			}
		}
		k := recirc.ReplaceAllString(inPort.ReplaceAllString(l[:i], "in_port(*)"), "recirc_id(R)")
		seen[dpHash.ReplaceAllString(k, "dp_hash(H/")] = true
	}
	var keys []string
	for k := range seen {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// TestIntegrationMultipathBundle: multipath, bundle and bundle_load,
// added with the real ovs-ofctl, spread real UDP flows from h1 over three
// receivers exactly as ovs-vswitchd 3.1 spreads them, in the same bed:
// each of 24 flows (two frames each) reaches the same receiver under
// both switches, in every phase (two multipath configurations, bundle
// hrw with all members up and with port 3 without link, bundle_load
// active_backup with port 3 without link); ovs-ofctl dump-flows prints
// the actions back identically, and the datapath flows have the same
// keys and masks (the hashed fields exact).
func TestIntegrationMultipathBundle(t *testing.T) {
	b := newSpreadBed(t)

	ovs, gov := b.runBoth(t, spreadPhases)

	for i, ph := range spreadPhases {
		if fmt.Sprint(gov.arrivals[i]) != fmt.Sprint(ovs.arrivals[i]) {
			t.Errorf("%s: receivers per flow\n govswitchd   %v\n ovs-vswitchd %v", ph.name, gov.arrivals[i], ovs.arrivals[i])
		}
		hosts := map[int]bool{}
		for _, h := range gov.arrivals[i] {
			if h <= 0 {
				t.Errorf("%s: a flow was lost or duplicated: %v", ph.name, gov.arrivals[i])
				break
			}
			hosts[h] = true
		}
		if want := map[bool]int{true: 2, false: 3}[ph.p3Off]; !strings.Contains(ph.name, "active_backup") && len(hosts) != want {
			t.Errorf("%s: flows reached receivers %v, want %d of them", ph.name, hosts, want)
		}
		if gov.dumps[i] != ovs.dumps[i] {
			t.Errorf("%s: dump-flows\n govswitchd:\n%s\n ovs-vswitchd:\n%s", ph.name, gov.dumps[i], ovs.dumps[i])
		}
		for _, f := range ph.flows {
			act := f[strings.Index(f, "actions=")+len("actions="):]
			if !strings.Contains(gov.dumps[i], act) {
				t.Errorf("%s: dump-flows does not print %q back:\n%s", ph.name, act, gov.dumps[i])
			}
		}
		if len(gov.dpKeys[i]) == 0 {
			t.Errorf("%s: no datapath flow for the phase's frames", ph.name)
		}
		if fmt.Sprint(gov.dpKeys[i]) != fmt.Sprint(ovs.dpKeys[i]) {
			t.Errorf("%s: datapath flow keys\n govswitchd:\n %s\n ovs-vswitchd:\n %s", ph.name,
				strings.Join(gov.dpKeys[i], "\n "), strings.Join(ovs.dpKeys[i], "\n "))
		}
	}
}

// runBoth runs phases on ovs-vswitchd 3.1 (its bridge made with
// ovs-vsctl, extra appended to the add-br command), then, after its exit
// --cleanup, on govswitchd (flag-configured) in the same bed.
func (b *spreadBed) runBoth(t *testing.T, phases []spreadPhase, extra ...string) (ovs, gov spreadRun) {
	t.Helper()
	o := startOVS(t)
	args := append([]string{"add-br", b.name, "--", "set-fail-mode", b.name, "secure"}, extra...)
	for i, p := range b.ports {
		args = append(args, "--", "add-port", b.name, p, "--", "set", "Interface", p, "ofport_request="+strconv.Itoa(i+1))
	}
	o.must(t, "ovs-vsctl", args...)
	ovs = b.run(t, phases, func(a ...string) string {
		return o.must(t, "ovs-ofctl", append([]string{a[0], b.name}, a[1:]...)...)
	}, func(up bool) {
		b.waitPort3(t, up, func() string { return o.must(t, "ovs-ofctl", "show", b.name) })
		time.Sleep(200 * time.Millisecond)
	})
	if rr := appctlAt(t, o.ctl, "exit", "--cleanup"); rr.code != 0 {
		t.Fatalf("ovs-vswitchd exit --cleanup: %d %s", rr.code, rr.err)
	}
	for deadline := time.Now().Add(5 * time.Second); linkExists("ovs-system"); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("ovs-vswitchd's exit --cleanup left ovs-system for 5 s")
		}
	}

	rundir := t.TempDir()
	cargs := []string{"--datapath", "system", "--rundir", rundir, "--pidfile", "-", "--handlers", "1",
		"--bridge", b.name, "--fail-mode", "secure"}
	for _, p := range b.ports {
		cargs = append(cargs, "--port", p)
	}
	cfg, _, _, err := ParseArgs(cargs)
	if err != nil {
		t.Fatal(err)
	}
	d, err := New(cfg, nil, testLog{t})
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(d.Stop)
	mgmt := "unix:" + rundir + "/" + b.name + ".mgmt"
	ofctl := func(a ...string) string {
		out, err := exec.Command("ovs-ofctl", append([]string{a[0], mgmt}, a[1:]...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("ovs-ofctl %v: %v\n%s", a, err, out)
		}
		return string(out)
	}
	gov = b.run(t, phases, ofctl, func(up bool) {
		b.waitPort3(t, up, func() string { return ofctl("show") })
		time.Sleep(200 * time.Millisecond)
	})
	return ovs, gov
}
