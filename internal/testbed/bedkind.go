package testbed

import (
	"os"
	"testing"
)

// EnvBedKind names the bed a process runs in: scripts/kernel-test sets it
// to "uml" (User-Mode Linux, the default bed) or "vm" (Debian's own kernel
// under QEMU, with 2 vCPUs and everything UML lacks, such as conntrack
// zones).
const EnvBedKind = "GOVSWITCH_BED_KIND"

// The bed kinds BedKind reports.
const (
	BedUML = "uml"
	BedVM  = "vm"
)

// BedKind reports which bed the caller runs in: BedUML, BedVM, or "" when
// it is not inside the bed at all (see InBed). A bed that does not say
// which it is can only be an older UML one.
func BedKind() string {
	return bedKind(InBed(), os.Getenv)
}

func bedKind(inBed bool, getenv func(string) string) string {
	if !inBed {
		return ""
	}
	if k := getenv(EnvBedKind); k != "" {
		return k
	}
	return BedUML
}

// RequireVM lets the calling test go on only inside the vm bed, for tests
// that need the full kernel (more than one CPU, conntrack zones, ...). In
// the UML bed or outside any bed the test is skipped with a message naming
// the command that runs it, or fails if EnvRequireBed is "1". Such tests are
// named TestIntegrationVM*: scripts/kernel-test --bed vm runs them, and the
// UML bed leaves them out. Call it first, instead of Require.
func RequireVM(tb testing.TB) {
	tb.Helper()
	requireVM(tb, BedKind(), os.Getenv(EnvRequireBed) == "1", packageDir())
}

func requireVM(tb testing.TB, kind string, mustBeInBed bool, pkgDir string) {
	tb.Helper()
	if kind == BedVM {
		return
	}
	msg := "needs the full kernel of the vm bed: run scripts/kernel-test --bed vm " + pkgDir
	if kind != "" {
		msg += " (this is the " + kind + " bed)"
	}
	skipOrFail(tb, mustBeInBed, msg)
}
