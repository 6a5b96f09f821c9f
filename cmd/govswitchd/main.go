// Command govswitchd is a Go replacement for ovs-vswitchd over the Linux
// openvswitch kernel datapath. It takes ovs-vswitchd's command line and
// environment; see vswitchd.Usage, or govswitchd --help.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"github.com/govswitch/govswitch/vswitchd"
)

func main() {
	// Errors name the program as it was run: "ovs-vswitchd: ..." when
	// it stands in for ovs-vswitchd.
	prog := filepath.Base(os.Args[0])
	fatal := func(err error) {
		fmt.Fprintf(os.Stderr, "%s: %v\n", prog, err)
		os.Exit(1)
	}
	cfg, help, version, err := vswitchd.ParseArgs(os.Args[1:])
	switch {
	case err != nil:
		fatal(err)
	case help:
		fmt.Print(vswitchd.Usage)
		return
	case version:
		fmt.Println(vswitchd.Version)
		return
	}
	ready, err := vswitchd.Daemonize(cfg)
	if err != nil {
		fatal(err)
	}
	d, err := vswitchd.New(cfg, nil, nil)
	if err != nil {
		fatal(err)
	}
	d.OnReady = ready
	d.Mlockall()
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	defer stop()
	if err := d.Run(ctx); err != nil {
		d.Fatal(err)
		fatal(err)
	}
}
