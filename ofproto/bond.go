package ofproto

import (
	"fmt"
	"log/slog"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Bonds, as ovs-vswitchd's bond.c has them for a Port with several
// Interfaces: every member is an OpenFlow port of its own (an output to it
// goes to that device only), and NORMAL treats the members together as one
// bundle: it learns addresses on the bond, floods to it once, and sends
// each flow to one member; what arrives on a member that should not carry
// it is dropped. A member may be enabled while its device has carrier, is
// administratively up and, on a bond with LACP (lacp.go, lacp_bond.go),
// while LACP says so; bond_updelay and bond_downdelay hold a change back
// (bond-detect-mode carrier, or miimon: bond_miimon.go).
// balance-tcp needs LACP negotiated, as OVS's, and hashes in the kernel
// with hash(l4) and recirculation (xlate_bond.go), or, without the hash
// action, the 5-tuple in translation (lacp_bond.go). A member lost or a
// new active member sends learning packets (bond_learning.go).

// BondMode is a bond's bond_mode.
type BondMode uint8

const (
	// BondActiveBackup sends everything on one member, the active one,
	// and accepts only what arrives there.
	BondActiveBackup BondMode = iota
	// BondBalanceSLB spreads flows over the enabled members by a hash of
	// the source MAC and VLAN; broadcast and multicast are accepted on the
	// active member only, and a frame whose source was learned on another
	// port is dropped (it is our own flood come back on another member).
	BondBalanceSLB
	// BondBalanceTCP spreads flows by a hash of their L3 and L4 headers;
	// it carries traffic only while LACP is negotiated (or, with
	// lacp-fallback-ab, as active-backup while it is not).
	BondBalanceTCP
)

// String returns the mode as bond_mode spells it.
func (m BondMode) String() string {
	switch m {
	case BondBalanceSLB:
		return "balance-slb"
	case BondBalanceTCP:
		return "balance-tcp"
	}
	return "active-backup"
}

// ParseBondMode parses a bond_mode value this switch implements.
func ParseBondMode(s string) (BondMode, error) {
	switch s {
	case "", "active-backup":
		return BondActiveBackup, nil
	case "balance-slb":
		return BondBalanceSLB, nil
	case "balance-tcp":
		return BondBalanceTCP, nil
	}
	return 0, fmt.Errorf("bond_mode %q is not supported by govswitchd (active-backup, balance-slb and balance-tcp are)", s)
}

// BondConfig is one bond as the configuration asks for it.
type BondConfig struct {
	Name    string // the Port's name
	Mode    BondMode
	Members []string // device names of member ports of the bridge
	// Primary is other_config:bond-primary, the member active-backup
	// prefers while it is enabled ("" none).
	Primary string
	// HashBasis is other_config:bond-hash-basis.
	HashBasis uint32
	// AllMembersActive is other_config:all-members-active: balance-slb
	// accepts broadcast and multicast on every member, not only on the
	// active one.
	AllMembersActive bool
	// LACP is the bond's LACP configuration, nil for lacp=off;
	// LACPMembers the members' settings by name (absent: defaults).
	LACP        *LACPConfig
	LACPMembers map[string]LACPMemberConfig
	// Updelay and Downdelay are bond_updelay and bond_downdelay: how long
	// a member's link must stay up (down) before it is enabled (disabled).
	Updelay, Downdelay time.Duration
	// RebalanceInterval is other_config:bond-rebalance-interval: how
	// often balance-slb and balance-tcp move hash buckets from the most
	// to the least loaded member (bond_rebalance.go); 0 never.
	RebalanceInterval time.Duration
	// MiimonInterval, when positive, is bond-detect-mode=miimon: each
	// member's link is its MII or ethtool link status polled this often
	// (bond_miimon.go), not its carrier.
	MiimonInterval time.Duration
	// Single is a Port of one Interface with LACP: a bundle of one
	// member that runs LACP and is no bond (Port.LACPBundle). Only
	// Name, Members (its one port), LACP, LACPMembers and the logs count.
	Single bool
	// Log, if set, is told of members enabled and disabled and of the
	// active member changing, in ovs-vswitchd's words (module bond). It
	// is no part of the configuration's identity. LACPLog gets the lacp
	// module's.
	Log, LACPLog *slog.Logger
}

func (c *BondConfig) equal(d *BondConfig) bool {
	if c.Name != d.Name || c.Single != d.Single || c.Mode != d.Mode || c.Primary != d.Primary || c.HashBasis != d.HashBasis ||
		c.AllMembersActive != d.AllMembersActive || len(c.Members) != len(d.Members) || !c.lacpEqual(d) {
		return false
	}
	for i := range c.Members {
		if c.Members[i] != d.Members[i] {
			return false
		}
	}
	return true
}

// bondBuckets is the number of SLB hash buckets, as OVS's BOND_BUCKETS.
const bondBuckets = 256

// Bond is one bond of a bridge. Its configuration never changes (a change
// makes a new Bond); the choice of active member and of each SLB bucket's
// member is sticky across port changes and lives here, under mu. What
// translation reads is the bondState of the current PortSet.
type Bond struct {
	Config BondConfig

	mu sync.Mutex
	// active is the name of the active member ("" none yet): kept while it
	// stays enabled, as OVS keeps its last active member.
	active string
	// buckets are the member names of the SLB buckets ("" unassigned).
	buckets [bondBuckets]string
	// next is the round-robin position for assigning buckets.
	next int
	// was is each member's enabled state at the last choice, for the log.
	was map[string]bool
	// nmembers is how many members the buckets were spread over: when
	// members join, the buckets are spread afresh (there is no
	// rebalancing to even them out later).
	nmembers int

	// lacp is the bond's LACP machine, nil without LACP; run is its
	// runner (lacp_bond.go), which also times updelay and downdelay.
	lacp *LACP
	run  *bondRunner
	// delay holds, by member name, when a pending enable or disable
	// takes effect (bond_updelay / bond_downdelay).
	delay map[string]time.Time
	// tx is each bucket's transmitted bytes since the last rebalancing
	// (halved at each), credited by the revalidator; nextRebalance is
	// when the runner rebalances next (bond_rebalance.go).
	tx            [bondBuckets]atomic.Uint64
	nextRebalance time.Time
	acctID        uint16 // its slot in bondByID, 0 none; set before the bond is published
	// learn is a state whose learning packets the runner is to send, nil
	// none (bond_learning.go).
	learn *bondState
	// miimon is each member's last miimon reading, miimonWarned those
	// whose reading failed (said once), miimonAt when the runner polls
	// next (bond_miimon.go); under mu but for miimonAt, the runner's.
	miimon, miimonWarned map[string]bool
	miimonAt             time.Time
}

// bondState is a bond as one PortSet sees it: immutable.
type bondState struct {
	bond    *Bond
	members []*Port // by name
	enabled []bool  // members[i] is enabled
	active  *Port   // nil when no member is enabled
	// rep is the member that stands for the bond where NORMAL walks the
	// ports (flooding) and learns: the lowest OpenFlow port number.
	rep *Port
	// buckets[h] is the member an SLB flow of hash h goes to.
	buckets [bondBuckets]*Port
	// lacp is the LACP status the choice was made with.
	lacp LACPStatus
	// mayEnable[i] is members[i]'s may_enable (carrier and LACP);
	// delayLeft[i] the updelay or downdelay still to run, 0 none.
	mayEnable []bool
	delayLeft []time.Duration
}

// bundle is the Bond whose LACP and runner the port takes part in: its
// bond, or its bundle of one; nil for none.
func (pt *Port) bundle() *Bond {
	if pt.Bond != nil {
		return pt.Bond
	}
	return pt.LACPBundle
}

// memberEnabled is the link detection: up administratively, with a
// link (carrier, or miimon's reading). The caller holds bd.mu.
func (bd *Bond) memberEnabled(p *Port) bool { return !p.Down && bd.linkUp(p) && !p.NoFwd }

// buildBondStates computes every bond's state for a new port list, and
// updates the sticky choices. The caller holds the Ports' lock.
func buildBondStates(list []*Port) map[*Bond]*bondState {
	var m map[*Bond]*bondState
	for _, pt := range list {
		bd := pt.bundle()
		if bd == nil {
			continue
		}
		if m == nil {
			m = map[*Bond]*bondState{}
		}
		st := m[bd]
		if st == nil {
			st = &bondState{bond: bd}
			m[bd] = st
		}
		st.members = append(st.members, pt)
		if st.rep == nil || pt.OFPort < st.rep.OFPort {
			st.rep = pt
		}
	}
	for _, st := range m {
		st.bond.choose(st)
	}
	return m
}

// choose picks the active member and the SLB buckets' members of st.
func (bd *Bond) choose(st *bondState) {
	sort.Slice(st.members, func(i, j int) bool { return st.members[i].Name < st.members[j].Name })
	st.enabled = make([]bool, len(st.members))
	bd.mu.Lock()
	defer bd.mu.Unlock()
	log := bd.Config.Log
	if bd.was == nil {
		bd.was = map[string]bool{}
	}
	lost := bd.linkStatus(st, time.Now()) // lacp_bond.go: may_enable, updelay, downdelay
	byName := map[string]*Port{}
	var en []*Port
	for i, p := range st.members {
		if st.enabled[i] {
			byName[p.Name] = p
			en = append(en, p)
		}
	}
	prev := bd.active
	defer func() {
		// As bond.c: a member disabled, or an active member chosen,
		// sends learning packets (bond_learning.go).
		if lost || bd.active != prev && bd.active != "" {
			bd.wantLearning(st)
		}
		switch {
		case log == nil || bd.active == prev:
		case bd.active == "":
			log.Info(fmt.Sprintf("bond %s: all members disabled", bd.Config.Name))
		default:
			log.Info(fmt.Sprintf("bond %s: active member is now %s", bd.Config.Name, bd.active))
		}
	}()
	// As bond_choose_member: the primary if enabled, else the last
	// active member if still enabled, else the first enabled member.
	switch {
	case bd.Config.Primary != "" && byName[bd.Config.Primary] != nil:
		bd.active = bd.Config.Primary
	case byName[bd.active] != nil:
	case len(en) > 0:
		bd.active = en[0].Name
	default:
		bd.active = ""
		if p := bd.skipUpdelay(st); p != nil { // lacp_bond.go
			byName[p.Name] = p
			en = append(en, p)
			bd.active = p.Name
		}
	}
	st.active = byName[bd.active]
	if bd.Config.Mode == BondActiveBackup || len(en) == 0 {
		return
	}
	if bd.nmembers != len(st.members) {
		bd.nmembers, bd.buckets, bd.next = len(st.members), [bondBuckets]string{}, 0
	}
	for h := range bd.buckets {
		p := byName[bd.buckets[h]]
		if p == nil {
			p = en[bd.next%len(en)]
			bd.next++
			bd.buckets[h] = p.Name
		}
		st.buckets[h] = p
	}
}

// outputMember is the member a frame from source MAC src in VLAN vlan
// leaves the bond by, nil when no member is enabled. It does not allocate.
func (st *bondState) outputMember(src [6]byte, vlan uint16) *Port {
	switch st.balance() {
	case BondActiveBackup:
		return st.active
	case BondBalanceSLB:
		return st.buckets[bondHashMAC(src, vlan, st.bond.Config.HashBasis)%bondBuckets]
	}
	return nil
}

// bondHashMAC hashes a source MAC and VLAN for SLB with basis, as OVS's
// hash_mac (lib/packets.h): the address and VLAN as one 64-bit word,
// hashed with hash_uint64_basis. Being the same hash, bond/hash agrees
// with ovs-vswitchd's and a MAC lands in the same bucket number.
func bondHashMAC(mac [6]byte, vlan uint16, basis uint32) uint32 {
	w := uint64(vlan)<<48 | uint64(mac[0])<<40 | uint64(mac[1])<<32 | uint64(mac[2])<<24 |
		uint64(mac[3])<<16 | uint64(mac[4])<<8 | uint64(mac[5])
	h := mhashAdd(basis, uint32(w))
	h = mhashAdd(h, uint32(w>>32))
	return mhashFinish(h ^ 8)
}

// mhashAdd and mhashFinish are OVS's murmur-based hash steps (lib/hash.h).
func mhashAdd(h, data uint32) uint32 {
	data *= 0xcc9e2d51
	data = data<<15 | data>>17
	data *= 0x1b873593
	h ^= data
	h = h<<13 | h>>19
	return h*5 + 0xe6546b64
}

func mhashFinish(h uint32) uint32 {
	h ^= h >> 16
	h *= 0x85ebca6b
	h ^= h >> 13
	h *= 0xc2b2ae35
	h ^= h >> 16
	return h
}

// BondHash is bond/hash: the SLB bucket of a MAC in a VLAN with basis.
func BondHash(mac [6]byte, vlan uint16, basis uint32) uint8 {
	return uint8(bondHashMAC(mac, vlan, basis))
}

// BondStatus is a bond as bond/show reports it.
type BondStatus struct {
	Config  BondConfig
	Members []BondMemberStatus // by name
	// Active is the active member's name, "" when none; ActiveMAC its
	// device's address.
	Active    string
	ActiveMAC [6]byte
	// LACP is the LACP status.
	LACP LACPStatus
	// Balanced says the bond rebalances now; NextRebalance is the time
	// to the next rebalancing (bond_rebalance.go).
	Balanced      bool
	NextRebalance time.Duration
	// RecircID is the recirculation id balance-tcp's output hashes in
	// the kernel with (xlate_bond.go), 0 when the bond does not
	// recirculate now.
	RecircID uint32
}

// BondMemberStatus is one member of a BondStatus.
type BondMemberStatus struct {
	Name    string
	OFPort  uint32
	Enabled bool
	// MayEnable is the device's carrier and, with LACP, LACP's verdict,
	// as ofproto-dpif hands bond.c a port's may_enable.
	MayEnable bool
	// DelayLeft is the updelay (when disabled) or downdelay (when
	// enabled) still to run, 0 when none is pending.
	DelayLeft time.Duration
	// Hashes are the member's buckets with a load of 1 kB or more, by
	// hash, while the bond is balanced.
	Hashes []BondHashLoad
}

// Bonds returns the bridge's bonds, by name.
func (b *Bridge) Bonds() []BondStatus {
	s := b.Ports.Snapshot()
	out := make([]BondStatus, 0, len(s.bonds))
	for _, st := range s.bonds {
		if st.bond.Config.Single {
			continue // no bond: bond/show does not list it
		}
		bs := BondStatus{Config: st.bond.Config}
		bs.LACP = st.lacp
		for i, p := range st.members {
			bs.Members = append(bs.Members, BondMemberStatus{Name: p.Name, OFPort: p.OFPort, Enabled: st.enabled[i],
				MayEnable: st.mayEnable[i], DelayLeft: st.delayLeft[i]})
		}
		if st.active != nil {
			bs.Active, bs.ActiveMAC = st.active.Name, st.active.HWAddr
		}
		st.rebalanceStatus(&bs) // bond_rebalance.go
		if b.X != nil && dpSupportsHash.Load() && s.mirrors == nil && st.balance() == BondBalanceTCP {
			bs.RecircID = recircs.id(&frozenState{x: b.X, bond: st.bond}, time.Now())
		}
		out = append(out, bs)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Config.Name < out[j].Config.Name })
	return out
}

// SetBonds makes cfgs the bridge's bonds: each member port joins its
// bond, ports of no bond leave theirs. A bond whose configuration changed
// starts afresh, and, as ofproto-dpif on a bundle change, the addresses
// learned on its members are forgotten. Members must be ports of the
// bridge; a bond naming a missing port is not set up and its error is in
// the map returned, by bond name (the others still apply). Every
// translation is made stale.
func (b *Bridge) SetBonds(cfgs []BondConfig) map[string]error {
	b.mu.Lock()
	defer b.mu.Unlock()
	old := map[string]*Bond{}
	for _, p := range b.Ports.Snapshot().List() {
		if bd := p.bundle(); bd != nil {
			old[bd.Config.Name] = bd
		}
	}
	want := map[string]*Bond{} // member name -> bond
	var errs map[string]error
	for i := range cfgs {
		c := cfgs[i]
		c.Members = append([]string(nil), c.Members...)
		sort.Strings(c.Members)
		bd := old[c.Name]
		if bd == nil || !bd.Config.equal(&c) {
			bd = b.newBond(c) // lacp_bond.go
		}
		var missing []string
		for _, m := range c.Members {
			if b.Ports.byName(m) == nil {
				missing = append(missing, m)
			}
		}
		if len(missing) > 0 {
			if errs == nil {
				errs = map[string]error{}
			}
			errs[c.Name] = fmt.Errorf("members %s are not ports of bridge %s", strings.Join(missing, ", "), b.Name)
			continue
		}
		for _, m := range c.Members {
			want[m] = bd
		}
	}
	changed := false
	for _, p := range b.Ports.Snapshot().List() {
		bd := want[p.Name]
		var bond, single *Bond
		if bd != nil && bd.Config.Single {
			single = bd
		} else {
			bond = bd
		}
		if p.Bond == bond && p.LACPBundle == single {
			continue
		}
		np := *p
		np.Bond, np.LACPBundle = bond, single
		if err := b.Ports.Add(np); err != nil {
			if errs == nil {
				errs = map[string]error{}
			}
			errs[bd.Config.Name] = err
			continue
		}
		b.MAC.FlushPort(p.OFPort)
		changed = true
	}
	if changed {
		b.Tables.Invalidate()
	}
	b.startBondRunners(old) // lacp_bond.go
	return errs
}

// SetActiveMember makes member the active member of bond (bond/set-
// active-member). changed is false when it already was. The errors are
// bond.c's words.
func (b *Bridge) SetActiveMember(bond, member string) (changed bool, err error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	st := b.Ports.Snapshot().bondNamed(bond)
	if st == nil {
		return false, fmt.Errorf("no such bond")
	}
	i := sort.Search(len(st.members), func(i int) bool { return st.members[i].Name >= member })
	if i == len(st.members) || st.members[i].Name != member {
		return false, fmt.Errorf("no such member")
	}
	if !st.enabled[i] {
		return false, fmt.Errorf("cannot make disabled member active")
	}
	if st.active == st.members[i] {
		return false, nil
	}
	bd := st.bond
	bd.mu.Lock()
	bd.active = member
	bd.mu.Unlock()
	if log := bd.Config.Log; log != nil {
		log.Info(fmt.Sprintf("bond %s: active member is now %s", bond, member))
	}
	b.Ports.republish()
	if nst := b.Ports.Snapshot().bonds[bd]; nst != nil {
		bd.mu.Lock()
		bd.wantLearning(nst)
		bd.mu.Unlock()
	}
	b.Tables.Invalidate()
	return true, nil
}

// bondNamed is the state of the bond called name, or nil.
func (s *PortSet) bondNamed(name string) *bondState {
	for bd, st := range s.bonds {
		if bd.Config.Name == name && !bd.Config.Single {
			return st
		}
	}
	return nil
}

// republish rebuilds the current port set, for a change of bond state
// that is not a port change.
func (p *Ports) republish() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.store(append([]*Port(nil), p.cur.Load().list...))
}
