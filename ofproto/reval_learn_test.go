package ofproto

import (
	"testing"
	"time"

	"github.com/govswitch/govswitch/ofproto/openflow"
)

// TestRevalidatorRelearns: packets of an installed megaflow that carries
// a learn action never upcall; the revalidator re-runs the learn when the
// flow's counters move, so a learned flow that went (here: deleted) comes
// back, as OVS's xcache XC_LEARN entry does.
func TestRevalidatorRelearns(t *testing.T) {
	b, p1, p2 := forwardingBridge(t)
	fm := &FlowMod{Command: CmdAdd, Priority: 50000, OutPort: openflow.PortAny, Match: inPortCls(1),
		Instructions: apply(learnAct(openflow.LearnAction{Table: 10, Priority: 0x8000, Specs: []openflow.LearnSpec{
			{Dst: openflow.LearnMatch, NBits: 48, Src: openflow.FieldEthSrc, Field: openflow.FieldEthDst}}}),
			openflow.Output(2, 0))}
	if err := b.Tables.Apply(fm, time.Now()); err != nil {
		t.Fatal(err)
	}
	b.Udpif.Sync()
	learned := func() int { return b.Tables.View().Table(10).Len() }
	send := func() {
		t.Helper()
		p1.Send(synFrame(1))
		if _, err := p2.Recv(2 * time.Second); err != nil {
			t.Fatalf("frame not forwarded: %v", err)
		}
	}
	// The frame's megaflow was installed before the learn flow was added
	// and only retranslated since: the packet does not upcall, and the
	// revalidator's pass learns from it.
	send()
	b.Udpif.Revalidate()
	if learned() != 1 {
		t.Fatalf("table 10 has %d flows after the first packet and a pass", learned())
	}
	b.Udpif.Sync() // the learn bumped the tables: the megaflow is retranslated
	del := &FlowMod{Command: CmdDelete, Table: 10, OutPort: openflow.PortAny}
	if err := b.Tables.Apply(del, time.Now()); err != nil {
		t.Fatal(err)
	}
	b.Udpif.Sync()
	if learned() != 0 {
		t.Fatal("learned flow not deleted")
	}
	misses := b.Udpif.Stats().Misses
	send() // by the installed megaflow
	b.Udpif.Revalidate()
	if s := b.Udpif.Stats(); s.Misses != misses {
		t.Errorf("the frame upcalled (%d misses before, %d after): no megaflow", misses, s.Misses)
	}
	if learned() != 1 {
		t.Errorf("table 10 has %d flows after the revalidator saw the megaflow's packet, want the flow learned again", learned())
	}
	var r *Rule
	for r = range b.Tables.View().Table(10).Rules(nil) {
	}
	if r != nil && r.Match.Mask.EthDst != [6]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff} {
		t.Errorf("relearned %+v", r.Match)
	}
}
