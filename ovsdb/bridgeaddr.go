package ovsdb

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"net"
	"strconv"
	"strings"
)

// A bridge's Ethernet address and datapath id, picked as ovs-vswitchd
// picks them (vswitchd/bridge.c): other_config:hwaddr when it is a usable
// unicast address; otherwise the lowest globally administered unicast
// address among the bridge's interfaces (a bond counts by the member whose
// name sorts first, mirror output ports and the bridge's own port do not);
// otherwise one made from the Bridge row's UUID. The datapath id is
// other_config:datapath-id when it parses, else the address as a number.

// parseBridgeAddress reads other_config hwaddr and datapath-id into bc,
// with a problem for each value ovs-vswitchd would not use.
func parseBridgeAddress(oc map[string]string, bc *BridgeConfig, problems *[]string) {
	if v, ok := oc["hwaddr"]; ok {
		mac, err := net.ParseMAC(v)
		switch {
		case err != nil || len(mac) != 6:
			*problems = append(*problems, fmt.Sprintf("bridge %s: other_config:hwaddr=%q is not an Ethernet address; ignored", bc.Name, v))
		case mac[0]&1 != 0:
			*problems = append(*problems, fmt.Sprintf("bridge %s: cannot set MAC address to multicast address %s", bc.Name, mac))
		case bytes.Equal(mac, make([]byte, 6)):
			*problems = append(*problems, fmt.Sprintf("bridge %s: cannot set MAC address to zero", bc.Name))
		default:
			bc.HWAddr = mac
		}
	}
	if v, ok := oc["datapath-id"]; ok {
		if id, ok := parseDPID(v); ok {
			bc.DatapathID = id
		} else {
			*problems = append(*problems, fmt.Sprintf("bridge %s: other_config:datapath-id=%q is not 16 hex digits (or 0x and up to 16) other than zero; ignored", bc.Name, v))
		}
	}
}

// parseBridgeRuntime reads other_config forward-bpdu, dp-desc and dp-sn.
func parseBridgeRuntime(oc map[string]string, bc *BridgeConfig, problems *[]string) {
	switch v := oc["forward-bpdu"]; v {
	case "", "false":
	case "true":
		bc.Runtime.ForwardBPDU = true
	default:
		*problems = append(*problems, fmt.Sprintf("bridge %s: other_config:forward-bpdu=%q: want true or false; ignored", bc.Name, v))
	}
	bc.Runtime.DPDesc, bc.Runtime.SerialNum = oc["dp-desc"], oc["dp-sn"]
}

// parseDPID parses a datapath id as ovs-vswitchd's dpid_from_string: 16
// hex digits, or 0x followed by at most 16; zero is refused.
func parseDPID(s string) (uint64, bool) {
	digits := s
	switch {
	case len(s) == 16:
	case len(s) > 2 && len(s) <= 18 && (strings.HasPrefix(s, "0x") || strings.HasPrefix(s, "0X")):
		digits = s[2:]
	default:
		return 0, false
	}
	id, err := strconv.ParseUint(digits, 16, 64)
	return id, err == nil && id != 0
}

// pickBridgeAddress returns the bridge's Ethernet address and datapath id
// given its running ports (their devices' addresses).
func pickBridgeAddress(bc *BridgeConfig, ports []PortState) (net.HardwareAddr, uint64) {
	mac := bc.HWAddr
	if mac == nil {
		mac = lowestPortAddress(bc, ports)
	}
	if mac == nil {
		mac = uuidAddress(bc.UUID)
	}
	id := bc.DatapathID
	if id == 0 {
		for _, b := range mac {
			id = id<<8 | uint64(b)
		}
	}
	return mac, id
}

func lowestPortAddress(bc *BridgeConfig, ports []PortState) net.HardwareAddr {
	byName := map[string]*PortState{}
	for i := range ports {
		byName[ports[i].Name] = &ports[i]
	}
	mirrorOut := map[string]bool{}
	for _, m := range bc.Mirrors {
		if m.OutputPort != "" {
			mirrorOut[m.OutputPort] = true
		}
	}
	// Each port speaks through one interface: a plain port's own, a
	// bond's member first in name order (as the Linux bonding driver
	// takes its first member's address).
	var ifaces []string
	inBond := map[string]bool{}
	for _, b := range bc.Bonds {
		for _, m := range b.Members {
			inBond[m] = true
		}
		if len(b.Members) > 0 && !mirrorOut[b.Members[0]] {
			ifaces = append(ifaces, b.Members[0])
		}
	}
	for _, p := range bc.Ports {
		if !inBond[p.Name] && !mirrorOut[p.Name] {
			ifaces = append(ifaces, p.Name)
		}
	}
	var best net.HardwareAddr
	for _, name := range ifaces {
		ps := byName[name]
		if ps == nil || !ps.Known || ps.OFPort == 65534 || len(ps.MAC) != 6 {
			continue
		}
		if m := ps.MAC; usableBridgeAddress(m) && (best == nil || bytes.Compare(m, best) < 0) {
			best = m
		}
	}
	return best
}

// usableBridgeAddress is OVS's test for a port address the bridge may
// take: unicast (which leaves out IEEE's reserved groups), globally
// administered and not a Nicira random address (00:23:20:80-ff), not
// zero.
func usableBridgeAddress(m net.HardwareAddr) bool {
	if m[0]&1 != 0 || m[0]&2 != 0 {
		return false
	}
	if m[0] == 0x00 && m[1] == 0x23 && m[2] == 0x20 && m[3]&0x80 != 0 {
		return false
	}
	return !bytes.Equal(m, make([]byte, 6))
}

// uuidAddress is the address of a bridge with no other to take: the
// first six bytes of its row's UUID as ovs-vswitchd holds a UUID in
// memory (four native 32-bit words; on the little-endian machines it runs
// on, the first group's bytes reversed, then the third group's), made
// unicast and locally administered.
func uuidAddress(uuid string) net.HardwareAddr {
	mac := make(net.HardwareAddr, 6)
	g := strings.Split(strings.TrimSpace(uuid), "-")
	if len(g) != 5 || len(g[0]) != 8 || len(g[2]) != 4 {
		mac[0] = 2
		return mac
	}
	w0, err0 := strconv.ParseUint(g[0], 16, 32)
	w1, err1 := strconv.ParseUint(g[2], 16, 16)
	if err0 != nil || err1 != nil {
		mac[0] = 2
		return mac
	}
	binary.LittleEndian.PutUint32(mac, uint32(w0))
	binary.LittleEndian.PutUint16(mac[4:], uint16(w1))
	mac[0] = mac[0]&^1 | 2
	return mac
}
