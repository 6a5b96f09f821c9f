package conntrack

import (
	"errors"
	"fmt"
	"net/netip"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// Match selects connections to flush by a partial original and reply
// tuple, as ovs-vswitchd 3.1's dpctl/flush-conntrack and NXT_CT_FLUSH
// take them. A zero field matches anything, with one exception kept from
// ovs-vswitchd: for ICMP and ICMPv6 the id, type and code are always
// compared, zeros included.
type Match struct {
	Proto  uint8 // IP protocol; 0 matches any
	Family uint8 // unix.AF_INET or unix.AF_INET6; 0 before any address is given
	Orig   MatchTuple
	Reply  MatchTuple
}

// MatchTuple is one direction of a Match. An invalid (zero) address and
// a zero port match anything.
type MatchTuple struct {
	Src, Dst         netip.Addr
	SrcPort, DstPort uint16
	ICMPID           uint16
	ICMPType         uint8
	ICMPCode         uint8
}

func isICMP(proto uint8) bool { return proto == unix.IPPROTO_ICMP || proto == unix.IPPROTO_ICMPV6 }

// isZero reports whether t selects nothing by itself (ICMP fields do not
// count, as in ovs-vswitchd).
func (t *MatchTuple) isZero(proto uint8) bool {
	z := !t.Src.IsValid() && !t.Dst.IsValid()
	if !isICMP(proto) {
		z = z && t.SrcPort == 0 && t.DstPort == 0
	}
	return z
}

// isFive reports whether t names one connection: both addresses, and for
// protocols with ports both ports.
func (t *MatchTuple) isFive(proto uint8) bool {
	f := t.Src.IsValid() && t.Dst.IsValid()
	if !isICMP(proto) {
		f = f && t.SrcPort != 0 && t.DstPort != 0
	}
	return f
}

// IsZero reports whether m matches every connection (a plain flush).
func (m *Match) IsZero() bool {
	return m.Proto == 0 && m.Family == 0 && m.Orig.isZero(m.Proto) && m.Reply.isZero(m.Proto)
}

// ParseTuple parses one tuple argument of dpctl/flush-conntrack or
// ovs-ofctl ct-flush ("ct_nw_src=10.1.1.1,ct_nw_dst=10.1.1.2,
// ct_nw_proto=17,ct_tp_src=1,ct_tp_dst=2"; also ct_ipv6_src/dst, icmp_id,
// icmp_type, icmp_code) into m.Orig, or m.Reply if reply is set. The
// protocol and address family are m's, shared by both tuples. Errors
// carry ovs-vswitchd's texts. It never panics.
func ParseTuple(s string, m *Match, reply bool) error {
	t := &m.Orig
	if reply {
		t = &m.Reply
	}
	for _, kv := range splitKV(s) {
		key, value := kv[0], kv[1]
		if value == "" {
			return fmt.Errorf("field %s missing value", key)
		}
		failed := fmt.Errorf("failed to parse field %s", key)
		switch key {
		case "ct_nw_src", "ct_nw_dst", "ct_ipv6_src", "ct_ipv6_dst":
			v6 := strings.HasPrefix(key, "ct_ipv6")
			fam := uint8(unix.AF_INET)
			if v6 {
				fam = unix.AF_INET6
			}
			if m.Family != 0 && m.Family != fam {
				return fmt.Errorf("the L3 protocol does not match %s", value)
			}
			addr := &t.Dst
			if strings.HasSuffix(key, "_src") {
				addr = &t.Src
			}
			if addr.IsValid() {
				return fmt.Errorf("%s is set multiple times", key)
			}
			a, err := netip.ParseAddr(value)
			if err != nil || a.Is4() == v6 || a.Zone() != "" {
				return failed
			}
			m.Family = fam
			if a == netip.IPv6Unspecified() {
				// ovs-vswitchd keeps addresses as IPv6 (IPv4 mapped,
				// so 0.0.0.0 is an address) and "::" as unset: any.
				continue
			}
			*addr = a
		case "ct_nw_proto":
			n, err := parseUint(value, 8)
			if err != nil {
				return failed
			}
			m.Proto = uint8(n)
		case "ct_tp_src", "ct_tp_dst":
			n, err := parseUint(value, 16)
			if err != nil {
				return failed
			}
			if key == "ct_tp_src" {
				t.SrcPort = uint16(n)
			} else {
				t.DstPort = uint16(n)
			}
		case "icmp_type", "icmp_code", "icmp_id":
			if !isICMP(m.Proto) {
				return errors.New("invalid L4 fields")
			}
			bits := 8
			if key == "icmp_id" {
				bits = 16
			}
			n, err := parseUint(value, bits)
			if err != nil {
				return failed
			}
			switch key {
			case "icmp_type":
				t.ICMPType = uint8(n)
			case "icmp_code":
				t.ICMPCode = uint8(n)
			default:
				t.ICMPID = uint16(n)
			}
		default:
			return fmt.Errorf("invalid conntrack tuple field: %s", key)
		}
	}
	if m.Proto == 0 && (t.SrcPort != 0 || t.DstPort != 0) {
		return errors.New("port is set without protocol")
	}
	return nil
}

// parseUint parses a decimal, 0x hex or 0 octal number of at most bits
// bits, as OVS's str_to_u8/str_to_u16 (strtol, base 0) take them; Go's
// further 0b and 0o prefixes and digit underscores are not numbers there.
func parseUint(s string, bits int) (uint64, error) {
	l := strings.ToLower(s)
	if strings.Contains(s, "_") || strings.HasPrefix(l, "0b") || strings.HasPrefix(l, "0o") {
		return 0, strconv.ErrSyntax
	}
	return strconv.ParseUint(s, 0, bits)
}

// splitKV splits "k1=v1,k2=v2" (also "k1:v1", and spaces or tabs as
// separators) into key-value pairs as ofputil_parse_key_value does; a
// key without a value gets "".
func splitKV(s string) [][2]string {
	var out [][2]string
	for {
		s = strings.TrimLeft(s, ", \t\r\n")
		if s == "" {
			return out
		}
		end := strings.IndexAny(s, ", \t\r\n")
		if end < 0 {
			end = len(s)
		}
		item := s[:end]
		s = s[end:]
		k, v := item, ""
		if i := strings.IndexAny(item, ":="); i >= 0 {
			k, v = item[:i], item[i+1:]
		}
		out = append(out, [2]string{k, v})
	}
}

// Matches reports whether e is one of the connections m selects.
func (m *Match) Matches(e *Entry) bool {
	if m.Family != 0 && m.Family != e.Family() {
		return false
	}
	if m.Proto != 0 && m.Proto != e.Orig.Proto {
		return false
	}
	return m.Orig.matches(&e.Orig, m.Proto) && m.Reply.matches(&e.Reply, m.Proto)
}

func (t *MatchTuple) matches(e *Tuple, proto uint8) bool {
	if t.Src.IsValid() && t.Src != e.Src || t.Dst.IsValid() && t.Dst != e.Dst {
		return false
	}
	if isICMP(proto) {
		return t.ICMPID == e.ICMPID && t.ICMPType == e.ICMPType && t.ICMPCode == e.ICMPCode
	}
	return (t.SrcPort == 0 || t.SrcPort == e.SrcPort) && (t.DstPort == 0 || t.DstPort == e.DstPort)
}

// Family is the entry's address family, unix.AF_INET or unix.AF_INET6.
func (e *Entry) Family() uint8 {
	if e.Orig.Src.Is6() {
		return unix.AF_INET6
	}
	return unix.AF_INET
}

// one is the connection to delete by its tuple when m's original tuple
// is a full five-tuple and its reply tuple is empty; nil when the table
// has to be searched.
func (m *Match) one(zone *uint16) *Entry {
	if !m.Orig.isFive(m.Proto) || !m.Reply.isZero(m.Proto) {
		return nil
	}
	e := &Entry{Orig: m.Orig.tuple(m.Proto)}
	if zone != nil {
		e.Zone = *zone
	}
	return e
}

// tuple is the connection tuple t names when it is a five-tuple.
func (t *MatchTuple) tuple(proto uint8) Tuple {
	return Tuple{Src: t.Src, Dst: t.Dst, Proto: proto, SrcPort: t.SrcPort, DstPort: t.DstPort,
		ICMPID: t.ICMPID, ICMPType: t.ICMPType, ICMPCode: t.ICMPCode}
}

// FlushMatch deletes the connections m selects, as ovs-vswitchd 3.1's
// ct_dpif_flush does:
//   - m zero: every connection, or those of *zone if zone is not nil;
//   - m's original tuple a full five-tuple and its reply tuple empty: the
//     one connection with that tuple in either direction (the kernel
//     looks a tuple up in both), in *zone or zone 0; an error wrapping
//     unix.ENOENT if there is none;
//   - otherwise: every connection m matches, of *zone or of every zone.
//
// It needs CAP_NET_ADMIN.
func FlushMatch(zone *uint16, m *Match) error {
	if m == nil || m.IsZero() {
		if zone == nil {
			return Flush()
		}
		return flushZone(*zone)
	}
	if e := m.one(zone); e != nil {
		return Delete(e)
	}
	all, err := Dump()
	if err != nil {
		return err
	}
	for i := range all {
		e := &all[i]
		if zone != nil && *zone != e.Zone || !m.Matches(e) {
			continue
		}
		// A connection that ended meanwhile is flushed already.
		if err := Delete(e); err != nil && !errors.Is(err, unix.ENOENT) {
			return err
		}
	}
	return nil
}

// flushZone deletes the connections of one zone. The kernel's ctnetlink
// flush takes no zone, so they are dumped and deleted one by one.
func flushZone(zone uint16) error {
	all, err := Dump()
	if err != nil {
		return err
	}
	for i := range all {
		if all[i].Zone != zone {
			continue
		}
		if err := Delete(&all[i]); err != nil && !errors.Is(err, unix.ENOENT) {
			return err
		}
	}
	return nil
}

// String formats m as ovs-vswitchd logs it ('orig,ct_nw_proto=P' 'reply').
func (m *Match) String() string {
	var sb strings.Builder
	sb.WriteByte('\'')
	m.Orig.format(&sb, m.Proto, m.Family)
	fmt.Fprintf(&sb, ",ct_nw_proto=%d' '", m.Proto)
	m.Reply.format(&sb, m.Proto, m.Family)
	sb.WriteByte('\'')
	return sb.String()
}

func (t *MatchTuple) format(sb *strings.Builder, proto, family uint8) {
	zero, src, dst := "0.0.0.0", "ct_nw_src=", ",ct_nw_dst="
	if family == unix.AF_INET6 {
		zero, src, dst = "::", "ct_ipv6_src=", ",ct_ipv6_dst="
	}
	addr := func(a netip.Addr) string {
		if !a.IsValid() {
			return zero
		}
		return a.String()
	}
	sb.WriteString(src + addr(t.Src) + dst + addr(t.Dst))
	if isICMP(proto) {
		fmt.Fprintf(sb, ",icmp_id=%d,icmp_type=%d,icmp_code=%d", t.ICMPID, t.ICMPType, t.ICMPCode)
	} else {
		fmt.Fprintf(sb, ",ct_tp_src=%d,ct_tp_dst=%d", t.SrcPort, t.DstPort)
	}
}
