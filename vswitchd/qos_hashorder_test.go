package vswitchd

import (
	"slices"
	"testing"
)

func TestQoSHmapOrder(t *testing.T) {
	for _, c := range []struct {
		name   string
		hashes []uint32
		want   []int
	}{
		{"one bucket, newest first", []uint32{5}, []int{0}},
		// Two nodes grow the table to 4 buckets: by bucket.
		{"two grow to four buckets", []uint32{3, 1}, []int{1, 0}},
		{"same bucket, moved in order, so reversed", []uint32{4, 8}, []int{0, 1}},
		{"three in four buckets", []uint32{2, 1, 0}, []int{2, 1, 0}},
		{"same bucket after growth: newest first", []uint32{1, 2, 5}, []int{2, 0, 1}},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := hmapOrder(c.hashes); !slices.Equal(got, c.want) {
				t.Errorf("order %v, want %v", got, c.want)
			}
		})
	}
}

// The orders ovs-vswitchd 3.1 printed in qos/show in the bed (see
// TestIntegrationQoSTypes) for what it adds in the first order.
func TestQoSOrdersAsOVS(t *testing.T) {
	for _, c := range []struct {
		added, printed []string
	}{
		{[]string{"min-rate", "max-rate", "burst", "priority"}, []string{"burst", "priority", "min-rate", "max-rate"}}, // htb queue
		{[]string{"min-rate", "max-rate"}, []string{"min-rate", "max-rate"}},                                           // hfsc queue
		{[]string{"quantum", "perturb"}, []string{"quantum", "perturb"}},                                               // sfq
		{[]string{"target", "limit", "interval"}, []string{"limit", "interval", "target"}},                             // codel
		{[]string{"target", "limit", "interval", "flows", "quantum"}, []string{"limit", "quantum", "flows", "interval", "target"}},
		{[]string{"latency", "limit", "loss"}, []string{"limit", "loss", "latency"}}, // netem
	} {
		es := make([]smapEntry, len(c.added))
		for i, k := range c.added {
			es[i] = smapEntry{key: k}
		}
		var got []string
		for _, e := range smapOrder(es) {
			got = append(got, e.key)
		}
		if !slices.Equal(got, c.printed) {
			t.Errorf("smap of %v iterates %v, ovs-vswitchd printed %v", c.added, got, c.printed)
		}
	}
	for _, c := range []struct {
		setUp, listed []uint32
	}{
		{[]uint32{0, 1, 2, 7}, []uint32{0, 7, 1, 2}},
		{[]uint32{1, 2, 0}, []uint32{0, 1, 2}},
		{[]uint32{1, 3, 0}, []uint32{0, 1, 3}},
	} {
		if got := queueOrder(c.setUp); !slices.Equal(got, c.listed) {
			t.Errorf("queues set up as %v list as %v, ovs-vswitchd listed %v", c.setUp, got, c.listed)
		}
	}
}

// qos/show-types lists the types in the order ovs-vswitchd 3.1 printed.
func TestQoSShowTypesOrderAsOVS(t *testing.T) {
	es := make([]smapEntry, len(qosTypeOrder))
	for i, k := range qosTypeOrder {
		es[i] = smapEntry{key: k}
	}
	var got []string
	for _, e := range smapOrder(es) {
		got = append(got, e.key)
	}
	want := []string{"linux-netem", "linux-fq_codel", "linux-codel", "linux-hfsc", "linux-noop", "linux-sfq", "linux-htb"}
	if !slices.Equal(got, want) {
		t.Errorf("%v, ovs-vswitchd printed %v", got, want)
	}
}

// A queue table keeps its order through removals, which never shrink
// it: the queues of 0, 1, 2, 7 less 1 and 7, then 5, list as OVS did.
func TestQoSQueueTableRemovals(t *testing.T) {
	var q queueTable
	for _, id := range []uint32{0, 1, 2, 7} {
		q.add(id)
	}
	q.remove(1)
	q.remove(7)
	q.add(2) // already there: stays where it is
	q.add(5)
	if got, want := q.ids(), []uint32{0, 5, 2}; !slices.Equal(got, want) {
		t.Errorf("%v, ovs-vswitchd listed %v", got, want)
	}
}
