package ovsdb

import (
	"sort"
	"testing"
)

// FuzzBuild feeds Build rows whose strings come from the fuzzer: names,
// interface types and options, ofport numbers, other_config values and dangling
// references. Build must not panic, and every interface either has a
// datapath port type or an error.
func FuzzBuild(f *testing.F) {
	f.Add("br0", "eth1", "", "5000", "secure", 7, "OpenFlow13")
	f.Add("", "a-very-long-interface-name", "vxlan", "-1", "nonsense", -3, "OpenFlow15")
	f.Add("br0", "br0", "system", "9999999999999", "", 70000, "")
	f.Add("br0", "patch0", "patch", "patch1", "", 3, "")
	f.Add("br0", "patch0", "patch", "patch0", "", 0, "")
	f.Add("br0", "eth1", "", "802.1q", "dot1q-tunnel", 4094, "")
	f.Fuzz(func(t *testing.T, bridge, ifname, iftype, knob, failMode string, ofport int, proto string) {
		root := &OpenvSwitch{UUID: "root", Bridges: []string{"b0", "dangling"},
			OtherConfig: map[string]string{"flow-limit": knob, "max-idle": knob, "n-handler-threads": knob,
				"govswitch-governor": knob, "vlan-limit": knob}}
		br := &Bridge{UUID: "b0", Name: bridge, FailMode: &failMode, Protocols: []string{proto},
			OtherConfig: map[string]string{"mac-table-size": knob, "mac-aging-time": knob},
			Ports:       []string{"p0", "p1", "nope"}, Controller: []string{"c0", "nada"}}
		in0 := &Interface{UUID: "i0", Name: ifname, Type: iftype, OfportRequest: &ofport, Ofport: &ofport,
			Options: map[string]string{"peer": knob}}
		in1 := &Interface{UUID: "i1", Name: bridge, Type: iftype}
		r := &Rows{Root: root, Bridges: map[string]*Bridge{"b0": br},
			Ports: map[string]*Port{
				"p0": {UUID: "p0", Name: ifname, Interfaces: []string{"i0"}, VLANMode: &failMode, Tag: &ofport,
					CVLANs: []int{ofport, 100}, OtherConfig: map[string]string{"qinq-ethtype": knob}},
				"p1": {UUID: "p1", Name: bridge, Interfaces: []string{"i1", "i0", "gone"}},
			},
			Interfaces:  map[string]*Interface{"i0": in0, "i1": in1},
			Controllers: map[string]*Controller{"c0": {UUID: "c0", Target: knob, InactivityProbe: &ofport, MaxBackoff: &ofport}}}
		d := Build(r)
		if !sort.SliceIsSorted(d.Bridges, func(i, j int) bool { return d.Bridges[i].Name < d.Bridges[j].Name }) {
			t.Errorf("bridges not sorted")
		}
		if d.Global.VLANLimit < 0 {
			t.Errorf("vlan-limit %d", d.Global.VLANLimit)
		}
		for _, b := range d.Bridges {
			if b.Name == "" || len(b.Name) > 15 {
				t.Errorf("bridge %q accepted", b.Name)
			}
			if b.FailMode != "standalone" && b.FailMode != "secure" {
				t.Errorf("fail mode %q", b.FailMode)
			}
			for _, p := range b.Ports {
				if p.Err == "" && p.Type != "system" && p.Type != "internal" && p.Type != "patch" && !isTunnelType(p.Type) {
					t.Errorf("port %q type %q without an error", p.Name, p.Type)
				}
				if p.Err == "" && p.Type == "patch" && (p.Peer == "" || p.Peer == p.Name) {
					t.Errorf("patch port %q with peer %q accepted", p.Name, p.Peer)
				}
				if p.Err == "" && (p.Name == "" || len(p.Name) > 15) {
					t.Errorf("port name %q accepted", p.Name)
				}
				for _, c := range p.VLAN.CVLANs {
					if p.Err == "" && (c < 0 || c > 4095 || p.VLAN.Mode != "dot1q-tunnel") {
						t.Errorf("port %q: cvlan %d in mode %q accepted", p.Name, c, p.VLAN.Mode)
					}
				}
				if p.OFPortRequest >= 0xff00 || p.OFPortHint >= 0xff00 {
					t.Errorf("ofport %d/%d out of range", p.OFPortRequest, p.OFPortHint)
				}
			}
		}
	})
}
