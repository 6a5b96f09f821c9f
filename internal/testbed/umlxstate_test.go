package testbed

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestUMLXstateShim builds scripts/lib/uml-xstate.c, the ptrace wrapper
// that lets UML boot on hosts whose XSAVE image is larger than its own FP
// buffer, and runs its checks against a fake kernel with an AMX-sized
// image (scripts/lib/uml-xstate-test.c), for both buffer sizes UML builds
// use, under AddressSanitizer and UBSan. It also builds the library and
// the probe as scripts/kernel-test does, warnings as errors, and runs the
// probe, which must report this host's image size.
func TestUMLXstateShim(t *testing.T) {
	gcc, err := exec.LookPath("gcc")
	if err != nil {
		t.Fatal("gcc is needed to build the UML bed's ptrace wrapper (scripts/install-deps installs it)")
	}
	lib := filepath.Join(moduleRoot(t), "scripts", "lib")
	dir := t.TempDir()
	build := func(out string, args ...string) {
		t.Helper()
		cmd := exec.Command(gcc, append([]string{"-Wall", "-Wextra", "-Werror", "-o", out}, args...)...)
		cmd.Dir = lib
		if b, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("gcc %s: %v\n%s", strings.Join(args, " "), err, b)
		}
	}
	for _, size := range []int{832, 2696} {
		bin := filepath.Join(dir, "check-"+strconv.Itoa(size))
		build(bin, "-O1", "-g", "-fsanitize=address,undefined", "-fno-sanitize-recover=all",
			"-DUMLSZ="+strconv.Itoa(size), "uml-xstate-test.c")
		out, err := exec.Command(bin).CombinedOutput()
		t.Logf("UML buffer %d:\n%s", size, out)
		if err != nil {
			t.Fatalf("UML buffer %d: %v", size, err)
		}
		if !strings.Contains(string(out), "uml-xstate-test: ok: UML buffer "+strconv.Itoa(size)) {
			t.Fatalf("UML buffer %d: no ok line", size)
		}
	}
	build(filepath.Join(dir, "uml-xstate.so"), "-O2", "-shared", "-fPIC", "uml-xstate.c", "-ldl")
	probe := filepath.Join(dir, "probe")
	build(probe, "-O2", "-DUML_XSTATE_PROBE", "uml-xstate.c")
	if os.Geteuid() != 0 {
		return // the probe traces a child; fine as any user, but CI runs as root anyway
	}
	out, err := exec.Command(probe).Output()
	if err != nil {
		t.Fatalf("probe: %v", err)
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(out)))
	if err != nil || n < 576 || n%8 != 0 {
		t.Fatalf("probe printed %q: want the XSAVE image size in bytes", out)
	}
	t.Logf("this host's XSAVE image: %d bytes", n)
}
