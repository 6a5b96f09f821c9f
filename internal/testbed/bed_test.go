package testbed

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestInBed(t *testing.T) {
	modDir := t.TempDir() // stands in for /sys/module/openvswitch
	notDir := filepath.Join(modDir, "file")
	if err := os.WriteFile(notDir, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		env    string
		modDir string
		want   bool
	}{
		{name: "bed and module", env: "1", modDir: modDir, want: true},
		{name: "module without bed env", env: "", modDir: modDir, want: false},
		{name: "bed env other value", env: "true", modDir: modDir, want: false},
		{name: "bed env without module", env: "1", modDir: filepath.Join(modDir, "missing"), want: false},
		{name: "module path not a directory", env: "1", modDir: notDir, want: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			getenv := func(k string) string {
				if k == EnvBed {
					return tt.env
				}
				return ""
			}
			if got := inBed(getenv, tt.modDir); got != tt.want {
				t.Errorf("inBed(%s=%q, %s) = %v, want %v", EnvBed, tt.env, tt.modDir, got, tt.want)
			}
		})
	}
}

// recordTB is a testing.TB that records Skip and Fatal instead of ending
// the goroutine.
type recordTB struct {
	testing.TB
	skipped, fataled string
}

func (r *recordTB) Helper()           {}
func (r *recordTB) Skip(args ...any)  { r.skipped = strings.TrimSpace(sprint(args)) }
func (r *recordTB) Fatal(args ...any) { r.fataled = strings.TrimSpace(sprint(args)) }
func sprint(args []any) (s string) {
	for _, a := range args {
		s += " " + a.(string)
	}
	return s
}

func TestRequire(t *testing.T) {
	const hint = "needs the openvswitch kernel module: run scripts/kernel-test ./datapath/kernel"
	tests := []struct {
		name        string
		inBed       bool
		mustBeInBed bool
		wantSkip    string
		wantFatal   string
	}{
		{name: "in bed runs", inBed: true},
		{name: "in bed with require runs", inBed: true, mustBeInBed: true},
		{name: "outside skips", wantSkip: hint},
		{name: "outside with require fails", mustBeInBed: true,
			wantFatal: hint + " (GOVSWITCH_REQUIRE_BED=1 forbids skipping)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := &recordTB{TB: t}
			require(r, tt.inBed, tt.mustBeInBed, "./datapath/kernel")
			if r.skipped != tt.wantSkip {
				t.Errorf("skip message %q, want %q", r.skipped, tt.wantSkip)
			}
			if r.fataled != tt.wantFatal {
				t.Errorf("fatal message %q, want %q", r.fataled, tt.wantFatal)
			}
		})
	}
}

func TestRelPackageDir(t *testing.T) {
	tests := []struct {
		name  string
		dir   string
		gomod []string // directories holding a go.mod
		want  string
	}{
		{name: "nested package", dir: "/src/gvs/datapath/kernel", gomod: []string{"/src/gvs"}, want: "./datapath/kernel"},
		{name: "module root", dir: "/src/gvs", gomod: []string{"/src/gvs"}, want: "."},
		{name: "nearest go.mod wins", dir: "/src/gvs/tools/x", gomod: []string{"/src/gvs", "/src/gvs/tools"}, want: "./x"},
		{name: "unclean path", dir: "/src/gvs/flow/../internal/testbed/", gomod: []string{"/src/gvs"}, want: "./internal/testbed"},
		{name: "no module", dir: "/tmp/elsewhere", gomod: nil, want: "./..."},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			exists := func(p string) bool {
				for _, d := range tt.gomod {
					if p == filepath.Join(d, "go.mod") {
						return true
					}
				}
				return false
			}
			if got := relPackageDir(tt.dir, exists); got != tt.want {
				t.Errorf("relPackageDir(%q) = %q, want %q", tt.dir, got, tt.want)
			}
		})
	}
}

// TestRequireOutsideBed runs the real Require where the test binary runs.
// On a host (no bed) it must skip with the hint naming this package; in
// the bed it must let the test go on. Skipped when GOVSWITCH_REQUIRE_BED=1
// on a host, where Require rightly fails.
func TestRequireOutsideBed(t *testing.T) {
	if InBed() {
		r := &recordTB{TB: t}
		Require(r)
		if r.skipped != "" || r.fataled != "" {
			t.Fatalf("Require in the bed stopped the test: skip %q, fatal %q", r.skipped, r.fataled)
		}
		return
	}
	if os.Getenv(EnvRequireBed) == "1" {
		t.Skip("GOVSWITCH_REQUIRE_BED=1 outside the bed: Require fails here by design")
	}
	r := &recordTB{TB: t}
	Require(r)
	const want = "needs the openvswitch kernel module: run scripts/kernel-test ./internal/testbed"
	if r.skipped != want {
		t.Fatalf("Require outside the bed skipped with %q, want %q", r.skipped, want)
	}
}

func TestHtons(t *testing.T) {
	tests := []struct {
		name string
		in   uint16
		wire [2]byte
	}{
		{name: "ETH_P_ALL", in: 0x0003, wire: [2]byte{0x00, 0x03}},
		{name: "IPv4", in: 0x0800, wire: [2]byte{0x08, 0x00}},
		{name: "both bytes", in: 0xabcd, wire: [2]byte{0xab, 0xcd}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var mem [2]byte
			binary.NativeEndian.PutUint16(mem[:], htons(tt.in))
			if mem != tt.wire {
				t.Errorf("htons(%#04x) lies in memory as % x, want % x", tt.in, mem, tt.wire)
			}
		})
	}
}
