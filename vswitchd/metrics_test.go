package vswitchd

import (
	"io"
	"net/http"
	"regexp"
	"strconv"
	"testing"
	"time"
)

// scrape returns the value of one sample line of the metrics endpoint.
func scrape(t *testing.T, addr, sample string) float64 {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	m := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(sample) + ` (\S+)$`).FindSubmatch(body)
	if m == nil {
		t.Fatalf("no %s in:\n%s", sample, body)
	}
	v, _ := strconv.ParseFloat(string(m[1]), 64)
	return v
}

// TestMetricsMoveWithTraffic: the opt-in endpoint serves counters that
// follow traffic through the switch.
func TestMetricsMoveWithTraffic(t *testing.T) {
	s := startSwitch(t, nil, t.TempDir(), "--metrics", "127.0.0.1:0", "--disable-megaflows")
	defer s.d.Stop()
	addr := s.d.MetricsAddr()
	if addr == "" {
		t.Fatal("metrics endpoint not started")
	}
	const (
		misses = `govswitch_upcalls_total{bridge="br0",kind="miss"}`
		setups = `govswitch_flow_setups_total{bridge="br0"}`
		hits   = `govswitch_datapath_lookups_total{bridge="br0",result="hit"}`
	)
	m0, s0 := scrape(t, addr, misses), scrape(t, addr, setups)
	for i := 0; i < 5; i++ {
		f := tcpFrame(macA, macB, uint16(3000+i), 80)
		s.p1.Send(f)
		s.p2.Recv(2 * time.Second)
	}
	b := s.d.Bridge("br0")
	waitFor(t, func() bool { return b.Udpif.Stats().FlowsInstalled >= 5 })
	// A repeat of an installed flow is a datapath hit, not an upcall.
	f := tcpFrame(macA, macB, 3000, 80)
	s.p1.Send(f)
	s.p2.Recv(2 * time.Second)
	if got := scrape(t, addr, misses) - m0; got != 5 {
		t.Errorf("misses moved by %v, want 5", got)
	}
	if got := scrape(t, addr, setups) - s0; got != 5 {
		t.Errorf("flow setups moved by %v, want 5", got)
	}
	if got := scrape(t, addr, hits); got < 1 {
		t.Errorf("datapath hits %v, want >= 1", got)
	}
}

// TestMetricsOffByDefault: no --metrics, no listener.
func TestMetricsOffByDefault(t *testing.T) {
	s := startSwitch(t, nil, t.TempDir())
	defer s.d.Stop()
	if s.d.MetricsAddr() != "" {
		t.Errorf("metrics served without --metrics at %s", s.d.MetricsAddr())
	}
}
