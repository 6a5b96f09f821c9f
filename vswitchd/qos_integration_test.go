package vswitchd

import (
	"net"
	"os/exec"
	"strings"
	"testing"
	"time"

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

	// rate sends TCP from h1 to h2 (out of the bridge through v2) for
	// 4.5 seconds and returns the goodput h2 saw from 1.5 s to 3.5 s
	// after the first byte, in bit/s: past the htb's burst (3 Mbit, a
	// second at the ceiling) and before the socket buffers drain.
	rate := func() float64 {
		t.Helper()
		var ln net.Listener
		if err := b.h2.Do(func() (err error) { ln, err = net.Listen("tcp", "10.0.0.2:7300"); return }); err != nil {
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
			var first time.Time
			var total, at1 int64
			c.SetReadDeadline(time.Now().Add(8 * time.Second))
			for {
				n, err := c.Read(buf)
				if err != nil {
					got <- 0
					return
				}
				if first.IsZero() {
					first = time.Now()
				}
				el := time.Since(first)
				if el >= 1500*time.Millisecond && at1 == 0 {
					at1 = total
				}
				if el >= 3500*time.Millisecond {
					got <- float64(total-at1) * 8 / 2
					return
				}
				total += int64(n)
			}
		}()
		var c net.Conn
		if err := b.h1.Do(func() (err error) { c, err = net.DialTimeout("tcp", "10.0.0.2:7300", 3*time.Second); return }); err != nil {
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

	// A type govswitchd does not run is refused, and the port keeps none.
	out, _ := srv.Vsctl(20*time.Second, "set", "port", b.v1, "qos=@q", "--", "--id=@q", "create", "qos", "type=linux-hfsc")
	t.Logf("linux-hfsc: %s", out)
	if q := tc("qdisc", "show", "dev", b.v1); strings.Contains(q, "htb") {
		t.Errorf("%s keeps htb under a refused linux-hfsc QoS:\n%s", b.v1, q)
	}
	must("clear", "port", b.v2, "qos")
	if q := tc("qdisc", "show", "dev", b.v2); strings.Contains(q, "htb") {
		t.Errorf("%s keeps htb after its QoS is cleared:\n%s", b.v2, q)
	}
	if loss := b.ping(t, 3); loss != 0 {
		t.Errorf("lost %d of 3 pings after QoS", loss)
	}
}
