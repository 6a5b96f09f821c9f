package vswitchd

import (
	"bufio"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/govswitch/govswitch/internal/testbed"
	"github.com/govswitch/govswitch/ofproto/sflow"
	"github.com/govswitch/govswitch/ovsdb/ovsdbtest"
)

// sflowBed is two hosts on one bridge, h1 (10.0.0.1, port <name>a,
// OpenFlow 1) and h2 (10.0.0.2, port <name>b, OpenFlow 2), whose sFlow
// goes to two collectors on the bed's loopback: pmacct's sfacctd, and a
// listener decoding with package sflow. The bridge's own interface has
// 10.99.0.1, and the sFlow row names it as the agent.
type sflowBed struct {
	name     string
	h1, h2   *testbed.Netns
	ports    [2]string
	ifindex  [2]uint32
	rundir   string
	sampling int
}

const (
	sflowPings    = 200
	sflowSampling = 4
)

func newSFlowBed(t *testing.T) *sflowBed {
	t.Helper()
	testbed.Require(t)
	if _, err := exec.LookPath("sfacctd"); err != nil {
		t.Fatalf("sfacctd not installed (Debian package pmacct; scripts/install-deps --test): %v", err)
	}
	n := bedSeq.Add(1)
	b := &sflowBed{name: fmt.Sprintf("gv%d", n), rundir: t.TempDir(), sampling: sflowSampling}
	b.h1, b.h2 = testbed.NewNetns(t), testbed.NewNetns(t)
	for i, h := range []*testbed.Netns{b.h1, b.h2} {
		b.ports[i] = fmt.Sprintf("gv%d%c", n, 'a'+i)
		testbed.Veth(t, b.ports[i], h, "eth0", fmt.Sprintf("10.0.0.%d/24", i+1))
		ifc, err := net.InterfaceByName(b.ports[i])
		if err != nil {
			t.Fatal(err)
		}
		b.ifindex[i] = uint32(ifc.Index)
	}
	return b
}

// sflowCollector is one run's two collectors.
type sflowCollector struct {
	conn    *net.UDPConn
	sfacctd *exec.Cmd
	dir     string

	mu       sync.Mutex
	grams    []*sflow.Datagram
	bad      []error
	counters map[uint32]sflow.IfCounters // the latest by ifIndex
}

func freeUDPPort(t *testing.T) int {
	t.Helper()
	c, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	return c.LocalAddr().(*net.UDPAddr).Port
}

// startSFlowCollectors starts sfacctd (printing its aggregates as CSV
// every second) and the decoding listener; it returns them and their
// "IP:PORT" targets.
func startSFlowCollectors(t *testing.T) (*sflowCollector, []string) {
	t.Helper()
	c := &sflowCollector{dir: t.TempDir(), counters: map[uint32]sflow.IfCounters{}}
	var err error
	c.conn, err = net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		buf := make([]byte, 65536)
		for {
			n, err := c.conn.Read(buf)
			if err != nil {
				return
			}
			d, err := sflow.Decode(append([]byte(nil), buf[:n]...))
			c.mu.Lock()
			if err != nil {
				c.bad = append(c.bad, err)
			} else {
				c.grams = append(c.grams, d)
				for _, cs := range d.Counters {
					if cs.HasGeneric {
						c.counters[cs.Generic.Index] = cs.Generic
					}
				}
			}
			c.mu.Unlock()
		}
	}()
	port := freeUDPPort(t)
	conf := filepath.Join(c.dir, "sfacctd.conf")
	os.WriteFile(conf, []byte(fmt.Sprintf(`daemonize: false
sfacctd_ip: 127.0.0.1
sfacctd_port: %d
plugins: print
aggregate: src_host, dst_host, in_iface, out_iface, proto, sampling_rate
print_output: csv
print_output_file: %s/out.csv
print_output_file_append: true
print_refresh_time: 1
pidfile: %s/pid
logfile: %s/log
`, port, c.dir, c.dir, c.dir)), 0o644)
	c.sfacctd = exec.Command("sfacctd", "-f", conf)
	if err := c.sfacctd.Start(); err != nil {
		t.Fatalf("sfacctd: %v", err)
	}
	t.Cleanup(c.stop)
	for deadline := time.Now().Add(15 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		if log, _ := os.ReadFile(filepath.Join(c.dir, "log")); strings.Contains(string(log), "Purging cache") {
			break // the print plugin is running
		}
		if time.Now().After(deadline) {
			log, _ := os.ReadFile(filepath.Join(c.dir, "log"))
			t.Fatalf("sfacctd did not start within 15 s:\n%s", log)
		}
	}
	return c, []string{fmt.Sprintf("127.0.0.1:%d", port), c.conn.LocalAddr().String()}
}

func (c *sflowCollector) stop() {
	c.conn.Close()
	if c.sfacctd.Process != nil {
		c.sfacctd.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { c.sfacctd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			c.sfacctd.Process.Kill()
			<-done
		}
	}
}

// icmpSamples returns the flow samples of ICMP between h1 and h2 the
// listener has decoded.
func (c *sflowCollector) icmpSamples() (agent []netip.Addr, fs []sflow.FlowSample, subIDs []uint32) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, d := range c.grams {
		agent = append(agent, d.Agent)
		subIDs = append(subIDs, d.SubAgentID)
		for _, f := range d.Flows {
			p := f.Packet
			if len(p) >= 34 && p[12] == 0x08 && p[13] == 0 && p[23] == 1 && p[26] == 10 && p[27] == 0 && p[28] == 0 && p[30] == 10 {
				fs = append(fs, f)
			}
		}
	}
	return agent, fs, subIDs
}

// sfacctdICMP sums the packets sfacctd counted for ICMP between h1 and h2.
func (c *sflowCollector) sfacctdICMP() (packets, bytes int) {
	f, err := os.Open(filepath.Join(c.dir, "out.csv"))
	if err != nil {
		return 0, 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// IN_IFACE,OUT_IFACE,SRC_IP,DST_IP,PROTOCOL,SAMPLING_RATE,PACKETS,BYTES
		r := strings.Split(sc.Text(), ",")
		if len(r) != 8 || r[4] != "icmp" || !strings.HasPrefix(r[2], "10.0.0.") || !strings.HasPrefix(r[3], "10.0.0.") {
			continue
		}
		p, _ := strconv.Atoi(r[6])
		b, _ := strconv.Atoi(r[7])
		packets += p
		bytes += b
	}
	return packets, bytes
}

// sflowRun is what one switch's sFlow told the collectors.
type sflowRun struct {
	flows     []string // IPv4 datapath flows, the sample taken off, and the sample actions' probabilities
	agents    []netip.Addr
	subIDs    []uint32
	samples   []sflow.FlowSample
	sfacctd   int
	counters  map[uint32]sflow.IfCounters
	malformed []error
}

// run pings h1->h2 and collects what the collectors received: it waits
// for the port counters to show the pings and for the samples to stop
// coming, and for sfacctd to have counted them.
func (b *sflowBed) run(t *testing.T, c *sflowCollector) sflowRun {
	t.Helper()
	out, _ := b.h1.Exec("ping", "-c", strconv.Itoa(sflowPings), "-i", "0.01", "-W", "2", "-q", "10.0.0.2")
	if loss := parseLoss(t, out); loss > sflowPings/20 {
		t.Errorf("lost %d of %d pings:\n%s", loss, sflowPings, out)
	}
	var r sflowRun
	r.flows = sampledFlows(t)
	last, stable := -1, 0
	for deadline := time.Now().Add(30 * time.Second); stable < 3; time.Sleep(time.Second) {
		_, fs, _ := c.icmpSamples()
		c.mu.Lock()
		in := c.counters[b.ifindex[0]].InUcast
		c.mu.Unlock()
		if len(fs) == last && in >= sflowPings {
			stable++
		} else {
			stable = 0
		}
		last = len(fs)
		if time.Now().After(deadline) {
			t.Errorf("collection did not settle in 30 s: %d samples, %s's counters %d packets in", len(fs), b.ports[0], in)
			break
		}
	}
	r.agents, r.samples, r.subIDs = c.icmpSamples()
	for deadline := time.Now().Add(15 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		if r.sfacctd, _ = c.sfacctdICMP(); r.sfacctd >= len(r.samples) || time.Now().After(deadline) {
			break
		}
	}
	c.mu.Lock()
	r.counters = map[uint32]sflow.IfCounters{}
	for k, v := range c.counters {
		r.counters[k] = v
	}
	r.malformed = append(r.malformed, c.bad...)
	c.mu.Unlock()
	return r
}

// check holds a run to what the configuration and the traffic say.
func (b *sflowBed) check(t *testing.T, who string, r sflowRun) {
	t.Helper()
	agent := netip.MustParseAddr("10.99.0.1")
	for _, a := range r.agents {
		if a != agent {
			t.Errorf("%s: datagram agent %v, want %v (the agent device's address)", who, a, agent)
			break
		}
	}
	for _, id := range r.subIDs {
		if id != 0 {
			t.Errorf("%s: sub-agent id %d, want 0 (the first bridge with sFlow)", who, id)
			break
		}
	}
	if len(r.malformed) > 0 {
		t.Errorf("%s: %d datagrams did not decode: %v", who, len(r.malformed), r.malformed[0])
	}
	// 2×pings packets cross the bridge, each sampled with probability
	// 1/sampling: allow five standard deviations.
	n := 2 * sflowPings
	mean := float64(n) / float64(b.sampling)
	sd := sqrt(float64(n) * (1 / float64(b.sampling)) * (1 - 1/float64(b.sampling)))
	if got := float64(len(r.samples)); got < mean-5*sd || got > mean+5*sd {
		t.Errorf("%s: %d ICMP packets sampled of %d at 1 in %d, want %.0f ± %.0f", who, len(r.samples), n, b.sampling, mean, 5*sd)
	}
	if r.sfacctd != len(r.samples) {
		t.Errorf("%s: sfacctd counted %d sampled ICMP packets, the decoder %d", who, r.sfacctd, len(r.samples))
	}
	learned := 0
	for i, f := range r.samples {
		fromH1 := f.Packet[29] == 1
		in, out := b.ifindex[0], b.ifindex[1]
		if !fromH1 {
			in, out = out, in
		}
		if f.Rate != uint32(b.sampling) || f.SourceID != sflow.SourceID(2, 1000) || !f.HasHeader || !f.HasSwitch ||
			f.Protocol != sflow.HeaderEthernet || f.Stripped != 4 || f.Frame != 98+4 || len(f.Packet) != 98 || f.Input != in {
			t.Errorf("%s: flow sample %d: %+v; want rate %d, source 2:1000, frame 102, input %d", who, i, f, b.sampling, in)
			break
		}
		if f.Output == out {
			learned++
		}
	}
	if learned < len(r.samples)-4 {
		t.Errorf("%s: %d of %d samples name the other port (ifIndex) as their output", who, learned, len(r.samples))
	}
	for i, p := range b.ports {
		c, ok := r.counters[b.ifindex[i]]
		if !ok {
			t.Errorf("%s: no counter sample of %s (ifIndex %d)", who, p, b.ifindex[i])
			continue
		}
		if c.InUcast+c.InMcast+c.InBcast < sflowPings || c.OutUcast+c.OutMcast+c.OutBcast < sflowPings || c.InOctets < 98*sflowPings {
			t.Errorf("%s: %s's counters %+v, want at least %d packets each way", who, p, c, sflowPings)
		}
	}
}

// sampledFlows returns the datapath's IPv4 flows (the pings') as
// ovs-dpctl shows them, statistics cut, each with its leading sFlow
// action split off: "MATCH actions:REST | PROBABILITY".
func sampledFlows(t *testing.T) []string {
	t.Helper()
	out, err := exec.Command("ovs-dpctl", "dump-flows", "system@ovs-system").CombinedOutput()
	if err != nil {
		t.Fatalf("ovs-dpctl dump-flows: %v\n%s", err, out)
	}
	var flows []string
	for _, l := range strings.Split(string(out), "\n") {
		if !strings.Contains(l, "eth_type(0x0800)") {
			continue // NORMAL's IPv4 megaflows (L2 fields only)
		}
		match, acts, ok := strings.Cut(l, " actions:")
		if i := strings.Index(match, ", packets:"); i >= 0 {
			match = match[:i]
		}
		if !ok {
			continue
		}
		prob := "100%"
		switch {
		case strings.HasPrefix(acts, "sample(sample="):
			prob = acts[len("sample(sample="):strings.Index(acts, ",")]
			acts = skipParens(acts)
		case strings.HasPrefix(acts, "userspace("):
			acts = skipParens(acts)
		default:
			prob = "none"
		}
		flows = append(flows, match+" actions:"+acts+" | "+prob)
	}
	sort.Strings(flows)
	return flows
}

// skipParens drops the first action of acts (up to its matching
// parenthesis) and the comma after it.
func skipParens(acts string) string {
	depth := 0
	for i, c := range acts {
		switch c {
		case '(':
			depth++
		case ')':
			depth--
			if depth == 0 {
				return strings.TrimPrefix(acts[i+1:], ",")
			}
		}
	}
	return acts
}

func sqrt(x float64) float64 {
	z := x / 2
	for i := 0; i < 30 && z > 0; i++ {
		z -= (z*z - x) / (2 * z)
	}
	return z
}

// configure builds the bridge and its sFlow row with vsctl.
func (b *sflowBed) configure(t *testing.T, vsctl func(args ...string) string, targets []string) {
	t.Helper()
	vsctl("add-br", b.name)
	for i, p := range b.ports {
		vsctl("add-port", b.name, p, "--", "set", "Interface", p, "ofport_request="+strconv.Itoa(i+1))
	}
	for _, args := range [][]string{{"addr", "add", "10.99.0.1/24", "dev", b.name}, {"link", "set", b.name, "up"}} {
		if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
			t.Fatalf("ip %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	quoted := make([]string, len(targets))
	for i, tg := range targets {
		quoted[i] = strconv.Quote(tg)
	}
	// The hosts forget the last run's neighbours, so that this switch
	// learns both addresses from their ARP before the pings.
	for _, h := range []*testbed.Netns{b.h1, b.h2} {
		h.Exec("ip", "neigh", "flush", "all")
	}
	vsctl("--", "--id=@s", "create", "sFlow", "agent="+b.name, "targets=["+strings.Join(quoted, ",")+"]",
		"sampling="+strconv.Itoa(b.sampling), "polling=1", "header=128", "--", "set", "Bridge", b.name, "sflow=@s")
}

// TestIntegrationSFlow: pings across a bridge with sFlow (sampling 1 in 4,
// polling every second, the bridge's interface as agent) reach pmacct's
// sfacctd and a decoder as sFlow v5 flow samples — as many as the rate
// says within five standard deviations, with the ports' ifIndexes, the
// rate and the packet's header — and counter samples of both ports
// showing the pings. ovs-vswitchd 3.1 first, in the same boot, is held to
// the same checks.
func TestIntegrationSFlow(t *testing.T) {
	b := newSFlowBed(t)

	// ovs-vswitchd 3.1.
	o := startOVS(t)
	col, targets := startSFlowCollectors(t)
	b.configure(t, func(args ...string) string { return o.must(t, "ovs-vsctl", args...) }, targets)
	ovs := b.run(t, col)
	col.stop()
	t.Logf("ovs-vswitchd: %d ICMP samples, sfacctd counted %d", len(ovs.samples), ovs.sfacctd)
	if r := appctlAt(t, o.ctl, "exit", "--cleanup"); r.code != 0 {
		t.Fatalf("ovs-vswitchd exit --cleanup: %d %s", r.code, r.err)
	}
	for deadline := time.Now().Add(5 * time.Second); linkExists(b.name); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("ovs-vswitchd's exit --cleanup left %s for 5 s", b.name)
		}
	}

	// govswitchd from its own ovsdb-server.
	srv := ovsdbtest.Start(t)
	d, err := NewForOVSDB(Config{Datapath: "system", Rundir: b.rundir, Pidfile: "-", Handlers: 1,
		Unixctl: filepath.Join(b.rundir, "gov.ctl")}, nil, testLog{t})
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
	col, targets = startSFlowCollectors(t)
	b.configure(t, vsctl, targets)
	gov := b.run(t, col)
	col.stop()
	t.Logf("govswitchd: %d ICMP samples, sfacctd counted %d", len(gov.samples), gov.sfacctd)

	b.check(t, "ovs-vswitchd", ovs)
	b.check(t, "govswitchd", gov)
	// The same megaflows and forwarding actions behind the same sample
	// (probability UINT32_MAX/4 shown as 25.0%).
	t.Logf("IPv4 datapath flows:\novs-vswitchd %q\ngovswitchd   %q", ovs.flows, gov.flows)
	if len(gov.flows) == 0 || !slices.Equal(ovs.flows, gov.flows) {
		t.Errorf("sampled flows differ:\novs-vswitchd %q\ngovswitchd   %q", ovs.flows, gov.flows)
	}

	// Without sFlow the datapath flows carry no sample: the miss path is
	// as before.
	vsctl("clear", "Bridge", b.name, "sflow")
	out, _ := b.h1.Exec("ping", "-c", "3", "-i", "0.2", "-W", "2", "10.0.0.2")
	if parseLoss(t, out) != 0 {
		t.Errorf("pings after clearing sFlow:\n%s", out)
	}
	flows, err := exec.Command("ovs-dpctl", "dump-flows", "system@ovs-system").CombinedOutput()
	if err != nil {
		t.Fatalf("ovs-dpctl dump-flows: %v\n%s", err, flows)
	}
	if strings.Contains(string(flows), "userspace") || strings.Contains(string(flows), "sample") {
		t.Errorf("flows still sample after sflow was cleared:\n%s", flows)
	}
}
