package governor

import (
	"testing"
	"time"
)

func TestPolicyHysteresis(t *testing.T) {
	p := NewPolicy(Auto, 1000, t0)
	// At or below half the threshold: always install, governor untouched.
	if d := p.Decide(1, 1, 500, t0); d != Install || p.Engaged() {
		t.Fatalf("below engage point: %v engaged=%v", d, p.Engaged())
	}
	// Above half: engage; a new flow's first packet is only executed.
	if d := p.Decide(2, 1, 501, t0); d != Execute || !p.Engaged() {
		t.Fatalf("above engage point: %v engaged=%v", d, p.Engaged())
	}
	// Between a quarter and a half: stays engaged (hysteresis).
	p.Run(300, t0.Add(time.Hour))
	if !p.Engaged() {
		t.Fatalf("disengaged above the quarter mark")
	}
	// Below a quarter but not idle (a generation just started): stays.
	now := t0.Add(time.Second)
	p.gov.reset(now)
	p.Run(200, now)
	if !p.Engaged() {
		t.Fatalf("disengaged while not idle")
	}
	// Below a quarter and idle: disengages; misses install again.
	later := now.Add(MaxElapsed + time.Millisecond)
	p.Run(200, later)
	if p.Engaged() {
		t.Fatalf("still engaged when idle with few flows")
	}
	if d := p.Decide(3, 1, 200, later); d != Install {
		t.Errorf("after disengage: %v", d)
	}
	if p.Engagements != 1 {
		t.Errorf("engagements = %d", p.Engagements)
	}
}

func TestPolicyModes(t *testing.T) {
	for _, tt := range []struct {
		mode Mode
		want Decision
	}{{AlwaysInstall, Install}, {NeverInstall, Execute}} {
		p := NewPolicy(tt.mode, 0, t0)
		for _, installed := range []int{0, 1 << 20} {
			if d := p.Decide(9, 1, installed, t0); d != tt.want {
				t.Errorf("%v with %d flows: %v, want %v", tt.mode, installed, d, tt.want)
			}
		}
	}
	if p := NewPolicy(Auto, 5, t0); p.Threshold != MinThreshold {
		t.Errorf("threshold not raised to minimum: %d", p.Threshold)
	}
	if p := NewPolicy(Auto, 0, t0); p.Threshold != DefaultThreshold {
		t.Errorf("default threshold: %d", p.Threshold)
	}
}

func TestParseMode(t *testing.T) {
	for in, want := range map[string]Mode{"auto": Auto, "": Auto, "always": AlwaysInstall,
		"with-facets": AlwaysInstall, "never": NeverInstall, "without-facets": NeverInstall} {
		if m, err := ParseMode(in); err != nil || m != want {
			t.Errorf("ParseMode(%q) = %v, %v", in, m, err)
		}
		if m, _ := ParseMode(want.String()); m != want {
			t.Errorf("String does not round-trip for %v", want)
		}
	}
	if _, err := ParseMode("sometimes"); err == nil {
		t.Errorf("bad mode accepted")
	}
}

// TestShortFlowStorm is the governor's purpose: under a storm of one- and
// two-packet flows mixed with long flows, it installs (almost) only the long
// ones.
func TestShortFlowStorm(t *testing.T) {
	p := NewPolicy(Auto, DefaultThreshold, t0)
	now := t0
	installedShort, installedLong := 0, 0
	long := make([]uint32, 50)
	for i := range long {
		long[i] = uint32(0x9e3779b9 * (i + 1))
	}
	longDone := make(map[uint32]bool)
	var h uint32 = 12345
	for i := 0; i < 20000; i++ {
		now = now.Add(50 * time.Microsecond)
		h = h*1664525 + 1013904223 // a new short flow, one packet
		if p.Decide(h, 1, 5000, now).Installs() {
			installedShort++
		}
		lf := long[i%len(long)]
		if !longDone[lf] && p.Decide(lf, 1, 5000, now).Installs() {
			installedLong++
			longDone[lf] = true
		}
	}
	if installedLong != len(long) {
		t.Errorf("installed %d of %d long flows", installedLong, len(long))
	}
	// Short flows install only through counter collisions (over-counting).
	if installedShort > 20000/100 {
		t.Errorf("installed %d of 20000 one-packet flows", installedShort)
	}
	t.Logf("one-packet flows installed: %d/20000; long flows: %d/%d; %+v",
		installedShort, installedLong, len(long), p.Governor().Stats())
}
