package vswitchd

// other_config:flow-restore-wait, as ovs-vswitchd 3.1 implements it on
// the kernel datapath, for ovs-ctl's restart and force-reload-kmod
// (ovs-save saves the OpenFlow tables, the daemon is restarted with the
// key true, the tables are restored with ovs-ofctl, the key is removed).
// While it is true when the shared datapath is opened, the datapath's
// flows are neither flushed nor revalidated and no upcall is handled (no
// handlers, no revalidator, so no idle expiry either): the kernel goes on
// forwarding by the old daemon's flows while OpenFlow flow_mods fill the
// new tables. When the key turns false or goes away, every datapath flow
// is deleted and the handlers and revalidator start, so new misses are
// translated by the restored tables. Controllers wait too (dynamic.go,
// connectHeldControllers). As in ovs-vswitchd the key is read
// only until it is first seen false: setting it true later does nothing.

// flowRestore is the daemon's flow-restore-wait state, guarded by bkMu.
type flowRestore struct {
	wait bool // the database says true and it has not yet been false
	done bool // the key has been false or absent: never read again
	held bool // the shared backer was opened while waiting and not started
}

// setFlowRestoreWait applies the Open_vSwitch row's flow-restore-wait.
// Called on the monitor's goroutine before the bridges of the same
// database state are built.
func (d *Daemon) setFlowRestoreWait(wait bool) {
	d.bkMu.Lock()
	defer d.bkMu.Unlock()
	if d.frw.done {
		return
	}
	if wait {
		d.frw.wait = true
		return
	}
	d.frw.wait, d.frw.done = false, true
	if !d.frw.held {
		return
	}
	d.frw.held = false
	bk := d.backer
	if bk == nil {
		return
	}
	// ovs-vswitchd flushes the datapath here: the old flows were the
	// old daemon's translations, and their upcall actions name its
	// sockets.
	if err := bk.Udpif.Purge(); err != nil {
		d.log.Error("flow-restore-wait done: deleting the datapath's flows", "err", err)
	}
	bk.Start()
	d.log.Info("flow-restore-wait is false: datapath flows flushed, handling upcalls")
}

// flowRestoreWaiting reports whether the daemon is holding its datapath
// for a flow restore.
func (d *Daemon) flowRestoreWaiting() bool {
	d.bkMu.Lock()
	defer d.bkMu.Unlock()
	return d.frw.wait && !d.frw.done
}
