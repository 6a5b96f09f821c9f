package bench

import (
	"context"
	"fmt"
	"net"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestParseEndpoint(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		needIP  bool
		defPort uint16
		want    string
		wantErr bool
	}{
		{"ip default port", "10.0.0.2", true, DefaultPort, "10.0.0.2:6630", false},
		{"ip port", "10.0.0.2:80", true, DefaultPort, "10.0.0.2:80", false},
		{"ip range", "10.0.0.2:1000-1009", true, DefaultPort, "10.0.0.2:1000-1009", false},
		{"ports only", ":2000-2010", false, 0, ":2000-2010", false},
		{"ip only no default", "10.0.0.1", false, 0, "10.0.0.1", false},
		{"ipv6", "[fd00::2]:99", true, DefaultPort, "[fd00::2]:99", false},
		{"unspecified", "0.0.0.0:80", true, DefaultPort, "", true},
		{"missing ip", ":80", true, DefaultPort, "", true},
		{"reversed range", "10.0.0.2:9-1", true, 0, "", true},
		{"port zero", "10.0.0.2:0", true, 0, "", true},
		{"port too big", "10.0.0.2:70000", true, 0, "", true},
		{"junk port", "10.0.0.2:http", true, 0, "", true},
		{"localhost resolves", "localhost:5", true, 0, "127.0.0.1:5", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, err := ParseEndpoint(tt.in, tt.needIP, tt.defPort)
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, wantErr %v", err, tt.wantErr)
			}
			if err == nil && e.String() != tt.want {
				t.Errorf("got %s, want %s", e, tt.want)
			}
		})
	}
}

func TestPortCycle(t *testing.T) {
	run := func(local, remote PortRange, order Order, n int) string {
		c := newPortCycle(local, remote, order)
		var s []string
		for i := 0; i < n; i++ {
			s = append(s, fmt.Sprintf("%d>%d", c.lp, c.rp))
			c.next()
		}
		return strings.Join(s, " ")
	}
	tests := []struct {
		name          string
		local, remote PortRange
		order         Order
		want          string
	}{
		{"ovs: local first, remote on wrap", PortRange{10, 12}, PortRange{80, 81}, OrderOVS,
			"10>80 11>80 12>80 10>81 11>81 12>81 10>80"},
		{"ovs: no local ports rotates remote every attempt", PortRange{}, PortRange{80, 82}, OrderOVS,
			"0>80 0>81 0>82 0>80"},
		{"both: each attempt moves both", PortRange{10, 12}, PortRange{80, 81}, OrderBoth,
			"10>80 11>81 12>80 10>81 11>80"},
		{"single remote port stays", PortRange{}, PortRange{6630, 6630}, OrderOVS,
			"0>6630 0>6630"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := run(tt.local, tt.remote, tt.order, len(strings.Fields(tt.want))); got != tt.want {
				t.Errorf("got  %s\nwant %s", got, tt.want)
			}
		})
	}
}

func TestParseArgs(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		check   func(Invocation) bool
		wantErr string
	}{
		{"ovs-benchmark style", []string{"-r", "10.0.0.2:1-10", "-s", "50", "-T", "5", "rate"},
			func(i Invocation) bool {
				return i.Command == "rate" && i.Options.Sockets == 50 && i.Options.Timeout == 5*time.Second &&
					i.Options.Remote.Ports == PortRange{1, 10}
			}, ""},
		{"attached short values, options after command", []string{"rate", "-r10.0.0.2", "-s7", "-c", "250.5"},
			func(i Invocation) bool {
				return i.Options.Sockets == 7 && i.Options.MaxRate == 250.5 && i.Options.Remote.Ports.Min == DefaultPort
			}, ""},
		{"long options", []string{"--remote=10.0.0.2:9", "--local", ":2000-2999", "--order=both", "--json", "latency", "--batches=3"},
			func(i Invocation) bool {
				return i.Command == "latency" && i.Options.Batches == 3 && i.JSON && i.Options.Order == OrderBoth &&
					i.Options.Local.Ports == PortRange{2000, 2999} && i.Options.Local.IP == nil
			}, ""},
		{"listen default port", []string{"listen"},
			func(i Invocation) bool { return i.Options.Local.Ports.Min == 0 }, ""},
		{"listen with local", []string{"-l", "127.0.0.1:7000-7001", "listen"},
			func(i Invocation) bool { return i.Options.Local.Ports == PortRange{7000, 7001} }, ""},
		{"help", []string{"--help"}, func(i Invocation) bool { return i.Help }, ""},
		{"rate needs remote", []string{"rate"}, nil, "-r (--remote) is required"},
		{"sockets range", []string{"-r", "10.0.0.1", "-s", "70000", "rate"}, nil, "between 1 and 65535"},
		{"zero timeout", []string{"-r", "10.0.0.1", "-T", "0", "rate"}, nil, "must not be zero"},
		{"bad rate", []string{"-r", "10.0.0.1", "-c", "0", "rate"}, nil, "must be positive"},
		{"negative batches", []string{"-r", "10.0.0.1", "-b", "-1", "latency"}, nil, "must not be negative"},
		{"unknown command", []string{"storm"}, nil, "unknown command"},
		{"no command", nil, nil, "missing command"},
		{"unknown option", []string{"-x", "rate"}, nil, "unknown option -x"},
		{"missing value", []string{"rate", "-r"}, nil, "needs a value"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			inv, err := ParseArgs(tt.args)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want it to contain %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !tt.check(inv) {
				t.Errorf("parsed %+v", inv)
			}
		})
	}
}

// freePorts returns n consecutive free TCP ports on 127.0.0.1.
func freePorts(t *testing.T, n int) PortRange {
	t.Helper()
	for base := 20000 + time.Now().Nanosecond()%20000; base < 60000; base += n {
		ok := true
		var ls []net.Listener
		for p := base; p < base+n; p++ {
			l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", p))
			if err != nil {
				ok = false
				break
			}
			ls = append(ls, l)
		}
		for _, l := range ls {
			l.Close()
		}
		if ok {
			return PortRange{uint16(base), uint16(base + n - 1)}
		}
	}
	t.Fatal("no free ports")
	return PortRange{}
}

// freePortBelowEphemeral returns a free port of 127.0.0.1 below the
// kernel's ephemeral port range, which a client socket never binds by
// itself.
func freePortBelowEphemeral(t *testing.T) PortRange {
	t.Helper()
	low := 32768
	if b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range"); err == nil {
		if f := strings.Fields(string(b)); len(f) == 2 {
			if n, err := strconv.Atoi(f[0]); err == nil {
				low = n
			}
		}
	}
	for p := low - 1 - time.Now().Nanosecond()%1000; p > 1024; p-- {
		l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", p))
		if err == nil {
			l.Close()
			return PortRange{uint16(p), uint16(p)}
		}
	}
	t.Fatal("no free port below the ephemeral range")
	return PortRange{}
}

// serve starts a listener on ports of 127.0.0.1 and stops it at cleanup:
// cancel, wait for Serve to return, then close.
func serve(t *testing.T, ports PortRange) *Listener {
	t.Helper()
	l, err := Listen(Endpoint{IP: net.IPv4(127, 0, 0, 1).To4(), Ports: ports})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- l.Serve(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("serve: %v", err)
		}
		l.Close()
	})
	return l
}

var rateLine = regexp.MustCompile(`^\d+\.\d{3} s elapsed, \d+ OK, \d+ failed, avg \d+\.\d/s$`)

// TestRateAgainstListener runs rate against our own listener on loopback
// for about a second: every attempt connects, and the output has
// ovs-benchmark's line shape.
func TestRateAgainstListener(t *testing.T) {
	ports := freePorts(t, 4)
	l := serve(t, ports)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	var out strings.Builder
	o := &Options{Remote: Endpoint{IP: net.IPv4(127, 0, 0, 1).To4(), Ports: ports}, Sockets: 20,
		Timeout: 1 * time.Second, MaxRate: 2000}
	res, err := RunRate(ctx, o, &out)
	if err != nil {
		t.Fatal(err)
	}
	if res.Completed == 0 || res.Failed != 0 {
		t.Errorf("completed %d, failed %d; want some and none", res.Completed, res.Failed)
	}
	// -c caps the rate: 2000/s over ~2 s can't exceed ~4000 attempts.
	if res.Rate() > 2000*1.2 {
		t.Errorf("rate %.1f/s exceeds -c 2000", res.Rate())
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) < 1 || res.Elapsed < o.Timeout {
		t.Errorf("want lines until past -T 1 s, got %q (elapsed %v)", out.String(), res.Elapsed)
	}
	for _, ln := range lines {
		if !rateLine.MatchString(ln) {
			t.Errorf("line %q is not ovs-benchmark's shape", ln)
		}
	}
	t.Cleanup(func() {
		if l.Accepted.Load() == 0 {
			t.Errorf("listener accepted nothing")
		}
	})
}

// TestRateRefused counts attempts to a port with no listener as failures
// (the kernel answers with RST), and leaks no sockets.
func TestRateRefused(t *testing.T) {
	// A port outside the ephemeral range: connecting to a port with no
	// listener from a local port that happens to be the same one is a TCP
	// simultaneous open with itself, which succeeds (about 1 run in 50
	// with 500 attempts in the ephemeral range).
	ports := freePortBelowEphemeral(t)
	o := &Options{Remote: Endpoint{IP: net.IPv4(127, 0, 0, 1).To4(), Ports: ports}, Sockets: 10, Timeout: time.Second, MaxRate: 500}
	res, err := RunRate(context.Background(), o, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.Completed == 0 || res.Failed != res.Completed {
		t.Errorf("completed %d failed %d: every attempt should fail", res.Completed, res.Failed)
	}
}

func TestLatencyChart(t *testing.T) {
	ports := freePorts(t, 1)
	serve(t, ports)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var out strings.Builder
	o := &Options{Remote: Endpoint{IP: net.IPv4(127, 0, 0, 1).To4(), Ports: ports}, Sockets: 10, Batches: 3}
	res, err := RunLatency(ctx, o, &out)
	if err != nil {
		t.Fatal(err)
	}
	if res.Attempts != 30 || res.Errors != 0 {
		t.Errorf("attempts %d errors %d", res.Attempts, res.Errors)
	}
	text := out.String()
	if n := strings.Count(text, "."); n != 30 {
		t.Errorf("%d marks, want 30:\n%s", n, text)
	}
	if !regexp.MustCompile(`(?m)^ {0,4}\d+ \.+$`).MatchString(text) {
		t.Errorf("no bar rows in:\n%s", text)
	}
	if !regexp.MustCompile(`(?m)^min \d+ ms, max \d+ ms, avg \d+ ms$`).MatchString(text) {
		t.Errorf("no summary line in:\n%s", text)
	}
}

// TestListenHonoursIP: ovs-benchmark bound INADDR_ANY whatever -l said.
func TestListenHonoursIP(t *testing.T) {
	ports := freePorts(t, 1)
	l, err := Listen(Endpoint{IP: net.IPv4(127, 0, 0, 2).To4(), Ports: ports})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if c, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", ports.Min)); err == nil {
		c.Close()
		t.Errorf("listener bound to 127.0.0.2 accepted on 127.0.0.1")
	}
	c, err := net.Dial("tcp", fmt.Sprintf("127.0.0.2:%d", ports.Min))
	if err != nil {
		t.Errorf("listener not reachable on its own IP: %v", err)
	} else {
		c.Close()
	}
}

func TestRunJSON(t *testing.T) {
	ports := freePorts(t, 1)
	inv, err := ParseArgs([]string{"-r", fmt.Sprintf("127.0.0.1:%d", ports.Min), "-s", "5", "-b", "1", "--json", "latency"})
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	if err := Run(context.Background(), inv, &out); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), `"command":"latency"`) || !strings.Contains(out.String(), `"failed":5`) {
		t.Errorf("json summary missing or wrong: %s", out.String())
	}
}
