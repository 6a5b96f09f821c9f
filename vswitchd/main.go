package vswitchd

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
)

// Main is govswitchd's main: it parses os.Args as ovs-vswitchd's command
// line, daemonizes as asked, runs the daemon until a signal or
// ovs-appctl exit, and returns the exit status. Errors are printed on
// stderr under the name the program was run by ("ovs-vswitchd: ..."
// when it stands in for ovs-vswitchd), and logged at EMER to the log file
// and syslog once the daemon has a log.
func Main() int {
	prog := filepath.Base(os.Args[0])
	fail := func(err error) int {
		fmt.Fprintf(os.Stderr, "%s: %v\n", prog, err)
		return 1
	}
	cfg, help, version, err := ParseArgs(os.Args[1:])
	switch {
	case err != nil:
		return fail(err)
	case help:
		fmt.Print(Usage)
		return 0
	case version:
		fmt.Println(Version)
		fmt.Println(VersionCompat)
		return 0
	}
	ready, err := Daemonize(cfg)
	if err != nil {
		return fail(err)
	}
	d, err := New(cfg, nil, nil)
	if err != nil {
		return fail(err)
	}
	d.OnReady = ready
	d.Mlockall()
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	defer stop()
	if err := d.Run(ctx); err != nil {
		d.Fatal(err)
		return fail(err)
	}
	return 0
}
