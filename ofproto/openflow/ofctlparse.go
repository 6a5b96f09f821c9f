package openflow

import (
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"strings"

	"github.com/govswitch/govswitch/flow"
)

// ParseFlowText reads an exact flow in ovs-ofctl's syntax, as
// ofproto/trace takes it: "in_port=p1,dl_src=..,dl_dst=..",
// "tcp,in_port=1,nw_src=10.0.0.1,tp_dst=80". Fields not given are zero;
// the shorthands ip, ipv6, icmp, icmp6, tcp, tcp6, udp, udp6, sctp, sctp6,
// arp and rarp set the ethertype (and IP protocol). A field whose
// prerequisites the flow does not have (nw_src without ip) is an error,
// as is a mask: a flow to trace is one packet, not a match. port names an
// OpenFlow port; it may be nil (numbers and LOCAL only). The returned
// Key's InPort is an OpenFlow port number. Errors name the offending
// item; ParseFlowText never panics.
func ParseFlowText(s string, port func(name string) (uint32, bool)) (flow.Key, error) {
	var k flow.Key
	var given []string // fields set, for the prerequisite check
	for _, item := range strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ' ' || r == '\t' }) {
		name, val, hasVal := strings.Cut(item, "=")
		if !hasVal {
			if err := shorthand(&k, item); err != nil {
				return flow.Key{}, err
			}
			continue
		}
		if strings.Contains(val, "/") && name != "nw_frag" {
			return flow.Key{}, fmt.Errorf("%s: a flow to trace takes exact values, not masks", item)
		}
		if err := setFlowField(&k, name, val, port); err != nil {
			return flow.Key{}, fmt.Errorf("%s: %w", item, err)
		}
		given = append(given, name)
	}
	for _, name := range given {
		if err := textPrereq(&k, name); err != nil {
			return flow.Key{}, err
		}
	}
	return k, nil
}

func shorthand(k *flow.Key, w string) error {
	proto := map[string]uint8{"icmp": flow.IPProtoICMP, "tcp": flow.IPProtoTCP, "udp": flow.IPProtoUDP,
		"sctp": flow.IPProtoSCTP, "icmp6": flow.IPProtoICMPv6, "tcp6": flow.IPProtoTCP, "udp6": flow.IPProtoUDP,
		"sctp6": flow.IPProtoSCTP}
	switch w {
	case "ip":
		k.EthType = flow.EthTypeIPv4
	case "ipv6":
		k.EthType = flow.EthTypeIPv6
	case "arp":
		k.EthType = flow.EthTypeARP
	case "rarp":
		k.EthType = flow.EthTypeRARP
	case "icmp", "tcp", "udp", "sctp":
		k.EthType, k.NwProto = flow.EthTypeIPv4, proto[w]
	case "icmp6", "tcp6", "udp6", "sctp6":
		k.EthType, k.NwProto = flow.EthTypeIPv6, proto[w]
	default:
		return fmt.Errorf("%s: unknown field %s", w, w)
	}
	return nil
}

func parseNum(s string, bits int) (uint64, error) {
	v, err := strconv.ParseUint(s, 0, bits)
	if err != nil {
		return 0, fmt.Errorf("%q is not a %d-bit number", s, bits)
	}
	return v, nil
}

func parseIPv4(s string) ([4]byte, error) {
	a, err := netip.ParseAddr(s)
	if err != nil || !a.Is4() {
		return [4]byte{}, fmt.Errorf("%q is not an IPv4 address", s)
	}
	return a.As4(), nil
}

func parseIPv6(s string) ([16]byte, error) {
	a, err := netip.ParseAddr(s)
	if err != nil || !a.Is6() {
		return [16]byte{}, fmt.Errorf("%q is not an IPv6 address", s)
	}
	return a.As16(), nil
}

func parseMACText(s string) ([6]byte, error) {
	hw, err := net.ParseMAC(s)
	if err != nil || len(hw) != 6 {
		return [6]byte{}, fmt.Errorf("%q is not an Ethernet address", s)
	}
	return [6]byte(hw), nil
}

// setFlowField sets one name=value of an exact flow.
func setFlowField(k *flow.Key, name, val string, port func(string) (uint32, bool)) error {
	var err error
	num := func(bits int) uint64 {
		var v uint64
		if err == nil {
			v, err = parseNum(val, bits)
		}
		return v
	}
	switch name {
	case "in_port":
		p, ok := ParsePortText(val, port)
		if !ok {
			return fmt.Errorf("bad value for in_port (%s: invalid or unknown port for in_port)", val)
		}
		k.InPort = p
	case "dl_src", "eth_src":
		k.EthSrc, err = parseMACText(val)
	case "dl_dst", "eth_dst":
		k.EthDst, err = parseMACText(val)
	case "dl_type", "eth_type":
		k.EthType = uint16(num(16))
	case "dl_vlan", "vlan_vid":
		v := num(12)
		k.VLANs[0].TCI = k.VLANs[0].TCI&^flow.VLANVIDMask | uint16(v) | flow.VLANPresent
		k.VLANs[0].TPID = flow.EthTypeVLAN
	case "dl_vlan_pcp", "vlan_pcp":
		v := num(3)
		k.VLANs[0].TCI = k.VLANs[0].TCI&^flow.VLANPCPMask | uint16(v)<<13 | flow.VLANPresent
		k.VLANs[0].TPID = flow.EthTypeVLAN
	case "vlan_tci":
		k.VLANs[0].TCI = uint16(num(16))
		if k.VLANs[0].TCI&flow.VLANPresent != 0 {
			k.VLANs[0].TPID = flow.EthTypeVLAN
		}
	case "nw_src", "ip_src", "arp_spa":
		k.IPv4Src, err = parseIPv4(val)
	case "nw_dst", "ip_dst", "arp_tpa":
		k.IPv4Dst, err = parseIPv4(val)
	case "nw_proto", "ip_proto", "arp_op":
		k.NwProto = uint8(num(8))
	case "nw_tos":
		k.NwTos = k.NwTos&3 | uint8(num(8))&0xfc
	case "ip_dscp":
		k.NwTos = k.NwTos&3 | uint8(num(6))<<2
	case "nw_ecn", "ip_ecn":
		k.NwTos = k.NwTos&0xfc | uint8(num(2))
	case "nw_ttl":
		k.NwTTL = uint8(num(8))
	case "nw_frag", "ip_frag":
		switch val {
		case "no":
			k.NwFrag = 0
		case "first", "yes":
			k.NwFrag = flow.FragAny
		case "later":
			k.NwFrag = flow.FragAny | flow.FragLater
		default:
			return fmt.Errorf("%q: want no, first or later", val)
		}
	case "tp_src", "tcp_src", "udp_src", "sctp_src", "icmp_type", "icmpv6_type":
		k.TpSrc = uint16(num(16))
	case "tp_dst", "tcp_dst", "udp_dst", "sctp_dst", "icmp_code", "icmpv6_code":
		k.TpDst = uint16(num(16))
	case "tcp_flags":
		k.TCPFlags = uint16(num(12))
	case "arp_sha", "nd_sll":
		if name == "nd_sll" {
			k.NDSLL, err = parseMACText(val)
		} else {
			k.ArpSHA, err = parseMACText(val)
		}
	case "arp_tha", "nd_tll":
		if name == "nd_tll" {
			k.NDTLL, err = parseMACText(val)
		} else {
			k.ArpTHA, err = parseMACText(val)
		}
	case "nd_reserved":
		k.NDReserved = uint32(num(32))
	case "nd_options_type":
		k.NDOptionsType = uint8(num(8))
	case "ipv6_src":
		k.IPv6Src, err = parseIPv6(val)
	case "ipv6_dst":
		k.IPv6Dst, err = parseIPv6(val)
	case "ipv6_label":
		k.IPv6Label = uint32(num(20))
	case "nd_target":
		k.NDTarget, err = parseIPv6(val)
	case "pkt_mark":
		k.Mark = uint32(num(32))
	case "skb_priority":
		k.Priority = uint32(num(32))
	case "recirc_id":
		k.RecircID = uint32(num(32))
	case "dp_hash":
		k.DPHash = uint32(num(32))
	case "metadata":
		k.OFMetadata = num(64)
	case "tun_id", "tunnel_id":
		k.Tunnel.ID = num(64)
		k.Tunnel.Flags |= flow.TunnelKey
	case "tun_src":
		k.Tunnel.IPv4Src, err = parseIPv4(val)
	case "tun_dst":
		k.Tunnel.IPv4Dst, err = parseIPv4(val)
	case "tun_gbp_id":
		k.Tunnel.GbpID = uint16(num(16))
	case "tun_gbp_flags":
		k.Tunnel.GbpFlags = uint8(num(8))
	case "ct_zone":
		k.CtZone = uint16(num(16))
	case "ct_mark":
		k.CtMark = uint32(num(32))
	case "ct_state", "ct_nw_src", "ct_nw_dst", "ct_ipv6_src", "ct_ipv6_dst", "ct_nw_proto", "ct_tp_src", "ct_tp_dst":
		return setCtFlowField(k, name, val) // field_ct.go
	default:
		if r, ok := strings.CutPrefix(name, "reg"); ok {
			i, e := strconv.Atoi(r)
			if e == nil && i >= 0 && i < len(k.Regs) && r == strconv.Itoa(i) {
				k.Regs[i] = uint32(num(32))
				return err
			}
		}
		return fmt.Errorf("unknown field %s", name)
	}
	return err
}

// textPrereq checks that the flow has the headers field name belongs to.
func textPrereq(k *flow.Key, name string) error {
	ip4, ip6 := k.EthType == flow.EthTypeIPv4, k.EthType == flow.EthTypeIPv6
	arp := k.EthType == flow.EthTypeARP || k.EthType == flow.EthTypeRARP
	ok := true
	switch name {
	case "nw_src", "ip_src", "nw_dst", "ip_dst":
		ok = ip4
	case "arp_spa", "arp_tpa", "arp_op", "arp_sha", "arp_tha":
		ok = arp
	case "nw_proto", "ip_proto":
		ok = ip4 || ip6 || arp
	case "nw_tos", "ip_dscp", "nw_ecn", "ip_ecn", "nw_ttl", "nw_frag", "ip_frag":
		ok = ip4 || ip6
	case "ipv6_src", "ipv6_dst", "ipv6_label":
		ok = ip6
	case "tp_src", "tp_dst":
		ok = (ip4 || ip6) && (k.NwProto == flow.IPProtoTCP || k.NwProto == flow.IPProtoUDP || k.NwProto == flow.IPProtoSCTP)
	case "tcp_src", "tcp_dst", "tcp_flags":
		ok = (ip4 || ip6) && k.NwProto == flow.IPProtoTCP
	case "udp_src", "udp_dst":
		ok = (ip4 || ip6) && k.NwProto == flow.IPProtoUDP
	case "sctp_src", "sctp_dst":
		ok = (ip4 || ip6) && k.NwProto == flow.IPProtoSCTP
	case "icmp_type", "icmp_code":
		ok = ip4 && k.NwProto == flow.IPProtoICMP || ip6 && k.NwProto == flow.IPProtoICMPv6
	case "icmpv6_type", "icmpv6_code", "nd_target", "nd_sll", "nd_tll", "nd_reserved", "nd_options_type":
		ok = ip6 && k.NwProto == flow.IPProtoICMPv6
	}
	if !ok {
		return fmt.Errorf("%s: prerequisites not met (give the protocol first, such as ip, tcp or arp)", name)
	}
	return nil
}

// ParsePortText reads an OpenFlow port: a number, a reserved name (LOCAL,
// IN_PORT, NORMAL, FLOOD, ALL, CONTROLLER, ANY, TABLE), or a name port
// knows (port may be nil).
func ParsePortText(s string, port func(string) (uint32, bool)) (uint32, bool) {
	if v, err := strconv.ParseUint(s, 10, 32); err == nil {
		if v < 0xff00 || v >= uint64(PortInPort) && v <= 0xffffffff {
			return uint32(v), true
		}
		if v >= 0xfff8 && v <= 0xffff { // OpenFlow 1.0's reserved numbers
			return Port10To32(uint16(v)), true
		}
		return 0, false
	}
	switch strings.ToUpper(s) {
	case "LOCAL":
		return PortLocal, true
	case "IN_PORT":
		return PortInPort, true
	case "NORMAL":
		return PortNormal, true
	case "FLOOD":
		return PortFlood, true
	case "ALL":
		return PortAll, true
	case "CONTROLLER":
		return PortController, true
	case "ANY", "NONE":
		return PortAny, true
	case "TABLE":
		return PortTable, true
	}
	if port != nil {
		return port(s)
	}
	return 0, false
}
