// Command govbench is the flow-setup benchmark, compatible with the old
// ovs-benchmark: govbench [-r IP[:PORTS]] [-l [IP][:PORTS]] [-s N] [-b N]
// [-c RATE] [-T SECS] [--order ovs|both] [--json] rate|latency|listen.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/govswitch/govswitch/bench"
)

func main() {
	inv, err := bench.ParseArgs(os.Args[1:])
	if err != nil {
		fmt.Fprintf(os.Stderr, "govbench: %v (use --help for help)\n", err)
		os.Exit(1)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := bench.Run(ctx, inv, os.Stdout); err != nil {
		fmt.Fprintf(os.Stderr, "govbench: %v\n", err)
		os.Exit(1)
	}
}
