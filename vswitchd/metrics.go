package vswitchd

import (
	"fmt"
	"net"

	"github.com/govswitch/govswitch/ofproto"
)

// The metrics are read from the switch's own counters when scraped, so
// the upcall path pays nothing for them. They are written in the
// Prometheus text format (metrics_text.go) rather than through the
// Prometheus client library: the library and the protobuf runtime it
// pulls in cost the daemon megabytes of resident memory at start, for
// sixteen families of plain counters and gauges.

// bridgeSample is what one scrape reads from one bridge: the counters
// are read once, so every family of the scrape sees the same snapshot.
type bridgeSample struct {
	name  string
	s     ofproto.UpcallStats
	rules int
	dp    *datapathLookups // nil when the datapath could not report
}

type datapathLookups struct{ hit, missed, lost uint64 }

// metricFamilies lists every family served, in exposition order (by
// name). A family whose sample function adds nothing for any bridge is
// left out of the scrape entirely.
var metricFamilies = []metricFamily{
	{"govswitch_datapath_flows", "Datapath flows at the last revalidator dump.",
		gaugeMetric, []string{"bridge"}, func(b *bridgeSample, add addFunc) {
			add(float64(b.s.DatapathFlows))
		}},
	{"govswitch_datapath_lookups_total", "Datapath lookups, by result (hit, missed, lost), as the datapath counts them.",
		counterMetric, []string{"bridge", "result"}, func(b *bridgeSample, add addFunc) {
			if b.dp != nil {
				add(float64(b.dp.hit), "hit")
				add(float64(b.dp.lost), "lost")
				add(float64(b.dp.missed), "missed")
			}
		}},
	{"govswitch_executes_total", "Packets executed by the upcall handlers.",
		counterMetric, []string{"bridge"}, func(b *bridgeSample, add addFunc) {
			add(float64(b.s.Executes))
		}},
	{"govswitch_flow_limit", "The dynamic datapath flow limit.",
		gaugeMetric, []string{"bridge"}, func(b *bridgeSample, add addFunc) {
			add(float64(b.s.FlowLimit))
		}},
	{"govswitch_flow_setup_failures_total", "Datapath flow installs that failed.",
		counterMetric, []string{"bridge"}, func(b *bridgeSample, add addFunc) {
			add(float64(b.s.PutFailed))
		}},
	{"govswitch_flow_setups_skipped_total",
		"Misses handled without installing a flow, by reason (duplicate, flow_limit, ukey_full, governor).",
		counterMetric, []string{"bridge", "reason"}, func(b *bridgeSample, add addFunc) {
			add(float64(b.s.Duplicates), "duplicate")
			add(float64(b.s.LimitHits), "flow_limit")
			add(float64(b.s.GovernorExecutes), "governor")
			add(float64(b.s.UkeyFull), "ukey_full")
		}},
	{"govswitch_flow_setups_total", "Datapath flows installed by the upcall handlers.",
		counterMetric, []string{"bridge"}, func(b *bridgeSample, add addFunc) {
			add(float64(b.s.FlowsInstalled))
		}},
	{"govswitch_governor_decisions_total", "Flow-setup governor decisions, by decision (install or execute).",
		counterMetric, []string{"bridge", "decision"}, func(b *bridgeSample, add addFunc) {
			add(float64(b.s.GovernorExecutes), "execute")
			add(float64(b.s.GovernorInstalls), "install")
		}},
	{"govswitch_handler_batch_size_avg", "Average upcalls read per handler wake-up since start.",
		gaugeMetric, []string{"bridge"}, func(b *bridgeSample, add addFunc) {
			add(float64(b.s.AvgBatchTimes8) / 8)
		}},
	{"govswitch_handler_batches_total", "Handler wake-ups that read at least one upcall.",
		counterMetric, []string{"bridge"}, func(b *bridgeSample, add addFunc) {
			add(float64(b.s.Batches))
		}},
	{"govswitch_openflow_rules", "OpenFlow rules in all tables.",
		gaugeMetric, []string{"bridge"}, func(b *bridgeSample, add addFunc) {
			add(float64(b.rules))
		}},
	{"govswitch_revalidator_dump_seconds", "Duration of the last revalidator pass.",
		gaugeMetric, []string{"bridge"}, func(b *bridgeSample, add addFunc) {
			add(b.s.DumpDuration.Seconds())
		}},
	{"govswitch_revalidator_dumps_total", "Revalidator passes.",
		counterMetric, []string{"bridge"}, func(b *bridgeSample, add addFunc) {
			add(float64(b.s.Dumps))
		}},
	{"govswitch_revalidator_flows_deleted_total", "Datapath flows the revalidator deleted (idle, limit, stale or changed).",
		counterMetric, []string{"bridge"}, func(b *bridgeSample, add addFunc) {
			add(float64(b.s.FlowsDeleted))
		}},
	{"govswitch_upcalls_lost_total", "Upcalls the datapath could not queue to a handler.",
		counterMetric, []string{"bridge"}, func(b *bridgeSample, add addFunc) {
			add(float64(b.s.Lost))
		}},
	{"govswitch_upcalls_total", "Upcalls received from the datapath, by kind (miss or action).",
		counterMetric, []string{"bridge", "kind"}, func(b *bridgeSample, add addFunc) {
			add(float64(b.s.ActionUpcalls), "action")
			add(float64(b.s.Misses), "miss")
		}},
}

// sampleBridges reads each running bridge's counters for one scrape.
func (d *Daemon) sampleBridges() []bridgeSample {
	bridges := d.Bridges()
	out := make([]bridgeSample, 0, len(bridges))
	for _, b := range bridges {
		bs := bridgeSample{name: b.Name, s: b.Udpif.Stats(), rules: b.Tables.Len()}
		if st, err := b.DP.Stats(); err == nil {
			bs.dp = &datapathLookups{hit: st.Hit, missed: st.Missed, lost: st.Lost}
		}
		out = append(out, bs)
	}
	return out
}

// startMetrics serves /metrics on addr (host:port; port 0 picks one).
func (d *Daemon) startMetrics(addr string) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("--metrics %s: %w", addr, err)
	}
	d.metricsAddr = ln.Addr().String()
	d.metrics = newMetricsServer(ln, func() []byte {
		return writeMetrics(nil, metricFamilies, d.sampleBridges())
	})
	return nil
}

// MetricsAddr returns the address the metrics endpoint listens on, or ""
// when it is off.
func (d *Daemon) MetricsAddr() string { return d.metricsAddr }
