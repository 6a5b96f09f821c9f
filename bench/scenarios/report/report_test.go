package main

import (
	"bytes"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestSpreadOf(t *testing.T) {
	nan := math.NaN()
	tests := []struct {
		name string
		in   []float64
		want Spread
	}{
		{"empty", nil, Spread{Median: nan, Min: nan, Max: nan}},
		{"only NaN", []float64{nan, nan}, Spread{Median: nan, Min: nan, Max: nan}},
		{"one", []float64{7}, Spread{7, 7, 7, 1}},
		{"odd, unsorted", []float64{9, 1, 5}, Spread{5, 1, 9, 3}},
		{"even: mean of the middle two", []float64{4, 1, 10, 2}, Spread{3, 1, 10, 4}},
		{"NaN left out", []float64{nan, 3, 1}, Spread{2, 1, 3, 2}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := SpreadOf(tc.in)
			if got.N != tc.want.N || !same(got.Median, tc.want.Median) || !same(got.Min, tc.want.Min) || !same(got.Max, tc.want.Max) {
				t.Errorf("SpreadOf(%v) = %+v, want %+v", tc.in, got, tc.want)
			}
		})
	}
}

func same(a, b float64) bool { return a == b || (math.IsNaN(a) && math.IsNaN(b)) }

func TestParseRuns(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		n       int
		wantErr string
	}{
		{"two runs and a blank line", `{"round":0,"seq":0,"switch":"ovs","config":"exact","status":"ok","elapsed_s":5,"attempts":10}

{"round":0,"seq":1,"switch":"gov","config":"acl","status":"skipped: no OpenFlow"}
`, 2, ""},
		{"empty", "", 0, ""},
		{"truncated line", `{"round":0,"switch":"ovs"`, 0, "line 1"},
		{"no switch", `{"round":0,"config":"exact"}`, 0, "line 1: no switch"},
		{"bad field type on line 2", "{\"switch\":\"a\",\"config\":\"b\"}\n{\"switch\":\"a\",\"config\":\"b\",\"upcalls\":\"x\"}", 0, "line 2"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			runs, err := ParseRuns(strings.NewReader(tc.in))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(runs) != tc.n {
				t.Errorf("%d runs, want %d", len(runs), tc.n)
			}
		})
	}
}

func TestReachedPct(t *testing.T) {
	tests := []struct {
		name string
		r    Run
		want float64
	}{
		{"every attempt answered by RST", Run{Attempts: 200, H2Rsts: 200}, 100},
		{"accepted with a listener", Run{Attempts: 200, H2Accepts: 150}, 75},
		{"no attempts", Run{}, math.NaN()},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.r.ReachedPct(); !same(got, tc.want) {
				t.Errorf("ReachedPct = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestRunDerived(t *testing.T) {
	tests := []struct {
		name           string
		r              Run
		flows, perUpUS float64
		ok             bool
	}{
		{"daemon", Run{Status: "ok", ElapsedS: 2, Attempts: 1000, CPUS: 0.5, Upcalls: 2000, Daemon: true}, 1000, 250, true},
		{"no daemon: no CPU per upcall", Run{Status: "ok", ElapsedS: 4, Attempts: 1000, Upcalls: 10}, 500, math.NaN(), true},
		{"no upcalls", Run{Status: "ok", ElapsedS: 1, Attempts: 3, CPUS: 1, Daemon: true}, 6, math.NaN(), true},
		{"too few upcalls to charge CPU to", Run{Status: "ok", ElapsedS: 1, Attempts: 3, CPUS: 1, Upcalls: MinUpcalls - 1, Daemon: true}, 6, math.NaN(), true},
		{"just enough upcalls", Run{Status: "ok", ElapsedS: 1, Attempts: 3, CPUS: 1, Upcalls: MinUpcalls, Daemon: true}, 6, 1e6 / MinUpcalls, true},
		{"skipped", Run{Status: "skipped: x"}, math.NaN(), math.NaN(), false},
		{"ok but never timed", Run{Status: "ok"}, math.NaN(), math.NaN(), false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if tc.r.OK() != tc.ok {
				t.Fatalf("OK() = %v, want %v", tc.r.OK(), tc.ok)
			}
			if !tc.ok {
				return
			}
			if got := tc.r.FlowsPerS(); got != tc.flows {
				t.Errorf("FlowsPerS = %v, want %v", got, tc.flows)
			}
			if got := tc.r.CPUPerUpcallUS(); !same(got, tc.perUpUS) {
				t.Errorf("CPUPerUpcallUS = %v, want %v", got, tc.perUpUS)
			}
		})
	}
}

// runsFixture is two rounds of every switch in the exact-match regime,
// the ceiling, a fixed-rate run with a lost upcall, and a skipped ACL run.
const runsFixture = `
{"round":0,"seq":0,"switch":"ovs","config":"exact","status":"ok","elapsed_s":5,"attempts":2000,"cpu_s":4,"upcalls":8000,"lost":0,"flows_end":8000,"hwm_kb":10240,"daemon":true}
{"round":0,"seq":1,"switch":"gov","config":"exact","status":"ok","elapsed_s":5,"attempts":5000,"cpu_s":2,"upcalls":20000,"lost":0,"flows_end":20000,"hwm_kb":20480,"daemon":true}
{"round":0,"seq":2,"switch":"govg","config":"exact","status":"ok","elapsed_s":5,"attempts":7000,"cpu_s":2,"upcalls":28000,"lost":0,"flows_end":100,"hwm_kb":9216,"daemon":true}
{"round":0,"seq":3,"switch":"none","config":"static","status":"ok","elapsed_s":5,"attempts":8000,"cpu_s":0,"upcalls":0,"lost":0,"flows_end":4,"hwm_kb":0,"daemon":false}
{"round":0,"seq":4,"switch":"gov","config":"acl","status":"skipped: no OpenFlow"}
{"round":1,"seq":5,"switch":"gov","config":"exact","status":"ok","elapsed_s":5,"attempts":3000,"cpu_s":2,"upcalls":12000,"lost":0,"flows_end":12000,"hwm_kb":20480,"daemon":true}
{"round":1,"seq":6,"switch":"ovs","config":"exact","status":"ok","elapsed_s":5,"attempts":2000,"cpu_s":4,"upcalls":8000,"lost":0,"flows_end":8000,"hwm_kb":10240,"daemon":true}
{"round":1,"seq":7,"switch":"gov","config":"exact-fixed","status":"ok","max_rate":400,"elapsed_s":5,"attempts":2000,"cpu_s":1,"upcalls":8000,"lost":3,"flows_end":8000,"hwm_kb":20480,"daemon":true}
`

func TestSummarizeAndTargets(t *testing.T) {
	runs, err := ParseRuns(strings.NewReader(runsFixture))
	if err != nil {
		t.Fatal(err)
	}
	cells := Summarize(runs)
	get := func(cfg, sw string) *Cell { return cells[[2]string{cfg, sw}] }

	gov := get("exact", "gov")
	if gov.Flows.N != 2 || gov.Flows.Median != 1600 || gov.Flows.Min != 1200 || gov.Flows.Max != 2000 {
		t.Errorf("govswitchd exact flows = %+v, want median 1600 of 1200..2000", gov.Flows)
	}
	if got := gov.PerUpcall.Median; math.Abs(got-133.33) > 0.01 { // (100 + 166.67) / 2
		t.Errorf("govswitchd µs/upcall median = %v, want 133.33", got)
	}
	if acl := get("acl", "gov"); acl.Flows.N != 0 || len(acl.Skipped) != 1 {
		t.Errorf("skipped ACL cell = %+v", acl)
	}
	if c := get("static", "none"); c.RSSMB.N != 0 || c.CPU.N != 0 {
		t.Errorf("no-daemon cell has daemon figures: %+v", c)
	}

	want := map[string]string{
		"exact match: govswitchd ≥ 2× ovs-vswitchd's flows/s":                "yes", // 1600 / 800
		"exact match: govswitchd's CPU per upcall ≤ ½ ovs-vswitchd's":        "yes", // 133 / 500 µs
		"…the same at ovs-vswitchd's rate (a′)":                              "yes", // 125 / 500 µs
		"exact match: govswitchd --governor ≥ 3× ovs-vswitchd's flows/s":     "yes", // 2800 / 800
		"exact match: govswitchd --governor ≥ 70 % of the no-daemon ceiling": "yes", // 2800 / 3200
		"L4 table: govswitchd ≥ 1.5× ovs-vswitchd's flows/s":                 "not measured",
		"peak RSS ≤ ovs-vswitchd's: govswitchd, exact":                       "**no**", // 20 vs 10 MB
		"peak RSS ≤ ovs-vswitchd's: govswitchd --governor, exact":            "yes",    // 9 vs 10 MB
		"zero lost upcalls at ovs-vswitchd's rate: govswitchd":               "**no**", // 3 lost
		"zero lost upcalls at ovs-vswitchd's rate: govswitchd --governor":    "not measured",
	}
	got := map[string]string{}
	for _, tg := range Targets(get) {
		got[tg.Goal] = tg.Met
	}
	for goal, w := range want {
		if got[goal] != w {
			t.Errorf("%s: met = %q, want %q", goal, got[goal], w)
		}
	}
}

func TestRoundRatios(t *testing.T) {
	runs, err := ParseRuns(strings.NewReader(runsFixture))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, cfg, sw string
		want          Spread
	}{
		// Round 0: 1000/400 flows/s; round 1: 600/400.
		{"two rounds", "exact", "gov", Spread{Median: 2, Min: 1.5, Max: 2.5, N: 2}},
		{"one round with both", "exact", "govg", Spread{Median: 3.5, Min: 3.5, Max: 3.5, N: 1}},
		{"skipped runs do not count", "acl", "gov", Spread{}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := RoundRatios(runs, tc.cfg, tc.sw, "ovs", Run.FlowsPerS)
			if got.N != tc.want.N || (got.N > 0 && (got.Median != tc.want.Median || got.Min != tc.want.Min || got.Max != tc.want.Max)) {
				t.Errorf("RoundRatios = %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestRenderMentionsEverything(t *testing.T) {
	runs, err := ParseRuns(strings.NewReader(runsFixture))
	if err != nil {
		t.Fatal(err)
	}
	var m Meta
	if err := ParseMeta(&m, strings.NewReader("command=bench/scenarios/run --quick\ndate=2026-11-30 07:00 UTC\nnoise\nsecs=5\n")); err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	Render(&b, &m, runs)
	out := b.String()
	for _, s := range []string{
		"`bench/scenarios/run --quick`", "2 rounds", "5 s timed",
		"| govswitchd | 2 | 1600 (1200–2000) | 2.00× (1.50–2.50) |", // median, spread, ratio to ovs's 800, per-round ratios
		"not measured — skipped: no OpenFlow",
		"### (a′)", "### (d)", "| target | measured | met |",
	} {
		if !strings.Contains(out, s) {
			t.Errorf("rendered page lacks %q:\n%s", s, out)
		}
	}
	if strings.Contains(out, "### (c)") {
		t.Errorf("rendered a section for a configuration with no runs")
	}
}

func TestFormat(t *testing.T) {
	tests := []struct {
		name string
		in   float64
		want string
	}{
		{"NaN", math.NaN(), "–"},
		{"zero count", 0, "0"},
		{"whole count", 7, "7"},
		{"small fraction", 0.456, "0.46"},
		{"tens", 84.32, "84.3"},
		{"hundreds", 186.4, "186"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := f(tc.in); got != tc.want {
				t.Errorf("f(%v) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}

func TestSplice(t *testing.T) {
	tests := []struct {
		name, doc, want, wantErr string
	}{
		{"replaces between markers", "intro\n" + BeginMarker + "\nold\n" + EndMarker + "\noutro\n",
			"intro\n" + BeginMarker + "\n\nNEW\n\n" + EndMarker + "\noutro\n", ""},
		{"no markers", "just prose", "", "no "},
		{"markers reversed", EndMarker + BeginMarker, "", "no "},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Splice(tc.doc, "NEW\n")
			if tc.wantErr != "" {
				if err == nil {
					t.Fatalf("Splice = %q, want an error", got)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Errorf("Splice = %q, %v; want %q", got, err, tc.want)
			}
		})
	}
}

func TestRunUpdateKeepsFileOnError(t *testing.T) {
	dir := t.TempDir()
	write := func(name, s string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("runs.jsonl", runsFixture)
	write("host.txt", "command=x\n")
	write("guest.txt", "secs=5\n")
	doc := filepath.Join(dir, "RESULTS.md")
	write("RESULTS.md", "prose only\n")
	if err := run(dir, doc); err == nil {
		t.Fatal("update of a file without markers succeeded")
	}
	if b, _ := os.ReadFile(doc); string(b) != "prose only\n" {
		t.Errorf("file changed on error: %q", b)
	}
	write("RESULTS.md", "head\n"+BeginMarker+"\n"+EndMarker+"\ntail\n")
	if err := run(dir, doc); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(doc)
	if s := string(b); !strings.HasPrefix(s, "head\n") || !strings.HasSuffix(s, "tail\n") || !strings.Contains(s, "| govswitchd | 2 |") {
		t.Errorf("updated file:\n%s", s)
	}
	write("runs.jsonl", "")
	if err := run(dir, doc); err == nil {
		t.Error("an empty runs.jsonl was accepted")
	}
}

func TestWakeAndContextSwitchColumns(t *testing.T) {
	runs := []Run{
		{Switch: "gov", Config: "exact", Status: "ok", ElapsedS: 4, Attempts: 1000, Upcalls: 2000, Daemon: true, Ctxt: 2500, DaemonCsw: 250},
		{Switch: "gov", Config: "exact", Status: "ok", ElapsedS: 4, Attempts: 1000, Upcalls: 2000, Daemon: true, Ctxt: 3500, DaemonCsw: 500},
		// An older record without the counters must not drag the medians to 0.
		{Switch: "gov", Config: "exact", Status: "ok", ElapsedS: 4, Attempts: 1000, Upcalls: 2000, Daemon: true},
		{Switch: "none", Config: "static", Status: "ok", ElapsedS: 4, Attempts: 1000, Ctxt: 2000},
	}
	cells := Summarize(runs)
	g := cells[[2]string{"exact", "gov"}]
	if g.Ctxt.N != 2 || g.Ctxt.Median != 3 {
		t.Errorf("context switches per attempt: %+v, want median 3 over 2 runs", g.Ctxt)
	}
	if g.PerWake.N != 2 || g.PerWake.Median != 6 {
		t.Errorf("upcalls per wake-up: %+v, want median 6 (8 and 4) over 2 runs", g.PerWake)
	}
	if n := cells[[2]string{"static", "none"}].PerWake.N; n != 0 {
		t.Errorf("upcalls per wake-up without a daemon: %d values, want none", n)
	}
}

func TestRenderNamesTheBed(t *testing.T) {
	for _, c := range []struct{ meta, want string }{
		{"bed=vm\nkernel=6.1.0-57-amd64\ncpus=2\n", "- Bed: vm (Debian's kernel under QEMU) 6.1.0-57-amd64, 2 CPUs;"},
		{"bed=uml\nkernel=6.1.176\ncpus=1\n", "- Bed: UML 6.1.176, 1 CPU;"},
		{"kernel=6.1.176\ncpus=1\n", "- Bed: UML 6.1.176, 1 CPU;"}, // runs from before the bed line
	} {
		var m Meta
		if err := ParseMeta(&m, strings.NewReader(c.meta)); err != nil {
			t.Fatal(err)
		}
		var b bytes.Buffer
		Render(&b, &m, nil)
		if !strings.Contains(b.String(), c.want) {
			t.Errorf("meta %q: page lacks %q:\n%s", c.meta, c.want, b.String())
		}
	}
}
