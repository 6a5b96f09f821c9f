package ofproto

import (
	"net"
	"strings"
	"testing"
	"time"

	"github.com/govswitch/govswitch/datapath"
	"github.com/govswitch/govswitch/flow"
	"github.com/govswitch/govswitch/ofproto/ipfix"
	"github.com/govswitch/govswitch/ofproto/openflow"
)

// TestIPFIXTunnelTranslation: with tunnel sampling, the bridge's output
// sample of a packet sent to a tunnel port comes after the port's
// set(tunnel(...)) and its userspace action names the tunnel's datapath
// port (tunnel_out_port), as compose_ipfix_action; the input sample and
// samples without tunnel sampling name none. A flow sample with the
// tunnel port as sampling port commits the port's tunnel first, as
// xlate_sample_action does; one whose sampling port is the input port is
// an ingress sample.
func TestIPFIXTunnelTranslation(t *testing.T) {
	_, first, _, v0, _ := tunnelBridges(t) // the numbering every call gives
	p1 := first.Ports.byName("p1")
	tunSet := "set(tunnel(tun_id=0x64,dst=10.0.0.2,ttl=64,tp_dst=4789,flags(df|key)))"
	vp := u32s(v0.DPPort)
	// As ovs-dpctl prints them: the input sample, the flow sample.
	in := "userspace(pid=77,ipfix(output_port=4294967295))"
	fs := "flow_sample(probability=65535,collector_set_id=5,obs_domain_id=6,obs_point_id=7,output_port=" + vp + ",egress"
	now := time.Now()
	for _, tc := range []struct {
		name     string
		sampling bool
		acts     []openflow.Action
		want     string // the formatted actions
	}{
		{"bridge", true, []openflow.Action{openflow.Output(v0.OFPort, 0)},
			in + "," + tunSet + ",userspace(pid=77,ipfix(output_port=" + vp + "),tunnel_out_port=" + vp + ")," + vp},
		{"bridge without tunnel sampling", false, []openflow.Action{openflow.Output(v0.OFPort, 0)},
			in + "," + tunSet + ",userspace(pid=77,ipfix(output_port=" + vp + "))," + vp},
		{"flow sample", true, []openflow.Action{openflow.Sample(65535, 5, 6, 7, v0.OFPort, openflow.SampleEgress)},
			in + "," + tunSet + ",userspace(pid=77," + fs + "),tunnel_out_port=" + vp + ")"},
		{"flow sample without tunnel sampling", false, []openflow.Action{openflow.Sample(65535, 5, 6, 7, v0.OFPort,
			openflow.SampleEgress)},
			in + ",userspace(pid=77," + fs + "))"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bk, br0, _, _, _ := tunnelBridges(t)
			br0.X.ControllerPID.Store(77)
			addRule(t, br0, p1.OFPort, 0, tc.acts...)
			cfg := ipfix.Config{TunnelSampling: tc.sampling}
			st := &ipfixState{bridge: ipfixTestExporter(t, cfg), prob: ^uint32(0), delta: 1, input: true, output: true,
				sets: map[uint32]*ipfix.Exporter{5: ipfixTestExporter(t, cfg)}}
			br0.X.ipfix.Store(st)
			defer br0.X.ipfix.Store(nil)
			out := Out{Actions: make([]byte, 0, 1024)}
			var key flow.Key
			flow.ExtractInto(&key, synFrame(6), &flow.Metadata{InPort: p1.DPPort})
			bk.Translate(&key, now, true, &out)
			if got := datapath.FormatActions(out.Actions); got != tc.want {
				t.Errorf("actions\n got  %s\n want %s", got, tc.want)
			}
		})
	}

	// A flow sample whose sampling port is the packet's input port is
	// the packet entering: no output port, no tunnel.
	bk, br0, _, _, _ := tunnelBridges(t)
	br0.X.ControllerPID.Store(77)
	addRule(t, br0, v0.OFPort, 0, openflow.Sample(65535, 5, 6, 7, v0.OFPort, openflow.SampleDefault),
		openflow.Output(p1.OFPort, 0))
	cfg := ipfix.Config{TunnelSampling: true}
	br0.X.ipfix.Store(&ipfixState{sets: map[uint32]*ipfix.Exporter{5: ipfixTestExporter(t, cfg)}})
	defer br0.X.ipfix.Store(nil)
	rx := flow.Metadata{InPort: v0.DPPort, Tunnel: flow.Tunnel{ID: 100, IPv4Src: [4]byte{10, 0, 0, 2},
		IPv4Dst: [4]byte{10, 0, 0, 1}, TTL: 64, TpDst: 4789, Flags: flow.TunnelKey}}
	var key flow.Key
	flow.ExtractInto(&key, synFrame(8), &rx)
	out := Out{Actions: make([]byte, 0, 1024)}
	bk.Translate(&key, now, true, &out)
	cks, _, _ := ipfixCookies(t, out.Actions)
	if len(cks) != 1 || cks[0].Output != odppNone {
		t.Errorf("sampling port = input port: cookies %+v, want one with no output port", cks)
	}
	if s := datapath.FormatActions(out.Actions); strings.Contains(s, "tunnel_out_port") {
		t.Errorf("an ingress sample names a tunnel port: %s", s)
	}
}

// ipfixTestExporter is an exporter with configuration cfg sending to a
// UDP socket of its own on loopback; it and the socket are closed at the
// end of the test.
func ipfixTestExporter(t *testing.T, cfg ipfix.Config) *ipfix.Exporter {
	t.Helper()
	c, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	cfg.Targets = []string{c.LocalAddr().String()}
	e, err := ipfix.NewExporter(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Close)
	return e
}

// TestIPFIXTunnelRecords: sample upcalls of tunnel traffic become records
// with the Tunneled template: an ingress sample on a vxlan port from the
// packet's tunnel metadata, an egress sample from the upcall's egress
// tunnel key. As ovs-vswitchd, it sends no tunnel elements for an
// ingress packet with an IPv6 outer header, an egress sample without the
// datapath's egress key, a port not a tunnel, or with tunnel sampling
// off.
func TestIPFIXTunnelRecords(t *testing.T) {
	_, br0, _, v0, _ := tunnelBridges(t)
	p1 := br0.Ports.byName("p1")
	col, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer col.Close()
	rxTun := flow.Tunnel{ID: 100, IPv4Src: [4]byte{10, 0, 0, 2}, IPv4Dst: [4]byte{10, 0, 0, 1}, TTL: 64, TpSrc: 40000,
		TpDst: 4789, Flags: flow.TunnelKey}
	rx6 := flow.Tunnel{ID: 100, IPv6Src: [16]byte{0xfd, 15: 2}, IPv6Dst: [16]byte{0xfd, 15: 1}, TpDst: 4789,
		Flags: flow.TunnelKey}
	txTun := flow.Tunnel{ID: 0x64, IPv4Src: [4]byte{10, 0, 0, 1}, IPv4Dst: [4]byte{10, 0, 0, 2}, TTL: 64, TpSrc: 51234,
		TpDst: 4789, Flags: flow.TunnelKey | flow.TunnelDontFragment}
	for _, tc := range []struct {
		name     string
		sampling bool
		in       uint32
		rx       flow.Tunnel
		output   uint32
		egress   *flow.Tunnel
		want     *flow.Tunnel // the record's tunnel, nil for NotTunneled
	}{
		{"ingress vxlan", true, v0.DPPort, rxTun, odppNone, nil, &rxTun},
		{"egress vxlan", true, p1.DPPort, flow.Tunnel{}, v0.DPPort, &txTun, &txTun},
		{"ingress IPv6 outer", true, v0.DPPort, rx6, odppNone, nil, nil},
		{"egress without the datapath's key", true, p1.DPPort, flow.Tunnel{}, v0.DPPort, nil, nil},
		{"egress key on a port not a tunnel", true, v0.DPPort, rxTun, p1.DPPort, &txTun, nil},
		{"tunnel sampling off", false, v0.DPPort, rxTun, odppNone, nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := IPFIXConfig{Bridge: &IPFIXExporter{Config: ipfix.Config{Targets: []string{col.LocalAddr().String()},
				TunnelSampling: tc.sampling}, Sampling: 1, InputSampling: true, OutputSampling: true}}
			if err := br0.SetIPFIX(&cfg); err != nil {
				t.Fatal(err)
			}
			defer br0.SetIPFIX(nil)
			st := br0.X.ipfix.Load()
			frame := synFrame(1)
			ck := SampleCookie{Type: cookieTypeIPFIX, UUID: st.uuid, Output: tc.output}
			up := datapath.Upcall{Cmd: datapath.UpcallAction, Packet: frame, Userdata: AppendSampleCookie(nil, &ck)}
			flow.ExtractInto(&up.Key, frame, &flow.Metadata{InPort: tc.in, Tunnel: tc.rx})
			if tc.egress != nil {
				up.EgressTunnelKey, up.HasEgressTunnel = *tc.egress, true
			}
			br0.Udpif.sampleUpcall(&up)
			var c ipfix.Collector
			var rec *ipfix.Record
			buf := make([]byte, 65536)
			col.SetReadDeadline(time.Now().Add(10 * time.Second))
			for rec == nil {
				n, err := col.Read(buf)
				if err != nil {
					t.Fatal(err)
				}
				rs, err := c.Decode(append([]byte(nil), buf[:n]...))
				if err != nil {
					t.Fatal(err)
				}
				for i := range rs {
					if rs[i].Template != ipfix.OptionsTemplateID {
						rec = &rs[i]
					}
				}
			}
			dir := ipfix.Ingress
			if tc.output != odppNone {
				dir = ipfix.Egress
			}
			tunneled := ipfix.NotTunneled
			if tc.want != nil {
				tunneled = ipfix.Tunneled
			}
			if want := ipfix.TemplateID(ipfix.L2Eth, ipfix.L3IPv4, ipfix.L4TCP, tunneled, dir); rec.Template != want {
				t.Fatalf("template %d, want %d", rec.Template, want)
			}
			if name, _ := rec.Get(ipfix.InterfaceName); tc.in == v0.DPPort && string(name) != "v0" {
				t.Errorf("ingress interface %q, want the tunnel port's name v0", name)
			}
			if tc.want == nil {
				return
			}
			w := tc.want
			key, _ := rec.Get(ipfix.TunnelKey)
			src, _ := rec.Get(ipfix.TunnelSourceIPv4)
			dst, _ := rec.Get(ipfix.TunnelDestinationIPv4)
			if rec.Uint(ipfix.TunnelType) != ipfix.TunnelVXLAN || string(key) != string([]byte{0, 0, byte(w.ID)}) ||
				string(src) != string(w.IPv4Src[:]) || string(dst) != string(w.IPv4Dst[:]) ||
				rec.Uint(ipfix.TunnelProtocol) != uint64(flow.IPProtoUDP) ||
				rec.Uint(ipfix.TunnelSourcePort) != uint64(w.TpSrc) || rec.Uint(ipfix.TunnelDestinationPort) != 4789 {
				t.Errorf("tunnel elements: type %d key %x src %v dst %v proto %d ports %d %d; want those of %+v",
					rec.Uint(ipfix.TunnelType), key, src, dst, rec.Uint(ipfix.TunnelProtocol),
					rec.Uint(ipfix.TunnelSourcePort), rec.Uint(ipfix.TunnelDestinationPort), w)
			}
		})
	}
}
