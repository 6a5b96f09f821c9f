package ofproto

import (
	"bytes"
	"encoding/binary"
	"strings"
	"testing"
	"time"

	"github.com/govswitch/govswitch/datapath"
	"github.com/govswitch/govswitch/datapath/dummy"
	"github.com/govswitch/govswitch/flow"
	"github.com/govswitch/govswitch/ofproto/openflow"
)

// sharedBridges makes bridges br0 (with device p1) and br1 (with p2) on
// one in-memory datapath, ovs-system, as the daemon does.
func sharedBridges(t testing.TB, cfg UpcallConfig) (bk *Backer, br0, br1 *Bridge, prov *dummy.Provider) {
	t.Helper()
	prov = dummy.New()
	for _, n := range []string{"p1", "p2", "p3"} {
		if _, err := prov.AddNetdev(n); err != nil {
			t.Fatal(err)
		}
	}
	dp, err := prov.Create(SharedDatapathName, datapath.Config{Handlers: 1})
	if err != nil {
		t.Fatal(err)
	}
	bk = NewBacker(dp, cfg)
	br0, err = bk.AddBridge(BridgeConfig{Name: "br0"})
	if err != nil {
		t.Fatal(err)
	}
	br1, err = bk.AddBridge(BridgeConfig{Name: "br1"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := br0.AddPort("p1", "system", 0); err != nil {
		t.Fatal(err)
	}
	if _, err := br1.AddPort("p2", "system", 0); err != nil {
		t.Fatal(err)
	}
	return bk, br0, br1, prov
}

// TestBackerNumbering: the bridges' LOCAL ports are internal ports named
// after them, OpenFlow numbers start at 1 on each bridge, and the datapath
// numbers are the datapath's, port 0 being ovs-system's own.
func TestBackerNumbering(t *testing.T) {
	bk, br0, br1, _ := sharedBridges(t, UpcallConfig{})
	vps, err := bk.DP.Vports()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, vp := range vps {
		names = append(names, vp.Name)
	}
	if got := len(names); got != 5 || names[0] != SharedDatapathName {
		t.Fatalf("datapath ports %v, want ovs-system, br0, br1, p1, p2", names)
	}
	for _, tc := range []struct {
		b      *Bridge
		port   string
		ofport uint32
	}{{br0, "p1", 1}, {br1, "p2", 1}, {br0, "br0", 0xfffffffe}, {br1, "br1", 0xfffffffe}} {
		p := tc.b.Ports.byName(tc.port)
		if p == nil || p.OFPort != tc.ofport {
			t.Errorf("%s: port %s is %+v, want OpenFlow port %d", tc.b.Name, tc.port, p, tc.ofport)
			continue
		}
		if bk.Owner(p.DPPort) != tc.b {
			t.Errorf("datapath port %d (%s) not owned by %s", p.DPPort, tc.port, tc.b.Name)
		}
	}
	if _, err := br1.AddPort("p1", "system", 0); err == nil {
		t.Error("p1 was added to br1 while on br0")
	}
}

// TestBackerSeparatesBridges: a frame on br0 floods to br0's ports only.
func TestBackerSeparatesBridges(t *testing.T) {
	bk, br0, _, prov := sharedBridges(t, UpcallConfig{})
	if _, err := br0.AddPort("p3", "system", 0); err != nil {
		t.Fatal(err)
	}
	bk.Start()
	defer bk.Stop()
	f := synFrame(1)
	prov.Netdev("p1").Send(f)
	if got, err := prov.Netdev("p3").Recv(2 * time.Second); err != nil || !bytes.Equal(got, f) {
		t.Fatalf("p3 (br0): %v", err)
	}
	if _, err := prov.Netdev("p2").Recv(100 * time.Millisecond); err == nil {
		t.Error("a frame flooded on br0 reached p2, a port of br1")
	}
}

// patchPair joins br0 and br1 with patch ports pa (on br0) and pb.
func patchPair(t testing.TB, br0, br1 *Bridge, a, b string) {
	t.Helper()
	if _, err := br0.AddPatchPort(a, b, 0, PortVLAN{}); err != nil {
		t.Fatal(err)
	}
	if _, err := br1.AddPatchPort(b, a, 0, PortVLAN{}); err != nil {
		t.Fatal(err)
	}
}

// TestPatchPortForwards: with NORMAL on both bridges, a frame from p1 on
// br0 reaches p2 on br1 through a patch pair, by one datapath flow whose
// actions output to p2 (and br1's LOCAL) with no datapath port for the
// patch ports; both bridges learn the source.
func TestPatchPortForwards(t *testing.T) {
	bk, br0, br1, prov := sharedBridges(t, UpcallConfig{})
	patchPair(t, br0, br1, "pa", "pb")
	bk.Start()
	defer bk.Stop()
	f := synFrame(2)
	prov.Netdev("p1").Send(f)
	if got, err := prov.Netdev("p2").Recv(2 * time.Second); err != nil || !bytes.Equal(got, f) {
		t.Fatalf("p2 (br1, through the patch ports): %v", err)
	}
	bk.Udpif.Revalidate()
	p1, p2 := br0.Ports.byName("p1"), br1.Ports.byName("p2")
	var flows []datapath.Flow
	bk.DP.DumpFlows(false, func(f *datapath.Flow) error {
		g := *f
		g.Actions = append([]byte(nil), f.Actions...)
		flows = append(flows, g)
		return nil
	})
	if len(flows) != 1 || flows[0].Key.InPort != p1.DPPort {
		t.Fatalf("datapath flows %+v, want one from p1", flows)
	}
	acts := datapath.FormatActions(flows[0].Actions)
	if !bytes.Contains([]byte(acts), []byte(itoa(p2.DPPort))) {
		t.Errorf("actions %s do not output to p2 (%d)", acts, p2.DPPort)
	}
	for _, b := range []*Bridge{br0, br1} {
		if b.MAC.Len() != 1 {
			t.Errorf("%s learned %d addresses, want the source's", b.Name, b.MAC.Len())
		}
	}
	// The patch ports count what crossed: the upcalled frame, sent on pa
	// and received on pb.
	pa, pb := br0.Ports.byName("pa"), br1.Ports.byName("pb")
	if tx, _ := pa.patch.tx.Value.Stats(); tx != 1 {
		t.Errorf("pa sent %d packets, want 1", tx)
	}
	if rx, _ := pb.patch.rx.Value.Stats(); rx != 1 {
		t.Errorf("pb received %d packets, want 1", rx)
	}
	if tr := br0.Trace(&flows[0].Key); strings.Contains(tr, "priority 0\n    drop") {
		t.Errorf("the trace shows a patch counter as a rule:\n%s", tr)
	}
	// The reverse direction is unicast now: br1 learned macA on pb.
	r := synFrame(3)
	copy(r[0:6], macA[:])
	copy(r[6:12], macB[:])
	prov.Netdev("p2").Send(r)
	if got, err := prov.Netdev("p1").Recv(2 * time.Second); err != nil || !bytes.Equal(got, r) {
		t.Fatalf("p1 (the reply through the patch ports): %v", err)
	}
}

func itoa(n uint32) string {
	var b [10]byte
	i := len(b)
	for {
		i--
		b[i] = byte('0' + n%10)
		n /= 10
		if n == 0 {
			return string(b[i:])
		}
	}
}

// TestPatchPortLoop: two patch pairs between the same bridges make a loop
// for flooded frames; translation stops at the resubmit depth, as OVS's,
// instead of recursing for ever, and still outputs to the hosts.
func TestPatchPortLoop(t *testing.T) {
	_, br0, br1, _ := sharedBridges(t, UpcallConfig{})
	patchPair(t, br0, br1, "pa", "pb")
	patchPair(t, br0, br1, "pc", "pd")
	p1 := br0.Ports.byName("p1")
	f := synFrame(4)
	var key flow.Key
	flow.ExtractInto(&key, f, &flow.Metadata{InPort: p1.DPPort})
	var out Out
	br0.Backer.Translate(&key, time.Now(), false, &out)
	if out.Dropped != "resubmit limit exceeded" {
		t.Errorf("a patch loop translated without reaching the depth limit: dropped %q", out.Dropped)
	}
	p2 := br1.Ports.byName("p2")
	if !bytes.Contains([]byte(datapath.FormatActions(out.Actions)), []byte(itoa(p2.DPPort))) {
		t.Errorf("actions %s do not reach p2", datapath.FormatActions(out.Actions))
	}
}

// TestPatchPortUnconnected: a patch port whose peer is missing drops what
// is output to it; adding the peer connects it.
func TestPatchPortUnconnected(t *testing.T) {
	bk, br0, br1, _ := sharedBridges(t, UpcallConfig{})
	if _, err := br0.AddPatchPort("pa", "pb", 0, PortVLAN{}); err != nil {
		t.Fatal(err)
	}
	if _, err := br0.AddPatchPort("px", "px", 0, PortVLAN{}); err == nil {
		t.Error("a patch port that is its own peer was accepted")
	}
	if _, err := br0.AddPatchPort("py", "", 0, PortVLAN{}); err == nil {
		t.Error("a patch port without a peer was accepted")
	}
	p1, p2 := br0.Ports.byName("p1"), br1.Ports.byName("p2")
	var key flow.Key
	flow.ExtractInto(&key, synFrame(5), &flow.Metadata{InPort: p1.DPPort})
	var out Out
	bk.Translate(&key, time.Now(), false, &out)
	if bytes.Contains([]byte(datapath.FormatActions(out.Actions)), []byte(itoa(p2.DPPort))) {
		t.Errorf("unconnected patch port forwarded: %s", datapath.FormatActions(out.Actions))
	}
	if _, err := br1.AddPatchPort("pb", "pa", 0, PortVLAN{}); err != nil {
		t.Fatal(err)
	}
	bk.Translate(&key, time.Now(), false, &out)
	if !bytes.Contains([]byte(datapath.FormatActions(out.Actions)), []byte(itoa(p2.DPPort))) {
		t.Errorf("connected patch port did not forward: %s", datapath.FormatActions(out.Actions))
	}
}

// TestBackerTranslateAllocs: translating through the backer, across a
// patch pair, allocates nothing.
func TestBackerTranslateAllocs(t *testing.T) {
	bk, br0, br1, _ := sharedBridges(t, UpcallConfig{})
	patchPair(t, br0, br1, "pa", "pb")
	p1 := br0.Ports.byName("p1")
	f := synFrame(6)
	var key flow.Key
	flow.ExtractInto(&key, f, &flow.Metadata{InPort: p1.DPPort})
	out := Out{Actions: make([]byte, 0, 1024)}
	now := time.Now()
	bk.Translate(&key, now, true, &out)
	n := testing.AllocsPerRun(1000, func() {
		binary.BigEndian.PutUint16(f[34:], 7)
		bk.Translate(&key, now, true, &out)
	})
	if n != 0 {
		t.Errorf("a translation across a patch pair allocates %v times", n)
	}
}

// TestPatchPortTrace: ofproto/trace of a packet crossing a patch pair
// heads the peer bridge's rules with its name, as ovs-vswitchd's does.
func TestPatchPortTrace(t *testing.T) {
	_, br0, br1, _ := sharedBridges(t, UpcallConfig{})
	patchPair(t, br0, br1, "pa", "pb")
	var key flow.Key
	flow.ExtractInto(&key, synFrame(8), &flow.Metadata{InPort: br0.Ports.byName("p1").DPPort})
	tr := br0.Trace(&key)
	if !strings.Contains(tr, "bridge(\"br0\")\n") || !strings.Contains(tr, "\n    bridge(\"br1\")\n    -------------\n") {
		t.Errorf("trace lacks the two bridges:\n%s", tr)
	}
	// NORMAL floods LOCAL first, then in port order: br0's LOCAL, then
	// pa, where br1 floods to its LOCAL and p2.
	want := "Datapath actions: " + itoa(br0.Ports.byName("br0").DPPort) + "," + itoa(br1.Ports.byName("br1").DPPort) + "," +
		itoa(br1.Ports.byName("p2").DPPort) + "\n"
	if !strings.Contains(tr, want) {
		t.Errorf("trace lacks %q:\n%s", want, tr)
	}
}

// TestPatchPortPacketIn: a packet-in sent by the rules of a bridge reached
// through a patch port goes to that bridge's controllers, in the extended
// form whose metadata names its OpenFlow in_port, the patch port (the
// datapath's input port belongs to the other bridge), as ovs-vswitchd's
// packet-in from br1 says in_port=pb.
func TestPatchPortPacketIn(t *testing.T) {
	bk, br0, br1, prov := sharedBridges(t, UpcallConfig{})
	patchPair(t, br0, br1, "pa", "pb")
	pa, pb := br0.Ports.byName("pa"), br1.Ports.byName("pb")
	mustAdd(t, br0.X, 0, func(*flow.Key, *flow.Mask) {}, 1, apply(openflow.Output(pa.OFPort, 0)))
	mustAdd(t, br1.X, 0, func(*flow.Key, *flow.Mask) {}, 1, apply(openflow.Output(openflow.PortController, 0xffff)))
	got := make(chan PacketIn, 4)
	br1.SetPacketIn(func(pi PacketIn) { got <- pi })
	br0.SetPacketIn(func(pi PacketIn) { t.Errorf("br0 got a packet-in: %+v", pi) })
	bk.Start()
	defer bk.Stop()
	prov.Netdev("p1").Send(synFrame(2))
	select {
	case pi := <-got:
		if pi.Ext == nil {
			t.Fatalf("packet-in %+v without metadata", pi)
		}
		var md openflow.Match
		if err := openflow.DecodeNXM(openflow.Version13, pi.Ext.Metadata, &md); err != nil || md.Key.InPort != pb.OFPort {
			t.Errorf("packet-in metadata in_port %d (%v), want pb's %d", md.Key.InPort, err, pb.OFPort)
		}
		if pi.Reason != ReasonAction || pi.Table != 0 {
			t.Errorf("packet-in reason %d table %d", pi.Reason, pi.Table)
		}
	case <-time.After(2 * time.Second):
		t.Fatal("br1 got no packet-in")
	}
}
