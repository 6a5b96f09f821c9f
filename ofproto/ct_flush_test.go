package ofproto

import (
	"errors"
	"net/netip"
	"strings"
	"sync"
	"testing"

	"github.com/govswitch/govswitch/ofproto/openflow"
)

// TestCtFlushZoneOvsOfctl sends NXT_CT_FLUSH_ZONE with the real
// `ovs-ofctl ct-flush-zone` (what ovn-controller sends for a logical
// port's zone) in OpenFlow 1.0 and 1.5: the zone reaches the datapath's
// flush, a failed flush is not the controller's error, and a datapath that
// cannot flush refuses the message.
func TestCtFlushZoneOvsOfctl(t *testing.T) {
	needTool(t, "ovs-ofctl")
	s := newTestSwitch(t, 2, BridgeConfig{FailMode: FailSecure}, ConnConfig{})
	var mu sync.Mutex
	var zones []uint16
	fail := false
	s.b.Backer.SetFlushCt(func(m *openflow.CtFlush) error {
		mu.Lock()
		defer mu.Unlock()
		if !m.HasZone || m.Proto != 0 || m.Family != 0 || m.Orig != (openflow.CtFlushTuple{}) || m.Reply != (openflow.CtFlushTuple{}) {
			t.Errorf("ct-flush-zone: flush of %+v, want a zone and no tuple", *m)
		}
		zones = append(zones, m.Zone)
		if fail {
			return errors.New("no conntrack here")
		}
		return nil
	})
	for _, ver := range []string{"OpenFlow10", "OpenFlow15"} {
		s.ofctl(t, []string{"-O", ver}, "ct-flush-zone", "4")
	}
	mu.Lock()
	fail = true
	mu.Unlock()
	s.ofctl(t, []string{"-O", "OpenFlow15"}, "ct-flush-zone", "65535")
	mu.Lock()
	got := zones
	mu.Unlock()
	if len(got) != 3 || got[0] != 4 || got[1] != 4 || got[2] != 65535 {
		t.Errorf("zones flushed: %v, want [4 4 65535]", got)
	}
	// A second switch, whose datapath cannot flush.
	s = newTestSwitch(t, 2, BridgeConfig{FailMode: FailSecure}, ConnConfig{})
	if out, err := s.ofctlErr([]string{"-O", "OpenFlow15"}, "ct-flush-zone", "1"); err == nil || !strings.Contains(err.Error(), "OFPBRC_BAD_SUBTYPE") {
		t.Errorf("without a flush: want OFPBRC_BAD_SUBTYPE, got %v %s", err, out)
	}
}

// TestCtFlushOvsOfctl sends NXT_CT_FLUSH with the real `ovs-ofctl
// ct-flush` (OVS suite test "conntrack - ct flush" does) in OpenFlow 1.0,
// 1.3 and 1.5: zone and tuples reach the datapath's flush as given, a
// failed flush is not the controller's error, and a datapath that cannot
// flush refuses the message.
func TestCtFlushOvsOfctl(t *testing.T) {
	needTool(t, "ovs-ofctl")
	s := newTestSwitch(t, 2, BridgeConfig{FailMode: FailSecure}, ConnConfig{})
	var mu sync.Mutex
	var got []openflow.CtFlush
	fail := false
	s.b.Backer.SetFlushCt(func(m *openflow.CtFlush) error {
		mu.Lock()
		defer mu.Unlock()
		c := *m
		c.Envelope = openflow.Envelope{}
		got = append(got, c)
		if fail {
			return errors.New("no conntrack here")
		}
		return nil
	})
	a := netip.MustParseAddr
	udp := openflow.CtFlush{Proto: 17, Family: 2, Orig: openflow.CtFlushTuple{Src: a("10.1.1.2"), Dst: a("10.1.1.1"), SrcPort: 2, DstPort: 1}}
	for _, c := range []struct {
		args []string
		want openflow.CtFlush
	}{
		{nil, openflow.CtFlush{}},
		{[]string{"zone=5"}, openflow.CtFlush{HasZone: true, Zone: 5}},
		{[]string{"ct_nw_src=10.1.1.2,ct_nw_dst=10.1.1.1,ct_nw_proto=17,ct_tp_src=2,ct_tp_dst=1"}, udp},
		{[]string{"zone=5", "", "ct_nw_src=10.1.1.1"}, openflow.CtFlush{Family: 2, HasZone: true, Zone: 5,
			Reply: openflow.CtFlushTuple{Src: a("10.1.1.1")}}},
		{[]string{"zone=5", "ct_ipv6_src=fc00::2,ct_ipv6_dst=fc00::1,ct_nw_proto=58,icmp_id=9,icmp_type=128"},
			openflow.CtFlush{Proto: 58, Family: 10, HasZone: true, Zone: 5,
				Orig: openflow.CtFlushTuple{Src: a("fc00::2"), Dst: a("fc00::1"), ICMPID: 9, ICMPType: 128}}},
	} {
		for _, ver := range []string{"OpenFlow10", "OpenFlow13", "OpenFlow15"} {
			mu.Lock()
			got = nil
			mu.Unlock()
			s.ofctl(t, []string{"-O", ver}, "ct-flush", c.args...)
			mu.Lock()
			if len(got) != 1 || got[0] != c.want {
				t.Errorf("%s ct-flush %q: flushed %+v, want %+v", ver, c.args, got, c.want)
			}
			mu.Unlock()
		}
	}
	mu.Lock()
	fail = true
	mu.Unlock()
	s.ofctl(t, []string{"-O", "OpenFlow13"}, "ct-flush", "zone=1")
	s = newTestSwitch(t, 2, BridgeConfig{FailMode: FailSecure}, ConnConfig{})
	if out, err := s.ofctlErr([]string{"-O", "OpenFlow15"}, "ct-flush"); err == nil || !strings.Contains(err.Error(), "OFPBRC_BAD_SUBTYPE") {
		t.Errorf("without a flush: want OFPBRC_BAD_SUBTYPE, got %v %s", err, out)
	}
}
