package vswitchd

import (
	"errors"
	"fmt"
)

// exitCmd is ovs-appctl exit [--cleanup]. Plain exit stops the daemon and
// leaves its datapaths, ports and flows in the kernel, so traffic keeps
// flowing and the next start reattaches. With --cleanup it first deletes
// what the daemon created, as ovs-vswitchd does: every bridge's datapath
// ports (internal ports and their network devices vanish; system devices
// are only detached) and the datapath ovs-system. The reply comes once
// that is done, so that when ovs-appctl returns the kernel is clean
// (ovs-vswitchd 3.1 answers first and cleans up as it exits, so its
// callers wait for the process to end; they may still do that here).
func (d *Daemon) exitCmd(args []string) (string, error) {
	cleanup := false
	if len(args) == 1 {
		if args[0] != "--cleanup" {
			return "", fmt.Errorf("exit: unknown option %q (the only one is --cleanup)", args[0])
		}
		cleanup = true
	}
	var err error
	if cleanup {
		err = d.Cleanup()
	}
	d.Exit()
	if err != nil {
		return "", fmt.Errorf("exit --cleanup: %w", err)
	}
	return "", nil
}

// Cleanup stops every bridge and deletes its ports and, with the last,
// the shared datapath ovs-system, and keeps the
// daemon from bringing up bridges afterwards (a database change arriving
// meanwhile must not recreate one). It is for a daemon about to stop.
func (d *Daemon) Cleanup() error {
	d.mu.Lock()
	d.exiting = true
	names := make([]string, 0, len(d.bridges))
	for _, b := range d.bridges {
		names = append(names, b.Name)
	}
	d.mu.Unlock()
	var errs []error
	for _, name := range names {
		if err := d.destroyBridge(d.takeDown(name), name); err != nil {
			errs = append(errs, fmt.Errorf("bridge %s: %w", name, err))
		}
	}
	if len(names) == 0 {
		// A datapath an earlier run left, with no bridge to come up on it.
		errs = append(errs, d.destroyBridge(nil, ""))
	}
	// The kernel's timeout policies are the namespace's: one that a
	// connection still uses cannot go, and stays (not an error of exit).
	if err := d.ctZones.Cleanup(); err != nil {
		d.log.Info("exit --cleanup: " + err.Error())
	}
	return errors.Join(errs...)
}

// errExiting refuses to start a bridge after Cleanup.
var errExiting = errors.New("govswitchd is exiting (exit --cleanup)")
