package ovsdb

import (
	"fmt"
	"maps"
	"slices"
)

// buildCTZones reads the system datapath's zones with a timeout policy
// (Open_vSwitch.datapaths:system -> Datapath.ct_zones -> CT_Zone
// .timeout_policy -> CT_Timeout_Policy.timeouts), what `ovs-vsctl
// add-zone-tp system zone=N udp_single=30 ...` writes. Other datapath
// types are not run by govswitchd; their rows are left alone. A zone with
// no policy sets nothing.
func buildCTZones(r *Rows, problems *[]string) map[uint16]map[string]uint32 {
	du, ok := r.Root.Datapaths["system"]
	if !ok {
		return nil
	}
	dp := r.Datapaths[du]
	if dp == nil {
		*problems = append(*problems, fmt.Sprintf("Open_vSwitch refers to missing Datapath row %s", du))
		return nil
	}
	var out map[uint16]map[string]uint32
	for _, zone := range slices.Sorted(maps.Keys(dp.CTZones)) {
		zu := dp.CTZones[zone]
		z := r.CTZones[zu]
		if z == nil {
			*problems = append(*problems, fmt.Sprintf("datapath system: zone %d refers to missing CT_Zone row %s", zone, zu))
			continue
		}
		if z.TimeoutPolicy == nil {
			continue
		}
		tp := r.CTTimeouts[*z.TimeoutPolicy]
		if tp == nil {
			*problems = append(*problems, fmt.Sprintf("datapath system: zone %d refers to missing CT_Timeout_Policy row %s", zone, *z.TimeoutPolicy))
			continue
		}
		if zone < 0 || zone > 0xffff {
			*problems = append(*problems, fmt.Sprintf("datapath system: zone %d is not 0-65535", zone))
			continue
		}
		t := make(map[string]uint32, len(tp.Timeouts))
		for k, v := range tp.Timeouts {
			if v < 0 || v > 0xffffffff {
				*problems = append(*problems, fmt.Sprintf("datapath system: zone %d: timeout %s=%d is out of range", zone, k, v))
				continue
			}
			t[k] = uint32(v)
		}
		if out == nil {
			out = map[uint16]map[string]uint32{}
		}
		out[uint16(zone)] = t
	}
	return out
}

// equalCTZones reports whether two zone configurations are the same.
func equalCTZones(a, b map[uint16]map[string]uint32) bool {
	return maps.EqualFunc(a, b, func(x, y map[string]uint32) bool { return maps.Equal(x, y) })
}
