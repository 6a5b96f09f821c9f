package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"sort"
	"strings"
)

// Run is one line of runs.jsonl, as bench/scenarios/bed.sh writes it: one
// fresh switch, warmed up, then timed. Counters are deltas over the timed
// part, except FlowsEnd (datapath flows when it ended) and HWMKB (the
// daemon's peak resident set since it started, VmHWM).
type Run struct {
	Round    int     `json:"round"`
	Seq      int     `json:"seq"`
	Switch   string  `json:"switch"` // ovs, gov, govg, none
	Config   string  `json:"config"` // exact, exact-fixed, acl, normal, static, listen
	Status   string  `json:"status"` // "ok", or why the run was not made
	MaxRate  float64 `json:"max_rate"`
	ElapsedS float64 `json:"elapsed_s"`
	Attempts float64 `json:"attempts"` // connection attempts completed (each is 2 flows)
	Failed   float64 `json:"failed"`
	CPUS     float64 `json:"cpu_s"` // the daemon's user+system CPU seconds
	Upcalls  float64 `json:"upcalls"`
	Lost     float64 `json:"lost"`
	FlowsEnd float64 `json:"flows_end"`
	MasksEnd float64 `json:"masks_end"` // the datapath's masks at the end (0 in older records)
	HWMKB    float64 `json:"hwm_kb"`
	// What the hosts saw: RSTs h2 sent and connections it accepted (the
	// attempts that reached it), and SYNs h1 sent again (dropped ones).
	H2Rsts    float64 `json:"h2_rsts"`
	H2Accepts float64 `json:"h2_accepts"`
	H1Retrans float64 `json:"h1_retrans"`
	Daemon    bool    `json:"daemon"` // false when no daemon was in the path
	// The bed's context switches during the timed part, and the daemon's
	// own (all its threads); 0 in older records.
	Ctxt      float64 `json:"ctxt"`
	DaemonCsw float64 `json:"daemon_csw"`
}

// CtxtPerAttempt is the bed's context switches per connection attempt,
// NaN when the record has none.
func (r Run) CtxtPerAttempt() float64 {
	if r.Ctxt <= 0 || r.Attempts <= 0 {
		return math.NaN()
	}
	return r.Ctxt / r.Attempts
}

// UpcallsPerWake is the upcalls per context switch of the daemon: how many
// misses it handles per wake-up. NaN without a daemon or upcalls.
func (r Run) UpcallsPerWake() float64 {
	if !r.Daemon || r.DaemonCsw <= 0 || r.Upcalls < 100 {
		return math.NaN()
	}
	return r.Upcalls / r.DaemonCsw
}

// OK reports whether the run was made and measured.
func (r Run) OK() bool { return r.Status == "ok" && r.ElapsedS > 0 }

// FlowsPerS is the flow-setup rate: two flows (one each way) per attempt.
func (r Run) FlowsPerS() float64 { return 2 * r.Attempts / r.ElapsedS }

// ReachedPct is the share of attempts that reached h2 (it answered with a
// RST or accepted), in percent. A switch that drops packets, or a broken
// ARP that makes connects fail locally, shows here rather than as speed.
func (r Run) ReachedPct() float64 {
	if r.Attempts <= 0 {
		return math.NaN()
	}
	return 100 * (r.H2Rsts + r.H2Accepts) / r.Attempts
}

// MinUpcalls is the fewest upcalls a run must have for its CPU per upcall
// to mean anything: with megaflows a run may see one upcall, and all of
// the daemon's CPU would be charged to it.
const MinUpcalls = 100

// CPUPerUpcallUS is the daemon's CPU microseconds per upcall; NaN without
// a daemon or with fewer than MinUpcalls upcalls.
func (r Run) CPUPerUpcallUS() float64 {
	if !r.Daemon || r.Upcalls < MinUpcalls {
		return math.NaN()
	}
	return r.CPUS * 1e6 / r.Upcalls
}

// ParseRuns reads runs.jsonl. Blank lines are skipped; any other line that
// is not a JSON object naming a switch and a config is an error that names
// its line number.
func ParseRuns(rd io.Reader) ([]Run, error) {
	var runs []Run
	sc := bufio.NewScanner(rd)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			continue
		}
		var r Run
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			return nil, fmt.Errorf("line %d: %w", n, err)
		}
		if r.Switch == "" || r.Config == "" {
			return nil, fmt.Errorf("line %d: no switch or config", n)
		}
		runs = append(runs, r)
	}
	return runs, sc.Err()
}

// Spread is the median, minimum and maximum of some runs' values; N is how
// many values there were (NaN values are left out). N == 0 means no data.
type Spread struct {
	Median, Min, Max float64
	N                int
}

// SpreadOf summarises vs, ignoring NaNs. The median of an even count is
// the mean of the two middle values.
func SpreadOf(vs []float64) Spread {
	var xs []float64
	for _, v := range vs {
		if !math.IsNaN(v) {
			xs = append(xs, v)
		}
	}
	if len(xs) == 0 {
		return Spread{Median: math.NaN(), Min: math.NaN(), Max: math.NaN()}
	}
	sort.Float64s(xs)
	m := xs[len(xs)/2]
	if len(xs)%2 == 0 {
		m = (xs[len(xs)/2-1] + xs[len(xs)/2]) / 2
	}
	return Spread{Median: m, Min: xs[0], Max: xs[len(xs)-1], N: len(xs)}
}

// Cell is one switch in one configuration, over all rounds.
type Cell struct {
	Switch, Config              string
	Flows, CPU, PerUpcall, Util Spread // flows/s, CPU s, µs/upcall, CPU s per s
	Upcalls, Lost, FlowsEnd     Spread
	MasksEnd                    Spread
	Ctxt, PerWake               Spread // bed context switches per attempt; upcalls per daemon context switch
	Reached, Retrans            Spread // % of attempts that reached h2; h1's SYN retransmissions
	RSSMB                       Spread
	Skipped                     []string // why runs were not made, deduplicated
}

// Summarize groups runs by configuration and switch.
func Summarize(runs []Run) map[[2]string]*Cell {
	type acc struct{ flows, cpu, per, util, up, lost, fe, me, rss, reach, retr, ctxt, wake []float64 }
	accs := map[[2]string]*acc{}
	cells := map[[2]string]*Cell{}
	for _, r := range runs {
		k := [2]string{r.Config, r.Switch}
		c := cells[k]
		if c == nil {
			c = &Cell{Switch: r.Switch, Config: r.Config}
			cells[k] = c
			accs[k] = &acc{}
		}
		if !r.OK() {
			if !contains(c.Skipped, r.Status) {
				c.Skipped = append(c.Skipped, r.Status)
			}
			continue
		}
		a := accs[k]
		a.flows = append(a.flows, r.FlowsPerS())
		a.up = append(a.up, r.Upcalls)
		a.lost = append(a.lost, r.Lost)
		a.fe = append(a.fe, r.FlowsEnd)
		if r.MasksEnd > 0 {
			a.me = append(a.me, r.MasksEnd)
		}
		if v := r.CtxtPerAttempt(); !math.IsNaN(v) {
			a.ctxt = append(a.ctxt, v)
		}
		if v := r.UpcallsPerWake(); !math.IsNaN(v) {
			a.wake = append(a.wake, v)
		}
		a.reach = append(a.reach, r.ReachedPct())
		a.retr = append(a.retr, r.H1Retrans)
		if r.Daemon {
			a.cpu = append(a.cpu, r.CPUS)
			a.util = append(a.util, r.CPUS/r.ElapsedS)
			a.per = append(a.per, r.CPUPerUpcallUS())
			a.rss = append(a.rss, r.HWMKB/1024)
		}
	}
	for k, c := range cells {
		a := accs[k]
		c.Flows, c.CPU, c.PerUpcall, c.Util = SpreadOf(a.flows), SpreadOf(a.cpu), SpreadOf(a.per), SpreadOf(a.util)
		c.Upcalls, c.Lost, c.FlowsEnd, c.RSSMB = SpreadOf(a.up), SpreadOf(a.lost), SpreadOf(a.fe), SpreadOf(a.rss)
		c.Reached, c.Retrans, c.MasksEnd = SpreadOf(a.reach), SpreadOf(a.retr), SpreadOf(a.me)
		c.Ctxt, c.PerWake = SpreadOf(a.ctxt), SpreadOf(a.wake)
	}
	return cells
}

func contains(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}

// RoundRatios returns, for each round in which both switches have a
// measured run of cfg, that round's value(sw) / value(base) — runs minutes
// apart in the same boot, so a slow spell on the host moves both.
func RoundRatios(runs []Run, cfg, sw, base string, value func(Run) float64) Spread {
	byRound := map[int]map[string]Run{}
	for _, r := range runs {
		if r.Config != cfg || !r.OK() || (r.Switch != sw && r.Switch != base) {
			continue
		}
		if byRound[r.Round] == nil {
			byRound[r.Round] = map[string]Run{}
		}
		byRound[r.Round][r.Switch] = r
	}
	var rs []float64
	for _, m := range byRound {
		a, okA := m[sw]
		b, okB := m[base]
		if okA && okB && value(b) != 0 {
			rs = append(rs, value(a)/value(b))
		}
	}
	return SpreadOf(rs)
}

// Ratio is a/b of two medians, NaN when either is missing or b is 0.
func Ratio(a, b Spread) float64 {
	if a.N == 0 || b.N == 0 || b.Median == 0 {
		return math.NaN()
	}
	return a.Median / b.Median
}
