package vswitchd

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// The metrics are read from the switch's own counters when scraped, so
// the upcall path pays nothing for them.
var (
	mUpcalls = prometheus.NewDesc("govswitch_upcalls_total",
		"Upcalls received from the datapath, by kind (miss or action).", []string{"bridge", "kind"}, nil)
	mLost = prometheus.NewDesc("govswitch_upcalls_lost_total",
		"Upcalls the datapath could not queue to a handler.", []string{"bridge"}, nil)
	mSetups = prometheus.NewDesc("govswitch_flow_setups_total",
		"Datapath flows installed by the upcall handlers.", []string{"bridge"}, nil)
	mSetupFail = prometheus.NewDesc("govswitch_flow_setup_failures_total",
		"Datapath flow installs that failed.", []string{"bridge"}, nil)
	mExecutes = prometheus.NewDesc("govswitch_executes_total",
		"Packets executed by the upcall handlers.", []string{"bridge"}, nil)
	mSkipped = prometheus.NewDesc("govswitch_flow_setups_skipped_total",
		"Misses handled without installing a flow, by reason (duplicate, flow_limit, ukey_full, governor).",
		[]string{"bridge", "reason"}, nil)
	mGovernor = prometheus.NewDesc("govswitch_governor_decisions_total",
		"Flow-setup governor decisions, by decision (install or execute).", []string{"bridge", "decision"}, nil)
	mFlows = prometheus.NewDesc("govswitch_datapath_flows",
		"Datapath flows at the last revalidator dump.", []string{"bridge"}, nil)
	mLimit = prometheus.NewDesc("govswitch_flow_limit",
		"The dynamic datapath flow limit.", []string{"bridge"}, nil)
	mBatches = prometheus.NewDesc("govswitch_handler_batches_total",
		"Handler wake-ups that read at least one upcall.", []string{"bridge"}, nil)
	mBatchAvg = prometheus.NewDesc("govswitch_handler_batch_size_avg",
		"Average upcalls read per handler wake-up since start.", []string{"bridge"}, nil)
	mDumps = prometheus.NewDesc("govswitch_revalidator_dumps_total",
		"Revalidator passes.", []string{"bridge"}, nil)
	mDumpTime = prometheus.NewDesc("govswitch_revalidator_dump_seconds",
		"Duration of the last revalidator pass.", []string{"bridge"}, nil)
	mDeleted = prometheus.NewDesc("govswitch_revalidator_flows_deleted_total",
		"Datapath flows the revalidator deleted (idle, limit, stale or changed).", []string{"bridge"}, nil)
	mDPLookups = prometheus.NewDesc("govswitch_datapath_lookups_total",
		"Datapath lookups, by result (hit, missed, lost), as the datapath counts them.", []string{"bridge", "result"}, nil)
	mRules = prometheus.NewDesc("govswitch_openflow_rules",
		"OpenFlow rules in all tables.", []string{"bridge"}, nil)
)

type collector struct{ d *Daemon }

func (c collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{mUpcalls, mLost, mSetups, mSetupFail, mExecutes, mSkipped, mGovernor,
		mFlows, mLimit, mBatches, mBatchAvg, mDumps, mDumpTime, mDeleted, mDPLookups, mRules} {
		ch <- d
	}
}

func (c collector) Collect(ch chan<- prometheus.Metric) {
	counter := func(d *prometheus.Desc, v uint64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v), labels...)
	}
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	for _, b := range c.d.Bridges() {
		n := b.Name
		s := b.Udpif.Stats()
		counter(mUpcalls, s.Misses, n, "miss")
		counter(mUpcalls, s.ActionUpcalls, n, "action")
		counter(mLost, s.Lost, n)
		counter(mSetups, s.FlowsInstalled, n)
		counter(mSetupFail, s.PutFailed, n)
		counter(mExecutes, s.Executes, n)
		counter(mSkipped, s.Duplicates, n, "duplicate")
		counter(mSkipped, s.LimitHits, n, "flow_limit")
		counter(mSkipped, s.UkeyFull, n, "ukey_full")
		counter(mSkipped, s.GovernorExecutes, n, "governor")
		counter(mGovernor, s.GovernorInstalls, n, "install")
		counter(mGovernor, s.GovernorExecutes, n, "execute")
		gauge(mFlows, float64(s.DatapathFlows), n)
		gauge(mLimit, float64(s.FlowLimit), n)
		counter(mBatches, s.Batches, n)
		gauge(mBatchAvg, float64(s.AvgBatchTimes8)/8, n)
		counter(mDumps, s.Dumps, n)
		gauge(mDumpTime, s.DumpDuration.Seconds(), n)
		counter(mDeleted, s.FlowsDeleted, n)
		gauge(mRules, float64(b.Tables.Len()), n)
		if st, err := b.DP.Stats(); err == nil {
			counter(mDPLookups, st.Hit, n, "hit")
			counter(mDPLookups, st.Missed, n, "missed")
			counter(mDPLookups, st.Lost, n, "lost")
		}
	}
}

// startMetrics serves /metrics on addr (host:port; port 0 picks one).
func (d *Daemon) startMetrics(addr string) error {
	reg := prometheus.NewRegistry()
	if err := reg.Register(collector{d}); err != nil {
		return err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("--metrics %s: %w", addr, err)
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	d.metrics = &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	d.metricsAddr = ln.Addr().String()
	go func() {
		if err := d.metrics.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			d.log.Error("metrics server stopped", "err", err)
		}
	}()
	return nil
}

// MetricsAddr returns the address the metrics endpoint listens on, or ""
// when it is off.
func (d *Daemon) MetricsAddr() string { return d.metricsAddr }
