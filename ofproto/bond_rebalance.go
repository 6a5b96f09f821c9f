package ofproto

import (
	"fmt"
	"sort"
	"sync"
	"sync/atomic"
	"time"
)

// Rebalancing of balance-slb and balance-tcp bonds, as OVS's
// bond_rebalance: the revalidator credits each datapath flow's bytes to
// the hash bucket its output hashed into (the flow's ukey remembers it);
// every bond-rebalance-interval the bond's runner moves buckets from the
// most loaded enabled member to the least loaded one while that narrows
// the gap by enough, then halves every bucket's count (an exponentially
// weighted moving average). A move makes the bond choose again and every
// datapath flow re-translate, so the moved flows take their new member.

// bondAcct is the balanced bond and bucket a translation's output hashed
// into.
type bondAcct struct {
	bond   *Bond
	bucket uint8
}

// id is the accounting slot of the translation's bond, 0 for none.
func (a *bondAcct) id() uint16 {
	if a.bond == nil {
		return 0
	}
	return a.bond.acctID
}

// bondByID holds the rebalancing bonds by accounting slot: a ukey names
// its bond by a 16-bit slot rather than a pointer, to stay 256 bytes.
// Slots are reused once a bond is gone; a ukey of a gone bond that still
// names the slot credits its bytes to the slot's next bond until the
// revalidator re-translates it, a few bytes of skew at most.
var (
	bondByID   [4096]atomic.Pointer[Bond]
	bondSlotMu sync.Mutex
	bondSlots  []uint16 // free slots
	bondNext   uint16   = 1
)

// registerBondAcct gives bd a slot; 0 when all are taken (bd then
// rebalances on no load).
func registerBondAcct(bd *Bond) uint16 {
	bondSlotMu.Lock()
	defer bondSlotMu.Unlock()
	var id uint16
	switch {
	case len(bondSlots) > 0:
		id, bondSlots = bondSlots[len(bondSlots)-1], bondSlots[:len(bondSlots)-1]
	case int(bondNext) < len(bondByID):
		id = bondNext
		bondNext++
	default:
		return 0
	}
	bondByID[id].Store(bd)
	return id
}

// releaseBondAcct frees bd's slot.
func releaseBondAcct(bd *Bond) {
	id := bd.acctID
	if id == 0 {
		return
	}
	bondSlotMu.Lock()
	defer bondSlotMu.Unlock()
	if bondByID[id].CompareAndSwap(bd, nil) {
		bondSlots = append(bondSlots, id)
	}
}

// creditBond credits bytes to bucket h of the bond in slot id. It is
// called by the revalidator and neither locks nor allocates.
func creditBond(id uint16, h uint8, bytes uint64) {
	if int(id) < len(bondByID) {
		if bd := bondByID[id].Load(); bd != nil {
			bd.tx[h].Add(bytes)
		}
	}
}

// rebalances reports whether the bond's mode rebalances at all.
func (bd *Bond) rebalances() bool {
	m := bd.Config.Mode
	return bd.Config.RebalanceInterval > 0 && (m == BondBalanceSLB || m == BondBalanceTCP)
}

// balanced is bond_is_balanced: the bond rebalances now (not while it
// falls back to active-backup, or carries nothing).
func (st *bondState) balanced() bool {
	b := st.balance()
	return st.bond.rebalances() && (b == BondBalanceSLB || b == BondBalanceTCP)
}

// rebalanceAt is when the next rebalancing is due, zero for none.
func (bd *Bond) rebalanceAt() time.Time {
	if !bd.rebalances() {
		return time.Time{}
	}
	bd.mu.Lock()
	defer bd.mu.Unlock()
	return bd.nextRebalance
}

// rebalanceDue reports whether a rebalancing is due at now, and schedules
// the next (the first one interval after the bond starts).
func (bd *Bond) rebalanceDue(now time.Time) bool {
	if !bd.rebalances() {
		return false
	}
	bd.mu.Lock()
	defer bd.mu.Unlock()
	if bd.nextRebalance.IsZero() {
		bd.nextRebalance = now.Add(bd.Config.RebalanceInterval)
		return false
	}
	if now.Before(bd.nextRebalance) {
		return false
	}
	bd.nextRebalance = now.Add(bd.Config.RebalanceInterval)
	return true
}

// rebalance moves buckets between st's enabled members as
// bond_rebalance does and decays the counts; it reports whether a bucket
// moved.
func (bd *Bond) rebalance(st *bondState, now time.Time) bool {
	if !st.balanced() {
		return false
	}
	type member struct {
		name    string
		tx      uint64
		entries []int // buckets, by load, descending
	}
	bd.mu.Lock()
	defer bd.mu.Unlock()
	var load [bondBuckets]uint64
	order := make([]int, bondBuckets)
	for h := range load {
		load[h] = bd.tx[h].Load()
		order[h] = h
	}
	sort.SliceStable(order, func(i, j int) bool { return load[order[i]] > load[order[j]] })
	byName := map[string]*member{}
	var bals []*member
	for i, p := range st.members {
		if st.enabled[i] {
			m := &member{name: p.Name}
			byName[p.Name] = m
			bals = append(bals, m)
		}
	}
	for _, h := range order {
		if m := byName[bd.buckets[h]]; m != nil && load[h] > 0 {
			m.tx += load[h]
			m.entries = append(m.entries, h)
		}
	}
	resort := func() { sort.SliceStable(bals, func(i, j int) bool { return bals[i].tx > bals[j].tx }) }
	resort()
	moved := false
	for len(bals) >= 2 {
		from, to := bals[0], bals[len(bals)-1]
		over := from.tx - to.tx
		if over < to.tx>>5 || over < 100000 {
			break
		}
		hs := chooseEntriesToMigrate(from.tx, to.tx, from.entries, &load)
		if len(hs) == 0 {
			bals = bals[1:]
			continue
		}
		for _, h := range hs {
			d := load[h]
			if log := bd.Config.Log; log != nil {
				log.Info(fmt.Sprintf("bond %s: shift %dkB of load (with hash %d) from %s to %s (now carrying %dkB and %dkB load, respectively)",
					bd.Config.Name, d/1024, h, from.name, to.name, (from.tx-d)/1024, (to.tx+d)/1024))
			}
			from.tx -= d
			to.tx += d
			bd.buckets[h] = to.name
			for i, e := range from.entries {
				if e == h {
					from.entries = append(from.entries[:i:i], from.entries[i+1:]...)
					break
				}
			}
		}
		resort()
		moved = true
	}
	for h := range bd.tx {
		for {
			v := bd.tx[h].Load()
			if bd.tx[h].CompareAndSwap(v, v/2) {
				break
			}
		}
	}
	return moved
}

// chooseEntriesToMigrate is choose_entries_to_migrate: the buckets of
// entries (by load, descending) to move from a member carrying fromTx to
// one carrying toTx, nil when no move improves the split by 10% of the
// ideal shift.
func chooseEntriesToMigrate(fromTx, toTx uint64, entries []int, load *[bondBuckets]uint64) []int {
	if len(entries) < 2 {
		return nil // one hash: moving it only moves the imbalance
	}
	ideal := (fromTx+toTx)/2 - toTx
	threshold := ideal / 10
	var delta uint64
	var out []int
	for _, h := range entries {
		if delta+load[h] <= ideal {
			out = append(out, h)
			delta += load[h]
		}
		if ideal-delta < threshold {
			break
		}
	}
	if len(out) == 0 {
		h := entries[len(entries)-1]
		delta = load[h]
		out = append(out, h)
	}
	newLow := min(fromTx-delta, toTx+delta)
	if newLow > toTx && newLow-toTx >= threshold {
		return out
	}
	return nil
}

// BondHashLoad is a bucket's load in bond/show.
type BondHashLoad struct {
	Hash int
	KB   uint64
}

// rebalanceStatus adds the rebalancing state to bs.
func (st *bondState) rebalanceStatus(bs *BondStatus) {
	if !st.balanced() {
		return
	}
	bd := st.bond
	bs.Balanced = true
	if t := bd.rebalanceAt(); !t.IsZero() {
		bs.NextRebalance = time.Until(t)
	} else {
		bs.NextRebalance = bd.Config.RebalanceInterval
	}
	bd.mu.Lock()
	defer bd.mu.Unlock()
	for i := range bs.Members {
		m := &bs.Members[i]
		for h := range bd.buckets {
			if kb := bd.tx[h].Load() / 1024; kb > 0 && bd.buckets[h] == m.Name {
				m.Hashes = append(m.Hashes, BondHashLoad{Hash: h, KB: kb})
			}
		}
	}
}
