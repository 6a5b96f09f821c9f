package ovsdb

import (
	"strings"
	"testing"
)

func TestBuildMirrors(t *testing.T) {
	r := rowsOf(&OpenvSwitch{UUID: "root"}, &Bridge{UUID: "b0", Name: "br0"},
		map[string][]*Interface{"p1": {iface("p1", "")}, "p2": {iface("p2", "")}, "bond0": {iface("a", ""), iface("b", "")}})
	out, vlan, snap := "p-p2", 20, 100
	r.Mirrors = map[string]*Mirror{
		"m1": {UUID: "m1", Name: "m1", SelectSrcPort: []string{"p-p1", "p-bond0"}, SelectVLAN: []int{20, 10}, OutputPort: &out},
		"m2": {UUID: "m2", Name: "m2", SelectAll: true, OutputVLAN: &vlan},
		"m3": {UUID: "m3", Name: "m3", SelectAll: true},
		"m4": {UUID: "m4", Name: "m4", SelectAll: true, OutputPort: &out, Snaplen: &snap},
	}
	r.Bridges["b0"].Mirrors = []string{"m1", "m2", "m3", "m4"}
	d := Build(r)
	ms := d.Bridges[0].Mirrors
	if len(ms) != 3 {
		t.Fatalf("mirrors %+v, want m1, m2 and m4", ms)
	}
	if m := ms[2]; m.Name != "m4" || m.Snaplen != 100 || m.OutputPort != "p2" {
		t.Errorf("m4 %+v", m)
	}
	if m := ms[0]; m.Name != "m1" || strings.Join(m.SrcPorts, ",") != "a,b,p1" || m.OutputPort != "p2" || len(m.VLANs) != 2 || m.VLANs[0] != 10 {
		t.Errorf("m1 %+v", m)
	}
	if m := ms[1]; m.Name != "m2" || !m.SelectAll || m.OutputVLAN != 20 {
		t.Errorf("m2 %+v", m)
	}
	all := strings.Join(d.Problems, "\n")
	for _, want := range []string{"mirror m3 does not specify output"} {
		if !strings.Contains(all, want) {
			t.Errorf("problems lack %q:\n%s", want, all)
		}
	}
}
