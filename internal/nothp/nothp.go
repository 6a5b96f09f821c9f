// Package nothp keeps transparent huge pages off govswitchd's memory.
//
// With THP "always" (/sys/kernel/mm/transparent_hugepage/enabled, Debian's
// default) the kernel backs a touched 2 MB stretch of anonymous memory with
// one huge page, and the Go heap, a few MB spread over a 4 MB-aligned
// arena, becomes resident whole: in the vm bed 6 MB of huge pages where 3 MB
// of small pages would do (bench/RESULTS.md, issue 19). The runtime's
// GODEBUG=disablethp=1 and prctl(PR_SET_THP_DISABLE) both come too late from
// inside the program: the runtime has faulted its first heap pages before
// any package's init runs. PR_SET_THP_DISABLE is kept across execve, so
// Reexec sets it and executes the binary again, before anything else runs.
package nothp

import (
	"bytes"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// Env, when set to 1, keeps huge pages as the kernel has them (no re-exec):
// for measuring what they cost or buy.
const Env = "GOVSWITCH_HUGEPAGES"

// Reexec disables transparent huge pages for this process and its image
// after exec, and re-executes /proc/self/exe with the same arguments and
// environment, when the kernel's THP mode is "always" and THP is not yet
// disabled. It returns when nothing needs doing, or when a step fails (the
// program then runs with THP as the kernel has it); on success it does not
// return. Call it first thing in main. The re-executed image takes back
// the process name the first one had (restoreName).
func Reexec() { reexec(alwaysMode) }

func reexec(always func() bool) {
	restoreName()
	if os.Getenv(Env) == "1" || !always() {
		return
	}
	if on, err := unix.PrctlRetInt(unix.PR_GET_THP_DISABLE, 0, 0, 0, 0); err != nil || on != 0 {
		return // already disabled (we are the re-executed image), or no prctl
	}
	if err := unix.Prctl(unix.PR_SET_THP_DISABLE, 1, 0, 0, 0); err != nil {
		return
	}
	// Exec returns only on failure; the process then carries on with THP
	// disabled from here on, which is still better than not at all.
	_ = unix.Exec("/proc/self/exe", os.Args, os.Environ())
}

func alwaysMode() bool {
	b, err := os.ReadFile("/sys/kernel/mm/transparent_hugepage/enabled")
	return err == nil && bytes.Contains(b, []byte("[always]"))
}

// restoreName undoes what executing /proc/self/exe does to the process's
// name: the kernel names a process (comm: ps, pidof, pkill, top) after the
// file executed, so the re-executed image is "exe". Every thread named so
// takes the name the first image had, the base name of argv[0] as the
// kernel keeps it (15 bytes).
func restoreName() {
	if !isExe("/proc/self/comm") {
		return
	}
	name := filepath.Base(os.Args[0])
	if len(name) > 15 {
		name = name[:15]
	}
	tasks, _ := os.ReadDir("/proc/self/task")
	for _, t := range tasks {
		if f := "/proc/self/task/" + t.Name() + "/comm"; isExe(f) {
			_ = os.WriteFile(f, []byte(name), 0)
		}
	}
}

func isExe(commFile string) bool {
	b, err := os.ReadFile(commFile)
	return err == nil && string(bytes.TrimSpace(b)) == "exe"
}
