package vswitchd

import (
	"net"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/govswitch/govswitch/internal/testbed"
	"github.com/govswitch/govswitch/ovsdb/ovsdbtest"
)

// TestIntegrationQoSHTB: a linux-htb QoS row on two ports (OVS suite test
// 50's configuration) becomes the htb qdisc and classes ovs-vswitchd makes
// (tc shows the same rate, ceil and bursts), a custom root qdisc is
// replaced, a queue's max-rate holds TCP through the port to that rate,
// and clearing the QoS gives the device its default qdisc back.
func TestIntegrationQoSHTB(t *testing.T) {
	b := newBed(t)
	srv := ovsdbtest.Start(t)
	d, err := NewForOVSDB(Config{Datapath: "system", Rundir: b.rundir, Pidfile: "-", Handlers: 1}, nil, testLog{t})
	if err != nil {
		t.Fatal(err)
	}
	defer runOVSDB(t, d, srv.Remote, 15*time.Second)()
	must := func(args ...string) string {
		t.Helper()
		out, err := srv.Vsctl(20*time.Second, args...)
		if err != nil {
			t.Fatalf("ovs-vsctl %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return out
	}
	tc := func(args ...string) string {
		t.Helper()
		out, err := exec.Command("tc", args...).CombinedOutput()
		if err != nil {
			t.Fatalf("tc %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	must("add-br", b.name)
	must("add-port", b.name, b.v1)
	must("add-port", b.name, b.v2)
	if loss := b.ping(t, 3); loss != 0 {
		t.Fatalf("lost %d of 3 pings before QoS", loss)
	}

	rate := func() float64 { return tcpRate(t, b.h1, b.h2, "10.0.0.2:7300") }
	free := rate()

	tc("qdisc", "add", "dev", b.v2, "root", "noqueue")
	must("set", "port", b.v1, "qos=@qos", "--", "set", "port", b.v2, "qos=@qos", "--",
		"--id=@qos", "create", "qos", "type=linux-htb", "other-config:max-rate=3000000", "queues:0=@queue", "--",
		"--id=@queue", "create", "queue", "other_config:min-rate=2000000", "other_config:max-rate=3000000", "other_config:burst=3000000")
	for _, dev := range []string{b.v1, b.v2} {
		if q := tc("qdisc", "show", "dev", dev); !strings.Contains(q, "qdisc htb 1: root") || !strings.Contains(q, "default 0x1") {
			t.Errorf("%s qdiscs:\n%s", dev, q)
		}
		cls := tc("class", "show", "dev", dev)
		for _, want := range []string{"class htb 1:1 parent 1:fffe prio 0 rate 2Mbit ceil 3Mbit burst 375000b cburst 375000b",
			"class htb 1:fffe root rate 3Mbit ceil 3Mbit"} {
			if !strings.Contains(cls, want) {
				t.Errorf("%s classes lack %q:\n%s", dev, want, cls)
			}
		}
	}
	shaped := rate()
	t.Logf("TCP through %s: %.1f Mbit/s without QoS, %.2f Mbit/s with max-rate 3 Mbit/s", b.v2, free/1e6, shaped/1e6)
	if shaped > 3.6e6 || shaped < 1e6 {
		t.Errorf("TCP through the 3 Mbit/s queue at %.2f Mbit/s", shaped/1e6)
	}
	if free < 2*shaped {
		t.Errorf("without QoS only %.2f Mbit/s: the bed cannot show the limit", free/1e6)
	}

	// set_queue:1 sends h1's TCP through queue 1 (tc class 1:2) at its
	// own max-rate of 1 Mbit/s.
	must("--", "--id=@q1", "create", "queue", "other_config:max-rate=1000000", "--",
		"set", "qos", must("get", "port", b.v2, "qos"), "queues:1=@q1")
	if cls := tc("class", "show", "dev", b.v2); !strings.Contains(cls, "class htb 1:2 parent 1:fffe") {
		t.Errorf("no class 1:2 for queue 1:\n%s", cls)
	}
	b.ofctl(t, "add-flow", "priority=10,tcp,in_port=1,actions=set_queue:1,NORMAL")
	q1 := rate()
	flows, _ := exec.Command("ovs-dpctl", "dump-flows", "system@ovs-system").CombinedOutput()
	t.Logf("TCP through queue 1: %.2f Mbit/s; datapath flows:\n%s", q1/1e6, flows)
	if q1 > 1.25e6 || q1 < 0.3e6 {
		t.Errorf("TCP through the 1 Mbit/s queue 1 at %.2f Mbit/s", q1/1e6)
	}
	if !strings.Contains(string(flows), "set(skb_priority(0x10002))") {
		t.Errorf("no datapath flow sets skb_priority 1:2")
	}
	b.ofctl(t, "del-flows", "tcp")

	// A type govswitchd does not run is refused, and the port keeps none.
	out, _ := srv.Vsctl(20*time.Second, "set", "port", b.v1, "qos=@q", "--", "--id=@q", "create", "qos", "type=linux-other")
	t.Logf("linux-other: %s", out)
	if q := tc("qdisc", "show", "dev", b.v1); strings.Contains(q, "htb") {
		t.Errorf("%s keeps htb under a refused linux-other QoS:\n%s", b.v1, q)
	}
	must("clear", "port", b.v2, "qos")
	if q := tc("qdisc", "show", "dev", b.v2); strings.Contains(q, "htb") {
		t.Errorf("%s keeps htb after its QoS is cleared:\n%s", b.v2, q)
	}
	if loss := b.ping(t, 3); loss != 0 {
		t.Errorf("lost %d of 3 pings after QoS", loss)
	}

	// Ingress policing on v2 holds what h2 sends into the bridge to the
	// rate: TCP backs off to below it.
	must("set", "interface", b.v2, "ingress_policing_rate=2000", "ingress_policing_burst=200")
	if f := tc("filter", "show", "dev", b.v2, "ingress"); !strings.Contains(f, "matchall") || !strings.Contains(f, "police") ||
		!strings.Contains(f, "rate 2Mbit") {
		t.Errorf("%s ingress filters:\n%s", b.v2, f)
	}
	policed := tcpRate(t, b.h2, b.h1, "10.0.0.1:7301")
	t.Logf("TCP into the bridge through %s policed at 2000 kbit/s: %.2f Mbit/s", b.v2, policed/1e6)
	if policed > 2.4e6 || policed < 0.1e6 {
		t.Errorf("TCP through a 2 Mbit/s policer at %.2f Mbit/s", policed/1e6)
	}
	must("set", "interface", b.v2, "ingress_policing_rate=0")
	if q := tc("qdisc", "show", "dev", b.v2); strings.Contains(q, "ingress") {
		t.Errorf("%s keeps its ingress qdisc with policing off:\n%s", b.v2, q)
	}
	if loss := b.ping(t, 3); loss != 0 {
		t.Errorf("lost %d of 3 pings after policing", loss)
	}
}

// tcpRate sends TCP from one host to a listener at addr on another for
// 4.5 seconds and returns the goodput the listener saw from 1.5 s to 3.5 s
// after the first byte, in bit/s: past a shaper's burst (3 Mbit, a second
// at 3 Mbit/s) and before the socket buffers drain.
func tcpRate(t *testing.T, from, to *testbed.Netns, addr string) float64 {
	t.Helper()
	var ln net.Listener
	if err := to.Do(func() (err error) { ln, err = net.Listen("tcp", addr); return }); err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	got := make(chan float64, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			got <- 0
			return
		}
		defer c.Close()
		buf := make([]byte, 64<<10)
		var first, t1 time.Time
		var total, at1 int64
		c.SetReadDeadline(time.Now().Add(20 * time.Second))
		for {
			n, err := c.Read(buf)
			now := time.Now()
			if first.IsZero() && n > 0 {
				first = now
			}
			el := now.Sub(first)
			if err != nil || el >= 3500*time.Millisecond {
				// The window: from 1.5 s (or the first byte, if the
				// transfer ended sooner) to now.
				if t1.IsZero() {
					t1, at1 = first, 0
				}
				if w := now.Sub(t1); w > 500*time.Millisecond {
					got <- float64(total-at1) * 8 / w.Seconds()
				} else {
					got <- 0
				}
				return
			}
			if el >= 1500*time.Millisecond && t1.IsZero() {
				t1, at1 = now, total
			}
			total += int64(n)
		}
	}()
	var c net.Conn
	if err := from.Do(func() (err error) { c, err = net.DialTimeout("tcp", addr, 3*time.Second); return }); err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	buf := make([]byte, 64<<10)
	for start := time.Now(); time.Since(start) < 4500*time.Millisecond; {
		c.SetWriteDeadline(time.Now().Add(500 * time.Millisecond))
		c.Write(buf)
	}
	return <-got
}
