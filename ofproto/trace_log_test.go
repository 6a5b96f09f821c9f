package ofproto

import (
	"fmt"
	"strings"
	"testing"

	"github.com/govswitch/govswitch/flow"
	"github.com/govswitch/govswitch/ofproto/openflow"
)

// TestTraceGroupDPHash: a trace of a packet a dp_hash select group takes
// says what ovs-vswitchd 3.1's does (vswitchd's TestIntegrationTraceRecirc
// compares the two in a bed): the first stage names the group and has no
// bucket yet; the second, given the recirc_id and a dp_hash, thaws the
// frozen rule (its restored actions, its table and cookie), picks the
// bucket of the hash and runs the bucket's actions. Tracing allocates,
// the translation it traces does not (TestXlateGroupDPHash).
func TestTraceGroupDPHash(t *testing.T) {
	dpSupportsHash.Store(true)
	t.Cleanup(func() { dpSupportsHash.Store(false) })
	x := groupBridge(t)
	b := &Bridge{Name: "br0", X: x, Ports: x.Ports}
	addGroup(t, x, 2, openflow.GroupTypeSelect, outBucket(2), outBucket(3))
	fm := FlowMod{Command: CmdAdd, Table: 0, Match: match(func(k *flow.Key, m *flow.Mask) {}), Priority: 1,
		Cookie: 0x2a, Instructions: apply(openflow.Action{Type: openflow.ActGroup, Group: 2}), OutPort: openflow.PortAny}
	if err := x.Tables.Apply(&fm, t0); err != nil {
		t.Fatal(err)
	}
	k := pkt(11)
	first := b.Trace(&k)
	want := "\n 0. priority 1, cookie 0x2a\n    group:2\n     -> no live bucket\n\nFinal flow: unchanged\n"
	if !strings.Contains(first, want) {
		t.Fatalf("first stage lacks\n%s\n:\n%s", want, first)
	}
	var id uint32
	i := strings.Index(first, "Datapath actions: hash(l4(0)),recirc(")
	if i < 0 {
		t.Fatalf("first stage does not recirculate:\n%s", first)
	}
	fmt.Sscanf(first[i:], "Datapath actions: hash(l4(0)),recirc(%v)", &id)
	g := x.Groups.Lookup(2)
	k.RecircID, k.DPHash = id, 5
	bucket := g.hash.buckets[5&g.hash.mask]
	second := b.Trace(&k)
	want = fmt.Sprintf(`
bridge("br0")
-------------
    thaw
            Resuming from table 0
        Restoring actions: unroll_xlate(table=0, cookie=42),group:2
    unroll_xlate(table=0, cookie=42)
    restored state: table=0, cookie=0x2a
    group:2
     -> using bucket %d
    bucket %d
            output:%d

Final flow: unchanged
Megaflow: recirc_id=%#x,dp_hash=0x5/0xf,eth,ip,in_port=1,nw_frag=no
Datapath actions: %d
`, bucket, bucket, 2+bucket, id, 12+bucket)
	if !strings.HasSuffix(second, want) {
		t.Errorf("second stage:\n%s\nwant it to end in:\n%s", second, want)
	}
}
