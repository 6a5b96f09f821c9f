package ofproto

import (
	"bytes"
	"time"

	"github.com/govswitch/govswitch/datapath"
	"github.com/govswitch/govswitch/flow"
)

// Revalidator tunables from OVS.
const (
	revalidateBatch   = 50                     // deletes and modifies per Operate
	overLimitMaxIdle  = 100 * time.Millisecond // max-idle while above the flow limit
	minDynamicLimit   = 1000
	dumpSlowWarn      = 2000 * time.Millisecond
	dumpSlowShrink    = 1300 * time.Millisecond
	dumpFastGrowBelow = 1000 * time.Millisecond
)

func (u *Udpif) revalidatorLoop() {
	t := time.NewTicker(u.cfg.RevalidateInterval)
	defer t.Stop()
	for {
		select {
		case <-u.stop:
			return
		case <-t.C:
			u.revalidate()
		case <-u.x.changed():
			u.revalidate()
		case <-u.wake:
			u.revalidate()
		case req := <-u.kick:
			if req.purge {
				req.done <- u.purge()
			} else {
				u.revalidate()
				req.done <- nil
			}
		}
	}
}

// revalRequest is work for the revalidator goroutine: a pass now, or a
// purge. done receives the outcome.
type revalRequest struct {
	purge bool
	done  chan error
}

// Revalidate runs a revalidation pass now and returns when it is done
// (ovs-appctl revalidator/wait). It returns at once if the Udpif is
// stopped or not started.
func (u *Udpif) Revalidate() {
	if !u.started.Load() {
		return
	}
	req := revalRequest{done: make(chan error, 1)}
	select {
	case u.kick <- req:
		<-req.done
	case <-u.stop:
	}
}

// Wake asks the revalidator for a pass now, without waiting for it: call
// it after a change that translation depends on and that the flow tables'
// version does not cover (a MAC table change). Wakes coalesce. It never
// blocks.
func (u *Udpif) Wake() {
	select {
	case u.wake <- struct{}{}:
	default:
	}
}

// Sync returns once every datapath flow agrees with the flow tables and
// the MAC table as they were when Sync was called: flows translated
// before then have been re-translated, and fixed or deleted, by a
// revalidation pass that began after it. A barrier waits for it, so that
// once ovs-ofctl has its barrier reply the next packet meets the new
// rules. If nothing changed since the last pass it returns at once; Syncs
// that wait together share one pass. It returns at once if the Udpif is
// not running.
func (u *Udpif) Sync() {
	if !u.started.Load() {
		return
	}
	tv, mv := u.x.versions()
	for {
		u.syncMu.Lock()
		if u.syncedTables >= tv && u.syncedMAC >= mv {
			u.syncMu.Unlock()
			return
		}
		// A pass that began after the change will do; ask for one only
		// if none is under way, so a barrier costs one pass, not two.
		covered := u.running && u.runningTables >= tv && u.runningMAC >= mv
		ch := u.passed
		u.syncMu.Unlock()
		if !covered {
			u.Wake()
		}
		select {
		case <-ch:
		case <-u.stop:
			return
		}
	}
}

// synced records that a finished pass made the datapath consistent with
// tables version tv and MAC version mv, and releases Sync's waiters.
func (u *Udpif) synced(tv, mv uint64) {
	u.syncMu.Lock()
	u.syncedTables, u.syncedMAC = max(u.syncedTables, tv), max(u.syncedMAC, mv)
	u.running = false
	close(u.passed)
	u.passed = make(chan struct{})
	u.syncMu.Unlock()
}

// quiesce waits until every handler that is in the middle of a batch has
// finished it. A pass calls it after reading the versions it will check
// against: a batch that began before could have translated with older
// tables and be about to install the result, and the dump must see that
// flow; a batch that begins after translates with these versions or
// newer.
func (u *Udpif) quiesce() {
	for _, hd := range u.handlers {
		s := hd.busy.Load()
		if s&1 == 0 {
			continue
		}
		for hd.busy.Load() == s {
			select {
			case <-u.stop:
				return
			default:
			}
			time.Sleep(20 * time.Microsecond)
		}
	}
}

// revalidate is one pass: dump the datapath's flows, credit their new
// packets to the OpenFlow rules, delete idle flows and those past the
// flow limit, re-translate flows whose tables or MAC entries changed
// (fixing or deleting them), adopt flows from an earlier run, forget
// ukeys whose flows vanished, adjust the dynamic flow limit by how long
// the dump took, and expire OpenFlow flow timeouts.
func (u *Udpif) revalidate() {
	// The versions first, then the handlers' in-flight batches: see
	// quiesce. Translate reads the version before the tables, so a flow
	// labelled with a version was translated with that version or a newer.
	u.syncMu.Lock()
	tablesV, macV := u.x.versions()
	u.running, u.runningTables, u.runningMAC = true, tablesV, macV
	u.syncMu.Unlock()
	// Take the change tokens this pass answers (after marking it running,
	// so a Sync that saw no pass under way and woke us is answered by this
	// one): changes after the versions were read post new ones.
	select {
	case <-u.x.changed():
	default:
	}
	select {
	case <-u.wake:
	default:
	}
	u.quiesce()

	start := time.Now()
	u.gen++
	gen := u.gen
	st, err := u.dp.Stats()
	if err != nil {
		// A datapath that cannot be read cannot be fixed either: release
		// Sync's waiters rather than hold barriers forever.
		u.synced(tablesV, macV)
		return
	}
	nflows := int(st.Flows)
	u.nFlows.Store(int64(nflows))
	u.nFlowsAt.Store(start.UnixNano())
	limit := int(u.flowLimit.Load())
	maxIdle := u.cfg.MaxIdle
	if nflows > limit {
		maxIdle = overLimitMaxIdle
	}
	kill := nflows > 2*limit
	terse := !u.firstDump.Swap(false) && u.dp.Features().UFID
	exact := u.disableMegaflows.Load()

	var dels, mods []datapath.Op
	var out Out
	netflows := u.netflows.Load() > 0
	now := start
	u.dp.DumpFlows(terse, func(f *datapath.Flow) error {
		k := u.ukeys.Lookup(&f.UFID)
		if k == nil {
			if f.Terse || !u.adopt(f, now, exact, &out) {
				u.c.stale.Add(1)
				dels = append(dels, deleteOp(f))
			}
			return nil
		}
		k.seenGen = gen
		if f.Stats.Packets > k.packets {
			dp, db := f.Stats.Packets-k.packets, f.Stats.Bytes-k.bytes
			for _, r := range k.rules {
				r.Value.Credit(dp, db, now)
			}
			if netflows {
				u.netflowCredit(k, dp, db, f.Stats.TCPFlags, now) // netflow_bridge.go
			}
			if k.bondID != 0 {
				creditBond(k.bondID, k.bucket, db) // bond_rebalance.go
			}
			k.activeAt = now.UnixNano()
			if k.learns {
				u.relearn(k, now) // xlate_learn.go
			}
			if k.fin {
				u.finRevalidate(k, f.Stats.TCPFlags, now) // xlate_fintimeout.go
			}
		}
		k.packets, k.bytes = f.Stats.Packets, f.Stats.Bytes
		switch {
		case kill:
			u.c.killed.Add(1)
			dels = append(dels, deleteOp(f))
		case now.UnixNano()-k.activeAt > int64(maxIdle):
			u.c.idleDeleted.Add(1)
			dels = append(dels, deleteOp(f))
		case k.tablesVersion != tablesV || k.macVersion != macV:
			switch u.retranslate(k, now, exact, &out) {
			case retransDelete:
				dels = append(dels, deleteOp(f))
			case retransModify:
				mods = append(mods, datapath.Op{Kind: datapath.OpPut, Flags: datapath.PutModify,
					Flow: datapath.Flow{UFID: k.ufid, Key: k.Key(), Mask: *k.Mask(), Actions: append([]byte(nil), k.actions...)}})
			}
		}
		return nil
	})

	// Ukeys whose flows were not in the dump are gone from the datapath
	// (deleted by someone else, or a put that raced a flush): forget them.
	// Ukeys created during the dump are younger than its start.
	var vanished []datapath.UFID
	u.ukeys.Range(func(k *ukey) {
		if k.installed && k.seenGen != gen && k.activeAt < start.UnixNano() {
			vanished = append(vanished, k.ufid)
		}
	})
	for i := range vanished {
		u.ukeys.Remove(&vanished[i])
	}

	u.operateChunks(dels, func(op *datapath.Op) {
		if netflows {
			u.netflowClear(&op.Flow.UFID)
		}
		u.ukeys.Remove(&op.Flow.UFID)
		if op.Err == nil {
			u.c.deleted.Add(1)
			u.nFlows.Add(-1)
		}
	})
	u.operateChunks(mods, func(op *datapath.Op) {
		if op.Err == nil {
			u.c.modified.Add(1)
		} else {
			u.ukeys.Remove(&op.Flow.UFID)
		}
	})

	d := time.Since(start)
	u.c.dumpNanos.Store(int64(d))
	u.c.dumps.Add(1)
	u.flowLimit.Store(int64(nextFlowLimit(limit, nflows, d, u.cfg.FlowLimit)))

	u.synced(tablesV, macV)
	u.sweepRecirc(start)

	done := time.Now()
	// Expired OpenFlow flows change the tables' version (and post a
	// Changed token); expired MAC entries only the MAC table's: either
	// way the flows that used them are translated again at once.
	u.x.expire(done)
	if _, mv := u.x.versions(); mv != macV {
		u.Wake()
	}
}

// nextFlowLimit is OVS's dynamic flow limit: shrink when a dump is slow,
// grow by 1000 when it is fast and the datapath holds more than the limit
// could sustain, clamp to [1000, ceiling].
func nextFlowLimit(limit, nflows int, d time.Duration, ceiling int) int {
	ms := int(d.Milliseconds())
	if ms < 1 {
		ms = 1
	}
	switch {
	case d > dumpSlowWarn:
		limit /= ms / 1000
	case d > dumpSlowShrink:
		limit = limit * 3 / 4
	case d < dumpFastGrowBelow && limit < nflows*1000/ms:
		limit += 1000
	}
	lo := min(minDynamicLimit, ceiling)
	return min(ceiling, max(limit, lo))
}

func deleteOp(f *datapath.Flow) datapath.Op {
	op := datapath.Op{Kind: datapath.OpDelete}
	op.Flow.UFID = f.UFID
	if f.UFID.IsZero() {
		op.Flow.Key = f.Key
	}
	return op
}

// operateChunks sends ops in batches and calls done for each afterwards.
func (u *Udpif) operateChunks(ops []datapath.Op, done func(*datapath.Op)) {
	for len(ops) > 0 {
		n := min(len(ops), revalidateBatch)
		chunk := ops[:n]
		if err := u.dp.Operate(chunk); err != nil {
			for i := range chunk {
				chunk[i].Err = err
			}
		}
		for i := range chunk {
			done(&chunk[i])
		}
		ops = ops[n:]
	}
}

type retransResult uint8

const (
	retransKeep retransResult = iota
	retransModify
	retransDelete
)

// translateFlow translates a flow's key as the handler would, returning
// the fitted megaflow mask in out.WC.
// userspace says the translation depends on fields the datapath cannot
// key (needsNDExt): no datapath flow may stand for it.
func (u *Udpif) translateFlow(key *flow.Key, now time.Time, exact bool, out *Out) (userspace bool) {
	u.x.Translate(key, now, false, out)
	userspace = needsNDExt(key, &out.WC, exact)
	if exact {
		out.WC = flow.ExactMask()
	}
	datapath.FitMask(key, &out.WC)
	return userspace
}

// retranslate re-translates a ukey after its tables or MAC entries
// changed. Same actions: keep. New actions: modify the flow. As OVS's
// revalidate_ukey, a flow whose installed mask still covers every bit the
// new translation depends on stays (narrower than needed, it still
// describes one translation: every packet it matches translates alike);
// one the new translation needs more bits of no longer does: delete it
// and let the next packet upcall.
func (u *Udpif) retranslate(k *ukey, now time.Time, exact bool, out *Out) retransResult {
	key := k.Key()
	userspace := u.translateFlow(&key, now, exact, out)
	k.tablesVersion, k.macVersion = out.TablesVersion, out.MACVersion
	k.setRules(&out.Rules, out.NRules)
	k.learns = out.HasLearn
	k.fin = out.nFins > 0
	out.applyFinTimeouts(0)                             // the translation's fin_timeouts are k.fin's business now
	k.bondID, k.bucket = out.acct.id(), out.acct.bucket // bond_rebalance.go
	k.nfFlood = out.nfFlood
	if userspace || out.WC != *k.Mask() && !k.Mask().Covers(&out.WC) {
		return retransDelete
	}
	acts, ok := out.InstallActions() // a slow-pathed flow's: xlate_slow.go
	if !ok {
		return retransDelete
	}
	if bytes.Equal(acts, k.actions) {
		return retransKeep
	}
	k.actions = append(k.actions[:0], acts...)
	return retransModify
}

// adopt takes over a flow found in the datapath with no ukey, typically
// one installed by a previous run of the switch: if translating its key
// now gives the same mask and actions, it is ours and stays, forwarding
// in the kernel throughout the restart.
func (u *Udpif) adopt(f *datapath.Flow, now time.Time, exact bool, out *Out) bool {
	key := f.Key.Apply(&f.Mask)
	userspace := u.translateFlow(&key, now, exact, out)
	if acts, ok := out.InstallActions(); !ok || userspace || out.WC != f.Mask || !bytes.Equal(acts, f.Actions) {
		return false
	}
	if f.UFID.IsZero() {
		return false
	}
	k, _ := u.ukeys.Insert(&f.UFID, func(k *ukey) {
		u.ukeys.setFlow(k, &key, &f.Mask)
		k.hash = key.HashMasked(&f.Mask, 0)
		k.actions = append(k.actions[:0], f.Actions...)
		k.setRules(&out.Rules, out.NRules)
		k.tablesVersion, k.macVersion = out.TablesVersion, out.MACVersion
		k.packets, k.bytes = f.Stats.Packets, f.Stats.Bytes
		k.activeAt = now.UnixNano()
		k.installed = true
		k.fin = out.nFins > 0
		k.bondID, k.bucket = out.acct.id(), out.acct.bucket
	})
	if k == nil {
		return false
	}
	u.c.adopted.Add(1)
	return true
}
