package testbed

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestKernelTestScript holds scripts/kernel-test to its promise of failing
// loudly: a bed that passes when a module did not load, or when a binary ran
// no test, would let every kernel test in CI skip unnoticed. It boots UML
// once per case, so it needs root and the user-mode-linux package, and is
// skipped in -short mode and inside the bed itself.
func TestKernelTestScript(t *testing.T) {
	if testing.Short() {
		t.Skip("boots User-Mode Linux several times; skipped in -short mode")
	}
	if InBed() {
		t.Skip("no UML inside UML")
	}
	if os.Geteuid() != 0 {
		t.Skip("scripts/kernel-test needs root")
	}
	if _, err := exec.LookPath("linux.uml"); err != nil {
		t.Skip("user-mode-linux is not installed (scripts/install-deps --test installs it)")
	}
	root := moduleRoot(t)

	tests := []struct {
		name   string
		env    []string
		args   []string
		wantRC int      // exact exit status; -1 means any non-zero
		want   []string // substrings of the combined output
	}{
		{
			name:   "exec sees the bed",
			args:   []string{"--exec", `test "$GOVSWITCH_BED" = 1 && test -d /sys/module/openvswitch && test -d /sys/module/veth && test -d /proc/sys/net/ipv6 && mountpoint -q /tmp && mountpoint -q /run && test -c /dev/null && mountpoint -q /dev/shm && ip netns add probe && ip netns list | grep -q probe && echo bed-ok`},
			wantRC: 0,
			want:   []string{"bed-ok", "booted in"},
		},
		{
			name:   "exec status passes through",
			args:   []string{"--exec", "exit 7"},
			wantRC: 7,
			want:   []string{"exit status 7"},
		},
		{
			name:   "module that does not load",
			env:    []string{"BED_EXTRA_MODULES=gvs-no-such-module"},
			args:   []string{"--exec", "true"},
			wantRC: -1,
			want:   []string{"modprobe gvs-no-such-module failed", "UML console tail"},
		},
		{
			name:   "binary that runs no test",
			args:   []string{"-q", "--run", "^TestNoSuchTest$", "./internal/testbed"},
			wantRC: -1,
			want:   []string{"ran no test matching ^TestNoSuchTest$", "UML console tail", "0 passed, 0 failed"},
		},
		{
			name:   "kernel that panics names the cause",
			env:    []string{"BED_KERNEL_ARGS=init=/gvs-no-such-init"},
			args:   []string{"--exec", "true"},
			wantRC: -1,
			want:   []string{"UML did not boot to its init", "console lines naming a cause", "Kernel panic - not syncing"},
		},
		{
			// The ptrace wrapper that hosts with a large XSAVE image need
			// must not disturb a host that does not need it.
			name:   "uml-xstate preloaded where UML needs no help",
			env:    []string{"BED_UML_XSTATE=always"},
			args:   []string{"--exec", "for i in 1 2 3 4; do sha256sum /bin/bash & done; wait; echo xstate-ok"},
			wantRC: 0,
			want:   []string{"preloading uml-xstate.so", "xstate-ok"},
		},
		{
			name:   "guest that hangs",
			args:   []string{"--bed-timeout", "8", "--exec", "sleep 600"},
			wantRC: -1,
			want:   []string{"guest timed out after 8s"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cmd := exec.Command(filepath.Join(root, "scripts", "kernel-test"), tt.args...)
			cmd.Dir = root
			cmd.Env = append(os.Environ(), tt.env...)
			out, err := cmd.CombinedOutput()
			rc := 0
			var ee *exec.ExitError
			if errors.As(err, &ee) {
				rc = ee.ExitCode()
			} else if err != nil {
				t.Fatalf("run kernel-test: %v", err)
			}
			switch {
			case tt.wantRC >= 0 && rc != tt.wantRC:
				t.Errorf("exit status %d, want %d", rc, tt.wantRC)
			case tt.wantRC < 0 && rc == 0:
				t.Errorf("exit status 0, want a failure")
			}
			for _, w := range tt.want {
				if !strings.Contains(string(out), w) {
					t.Errorf("output lacks %q", w)
				}
			}
			if t.Failed() {
				t.Logf("output:\n%s", out)
			}
			// A failing run keeps its folder for people; tests clean up.
			for _, line := range strings.Split(string(out), "\n") {
				if dir, ok := strings.CutPrefix(line, "kernel-test: run folder kept: "); ok && strings.Contains(dir, "/.bed/run.") {
					os.RemoveAll(dir)
				}
			}
		})
	}
}

// moduleRoot is the directory holding go.mod, above the test's package
// directory.
func moduleRoot(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.mod above the working directory")
		}
		dir = parent
	}
}
