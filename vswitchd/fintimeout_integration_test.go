package vswitchd

import (
	"fmt"
	"io"
	"net"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/govswitch/govswitch/internal/testbed"
)

// finBed is two hosts on a fail-mode=secure bridge, h1 (10.0.0.1, port
// 1) the TCP client and h2 (10.0.0.2, port 2) the server.
type finBed struct {
	name   string
	hosts  [2]*testbed.Netns
	ports  [2]string
	rundir string
	port   int // the server's TCP port
}

func newFinBed(t *testing.T) *finBed {
	t.Helper()
	testbed.Require(t)
	n := bedSeq.Add(1)
	b := &finBed{name: fmt.Sprintf("gf%d", n), rundir: t.TempDir(), port: 5600 + int(n)}
	for i := range b.hosts {
		b.hosts[i] = testbed.NewNetns(t)
		b.ports[i] = fmt.Sprintf("gf%d%c", n, 'a'+i)
		testbed.Veth(t, b.ports[i], b.hosts[i], "eth0", fmt.Sprintf("10.0.0.%d/24", i+1))
	}
	return b
}

func (b *finBed) configure(vsctl func(args ...string) string) {
	vsctl("add-br", b.name, "--", "set", "Bridge", b.name, "fail-mode=secure")
	for i, p := range b.ports {
		vsctl("add-port", b.name, p, "--", "set", "Interface", p, "ofport_request="+strconv.Itoa(i+1))
	}
}

// finCase is one way a fin_timeout comes to a rule.
type finCase struct {
	name  string
	flows []string
	// table and match pick the fin_timeout rule's line in dump-flows.
	table, match string
	// serverFIN says the server's FIN is the one through that rule
	// (else the client's): that side half-closes first, and the other
	// keeps sending, so the ACKs through the rule keep it in use while
	// its lowered timeout is dumped.
	serverFIN bool
}

func finCases(port int) []finCase {
	return []finCase{
		{name: "action", table: "table=0", match: "tcp,in_port=1", flows: []string{
			"priority=10,arp,actions=NORMAL",
			"priority=5,tcp,in_port=1,actions=fin_timeout(idle_timeout=1),output:2",
			"priority=5,tcp,in_port=2,actions=output:1",
		}},
		// The client's SYN learns the flow of the server's packets back,
		// with fin_idle_timeout; only SYNs learn, so the learned flow is
		// not learned again (and replaced) by every segment.
		{name: "learn", table: "table=1", match: "tp_src=" + strconv.Itoa(port), serverFIN: true, flows: []string{
			"priority=10,arp,actions=NORMAL",
			"priority=6,tcp,in_port=1,tcp_flags=+syn-ack,actions=learn(table=1,idle_timeout=60,fin_idle_timeout=1," +
				"eth_type=0x800,nw_proto=6,NXM_OF_IP_SRC[]=NXM_OF_IP_DST[],NXM_OF_IP_DST[]=NXM_OF_IP_SRC[]," +
				"NXM_OF_TCP_SRC[]=NXM_OF_TCP_DST[],NXM_OF_TCP_DST[]=NXM_OF_TCP_SRC[],output:NXM_OF_IN_PORT[]),output:2",
			"priority=5,tcp,in_port=1,actions=output:2",
			"priority=5,tcp,in_port=2,actions=resubmit(,1)",
		}},
		// Every client segment learns: once the FIN has lowered the
		// learned flow's timeout, each one replaces it (its timeouts no
		// longer those learn gives), and the replacement keeps the
		// lowered timeout and the use of the flows still translated to
		// the one it replaced.
		{name: "learn each segment", table: "table=1", match: "tp_src=" + strconv.Itoa(port), serverFIN: true, flows: []string{
			"priority=10,arp,actions=NORMAL",
			"priority=5,tcp,in_port=1,actions=learn(table=1,idle_timeout=60,fin_idle_timeout=1," +
				"eth_type=0x800,nw_proto=6,NXM_OF_IP_SRC[]=NXM_OF_IP_DST[],NXM_OF_IP_DST[]=NXM_OF_IP_SRC[]," +
				"NXM_OF_TCP_SRC[]=NXM_OF_TCP_DST[],NXM_OF_TCP_DST[]=NXM_OF_TCP_SRC[],output:NXM_OF_IN_PORT[]),output:2",
			"priority=5,tcp,in_port=2,actions=resubmit(,1)",
		}},
	}
}

// finRun is what one switch did in one case: the rule's dump-flows line
// (timings and counters cut) at each step, and whether it went.
type finRun struct {
	established, idle, afterFIN string
	expired                     bool
	expiredIn                   time.Duration
}

// tpPorts cuts TCP ports from a learned flow's line: the client's is
// ephemeral.
var tpPorts = regexp.MustCompile(`(tp_(?:src|dst)=)\d+`)

// ruleLine returns the line of dump-flows out in table whose text holds
// match, timings cut, or "" when there is none.
func ruleLine(out, table, match string) string {
	for _, l := range strings.Split(out, "\n") {
		if strings.Contains(l, match) && (table == "table=0" && !strings.Contains(l, "table=") || strings.Contains(l, table+",")) {
			return tpPorts.ReplaceAllString(flowTimes.ReplaceAllString(strings.TrimSpace(l), ""), "${1}N")
		}
	}
	return ""
}

// pump writes a byte to c every 100 ms until stop closes, and reports
// the first write error on done.
func pump(c net.Conn, stop <-chan struct{}) <-chan error {
	done := make(chan error, 1)
	go func() {
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				done <- nil
				return
			case <-tick.C:
				if _, err := c.Write([]byte{'x'}); err != nil {
					done <- err
					return
				}
			}
		}
	}()
	return done
}

func (b *finBed) steps(t *testing.T, c finCase, ofctl func(args ...string) (string, error)) finRun {
	t.Helper()
	must := func(args ...string) string {
		t.Helper()
		out, err := ofctl(args...)
		if err != nil {
			t.Fatalf("ovs-ofctl %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return out
	}
	must("del-flows")
	for _, f := range c.flows {
		must("add-flow", f)
	}
	dump := func() string { return ruleLine(must("dump-flows"), c.table, c.match) }
	var r finRun

	var l net.Listener
	if err := b.hosts[1].Do(func() (err error) {
		l, err = net.Listen("tcp", fmt.Sprintf("10.0.0.2:%d", b.port))
		return err
	}); err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	var client net.Conn
	if err := b.hosts[0].Do(func() (err error) {
		client, err = net.DialTimeout("tcp", fmt.Sprintf("10.0.0.2:%d", b.port), 10*time.Second)
		return err
	}); err != nil {
		t.Fatalf("connect: %v", err)
	}
	defer client.Close()
	server, err := l.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer server.Close()
	// Both sides read everything the other sends, until EOF.
	eof := [2]chan error{make(chan error, 1), make(chan error, 1)}
	for i, conn := range []net.Conn{client, server} {
		go func() { _, err := io.Copy(io.Discard, conn); eof[i] <- err }()
	}

	// Data both ways, then a pause: without a FIN the rule keeps its
	// timeouts and stays.
	stop := make(chan struct{})
	d1, d2 := pump(client, stop), pump(server, stop)
	time.Sleep(time.Second)
	r.established = dump()
	close(stop)
	if err := <-d1; err != nil {
		t.Fatal(err)
	}
	if err := <-d2; err != nil {
		t.Fatal(err)
	}
	time.Sleep(2500 * time.Millisecond)
	r.idle = dump()

	// The FIN through the rule: that side half-closes; the other keeps
	// sending and the ACKs keep the rule in use.
	closer, other := client, server
	if c.serverFIN {
		closer, other = server, client
	}
	if err := closer.(*net.TCPConn).CloseWrite(); err != nil {
		t.Fatal(err)
	}
	stop = make(chan struct{})
	d := pump(other, stop)
	time.Sleep(2 * time.Second)
	r.afterFIN = dump()
	close(stop)
	if err := <-d; err != nil {
		t.Fatalf("sending after the half-close: %v", err)
	}
	// Then the other side closes; the rule goes by its lowered timeout.
	other.Close()
	start := time.Now()
	for deadline := start.Add(8 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		if dump() == "" {
			r.expired, r.expiredIn = true, time.Since(start)
			break
		}
	}
	return r
}

// TestIntegrationFinTimeout: a real TCP connection between two
// namespaces through a rule with fin_timeout(idle_timeout=1), and through
// a flow learned with fin_idle_timeout=1. Before the FIN, dump-flows shows
// the rule's own timeouts and the rule stays through a pause; after the
// FIN (which the datapath flow forwards, the revalidator seeing it in the
// flow's TCP flags), it shows idle_timeout=1, and once the connection is
// quiet the rule goes. ovs-vswitchd 3.1 does the same in the same boot,
// and shows the same lines. In both cases the FIN goes by the installed
// datapath flow and never upcalls: with the revalidator's half
// (finRevalidate) taken out, govswitchd's rules keep their timeouts and
// this test fails.
func TestIntegrationFinTimeout(t *testing.T) {
	b := newFinBed(t)
	cases := finCases(b.port)

	o := startOVS(t)
	b.configure(func(args ...string) string { return o.must(t, "ovs-vsctl", args...) })
	ovsMgmt := filepath.Join(o.dir, b.name+".mgmt")
	var ovs []finRun
	for _, c := range cases {
		ovs = append(ovs, b.steps(t, c, func(args ...string) (string, error) { return ofctlAt(ovsMgmt, args...) }))
	}
	o.exitCleanup(t, b.name)

	g := startGovSwitch(t, b.rundir)
	b.configure(func(args ...string) string { t.Helper(); return g.vsctl(t, args...) })
	govMgmt := g.mgmt(t, b.name)
	var gov []finRun
	for _, c := range cases {
		gov = append(gov, b.steps(t, c, func(args ...string) (string, error) { return ofctlAt(govMgmt, args...) }))
	}

	for i, c := range cases {
		for _, sw := range []struct {
			name string
			r    finRun
		}{{"ovs-vswitchd", ovs[i]}, {"govswitchd", gov[i]}} {
			r := sw.r
			t.Logf("%s %s:\n established: %s\n idle:        %s\n after FIN:   %s\n expired %v after %v",
				c.name, sw.name, r.established, r.idle, r.afterFIN, r.expired, r.expiredIn.Round(100*time.Millisecond))
			if r.established == "" || r.idle == "" || strings.Contains(r.idle, "idle_timeout=1,") {
				t.Errorf("%s %s: before the FIN the rule was %q, then %q: want it there, not lowered", c.name, sw.name, r.established, r.idle)
			}
			if !strings.Contains(r.afterFIN, "idle_timeout=1,") {
				t.Errorf("%s %s: after the FIN the rule is %q, want idle_timeout=1", c.name, sw.name, r.afterFIN)
			}
			if !r.expired {
				t.Errorf("%s %s: the rule did not expire after the connection closed", c.name, sw.name)
			}
		}
		if ovs[i] != gov[i] {
			o, g := ovs[i], gov[i]
			o.expiredIn, g.expiredIn = 0, 0
			if o != g {
				t.Errorf("%s: govswitchd's rule differs from ovs-vswitchd's:\n ovs %+v\n gov %+v", c.name, o, g)
			}
		}
	}
}
