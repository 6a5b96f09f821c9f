package ovsdb

import (
	"maps"
	"testing"

	"github.com/govswitch/govswitch/ovsdb/ovsdbtest"
)

// TestMonitorZoneTimeoutPolicies: what `ovs-vsctl add-zone-tp` and
// del-zone-tp write reaches the switch as zone -> timeouts, for the system
// datapath only.
func TestMonitorZoneTimeoutPolicies(t *testing.T) {
	srv := ovsdbtest.Start(t)
	sw := newFakeSwitch()
	startMonitor(t, srv, sw)
	zones := func() map[uint16]map[string]uint32 {
		sw.mu.Lock()
		defer sw.mu.Unlock()
		return sw.ctZones
	}
	mustVsctl(t, srv, "--", "--id=@m", "create", "Datapath", "datapath_version=0", "--",
		"set", "Open_vSwitch", ".", "datapaths:system=@m")
	mustVsctl(t, srv, "add-zone-tp", "system", "zone=5", "udp_single=1", "icmp_first=2")
	mustVsctl(t, srv, "add-zone-tp", "system", "zone=7", "tcp_established=100")
	want := map[uint16]map[string]uint32{5: {"udp_single": 1, "icmp_first": 2}, 7: {"tcp_established": 100}}
	if got := zones(); !equalCTZones(got, want) {
		t.Fatalf("after add-zone-tp: %v, want %v", got, want)
	}
	mustVsctl(t, srv, "--may-exist", "add-zone-tp", "system", "zone=5", "udp_single=3")
	want[5] = map[string]uint32{"udp_single": 3}
	if got := zones(); !equalCTZones(got, want) {
		t.Fatalf("after --may-exist add-zone-tp: %v, want %v", got, want)
	}
	mustVsctl(t, srv, "del-zone-tp", "system", "zone=7")
	delete(want, 7)
	if got := zones(); !equalCTZones(got, want) {
		t.Fatalf("after del-zone-tp: %v, want %v", got, want)
	}
	// A netdev datapath's zones are not ours.
	mustVsctl(t, srv, "--", "--id=@m", "create", "Datapath", "datapath_version=0", "--",
		"set", "Open_vSwitch", ".", "datapaths:netdev=@m")
	mustVsctl(t, srv, "add-zone-tp", "netdev", "zone=9", "udp_single=3")
	if got := zones(); !maps.EqualFunc(got, want, func(a, b map[string]uint32) bool { return maps.Equal(a, b) }) {
		t.Fatalf("after a netdev zone: %v, want %v", got, want)
	}
}
