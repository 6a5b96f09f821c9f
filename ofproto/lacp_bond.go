package ofproto

import (
	"encoding/binary"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/govswitch/govswitch/datapath"
	"github.com/govswitch/govswitch/flow"
	"github.com/govswitch/govswitch/ofproto/openflow"
)

// LACP and link timing on a bond (bond.go, lacp.go): the bond's runner
// goroutine, what translation does with slow-protocols frames, the
// balance-tcp hash, and updelay/downdelay.
//
// LACPDUs reach userspace as ovs-vswitchd brings them: a frame of
// ethertype 0x8809 arriving on a member of a LACP bond translates to a
// datapath flow whose only action is userspace(pid,slow_path(lacp)) —
// the 48-byte user_action_cookie of OVS's odp-util.h, type
// USER_ACTION_COOKIE_SLOW_PATH with reason SLOW_LACP, so ovs-dpctl prints
// it as OVS's — and the upcall handler hands the packet to the bond's LACP
// machine (the miss that made the flow, and every action upcall after
// it). PDUs go out by executing the frame in the datapath with an output
// to the member.

// isLACPSlowPath reports whether userdata is a slow-path cookie for LACP
// (lacpSlowPath's, datapath.PutSlowPathCookie's layout).
func isLACPSlowPath(ud []byte) bool {
	r, ok := datapath.ParseSlowPathCookie(ud)
	return ok && r&datapath.SlowLACP != 0
}

// lacpSlowPath ends the translation of a slow-protocols frame that
// arrived on member pt of a LACP bond: the flow sends such frames to
// userspace, and this packet, if any, goes to the LACP machine (Out.lacp).
func (c *xctx) lacpSlowPath(pt *Port) {
	bd := pt.bundle()
	if bd.lacp == nil {
		return // a held member (bond_hold.go): dropped, with the mask LACP's flow will have
	}
	c.out.lacp, c.out.lacpPort = bd, pt.Name
	pid := c.x.ControllerPID.Load()
	if pid == 0 {
		return
	}
	var u [16]byte // the bridge's UUID in OVS's cookie: its Xlator.ID here
	binary.BigEndian.PutUint16(u[:], c.x.ID)
	var ck [datapath.SlowPathCookieLen]byte
	datapath.PutSlowPathCookie(ck[:], datapath.SlowLACP, pt.OFPort, &u)
	c.out.Actions = datapath.AppendUserspace(c.out.Actions, pid, ck[:])
}

// isLACPFrame reports whether the translation of key, arriving on pt, is
// LACP's: a slow-protocols frame on a member of a bond running LACP, or
// of a bond not set up yet, or on a port of one interface running LACP.
func isLACPFrame(key *flow.Key, pt *Port) bool {
	if key.EthType != EthTypeSlow {
		return false
	}
	if pt.LACPBundle != nil {
		return pt.LACPBundle.lacp != nil
	}
	return pt.Bond != nil && (pt.Bond.lacp != nil || pt.Bond.Config.Mode == bondDrop)
}

// lacpReceive hands a packet that translated to LACP's slow path to its
// bond's machine, and wakes the bond's runner when the machine changed.
func lacpReceive(out *Out, packet []byte, now time.Time) {
	bd := out.lacp
	if bd == nil || bd.lacp == nil {
		return
	}
	payload, _ := slowPayload(packet)
	if _, changed := bd.lacp.ProcessPDU(out.lacpPort, payload, now); changed {
		bd.kick()
	}
}

// lacpUpcall is an action upcall from a LACP slow-path flow.
func (u *Udpif) lacpUpcall(up *datapath.Upcall, now time.Time, out *Out) {
	u.x.Translate(&up.Key, now, false, out)
	lacpReceive(out, up.Packet, now)
}

// bondDrop is the balance of a bond that carries nothing: LACP is
// configured and not negotiated without lacp-fallback-ab, or balance-tcp
// without LACP negotiated.
const bondDrop BondMode = 255

// balance is the mode the bond runs in now, as choose_output_member and
// bond_check_admissibility decide it from the LACP status.
func (st *bondState) balance() BondMode {
	c := &st.bond.Config
	if st.lacp == LACPConfigured {
		if c.LACP == nil || !c.LACP.FallbackAB {
			return bondDrop
		}
		return BondActiveBackup
	}
	if c.Mode == BondBalanceTCP && st.lacp != LACPNegotiated {
		return bondDrop
	}
	return c.Mode
}

// fallbackAB reports lacp-fallback-ab.
func (st *bondState) fallbackAB() bool {
	return st.bond.Config.LACP != nil && st.bond.Config.LACP.FallbackAB
}

// memberEnabledIn reports whether pt is an enabled member of st.
func (st *bondState) memberEnabledIn(pt *Port) bool {
	for i, p := range st.members {
		if p == pt {
			return st.enabled[i]
		}
	}
	return false
}

// bondHash5 is the balance-tcp hash of the flow, as OVS's
// flow_hash_5tuple, and adds the fields it read to the megaflow (the
// symmetric L3/L4 fields; unlike OVS 3.1, ARP addresses and ICMP type and
// code too, since they are hashed).
func (c *xctx) bondHash5(basis uint32) uint32 {
	f, wc := &c.flow, &c.out.WC
	h := basis
	switch f.EthType {
	case flow.EthTypeIPv6:
		for i := 0; i < 32; i += 8 {
			var w uint64
			if i < 16 {
				w = binary.NativeEndian.Uint64(f.IPv6Src[i:])
			} else {
				w = binary.NativeEndian.Uint64(f.IPv6Dst[i-16:])
			}
			h = mhashAdd(h, uint32(w))
			h = mhashAdd(h, uint32(w>>32))
		}
		wc.IPv6Src, wc.IPv6Dst = ones16, ones16
	case flow.EthTypeIPv4, flow.EthTypeARP:
		h = mhashAdd(h, binary.NativeEndian.Uint32(f.IPv4Src[:]))
		h = mhashAdd(h, binary.NativeEndian.Uint32(f.IPv4Dst[:]))
		wc.IPv4Src, wc.IPv4Dst = [4]byte{0xff, 0xff, 0xff, 0xff}, [4]byte{0xff, 0xff, 0xff, 0xff}
	default:
		return mhashFinish(h ^ 42)
	}
	h = mhashAdd(h, uint32(f.NwProto))
	wc.NwProto = 0xff
	switch f.NwProto {
	case 6, 17, 132, 1, 58:
	default:
		return mhashFinish(h ^ 42)
	}
	var ports [4]byte
	binary.BigEndian.PutUint16(ports[0:], f.TpSrc)
	binary.BigEndian.PutUint16(ports[2:], f.TpDst)
	h = mhashAdd(h, binary.NativeEndian.Uint32(ports[:]))
	wc.TpSrc, wc.TpDst = 0xffff, 0xffff
	return mhashFinish(h ^ 42)
}

// newBond makes the Bond of configuration c on bridge b, with its LACP
// machine when c asks for LACP: the system id defaults to the bridge's
// MAC address and the system priority to 65534 (65535 for a port of one
// interface), as bridge.c's port_configure_lacp.
func (b *Bridge) newBond(c BondConfig) *Bond {
	bd := &Bond{Config: c}
	if bd.rebalances() {
		bd.acctID = registerBondAcct(bd) // bond_rebalance.go
	}
	if c.LACP != nil {
		lc := *c.LACP
		if lc.SysID == ([6]byte{}) {
			lc.SysID = b.lacpSysID()
		}
		if lc.SysPriority == 0 {
			lc.SysPriority = 65534
			if c.Single {
				lc.SysPriority = 65535
			}
		}
		// bd.Config keeps what was asked (SetBonds compares it with the
		// next configuration); the machine has the defaults filled in.
		bd.lacp = NewLACP(c.Name, lc, c.LACPLog)
	}
	return bd
}

// lacpSysID is the default LACP system id: the bridge's Ethernet address
// (its own port's), as bridge.c's port_configure_lacp takes the bridge's
// ea; before that port is known, the low 48 bits of the datapath id,
// which are the same address unless other_config:datapath-id says
// otherwise.
func (b *Bridge) lacpSysID() [6]byte {
	if lp := b.Ports.Snapshot().ByOF(openflow.PortLocal); lp != nil && lp.HWAddr != ([6]byte{}) {
		return lp.HWAddr
	}
	id := b.DatapathID()
	return [6]byte{byte(id >> 40), byte(id >> 32), byte(id >> 24), byte(id >> 16), byte(id >> 8), byte(id)}
}

// LACP returns the bond's LACP machine, nil without LACP.
func (bd *Bond) LACP() *LACP { return bd.lacp }

// lacpEqual compares what SetBonds must start afresh for.
func (c *BondConfig) lacpEqual(d *BondConfig) bool {
	if (c.LACP == nil) != (d.LACP == nil) || c.Updelay != d.Updelay || c.Downdelay != d.Downdelay || c.RebalanceInterval != d.RebalanceInterval ||
		c.MiimonInterval != d.MiimonInterval ||
		len(c.LACPMembers) != len(d.LACPMembers) {
		return false
	}
	if c.LACP != nil && *c.LACP != *d.LACP {
		return false
	}
	for k, v := range c.LACPMembers {
		if w, ok := d.LACPMembers[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// linkStatus sets st's may_enable and enabled states, as bond_run's
// bond_link_status_update: a member whose may_enable (administratively
// up, carrier, and LACP's verdict) differs from its enabled state
// changes after updelay or downdelay. Its first sight enables it at once
// if it may be. lost reports a member disabled. The caller holds bd.mu.
func (bd *Bond) linkStatus(st *bondState, now time.Time) (lost bool) {
	n := len(st.members)
	st.mayEnable, st.delayLeft = make([]bool, n), make([]time.Duration, n)
	st.lacp = LACPOff
	if bd.lacp != nil {
		for _, p := range st.members {
			mc := bd.Config.LACPMembers[p.Name]
			id, pri := mc.PortID, mc.PortPriority
			if id == 0 {
				id = uint16(p.OFPort)
			}
			if pri == 0 {
				pri = 0xffff
			}
			bd.lacp.RegisterMember(p.Name, id, pri, mc.Key)
		}
		st.lacp = bd.lacp.Status()
	}
	if bd.delay == nil {
		bd.delay = map[string]time.Time{}
	}
	log := bd.Config.Log
	say := func(format string, a ...any) {
		if log != nil {
			log.Info(fmt.Sprintf(format, a...))
		}
	}
	word := map[bool]string{true: "enabled", false: "disabled"}
	for i, p := range st.members {
		lacpOK := bd.lacp == nil || bd.lacp.MayEnable(p.Name)
		st.mayEnable[i] = bd.linkUp(p) && lacpOK
		up := bd.memberEnabled(p) && lacpOK
		was, seen := bd.was[p.Name]
		if !seen {
			say("member %s: %s", p.Name, word[up])
			bd.was[p.Name], st.enabled[i] = up, up
			continue
		}
		exp, pending := bd.delay[p.Name]
		if (up == was) == pending {
			say("member %s: link state %s", p.Name, map[bool]string{true: "up", false: "down"}[up])
			if up == was {
				delete(bd.delay, p.Name)
				pending = false
				say("member %s: will not be %s", p.Name, word[!up])
			} else {
				d := bd.Config.Downdelay
				if up {
					d = bd.Config.Updelay
				}
				exp, pending = now.Add(d), true
				bd.delay[p.Name] = exp
				if d > 0 {
					say("member %s: will be %s if it stays %s for %d ms", p.Name, word[up],
						map[bool]string{true: "up", false: "down"}[up], d.Milliseconds())
				}
			}
		}
		if pending && !now.Before(exp) {
			delete(bd.delay, p.Name)
			pending = false
			was = up
			say("member %s: %s", p.Name, word[up])
		}
		if pending {
			st.delayLeft[i] = exp.Sub(now)
		}
		lost = lost || bd.was[p.Name] && !was
		bd.was[p.Name], st.enabled[i] = was, was
	}
	bd.kick() // the runner follows carrier changes into LACP
	return lost
}

// skipUpdelay is bond_choose_member's last resort: with no member
// enabled, the member that may be enabled whose updelay ends first is
// enabled now. The caller holds bd.mu.
func (bd *Bond) skipUpdelay(st *bondState) *Port {
	best := -1
	for i, p := range st.members {
		exp, pending := bd.delay[p.Name]
		if pending && st.mayEnable[i] && bd.memberEnabled(p) && (best < 0 || exp.Before(bd.delay[st.members[best].Name])) {
			best = i
		}
	}
	if best < 0 {
		return nil
	}
	p := st.members[best]
	if log := bd.Config.Log; log != nil {
		log.Info(fmt.Sprintf("bond %s: active member is now %s, skipping remaining %d ms updelay (since no member was enabled)",
			bd.Config.Name, p.Name, st.delayLeft[best].Milliseconds()))
	}
	delete(bd.delay, p.Name)
	st.delayLeft[best] = 0
	st.enabled[best] = true
	bd.was[p.Name] = true
	return p
}

// nextDelay is when the earliest pending delay ends (zero: none), and
// whether one has ended by now.
func (bd *Bond) nextDelay(now time.Time) (next time.Time, due bool) {
	bd.mu.Lock()
	defer bd.mu.Unlock()
	for _, t := range bd.delay {
		if next.IsZero() || t.Before(next) {
			next = t
		}
	}
	return next, !next.IsZero() && !now.Before(next)
}

// bondRunner is a bond's goroutine: it runs the LACP machine (sending
// its PDUs) and re-chooses when LACP or a delay changes a member.
type bondRunner struct {
	kick chan struct{}
	done chan struct{}
	wg   sync.WaitGroup
}

func (bd *Bond) kick() {
	if r := bd.run; r != nil {
		select {
		case r.kick <- struct{}{}:
		default:
		}
	}
}

// startBondRunners starts the runners of the bonds the bridge's ports are
// members of that need one (LACP, updelay or downdelay), and stops those
// of old bonds no port is a member of any more. The caller holds b.mu.
func (b *Bridge) startBondRunners(old map[string]*Bond) {
	cur := map[*Bond]bool{}
	for _, p := range b.Ports.Snapshot().List() {
		if bd := p.bundle(); bd != nil {
			cur[bd] = true
		}
	}
	for _, bd := range old {
		if !cur[bd] {
			bd.stopRunner()
			releaseBondAcct(bd)
		}
	}
	for bd := range cur {
		// Every bond has a runner: besides LACP, delays and
		// rebalancing, it sends learning packets (bond_learning.go).
		// A placeholder (bond_hold.go) carries nothing and needs none.
		if bd.run == nil && bd.Config.Mode != bondDrop {
			r := &bondRunner{kick: make(chan struct{}, 1), done: make(chan struct{})}
			bd.mu.Lock()
			bd.run = r
			bd.mu.Unlock()
			r.wg.Add(1)
			go bd.runLoop(b, r)
		}
	}
}

// stopBondRunners stops every runner of the bridge's bonds (Stop).
func (b *Bridge) stopBondRunners() {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, p := range b.Ports.Snapshot().List() {
		if bd := p.bundle(); bd != nil {
			bd.stopRunner()
			releaseBondAcct(bd)
		}
	}
}

func (bd *Bond) stopRunner() {
	bd.mu.Lock()
	r := bd.run
	bd.mu.Unlock()
	if r == nil {
		return
	}
	select {
	case <-r.done:
	default:
		close(r.done)
	}
	r.wg.Wait()
}

// runLoop is the runner: each wake-up (a kick, a PDU or expiry due, a
// delay ending, or a second at most) tells LACP of carrier changes, runs
// it, sends its PDUs on the members, and republishes the ports (the bond
// chooses again) and re-translates when something changed.
func (bd *Bond) runLoop(b *Bridge, r *bondRunner) {
	defer r.wg.Done()
	carrier := map[string]bool{}
	var tx []lacpTx
	var frame, acts []byte
	var learning []learningPacket
	// current is what currentBits said last time (lacp_current);
	// currentKnown is false before the first look, which tells the
	// database layer too.
	var current uint64
	currentKnown := false
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		select {
		case <-r.done:
			return
		case <-r.kick:
		case <-timer.C:
		}
		now := time.Now()
		changed := false
		st := b.Ports.Snapshot().bonds[bd]
		var miimonNext time.Time
		if b.hostDevices || miimonAnyDatapath {
			changed, miimonNext = bd.pollMiimon(st, now) // bond_miimon.go
		}
		if st != nil && bd.lacp != nil {
			if bd.Config.LACP.SysID == ([6]byte{}) {
				bd.lacp.setSysID(b.lacpSysID()) // the bridge's address may have changed
			}
			for _, p := range st.members {
				bd.mu.Lock()
				up := bd.linkUp(p)
				bd.mu.Unlock()
				if _, known := bd.lacp.carrierKnown(p.Name); !known {
					continue
				}
				switch was, ok := carrier[p.Name]; {
				case !ok:
					bd.lacp.carrierFirst(p.Name, up)
				case was != up:
					bd.lacp.CarrierChanged(p.Name, up, now)
				default:
					continue
				}
				carrier[p.Name] = up
				changed = true
			}
			var ch bool
			tx, ch = bd.lacp.Run(now, tx[:0])
			changed = changed || ch
			for i := range tx {
				var p *Port
				for _, m := range st.members {
					if m.Name == tx[i].Member {
						p = m
					}
				}
				if p == nil || b.DP == nil {
					continue
				}
				frame = appendLACPFrame(frame[:0], p.HWAddr, &tx[i].Actor, &tx[i].Partn)
				key := flow.Extract(frame, flow.Metadata{})
				acts = datapath.AppendOutput(acts[:0], p.DPPort)
				if err := b.DP.Execute(frame, &key, acts); err != nil && bd.Config.LACPLog != nil {
					bd.Config.LACPLog.Warn(fmt.Sprintf("%s: sending a LACP PDU on %s failed: %v", bd.Config.Name, p.Name, err))
				}
			}
			if c := bd.currentBits(st); c != current || !currentKnown {
				current, currentKnown = c, true
				b.statusChanged()
			}
		}
		if lst := bd.takeLearning(); lst != nil {
			learning, frame, acts = bd.sendLearning(b, lst, now, learning, frame, acts) // bond_learning.go
		}
		if st != nil && bd.rebalanceDue(now) && bd.rebalance(st, now) { // bond_rebalance.go
			changed = true
		}
		if _, due := bd.nextDelay(now); changed || due {
			b.Ports.republish()
			b.Tables.Invalidate()
		}
		next, _ := bd.nextDelay(now)
		if t := bd.rebalanceAt(); !t.IsZero() && (next.IsZero() || t.Before(next)) {
			next = t
		}
		if !miimonNext.IsZero() && (next.IsZero() || miimonNext.Before(next)) {
			next = miimonNext
		}
		if bd.lacp != nil {
			if t := bd.lacp.NextWake(); !t.IsZero() && (next.IsZero() || t.Before(next)) {
				next = t
			}
		}
		wait := time.Second
		if !next.IsZero() {
			if d := next.Sub(time.Now()); d < wait {
				wait = d
			}
		}
		if wait < time.Millisecond {
			wait = time.Millisecond
		}
		if !timer.Stop() {
			select {
			case <-timer.C:
			default:
			}
		}
		timer.Reset(wait)
	}
}

// LACPCurrent is Interface lacp_current of port name: whether its LACP
// partner information is current, as OVS's lacp_member_is_current, that
// is, not defaulted (expired information still counts: it is current
// until the expiry timer runs out too). ok is false when name is not a
// member of a bond running LACP; the column is then empty.
func (b *Bridge) LACPCurrent(name string) (current, ok bool) {
	p := b.Ports.Snapshot().byName(name)
	if p == nil || p.bundle() == nil || p.bundle().lacp == nil {
		return false, false
	}
	return p.bundle().lacp.IsCurrent(name)
}

// currentBits is which members of st LACP deems current, a bit each by
// position (a bond has at most 64 members here, as the database layer
// allows).
func (bd *Bond) currentBits(st *bondState) uint64 {
	var v uint64
	for i, p := range st.members {
		if c, _ := bd.lacp.IsCurrent(p.Name); c && i < 64 {
			v |= 1 << i
		}
	}
	return v
}

// LACPs returns the LACP state of the bridge's bonds that run LACP, by
// bond name.
func (b *Bridge) LACPs() []LACPShow {
	var out []LACPShow
	for _, st := range b.Ports.Snapshot().bonds {
		if st.bond.lacp != nil {
			out = append(out, st.bond.lacp.Show())
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}
