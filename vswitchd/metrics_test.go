package vswitchd

import (
	"bytes"
	"io"
	"maps"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/govswitch/govswitch/ofproto"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
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

// parseMetrics parses an exposition with the Prometheus text parser, so
// the tests hold our writer to what scrapers accept.
func parseMetrics(t *testing.T, body []byte) map[string]*dto.MetricFamily {
	t.Helper()
	var p expfmt.TextParser
	fams, err := p.TextToMetricFamilies(bytes.NewReader(body))
	if err != nil {
		t.Fatalf("exposition does not parse: %v\n%s", err, body)
	}
	return fams
}

// sampleValue returns the value of the sample of fam whose labels are
// exactly labels, and whether there is one.
func sampleValue(fam *dto.MetricFamily, labels map[string]string) (float64, bool) {
	for _, m := range fam.GetMetric() {
		got := map[string]string{}
		for _, lp := range m.GetLabel() {
			got[lp.GetName()] = lp.GetValue()
		}
		if !maps.Equal(got, labels) {
			continue
		}
		switch fam.GetType() {
		case dto.MetricType_COUNTER:
			return m.GetCounter().GetValue(), true
		case dto.MetricType_GAUGE:
			return m.GetGauge().GetValue(), true
		}
	}
	return 0, false
}

// TestMetricsExposition: a scrape parses as the Prometheus text format,
// is served with its content type, and carries every family with its
// type, help, labels and the values the bridge reports.
func TestMetricsExposition(t *testing.T) {
	s := startSwitch(t, nil, t.TempDir(), "--metrics", "127.0.0.1:0", "--disable-megaflows")
	defer s.d.Stop()
	for i := 0; i < 3; i++ {
		s.p1.Send(tcpFrame(macA, macB, uint16(4000+i), 80))
		s.p2.Recv(2 * time.Second)
	}
	b := s.d.Bridge("br0")
	waitFor(t, func() bool { return b.Udpif.Stats().FlowsInstalled >= 3 })

	// The revalidator keeps running: a scrape is compared with the
	// counters read on both sides of it, once they agree (no pass ran
	// between).
	var body []byte
	var resp *http.Response
	var st ofproto.UpcallStats
	for try := 0; ; try++ {
		before := b.Udpif.Stats()
		var err error
		resp, err = http.Get("http://" + s.d.MetricsAddr() + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		body, err = io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		st = b.Udpif.Stats()
		if st == before || try == 50 {
			break
		}
	}
	if ct := resp.Header.Get("Content-Type"); ct != textContentType {
		t.Errorf("Content-Type %q, want %q", ct, textContentType)
	}
	dps, err := b.DP.Stats()
	if err != nil {
		t.Fatal(err)
	}
	fams := parseMetrics(t, body)
	if len(fams) != len(metricFamilies) {
		t.Errorf("%d families served, want %d:\n%s", len(fams), len(metricFamilies), body)
	}
	br := func(kv ...string) map[string]string {
		m := map[string]string{"bridge": "br0"}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return m
	}
	for _, tc := range []struct {
		name   string
		typ    dto.MetricType
		help   string
		labels map[string]string
		want   float64
	}{
		{"govswitch_upcalls_total", dto.MetricType_COUNTER,
			"Upcalls received from the datapath, by kind (miss or action).", br("kind", "miss"), float64(st.Misses)},
		{"govswitch_upcalls_total", dto.MetricType_COUNTER, "", br("kind", "action"), float64(st.ActionUpcalls)},
		{"govswitch_upcalls_lost_total", dto.MetricType_COUNTER,
			"Upcalls the datapath could not queue to a handler.", br(), float64(st.Lost)},
		{"govswitch_flow_setups_total", dto.MetricType_COUNTER,
			"Datapath flows installed by the upcall handlers.", br(), float64(st.FlowsInstalled)},
		{"govswitch_flow_setup_failures_total", dto.MetricType_COUNTER,
			"Datapath flow installs that failed.", br(), float64(st.PutFailed)},
		{"govswitch_executes_total", dto.MetricType_COUNTER,
			"Packets executed by the upcall handlers.", br(), float64(st.Executes)},
		{"govswitch_flow_setups_skipped_total", dto.MetricType_COUNTER,
			"Misses handled without installing a flow, by reason (duplicate, flow_limit, ukey_full, governor).",
			br("reason", "duplicate"), float64(st.Duplicates)},
		{"govswitch_flow_setups_skipped_total", dto.MetricType_COUNTER, "", br("reason", "flow_limit"), float64(st.LimitHits)},
		{"govswitch_flow_setups_skipped_total", dto.MetricType_COUNTER, "", br("reason", "ukey_full"), float64(st.UkeyFull)},
		{"govswitch_flow_setups_skipped_total", dto.MetricType_COUNTER, "", br("reason", "governor"), float64(st.GovernorExecutes)},
		{"govswitch_governor_decisions_total", dto.MetricType_COUNTER,
			"Flow-setup governor decisions, by decision (install or execute).", br("decision", "install"), float64(st.GovernorInstalls)},
		{"govswitch_governor_decisions_total", dto.MetricType_COUNTER, "", br("decision", "execute"), float64(st.GovernorExecutes)},
		{"govswitch_datapath_flows", dto.MetricType_GAUGE,
			"Datapath flows at the last revalidator dump.", br(), float64(st.DatapathFlows)},
		{"govswitch_flow_limit", dto.MetricType_GAUGE, "The dynamic datapath flow limit.", br(), float64(st.FlowLimit)},
		{"govswitch_handler_batches_total", dto.MetricType_COUNTER,
			"Handler wake-ups that read at least one upcall.", br(), float64(st.Batches)},
		{"govswitch_handler_batch_size_avg", dto.MetricType_GAUGE,
			"Average upcalls read per handler wake-up since start.", br(), float64(st.AvgBatchTimes8) / 8},
		{"govswitch_revalidator_dumps_total", dto.MetricType_COUNTER, "Revalidator passes.", br(), float64(st.Dumps)},
		{"govswitch_revalidator_dump_seconds", dto.MetricType_GAUGE,
			"Duration of the last revalidator pass.", br(), st.DumpDuration.Seconds()},
		{"govswitch_revalidator_flows_deleted_total", dto.MetricType_COUNTER,
			"Datapath flows the revalidator deleted (idle, limit, stale or changed).", br(), float64(st.FlowsDeleted)},
		{"govswitch_datapath_lookups_total", dto.MetricType_COUNTER,
			"Datapath lookups, by result (hit, missed, lost), as the datapath counts them.", br("result", "hit"), float64(dps.Hit)},
		{"govswitch_datapath_lookups_total", dto.MetricType_COUNTER, "", br("result", "missed"), float64(dps.Missed)},
		{"govswitch_datapath_lookups_total", dto.MetricType_COUNTER, "", br("result", "lost"), float64(dps.Lost)},
		{"govswitch_openflow_rules", dto.MetricType_GAUGE, "OpenFlow rules in all tables.", br(), float64(b.Tables.Len())},
	} {
		fam := fams[tc.name]
		if fam == nil {
			t.Errorf("%s: not served", tc.name)
			continue
		}
		if fam.GetType() != tc.typ {
			t.Errorf("%s: type %v, want %v", tc.name, fam.GetType(), tc.typ)
		}
		if tc.help != "" && fam.GetHelp() != tc.help {
			t.Errorf("%s: help %q, want %q", tc.name, fam.GetHelp(), tc.help)
		}
		got, ok := sampleValue(fam, tc.labels)
		if !ok {
			t.Errorf("%s%v: no such sample", tc.name, tc.labels)
		} else if got != tc.want {
			t.Errorf("%s%v = %v, want %v", tc.name, tc.labels, got, tc.want)
		}
	}
	if st.Misses < 3 || st.FlowsInstalled < 3 {
		t.Errorf("traffic did not reach the counters: %+v", st)
	}
}

// TestMetricsTextEscaping: label values and help text with the
// characters the format escapes parse back to themselves, samples of a
// family stay together across bridges, and a family with no samples is
// left out.
func TestMetricsTextEscaping(t *testing.T) {
	fams := []metricFamily{
		{"x_total", "Help with a back\\slash,\na newline and \"quotes\".", counterMetric, []string{"bridge", "kind"},
			func(b *bridgeSample, add addFunc) {
				add(float64(b.s.Misses), "m\"i\\s\ns")
				add(1<<53, "big")
			}},
		{"y", "Never sampled.", gaugeMetric, []string{"bridge"}, func(*bridgeSample, addFunc) {}},
		{"z", "A gauge.", gaugeMetric, []string{"bridge"}, func(b *bridgeSample, add addFunc) {
			add(b.s.DumpDuration.Seconds())
		}},
	}
	bridges := []bridgeSample{
		{name: `br"1\` + "\n", s: ofproto.UpcallStats{Misses: 7, DumpDuration: 1500 * time.Microsecond}},
		{name: "br0", s: ofproto.UpcallStats{Misses: 1e6}},
	}
	body := writeMetrics(nil, fams, bridges)
	got := parseMetrics(t, body)
	if len(got) != 2 || got["y"] != nil {
		t.Errorf("families %v, want x_total and z only:\n%s", slices.Collect(maps.Keys(got)), body)
	}
	if h := got["x_total"].GetHelp(); h != fams[0].help {
		t.Errorf("help %q, want %q", h, fams[0].help)
	}
	for _, tc := range []struct {
		name   string
		fam    string
		labels map[string]string
		want   float64
	}{
		{"escaped bridge and kind", "x_total", map[string]string{"bridge": bridges[0].name, "kind": "m\"i\\s\ns"}, 7},
		{"plain bridge", "x_total", map[string]string{"bridge": "br0", "kind": "m\"i\\s\ns"}, 1e6},
		{"2^53 exactly", "x_total", map[string]string{"bridge": "br0", "kind": "big"}, 1 << 53},
		{"fraction", "z", map[string]string{"bridge": bridges[0].name}, 0.0015},
		{"zero", "z", map[string]string{"bridge": "br0"}, 0},
	} {
		v, ok := sampleValue(got[tc.fam], tc.labels)
		if !ok || v != tc.want {
			t.Errorf("%s: %v (found %v), want %v\n%s", tc.name, v, ok, tc.want, body)
		}
	}
	// The text parser rejects a family split by another; check the
	// order directly too: samples sorted by label values, then z.
	lines := strings.Split(strings.TrimSpace(string(body)), "\n")
	var names []string
	for _, l := range lines {
		if !strings.HasPrefix(l, "#") {
			names = append(names, l[:strings.IndexAny(l, "{ ")])
		}
	}
	if want := []string{"x_total", "x_total", "x_total", "x_total", "z", "z"}; !slices.Equal(names, want) {
		t.Errorf("sample order %v, want %v:\n%s", names, want, body)
	}
}

// TestMetricsMethod: the endpoint answers GET and HEAD only.
func TestMetricsMethod(t *testing.T) {
	s := startSwitch(t, nil, t.TempDir(), "--metrics", "127.0.0.1:0")
	defer s.d.Stop()
	resp, err := http.Post("http://"+s.d.MetricsAddr()+"/metrics", "text/plain", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("POST: %s, want 405", resp.Status)
	}
}
