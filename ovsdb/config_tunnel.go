package ovsdb

import (
	"fmt"
	"sort"
	"strings"
)

// isTunnelType reports whether an Interface type is one of the tunnel
// types govswitchd runs (its options are checked when the port is added).
func isTunnelType(t string) bool {
	switch t {
	case "vxlan", "geneve", "gre", "ip6gre", "erspan", "ip6erspan":
		return true
	}
	return false
}

// isProbedTunnelType reports whether t is an Interface type govswitchd
// does not carry but hands to the switch with its options, so that the
// switch refuses it with the kernel's answer (bareudp, gtpu): on a kernel
// without them ovs-vswitchd 3.1 fails the same way.
func isProbedTunnelType(t string) bool { return t == "bareudp" || t == "gtpu" }

// tunnelOptionsText is a tunnel interface's options as sorted key=value
// pairs, the form in which the switch reports a running tunnel port's.
func tunnelOptionsText(opts map[string]string) string {
	keys := make([]string, 0, len(opts))
	for k := range opts {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var sb strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&sb, "%s=%s,", k, opts[k])
	}
	return sb.String()
}
