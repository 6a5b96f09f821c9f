package main

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"strings"
)

// Meta is the key=value facts run and bed.sh record in host.txt and
// guest.txt, in file order.
type Meta struct {
	keys []string
	vals map[string]string
}

// ParseMeta reads key=value lines; later files may add keys. Lines without
// '=' are ignored.
func ParseMeta(m *Meta, rd io.Reader) error {
	if m.vals == nil {
		m.vals = map[string]string{}
	}
	sc := bufio.NewScanner(rd)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), "=")
		if !ok {
			continue
		}
		if _, seen := m.vals[k]; !seen {
			m.keys = append(m.keys, k)
		}
		m.vals[k] = v
	}
	return sc.Err()
}

// Get returns the value of key, or "?" when it was not recorded.
func (m *Meta) Get(key string) string {
	if v, ok := m.vals[key]; ok && v != "" {
		return v
	}
	return "?"
}

var switchNames = map[string]string{
	"ovs":    "ovs-vswitchd 3.1",
	"gov":    "govswitchd",
	"govg":   "govswitchd --governor",
	"none":   "no daemon",
	"base":   "govswitchd (base build)",
	"govn":   "govswitchd --scheduling normal",
	"govthp": "govswitchd, THP as the kernel has it",
	"ovsb":   "ovs-vswitchd 3.1 under chrt -b",
}

var configNames = []struct{ key, title string }{
	{"exact", "(a) exact match (megaflows off), no rate limit"},
	{"exact-fixed", "(a′) exact match at ovs-vswitchd's rate of the same round (`-c`)"},
	{"acl", "(b) megaflows, L4 table (tcp_dst rules spread over the load's ports + NORMAL catch-all)"},
	{"normal", "(c) megaflows, NORMAL only"},
	{"static", "(d) ceiling: no daemon, static wildcard datapath flows"},
	{"listen", "generator ceiling: static flows, govbench listen in h2"},
}

var switchOrder = []string{"ovs", "ovsb", "base", "govn", "govthp", "gov", "govg", "none"}

// f formats a number for a table: "–" for NaN, no decimals for whole
// numbers (counts) and from 100 up.
func f(v float64) string {
	switch {
	case math.IsNaN(v):
		return "–"
	case math.Abs(v) >= 100 || v == math.Trunc(v):
		return fmt.Sprintf("%.0f", v)
	case math.Abs(v) >= 10:
		return fmt.Sprintf("%.1f", v)
	default:
		return fmt.Sprintf("%.2f", v)
	}
}

// span formats a spread as "median (min–max)", or just the median when
// there was one value.
func span(s Spread) string {
	if s.N == 0 {
		return "–"
	}
	if s.N == 1 || s.Min == s.Max {
		return f(s.Median)
	}
	return fmt.Sprintf("%s (%s–%s)", f(s.Median), f(s.Min), f(s.Max))
}

func ratio(r float64) string {
	if math.IsNaN(r) {
		return "–"
	}
	return fmt.Sprintf("%.2f×", r)
}

// Render writes the generated part of the results page: facts, one table
// per configuration, and the targets.
func Render(w io.Writer, m *Meta, runs []Run) {
	cells := Summarize(runs)
	get := func(cfg, sw string) *Cell { return cells[[2]string{cfg, sw}] }
	rounds := map[int]bool{}
	for _, r := range runs {
		rounds[r.Round] = true
	}

	fmt.Fprintf(w, "Command: `%s` (%s, commit %s", m.Get("command"), m.Get("date"), m.Get("commit"))
	if d := m.Get("dirty"); d != "0" && d != "?" {
		fmt.Fprintf(w, ", %s files changed since it in the switch's packages", d)
	}
	fmt.Fprintf(w, ").\n\n")
	fmt.Fprintf(w, "- Host: %s CPUs (%s), kernel %s, load average (1, 5, 15 min) %s at the start and %s at the end.\n",
		m.Get("host_cpus"), m.Get("host_cpu"), m.Get("host_kernel"), m.Get("host_load_start"), m.Get("host_load_end"))
	cpus := m.Get("cpus") + " CPUs"
	if m.Get("cpus") == "1" {
		cpus = "1 CPU"
	}
	fmt.Fprintf(w, "- Bed: %s %s, %s; %s; %s; %s; built with %s.\n",
		bedName(m.Get("bed")), m.Get("kernel"), cpus, m.Get("ovs"), m.Get("govswitchd"), m.Get("govbench"), m.Get("go"))
	fmt.Fprintf(w, "- %d rounds, switch order rotated each round; %s s timed after %s s warm-up; L4 table of %s tcp_dst rules; %d runs recorded.\n\n",
		len(rounds), m.Get("secs"), m.Get("warmup"), m.Get("rules"), len(runs))
	fmt.Fprintf(w, "Cells are median (min–max) over rounds. flows/s = 2 × attempts/s. CPU is the daemon's utime+stime "+
		"during the timed part (CPU s per s: the share of one of the bed's CPUs); µs/upcall = that CPU ÷ the datapath's "+
		"missed-counter delta (left out for runs with fewer than %d upcalls); upcalls, lost and datapath flows at the end as `ovs-dpctl show` counts them; "+
		"RSS is the daemon's VmHWM; reached h2 = (RSTs h2 sent + connections it accepted) ÷ attempts, from its "+
		"/proc/net/snmp, a check that the attempts crossed the switch (it can pass 100 by the up to 100 attempts still in flight when the warm-up ended); SYN retrans = h1's retransmitted segments "+
		"(SYNs the switch dropped or lost). ×ovs: ratio of medians to ovs-vswitchd's in the same configuration, same boot; for flows/s, in brackets, the range of the per-round ratios (each switch against ovs-vswitchd's run of the same round).\n\n", MinUpcalls)

	ceil := get("static", "none")
	for _, c := range configNames {
		var rows []*Cell
		for _, sw := range switchOrder {
			if cell := get(c.key, sw); cell != nil {
				rows = append(rows, cell)
			}
		}
		if len(rows) == 0 {
			continue
		}
		fmt.Fprintf(w, "### %s\n\n", c.title)
		fmt.Fprintf(w, "| switch | runs | flows/s | ×ovs | %% of ceiling | CPU s per s | µs/upcall | ×ovs | upcalls | upcalls per wake-up | ctx switches per attempt | lost | dp flows at end | masks | peak RSS MB | ×ovs | reached h2 %% | SYN retrans |\n")
		fmt.Fprintf(w, "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
		base := get(c.key, "ovs")
		if c.key == "exact-fixed" {
			base = get("exact", "ovs")
		}
		for _, r := range rows {
			var fr, pr, rr, pc = math.NaN(), math.NaN(), math.NaN(), math.NaN()
			if base != nil && r.Switch != "ovs" && r.Switch != "none" {
				fr, pr, rr = Ratio(r.Flows, base.Flows), Ratio(r.PerUpcall, base.PerUpcall), Ratio(r.RSSMB, base.RSSMB)
			}
			if ceil != nil {
				pc = 100 * Ratio(r.Flows, ceil.Flows)
			}
			fratio := ratio(fr)
			if c.key != "exact-fixed" && !math.IsNaN(fr) {
				if rr := RoundRatios(runs, c.key, r.Switch, "ovs", Run.FlowsPerS); rr.N > 1 {
					fratio += fmt.Sprintf(" (%.2f–%.2f)", rr.Min, rr.Max)
				}
			}
			fmt.Fprintf(w, "| %s | %d | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n",
				switchNames[r.Switch], r.Flows.N, span(r.Flows), fratio, f(pc), span(r.Util), span(r.PerUpcall), ratio(pr),
				span(r.Upcalls), span(r.PerWake), span(r.Ctxt), span(r.Lost), span(r.FlowsEnd), span(r.MasksEnd), span(r.RSSMB), ratio(rr), span(r.Reached), span(r.Retrans))
		}
		for _, r := range rows {
			for _, s := range r.Skipped {
				fmt.Fprintf(w, "\n%s: not measured — %s", switchNames[r.Switch], s)
			}
		}
		fmt.Fprintf(w, "\n\n")
	}
	renderTargets(w, get)
}

// Target is one of issue 7's goals, checked against the medians.
type Target struct {
	Goal, Measured string
	Met            string // yes, no, or "not measured"
}

func verdict(ok bool, measured bool) string {
	switch {
	case !measured:
		return "not measured"
	case ok:
		return "yes"
	default:
		return "**no**"
	}
}

// Targets evaluates the targets; get returns nil for a cell with
// no runs at all.
func Targets(get func(cfg, sw string) *Cell) []Target {
	flows := func(cfg, sw string) Spread {
		if c := get(cfg, sw); c != nil {
			return c.Flows
		}
		return Spread{}
	}
	per := func(cfg, sw string) Spread {
		if c := get(cfg, sw); c != nil {
			return c.PerUpcall
		}
		return Spread{}
	}
	var ts []Target
	atLeast := func(goal string, got float64, want float64) {
		ts = append(ts, Target{goal, ratio(got), verdict(got >= want, !math.IsNaN(got))})
	}
	atLeast("exact match: govswitchd ≥ 2× ovs-vswitchd's flows/s", Ratio(flows("exact", "gov"), flows("exact", "ovs")), 2)
	r := Ratio(per("exact", "gov"), per("exact", "ovs"))
	ts = append(ts, Target{"exact match: govswitchd's CPU per upcall ≤ ½ ovs-vswitchd's", ratio(r), verdict(r <= 0.5, !math.IsNaN(r))})
	r = Ratio(per("exact-fixed", "gov"), per("exact", "ovs"))
	ts = append(ts, Target{"…the same at ovs-vswitchd's rate (a′)", ratio(r), verdict(r <= 0.5, !math.IsNaN(r))})
	atLeast("exact match: govswitchd --governor ≥ 3× ovs-vswitchd's flows/s", Ratio(flows("exact", "govg"), flows("exact", "ovs")), 3)
	r = Ratio(flows("exact", "govg"), flows("static", "none"))
	ts = append(ts, Target{"exact match: govswitchd --governor ≥ 70 % of the no-daemon ceiling",
		f(100*r) + " %", verdict(r >= 0.7, !math.IsNaN(r))})
	atLeast("L4 table: govswitchd ≥ 1.5× ovs-vswitchd's flows/s", Ratio(flows("acl", "gov"), flows("acl", "ovs")), 1.5)
	for _, cfg := range []string{"exact", "acl", "normal"} {
		base := get(cfg, "ovs")
		for _, sw := range []string{"gov", "govg"} {
			c := get(cfg, sw)
			if c == nil || base == nil {
				continue
			}
			rr := Ratio(c.RSSMB, base.RSSMB)
			ts = append(ts, Target{fmt.Sprintf("peak RSS ≤ ovs-vswitchd's: %s, %s", switchNames[sw], cfg),
				fmt.Sprintf("%s vs %s MB", f(c.RSSMB.Median), f(base.RSSMB.Median)), verdict(rr <= 1, !math.IsNaN(rr))})
		}
	}
	for _, sw := range []string{"gov", "govg"} {
		c := get("exact-fixed", sw)
		if c == nil {
			ts = append(ts, Target{"zero lost upcalls at ovs-vswitchd's rate: " + switchNames[sw], "–", "not measured"})
			continue
		}
		ts = append(ts, Target{"zero lost upcalls at ovs-vswitchd's rate: " + switchNames[sw],
			"max " + f(c.Lost.Max) + " lost per run", verdict(c.Lost.Max == 0, c.Lost.N > 0)})
	}
	return ts
}

func renderTargets(w io.Writer, get func(cfg, sw string) *Cell) {
	fmt.Fprintf(w, "### Targets (issue 7), from the medians above\n\n| target | measured | met |\n|---|---|---|\n")
	for _, t := range Targets(get) {
		fmt.Fprintf(w, "| %s | %s | %s |\n", t.Goal, t.Measured, t.Met)
	}
	fmt.Fprintln(w)
}

// Markers delimit the generated part of bench/RESULTS.md.
const (
	BeginMarker = "<!-- BEGIN generated by bench/scenarios/run -->"
	EndMarker   = "<!-- END generated -->"
)

// Splice replaces what lies between the markers in doc with gen. It fails
// when the markers are missing or out of order, so prose is never lost.
func Splice(doc, gen string) (string, error) {
	i := strings.Index(doc, BeginMarker)
	j := strings.Index(doc, EndMarker)
	if i < 0 || j < 0 || j < i {
		return "", fmt.Errorf("no %q … %q section", BeginMarker, EndMarker)
	}
	return doc[:i+len(BeginMarker)] + "\n\n" + strings.TrimSpace(gen) + "\n\n" + doc[j:], nil
}

// bedName names the bed run's meta calls uml or vm (an older run, with no
// bed line, was UML's).
func bedName(bed string) string {
	switch bed {
	case "vm":
		return "vm (Debian's kernel under QEMU)"
	case "uml", "?", "":
		return "UML"
	}
	return bed
}
