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
// bucket of the hash, runs the bucket's actions and then the action after
// the group, which the first stage did not list (it was frozen). Tracing allocates,
// the translation it traces does not (TestXlateGroupDPHash).
func TestTraceGroupDPHash(t *testing.T) {
	dpSupportsHash.Store(true)
	t.Cleanup(func() { dpSupportsHash.Store(false) })
	x := groupBridge(t)
	b := &Bridge{Name: "br0", X: x, Ports: x.Ports}
	addGroup(t, x, 2, openflow.GroupTypeSelect, outBucket(2), outBucket(3))
	fm := FlowMod{Command: CmdAdd, Table: 0, Match: match(func(k *flow.Key, m *flow.Mask) {}), Priority: 1,
		Cookie: 0x2a, Instructions: apply(openflow.Action{Type: openflow.ActGroup, Group: 2}, openflow.Output(openflow.PortLocal, 0)),
		OutPort: openflow.PortAny}
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
        Restoring actions: unroll_xlate(table=0, cookie=42),group:2,LOCAL
    unroll_xlate(table=0, cookie=42)
    restored state: table=0, cookie=0x2a
    group:2
     -> using bucket %d
    bucket %d
            output:%d
    LOCAL

Final flow: unchanged
Megaflow: recirc_id=%#x,dp_hash=0x5/0xf,eth,ip,in_port=1,nw_frag=no
Datapath actions: %d,0
`, bucket, bucket, 2+bucket, id, 12+bucket)
	if !strings.HasSuffix(second, want) {
		t.Errorf("second stage:\n%s\nwant it to end in:\n%s", second, want)
	}
}

// TestTraceBondRecirc: a trace of a balance-tcp bond's second stage, the
// recirc_id and a dp_hash given, thaws into OVS's hidden table 254 and
// shows the rule of the hash's bucket, out of its member, and in_port
// NONE in the final flow, as ovs-vswitchd 3.1's trace does (compared in
// the bed by vswitchd's TestIntegrationTraceRecirc).
func TestTraceBondRecirc(t *testing.T) {
	dpSupportsHash.Store(true)
	t.Cleanup(func() { dpSupportsHash.Store(false) })
	b, x, bd := lacpBridge(t, BondBalanceTCP, false)
	negotiate(t, b, bd)
	k := tagged(13, 0, 0)
	k.EthType, k.NwProto, k.TpSrc, k.TpDst = flow.EthTypeIPv4, 6, 1000, 80
	if first := b.Trace(&k); !strings.Contains(first, "\n     -> no learned MAC for destination, flooding\n") {
		t.Errorf("first stage does not say NORMAL floods:\n%s", first)
	}
	id := bd.recircID(&xctx{xstate: xstate{x: x, now: t0}})
	k.RecircID, k.DPHash = id, 0x305
	member := b.Ports.Snapshot().bonds[bd].buckets[5]
	second := b.Trace(&k)
	want := fmt.Sprintf("-------------\n    thaw\n        Resuming from table 254\n"+
		"254. recirc_id=%#x,dp_hash=0x5/0xff, priority 20\n    output:%d\n\nFinal flow: recirc_id=%#x,dp_hash=0x305,",
		id, member.OFPort, id)
	if !strings.Contains(second, want) || !strings.Contains(second, ",in_port=ANY,") ||
		!strings.HasSuffix(second, fmt.Sprintf("\nDatapath actions: %d\n", member.DPPort)) {
		t.Errorf("second stage:\n%s\nwant it to hold\n%s\nin_port=ANY in its final flow and to end in the output to %s", second, want, member.Name)
	}
}
