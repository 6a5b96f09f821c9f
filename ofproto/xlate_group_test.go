package ofproto

import (
	"strings"
	"testing"

	"github.com/govswitch/govswitch/datapath"
	"github.com/govswitch/govswitch/flow"
	"github.com/govswitch/govswitch/ofproto/maclearn"
	"github.com/govswitch/govswitch/ofproto/openflow"
)

// groupBridge is testBridge (ports 1..3 on datapath ports 11..13) with a
// group table.
func groupBridge(t testing.TB) *Xlator {
	t.Helper()
	ports := NewPorts()
	for _, p := range []Port{
		{OFPort: openflow.PortLocal, DPPort: 0, Name: "br0", Type: "internal"},
		{OFPort: 1, DPPort: 11, Name: "p1"},
		{OFPort: 2, DPPort: 12, Name: "p2"},
		{OFPort: 3, DPPort: 13, Name: "p3", NoFlood: true},
	} {
		if err := ports.Add(p); err != nil {
			t.Fatal(err)
		}
	}
	x := &Xlator{Tables: NewTables(), Ports: ports, MAC: maclearn.New(0, 0)}
	x.Groups = NewGroups(x.Tables)
	x.Tables.Groups = x.Groups
	return x
}

func addGroup(t testing.TB, x *Xlator, id uint32, typ uint8, buckets ...openflow.Bucket) {
	t.Helper()
	for i := range buckets {
		buckets[i].ID = uint32(i)
		if buckets[i].WatchPort == 0 {
			buckets[i].WatchPort = openflow.PortAny
		}
		if buckets[i].WatchGroup == 0 {
			buckets[i].WatchGroup = openflow.GroupAny
		}
	}
	m := &openflow.GroupMod{Envelope: openflow.Envelope{Version: openflow.Version13}, Command: openflow.GroupAdd,
		Type: typ, GroupID: id, CommandBucketID: openflow.BucketAll, Buckets: buckets}
	if err := x.Groups.Apply(m, t0); err != nil {
		t.Fatal(err)
	}
}

func outBucket(port uint32, acts ...openflow.Action) openflow.Bucket {
	return openflow.Bucket{Weight: 1, Actions: append(acts, openflow.Output(port, 0))}
}

func translate(x *Xlator, k flow.Key) *Out {
	var out Out
	x.Translate(&k, t0, false, &out)
	return &out
}

func TestXlateGroupAll(t *testing.T) {
	x := groupBridge(t)
	setDst := openflow.Action{Type: openflow.ActSetField, Field: openflow.FieldEthDst}
	copy(setDst.Value[:], []byte{0x02, 0, 0, 0, 0, 0xc})
	b0, b1 := outBucket(2, setDst), outBucket(3)
	b0.Weight, b1.Weight = 0, 0
	addGroup(t, x, 1, openflow.GroupTypeAll, b0, b1)
	mustAdd(t, x, 0, func(k *flow.Key, m *flow.Mask) {}, 1, apply(openflow.Action{Type: openflow.ActGroup, Group: 1},
		openflow.Output(openflow.PortLocal, 0)))
	out := translate(x, pkt(11))
	// Bucket 0 rewrites the copy it outputs; bucket 1 and the output
	// after the group see the packet as it was (clone semantics).
	want := "set(eth(dst=02:00:00:00:00:0c)),12,set(eth(dst=02:00:00:00:00:0b)),13,0"
	if got := datapath.FormatActions(out.Actions); got != want {
		t.Errorf("actions %s, want %s", got, want)
	}
	// The group and both buckets are credited with the flow's packets.
	if out.NRules != 4 {
		t.Errorf("%d rules noted, want the flow, the group and two buckets", out.NRules)
	}
}

func TestXlateGroupSelectSpreads(t *testing.T) {
	x := groupBridge(t)
	addGroup(t, x, 2, openflow.GroupTypeSelect, outBucket(2), outBucket(3))
	mustAdd(t, x, 0, func(k *flow.Key, m *flow.Mask) {}, 1, apply(openflow.Action{Type: openflow.ActGroup, Group: 2}))
	seen := map[string]int{}
	for port := uint16(1000); port < 1064; port++ {
		k := pkt(11)
		k.TpSrc = port
		out := translate(x, k)
		seen[datapath.FormatActions(out.Actions)]++
		if out.WC.TpSrc != 0xffff || out.WC.TpDst != 0xffff || out.WC.IPv4Src != [4]byte{255, 255, 255, 255} {
			t.Fatalf("megaflow leaves hashed fields out: %+v", out.WC)
		}
		// The choice is a function of the flow.
		if again := translate(x, k); datapath.FormatActions(again.Actions) != datapath.FormatActions(out.Actions) {
			t.Fatal("the same flow chose two buckets")
		}
	}
	if len(seen) != 2 || seen["12"] < 10 || seen["13"] < 10 {
		t.Errorf("64 flows spread as %v, want both buckets used", seen)
	}
	// Weight 0 takes no flows.
	x2 := groupBridge(t)
	b0, b1 := outBucket(2), outBucket(3)
	b1.Weight = 0
	addGroup(t, x2, 2, openflow.GroupTypeSelect, b0, b1)
	mustAdd(t, x2, 0, func(k *flow.Key, m *flow.Mask) {}, 1, apply(openflow.Action{Type: openflow.ActGroup, Group: 2}))
	for port := uint16(1000); port < 1032; port++ {
		k := pkt(11)
		k.TpSrc = port
		if got := datapath.FormatActions(translate(x2, k).Actions); got != "12" {
			t.Fatalf("weight 0 bucket chosen: %s", got)
		}
	}
}

func TestXlateGroupFastFailover(t *testing.T) {
	x := groupBridge(t)
	b0, b1 := outBucket(2), outBucket(3)
	b0.Weight, b1.Weight = 0, 0
	b0.WatchPort, b1.WatchPort = 2, 3
	addGroup(t, x, 4, openflow.GroupTypeFF, b0, b1)
	mustAdd(t, x, 0, func(k *flow.Key, m *flow.Mask) {}, 1, apply(openflow.Action{Type: openflow.ActGroup, Group: 4}))
	if got := datapath.FormatActions(translate(x, pkt(11)).Actions); got != "12" {
		t.Fatalf("both live: %s, want the first bucket", got)
	}
	p2 := *x.Ports.Snapshot().ByOF(2)
	p2.LinkDown = true
	if err := x.Ports.Add(p2); err != nil {
		t.Fatal(err)
	}
	if got := datapath.FormatActions(translate(x, pkt(11)).Actions); got != "13" {
		t.Fatalf("port 2 without link: %s, want the second bucket", got)
	}
	p3 := *x.Ports.Snapshot().ByOF(3)
	p3.Down = true
	x.Ports.Add(p3)
	if got := datapath.FormatActions(translate(x, pkt(11)).Actions); got != "drop" && got != "" {
		t.Fatalf("no live bucket: %q, want drop", got)
	}
	// watch_group: a bucket lives while the group it watches has a live
	// bucket.
	p2.LinkDown = false
	x.Ports.Add(p2)
	w := outBucket(1)
	w.Weight, w.WatchGroup = 0, 4
	addGroup(t, x, 5, openflow.GroupTypeFF, w)
	mustAdd(t, x, 0, func(k *flow.Key, m *flow.Mask) { k.InPort, m.InPort = 2, ^uint32(0) }, 2,
		apply(openflow.Action{Type: openflow.ActGroup, Group: 5}))
	if got := datapath.FormatActions(translate(x, pkt(12)).Actions); got != "11" {
		t.Fatalf("watched group live: %s, want 11", got)
	}
}

func TestGroupRefs(t *testing.T) {
	x := groupBridge(t)
	fm := FlowMod{Command: CmdAdd, Priority: 5, OutPort: openflow.PortAny,
		Instructions: apply(openflow.Action{Type: openflow.ActGroup, Group: 9})}
	if err := x.Tables.Apply(&fm, t0); ErrKind(err) != ErrBadOutGroup {
		t.Fatalf("flow to a missing group: %v, want ErrBadOutGroup", err)
	}
	addGroup(t, x, 9, openflow.GroupTypeIndirect, openflow.Bucket{Actions: []openflow.Action{openflow.Output(2, 0)}})
	if err := x.Tables.Apply(&fm, t0); err != nil {
		t.Fatal(err)
	}
	if n := x.Tables.countUsing(refGroup, 9); n != 1 {
		t.Fatalf("ref count %d, want 1", n)
	}
	v := x.Tables.Version()
	del := &openflow.GroupMod{Envelope: openflow.Envelope{Version: openflow.Version13}, Command: openflow.GroupDelete,
		GroupID: openflow.GroupAll, CommandBucketID: openflow.BucketAll}
	if err := x.Groups.Apply(del, t0); err != nil {
		t.Fatal(err)
	}
	if x.Tables.Len() != 0 {
		t.Fatalf("%d flows left after their group was deleted", x.Tables.Len())
	}
	if x.Tables.Version() == v {
		t.Fatal("deleting a group left translations current")
	}
	// Group errors carry ovs-vswitchd's codes.
	err := x.Groups.Apply(&openflow.GroupMod{Command: openflow.GroupModify, GroupID: 3, Type: openflow.GroupTypeAll}, t0)
	if ge, ok := err.(*GroupError); !ok || ge.Code != openflow.GroupModFailed13UnknownGroup {
		t.Fatalf("modify of a missing group: %v", err)
	}
}

func TestXlateGroupAllocs(t *testing.T) {
	x := groupBridge(t)
	addGroup(t, x, 1, openflow.GroupTypeSelect, outBucket(2), outBucket(3))
	addGroup(t, x, 2, openflow.GroupTypeAll, openflow.Bucket{Actions: []openflow.Action{openflow.Output(2, 0)}},
		openflow.Bucket{Actions: []openflow.Action{{Type: openflow.ActGroup, Group: 1}}})
	mustAdd(t, x, 0, func(k *flow.Key, m *flow.Mask) {}, 1, apply(openflow.Action{Type: openflow.ActGroup, Group: 2}))
	var out Out
	k := pkt(11)
	x.Translate(&k, t0, false, &out)
	if !strings.Contains(datapath.FormatActions(out.Actions), "12") {
		t.Fatalf("actions %s", datapath.FormatActions(out.Actions))
	}
	if n := testing.AllocsPerRun(100, func() { x.Translate(&k, t0, false, &out) }); n != 0 {
		t.Errorf("group translation allocates %v times per packet", n)
	}
}

// BenchmarkXlateGroupSelect is a miss through a select group of two
// buckets chained into an all group: the group path's cost per packet.
func BenchmarkXlateGroupSelect(b *testing.B) {
	t := b
	x := groupBridge(t)
	addGroup(t, x, 1, openflow.GroupTypeSelect, outBucket(2), outBucket(3))
	addGroup(t, x, 2, openflow.GroupTypeAll, openflow.Bucket{Actions: []openflow.Action{openflow.Output(1, 0)}},
		openflow.Bucket{Actions: []openflow.Action{{Type: openflow.ActGroup, Group: 1}}})
	mustAdd(t, x, 0, func(k *flow.Key, m *flow.Mask) {}, 1, apply(openflow.Action{Type: openflow.ActGroup, Group: 2}))
	var out Out
	k := pkt(13)
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		k.TpSrc = uint16(i)
		x.Translate(&k, t0, false, &out)
	}
}
