// Package testbed is the test support for code that needs the real
// openvswitch kernel module: it tells a test whether it runs inside the
// kernel test bed (User-Mode Linux booted by scripts/kernel-test), makes
// network namespaces joined by veth pairs, and sends and captures raw
// Ethernet frames on them.
//
// Tests that need the module are named TestIntegration* and begin with
// Require. Outside the bed they skip with a message naming the command that
// runs them; inside it they run. Everything a helper creates is removed in
// t.Cleanup, so a test leaves the bed as it found it.
//
// The helpers need root (CAP_NET_ADMIN, CAP_SYS_ADMIN for namespaces and
// CAP_NET_RAW for packet sockets). They report failures with t.Fatal, so
// they must be called from the test's own goroutine.
package testbed

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// Environment variables that steer the bed.
const (
	// EnvBed is set to "1" by scripts/kernel-test for every process it
	// starts inside the bed.
	EnvBed = "GOVSWITCH_BED"
	// EnvRequireBed, when "1", turns Require's skip into a failure, so that
	// a run that was meant to exercise the kernel (CI, the bed itself) cannot
	// pass by skipping.
	EnvRequireBed = "GOVSWITCH_REQUIRE_BED"
)

// moduleDir is where sysfs shows the openvswitch module once it is loaded.
const moduleDir = "/sys/module/openvswitch"

// InBed reports whether the caller runs inside the kernel test bed: EnvBed
// is "1" and the openvswitch kernel module is loaded. It is cheap enough to
// call per test.
func InBed() bool {
	return inBed(os.Getenv, moduleDir)
}

// inBed is InBed with its two inputs made explicit, so that both can be
// faked in unit tests on a host without the module.
func inBed(getenv func(string) string, modDir string) bool {
	if getenv(EnvBed) != "1" {
		return false
	}
	fi, err := os.Stat(modDir)
	return err == nil && fi.IsDir()
}

// Require lets the calling test go on only inside the bed. Outside it the
// test is skipped with a message naming the command that runs it, or fails
// if EnvRequireBed is "1". Call it first in every TestIntegration* test and
// benchmark.
func Require(tb testing.TB) {
	tb.Helper()
	require(tb, InBed(), os.Getenv(EnvRequireBed) == "1", packageDir())
}

// require is Require with its inputs made explicit for unit tests. tb.Skip
// and tb.Fatal do not return on a real testing.T; the explicit returns keep
// a fake TB from running on.
func require(tb testing.TB, inBed, mustBeInBed bool, pkgDir string) {
	tb.Helper()
	if inBed {
		return
	}
	skipOrFail(tb, mustBeInBed, "needs the openvswitch kernel module: run scripts/kernel-test "+pkgDir)
}

// skipOrFail ends a test that cannot run here: a skip with msg, or, when
// mustBeInBed (EnvRequireBed is "1"), a failure.
func skipOrFail(tb testing.TB, mustBeInBed bool, msg string) {
	tb.Helper()
	if mustBeInBed {
		tb.Fatal(msg + " (" + EnvRequireBed + "=1 forbids skipping)")
		return
	}
	tb.Skip(msg)
}

// packageDir names the package under test as a path relative to the module
// root ("./internal/testbed"), from the working directory go test gives a
// test binary (its package directory). It falls back to "./..." when the
// module root cannot be found.
func packageDir() string {
	wd, err := os.Getwd()
	if err != nil {
		return "./..."
	}
	return relPackageDir(wd, fileExists)
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return !errors.Is(err, os.ErrNotExist)
}

// relPackageDir walks up from dir to the nearest directory holding go.mod
// and returns dir relative to it, in the "./a/b" form go commands accept.
func relPackageDir(dir string, exists func(string) bool) string {
	dir = filepath.Clean(dir)
	for root := dir; ; {
		if exists(filepath.Join(root, "go.mod")) {
			rel, err := filepath.Rel(root, dir)
			if err != nil {
				return "./..."
			}
			if rel == "." {
				return "."
			}
			return "./" + filepath.ToSlash(rel)
		}
		parent := filepath.Dir(root)
		if parent == root {
			return "./..."
		}
		root = parent
	}
}
