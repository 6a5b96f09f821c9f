package vswitchd

import (
	"testing"
	"time"

	"github.com/govswitch/govswitch/ofproto"
	"github.com/govswitch/govswitch/ofproto/mcast"
)

// TestMdbShow: mdb/show's columns as ovs-vswitchd prints them (its
// tests/mcast-snooping.at), groups then queriers, and mdb/flush.
func TestMdbShow(t *testing.T) {
	s := startSwitch(t, nil, t.TempDir())
	defer s.d.Stop()
	b := s.d.Bridge("br0")
	b.SetMcastSnooping(&ofproto.McastSnooping{})
	ms := b.McastSnooping()
	now := time.Now()
	ms.Join(mcast.IPv4Group(0, [4]byte{224, 1, 1, 1}), 1, now)
	ms.Join(mcast.Group{VLAN: 10, Addr: [16]byte{0xff, 0x0e, 15: 1}}, 2, now)
	ms.AddMrouter(0, 2, now)
	got, err := s.d.mdbShow([]string{"br0"})
	if err != nil {
		t.Fatal(err)
	}
	want := " port  VLAN  GROUP                Age\n" +
		"    1     0  224.1.1.1           0\n" +
		"    2    10  ff0e::1           0\n" +
		"    2     0  querier               0\n"
	if got != want {
		t.Errorf("mdb/show:\n%s\nwant:\n%s", got, want)
	}
	if _, err := s.d.mdbFlush([]string{"br0"}); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.d.mdbShow([]string{"br0"}); got != " port  VLAN  GROUP                Age\n" {
		t.Errorf("after mdb/flush:\n%s", got)
	}
	b.SetMcastSnooping(nil)
	if _, err := s.d.mdbShow([]string{"br0"}); err == nil || err.Error() != "multicast snooping is disabled" {
		t.Errorf("disabled: %v", err)
	}
	if _, err := s.d.mdbShow([]string{"nobr"}); err == nil || err.Error() != "no such bridge" {
		t.Errorf("no bridge: %v", err)
	}
}
