package ofproto

import (
	"bytes"
	"encoding/binary"
	"net"
	"net/netip"
	"testing"
	"time"

	"github.com/govswitch/govswitch/datapath"
	"github.com/govswitch/govswitch/flow"
	"github.com/govswitch/govswitch/netlinkio"
	"github.com/govswitch/govswitch/ofproto/openflow"
	"github.com/govswitch/govswitch/ofproto/sflow"
)

// splitSFlow takes the sFlow sample (or bare userspace) action off the
// front of acts and returns its userdata and the rest.
func splitSFlow(t *testing.T, acts []byte) (ud, rest []byte) {
	t.Helper()
	it := netlinkio.NewAttrIter(acts)
	if !it.Next() {
		t.Fatalf("no actions")
	}
	n := netlinkio.AttrHeaderLen + len(it.Data())
	n = (n + 3) &^ 3
	rest = acts[n:]
	var first []datapath.Action
	if err := datapath.WalkActions(acts[:n], func(a *datapath.Action) error { first = append(first, *a); return nil }); err != nil || len(first) != 1 {
		t.Fatalf("first action %x: %v", acts[:n], err)
	}
	a := first[0]
	switch a.Type {
	case datapath.ActionSample:
		var inner []datapath.Action
		if err := datapath.WalkActions(a.Actions, func(a *datapath.Action) error { inner = append(inner, *a); return nil }); err != nil ||
			len(inner) != 1 || inner[0].Type != datapath.ActionUserspace {
			t.Fatalf("sample's actions %x: %v", a.Actions, err)
		}
		return inner[0].Userspace.Userdata, rest
	case datapath.ActionUserspace:
		return a.Userspace.Userdata, rest
	}
	t.Fatalf("first action is %v, not sFlow's", a.Type)
	return nil, nil
}

// TestSFlowTranslation: with sFlow, a translation is the sample action
// then exactly the unsampled translation's actions, under the same
// megaflow mask; the userdata says where the packet went. At a rate of 1
// the userspace action stands alone, as ovs-vswitchd emits it.
func TestSFlowTranslation(t *testing.T) {
	for _, tc := range []struct {
		name     string
		acts     []openflow.Action
		nOut     uint32
		lastPort uint32
	}{
		{"one output", []openflow.Action{openflow.Output(2, 0)}, 1, 12},
		{"two outputs", []openflow.Action{openflow.Output(2, 0), openflow.Output(3, 0)}, 2, 13},
		{"drop", nil, 0, 0},
		{"flood", []openflow.Action{openflow.Output(openflow.PortFlood, 0)}, 2, 0},
	} {
		for _, rate := range []uint32{1, 64} {
			x := testBridge(t)
			x.ControllerPID.Store(77)
			mustAdd(t, x, 0, func(k *flow.Key, m *flow.Mask) {}, 1, apply(tc.acts...))
			k := flow.Key{InPort: 11, EthType: flow.EthTypeIPv4, EthSrc: macA, EthDst: macB}
			var plain, sampled Out
			x.Translate(&k, t0, false, &plain)
			cfg := sflow.Config{Sampling: rate}
			x.sflow.Store(&sflowState{prob: cfg.Probability()})
			x.Translate(&k, t0, false, &sampled)
			ud, rest := splitSFlow(t, sampled.Actions)
			if !bytes.Equal(rest, plain.Actions) {
				t.Errorf("%s rate %d: actions after the sample %x, unsampled %x", tc.name, rate, rest, plain.Actions)
			}
			if sampled.WC != plain.WC {
				t.Errorf("%s rate %d: the sample changed the megaflow mask", tc.name, rate)
			}
			u, ok := ParseSFlowUserdata(ud)
			if !ok || u.NOutputs != tc.nOut || tc.nOut > 0 && u.OutPort != tc.lastPort {
				t.Errorf("%s rate %d: userdata %x = %+v, want %d outputs, last %d", tc.name, rate, ud, u, tc.nOut, tc.lastPort)
			}
			if typ := binary.NativeEndian.Uint16(sampled.Actions[2:]); rate == 1 && typ != uint16(datapath.ActionUserspace) ||
				rate > 1 && typ != uint16(datapath.ActionSample) {
				t.Errorf("rate %d: first action type %d", rate, typ)
			}
		}
	}
}

// TestSFlowProbability: UINT32_MAX/rate, as ovs-vswitchd.
func TestSFlowProbability(t *testing.T) {
	for _, tc := range []struct{ rate, want uint32 }{{1, 0xffffffff}, {2, 0x7fffffff}, {400, 10737418}, {0xffffffff, 1}} {
		c := sflow.Config{Sampling: tc.rate}
		if got := c.Probability(); got != tc.want {
			t.Errorf("rate %d: probability %d, want %d", tc.rate, got, tc.want)
		}
	}
}

// TestSFlowTranslateAllocs: sampling adds no allocation to a translation.
func TestSFlowTranslateAllocs(t *testing.T) {
	x := testBridge(t)
	x.ControllerPID.Store(77)
	mustAdd(t, x, 0, func(k *flow.Key, m *flow.Mask) {}, 1, apply(openflow.Output(2, 0)))
	x.sflow.Store(&sflowState{prob: 1 << 20})
	k := flow.Key{InPort: 11, EthType: flow.EthTypeIPv4}
	var out Out
	out.Actions = make([]byte, 0, 1024)
	if n := testing.AllocsPerRun(100, func() { x.Translate(&k, t0, false, &out) }); n != 0 {
		t.Errorf("a sampled translation allocates %v times", n)
	}
}

// TestSFlowEndToEnd: frames through a bridge on the in-memory datapath
// with sampling 1 come to a UDP collector as flow samples, one per frame,
// with the frame's header, the input's ifIndex, the output (flooded to p2
// and br0: nobody has sent from the destination) and the rate; counter
// polls carry the ports' packet counts.
func TestSFlowEndToEnd(t *testing.T) {
	b, prov := dummyBridge(t, UpcallConfig{})
	col, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer col.Close()
	b.Start()
	defer b.Stop()
	cfg := sflow.Config{Agent: netip.MustParseAddr("192.0.2.9"), Targets: []string{col.LocalAddr().String()},
		Sampling: 1, Polling: time.Second, Header: 64}
	if err := b.SetSFlow(&cfg); err != nil {
		t.Fatal(err)
	}
	p1, p2 := prov.Netdev("p1"), prov.Netdev("p2")
	const n = 20
	for i := 0; i < n; i++ {
		p1.Send(synFrame(uint16(i)))
		if _, err := p2.Recv(2 * time.Second); err != nil {
			t.Fatalf("frame %d not forwarded: %v", i, err)
		}
	}
	vps, _ := b.DP.Vports()
	ifx := map[string]uint32{}
	for _, v := range vps {
		ifx[v.Name] = v.IfIndex
	}
	var flows []sflow.FlowSample
	var counters []sflow.CounterSample
	buf := make([]byte, 65536)
	col.SetReadDeadline(time.Now().Add(10 * time.Second))
	for len(flows) < n || len(counters) == 0 {
		m, err := col.Read(buf)
		if err != nil {
			t.Fatalf("after %d flow samples, %d counter samples: %v", len(flows), len(counters), err)
		}
		d, err := sflow.Decode(buf[:m])
		if err != nil {
			t.Fatalf("decode: %v", err)
		}
		if d.Agent != cfg.Agent {
			t.Errorf("agent %v", d.Agent)
		}
		for _, f := range d.Flows {
			f.Packet = append([]byte(nil), f.Packet...) // buf is read into again
			flows = append(flows, f)
		}
		counters = append(counters, d.Counters...)
	}
	if len(flows) != n {
		t.Errorf("%d flow samples of %d frames at rate 1", len(flows), n)
	}
	for i, f := range flows {
		if f.Rate != 1 || f.Input != ifx["p1"] || f.Output != sflow.OutputMultiple|2 || f.Frame != 58 || len(f.Packet) != 54 ||
			f.Seq != uint32(i+1) || f.Pool != uint32(i+1) || !bytes.Equal(f.Packet[:12], synFrame(0)[:12]) {
			t.Errorf("flow sample %d: %+v (p1 %d, p2 %d)", i, f, ifx["p1"], ifx["p2"])
		}
	}
	var sawP1 bool
	for _, c := range counters {
		if c.Generic.Index == ifx["p1"] {
			sawP1 = true
			if c.Generic.InUcast < n {
				t.Errorf("p1's counters: %+v, want at least %d packets in", c.Generic, n)
			}
		}
	}
	if !sawP1 {
		t.Errorf("no counter sample of p1 (ifIndex %d): %+v", ifx["p1"], counters)
	}
	if err := b.SetSFlow(nil); err != nil {
		t.Fatal(err)
	}
}

// FuzzParseSFlowUserdata: the sFlow cookie decoder takes any userdata an
// upcall carries without panicking, and what it accepts re-encodes to
// the same 16 bytes it read (the reserved bytes aside).
func FuzzParseSFlowUserdata(f *testing.F) {
	f.Add([]byte{UserdataSFlow, 0, 0, 1, 0, 0, 0, 2, 0, 0, 0, 1, 0x20, 0x0a, 0, 0})
	f.Add([]byte{UserdataController, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0})
	f.Add([]byte{UserdataSFlow})
	f.Fuzz(func(t *testing.T, b []byte) {
		u, ok := ParseSFlowUserdata(b)
		if !ok {
			return
		}
		var e [sflowUserdataLn]byte
		e[0] = UserdataSFlow
		binary.BigEndian.PutUint16(e[2:], u.Bridge)
		binary.BigEndian.PutUint32(e[4:], u.OutPort)
		binary.BigEndian.PutUint32(e[8:], u.NOutputs)
		binary.BigEndian.PutUint16(e[12:], u.OutTCI)
		if e[0] != b[0] || !bytes.Equal(e[2:14], b[2:14]) {
			t.Fatalf("%x decoded as %+v, re-encoded %x", b, u, e)
		}
	})
}

// TestSFlowUpcallAllocs: a sampled packet's action upcall becomes a flow
// sample without allocating (sent datagrams aside, which the exporter
// writes from its own buffer).
func TestSFlowUpcallAllocs(t *testing.T) {
	b, _ := dummyBridge(t, UpcallConfig{})
	col, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer col.Close()
	cfg := sflow.Config{Agent: netip.MustParseAddr("192.0.2.9"), Targets: []string{col.LocalAddr().String()}, Sampling: 1}
	if err := b.SetSFlow(&cfg); err != nil {
		t.Fatal(err)
	}
	defer b.SetSFlow(nil)
	frame := synFrame(1)
	up := datapath.Upcall{Cmd: datapath.UpcallAction, Packet: frame,
		Userdata: []byte{UserdataSFlow, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0, 1, 0, 0, 0, 0}}
	binary.BigEndian.PutUint16(up.Userdata[2:], b.X.ID)
	flow.ExtractInto(&up.Key, frame, &flow.Metadata{InPort: b.Ports.Snapshot().List()[0].DPPort})
	u := b.Udpif
	for i := 0; i < 100; i++ {
		u.sflowUpcall(&up)
	}
	if n := testing.AllocsPerRun(200, func() { u.sflowUpcall(&up) }); n > 0.05 {
		t.Errorf("an sFlow upcall allocates %v times", n)
	}
	if st := b.X.sflow.Load().exp.Stats(); st.FlowSamples < 300 {
		t.Errorf("%d samples taken", st.FlowSamples)
	}
}
