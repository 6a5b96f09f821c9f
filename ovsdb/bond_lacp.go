package ovsdb

import (
	"fmt"
	"net"
	"strconv"
	"strings"
)

// LACPConfig is a bond's LACP as Port lacp and other_config ask for it,
// checked as vswitchd/bridge.c's port_configure_lacp and
// iface_configure_lacp read them. Where ovs-vswitchd warns and runs the
// bond without LACP (an unknown lacp value, a bad lacp-system-id),
// govswitchd refuses the bond: a bond that silently drops its LACP is
// not what was asked for.
type LACPConfig struct {
	Active bool // lacp=active (else passive)
	Fast   bool // other_config:lacp-time=fast
	// SysID is other_config:lacp-system-id, zero for the bridge's MAC.
	SysID [6]byte
	// SysPriority is other_config:lacp-system-priority, 0 for the
	// default (65534 for a bond).
	SysPriority uint16
	FallbackAB  bool // other_config:lacp-fallback-ab
	// Members are the members' Interface other_config settings, by name.
	Members map[string]LACPMember
}

// LACPMember is an Interface's lacp-port-id, lacp-port-priority and
// lacp-aggregation-key; 0 is the default (the OpenFlow port number,
// 65535, the key member's port id).
type LACPMember struct {
	PortID, PortPriority, Key uint16
}

// parseLACP reads the Port's LACP settings; nil for lacp off or unset.
func parseLACP(p *Port) (*LACPConfig, string) {
	oc := p.OtherConfig
	mode := ""
	if p.LACP != nil {
		mode = *p.LACP
	}
	var c LACPConfig
	switch mode {
	case "", "off":
		return nil, ""
	case "active":
		c.Active = true
	case "passive":
	default:
		return nil, fmt.Sprintf("port %s: unknown LACP mode %s", p.Name, mode)
	}
	if v, ok := oc["lacp-system-id"]; ok {
		hw, err := net.ParseMAC(v)
		if err != nil || len(hw) != 6 {
			return nil, fmt.Sprintf("port %s: LACP system ID (%s) must be an Ethernet address.", p.Name, v)
		}
		copy(c.SysID[:], hw)
		if c.SysID == ([6]byte{}) {
			return nil, fmt.Sprintf("port %s: Invalid zero LACP system ID.", p.Name)
		}
	}
	// As smap_get_int: a value out of range or not a number is the
	// default.
	if n, err := strconv.Atoi(oc["lacp-system-priority"]); err == nil && n > 0 && n <= 0xffff {
		c.SysPriority = uint16(n)
	}
	c.Fast = strings.EqualFold(oc["lacp-time"], "fast")
	switch v := oc["lacp-fallback-ab"]; v {
	case "", "false":
	case "true":
		c.FallbackAB = true
	default:
		return nil, fmt.Sprintf("port %s: other_config:lacp-fallback-ab=%q: want true or false", p.Name, v)
	}
	return &c, ""
}

// lacpMembers reads each member Interface's LACP settings.
func lacpMembers(p *Port, ifaces map[string]*Interface) (map[string]LACPMember, string) {
	m := map[string]LACPMember{}
	get := func(oc map[string]string, k string, lo, hi, def int) uint16 {
		n, err := strconv.Atoi(oc[k])
		if err != nil || n < lo || n > hi {
			return uint16(def)
		}
		return uint16(n)
	}
	for _, iu := range p.Interfaces {
		in := ifaces[iu]
		if in == nil {
			continue
		}
		oc := in.OtherConfig
		m[in.Name] = LACPMember{PortID: get(oc, "lacp-port-id", 1, 0xffff, 0),
			PortPriority: get(oc, "lacp-port-priority", 1, 0xffff, 0), Key: get(oc, "lacp-aggregation-key", 0, 0xffff, 0)}
	}
	return m, ""
}

// lacpOnePort is the bundle of one that LACP on a Port of one Interface
// asks for (nil for lacp off), or the error that refuses its LACP:
// ovs-vswitchd runs LACP on such a port without a bond (bridge.c
// configures LACP whatever the number of interfaces; ofproto-dpif makes a
// bond only of two or more), and the bond columns mean nothing there.
func lacpOnePort(p *Port, ifaces map[string]*Interface) (*BondConfig, string) {
	lacp, msg := parseLACP(p)
	if lacp == nil || msg != "" {
		return nil, msg
	}
	b := &BondConfig{PortUUID: p.UUID, Name: p.Name, Mode: "active-backup", Single: true, LACP: lacp}
	for _, iu := range p.Interfaces {
		if in := ifaces[iu]; in != nil {
			b.Members = append(b.Members, in.Name)
		}
	}
	lacp.Members, msg = lacpMembers(p, ifaces)
	return b, msg
}
