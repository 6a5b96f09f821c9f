package ofproto

import (
	"slices"
	"strings"
	"testing"

	"github.com/govswitch/govswitch/conntrack"
	"github.com/govswitch/govswitch/datapath"
	"github.com/govswitch/govswitch/flow"
	"github.com/govswitch/govswitch/ofproto/openflow"
	"golang.org/x/sys/unix"
)

// fakeCttimeout records the kernel policies a CTZoneTimeouts makes.
type fakeCttimeout struct {
	have map[string]conntrack.TimeoutPolicy
	busy map[string]bool
}

func newFakeCttimeout(z *CTZoneTimeouts) *fakeCttimeout {
	f := &fakeCttimeout{have: map[string]conntrack.TimeoutPolicy{}, busy: map[string]bool{}}
	z.setKernel = func(tp *conntrack.TimeoutPolicy) error { f.have[tp.Name] = *tp; return nil }
	z.delKernel = func(name string) error {
		if f.busy[name] {
			return unix.EBUSY
		}
		if _, ok := f.have[name]; !ok {
			return unix.ENOENT
		}
		delete(f.have, name)
		return nil
	}
	return f
}

func (f *fakeCttimeout) names() []string {
	var n []string
	for k := range f.have {
		n = append(n, k)
	}
	slices.Sort(n)
	return n
}

func TestCTZoneTimeoutPolicies(t *testing.T) {
	var z CTZoneTimeouts
	f := newFakeCttimeout(&z)
	if err := z.Set(map[uint16]map[string]uint32{
		5: {"udp_single": 1, "icmp_first": 2, "udp_first": 9, "tcp_established": 30},
		6: {"udp_single": 1, "icmp_first": 2, "udp_first": 9, "tcp_established": 30}, // the same policy: one id
	}, nil); err != nil {
		t.Fatal(err)
	}
	want := []string{"ovs_tp_1_icmp4", "ovs_tp_1_icmpv6", "ovs_tp_1_tcp4", "ovs_tp_1_tcp6", "ovs_tp_1_udp4", "ovs_tp_1_udp6"}
	if got := f.names(); !slices.Equal(got, want) {
		t.Fatalf("kernel policies %v, want %v", got, want)
	}
	if u := f.have["ovs_tp_1_udp6"]; u.L3 != unix.AF_INET6 || u.L4 != unix.IPPROTO_UDP || len(u.Timeouts) != 1 || u.Timeouts[conntrack.TimeoutUDPUnreplied] != 1 {
		t.Errorf("udp6 policy %+v: want udp_single only (udp_first is the userspace datapath's)", u)
	}
	if i := f.have["ovs_tp_1_icmpv6"]; i.L4 != unix.IPPROTO_ICMPV6 || i.Timeouts[conntrack.TimeoutICMP] != 2 {
		t.Errorf("icmpv6 policy %+v", i)
	}
	// Zone 6 changes: a second policy; zone 5's stays.
	f.busy["ovs_tp_1_udp4"] = true
	if err := z.Set(map[uint16]map[string]uint32{5: {"udp_single": 1, "icmp_first": 2, "udp_first": 9, "tcp_established": 30},
		6: {"udp_single": 4}}, nil); err != nil {
		t.Fatal(err)
	}
	if len(f.have) != 12 || f.have["ovs_tp_2_udp4"].Timeouts[conntrack.TimeoutUDPUnreplied] != 4 {
		t.Fatalf("after zone 6 changed: %v", f.names())
	}
	// Zone 5 goes: policy 1 goes, but for its UDP part, still in use,
	// which goes once it is free.
	if err := z.Set(map[uint16]map[string]uint32{6: {"udp_single": 4}}, nil); err != nil {
		t.Fatal(err)
	}
	if got := f.names(); len(got) != 7 || !slices.Contains(got, "ovs_tp_1_udp4") {
		t.Fatalf("after zone 5 went: %v", got)
	}
	delete(f.busy, "ovs_tp_1_udp4")
	if err := z.Cleanup(); err != nil {
		t.Fatal(err)
	}
	if len(f.have) != 0 {
		t.Fatalf("after cleanup: %v", f.names())
	}
	if err := z.Set(map[uint16]map[string]uint32{1: {"tcp_bogus": 1}}, nil); err == nil || !strings.Contains(err.Error(), "zone 1") {
		t.Errorf("an unknown timeout: %v", err)
	}
}

// TestXlateCtTimeoutPolicy: a commit in a zone with a policy names the
// kernel policy for the packet's protocol, with nw_proto in the megaflow;
// other zones and plain ct() do not.
func TestXlateCtTimeoutPolicy(t *testing.T) {
	x := testBridge(t)
	z := &CTZoneTimeouts{}
	newFakeCttimeout(z)
	if err := z.Set(map[uint16]map[string]uint32{5: {"udp_single": 1}}, nil); err != nil {
		t.Fatal(err)
	}
	x.backer = &Backer{CTZones: z}
	for _, tc := range []struct {
		name  string
		ct    openflow.CtAction
		proto uint8
		want  string
	}{
		{"tcp commit in zone 5", openflow.CtAction{Flags: openflow.CtCommit, ZoneImm: 5, Table: openflow.CtNoRecirc}, 6,
			"ct(commit,zone=5,timeout=ovs_tp_1_tcp4)"},
		{"udp commit in zone 5", openflow.CtAction{Flags: openflow.CtCommit, ZoneImm: 5, Table: openflow.CtNoRecirc}, 17,
			"ct(commit,zone=5,timeout=ovs_tp_1_udp4)"},
		{"sctp has no policy", openflow.CtAction{Flags: openflow.CtCommit, ZoneImm: 5, Table: openflow.CtNoRecirc}, 132,
			"ct(commit,zone=5)"},
		{"zone 6 has none", openflow.CtAction{Flags: openflow.CtCommit, ZoneImm: 6, Table: openflow.CtNoRecirc}, 17,
			"ct(commit,zone=6)"},
		{"no commit", openflow.CtAction{ZoneImm: 5, Table: openflow.CtNoRecirc}, 17, "ct(zone=5)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			x.Tables = NewTables()
			mustAdd(t, x, 0, func(k *flow.Key, m *flow.Mask) { k.EthType, m.EthType = flow.EthTypeIPv4, 0xffff }, 1,
				apply(ctAct(tc.ct), openflow.Output(2, 0)))
			k := pkt(11)
			k.NwProto = tc.proto
			var out Out
			x.Translate(&k, t0, true, &out)
			if got := datapath.FormatActions(out.Actions); got != tc.want+",12" {
				t.Errorf("actions %q, want %q", got, tc.want+",12")
			}
			if named := strings.Contains(tc.want, "timeout="); named != (out.WC.NwProto == 0xff) {
				t.Errorf("nw_proto mask %#x with timeout named %v", out.WC.NwProto, named)
			}
		})
	}
	x.Tables = NewTables()
	mustAdd(t, x, 0, func(k *flow.Key, m *flow.Mask) { k.EthType, m.EthType = flow.EthTypeIPv4, 0xffff }, 1,
		apply(ctAct(openflow.CtAction{Flags: openflow.CtCommit, ZoneImm: 5, Table: openflow.CtNoRecirc}), openflow.Output(2, 0)))
	k := pkt(11)
	k.NwProto = 17
	out := Out{Actions: make([]byte, 0, 512)}
	x.Translate(&k, t0, true, &out)
	if got := datapath.FormatActions(out.Actions); got != "ct(commit,zone=5,timeout=ovs_tp_1_udp4),12" {
		t.Fatalf("actions %q", got)
	}
	if n := testing.AllocsPerRun(200, func() { x.Translate(&k, t0, true, &out) }); n != 0 {
		t.Errorf("a commit naming a timeout policy allocates %v times", n)
	}
}
