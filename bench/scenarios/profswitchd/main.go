// Command profswitchd is govswitchd with a CPU profile: the same daemon
// (vswitchd.ParseArgs, New, Run), plus
//
//	--cpuprofile FILE   write a pprof CPU profile of the whole run to FILE
//
// which must come first. bench/scenarios/bed.sh runs it once in the
// exact-match regime so the results page can say where govswitchd's CPU
// goes in the bed. The profile is written when the daemon stops (SIGTERM or
// SIGINT); a daemon that fails to start writes none.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"runtime/pprof"
	"syscall"

	"github.com/govswitch/govswitch/vswitchd"
)

func main() {
	args := os.Args[1:]
	if len(args) < 2 || args[0] != "--cpuprofile" {
		fmt.Fprintln(os.Stderr, "usage: profswitchd --cpuprofile FILE [govswitchd options]")
		os.Exit(2)
	}
	path := args[1]
	cfg, _, _, err := vswitchd.ParseArgs(args[2:])
	if err != nil {
		fmt.Fprintf(os.Stderr, "profswitchd: %v\n", err)
		os.Exit(1)
	}
	d, err := vswitchd.New(cfg, nil, nil)
	if err != nil {
		fmt.Fprintf(os.Stderr, "profswitchd: %v\n", err)
		os.Exit(1)
	}
	f, err := os.Create(path)
	if err != nil {
		fmt.Fprintf(os.Stderr, "profswitchd: %v\n", err)
		os.Exit(1)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		fmt.Fprintf(os.Stderr, "profswitchd: %v\n", err)
		os.Exit(1)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	runErr := d.Run(ctx)
	stop()
	pprof.StopCPUProfile()
	if err := f.Close(); err != nil {
		fmt.Fprintf(os.Stderr, "profswitchd: %v\n", err)
		os.Exit(1)
	}
	if runErr != nil {
		fmt.Fprintf(os.Stderr, "profswitchd: %v\n", runErr)
		os.Exit(1)
	}
}
