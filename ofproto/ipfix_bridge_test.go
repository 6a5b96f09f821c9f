package ofproto

import (
	"bytes"
	"net"
	"testing"
	"time"

	"github.com/govswitch/govswitch/datapath"
	"github.com/govswitch/govswitch/flow"
	"github.com/govswitch/govswitch/ofproto/ipfix"
	"github.com/govswitch/govswitch/ofproto/openflow"
)

// ipfixCookies walks acts and returns the sample cookies of its
// userspace actions (in sample actions or bare) and the actions with
// those taken out.
func ipfixCookies(t *testing.T, acts []byte) (cks []SampleCookie, probs []uint32, rest []datapath.Action) {
	t.Helper()
	err := datapath.WalkActions(acts, func(a *datapath.Action) error {
		var inner []datapath.Action
		if a.Type == datapath.ActionSample {
			datapath.WalkActions(a.Actions, func(b *datapath.Action) error { inner = append(inner, *b); return nil })
		}
		switch {
		case len(inner) == 1 && inner[0].Type == datapath.ActionUserspace:
			ck, ok := ParseSampleCookie(inner[0].Userspace.Userdata)
			if !ok {
				t.Fatalf("sample without a cookie: %x", inner[0].Userspace.Userdata)
			}
			cks, probs = append(cks, ck), append(probs, a.Prob)
		case a.Type == datapath.ActionUserspace && len(a.Userspace.Userdata) == ovsCookieLen:
			ck, _ := ParseSampleCookie(a.Userspace.Userdata)
			cks, probs = append(cks, ck), append(probs, ^uint32(0))
		default:
			rest = append(rest, *a)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return cks, probs, rest
}

// TestIPFIXTranslation: with bridge IPFIX a translation samples the
// packet on input (output ODPP_NONE) and before each output (the output's
// datapath port), with probability UINT32_MAX/sampling (the bare
// userspace action at 1), and is otherwise the unsampled translation,
// under the same megaflow mask. enable-input/output-sampling leave their
// samples out.
func TestIPFIXTranslation(t *testing.T) {
	for _, tc := range []struct {
		name          string
		rate          uint32
		input, output bool
		want          []uint32 // cookie outputs
	}{
		{"rate 1", 1, true, true, []uint32{odppNone, 12, 13}},
		{"rate 64", 64, true, true, []uint32{odppNone, 12, 13}},
		{"no input", 4, false, true, []uint32{12, 13}},
		{"no output", 4, true, false, []uint32{odppNone}},
	} {
		x := testBridge(t)
		x.ControllerPID.Store(77)
		mustAdd(t, x, 0, func(k *flow.Key, m *flow.Mask) {}, 1, apply(openflow.Output(2, 0), openflow.Output(3, 0)))
		k := flow.Key{InPort: 11, EthType: flow.EthTypeIPv4, EthSrc: macA, EthDst: macB}
		var plain, sampled Out
		x.Translate(&k, t0, false, &plain)
		st := &ipfixState{bridge: &ipfix.Exporter{}, prob: max(1, ^uint32(0)/tc.rate), input: tc.input, output: tc.output}
		st.uuid[0] = 9
		x.ipfix.Store(st)
		x.Translate(&k, t0, false, &sampled)
		cks, probs, rest := ipfixCookies(t, sampled.Actions)
		_, _, plainActs := ipfixCookies(t, plain.Actions)
		if len(rest) != len(plainActs) {
			t.Errorf("%s: %d actions besides the samples, unsampled %d", tc.name, len(rest), len(plainActs))
		}
		if sampled.WC != plain.WC {
			t.Errorf("%s: the samples changed the megaflow mask", tc.name)
		}
		if len(cks) != len(tc.want) {
			t.Fatalf("%s: cookies %+v, want outputs %v", tc.name, cks, tc.want)
		}
		for i, ck := range cks {
			if ck.Type != cookieTypeIPFIX || ck.Output != tc.want[i] || ck.InPort != 1 || ck.UUID != st.uuid || probs[i] != st.prob {
				t.Errorf("%s: cookie %d %+v probability %d, want output %d, in_port 1, probability %d", tc.name, i, ck, probs[i], tc.want[i], st.prob)
			}
		}
	}
}

// TestIPFIXTranslateAllocs: bridge sampling adds no allocation to a
// translation.
func TestIPFIXTranslateAllocs(t *testing.T) {
	x := testBridge(t)
	x.ControllerPID.Store(77)
	mustAdd(t, x, 0, func(k *flow.Key, m *flow.Mask) {}, 1, apply(openflow.Output(2, 0)))
	x.ipfix.Store(&ipfixState{bridge: &ipfix.Exporter{}, prob: 1 << 20, input: true, output: true})
	k := flow.Key{InPort: 11, EthType: flow.EthTypeIPv4}
	var out Out
	out.Actions = make([]byte, 0, 1024)
	if n := testing.AllocsPerRun(100, func() { x.Translate(&k, t0, false, &out) }); n != 0 {
		t.Errorf("a sampled translation allocates %v times", n)
	}
}

// TestIPFIXEndToEnd: frames through a bridge on the in-memory datapath
// with bridge IPFIX at rate 1 reach a collector as one ingress and one
// egress record per frame and output port (flooded to p2 and br0),
// after the templates; the records name the ports' devices.
func TestIPFIXEndToEnd(t *testing.T) {
	b, prov := dummyBridge(t, UpcallConfig{})
	col, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer col.Close()
	b.Start()
	defer b.Stop()
	cfg := IPFIXConfig{Bridge: &IPFIXExporter{Config: ipfix.Config{Targets: []string{col.LocalAddr().String()}},
		Sampling: 1, ObsDomainID: 3, ObsPointID: 4, InputSampling: true, OutputSampling: true}}
	if err := b.SetIPFIX(&cfg); err != nil {
		t.Fatal(err)
	}
	p1, p2 := prov.Netdev("p1"), prov.Netdev("p2")
	const n = 10
	for i := 0; i < n; i++ {
		p1.Send(synFrame(uint16(i)))
		if _, err := p2.Recv(2 * time.Second); err != nil {
			t.Fatalf("frame %d not forwarded: %v", i, err)
		}
	}
	var c ipfix.Collector
	var recs []ipfix.Record
	buf := make([]byte, 65536)
	col.SetReadDeadline(time.Now().Add(10 * time.Second))
	for len(recs) < 1+3*n {
		m, err := col.Read(buf)
		if err != nil {
			t.Fatalf("after %d records: %v", len(recs), err)
		}
		rs, err := c.Decode(append([]byte(nil), buf[:m]...))
		if err != nil {
			t.Fatal(err)
		}
		recs = append(recs, rs...)
	}
	dirs := map[uint64]int{}
	egress := map[string]int{}
	for _, r := range recs {
		if r.Template == ipfix.OptionsTemplateID {
			continue
		}
		if r.Header.Domain != 3 || r.Uint(ipfix.ObservationPointID) != 4 || r.Uint(ipfix.PacketDelta) != 1 ||
			r.Uint(ipfix.Layer2OctetDelta) != 54 || r.Uint(ipfix.ProtocolIdentifier) != 6 {
			t.Errorf("record %+v", r)
		}
		if v, _ := r.Get(ipfix.InterfaceName); string(v) != "p1" {
			t.Errorf("ingress interface %q, want p1", v)
		}
		dirs[r.Uint(ipfix.FlowDirection)]++
		if r.Uint(ipfix.FlowDirection) == ipfix.Egress {
			v, _ := r.GetN(ipfix.InterfaceName, 1)
			egress[string(v)]++
		}
	}
	if dirs[ipfix.Ingress] != n || dirs[ipfix.Egress] != 2*n || egress["p2"] != n {
		t.Errorf("records by direction %v, egress by interface %v; want %d ingress, %d egress (p2 and the bridge's own)", dirs, egress, n, 2*n)
	}
	if s, ok := b.IPFIXStats(); !ok || s.Packets != 3*n || s.IPv4 != 3*n {
		t.Errorf("stats %+v", s)
	}
	if err := b.SetIPFIX(nil); err != nil {
		t.Fatal(err)
	}
}

// TestIPFIXUpcallAllocs: once the cache and buffers are warm, a sample
// upcall (aggregated into a cached flow) allocates nothing.
func TestIPFIXUpcallAllocs(t *testing.T) {
	b, _ := dummyBridge(t, UpcallConfig{})
	col, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer col.Close()
	for _, maxFlows := range []int{0, 100} {
		cfg := IPFIXConfig{Bridge: &IPFIXExporter{Config: ipfix.Config{Targets: []string{col.LocalAddr().String()},
			ActiveTimeout: time.Hour, MaxFlows: maxFlows}, Sampling: 1, InputSampling: true}}
		if err := b.SetIPFIX(&cfg); err != nil {
			t.Fatal(err)
		}
		st := b.X.ipfix.Load()
		frame := synFrame(1)
		ck := SampleCookie{Type: cookieTypeIPFIX, UUID: st.uuid, Output: odppNone}
		up := datapath.Upcall{Cmd: datapath.UpcallAction, Packet: frame, Userdata: AppendSampleCookie(nil, &ck)}
		flow.ExtractInto(&up.Key, frame, &flow.Metadata{InPort: b.Ports.Snapshot().List()[0].DPPort})
		u := b.Udpif
		for i := 0; i < 100; i++ {
			u.sampleUpcall(&up)
		}
		if n := testing.AllocsPerRun(200, func() { u.sampleUpcall(&up) }); n > 0.05 {
			t.Errorf("max flows %d: an IPFIX sample upcall allocates %v times", maxFlows, n)
		}
	}
	b.SetIPFIX(nil)
}

// TestSampleCookie: the cookies are ovs-vswitchd's 48-byte
// user_action_cookie, host byte order (this is ovs-dpctl's parse of
// "userspace(pid=1,ipfix(output_port=7))" on a little-endian host).
func TestSampleCookie(t *testing.T) {
	ck := SampleCookie{Type: cookieTypeIPFIX, InPort: 0xffff, Output: 7}
	got := AppendSampleCookie(nil, &ck)
	want := []byte{
		4, 0, 0, 0, // type USER_ACTION_COOKIE_IPFIX, padding
		0xff, 0xff, 0, 0, // ofp_in_port OFPP_NONE (ofp_port_t is 32 bits)
		0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, // ofproto_uuid
		7, 0, 0, 0, // ipfix.output_odp_port
		0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, // the rest of the union
	}
	if !bytes.Equal(got, want) {
		t.Errorf("cookie %x, want %x", got, want)
	}
	fs := SampleCookie{Type: cookieTypeFlowSample, InPort: 1, Probability: 65535, CollectorSet: 5, Domain: 6, Point: 7,
		Output: odppNone, Direction: SampleEgress}
	if d, ok := ParseSampleCookie(AppendSampleCookie(nil, &fs)); !ok || d != fs {
		t.Errorf("flow sample cookie round trip %+v, want %+v", d, fs)
	}
}

// FuzzParseSampleCookie: the cookie decoder takes any userdata without
// panicking, and what it accepts re-encodes to the bytes it read (the
// fields of its type; the rest of a cookie is padding).
func FuzzParseSampleCookie(f *testing.F) {
	f.Add(AppendSampleCookie(nil, &SampleCookie{Type: cookieTypeIPFIX, InPort: 2, Output: 3}))
	f.Add(AppendSampleCookie(nil, &SampleCookie{Type: cookieTypeFlowSample, Probability: 100, CollectorSet: 1, Direction: 1}))
	f.Add(make([]byte, ovsCookieLen))
	f.Add([]byte{UserdataSFlow, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		ck, ok := ParseSampleCookie(b)
		if !ok {
			return
		}
		e := AppendSampleCookie(nil, &ck)
		if !bytes.Equal(e[:2], b[:2]) || !bytes.Equal(e[4:24], b[4:24]) || ck.Type == cookieTypeIPFIX && !bytes.Equal(e[24:28], b[24:28]) ||
			ck.Type == cookieTypeFlowSample && (!bytes.Equal(e[24:26], b[24:26]) || !bytes.Equal(e[28:48], b[28:48])) {
			t.Fatalf("%x decoded as %+v, re-encoded %x", b, ck, e)
		}
	})
}

// TestFlowSampleTranslation: the sample action becomes a datapath sample
// of probability p<<16|p around a flow-sample cookie naming the collector
// set, domain, point, the sampling port's datapath port and the
// direction, after the header changes before it are committed; the rest
// is the unsampled translation. Without IPFIX on the bridge, or with an
// unknown sampling port, it adds nothing.
func TestFlowSampleTranslation(t *testing.T) {
	rule := func(port uint32) openflow.Instructions {
		return apply(openflow.Sample(100, 5, 6, 7, port, openflow.SampleEgress), openflow.Output(2, 0))
	}
	k := flow.Key{InPort: 11, EthType: flow.EthTypeIPv4, EthSrc: macA, EthDst: macB}

	x := testBridge(t)
	x.ControllerPID.Store(77)
	mustAdd(t, x, 0, func(k *flow.Key, m *flow.Mask) {}, 1, rule(2))
	var none Out
	x.Translate(&k, t0, false, &none)
	if cks, _, _ := ipfixCookies(t, none.Actions); len(cks) != 0 {
		t.Errorf("without IPFIX: samples %+v", cks)
	}

	st := &ipfixState{sets: map[uint32]*ipfix.Exporter{5: {}}}
	st.uuid[3] = 1
	x.ipfix.Store(st)
	var out Out
	x.Translate(&k, t0, false, &out)
	cks, probs, rest := ipfixCookies(t, out.Actions)
	want := SampleCookie{Type: cookieTypeFlowSample, InPort: 1, UUID: st.uuid, Probability: 100, CollectorSet: 5, Domain: 6,
		Point: 7, Output: 12, Direction: SampleEgress}
	if len(cks) != 1 || cks[0] != want || probs[0] != 100<<16|100 {
		t.Errorf("samples %+v probabilities %v, want %+v at %d", cks, probs, want, 100<<16|100)
	}
	if len(rest) != 1 || rest[0].Type != datapath.ActionOutput || out.WC != none.WC {
		t.Errorf("the rest %+v; the mask changed: %v", rest, out.WC != none.WC)
	}

	y := testBridge(t)
	y.ControllerPID.Store(77)
	mustAdd(t, y, 0, func(k *flow.Key, m *flow.Mask) {}, 1, rule(99))
	y.ipfix.Store(st)
	var unknown Out
	y.Translate(&k, t0, false, &unknown)
	if cks, _, rest := ipfixCookies(t, unknown.Actions); len(cks) != 0 || len(rest) != 1 {
		t.Errorf("sampling port 99 (none such): samples %+v, actions %+v", cks, rest)
	}
}

// TestFlowSampleEndToEnd: a flow's sample action on the in-memory
// datapath exports each frame (probability 65535) through the collector
// set's exporter, with the action's domain and point, as an egress
// record naming the sampling port.
func TestFlowSampleEndToEnd(t *testing.T) {
	b, prov := dummyBridge(t, UpcallConfig{})
	col, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer col.Close()
	b.Start()
	defer b.Stop()
	if err := b.SetIPFIX(&IPFIXConfig{Sets: map[uint32]ipfix.Config{9: {Targets: []string{col.LocalAddr().String()}}}}); err != nil {
		t.Fatal(err)
	}
	var p2 uint32
	for _, p := range b.Ports.Snapshot().List() {
		if p.Name == "p2" {
			p2 = p.OFPort
		}
	}
	mustAdd(t, b.X, 0, func(k *flow.Key, m *flow.Mask) {}, 10,
		apply(openflow.Sample(65535, 9, 21, 22, p2, openflow.SampleDefault), openflow.Output(p2, 0)))
	prov1, prov2 := prov.Netdev("p1"), prov.Netdev("p2")
	const n = 5
	for i := 0; i < n; i++ {
		prov1.Send(synFrame(uint16(i)))
		if _, err := prov2.Recv(2 * time.Second); err != nil {
			t.Fatalf("frame %d not forwarded: %v", i, err)
		}
	}
	var c ipfix.Collector
	var recs []ipfix.Record
	buf := make([]byte, 65536)
	col.SetReadDeadline(time.Now().Add(10 * time.Second))
	for len(recs) < 1+n {
		m, err := col.Read(buf)
		if err != nil {
			t.Fatalf("after %d records: %v", len(recs), err)
		}
		rs, err := c.Decode(append([]byte(nil), buf[:m]...))
		if err != nil {
			t.Fatal(err)
		}
		recs = append(recs, rs...)
	}
	for _, r := range recs[1:] {
		out, _ := r.GetN(ipfix.InterfaceName, 1)
		if r.Header.Domain != 21 || r.Uint(ipfix.ObservationPointID) != 22 || r.Uint(ipfix.FlowDirection) != ipfix.Egress ||
			string(out) != "p2" || r.Uint(ipfix.PacketDelta) != 1 {
			t.Errorf("record %+v: want domain 21, point 22, egress by p2, 1 packet (65535/65535)", r)
		}
	}
	if s := b.IPFIXSetStats()[9]; s.Packets != n {
		t.Errorf("collector set 9 stats %+v, want %d packets", s, n)
	}
}
