package ofproto

import (
	"slices"
	"time"

	"github.com/govswitch/govswitch/ofproto/mcast"
)

// McastSnooping is a bridge's multicast snooping configuration, as
// ovs-vswitchd's bridge_configure_mcast_snooping reads it: Bridge
// other_config mcast-snooping-aging-time (zero: 300 s),
// mcast-snooping-table-size (zero: 2048) and
// mcast-snooping-disable-flood-unregistered, and the Ports whose
// other_config sets mcast-snooping-flood or mcast-snooping-flood-reports
// (by name).
type McastSnooping struct {
	Aging                    time.Duration
	TableSize                int
	DisableFloodUnregistered bool
	Flood, FloodReports      []string
}

// SetMcastSnooping turns multicast snooping on with s, or off (nil). On,
// NORMAL forwards IP multicast by the snooping table (xlate_mcast.go);
// turning it on or off translates every datapath flow again, and a change
// of settings those it may alter. A bridge that keeps snooping on keeps
// what it learned, but for the ports no longer on it. Port names not on the bridge are left out; the caller
// sets the configuration again when its ports change.
func (b *Bridge) SetMcastSnooping(s *McastSnooping) {
	x := b.X
	if s == nil {
		if x.mcast.Swap(nil) != nil {
			b.Tables.Invalidate()
		}
		return
	}
	ms := x.mcast.Load()
	fresh := ms == nil
	if fresh {
		ms = mcast.New()
	}
	ms.Configure(s.Aging, s.TableSize, !s.DisableFloodUnregistered)
	ms.SetPorts(b.portNumbers(s.Flood), b.portNumbers(s.FloodReports))
	// A port that left the bridge takes its memberships and routers
	// with it, as OVS's bundle removal flushes them: a port added later
	// under the same number starts clean.
	ports := b.Ports.Snapshot()
	for _, e := range ms.Entries(time.Now()) {
		if ports.ByOF(e.Port) == nil {
			ms.FlushPort(e.Port)
		}
	}
	if fresh {
		x.mcast.Store(ms)
		b.Tables.Invalidate()
	}
}

// McastSnooping returns the bridge's snooping table, nil when snooping is
// off.
func (b *Bridge) McastSnooping() *mcast.Table { return b.X.mcast.Load() }

// flushMcast empties the snooping table, if snooping is on, where OVS
// flushes it with the MAC table (a spanning tree topology change).
func (b *Bridge) flushMcast() {
	if ms := b.X.mcast.Load(); ms != nil {
		ms.Flush()
	}
}

// portNumbers returns the OpenFlow numbers of the named ports that are on
// the bridge, in ascending order. A bond stands as its representative
// member (the lowest numbered), the port NORMAL learns a bond's frames on.
func (b *Bridge) portNumbers(names []string) []uint32 {
	var out []uint32
	ports := b.Ports.Snapshot().List()
	for _, n := range names {
		if p := b.Ports.byName(n); p != nil {
			out = append(out, p.OFPort)
			continue
		}
		rep := uint32(0)
		for _, p := range ports {
			if p.Bond != nil && p.Bond.Config.Name == n && (rep == 0 || p.OFPort < rep) {
				rep = p.OFPort
			}
		}
		if rep != 0 {
			out = append(out, rep)
		}
	}
	slices.Sort(out)
	return out
}
