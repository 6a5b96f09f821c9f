package ovsdb

import (
	"fmt"
	"maps"
	"slices"
)

// Settings ovs-vswitchd 3.1 implements on the kernel datapath and
// govswitchd does not: each one set to anything but OVS's default draws a
// WARN (Problems), so that it is not taken for working. Keys that matter
// only to the userspace (DPDK) datapath, which govswitchd does not run
// and refuses as a datapath_type, are not listed; nor are keys that
// another part of this package reads.

// unsupportedKey is one such key: def is ovs-vswitchd's default value
// ("" when any setting is unsupported), what says what it would do.
type unsupportedKey struct {
	def, what string
}

var unsupportedGlobal = map[string]unsupportedKey{
	"bundle-idle-timeout":    {"10", "a configurable OpenFlow bundle idle timeout"},
	"enable-statistics":      {"false", "the Open_vSwitch statistics column"},
	"hw-offload":             {"false", "hardware offload (TC flower)"},
	"tc-policy":              {"none", "TC offload policy"},
	"n-offload-threads":      {"1", "hardware offload threads"},
	"offload-rebalance":      {"false", "offload rebalancing"},
	"max-revalidator":        {"500", "a configurable revalidation period"},
	"min-revalidate-pps":     {"5", "a configurable idle flow rate"},
	"stats-update-interval":  {"5000", "a configurable statistics interval"},
	"ipsec_skb_mark":         {"", "IPsec tunnel marks"},
	"explicit-sampled-drops": {"false", "explicit drop actions in sampled flows"},
	"dpdk-init":              {"false", "DPDK"},
}

var unsupportedBridge = map[string]unsupportedKey{
	"controller-queue-size": {"100", "a configurable controller queue"},
	"in-band-queue":         {"", "in-band control"},
}

var unsupportedPort = map[string]unsupportedKey{}

// warnUnsupportedConfig adds a problem for each unsupported setting in
// the rows, in a stable order.
func warnUnsupportedConfig(r *Rows, problems *[]string) {
	check := func(where string, oc map[string]string, keys map[string]unsupportedKey) {
		for _, k := range slices.Sorted(maps.Keys(oc)) {
			u, ok := keys[k]
			if !ok || u.def != "" && oc[k] == u.def {
				continue
			}
			*problems = append(*problems, fmt.Sprintf("%s other_config:%s=%q is not supported by govswitchd (%s); ignored", where, k, oc[k], u.what))
		}
	}
	if r.Root != nil {
		check("Open_vSwitch", r.Root.OtherConfig, unsupportedGlobal)
	}
	for _, u := range slices.Sorted(maps.Keys(r.Bridges)) {
		if br := r.Bridges[u]; br != nil {
			check("bridge "+br.Name, br.OtherConfig, unsupportedBridge)
		}
	}
	for _, u := range slices.Sorted(maps.Keys(r.Ports)) {
		if p := r.Ports[u]; p != nil {
			check("port "+p.Name, p.OtherConfig, unsupportedPort)
		}
	}
}
