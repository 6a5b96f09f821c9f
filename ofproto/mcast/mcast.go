// Package mcast is the multicast snooping table behind the OpenFlow NORMAL
// action, as ovs-vswitchd 3.1 keeps it (Bridge mcast_snooping_enable): which
// ports asked for which group in which VLAN (learned from IGMP and MLD
// reports and leaves), which ports have a multicast router behind them
// (learned from queries), and which ports the configuration marks to take
// all multicast (flood) or all reports (flood-reports).
//
// Times are whole seconds, as OVS keeps them, so that mdb/show's ages
// match. Groups are kept in least-recently-reported order, and so are a
// group's member ports and the router ports: mdb/show lists them in that
// order, and a full table evicts its least recently reported group.
//
// Every change that can alter where NORMAL sends a frame bumps Version,
// which the revalidators compare to decide whether cached datapath flows
// need re-translation. Refreshing an existing member does not.
//
// A Table is safe for concurrent use; one mutex guards it. Lookups do not
// allocate; learning a group or port that is already known does not either.
package mcast

import (
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// Defaults and bounds from OVS: other_config:mcast-snooping-aging-time
// (seconds, 15 to 3600) and mcast-snooping-table-size (10 to 1000000),
// and the fixed lifetime of a router port.
const (
	DefaultAging     = 300 * time.Second
	DefaultTableSize = 2048
	MrouterAging     = 180 * time.Second

	minAging, maxAging = 15, 3600
	minSize, maxSize   = 10, 1000 * 1000
)

// Group names a group in a VLAN. Addr is an IPv6 address; an IPv4 group
// is held IPv4-mapped (::ffff:a.b.c.d), as OVS holds it.
type Group struct {
	VLAN uint16
	Addr [16]byte
}

// IPv4Group returns the Group of IPv4 address a in vlan.
func IPv4Group(vlan uint16, a [4]byte) Group {
	g := Group{VLAN: vlan}
	g.Addr[10], g.Addr[11] = 0xff, 0xff
	copy(g.Addr[12:], a[:])
	return g
}

// IsIPv4 reports whether the group is an IPv4-mapped address.
func (g Group) IsIPv4() bool {
	for _, b := range g.Addr[:10] {
		if b != 0 {
			return false
		}
	}
	return g.Addr[10] == 0xff && g.Addr[11] == 0xff
}

type member struct {
	port    uint32
	expires int64 // unix seconds
}

type group struct {
	Group
	members []member // oldest refresh first
	seq     uint64   // the table's seq at the group's last report
}

type mrouter struct {
	vlan    uint16
	port    uint32
	expires int64
}

// Table is a multicast snooping table.
type Table struct {
	mu           sync.Mutex
	groups       map[Group]*group
	mrouters     []mrouter // oldest refresh first
	flood        []uint32  // mcast-snooping-flood ports
	floodReports []uint32  // mcast-snooping-flood-reports ports
	idle         int64     // seconds
	max          int
	floodUnreg   bool
	seq          uint64
	version      atomic.Uint64
}

// New returns an empty table with OVS's defaults: 300 s aging, 2048
// groups, unregistered multicast flooded.
func New() *Table {
	return &Table{groups: make(map[Group]*group), idle: int64(DefaultAging / time.Second), max: DefaultTableSize, floodUnreg: true}
}

// Version returns a number that changes whenever the table changes in a
// way that can alter where a frame is forwarded.
func (t *Table) Version() uint64 { return t.version.Load() }

func (t *Table) changed() { t.version.Add(1) }

// Configure sets the aging time and table size, clamped to OVS's
// bounds (zero or less means the default), and whether multicast to a
// group no port asked for is flooded. Members already learned have their
// expiry moved by the change of aging time, as OVS moves them.
func (t *Table) Configure(aging time.Duration, size int, floodUnreg bool) {
	idle := int64(aging / time.Second)
	switch {
	case idle <= 0:
		idle = int64(DefaultAging / time.Second)
	case idle < minAging:
		idle = minAging
	case idle > maxAging:
		idle = maxAging
	}
	switch {
	case size <= 0:
		size = DefaultTableSize
	case size < minSize:
		size = minSize
	case size > maxSize:
		size = maxSize
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if d := idle - t.idle; d != 0 {
		for _, g := range t.groups {
			for i := range g.members {
				g.members[i].expires += d
			}
		}
		t.idle = idle
	}
	t.max = size
	if t.floodUnreg != floodUnreg {
		t.floodUnreg = floodUnreg
		t.changed()
	}
}

// Aging returns how long a member lives without a report.
func (t *Table) Aging() time.Duration {
	t.mu.Lock()
	defer t.mu.Unlock()
	return time.Duration(t.idle) * time.Second
}

// Size returns the most groups the table holds.
func (t *Table) Size() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.max
}

// FloodUnregistered reports whether multicast to an unknown group is
// flooded (true unless mcast-snooping-disable-flood-unregistered).
func (t *Table) FloodUnregistered() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.floodUnreg
}

// SetPorts sets the ports marked mcast-snooping-flood (they take all
// multicast and are never learned from) and mcast-snooping-flood-reports
// (they take every report, and a leave from them is ignored: they have
// several hosts behind them). The slices are copied.
func (t *Table) SetPorts(flood, floodReports []uint32) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if !slices.Equal(t.flood, flood) || !slices.Equal(t.floodReports, floodReports) {
		t.flood = append(t.flood[:0], flood...)
		t.floodReports = append(t.floodReports[:0], floodReports...)
		t.changed()
	}
}

// Len returns the number of groups.
func (t *Table) Len() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.groups)
}

func (t *Table) isMrouter(vlan uint16, port uint32) int {
	for i, m := range t.mrouters {
		if m.vlan == vlan && m.port == port {
			return i
		}
	}
	return -1
}

// Join records that port asked for group g (a report). It returns true
// when the group is new. A port with a router behind it in g's VLAN, or a
// flood port, is not recorded: it takes the group's traffic anyway. A new
// group in a full table evicts the least recently reported one.
func (t *Table) Join(g Group, port uint32, now time.Time) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.join(g, port, now.Unix())
}

func (t *Table) join(g Group, port uint32, now int64) bool {
	if t.isMrouter(g.VLAN, port) >= 0 || slices.Contains(t.flood, port) {
		return false
	}
	t.seq++
	grp := t.groups[g]
	learned := false
	if grp == nil {
		if len(t.groups) >= t.max {
			t.evictOldest()
		}
		grp = &group{Group: g}
		t.groups[g] = grp
		learned = true
		t.changed()
	}
	grp.seq = t.seq
	m := member{port: port, expires: now + t.idle}
	if i := slices.IndexFunc(grp.members, func(m member) bool { return m.port == port }); i >= 0 {
		// Refreshed: to the end of the group's list, as most recent.
		copy(grp.members[i:], grp.members[i+1:])
		grp.members[len(grp.members)-1] = m
	} else {
		grp.members = append(grp.members, m)
		t.changed()
	}
	return learned
}

func (t *Table) evictOldest() {
	var old *group
	for _, g := range t.groups {
		if old == nil || g.seq < old.seq {
			old = g
		}
	}
	if old != nil {
		delete(t.groups, old.Group)
		t.changed()
	}
}

// Leave records that port left group g (an IGMPv2 leave, an MLD done, or
// an IGMPv3/MLDv2 record that includes no source). It returns true when
// port was a member. A leave from a flood-reports port is ignored: its
// other hosts are left to refresh or let the group age out.
func (t *Table) Leave(g Group, port uint32) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.leave(g, port)
}

func (t *Table) leave(g Group, port uint32) bool {
	if slices.Contains(t.floodReports, port) {
		return false
	}
	grp := t.groups[g]
	if grp == nil {
		return false
	}
	i := slices.IndexFunc(grp.members, func(m member) bool { return m.port == port })
	if i < 0 {
		return false
	}
	grp.members = slices.Delete(grp.members, i, i+1)
	if len(grp.members) == 0 {
		delete(t.groups, g)
	}
	t.changed()
	return true
}

// AddMrouter records that a multicast router (a querier) is behind port
// in vlan, for MrouterAging. It returns true when it was not known. A
// flood port is not recorded.
func (t *Table) AddMrouter(vlan uint16, port uint32, now time.Time) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.addMrouter(vlan, port, now.Unix())
}

func (t *Table) addMrouter(vlan uint16, port uint32, now int64) bool {
	if slices.Contains(t.flood, port) {
		return false
	}
	m := mrouter{vlan: vlan, port: port, expires: now + int64(MrouterAging/time.Second)}
	if i := t.isMrouter(vlan, port); i >= 0 {
		copy(t.mrouters[i:], t.mrouters[i+1:])
		t.mrouters[len(t.mrouters)-1] = m
		return false
	}
	t.mrouters = append(t.mrouters, m)
	t.changed()
	return true
}

// Expire removes members and router ports whose time is up, groups left
// without members, and groups beyond the table's size (least recently
// reported first). It returns how many it removed.
func (t *Table) Expire(now time.Time) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	sec := now.Unix()
	n := 0
	for len(t.groups) > t.max {
		t.evictOldest()
		n++
	}
	for k, g := range t.groups {
		kept := g.members[:0]
		for _, m := range g.members {
			if m.expires > sec {
				kept = append(kept, m)
			}
		}
		if len(kept) != len(g.members) {
			n += len(g.members) - len(kept)
			g.members = kept
		}
		if len(g.members) == 0 {
			delete(t.groups, k)
			n++
		}
	}
	kept := t.mrouters[:0]
	for _, m := range t.mrouters {
		if sec < m.expires {
			kept = append(kept, m)
		}
	}
	n += len(t.mrouters) - len(kept)
	t.mrouters = kept
	if n > 0 {
		t.changed()
	}
	return n
}

// Flush empties the table of groups and router ports (mdb/flush); the
// configured flood and flood-reports ports stay.
func (t *Table) Flush() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.groups) > 0 || len(t.mrouters) > 0 {
		clear(t.groups)
		t.mrouters = t.mrouters[:0]
		t.changed()
	}
}

// FlushPort forgets port: its memberships and its routers, as OVS does
// when a port leaves the bridge.
func (t *Table) FlushPort(port uint32) {
	t.mu.Lock()
	defer t.mu.Unlock()
	changed := false
	for k, g := range t.groups {
		if i := slices.IndexFunc(g.members, func(m member) bool { return m.port == port }); i >= 0 {
			g.members = slices.Delete(g.members, i, i+1)
			changed = true
			if len(g.members) == 0 {
				delete(t.groups, k)
			}
		}
	}
	if n := len(t.mrouters); n > 0 {
		t.mrouters = slices.DeleteFunc(t.mrouters, func(m mrouter) bool { return m.port == port })
		changed = changed || len(t.mrouters) != n
	}
	if changed {
		t.changed()
	}
}

// Members appends the member ports of group g to buf, oldest refresh
// first, and reports whether the group is known.
func (t *Table) Members(g Group, buf []uint32) ([]uint32, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	grp := t.groups[g]
	if grp == nil {
		return buf, false
	}
	for _, m := range grp.members {
		buf = append(buf, m.port)
	}
	return buf, true
}

// Mrouters appends the router ports in vlan to buf, oldest first.
func (t *Table) Mrouters(vlan uint16, buf []uint32) []uint32 {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, m := range t.mrouters {
		if m.vlan == vlan {
			buf = append(buf, m.port)
		}
	}
	return buf
}

// FloodPorts appends the mcast-snooping-flood ports to buf.
func (t *Table) FloodPorts(buf []uint32) []uint32 {
	t.mu.Lock()
	defer t.mu.Unlock()
	return append(buf, t.flood...)
}

// FloodReportsPorts appends the mcast-snooping-flood-reports ports to buf.
func (t *Table) FloodReportsPorts(buf []uint32) []uint32 {
	t.mu.Lock()
	defer t.mu.Unlock()
	return append(buf, t.floodReports...)
}

// IsFloodPort reports whether port is an mcast-snooping-flood port.
func (t *Table) IsFloodPort(port uint32) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return slices.Contains(t.flood, port)
}

// Entry is one line of mdb/show: a member port of a group, or (Querier)
// a port with a router behind it.
type Entry struct {
	Port    uint32
	VLAN    uint16
	Group   [16]byte // zero for a querier
	Querier bool
	Age     int // seconds since the last report or query
}

// Entries returns the table as mdb/show lists it: groups from least to
// most recently reported, each group's members likewise, then the router
// ports likewise.
func (t *Table) Entries(now time.Time) []Entry {
	t.mu.Lock()
	defer t.mu.Unlock()
	sec := now.Unix()
	gs := make([]*group, 0, len(t.groups))
	for _, g := range t.groups {
		gs = append(gs, g)
	}
	slices.SortFunc(gs, func(a, b *group) int {
		switch {
		case a.seq < b.seq:
			return -1
		case a.seq > b.seq:
			return 1
		}
		return 0
	})
	var out []Entry
	for _, g := range gs {
		for _, m := range g.members {
			out = append(out, Entry{Port: m.port, VLAN: g.VLAN, Group: g.Addr, Age: int(t.idle - (m.expires - sec))})
		}
	}
	for _, m := range t.mrouters {
		out = append(out, Entry{Port: m.port, VLAN: m.vlan, Querier: true, Age: int(int64(MrouterAging/time.Second) - (m.expires - sec))})
	}
	return out
}
