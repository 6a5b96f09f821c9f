package ovsdb

import (
	"fmt"
	"strconv"
	"time"
)

// McastConfig is a bridge's multicast snooping (mcast_snooping_enable),
// read as ovs-vswitchd's bridge_configure_mcast_snooping reads it: Bridge
// other_config mcast-snooping-aging-time and mcast-snooping-table-size
// (zero: the defaults, 300 s and 2048; the switch clamps them to 15-3600 s
// and 10-1000000 as OVS does), mcast-snooping-disable-flood-unregistered,
// and each Port's other_config mcast-snooping-flood and
// mcast-snooping-flood-reports. The reconciler applies it with the
// bridge's other runtime settings, without rebuilding the bridge.
type McastConfig struct {
	Aging                    time.Duration
	TableSize                int
	DisableFloodUnregistered bool
	// Flood and FloodReports are the names of the Ports marked so.
	Flood, FloodReports []string
}

// parseMcast reads a bridge's snooping settings into bc.Runtime.Mcast.
// Keys set while snooping is off are ignored, as OVS ignores them.
func parseMcast(r *Rows, br *Bridge, bc *BridgeConfig, problems *[]string) {
	if !br.McastSnoopingEnable {
		return
	}
	where := "bridge " + br.Name
	mc := &McastConfig{}
	if s := mcastInt(br.OtherConfig, "mcast-snooping-aging-time", where, problems); s > 0 {
		mc.Aging = time.Duration(s) * time.Second
	}
	mc.TableSize = mcastInt(br.OtherConfig, "mcast-snooping-table-size", where, problems)
	mc.DisableFloodUnregistered = mcastBool(br.OtherConfig, "mcast-snooping-disable-flood-unregistered", where, problems)
	for _, pu := range br.Ports {
		p := r.Ports[pu]
		if p == nil {
			continue
		}
		if mcastBool(p.OtherConfig, "mcast-snooping-flood", "port "+p.Name, problems) {
			mc.Flood = append(mc.Flood, p.Name)
		}
		if mcastBool(p.OtherConfig, "mcast-snooping-flood-reports", "port "+p.Name, problems) {
			mc.FloodReports = append(mc.FloodReports, p.Name)
		}
	}
	bc.Runtime.Mcast = mc
}

// mcastInt reads a positive number; anything else is OVS's zero (the
// default), with a problem said.
func mcastInt(oc map[string]string, key, where string, problems *[]string) int {
	v, ok := oc[key]
	if !ok {
		return 0
	}
	n, err := strconv.Atoi(v)
	if err != nil || n <= 0 {
		*problems = append(*problems, fmt.Sprintf("%s other_config:%s=%q: want a positive number; the default is used", where, key, v))
		return 0
	}
	return n
}

// mcastBool reads "true" or "false"; anything else is false, as OVS's
// smap_get_bool, with a problem said.
func mcastBool(oc map[string]string, key, where string, problems *[]string) bool {
	switch v, ok := oc[key]; {
	case !ok || v == "false":
		return false
	case v == "true":
		return true
	default:
		*problems = append(*problems, fmt.Sprintf("%s other_config:%s=%q: want true or false; false is used", where, key, v))
		return false
	}
}
