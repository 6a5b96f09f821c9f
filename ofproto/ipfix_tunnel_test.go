package ofproto

import (
	"net"
	"testing"
	"time"

	"github.com/govswitch/govswitch/datapath"
	"github.com/govswitch/govswitch/flow"
	"github.com/govswitch/govswitch/ofproto/ipfix"
	"github.com/govswitch/govswitch/ofproto/openflow"
)

// TestIPFIXTunnelTranslation: a flow sample whose sampling port is the
// packet's input port is the packet entering (no output port), as
// xlate_sample_action has it.
func TestIPFIXTunnelTranslation(t *testing.T) {
	now := time.Now()
	bk, br0, _, v0, _ := tunnelBridges(t)
	p1 := br0.Ports.byName("p1")
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

// TestIPFIXTunnelRecords: an ingress sample upcall of a packet from a
// vxlan port becomes a record with the Tunneled template, its tunnel
// elements from the packet's tunnel metadata. As ovs-vswitchd, it sends
// no tunnel elements for an ingress packet with an IPv6 outer header, an
// egress sample (here, without the datapath's egress tunnel key), or
// with tunnel sampling off.
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
	for _, tc := range []struct {
		name     string
		sampling bool
		in       uint32
		rx       flow.Tunnel
		output   uint32
		want     *flow.Tunnel // the record's tunnel, nil for NotTunneled
	}{
		{"ingress vxlan", true, v0.DPPort, rxTun, odppNone, &rxTun},
		{"ingress IPv6 outer", true, v0.DPPort, rx6, odppNone, nil},
		{"egress", true, p1.DPPort, flow.Tunnel{}, v0.DPPort, nil},
		{"egress from a tunnel", true, v0.DPPort, rxTun, p1.DPPort, nil},
		{"tunnel sampling off", false, v0.DPPort, rxTun, odppNone, nil},
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
