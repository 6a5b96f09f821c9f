package ovsdb

import (
	"strings"
	"testing"
)

// FuzzBuildBondMirror feeds Build a bond Port and a Mirror whose columns
// come from the fuzzer. Build must not panic; a bond it accepts has a mode
// govswitchd runs and its members are marked; a mirror it accepts has
// exactly one output.
func FuzzBuildBondMirror(f *testing.F) {
	f.Add("balance-slb", "off", "carrier", "7", "true", 0, 10, "b")
	f.Add("balance-tcp", "active", "miimon", "x", "maybe", 100, 0, "")
	f.Add("", "", "", "", "", 0, -1, "a")
	f.Fuzz(func(t *testing.T, mode, lacp, detect, knob, allActive string, delay, vlan int, outPort string) {
		r := rowsOf(&OpenvSwitch{UUID: "root"}, &Bridge{UUID: "b0", Name: "br0"},
			map[string][]*Interface{"bond0": {iface("a", ""), iface("b", "")}, "c": {iface("c", "")}})
		p := r.Ports["p-bond0"]
		p.BondMode, p.LACP, p.BondUpdelay = &mode, &lacp, delay
		p.OtherConfig = map[string]string{"bond-detect-mode": detect, "bond-miimon-interval": knob,
			"bond-hash-basis": knob, "all-members-active": allActive, "bond-primary": knob}
		m := &Mirror{UUID: "m", Name: knob, SelectSrcPort: []string{"p-bond0", "p-gone"}, SelectVLAN: []int{vlan}}
		if outPort != "" {
			o := "p-" + outPort
			m.OutputPort = &o
		}
		if vlan > 0 {
			m.OutputVLAN = &vlan
		}
		r.Mirrors = map[string]*Mirror{"m": m}
		r.Bridges["b0"].Mirrors = []string{"m", "dangling"}
		d := Build(r)
		br := d.Bridges[0]
		for _, b := range br.Bonds {
			if b.Mode != "active-backup" && b.Mode != "balance-slb" {
				t.Errorf("bond mode %q accepted", b.Mode)
			}
		}
		for _, pc := range br.Ports {
			if pc.Name != "c" && pc.Err == "" && (pc.Bond != "bond0" || len(br.Bonds) != 1) {
				t.Errorf("member %s accepted without its bond: %+v", pc.Name, pc)
			}
			if pc.Err != "" && pc.Bond != "" {
				t.Errorf("member %s refused (%s) yet marked", pc.Name, pc.Err)
			}
		}
		for _, mc := range br.Mirrors {
			if (mc.OutputPort == "") == (mc.OutputVLAN == 0) {
				t.Errorf("mirror %+v accepted with no or two outputs", mc)
			}
			if strings.Contains(strings.Join(mc.SrcPorts, ","), "gone") {
				t.Errorf("mirror selects a missing port: %+v", mc)
			}
		}
	})
}
