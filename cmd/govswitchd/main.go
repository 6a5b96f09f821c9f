// Command govswitchd is a Go replacement for ovs-vswitchd over the Linux
// openvswitch kernel datapath. See vswitchd.Usage, or govswitchd --help.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/govswitch/govswitch/vswitchd"
)

func main() {
	cfg, help, version, err := vswitchd.ParseArgs(os.Args[1:])
	switch {
	case err != nil:
		fmt.Fprintf(os.Stderr, "govswitchd: %v\n", err)
		os.Exit(1)
	case help:
		fmt.Print(vswitchd.Usage)
		return
	case version:
		fmt.Println(vswitchd.Version)
		return
	}
	d, err := vswitchd.New(cfg, nil, nil)
	if err != nil {
		fmt.Fprintf(os.Stderr, "govswitchd: %v\n", err)
		os.Exit(1)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	if err := d.Run(ctx); err != nil {
		fmt.Fprintf(os.Stderr, "govswitchd: %v\n", err)
		os.Exit(1)
	}
}
