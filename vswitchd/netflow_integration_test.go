package vswitchd

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/govswitch/govswitch/internal/testbed"
	"github.com/govswitch/govswitch/ofproto/netflow"
	"github.com/govswitch/govswitch/ovsdb/ovsdbtest"
)

const netflowPings = 20

// netflowCollector is nfdump's nfcapd and a listener decoding with package
// netflow, on the bed's loopback.
type netflowCollector struct {
	conn   *net.UDPConn
	nfcapd *exec.Cmd
	dir    string

	mu      sync.Mutex
	records []netflow.Record
	headers []netflow.Header
	bad     []error
}

func startNetFlowCollectors(t *testing.T) (*netflowCollector, []string) {
	t.Helper()
	if _, err := exec.LookPath("nfcapd"); err != nil {
		t.Fatalf("nfcapd not installed (Debian package nfdump; scripts/install-deps --test): %v", err)
	}
	c := &netflowCollector{dir: t.TempDir()}
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
			h, rs, err := netflow.Decode(buf[:n])
			c.mu.Lock()
			if err != nil {
				c.bad = append(c.bad, err)
			} else {
				c.headers = append(c.headers, h)
				c.records = append(c.records, rs...)
			}
			c.mu.Unlock()
		}
	}()
	port := freeUDPPort(t)
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

// stop ends nfcapd, which writes its file when it ends (SIGTERM).
func (c *netflowCollector) stop(t *testing.T) {
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

// nfcapdLog returns nfcapd's log and the files it wrote, for a failure.
func (c *netflowCollector) nfcapdLog() string {
	b, _ := os.ReadFile(filepath.Join(c.dir, "nfcapd.log"))
	ents, _ := os.ReadDir(c.dir)
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	return string(b) + "files: " + strings.Join(names, " ")
}

// icmp sums the decoded ICMP records by direction: "1>2" is h1 to h2.
func (c *netflowCollector) icmp() (pkts, bytes map[string]uint64, recs []netflow.Record) {
	c.mu.Lock()
	defer c.mu.Unlock()
	pkts, bytes = map[string]uint64{}, map[string]uint64{}
	for _, r := range c.records {
		if r.Proto != 1 || r.Src[0] != 10 || r.Src[2] != 0 || r.Dst[2] != 0 {
			continue
		}
		d := fmt.Sprintf("%d>%d", r.Src[3], r.Dst[3])
		pkts[d] += uint64(r.Packets)
		bytes[d] += uint64(r.Bytes)
		recs = append(recs, r)
	}
	return pkts, bytes, recs
}

// nfdumpICMP reads nfcapd's files with nfdump and sums the ICMP flows by
// direction.
func (c *netflowCollector) nfdumpICMP(t *testing.T) (pkts map[string]uint64, eng string) {
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
	pkts = map[string]uint64{}
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
		if col("pr") != "ICMP" || !strings.HasPrefix(col("sa"), "10.0.0.") {
			continue
		}
		n, _ := strconv.ParseUint(col("ipkt"), 10, 64)
		d := strings.TrimPrefix(col("sa"), "10.0.0.") + ">" + strings.TrimPrefix(col("da"), "10.0.0.")
		pkts[d] += n
		eng = col("eng")
	}
	return pkts, eng
}

// netflowRun is what one switch's NetFlow reported.
type netflowRun struct {
	pkts, bytes map[string]uint64
	nfdump      map[string]uint64
	eng         string
	recs        []netflow.Record
	headers     []netflow.Header
	dpctl       map[string]uint64 // ICMP datapath flows' packets by direction, right after the pings
	bad         []error
}

var dpctlICMP = regexp.MustCompile(`ipv4\(src=10\.0\.0\.(\d),dst=10\.0\.0\.(\d),proto=1[^)]*\).*packets:(\d+)`)

// run pings h1->h2 and waits for the datapath flows to expire (max-idle
// is 5 s, time for ovs-dpctl to read them first) and their records to arrive.
func (b *sflowBed) netflowRun(t *testing.T, c *netflowCollector) netflowRun {
	t.Helper()
	out, _ := b.h1.Exec("ping", "-c", strconv.Itoa(netflowPings), "-i", "0.05", "-W", "2", "-q", "10.0.0.2")
	if loss := parseLoss(t, out); loss != 0 {
		t.Errorf("lost %d of %d pings:\n%s", loss, netflowPings, out)
	}
	r := netflowRun{dpctl: map[string]uint64{}}
	dump, err := exec.Command("ovs-dpctl", "dump-flows", "system@ovs-system").CombinedOutput()
	if err != nil {
		t.Fatalf("ovs-dpctl dump-flows: %v\n%s", err, dump)
	}
	for _, m := range dpctlICMP.FindAllStringSubmatch(string(dump), -1) {
		n, _ := strconv.ParseUint(m[3], 10, 64)
		r.dpctl[m[1]+">"+m[2]] += n
	}
	if len(r.dpctl) == 0 {
		t.Logf("no ICMP flows in ovs-dpctl dump-flows:\n%s", dump)
	}
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		p, _, _ := c.icmp()
		if p["1>2"] > netflowPings && p["2>1"] > netflowPings {
			break
		}
		if time.Now().After(deadline) {
			t.Errorf("NetFlow records within 30 s: %v packets, want %d each way", p, netflowPings)
			break
		}
	}
	r.pkts, r.bytes, r.recs = c.icmp()
	// nfcapd got the same datagrams; it stores what it has read when it
	// ends, so give it a moment to read the last of them first.
	time.Sleep(time.Second)
	c.stop(t)
	r.nfdump, r.eng = c.nfdumpICMP(t)
	if r.nfdump["1>2"] != r.pkts["1>2"] {
		t.Logf("nfcapd:\n%s", c.nfcapdLog())
	}
	c.mu.Lock()
	r.headers, r.bad = append(r.headers, c.headers...), append(r.bad, c.bad...)
	c.mu.Unlock()
	return r
}

func (b *sflowBed) netflowCheck(t *testing.T, who string, r netflowRun) {
	t.Helper()
	if len(r.bad) > 0 {
		t.Errorf("%s: %d datagrams did not decode: %v", who, len(r.bad), r.bad[0])
	}
	const sent = netflowPings + 1 // and the one that made the hosts ARP
	for _, d := range []string{"1>2", "2>1"} {
		if r.pkts[d] != sent || r.bytes[d] != 98*sent {
			t.Errorf("%s: ICMP %s: %d packets, %d bytes in records, want %d, %d", who, d, r.pkts[d], r.bytes[d], sent, 98*sent)
		}
		if r.nfdump[d] != r.pkts[d] {
			t.Errorf("%s: ICMP %s: nfdump read %d packets, the decoder %d", who, d, r.nfdump[d], r.pkts[d])
		}
		// The datapath flow counts all but the packet of the miss that set
		// it up, which the switch handled itself.
		if r.dpctl[d]+1 != r.pkts[d] {
			t.Errorf("%s: ICMP %s: ovs-dpctl dump-flows counted %d packets, records %d (want one more: the miss)", who, d, r.dpctl[d], r.pkts[d])
		}
	}
	if r.eng != "5/9" {
		t.Errorf("%s: nfdump engine %q, want 5/9", who, r.eng)
	}
	for _, h := range r.headers {
		if h.EngineType != 5 || h.EngineID != 9 {
			t.Errorf("%s: header %+v, want engine 5/9", who, h)
			break
		}
	}
	for _, rec := range r.recs {
		in, out := uint16(9<<9|1), uint16(9<<9|2)
		if rec.Src[3] == 2 {
			in, out = out, in
		}
		if rec.Input != in || rec.Output != out || rec.SrcPort != 0 || rec.DstPort>>8 != 0 && rec.DstPort>>8 != 8 || rec.Last < rec.First {
			t.Errorf("%s: record %+v, want input %#x output %#x (engine id in the interfaces), ICMP type in dst port", who, rec, in, out)
			break
		}
	}
}

func (b *sflowBed) netflowConfigure(t *testing.T, vsctl func(args ...string) string, targets []string) {
	t.Helper()
	vsctl("set", "Open_vSwitch", ".", "other_config:max-idle=5000")
	vsctl("add-br", b.name)
	for i, p := range b.ports {
		vsctl("add-port", b.name, p, "--", "set", "Interface", p, "ofport_request="+strconv.Itoa(i+1))
	}
	quoted := make([]string, len(targets))
	for i, tg := range targets {
		quoted[i] = strconv.Quote(tg)
	}
	vsctl("--", "--id=@n", "create", "NetFlow", "targets=["+strings.Join(quoted, ",")+"]", "active_timeout=60",
		"engine_type=5", "engine_id=9", "add_id_to_interface=true", "--", "set", "Bridge", b.name, "netflow=@n")
	// ARP first (the hosts forget the last run's neighbours), so that the
	// switch has learned both addresses before the pings: one more ping
	// each way, counted as the pings are.
	for _, h := range []*testbed.Netns{b.h1, b.h2} {
		h.Exec("ip", "neigh", "flush", "all")
	}
	b.h1.Exec("ping", "-c", "1", "-W", "2", "10.0.0.2")
}

// TestIntegrationNetFlow: pings across a bridge with NetFlow (engine 5/9,
// add_id_to_interface, max-idle 5 s) reach nfdump's nfcapd and a decoder
// as NetFlow v5 records whose packet and byte counts are the pings sent
// each way, one more than ovs-dpctl dump-flows counts in the datapath
// flows (the miss's packet), with the engine id in the interfaces.
// ovs-vswitchd 3.1 first, in the same boot, is held to the same checks.
func TestIntegrationNetFlow(t *testing.T) {
	b := newSFlowBed(t)

	o := startOVS(t)
	col, targets := startNetFlowCollectors(t)
	b.netflowConfigure(t, func(args ...string) string { return o.must(t, "ovs-vsctl", args...) }, targets)
	ovs := b.netflowRun(t, col)
	t.Logf("ovs-vswitchd: records %v packets, nfdump %v, dpctl %v", ovs.pkts, ovs.nfdump, ovs.dpctl)
	if r := appctlAt(t, o.ctl, "exit", "--cleanup"); r.code != 0 {
		t.Fatalf("ovs-vswitchd exit --cleanup: %d %s", r.code, r.err)
	}
	for deadline := time.Now().Add(5 * time.Second); linkExists(b.name); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("ovs-vswitchd's exit --cleanup left %s for 5 s", b.name)
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
	col, targets = startNetFlowCollectors(t)
	b.netflowConfigure(t, vsctl, targets)
	gov := b.netflowRun(t, col)
	t.Logf("govswitchd: records %v packets, nfdump %v, dpctl %v", gov.pkts, gov.nfdump, gov.dpctl)

	b.netflowCheck(t, "ovs-vswitchd", ovs)
	b.netflowCheck(t, "govswitchd", gov)
}
