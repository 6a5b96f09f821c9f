package testbed

import "testing"

func TestBedKind(t *testing.T) {
	tests := []struct {
		name  string
		inBed bool
		env   string
		want  string
	}{
		{name: "outside", env: "", want: ""},
		{name: "outside with kind set", env: "vm", want: ""},
		{name: "uml bed", inBed: true, env: "uml", want: BedUML},
		{name: "vm bed", inBed: true, env: "vm", want: BedVM},
		{name: "bed without kind is uml", inBed: true, env: "", want: BedUML},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			getenv := func(k string) string {
				if k == EnvBedKind {
					return tt.env
				}
				return ""
			}
			if got := bedKind(tt.inBed, getenv); got != tt.want {
				t.Errorf("bedKind(%v, %s=%q) = %q, want %q", tt.inBed, EnvBedKind, tt.env, got, tt.want)
			}
		})
	}
}

func TestRequireVM(t *testing.T) {
	const hint = "needs the full kernel of the vm bed: run scripts/kernel-test --bed vm ./internal/testbed"
	const forbid = " (GOVSWITCH_REQUIRE_BED=1 forbids skipping)"
	tests := []struct {
		name        string
		kind        string
		mustBeInBed bool
		wantSkip    string
		wantFatal   string
	}{
		{name: "vm bed runs", kind: BedVM},
		{name: "vm bed with require runs", kind: BedVM, mustBeInBed: true},
		{name: "outside skips", wantSkip: hint},
		{name: "outside with require fails", mustBeInBed: true, wantFatal: hint + forbid},
		{name: "uml bed skips", kind: BedUML, wantSkip: hint + " (this is the uml bed)"},
		{name: "uml bed with require fails", kind: BedUML, mustBeInBed: true,
			wantFatal: hint + " (this is the uml bed)" + forbid},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := &recordTB{TB: t}
			requireVM(r, tt.kind, tt.mustBeInBed, "./internal/testbed")
			if r.skipped != tt.wantSkip {
				t.Errorf("skip = %q, want %q", r.skipped, tt.wantSkip)
			}
			if r.fataled != tt.wantFatal {
				t.Errorf("fatal = %q, want %q", r.fataled, tt.wantFatal)
			}
		})
	}
}

func TestCountCPUList(t *testing.T) {
	tests := []struct {
		in   string
		want int
		bad  bool
	}{
		{in: "0", want: 1},
		{in: "0-1", want: 2},
		{in: "0-3,6,8-9", want: 7},
		{in: "", bad: true},
		{in: "3-1", bad: true},
		{in: "0-x", bad: true},
	}
	for _, tt := range tests {
		got, err := countCPUList(tt.in)
		if tt.bad {
			if err == nil {
				t.Errorf("countCPUList(%q) = %d, want an error", tt.in, got)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("countCPUList(%q) = %d, %v, want %d", tt.in, got, err, tt.want)
		}
	}
}
