package ofproto

import (
	"fmt"
	"testing"

	"github.com/govswitch/govswitch/datapath"
	"github.com/govswitch/govswitch/flow"
	"github.com/govswitch/govswitch/ofproto/openflow"
)

// TestGroupHashTable checks the dp_hash table against the numbers
// ovs-vswitchd 3.1 logs for the same groups (its ofproto-dpif tests'
// "Constructing select group" debug lines): table size and hits per
// bucket, and the fallbacks to hashing in userspace.
func TestGroupHashTable(t *testing.T) {
	tests := []struct {
		name    string
		method  string
		param   uint64
		weights []uint16
		size    int   // 0: no table
		hits    []int // per bucket
	}{
		{"two equal", "", 0, []uint16{1, 1}, 16, []int{8, 8}},
		{"weights 5 10 25 60 0", "", 0, []uint16{5, 10, 25, 60, 0}, 32, []int{2, 3, 8, 19, 0}},
		{"explicit dp_hash", "dp_hash", 0, []uint16{1, 1}, 16, []int{8, 8}},
		{"explicit dp_hash basis", "dp_hash", 0x1_00000007, []uint16{1, 3}, 16, []int{4, 12}},
		{"no buckets", "dp_hash", 0, nil, 0, nil},
		{"1 and 1000: 1024 values", "dp_hash", 0, []uint16{1, 1000}, 0, nil},
		{"all weight 0", "", 0, []uint16{0, 0}, 0, nil},
		{"hash method", "hash", 0, []uint16{1, 1}, 0, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			g := &Group{Type: openflow.GroupTypeSelect, Selection: openflow.Selection{Method: tc.method, Param: tc.param}}
			for _, w := range tc.weights {
				g.Buckets = append(g.Buckets, openflow.Bucket{Weight: w})
			}
			g.setupGroupHash()
			if tc.size == 0 {
				if g.hash != nil {
					t.Fatalf("table of %d values, want none", len(g.hash.buckets))
				}
				return
			}
			if g.hash == nil || len(g.hash.buckets) != tc.size || g.hash.mask != uint32(tc.size-1) {
				t.Fatalf("table %+v, want %d values", g.hash, tc.size)
			}
			hits := make([]int, len(tc.weights))
			for _, b := range g.hash.buckets {
				hits[b]++
			}
			if fmt.Sprint(hits) != fmt.Sprint(tc.hits) {
				t.Errorf("hits %v, want %v", hits, tc.hits)
			}
			if g.hash.alg != datapath.HashAlgL4 || g.hash.basis != uint32(tc.param) {
				t.Errorf("hash alg %d basis %#x, want L4 and %#x", g.hash.alg, g.hash.basis, uint32(tc.param))
			}
		})
	}
}

// TestXlateGroupDPHash: a select group without a selection method hashes
// in the datapath, as ovs-vswitchd does on the kernel datapath: the first
// stage is hash(l4(0)),recirc with no L3/L4 field in its megaflow and no
// group credit; the recirculated packet resumes at the group action,
// picks the bucket of its dp_hash's table entry (the table's bits of
// dp_hash in the megaflow), then runs the action after the group. A dead
// bucket's values go to the next live one. Neither stage allocates.
func TestXlateGroupDPHash(t *testing.T) {
	dpSupportsHash.Store(true)
	t.Cleanup(func() { dpSupportsHash.Store(false) })
	x := groupBridge(t)
	addGroup(t, x, 2, openflow.GroupTypeSelect, outBucket(2), outBucket(3))
	grp := openflow.Action{Type: openflow.ActGroup, Group: 2}
	after := ",0"
	mustAdd(t, x, 0, func(k *flow.Key, m *flow.Mask) {}, 1, apply(grp, openflow.Output(openflow.PortLocal, 0)))
	g := x.Groups.Lookup(2)
	if g.hash == nil {
		t.Fatal("no dp_hash table")
	}
	var out Out
	k := pkt(11)
	x.Translate(&k, t0, true, &out)
	acts := datapath.FormatActions(out.Actions)
	var id uint32
	if _, err := fmt.Sscanf(acts, "hash(l4(0)),recirc(%v)", &id); err != nil || id == 0 {
		t.Fatalf("first stage %s, want hash(l4(0)),recirc(ID)", acts)
	}
	if out.WC.TpSrc != 0 || out.WC.IPv4Src != ([4]byte{}) || out.WC.NwProto != 0 || out.WC.DPHash != 0 {
		t.Errorf("first stage mask %+v: the hash is the kernel's", out.WC)
	}
	if out.NRules != 1 {
		t.Errorf("first stage credits %d rules, want the flow's only", out.NRules)
	}
	if n := testing.AllocsPerRun(200, func() { x.Translate(&k, t0, true, &out) }); n != 0 {
		t.Errorf("first stage allocates %.1f times", n)
	}

	seen := map[string]int{}
	for h := uint32(1); h <= 64; h++ {
		k2 := k
		k2.RecircID, k2.DPHash = id, h*0x01000193
		x.Translate(&k2, t0, true, &out)
		got := datapath.FormatActions(out.Actions)
		b := g.hash.buckets[k2.DPHash&g.hash.mask]
		if want := fmt.Sprint(12+b) + after; got != want {
			t.Fatalf("dp_hash %#x: %s, want bucket %d's %s", k2.DPHash, got, b, want)
		}
		if out.WC.DPHash != 0xf || out.WC.RecircID != ^uint32(0) || out.WC.TpSrc != 0 {
			t.Fatalf("second stage mask %+v", out.WC)
		}
		if out.NRules != 2 {
			t.Fatalf("second stage credits %d rules, want the group and its bucket (the flow's were credited by the first)", out.NRules)
		}
		seen[got]++
	}
	if len(seen) != 2 {
		t.Errorf("second stage outputs %v, want both buckets", seen)
	}
	k2 := k
	k2.RecircID, k2.DPHash = id, 7
	if n := testing.AllocsPerRun(200, func() { x.Translate(&k2, t0, true, &out) }); n != 0 {
		t.Errorf("second stage allocates %.1f times", n)
	}

	// Bucket 0 watches port 2; with it down, every value takes
	// bucket 1.
	x2 := groupBridge(t)
	b0 := outBucket(2)
	b0.WatchPort = 2
	addGroup(t, x2, 2, openflow.GroupTypeSelect, b0, outBucket(3))
	mustAdd(t, x2, 0, func(k *flow.Key, m *flow.Mask) {}, 1, apply(grp))
	p := *x2.Ports.Snapshot().ByOF(2)
	p.LinkDown = true
	if err := x2.Ports.Add(p); err != nil {
		t.Fatal(err)
	}
	x2.Translate(&k, t0, true, &out)
	var id2 uint32
	fmt.Sscanf(datapath.FormatActions(out.Actions), "hash(l4(0)),recirc(%v)", &id2)
	for h := uint32(1); h <= 32; h++ {
		k3 := k
		k3.RecircID, k3.DPHash = id2, h
		x2.Translate(&k3, t0, true, &out)
		if got := datapath.FormatActions(out.Actions); got != "13" {
			t.Fatalf("dp_hash %d with bucket 0 dead: %s, want 13", h, got)
		}
	}
}

// TestXlateGroupDPHashFallback: where the translation cannot freeze at
// the group (reached from a resubmit, or in the action set), without the datapath's hash
// action, and for selection_method=hash, the bucket is picked here and
// the hashed fields join the megaflow, as before.
func TestXlateGroupDPHashFallback(t *testing.T) {
	dpSupportsHash.Store(true)
	t.Cleanup(func() { dpSupportsHash.Store(false) })
	x := groupBridge(t)
	addGroup(t, x, 2, openflow.GroupTypeSelect, outBucket(2), outBucket(3))
	mustAdd(t, x, 0, func(k *flow.Key, m *flow.Mask) {}, 1, apply(openflow.Resubmit(openflow.PortInPort, 1)))
	mustAdd(t, x, 1, func(k *flow.Key, m *flow.Mask) {}, 1, apply(openflow.Action{Type: openflow.ActGroup, Group: 2}))
	out := translate(x, pkt(11))
	if got := datapath.FormatActions(out.Actions); (got != "12" && got != "13") || out.WC.TpSrc != 0xffff {
		t.Errorf("group behind a resubmit: %s (tp_src mask %#x), want a bucket picked here", got, out.WC.TpSrc)
	}
	xs := groupBridge(t)
	addGroup(t, xs, 2, openflow.GroupTypeSelect, outBucket(2), outBucket(3))
	mustAdd(t, xs, 0, func(k *flow.Key, m *flow.Mask) {}, 1, openflow.Instructions{Write: []openflow.Action{{Type: openflow.ActGroup, Group: 2}}})
	if out := translate(xs, pkt(11)); datapath.FormatActions(out.Actions) != "12" && datapath.FormatActions(out.Actions) != "13" {
		t.Errorf("group in the action set: %s, want a bucket picked here", datapath.FormatActions(out.Actions))
	}
	dpSupportsHash.Store(false)
	x2 := groupBridge(t)
	addGroup(t, x2, 2, openflow.GroupTypeSelect, outBucket(2), outBucket(3))
	mustAdd(t, x2, 0, func(k *flow.Key, m *flow.Mask) {}, 1, apply(openflow.Action{Type: openflow.ActGroup, Group: 2}))
	if got := datapath.FormatActions(translate(x2, pkt(11)).Actions); got != "12" && got != "13" {
		t.Errorf("without the hash action: %s, want a bucket picked here", got)
	}
}
