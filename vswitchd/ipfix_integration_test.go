package vswitchd

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/govswitch/govswitch/internal/testbed"
	"github.com/govswitch/govswitch/ofproto/ipfix"
	"github.com/govswitch/govswitch/ovsdb/ovsdbtest"
)

const (
	ipfixPings    = 200
	ipfixSampling = 4
)

// ipfixCollector is nfdump's nfcapd and a listener decoding with package
// ipfix, on the bed's loopback.
type ipfixCollector struct {
	conn   *net.UDPConn
	nfcapd *exec.Cmd
	dir    string
	port   int

	mu   sync.Mutex
	col  ipfix.Collector
	recs []ipfix.Record
	bad  []error
}

func startIPFIXCollectors(t *testing.T) (*ipfixCollector, []string) {
	t.Helper()
	if _, err := exec.LookPath("nfcapd"); err != nil {
		t.Fatalf("nfcapd not installed (Debian package nfdump; scripts/install-deps --test): %v", err)
	}
	c := &ipfixCollector{dir: t.TempDir()}
	var err error
	if c.conn, err = net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)}); err != nil {
		t.Fatal(err)
	}
	go func() {
		buf := make([]byte, 65536)
		for {
			n, err := c.conn.Read(buf)
			if err != nil {
				return
			}
			c.mu.Lock()
			rs, err := c.col.Decode(append([]byte(nil), buf[:n]...))
			if err != nil {
				c.bad = append(c.bad, err)
			}
			c.recs = append(c.recs, rs...)
			c.mu.Unlock()
		}
	}()
	port := freeUDPPort(t)
	c.port = port
	c.nfcapd = exec.Command("nfcapd", "-w", c.dir, "-p", strconv.Itoa(port), "-b", "127.0.0.1", "-t", "3600")
	log, _ := os.Create(filepath.Join(c.dir, "nfcapd.log"))
	c.nfcapd.Stdout, c.nfcapd.Stderr = log, log
	if err := c.nfcapd.Start(); err != nil {
		t.Fatalf("nfcapd: %v", err)
	}
	t.Cleanup(func() { c.stop(t) })
	for deadline := time.Now().Add(15 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		if b, _ := os.ReadFile(filepath.Join(c.dir, "nfcapd.log")); strings.Contains(string(b), "Startup") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("nfcapd did not start within 15 s")
		}
	}
	return c, []string{fmt.Sprintf("127.0.0.1:%d", port), c.conn.LocalAddr().String()}
}

// waitNfcapdRead waits until nfcapd's socket has no datagram queued
// (/proc/net/udp's rx_queue) twice in a row, and returns the socket's
// drop count.
func (c *ipfixCollector) waitNfcapdRead(t *testing.T) (drops uint64) {
	t.Helper()
	local := fmt.Sprintf("0100007F:%04X", c.port)
	empty := 0
	for deadline := time.Now().Add(30 * time.Second); empty < 2; time.Sleep(200 * time.Millisecond) {
		b, err := os.ReadFile("/proc/net/udp")
		if err != nil {
			t.Fatal(err)
		}
		found := false
		for _, l := range strings.Split(string(b), "\n") {
			f := strings.Fields(l)
			// sl local_address rem_address st tx_queue:rx_queue ... drops
			if len(f) < 13 || f[1] != local {
				continue
			}
			found = true
			_, rx, _ := strings.Cut(f[4], ":")
			if n, _ := strconv.ParseUint(rx, 16, 64); n == 0 {
				empty++
			} else {
				empty = 0
			}
			drops, _ = strconv.ParseUint(f[12], 10, 64)
		}
		if !found {
			t.Fatalf("nfcapd's socket %s is not in /proc/net/udp", local)
		}
		if time.Now().After(deadline) {
			t.Errorf("nfcapd did not read its queued messages within 30 s")
			break
		}
	}
	return drops
}

// stop ends nfcapd, which writes its file when it ends (SIGTERM).
func (c *ipfixCollector) stop(t *testing.T) {
	c.conn.Close()
	if c.nfcapd.Process != nil && c.nfcapd.ProcessState == nil {
		c.nfcapd.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { c.nfcapd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(60 * time.Second):
			t.Errorf("nfcapd did not end within 60 s of SIGTERM; killed")
			c.nfcapd.Process.Kill()
			<-done
		}
	}
}

// icmpKey names the ICMP records between h1 and h2: "1>2 in" is the
// ingress records of h1's packets to h2.
func icmpDirection(r *ipfix.Record) (string, bool) {
	src, ok1 := r.Get(ipfix.SourceIPv4)
	dst, ok2 := r.Get(ipfix.DestinationIPv4)
	if !ok1 || !ok2 || r.Uint(ipfix.ProtocolIdentifier) != 1 || src[0] != 10 || src[2] != 0 || dst[2] != 0 {
		return "", false
	}
	dir := " in"
	if r.Uint(ipfix.FlowDirection) == ipfix.Egress {
		dir = " out"
	}
	return fmt.Sprintf("%d>%d%s", src[3], dst[3], dir), true
}

// icmp sums the decoded ICMP records' packet deltas by direction.
func (c *ipfixCollector) icmp() (pkts map[string]uint64, recs []ipfix.Record) {
	c.mu.Lock()
	defer c.mu.Unlock()
	pkts = map[string]uint64{}
	for i := range c.recs {
		if d, ok := icmpDirection(&c.recs[i]); ok {
			pkts[d] += c.recs[i].Uint(ipfix.PacketDelta)
			recs = append(recs, c.recs[i])
		}
	}
	return pkts, recs
}

// nfdumpICMP reads nfcapd's files with nfdump and sums the ICMP flows'
// packets and bytes.
func (c *ipfixCollector) nfdumpICMP(t *testing.T) (pkts, bytes uint64, rows []uint64, csv string) {
	t.Helper()
	// Its complaints (about nfcapd.log, not one of its files) go to
	// stderr, apart: mixed in, they cut a record's line.
	cmd := exec.Command("nfdump", "-R", c.dir, "-o", "csv")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("nfdump: %v\n%s%s", err, out, stderr.String())
	}
	var hdr []string
	for _, l := range strings.Split(string(out), "\n") {
		f := strings.Split(l, ",")
		if len(f) > 0 && f[0] == "ts" {
			hdr = f
			continue
		}
		col := func(name string) string {
			for i, h := range hdr {
				if h == name && i < len(f) {
					return strings.TrimSpace(f[i])
				}
			}
			return ""
		}
		if col("pr") != "ICMP" || !strings.HasPrefix(col("sa"), "10.0.0.") || !strings.HasPrefix(col("da"), "10.0.0.") {
			continue
		}
		n, _ := strconv.ParseUint(col("ipkt"), 10, 64)
		b, _ := strconv.ParseUint(col("ibyt"), 10, 64)
		pkts += n
		bytes += b
		rows = append(rows, n)
	}
	return pkts, bytes, rows, string(out)
}

// ipfixRun is what one switch's IPFIX told the collectors.
type ipfixRun struct {
	pkts          map[string]uint64
	recs          []ipfix.Record // the ICMP records between h1 and h2
	all           []ipfix.Record // every data record
	nfPkts, nfOct uint64
	nfRows        []uint64 // packets of each ICMP record nfdump read
	nfLog         string
	nfCSV         string
	templates     [][]byte
	dumps         []string // ovs-ofctl dump-ipfix-bridge, dump-ipfix-flow
	sampled       uint64
	flows         []string // IPv4 datapath flows, ovs-dpctl's, pid and counters cut
	bad           []error
}

var dpctlPid = regexp.MustCompile(`pid=\d+`)

// ipfixFlows returns the datapath's IPv4 flows as ovs-dpctl shows them,
// their statistics and the userspace actions' netlink pids cut.
func ipfixFlows(t *testing.T) []string {
	t.Helper()
	out, err := exec.Command("ovs-dpctl", "dump-flows", "system@ovs-system").CombinedOutput()
	if err != nil {
		t.Fatalf("ovs-dpctl dump-flows: %v\n%s", err, out)
	}
	var flows []string
	for _, l := range strings.Split(string(out), "\n") {
		if !strings.Contains(l, "eth_type(0x0800)") {
			continue
		}
		match, acts, ok := strings.Cut(l, " actions:")
		if i := strings.Index(match, ", packets:"); i >= 0 {
			match = match[:i]
		}
		if ok {
			flows = append(flows, match+" actions:"+dpctlPid.ReplaceAllString(acts, "pid=N"))
		}
	}
	slices.Sort(flows)
	return flows
}

// run pings h1->h2 and waits for the records to stop coming (the cache's
// active timeout is 2 s).
func (b *sflowBed) ipfixRun(t *testing.T, c *ipfixCollector) ipfixRun {
	t.Helper()
	out, _ := b.h1.Exec("ping", "-c", strconv.Itoa(ipfixPings), "-i", "0.01", "-W", "2", "-q", "10.0.0.2")
	if loss := parseLoss(t, out); loss > ipfixPings/20 {
		t.Errorf("lost %d of %d pings:\n%s", loss, ipfixPings, out)
	}
	r := ipfixRun{flows: ipfixFlows(t)}
	last, stable := -1, 0
	for deadline := time.Now().Add(30 * time.Second); stable < 3; time.Sleep(time.Second) {
		_, recs := c.icmp()
		if len(recs) == last && last > 0 {
			stable++
		} else {
			stable = 0
		}
		last = len(recs)
		if time.Now().After(deadline) {
			t.Errorf("IPFIX records did not settle in 30 s: %d", len(recs))
			break
		}
	}
	r.pkts, r.recs = c.icmp()
	// nfcapd got the same messages; it stores what it has read when it
	// ends, so let it read the last of them first (its socket's queue
	// empty), which in a loaded bed can take it a while.
	if drops := c.waitNfcapdRead(t); drops != 0 {
		t.Errorf("nfcapd's socket dropped %d messages", drops)
	}
	c.stop(t)
	r.nfPkts, r.nfOct, r.nfRows, r.nfCSV = c.nfdumpICMP(t)
	if b, _ := os.ReadFile(filepath.Join(c.dir, "nfcapd.log")); len(b) > 0 {
		r.nfLog = string(b)
	}
	c.mu.Lock()
	r.templates = append(r.templates, c.col.TemplateSets...)
	r.all = append(r.all, c.recs...)
	r.bad = append(r.bad, c.bad...)
	c.mu.Unlock()
	return r
}

func (b *sflowBed) ipfixCheck(t *testing.T, who string, r ipfixRun) {
	t.Helper()
	if len(r.bad) > 0 {
		t.Errorf("%s: %d messages did not decode: %v", who, len(r.bad), r.bad[0])
	}
	// Each direction's packets (the pings and the one before them) are
	// sampled on input and on output, 1 in 4, each sample counting 4:
	// allow five standard deviations.
	n := float64(ipfixPings + 1)
	p := 1 / float64(ipfixSampling)
	sd := float64(ipfixSampling) * sqrt(n*p*(1-p))
	for _, d := range []string{"1>2 in", "1>2 out", "2>1 in", "2>1 out"} {
		if got := float64(r.pkts[d]); got < n-5*sd || got > n+5*sd {
			t.Errorf("%s: ICMP %s: %v packets in records, want %v ± %.0f (1 in %d of %v)", who, d, got, n, 5*sd, ipfixSampling, n)
		}
	}
	for i := range r.recs {
		rec := &r.recs[i]
		d, _ := icmpDirection(rec)
		in, out := b.ports[0], b.ports[1]
		if strings.HasPrefix(d, "2>1") {
			in, out = out, in
		}
		dir := ipfix.Ingress
		if strings.HasSuffix(d, "out") {
			dir = ipfix.Egress
		}
		pd := rec.Uint(ipfix.PacketDelta)
		inName, _ := rec.Get(ipfix.InterfaceName)
		outName, _ := rec.GetN(ipfix.InterfaceName, 1)
		if rec.Header.Domain != 7 || rec.Uint(ipfix.ObservationPointID) != 8 ||
			rec.Template != ipfix.TemplateID(ipfix.L2Eth, ipfix.L3IPv4, ipfix.L4ICMP, ipfix.NotTunneled, dir) ||
			pd%ipfixSampling != 0 || rec.Uint(ipfix.OctetDelta) != 84*pd || rec.Uint(ipfix.Layer2OctetDelta) != 98*pd ||
			string(inName) != in || dir == ipfix.Egress && string(outName) != out {
			t.Errorf("%s: record %s %+v: want domain 7, point 8, packets a multiple of %d, 84 and 98 bytes each, interfaces %s>%s",
				who, d, rec, ipfixSampling, in, out)
			break
		}
	}
	nfCheck(t, who, r)
}

var nfcapdSummary = regexp.MustCompile(`Flows: (\d+), Packets: (\d+), Bytes: (\d+)`)

// nfCheck holds what nfdump's nfcapd stored to what the decoder read.
// nfcapd keeps packetTotalCount and octetTotalCount (the exporter's
// running totals) where packetDeltaCount and octetDeltaCount went, as
// they come later in ovs-vswitchd's templates: what it counts is their
// sum. Its summaries (flows, packets, bytes of each file it wrote) must
// add up to the decoder's over every flow record, and the ICMP records
// nfdump prints from its files must be the decoder's, one for one.
func nfCheck(t *testing.T, who string, r ipfixRun) {
	t.Helper()
	var flows, pkts, octets uint64
	for i := range r.all {
		if r.all[i].Template != ipfix.OptionsTemplateID {
			flows++
			pkts += r.all[i].Uint(ipfix.PacketTotal)
			octets += r.all[i].Uint(ipfix.OctetTotal)
		}
	}
	var nf [3]uint64
	ms := nfcapdSummary.FindAllStringSubmatch(r.nfLog, -1)
	for _, m := range ms {
		for i := range nf {
			n, _ := strconv.ParseUint(m[i+1], 10, 64)
			nf[i] += n
		}
	}
	if len(ms) == 0 || nf != [3]uint64{flows, pkts, octets} {
		t.Errorf("%s: nfcapd's summaries: %d flows, %d packets, %d bytes; the decoder's: %d, %d, %d\nnfcapd: %s",
			who, nf[0], nf[1], nf[2], flows, pkts, octets, r.nfLog)
	}
	var dec []uint64
	var decPkts, decOctets uint64
	for i := range r.recs {
		dec = append(dec, r.recs[i].Uint(ipfix.PacketTotal))
		decPkts += r.recs[i].Uint(ipfix.PacketTotal)
		decOctets += r.recs[i].Uint(ipfix.OctetTotal)
	}
	slices.Sort(dec)
	rows := slices.Clone(r.nfRows)
	slices.Sort(rows)
	if !slices.Equal(rows, dec) || r.nfOct != decOctets || r.nfPkts != decPkts {
		t.Errorf("%s: nfdump printed ICMP records of %v packets (%d bytes), the decoder read %v (%d bytes)\nnfdump:\n%s",
			who, rows, r.nfOct, dec, decOctets, r.nfCSV)
	}
}

func (b *sflowBed) ipfixConfigure(t *testing.T, vsctl func(args ...string) string, targets []string) {
	t.Helper()
	vsctl("add-br", b.name)
	for i, p := range b.ports {
		vsctl("add-port", b.name, p, "--", "set", "Interface", p, "ofport_request="+strconv.Itoa(i+1))
	}
	quoted := make([]string, len(targets))
	for i, tg := range targets {
		quoted[i] = strconv.Quote(tg)
	}
	vsctl("--", "--id=@i", "create", "IPFIX", "targets=["+strings.Join(quoted, ",")+"]",
		"sampling="+strconv.Itoa(ipfixSampling), "obs_domain_id=7", "obs_point_id=8", "cache_active_timeout=2",
		"cache_max_flows=64", "--", "set", "Bridge", b.name, "ipfix=@i")
	for _, h := range []*testbed.Netns{b.h1, b.h2} {
		h.Exec("ip", "neigh", "flush", "all")
	}
	b.h1.Exec("ping", "-c", "1", "-W", "2", "10.0.0.2")
}

// The flow sample phase: a collector set (id 5) and two flows whose
// sample actions (probability 21845 of 65535: 1 in 3) sample h1's pings
// on egress by h2's port (point 12) and h2's replies on ingress (point
// 13), in observation domain 11.
const fsProbability = 21845

var fsFlows = []string{
	"priority=10,icmp,in_port=1,actions=sample(probability=21845,collector_set_id=5,obs_domain_id=11,obs_point_id=12,sampling_port=2,egress),output:2",
	"priority=10,icmp,in_port=2,actions=sample(probability=21845,collector_set_id=5,obs_domain_id=11,obs_point_id=13,ingress),output:1",
}

// fsConfigure replaces the bridge's IPFIX by collector set 5 and adds the
// flows; it returns them as ovs-ofctl dump-flows prints them.
func (b *sflowBed) fsConfigure(t *testing.T, vsctl func(args ...string) string, ofctl func(args ...string) (string, error), targets []string) []string {
	t.Helper()
	quoted := make([]string, len(targets))
	for i, tg := range targets {
		quoted[i] = strconv.Quote(tg)
	}
	vsctl("clear", "Bridge", b.name, "ipfix")
	vsctl("--", "--id=@br", "get", "Bridge", b.name, "--", "--id=@i", "create", "IPFIX", "targets=["+strings.Join(quoted, ",")+"]",
		"--", "create", "Flow_Sample_Collector_Set", "id=5", "bridge=@br", "ipfix=@i")
	for _, f := range fsFlows {
		if out, err := ofctl("add-flow", f); err != nil {
			t.Fatalf("ovs-ofctl add-flow %s: %v\n%s", f, err, out)
		}
	}
	out, err := ofctl("dump-flows", "--no-stats")
	if err != nil {
		t.Fatalf("ovs-ofctl dump-flows: %v\n%s", err, out)
	}
	var flows []string
	for _, l := range strings.Split(out, "\n") {
		if strings.Contains(l, "sample(") {
			flows = append(flows, strings.TrimSpace(l))
		}
	}
	slices.Sort(flows)
	for _, h := range []*testbed.Netns{b.h1, b.h2} {
		h.Exec("ip", "neigh", "flush", "all")
	}
	b.h1.Exec("ping", "-c", "1", "-W", "2", "10.0.0.2")
	return flows
}

func (b *sflowBed) fsCheck(t *testing.T, who string, r ipfixRun) {
	t.Helper()
	if len(r.bad) > 0 {
		t.Errorf("%s: %d messages did not decode: %v", who, len(r.bad), r.bad[0])
	}
	n := float64(ipfixPings + 1)
	p := float64(fsProbability) / 65535
	delta := float64(65535 / fsProbability)
	mean, sd := n*p*delta, delta*sqrt(n*p*(1-p))
	for _, d := range []string{"1>2 out", "2>1 in"} {
		if got := float64(r.pkts[d]); got < mean-5*sd || got > mean+5*sd {
			t.Errorf("%s: ICMP %s: %v packets in flow sample records, want %.0f ± %.0f", who, d, got, mean, 5*sd)
		}
	}
	if r.pkts["1>2 in"] != 0 || r.pkts["2>1 out"] != 0 {
		t.Errorf("%s: records of directions no sample action asked for: %v", who, r.pkts)
	}
	for i := range r.recs {
		rec := &r.recs[i]
		d, _ := icmpDirection(rec)
		inName, _ := rec.Get(ipfix.InterfaceName)
		outName, _ := rec.GetN(ipfix.InterfaceName, 1)
		point, in := uint64(12), b.ports[0]
		if strings.HasPrefix(d, "2>1") {
			point, in = 13, b.ports[1]
		}
		pd := rec.Uint(ipfix.PacketDelta)
		if rec.Header.Domain != 11 || rec.Uint(ipfix.ObservationPointID) != point || pd%uint64(delta) != 0 ||
			rec.Uint(ipfix.OctetDelta) != 84*pd || string(inName) != in || d == "1>2 out" && string(outName) != b.ports[1] {
			t.Errorf("%s: record %s %+v: want domain 11, point %d, packets a multiple of %v, input %s", who, d, rec, point, delta, in)
			break
		}
	}
	nfCheck(t, who, r)
}

var digits = regexp.MustCompile(`[0-9]+`)

// ipfixDumps runs ovs-ofctl dump-ipfix-bridge and dump-ipfix-flow (in
// OpenFlow 1.0 and 1.3) and returns what they print (errors included),
// the mgmt socket's path cut, and the sampled packets the bridge's
// dump counts.
func ipfixDumps(ofctl func(args ...string) (string, error), mgmt string) (out []string, sampled uint64) {
	for _, args := range [][]string{{"dump-ipfix-bridge"}, {"dump-ipfix-flow"}, {"-O", "OpenFlow13", "dump-ipfix-bridge"},
		{"-O", "OpenFlow13", "dump-ipfix-flow"}} {
		o, _ := ofctl(args...)
		o = strings.ReplaceAll(o, mgmt, "MGMT")
		if m := regexp.MustCompile(`sampled pkts=(\d+)`).FindStringSubmatch(o); m != nil && sampled == 0 {
			sampled, _ = strconv.ParseUint(m[1], 10, 64)
		}
		out = append(out, o)
	}
	return out, sampled
}

// ipfixSwitch runs both phases on one switch: bridge IPFIX, then the
// sample action with a collector set; after each, ovs-ofctl's IPFIX
// statistics.
func (b *sflowBed) ipfixSwitch(t *testing.T, who, mgmt string, vsctl func(args ...string) string, ofctl func(args ...string) (string, error)) (br, fs ipfixRun, ofFlows []string) {
	t.Helper()
	col, targets := startIPFIXCollectors(t)
	b.ipfixConfigure(t, vsctl, targets)
	br = b.ipfixRun(t, col)
	br.dumps, br.sampled = ipfixDumps(ofctl, mgmt)
	t.Logf("%s, bridge IPFIX: record packets %v, nfdump %d packets %d bytes; ovs-ofctl:\n%s", who, br.pkts, br.nfPkts, br.nfOct,
		strings.Join(br.dumps, ""))
	col, targets = startIPFIXCollectors(t)
	ofFlows = b.fsConfigure(t, vsctl, ofctl, targets)
	fs = b.ipfixRun(t, col)
	fs.dumps, fs.sampled = ipfixDumps(ofctl, mgmt)
	t.Logf("%s, flow sampling: record packets %v, nfdump %d packets %d bytes; ovs-ofctl:\n%s", who, fs.pkts, fs.nfPkts, fs.nfOct,
		strings.Join(fs.dumps, ""))
	return br, fs, ofFlows
}

// sameDumps compares two switches' ovs-ofctl IPFIX statistics, numbers
// aside, and checks that each counted samples.
func sameDumps(t *testing.T, phase string, ovs, gov ipfixRun) {
	t.Helper()
	for i := range ovs.dumps {
		if i >= len(gov.dumps) || digits.ReplaceAllString(ovs.dumps[i], "N") != digits.ReplaceAllString(gov.dumps[i], "N") {
			t.Errorf("%s: ovs-ofctl dump %d:\novs-vswitchd %s\ngovswitchd   %s", phase, i, ovs.dumps[i], gov.dumps[min(i, len(gov.dumps)-1)])
		}
	}
	if ovs.sampled == 0 || gov.sampled == 0 {
		t.Errorf("%s: sampled pkts ovs-vswitchd %d, govswitchd %d", phase, ovs.sampled, gov.sampled)
	}
}

// TestIntegrationIPFIX: pings across a bridge with IPFIX (sampling 1 in
// 4, observation domain 7 and point 8, a cache of 64 flows with a 2 s
// active timeout) reach nfdump's nfcapd and a decoder as IPFIX records:
// ingress and egress records of each direction whose packet counts are
// the pings within five standard deviations of the sampling, 84 IP and
// 98 Ethernet bytes a packet, naming the ports; nfdump reads the same
// counts. ovs-vswitchd 3.1 first, in the same boot, is held to the same
// checks, and govswitchd's templates and datapath flows (sample actions
// and their cookies as ovs-dpctl prints them) are ovs-vswitchd's.
//
// Then, on each switch, the bridge's IPFIX gives way to collector set 5
// and two flows whose sample actions (1 in 3) sample h1's pings on egress
// by h2's port and h2's replies on ingress: nfcapd and the decoder
// receive records of just those, in the actions' domain and points, as
// many as the probability says within five standard deviations; ovs-ofctl
// dump-flows prints the same flows for both, and the datapath flows are
// the same.
func TestIntegrationIPFIX(t *testing.T) {
	b := newSFlowBed(t)

	o := startOVS(t)
	ovsMgmt := filepath.Join(o.dir, b.name+".mgmt")
	ovs, ovsFS, ovsOF := b.ipfixSwitch(t, "ovs-vswitchd", ovsMgmt, func(args ...string) string { return o.must(t, "ovs-vsctl", args...) },
		func(args ...string) (string, error) { return ofctlAt(ovsMgmt, args...) })
	if r := appctlAt(t, o.ctl, "exit", "--cleanup"); r.code != 0 {
		t.Fatalf("ovs-vswitchd exit --cleanup: %d %s", r.code, r.err)
	}
	for deadline := time.Now().Add(5 * time.Second); linkExists(b.name); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("ovs-vswitchd's exit --cleanup left %s for 5 s", b.name)
		}
	}
	if p := os.Getenv("GOVSWITCH_IPFIX_RECORD"); p != "" {
		var rec []byte
		for _, s := range ovs.templates {
			rec = binary.BigEndian.AppendUint16(rec, uint16(len(s)))
			rec = append(rec, s...)
		}
		if err := os.WriteFile(p, rec, 0o644); err != nil {
			t.Errorf("recording ovs-vswitchd's templates: %v", err)
		}
	}

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
	govMgmt := filepath.Join(b.rundir, b.name+".mgmt")
	gov, govFS, govOF := b.ipfixSwitch(t, "govswitchd", govMgmt, vsctl, func(args ...string) (string, error) { return ofctlAt(govMgmt, args...) })

	b.ipfixCheck(t, "ovs-vswitchd", ovs)
	b.ipfixCheck(t, "govswitchd", gov)
	b.fsCheck(t, "ovs-vswitchd", ovsFS)
	b.fsCheck(t, "govswitchd", govFS)
	sameDumps(t, "bridge IPFIX", ovs, gov)
	sameDumps(t, "flow sampling", ovsFS, govFS)
	if len(govOF) != len(fsFlows) || !slices.Equal(ovsOF, govOF) {
		t.Errorf("ovs-ofctl dump-flows:\novs-vswitchd %q\ngovswitchd   %q", ovsOF, govOF)
	}
	t.Logf("flow sampling datapath flows:\novs-vswitchd %q\ngovswitchd   %q", ovsFS.flows, govFS.flows)
	if len(govFS.flows) == 0 || !slices.Equal(ovsFS.flows, govFS.flows) {
		t.Errorf("flow sampling datapath flows differ:\novs-vswitchd %q\ngovswitchd   %q", ovsFS.flows, govFS.flows)
	}

	// The templates, byte for byte (the first of each kind: both send
	// them once in these few seconds).
	if len(ovs.templates) == 0 || len(gov.templates) != len(ovs.templates) {
		t.Errorf("template sets: ovs-vswitchd sent %d, govswitchd %d", len(ovs.templates), len(gov.templates))
	}
	for i := range min(len(ovs.templates), len(gov.templates)) {
		if !bytes.Equal(ovs.templates[i], gov.templates[i]) {
			t.Errorf("template set %d differs:\novs-vswitchd %x\ngovswitchd   %x", i, ovs.templates[i], gov.templates[i])
		}
	}
	t.Logf("IPv4 datapath flows:\novs-vswitchd %q\ngovswitchd   %q", ovs.flows, gov.flows)
	if len(gov.flows) == 0 || !slices.Equal(ovs.flows, gov.flows) {
		t.Errorf("sampled flows differ:\novs-vswitchd %q\ngovswitchd   %q", ovs.flows, gov.flows)
	}
}
