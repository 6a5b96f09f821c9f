// Command profswitchd is govswitchd with profiles: the same daemon
// (vswitchd.ParseArgs, New, Run), plus, before govswitchd's own options,
//
//	--cpuprofile FILE   write a pprof CPU profile of the whole run to FILE
//	--memprofile FILE   on SIGUSR1 (and when the daemon stops) write the
//	                    runtime's memory statistics to FILE.txt, then a
//	                    heap profile, after a GC, to FILE
//
// (at least one of them). bench/scenarios/bed.sh runs it once in the
// exact-match regime so the results page can say where govswitchd's CPU
// goes in the bed, and bench/scenarios/mem.sh with --memprofile (and
// GODEBUG=memprofilerate=1, so every allocation is sampled) to say what
// holds its heap at steady state. The CPU profile is written when the
// daemon stops (SIGTERM or SIGINT); a daemon that fails to start writes
// none.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"runtime"
	"runtime/pprof"
	"syscall"

	"github.com/govswitch/govswitch/internal/nothp"
	"github.com/govswitch/govswitch/vswitchd"
)

func main() {
	nothp.Reexec() // as govswitchd
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintf(os.Stderr, "profswitchd: %v\n", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	var cpuPath, memPath string
	for len(args) >= 2 && (args[0] == "--cpuprofile" || args[0] == "--memprofile") {
		if args[0] == "--cpuprofile" {
			cpuPath = args[1]
		} else {
			memPath = args[1]
		}
		args = args[2:]
	}
	if cpuPath == "" && memPath == "" {
		fmt.Fprintln(os.Stderr, "usage: profswitchd [--cpuprofile FILE] [--memprofile FILE] [govswitchd options]")
		os.Exit(2)
	}
	cfg, _, _, err := vswitchd.ParseArgs(args)
	if err != nil {
		return err
	}
	d, err := vswitchd.New(cfg, nil, nil)
	if err != nil {
		return err
	}
	var cpu *os.File
	if cpuPath != "" {
		if cpu, err = os.Create(cpuPath); err != nil {
			return err
		}
		if err := pprof.StartCPUProfile(cpu); err != nil {
			return err
		}
	}
	if memPath != "" {
		usr1 := make(chan os.Signal, 1)
		signal.Notify(usr1, syscall.SIGUSR1)
		go func() {
			for range usr1 {
				if err := writeMem(memPath); err != nil {
					fmt.Fprintf(os.Stderr, "profswitchd: %v\n", err)
				}
			}
		}()
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	runErr := d.Run(ctx)
	stop()
	if cpu != nil {
		pprof.StopCPUProfile()
		if err := cpu.Close(); err != nil {
			return err
		}
	}
	if memPath != "" {
		if err := writeMem(memPath + ".stop"); err != nil {
			return err
		}
	}
	return runErr
}

// writeMem writes runtime.MemStats as read now (before any forced GC) to
// path.txt, and the heap profile after a GC to path.
func writeMem(path string) error {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	txt := fmt.Sprintf("Sys %d\nHeapSys %d\nHeapInuse %d\nHeapAlloc %d\nHeapIdle %d\nHeapReleased %d\n"+
		"StackInuse %d\nStackSys %d\nMSpanInuse %d\nMSpanSys %d\nMCacheSys %d\nBuckHashSys %d\n"+
		"GCSys %d\nOtherSys %d\nNextGC %d\nNumGC %d\nMallocs %d\nFrees %d\nTotalAlloc %d\nGoroutines %d\n",
		ms.Sys, ms.HeapSys, ms.HeapInuse, ms.HeapAlloc, ms.HeapIdle, ms.HeapReleased,
		ms.StackInuse, ms.StackSys, ms.MSpanInuse, ms.MSpanSys, ms.MCacheSys, ms.BuckHashSys,
		ms.GCSys, ms.OtherSys, ms.NextGC, ms.NumGC, ms.Mallocs, ms.Frees, ms.TotalAlloc, runtime.NumGoroutine())
	if err := os.WriteFile(path+".txt", []byte(txt), 0o644); err != nil {
		return err
	}
	var sb []byte
	buf := make([]byte, 1<<20)
	sb = append(sb, buf[:runtime.Stack(buf, true)]...)
	if err := os.WriteFile(path+".goroutines", sb, 0o644); err != nil {
		return err
	}
	runtime.GC()
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := pprof.Lookup("heap").WriteTo(f, 0); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
