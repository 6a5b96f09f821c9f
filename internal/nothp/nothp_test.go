package nothp

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// TestMain doubles as the child of TestReexec: with NOTHP_CHILD=1 the test
// binary reports whether it started with THP disabled (the re-executed
// image) and otherwise calls reexec as if the kernel's mode were "always".
func TestMain(m *testing.M) {
	if os.Getenv("NOTHP_CHILD") == "1" {
		on, err := unix.PrctlRetInt(unix.PR_GET_THP_DISABLE, 0, 0, 0, 0)
		if err != nil {
			fmt.Println("prctl:", err)
			os.Exit(1)
		}
		if on == 1 {
			restoreName()
			comm, _ := os.ReadFile("/proc/self/comm")
			fmt.Println("re-executed with THP disabled, args", strings.Join(os.Args[1:], " "), "name", strings.TrimSpace(string(comm)))
			os.Exit(0)
		}
		reexec(func() bool { return true })
		fmt.Println("not re-executed")
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func TestReexec(t *testing.T) {
	// The kernel names the child after the file executed, its first 15
	// bytes; the re-executed image must get the same name back, not "exe".
	name := filepath.Base(os.Args[0])
	if len(name) > 15 {
		name = name[:15]
	}
	for _, c := range []struct {
		env, want string
	}{
		{"", "re-executed with THP disabled, args -test.run=none x y name " + name},
		{Env + "=1", "not re-executed"},
	} {
		cmd := exec.Command(os.Args[0], "-test.run=none", "x", "y")
		cmd.Env = append(os.Environ(), "NOTHP_CHILD=1")
		if c.env != "" {
			cmd.Env = append(cmd.Env, c.env)
		}
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%s: child: %v\n%s", c.env, err, out)
		}
		if got := strings.TrimSpace(string(out)); got != c.want {
			t.Errorf("%s: child said %q, want %q", c.env, got, c.want)
		}
	}
}
