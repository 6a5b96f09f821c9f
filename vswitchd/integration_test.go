package vswitchd

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/govswitch/govswitch/datapath/kernel"
	"github.com/govswitch/govswitch/flow"
	"github.com/govswitch/govswitch/internal/testbed"
	"github.com/govswitch/govswitch/ofproto"
	"golang.org/x/sys/unix"
)

// TestMain lets the test binary run as the daemon itself (for the crash
// test, which kills and restarts a separate process): with
// GOVSWITCHD_ARGS set it runs govswitchd with those arguments.
func TestMain(m *testing.M) {
	if filepath.Base(os.Args[0]) == "ovs-vswitchd" {
		// Run by that name (a symlink to this binary), it is govswitchd
		// standing in for ovs-vswitchd: see ovsctl_integration_test.go.
		os.Exit(Main())
	}
	if args := os.Getenv("GOVSWITCHD_ARGS"); args != "" {
		cfg, _, _, err := ParseArgs(strings.Fields(args))
		if err == nil {
			var d *Daemon
			if d, err = New(cfg, nil, os.Stderr); err == nil {
				ctx, stop := signalContext()
				defer stop()
				err = d.Run(ctx)
			}
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "govswitchd:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

var bedSeq atomic.Int32

// bed is one kernel test setup: a bridge (its own datapath) joining two
// hosts, h1 (10.0.0.1) and h2 (10.0.0.2), each in a network namespace on a
// veth pair.
type bed struct {
	name       string // bridge and datapath name
	h1, h2     *testbed.Netns
	v1, v2     string // host ends of the veths: the bridge's ports
	mac1, mac2 net.HardwareAddr
	rundir     string
	d          *Daemon
}

func newBed(t *testing.T) *bed {
	t.Helper()
	testbed.Require(t)
	n := bedSeq.Add(1)
	b := &bed{name: fmt.Sprintf("gs%d", n), v1: fmt.Sprintf("gs%da", n), v2: fmt.Sprintf("gs%db", n),
		rundir: t.TempDir()}
	b.h1, b.h2 = testbed.NewNetns(t), testbed.NewNetns(t)
	b.mac1 = testbed.Veth(t, b.v1, b.h1, "eth0", "10.0.0.1/24")
	b.mac2 = testbed.Veth(t, b.v2, b.h2, "eth0", "10.0.0.2/24")
	t.Cleanup(func() {
		// Every bridge is on the one datapath, ovs-system: the test's go with it.
		if err := (kernel.Provider{}).Delete(ofproto.SharedDatapathName); err != nil && !os.IsNotExist(err) {
			t.Logf("delete datapath %s: %v", ofproto.SharedDatapathName, err)
		}
	})
	return b
}

func (b *bed) args(extra ...string) []string {
	return append([]string{"--datapath", "system", "--rundir", b.rundir, "--pidfile", "-", "--handlers", "1",
		"--bridge", b.name, "--port", b.v1, "--port", b.v2}, extra...)
}

// start runs the daemon in this process.
func (b *bed) start(t *testing.T, extra ...string) {
	t.Helper()
	cfg, _, _, err := ParseArgs(b.args(extra...))
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
	b.d = d
	t.Cleanup(d.Stop)
}

type testLog struct{ t *testing.T }

func (l testLog) Write(p []byte) (int, error) {
	l.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

func (b *bed) ping(t *testing.T, count int) (loss int) {
	t.Helper()
	out, _ := b.h1.Exec("ping", "-c", strconv.Itoa(count), "-i", "0.2", "-W", "2", "10.0.0.2")
	return parseLoss(t, out)
}

var lossRE = regexp.MustCompile(`(\d+) packets transmitted, (\d+) received`)

// parseLoss returns how many pings were lost, from ping's summary line.
func parseLoss(t *testing.T, out string) int {
	t.Helper()
	m := lossRE.FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no ping summary in:\n%s", out)
	}
	sent, _ := strconv.Atoi(m[1])
	recv, _ := strconv.Atoi(m[2])
	return sent - recv
}

// dpctlFlows parses `ovs-dpctl dump-flows` of the bed's datapath with the
// flow package's parser: what the real OVS tool reads from the kernel.
func (b *bed) dpctlFlows(t *testing.T) []flow.DumpFlow {
	t.Helper()
	out, err := exec.Command("ovs-dpctl", "dump-flows", "system@ovs-system").CombinedOutput()
	if err != nil {
		t.Fatalf("ovs-dpctl dump-flows: %v\n%s", err, out)
	}
	var flows []flow.DumpFlow
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if line == "" {
			continue
		}
		f, err := flow.ParseDumpLine(line, nil)
		if err != nil {
			t.Fatalf("parse %q: %v", line, err)
		}
		flows = append(flows, f)
	}
	return flows
}

// TestIntegrationPingAndTCP: two hosts ping and exchange TCP through the
// switch (standalone, NORMAL), and ovs-dpctl shows NORMAL's megaflows:
// in_port and the Ethernet addresses exact, no L4 bits.
func TestIntegrationPingAndTCP(t *testing.T) {
	b := newBed(t)
	b.start(t)
	if loss := b.ping(t, 3); loss != 0 {
		t.Fatalf("lost %d of 3 pings", loss)
	}

	var ln net.Listener
	if err := b.h2.Do(func() (err error) { ln, err = net.Listen("tcp", "10.0.0.2:7000"); return }); err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() { io.Copy(c, c); c.Close() }()
		}
	}()
	for i := 0; i < 5; i++ {
		var c net.Conn
		if err := b.h1.Do(func() (err error) { c, err = net.DialTimeout("tcp", "10.0.0.2:7000", 5*time.Second); return }); err != nil {
			t.Fatalf("connection %d: %v", i, err)
		}
		msg := []byte(fmt.Sprintf("hello %d", i))
		c.SetDeadline(time.Now().Add(5 * time.Second))
		if _, err := c.Write(msg); err != nil {
			t.Fatal(err)
		}
		got := make([]byte, len(msg))
		if _, err := io.ReadFull(c, got); err != nil || !bytes.Equal(got, msg) {
			t.Fatalf("echo %d: %q %v", i, got, err)
		}
		c.Close()
	}

	flows := b.dpctlFlows(t)
	if len(flows) == 0 {
		t.Fatal("no datapath flows")
	}
	sawIPv4 := false
	for _, f := range flows {
		if f.Mask.TpSrc != 0 || f.Mask.TpDst != 0 || f.Mask.NwProto != 0 {
			t.Errorf("NORMAL megaflow with L4 bits: %s", flow.Format(&f.Key, &f.Mask))
		}
		if f.Mask.InPort != ^uint32(0) || f.Mask.EthSrc != [6]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff} {
			t.Errorf("NORMAL megaflow without exact in_port/eth_src: %s", flow.Format(&f.Key, &f.Mask))
		}
		if f.Key.EthType == flow.EthTypeIPv4 {
			sawIPv4 = true
		}
	}
	if !sawIPv4 {
		t.Errorf("no IPv4 flow among %d", len(flows))
	}
	// Five TCP connections and the pings share the two IPv4 megaflows.
	st := b.d.Bridge(b.name).Udpif.Stats()
	t.Logf("%d datapath flows; upcalls %d, flows installed %d", len(flows), st.Upcalls, st.FlowsInstalled)
}

// udpFrame is a UDP/IPv4 frame from h1 to h2 with source port sport.
func udpFrame(src, dst net.HardwareAddr, sport, dport uint16) []byte {
	f := tcpFrame([6]byte(src), [6]byte(dst), sport, dport)[:14+20+8]
	ip := f[14:]
	binary.BigEndian.PutUint16(ip[2:], 28)
	ip[9] = 17
	setIPv4Checksum(ip)
	binary.BigEndian.PutUint16(ip[24:], 8) // UDP length
	return f
}

// storm sends n one-packet UDP flows from h1 to h2 and returns how many
// h2 received. Frames that reached h2 but that the test's own receiving
// socket dropped (its reader fell behind) fail the test as the harness's
// loss, apart from the switch's; they are not counted as delivered.
func (b *bed) storm(t *testing.T, n int, basePort uint16) int {
	t.Helper()
	tx := testbed.OpenRaw(t, b.h1, "eth0")
	rx := testbed.OpenRaw(t, b.h2, "eth0")
	got := make(chan int)
	go func() {
		seen := map[uint16]bool{}
		for len(seen) < n {
			f, err := rx.Recv(3*time.Second, func(f []byte) bool {
				return len(f) >= 42 && f[23] == 17 && binary.BigEndian.Uint16(f[36:]) == 9999
			})
			if err != nil {
				break
			}
			seen[binary.BigEndian.Uint16(f[34:])] = true
		}
		got <- len(seen)
	}()
	for i := 0; i < n; i++ {
		if err := tx.Send(udpFrame(b.mac1, b.mac2, basePort+uint16(i), 9999)); err != nil {
			t.Fatal(err)
		}
		if i%50 == 49 {
			time.Sleep(5 * time.Millisecond) // stay under the veth queue
		}
	}
	delivered := <-got // the receiver is done with rx
	st, err := rx.Stats()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("storm: h2's receiving socket: %d frames arrived, %d dropped", st.Arrived, st.Dropped)
	if st.Dropped > 0 {
		t.Errorf("harness, not switch: h2's receiving socket dropped %d of the %d frames that reached it (buffer full, reader too slow); %d of %d counted",
			st.Dropped, st.Arrived, delivered, n)
	}
	return delivered
}

// TestIntegrationGovernorStorm: in the exact-match regime every new flow
// is an upcall; with --governor, a storm of one-packet flows is delivered
// in full while the datapath flow count stays near the threshold, and a
// long flow still gets installed.
func TestIntegrationGovernorStorm(t *testing.T) {
	b := newBed(t)
	b.start(t, "--governor", "--governor-threshold", "100", "--disable-megaflows")
	b.ping(t, 1) // learn both MACs
	const n = 600
	delivered := b.storm(t, n, 20000)
	st := b.d.Bridge(b.name).Udpif.Stats()
	flows := len(b.dpctlFlows(t))
	// Executes are counted after their batch: when every frame arrived at
	// once, the last batch's may be missing yet; after a loss, the receiver
	// has waited 3 s and they are all in.
	t.Logf("storm: %d/%d delivered, %d datapath flows, governor executes %d, installs %d, lost %d; executes %d, failed %d",
		delivered, n, flows, st.GovernorExecutes, st.GovernorInstalls, st.Lost, st.Executes, st.ExecuteFailed)
	if delivered < n-int(st.Lost) || delivered < n*95/100 {
		t.Errorf("delivered %d of %d one-packet flows", delivered, n)
	}
	if flows > 150 {
		t.Errorf("%d datapath flows: the governor (threshold 100) should hold them near 50", flows)
	}
	if st.GovernorExecutes == 0 {
		t.Errorf("the governor declined nothing")
	}
	// A long flow: the same 5-tuple repeatedly.
	tx := testbed.OpenRaw(t, b.h1, "eth0")
	for i := 0; i < 12; i++ {
		tx.Send(udpFrame(b.mac1, b.mac2, 5555, 9999))
		time.Sleep(20 * time.Millisecond)
	}
	time.Sleep(200 * time.Millisecond)
	long := false
	for _, f := range b.dpctlFlows(t) {
		if f.Key.TpSrc == 5555 {
			long = true
		}
	}
	if !long {
		t.Errorf("the long flow was not installed")
	}
}

// TestIntegrationIdleExpiry: flows idle past --max-idle are deleted.
func TestIntegrationIdleExpiry(t *testing.T) {
	b := newBed(t)
	b.start(t, "--max-idle", "1s")
	if loss := b.ping(t, 2); loss != 0 {
		t.Fatalf("lost %d pings", loss)
	}
	if len(b.dpctlFlows(t)) == 0 {
		t.Fatal("no flows after ping")
	}
	deadline := time.Now().Add(5 * time.Second)
	for len(b.dpctlFlows(t)) > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("flows still installed 5 s after traffic stopped (max-idle 1s):\n%v", b.dpctlFlows(t))
		}
		time.Sleep(250 * time.Millisecond)
	}
	if st := b.d.Bridge(b.name).Udpif.Stats(); st.IdleDeleted == 0 {
		t.Errorf("no idle deletions counted: %+v", st)
	}
}

// TestIntegrationFlowLimit: with --flow-limit, the datapath holds no more
// flows than the limit (plus one handler batch), and traffic over it is
// still delivered by executing it.
func TestIntegrationFlowLimit(t *testing.T) {
	b := newBed(t)
	b.start(t, "--flow-limit", "40", "--disable-megaflows")
	b.ping(t, 1)
	const n = 300
	delivered := b.storm(t, n, 30000)
	flows := len(b.dpctlFlows(t))
	st := b.d.Bridge(b.name).Udpif.Stats()
	t.Logf("flow limit 40: %d datapath flows, %d/%d delivered, limit hits %d", flows, delivered, n, st.LimitHits)
	if flows > 40+64 {
		t.Errorf("%d datapath flows over a limit of 40", flows)
	}
	if st.LimitHits == 0 {
		t.Errorf("the limit never stopped an install")
	}
	if delivered < n*95/100 {
		t.Errorf("delivered %d of %d", delivered, n)
	}
}

// TestIntegrationCrashRestart: SIGKILL the daemon during heavy flow setup
// (a new flow every millisecond) while a ping stream flows; the kernel
// keeps forwarding established flows with no daemon at all; a restarted
// daemon reattaches to the datapath and serves new flows. Ping loss
// across the whole episode is measured and reported.
func TestIntegrationCrashRestart(t *testing.T) {
	b := newBed(t)
	startProc := func() *exec.Cmd {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), "GOVSWITCHD_ARGS="+strings.Join(b.args(), " "))
		var logBuf bytes.Buffer
		cmd.Stdout, cmd.Stderr = &logBuf, &logBuf
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			cmd.Process.Kill()
			cmd.Wait()
			if t.Failed() {
				t.Logf("daemon log:\n%s", logBuf.String())
			}
		})
		return cmd
	}
	first := startProc()
	waitDatapath(t, b.name)
	// The daemon's threads run SCHED_BATCH by default (--scheduling).
	tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", first.Process.Pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range tasks {
		tid, _ := strconv.Atoi(e.Name())
		if a, err := unix.SchedGetAttr(tid, 0); err == nil && a.Policy != unix.SCHED_BATCH {
			t.Errorf("daemon thread %d runs policy %d, want SCHED_BATCH", tid, a.Policy)
		}
	}
	if loss := b.ping(t, 2); loss != 0 {
		t.Fatalf("lost %d pings before the crash", loss)
	}

	// Heavy flow setup across the whole episode: a frame of a new flow
	// (a new UDP port pair) every millisecond from h1.
	stormStop := make(chan struct{})
	stormDone := make(chan int)
	storm := testbed.OpenRaw(t, b.h1, "eth0")
	go func() {
		n := 0
		for {
			select {
			case <-stormStop:
				stormDone <- n
				return
			default:
			}
			storm.Send(udpFrame(b.mac1, b.mac2, uint16(10000+n%50000), uint16(20000+n/50000)))
			n++
			time.Sleep(time.Millisecond)
		}
	}()

	// Ping every 50 ms for 4 s; kill the daemon at 1 s, restart at 2 s.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	pinger := exec.CommandContext(ctx, "ip", "netns", "exec", b.h1.Name, "ping", "-c", "80", "-i", "0.05", "-W", "1", "10.0.0.2")
	var pingOut bytes.Buffer
	pinger.Stdout = &pingOut
	if err := pinger.Start(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Second)
	first.Process.Signal(syscall.SIGKILL)
	first.Wait()
	killedAt := time.Now()
	time.Sleep(time.Second)
	restartAt := time.Now()
	startProc()
	// Time to full service: a frame from a source MAC never seen before
	// misses in the kernel, so it arrives only if the new daemon handles
	// its upcall.
	tx := testbed.OpenRaw(t, b.h1, "eth0")
	rx := testbed.OpenRaw(t, b.h2, "eth0")
	var ready time.Duration
	for i := 0; time.Since(restartAt) < 10*time.Second; i++ {
		src := net.HardwareAddr{0x02, 0xee, 0, 0, byte(i >> 8), byte(i)}
		tx.Send(udpFrame(src, b.mac2, 4444, 9999))
		if _, err := rx.Recv(200*time.Millisecond, func(f []byte) bool { return bytes.Equal(f[6:12], src) }); err == nil {
			ready = time.Since(restartAt)
			break
		}
	}
	pinger.Wait()
	close(stormStop)
	stormFlows := <-stormDone
	loss := parseLoss(t, pingOut.String())
	t.Logf("crash at +1s under a storm of %d new flows (daemon dead %.1fs): %d of 80 pings lost; restarted daemon serving after %v",
		stormFlows, restartAt.Sub(killedAt).Seconds(), loss, ready)
	if loss > 2 {
		t.Errorf("lost %d of 80 pings: established flows should keep forwarding in the kernel", loss)
	}
	if ready == 0 {
		t.Errorf("the restarted daemon did not serve traffic within 10 s")
	}
}

// waitDatapath waits until the shared datapath has bridge name's
// internal port and two more.
func waitDatapath(t *testing.T, name string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		out, _ := exec.Command("ovs-dpctl", "show", "system@ovs-system").CombinedOutput()
		if bytes.Contains(out, []byte(": "+name+" (internal)")) && bytes.Contains(out, []byte("port 3")) {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("datapath %s did not come up", name)
}

func signalContext() (context.Context, context.CancelFunc) {
	return signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
}

// ofctl runs the real ovs-ofctl against the bed's bridge.
func (b *bed) ofctl(t *testing.T, args ...string) string {
	t.Helper()
	full := append([]string{args[0], "unix:" + b.rundir + "/" + b.name + ".mgmt"}, args[1:]...)
	out, err := exec.Command("ovs-ofctl", full...).CombinedOutput()
	if err != nil {
		t.Fatalf("ovs-ofctl %s: %v\n%s", strings.Join(full, " "), err, out)
	}
	return string(out)
}

// tcpConnect reports whether h1 can open a TCP connection to h2's port.
func (b *bed) tcpConnect(t *testing.T, port int) bool {
	t.Helper()
	var c net.Conn
	err := b.h1.Do(func() (err error) {
		c, err = net.DialTimeout("tcp", fmt.Sprintf("10.0.0.2:%d", port), time.Second)
		return
	})
	if err != nil {
		return false
	}
	c.Close()
	return true
}

// TestIntegrationOfctlRules: OpenFlow rules added with the real ovs-ofctl
// change forwarding within one revalidator pass — drop, output to a port,
// a VLAN push — and the megaflows ovs-dpctl shows carry exactly the bits
// the rules made matter: tp_dst for an L4 ACL, none for NORMAL alone.
func TestIntegrationOfctlRules(t *testing.T) {
	b := newBed(t)
	b.start(t)
	var ln net.Listener
	if err := b.h2.Do(func() (err error) { ln, err = net.Listen("tcp", "10.0.0.2:7000"); return }); err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var ln2 net.Listener
	if err := b.h2.Do(func() (err error) { ln2, err = net.Listen("tcp", "10.0.0.2:7001"); return }); err != nil {
		t.Fatal(err)
	}
	defer ln2.Close()
	for _, l := range []net.Listener{ln, ln2} {
		go func(l net.Listener) {
			for {
				c, err := l.Accept()
				if err != nil {
					return
				}
				c.Close()
			}
		}(l)
	}
	if loss := b.ping(t, 2); loss != 0 || !b.tcpConnect(t, 7000) {
		t.Fatalf("baseline: ping loss %d", loss)
	}
	show := b.ofctl(t, "show")
	if !strings.Contains(show, "1("+b.v1+")") || !strings.Contains(show, "2("+b.v2+")") {
		t.Fatalf("ovs-ofctl show:\n%s", show)
	}
	if dump := b.ofctl(t, "dump-flows"); !strings.Contains(dump, "priority=0 actions=NORMAL") {
		t.Fatalf("a standalone bridge starts with OVS's NORMAL flow:\n%s", dump)
	}
	u := b.d.Bridge(b.name).Udpif

	// Drop ICMP: the installed ICMP megaflow is fixed within one pass.
	b.ofctl(t, "add-flow", "priority=100,icmp,actions=drop")
	u.Revalidate()
	if loss := b.ping(t, 3); loss != 3 {
		t.Errorf("after an icmp drop rule, %d of 3 pings lost, want 3", loss)
	}
	b.ofctl(t, "del-flows", "icmp")
	u.Revalidate()
	if loss := b.ping(t, 2); loss != 0 {
		t.Errorf("after deleting the drop rule, %d of 2 pings lost", loss)
	}

	// An L4 ACL: drop tcp_dst=7000, NORMAL for the rest.
	b.ofctl(t, "add-flow", "priority=50,tcp,tp_dst=7000,actions=drop")
	u.Revalidate()
	if b.tcpConnect(t, 7000) {
		t.Errorf("tcp/7000 connected through a drop rule")
	}
	if !b.tcpConnect(t, 7001) {
		t.Errorf("tcp/7001 blocked by a rule for 7000")
	}
	sawL4 := false
	for _, f := range b.dpctlFlows(t) {
		if f.Key.EthType == flow.EthTypeIPv4 && f.Key.NwProto == flow.IPProtoTCP && f.Mask.TpDst != 0 {
			sawL4 = true
		}
		if f.Mask.IPv4Src != [4]byte{} || f.Mask.TpSrc != 0 {
			t.Errorf("the ACL never reads ip src or tp_src, yet: %s", flow.Format(&f.Key, &f.Mask))
		}
	}
	if !sawL4 {
		t.Errorf("no TCP megaflow with tp_dst bits under an L4 ACL:\n%v", b.dpctlFlows(t))
	}
	b.ofctl(t, "del-flows", "tcp")

	// Output to a port and a VLAN push: ICMP from port 1 goes to port 2
	// tagged with VLAN 10 (h2 drops tagged frames, so pings fail), and the
	// datapath flow says so.
	b.ofctl(t, "add-flow", "priority=200,in_port=1,icmp,actions=mod_vlan_vid:10,output:2")
	u.Revalidate()
	if loss := b.ping(t, 2); loss != 2 {
		t.Errorf("pings went through untagged (%d lost)", loss)
	}
	pushed := false
	v2 := dpPort(t, b.v2) // OpenFlow port 2's datapath port
	for _, f := range b.dpctlFlows(t) {
		if strings.Contains(f.Actions, "push_vlan(vid=10") && strings.HasSuffix(f.Actions, ","+v2) {
			pushed = true
		}
	}
	if !pushed {
		out, _ := exec.Command("ovs-dpctl", "dump-flows", "system@ovs-system").CombinedOutput()
		t.Errorf("no datapath flow pushes VLAN 10 and outputs to %s (datapath port %s):\n%s", b.v2, v2, out)
	}
	dump := b.ofctl(t, "dump-flows")
	if !strings.Contains(dump, "n_packets=") || !strings.Contains(dump, "actions=mod_vlan_vid:10,output:2") {
		t.Errorf("ovs-ofctl dump-flows:\n%s", dump)
	}
}

// TestIntegrationPortAddresses: ovs-ofctl show reports each port's real
// MAC address, read from the host's network device.
func TestIntegrationPortAddresses(t *testing.T) {
	b := newBed(t)
	b.start(t)
	ifi, err := net.InterfaceByName(b.v1)
	if err != nil {
		t.Fatal(err)
	}
	show := b.ofctl(t, "show")
	if !strings.Contains(show, "addr:"+ifi.HardwareAddr.String()) {
		t.Errorf("ovs-ofctl show lacks %s's address %s:\n%s", b.v1, ifi.HardwareAddr, show)
	}
}

// TestIntegrationAppctl: every ovs-appctl command issue #8 lists, through
// the real client with no -t, against the switch on the kernel datapath.
func TestIntegrationAppctl(t *testing.T) {
	b := newBed(t)
	// The default pidfile (<rundir>/ovs-vswitchd.pid) is how ovs-appctl
	// finds the daemon.
	b.start(t, "--governor", "--pidfile", b.rundir+"/ovs-vswitchd.pid")
	d := b.d
	tx := testbed.OpenRaw(t, b.h1, "eth0")
	tx.Send(udpFrame(net.HardwareAddr{0x02, 0, 0, 0, 0, 0x0a}, net.HardwareAddr{0x02, 0, 0, 0, 0, 0x0b}, 1, 80))
	deadline := time.Now().Add(3 * time.Second)
	for d.Bridge(b.name).Udpif.Stats().Misses == 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	checkAppctl(t, d, b.rundir, b.name, "system", b.v1)
}

// bigUDPFrame is a UDP/IPv4 frame from h1 to h2 of frameLen bytes in all.
func bigUDPFrame(src, dst net.HardwareAddr, sport, dport uint16, frameLen int) []byte {
	f := make([]byte, frameLen)
	copy(f, udpFrame(src, dst, sport, dport))
	for i := 42; i < frameLen; i++ {
		f[i] = byte(i)
	}
	ip := f[14:]
	binary.BigEndian.PutUint16(ip[2:], uint16(frameLen-14))
	setIPv4Checksum(ip)
	binary.BigEndian.PutUint16(ip[24:], uint16(frameLen-34)) // UDP length
	binary.BigEndian.PutUint16(ip[26:], 0)                   // no UDP checksum
	return f
}

// TestIntegrationLargeMTUUpcall: on links with a 65000-byte MTU a single
// (not segmented) frame can be that long, and so can its upcall. Frames of
// 1500 to 64000 bytes, each a new flow in the exact-match regime, must all
// go up, be executed and arrive, with nothing counted as lost.
func TestIntegrationLargeMTUUpcall(t *testing.T) {
	b := newBed(t)
	for _, args := range [][]string{
		{"link", "set", "dev", b.v1, "mtu", "65000"},
		{"link", "set", "dev", b.v2, "mtu", "65000"},
		{"-n", b.h1.Name, "link", "set", "dev", "eth0", "mtu", "65000"},
		{"-n", b.h2.Name, "link", "set", "dev", "eth0", "mtu", "65000"},
	} {
		if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
			t.Fatalf("ip %v: %v: %s", args, err, out)
		}
	}
	b.start(t, "--disable-megaflows")
	b.ping(t, 1) // learn both MACs
	tx := testbed.OpenRaw(t, b.h1, "eth0")
	rx := testbed.OpenRaw(t, b.h2, "eth0")
	sizes := []int{1500, 9000, 16 << 10, 20000, 40000, 64000}
	for i, n := range sizes {
		sport := uint16(30000 + i)
		if err := tx.Send(bigUDPFrame(b.mac1, b.mac2, sport, 7777, n)); err != nil {
			t.Fatalf("send %d bytes: %v", n, err)
		}
		f, err := rx.Recv(3*time.Second, func(f []byte) bool {
			return len(f) >= 42 && f[23] == 17 && binary.BigEndian.Uint16(f[34:]) == sport
		})
		if err != nil {
			t.Errorf("a %d-byte frame (a new flow) did not arrive: %v", n, err)
			continue
		}
		if len(f) != n {
			t.Errorf("a %d-byte frame arrived as %d bytes", n, len(f))
		}
	}
	st := b.d.Bridge(b.name).Udpif.Stats()
	t.Logf("upcalls %d, lost %d", st.Upcalls, st.Lost)
	if st.Lost != 0 {
		t.Errorf("%d upcalls lost", st.Lost)
	}
}
