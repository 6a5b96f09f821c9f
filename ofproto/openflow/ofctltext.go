package openflow

import (
	"encoding/binary"
	"fmt"
	"net/netip"
	"strconv"
	"strings"

	"github.com/govswitch/govswitch/flow"
)

// The text of matches and flows as ovs-vswitchd 3.1 and ovs-ofctl print
// them (bridge/dump-flows, ofproto/trace's Flow and Megaflow lines):
// "priority=10,tcp,in_port=1,dl_src=..,nw_src=10.0.0.0/24,tp_dst=80".
// In a Key given here InPort is an OpenFlow port number.

// MatchText says how AppendMatchText prints.
type MatchText struct {
	// Priority, when not DefaultPriority, prints first as priority=N.
	Priority int
	// Megaflow prints the "eth" packet type of a match with a recirc_id,
	// after the metadata and conntrack fields, as OVS's match_format
	// does for a datapath flow's match and a packet's flow
	// (ofproto/trace's Megaflow, Flow and Final flow lines).
	Megaflow bool
	// PortName names an OpenFlow port; nil prints numbers (and LOCAL,
	// ...).
	PortName func(uint32) string
}

// DefaultPriority is OpenFlow's default flow priority, which ovs-ofctl
// omits when it prints a match.
const DefaultPriority = 0x8000

// AppendMatchText appends the ovs-ofctl text of the match k/m to b: the
// fields m selects, in OVS's order, with the protocol shorthands (ip, tcp,
// arp, ...) standing for the ethertype and IP protocol they imply. A match
// on nothing appends nothing.
func AppendMatchText(b []byte, k *flow.Key, m *flow.Mask, o MatchText) []byte {
	t := textWriter{b: b}
	if o.Priority != DefaultPriority {
		t.field("priority")
		t.b = strconv.AppendInt(t.b, int64(o.Priority), 10)
	}
	t.hex32("pkt_mark", k.Mark, m.Mark)
	if m.RecircID != 0 {
		t.hex32("recirc_id", k.RecircID, m.RecircID)
	}
	t.hex32("dp_hash", k.DPHash, m.DPHash)
	if m.Priority != 0 {
		t.field("skb_priority")
		t.b = append(t.b, hexC(uint64(k.Priority))...)
	}
	if m.CtState != 0 {
		t.field("ct_state")
		t.b = append(t.b, ctStateText(k.CtState, m.CtState)...)
	}
	if m.CtZone != 0 {
		t.u16masked("ct_zone", k.CtZone, m.CtZone, true)
	}
	t.hex32("ct_mark", k.CtMark, m.CtMark)
	if m.CtLabels != ([16]byte{}) {
		t.field("ct_label")
		t.b = append(t.b, labelHex(&k.CtLabels)...)
		if !allFF(m.CtLabels[:]) {
			t.b = append(t.b, '/')
			t.b = append(t.b, labelHex(&m.CtLabels)...)
		}
	}
	t.ctTuple(k, m) // field_ct.go
	if m.RecircID != 0 && o.Megaflow {
		t.word("eth")
	}
	skipType, skipProto := false, false
	if m.EthType != 0 {
		skipType = true
		proto := m.NwProto != 0
		switch k.EthType {
		case flow.EthTypeIPv4, flow.EthTypeIPv6:
			v6 := k.EthType == flow.EthTypeIPv6
			name := map[bool]string{false: "ip", true: "ipv6"}[v6]
			if proto {
				skipProto = true
				switch {
				case k.NwProto == flow.IPProtoICMP && !v6:
					name = "icmp"
				case k.NwProto == flow.IPProtoICMPv6 && v6:
					name = "icmp6"
				case k.NwProto == flow.IPProtoTCP:
					name = "tcp"
				case k.NwProto == flow.IPProtoUDP:
					name = "udp"
				case k.NwProto == flow.IPProtoSCTP:
					name = "sctp"
				default:
					skipProto = false
				}
				if v6 && skipProto && name != "icmp6" {
					name += "6"
				}
			}
			t.word(name)
		case flow.EthTypeARP:
			t.word("arp")
		case flow.EthTypeRARP:
			t.word("rarp")
		case flow.EthTypeMPLS:
			t.word("mpls")
		case flow.EthTypeMPLSM:
			t.word("mplsm")
		default:
			skipType = false
		}
	}
	for i := range k.Regs {
		t.hex32("reg"+strconv.Itoa(i), k.Regs[i], m.Regs[i])
	}
	if m.Tunnel.ID != 0 {
		t.hex64("tun_id", k.Tunnel.ID, m.Tunnel.ID)
	}
	t.ipv4("tun_src", &k.Tunnel.IPv4Src, &m.Tunnel.IPv4Src)
	t.ipv4("tun_dst", &k.Tunnel.IPv4Dst, &m.Tunnel.IPv4Dst)
	// As OVS's format_flow_tunnel: the policy ID in decimal when exact,
	// 0x-hex value/mask otherwise; the flags' value only, in %#x.
	if gm := m.Tunnel.GbpID; gm != 0 {
		t.field("tun_gbp_id")
		if gm == 0xffff {
			t.b = strconv.AppendUint(t.b, uint64(k.Tunnel.GbpID), 10)
		} else {
			t.b = append(t.b, "0x"...)
			t.b = strconv.AppendUint(t.b, uint64(k.Tunnel.GbpID&gm), 16)
			t.b = append(t.b, "/0x"...)
			t.b = strconv.AppendUint(t.b, uint64(gm), 16)
		}
	}
	if m.Tunnel.GbpFlags != 0 {
		t.field("tun_gbp_flags")
		t.b = append(t.b, hexC(uint64(k.Tunnel.GbpFlags&m.Tunnel.GbpFlags))...)
	}
	t.hex64("metadata", k.OFMetadata, m.OFMetadata)
	if m.InPort != 0 {
		t.field("in_port")
		if o.PortName != nil {
			t.b = append(t.b, o.PortName(k.InPort)...)
		} else {
			t.b = append(t.b, portName(k.InPort)...)
		}
	}
	for i := range k.VLANs {
		tci, tm := k.VLANs[i].TCI, m.VLANs[i].TCI
		if tm == 0 {
			break
		}
		suffix := ""
		if i > 0 {
			suffix = strconv.Itoa(i)
		}
		vid, pcp := tm&flow.VLANVIDMask, tm&flow.VLANPCPMask
		switch {
		case tm&flow.VLANPresent != 0 && tci&flow.VLANPresent != 0 &&
			(vid == 0 || vid == flow.VLANVIDMask) && (pcp == 0 || pcp == flow.VLANPCPMask) && (vid|pcp) != 0:
			if vid != 0 {
				t.field("dl_vlan" + suffix)
				t.b = strconv.AppendUint(t.b, uint64(tci&flow.VLANVIDMask), 10)
			}
			if pcp != 0 {
				t.field("dl_vlan_pcp" + suffix)
				t.b = strconv.AppendUint(t.b, uint64(tci>>13), 10)
			}
		default:
			t.field("vlan_tci" + suffix)
			t.b = fmt.Appendf(t.b, "0x%04x", tci)
			if tm != 0xffff {
				t.b = fmt.Appendf(t.b, "/0x%04x", tm)
			}
		}
	}
	t.mac("dl_src", &k.EthSrc, &m.EthSrc)
	t.mac("dl_dst", &k.EthDst, &m.EthDst)
	if !skipType && m.EthType != 0 {
		t.field("dl_type")
		t.b = fmt.Appendf(t.b, "0x%04x", k.EthType)
	}
	arp := k.EthType == flow.EthTypeARP || k.EthType == flow.EthTypeRARP
	switch {
	case k.EthType == flow.EthTypeIPv6:
		t.ipv6("ipv6_src", &k.IPv6Src, &m.IPv6Src)
		t.ipv6("ipv6_dst", &k.IPv6Dst, &m.IPv6Dst)
		if m.IPv6Label != 0 {
			t.field("ipv6_label")
			t.b = fmt.Appendf(t.b, "0x%05x", k.IPv6Label)
			if m.IPv6Label != 0xfffff {
				t.b = fmt.Appendf(t.b, "/0x%05x", m.IPv6Label)
			}
		}
	case arp:
		t.ipv4("arp_spa", &k.IPv4Src, &m.IPv4Src)
		t.ipv4("arp_tpa", &k.IPv4Dst, &m.IPv4Dst)
	default:
		t.ipv4("nw_src", &k.IPv4Src, &m.IPv4Src)
		t.ipv4("nw_dst", &k.IPv4Dst, &m.IPv4Dst)
	}
	if !skipProto && m.NwProto != 0 {
		if arp {
			t.field("arp_op")
		} else {
			t.field("nw_proto")
		}
		t.b = strconv.AppendUint(t.b, uint64(k.NwProto), 10)
	}
	if arp {
		t.mac("arp_sha", &k.ArpSHA, &m.ArpSHA)
		t.mac("arp_tha", &k.ArpTHA, &m.ArpTHA)
	}
	if m.NwTos&0xfc != 0 {
		t.field("nw_tos")
		t.b = strconv.AppendUint(t.b, uint64(k.NwTos&0xfc), 10)
	}
	if m.NwTos&3 != 0 {
		t.field("nw_ecn")
		t.b = strconv.AppendUint(t.b, uint64(k.NwTos&3), 10)
	}
	if m.NwTTL != 0 {
		t.field("nw_ttl")
		t.b = strconv.AppendUint(t.b, uint64(k.NwTTL), 10)
	}
	if k.EthType == flow.EthTypeMPLS || k.EthType == flow.EthTypeMPLSM {
		lse, lm := k.MPLSLSE, m.MPLSLSE
		if lm&0xfffff000 != 0 {
			t.field("mpls_label")
			t.b = strconv.AppendUint(t.b, uint64(lse>>12), 10)
		}
		if lm&0xe00 != 0 {
			t.field("mpls_tc")
			t.b = strconv.AppendUint(t.b, uint64(lse>>9&7), 10)
		}
		if lm&0xff != 0 {
			t.field("mpls_ttl")
			t.b = strconv.AppendUint(t.b, uint64(lse&0xff), 10)
		}
		if lm&0x100 != 0 {
			t.field("mpls_bos")
			t.b = strconv.AppendUint(t.b, uint64(lse>>8&1), 10)
		}
	}
	switch m.NwFrag & (flow.FragAny | flow.FragLater) {
	case flow.FragAny | flow.FragLater:
		t.field("nw_frag")
		switch {
		case k.NwFrag&flow.FragLater != 0:
			t.b = append(t.b, "later"...)
		case k.NwFrag&flow.FragAny != 0:
			t.b = append(t.b, "first"...)
		default:
			t.b = append(t.b, "no"...)
		}
	case flow.FragAny:
		t.field("nw_frag")
		t.b = append(t.b, map[bool]string{true: "yes", false: "no"}[k.NwFrag&flow.FragAny != 0]...)
	case flow.FragLater:
		t.field("nw_frag")
		t.b = append(t.b, map[bool]string{true: "later", false: "not_later"}[k.NwFrag&flow.FragLater != 0]...)
	}
	switch {
	case k.EthType == flow.EthTypeIPv4 && k.NwProto == flow.IPProtoICMP:
		t.u16masked("icmp_type", k.TpSrc, m.TpSrc, false)
		t.u16masked("icmp_code", k.TpDst, m.TpDst, false)
	case k.EthType == flow.EthTypeIPv6 && k.NwProto == flow.IPProtoICMPv6:
		t.u16masked("icmp_type", k.TpSrc, m.TpSrc, false)
		t.u16masked("icmp_code", k.TpDst, m.TpDst, false)
		t.ipv6("nd_target", &k.NDTarget, &m.NDTarget)
		t.mac("nd_sll", &k.NDSLL, &m.NDSLL)
		t.mac("nd_tll", &k.NDTLL, &m.NDTLL)
		// Neither is maskable: ovs-ofctl prints both in decimal.
		if m.NDReserved != 0 {
			t.field("nd_reserved")
			t.b = strconv.AppendUint(t.b, uint64(k.NDReserved), 10)
		}
		if m.NDOptionsType != 0 {
			t.field("nd_options_type")
			t.b = strconv.AppendUint(t.b, uint64(k.NDOptionsType), 10)
		}
	default:
		t.u16masked("tp_src", k.TpSrc, m.TpSrc, false)
		t.u16masked("tp_dst", k.TpDst, m.TpDst, false)
	}
	if (k.EthType == flow.EthTypeIPv4 || k.EthType == flow.EthTypeIPv6) && k.NwProto == flow.IPProtoTCP && m.TCPFlags&0x0fff != 0 {
		t.field("tcp_flags")
		if m.TCPFlags&0x0fff == 0x0fff {
			t.b = append(t.b, tcpFlagsText(k.TCPFlags)...)
		} else {
			t.b = fmt.Appendf(t.b, "%#x/%#x", k.TCPFlags&m.TCPFlags, m.TCPFlags&0x0fff)
		}
	}
	return t.b
}

// FlowMask returns the mask with which AppendMatchText prints an exact
// flow as ovs-vswitchd's flow_format does (ofproto/trace's Flow line):
// in_port, the VLAN TCI, the Ethernet addresses and type, every field of
// the L3 and L4 headers k has, and the metadata fields that are not zero.
func FlowMask(k *flow.Key) flow.Mask {
	var m flow.Mask
	m.InPort = ^uint32(0)
	m.VLANs[0].TCI = 0xffff
	if k.VLANs[1].TCI&flow.VLANPresent != 0 {
		m.VLANs[1].TCI = 0xffff
	}
	m.EthSrc = [6]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}
	m.EthDst = m.EthSrc
	m.EthType = 0xffff
	nz32 := func(v uint32) uint32 {
		if v != 0 {
			return ^uint32(0)
		}
		return 0
	}
	m.Mark, m.RecircID, m.DPHash, m.Priority = nz32(k.Mark), nz32(k.RecircID), nz32(k.DPHash), nz32(k.Priority)
	m.CtState, m.CtMark = nz32(k.CtState)&0xff, nz32(k.CtMark)
	if k.CtZone != 0 {
		m.CtZone = 0xffff
	}
	if k.CtLabels != ([16]byte{}) {
		for i := range m.CtLabels {
			m.CtLabels[i] = 0xff
		}
	}
	flowCtTupleMask(k, &m)
	for i := range k.Regs {
		m.Regs[i] = nz32(k.Regs[i])
	}
	if k.OFMetadata != 0 {
		m.OFMetadata = ^uint64(0)
	}
	if k.Tunnel.ID != 0 {
		m.Tunnel.ID = ^uint64(0)
	}
	if k.Tunnel.GbpID != 0 {
		m.Tunnel.GbpID = 0xffff
	}
	if k.Tunnel.GbpFlags != 0 {
		m.Tunnel.GbpFlags = 0xff
	}
	if k.Tunnel.IPv4Src != ([4]byte{}) {
		m.Tunnel.IPv4Src = [4]byte{0xff, 0xff, 0xff, 0xff}
	}
	if k.Tunnel.IPv4Dst != ([4]byte{}) {
		m.Tunnel.IPv4Dst = [4]byte{0xff, 0xff, 0xff, 0xff}
	}
	ones4 := [4]byte{0xff, 0xff, 0xff, 0xff}
	var ones16 [16]byte
	for i := range ones16 {
		ones16[i] = 0xff
	}
	ip := false
	switch k.EthType {
	case flow.EthTypeIPv4:
		ip = true
		m.IPv4Src, m.IPv4Dst = ones4, ones4
	case flow.EthTypeIPv6:
		ip = true
		m.IPv6Src, m.IPv6Dst, m.IPv6Label = ones16, ones16, 0xfffff
	case flow.EthTypeARP, flow.EthTypeRARP:
		m.IPv4Src, m.IPv4Dst, m.NwProto = ones4, ones4, 0xff
		m.ArpSHA, m.ArpTHA = m.EthSrc, m.EthSrc
	case flow.EthTypeMPLS, flow.EthTypeMPLSM:
		m.MPLSLSE = ^uint32(0)
	}
	if ip {
		m.NwProto, m.NwTos, m.NwTTL, m.NwFrag = 0xff, 0xff, 0xff, flow.FragAny|flow.FragLater
		if k.NwFrag&flow.FragLater == 0 {
			switch k.NwProto {
			case flow.IPProtoTCP:
				m.TpSrc, m.TpDst, m.TCPFlags = 0xffff, 0xffff, 0x0fff
			case flow.IPProtoUDP, flow.IPProtoSCTP, flow.IPProtoICMP, flow.IPProtoICMPv6:
				m.TpSrc, m.TpDst = 0xffff, 0xffff
			}
			if k.NwProto == flow.IPProtoICMPv6 && k.EthType == flow.EthTypeIPv6 && (k.TpSrc == 135 || k.TpSrc == 136) {
				m.NDTarget = ones16
				if k.TpSrc == 135 {
					m.NDSLL = m.EthSrc
				} else {
					m.NDTLL = m.EthSrc
				}
			}
		}
	}
	return m
}

// textWriter appends comma-separated items to b.
type textWriter struct {
	b []byte
	n int // items written
}

func (t *textWriter) sep() {
	if t.n > 0 {
		t.b = append(t.b, ',')
	}
	t.n++
}

func (t *textWriter) word(w string) {
	t.sep()
	t.b = append(t.b, w...)
}

func (t *textWriter) field(name string) {
	t.sep()
	t.b = append(t.b, name...)
	t.b = append(t.b, '=')
}

func hexC(v uint64) string {
	if v == 0 {
		return "0"
	}
	return "0x" + strconv.FormatUint(v, 16)
}

func (t *textWriter) hex32(name string, v, m uint32) {
	if m == 0 {
		return
	}
	t.field(name)
	t.b = append(t.b, hexC(uint64(v&m))...)
	if m != ^uint32(0) {
		t.b = append(t.b, '/')
		t.b = append(t.b, hexC(uint64(m))...)
	}
}

func (t *textWriter) hex64(name string, v, m uint64) {
	if m == 0 {
		return
	}
	t.field(name)
	t.b = append(t.b, hexC(v&m)...)
	if m != ^uint64(0) {
		t.b = append(t.b, '/')
		t.b = append(t.b, hexC(m)...)
	}
}

// u16masked prints a 16-bit field: decimal when exact, else
// 0xVALUE/0xMASK (hex always when hexExact).
func (t *textWriter) u16masked(name string, v, m uint16, hexExact bool) {
	if m == 0 {
		return
	}
	t.field(name)
	switch {
	case m == 0xffff && !hexExact:
		t.b = strconv.AppendUint(t.b, uint64(v), 10)
	case m == 0xffff:
		t.b = append(t.b, hexC(uint64(v))...)
	default:
		t.b = fmt.Appendf(t.b, "0x%x/0x%x", v&m, m)
	}
}

func (t *textWriter) mac(name string, v, m *[6]byte) {
	if *m == ([6]byte{}) {
		return
	}
	t.field(name)
	t.b = append(t.b, macText(v, m)...)
	if !allFF(m[:]) {
		t.b = append(t.b, '/')
		t.b = append(t.b, macText(m, m)...)
	}
}

func macText(v, m *[6]byte) string {
	return fmt.Sprintf("%02x:%02x:%02x:%02x:%02x:%02x", v[0]&m[0], v[1]&m[1], v[2]&m[2], v[3]&m[3], v[4]&m[4], v[5]&m[5])
}

// ipv4 prints an address, with /N for a CIDR mask and /MASK otherwise.
func (t *textWriter) ipv4(name string, v, m *[4]byte) {
	if *m == ([4]byte{}) {
		return
	}
	t.field(name)
	var a [4]byte
	for i := range a {
		a[i] = v[i] & m[i]
	}
	t.b = netip.AddrFrom4(a).AppendTo(t.b)
	mv := binary.BigEndian.Uint32(m[:])
	if mv == ^uint32(0) {
		return
	}
	if n := prefixLen32(mv); n >= 0 {
		t.b = fmt.Appendf(t.b, "/%d", n)
	} else {
		t.b = append(t.b, '/')
		t.b = netip.AddrFrom4(*m).AppendTo(t.b)
	}
}

func (t *textWriter) ipv6(name string, v, m *[16]byte) {
	if *m == ([16]byte{}) {
		return
	}
	t.field(name)
	var a [16]byte
	for i := range a {
		a[i] = v[i] & m[i]
	}
	t.b = netip.AddrFrom16(a).AppendTo(t.b)
	if allFF(m[:]) {
		return
	}
	hi, lo := binary.BigEndian.Uint64(m[:8]), binary.BigEndian.Uint64(m[8:])
	n := -1
	if hi == ^uint64(0) {
		if p := prefixLen64(lo); p >= 0 {
			n = 64 + p
		}
	} else if lo == 0 {
		n = prefixLen64(hi)
	}
	if n >= 0 {
		t.b = fmt.Appendf(t.b, "/%d", n)
	} else {
		t.b = append(t.b, '/')
		t.b = netip.AddrFrom16(*m).AppendTo(t.b)
	}
}

// prefixLen32 returns the prefix length of a CIDR mask, -1 if m is not one.
func prefixLen32(m uint32) int {
	n := 0
	for m&0x80000000 != 0 {
		m <<= 1
		n++
	}
	if m != 0 {
		return -1
	}
	return n
}

func prefixLen64(m uint64) int {
	n := 0
	for m&(1<<63) != 0 {
		m <<= 1
		n++
	}
	if m != 0 {
		return -1
	}
	return n
}

func allFF(b []byte) bool {
	for _, c := range b {
		if c != 0xff {
			return false
		}
	}
	return true
}

// labelHex prints a ct_label of the Key (least significant byte first)
// as the number it is.
func labelHex(l *[16]byte) string {
	var be [16]byte
	for i := range be {
		be[i] = l[15-i]
	}
	s := strings.TrimLeft(fmt.Sprintf("%x", be[:]), "0")
	if s == "" {
		return "0"
	}
	return "0x" + s
}

var ctStateNames = [...]string{"new", "est", "rel", "rpl", "inv", "trk", "snat", "dnat"}

// ctStateText prints ct_state as OVS does: flag names joined by | when
// the mask is exact, else +flag-flag for the masked bits.
func ctStateText(v, m uint32) string {
	var sb strings.Builder
	if m&0xff == 0xff {
		if v&0xff == 0 {
			return "0"
		}
		for i, n := range ctStateNames {
			if v&(1<<i) != 0 {
				if sb.Len() > 0 {
					sb.WriteByte('|')
				}
				sb.WriteString(n)
			}
		}
		return sb.String()
	}
	for i, n := range ctStateNames {
		if m&(1<<i) == 0 {
			continue
		}
		if v&(1<<i) != 0 {
			sb.WriteByte('+')
		} else {
			sb.WriteByte('-')
		}
		sb.WriteString(n)
	}
	return sb.String()
}

var tcpFlagNames = [...]string{"fin", "syn", "rst", "psh", "ack", "urg", "ece", "cwr", "ns"}

// tcpFlagsText prints exact TCP flags as OVS does: names joined by |, or
// 0 for none.
func tcpFlagsText(v uint16) string {
	var parts []string
	for i, n := range tcpFlagNames {
		if v&(1<<i) != 0 {
			parts = append(parts, n)
		}
	}
	if rest := v &^ 0x1ff & 0x0fff; rest != 0 {
		parts = append(parts, fmt.Sprintf("%#x", rest))
	}
	if len(parts) == 0 {
		return "0"
	}
	return strings.Join(parts, "|")
}
