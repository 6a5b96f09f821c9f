package datapath

import (
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"net/netip"
	"strconv"
	"strings"

	"github.com/govswitch/govswitch/flow"
	"github.com/govswitch/govswitch/netlinkio"
	"golang.org/x/sys/unix"
)

// The text form of datapath actions, as ovs-dpctl prints and parses them
// (OVS lib/odp-util.c): "2", "drop", "push_vlan(vid=10,pcp=0),3",
// "userspace(pid=1234,userdata(01020304))", "set(ipv4(src=10.0.0.1))",
// "ct(commit,zone=1)", "recirc(0x1)", "sample(sample=50.0%,actions(1))",
// "clone(2)", "trunc(100)". Flow keys in text are package flow's business.

// FormatActions returns the ovs-dpctl text of the actions in b: "drop"
// for none. A malformed action ends the text with "error(...)" naming the
// problem, since dump output should show what it can.
func FormatActions(b []byte) string {
	if len(b) == 0 {
		return "drop"
	}
	var sb strings.Builder
	formatActions(&sb, b)
	return sb.String()
}

// formatActions writes an action list; an empty one, nested or not, is
// "drop", as OVS 3.1 prints it.
func formatActions(sb *strings.Builder, b []byte) {
	if len(b) == 0 {
		sb.WriteString("drop")
		return
	}
	it := NewActionIter(b)
	first := true
	for it.Next() {
		if !first {
			sb.WriteByte(',')
		}
		first = false
		formatAction(sb, it.Action())
	}
	if err := it.Err(); err != nil {
		if !first {
			sb.WriteByte(',')
		}
		fmt.Fprintf(sb, "error(%v)", err)
	}
}

// hexC formats v as C's "%#x" does: "0" for zero, "0x..." otherwise.
func hexC(v uint64) string {
	if v == 0 {
		return "0"
	}
	return "0x" + strconv.FormatUint(v, 16)
}

func formatAction(sb *strings.Builder, a *Action) {
	switch a.Type {
	case ActionOutput:
		sb.WriteString(strconv.FormatUint(uint64(a.Port), 10))
	case ActionUserspace:
		u := &a.Userspace
		fmt.Fprintf(sb, "userspace(pid=%d", u.PID)
		if reason, ok := ParseSlowPathCookie(u.Userdata); ok {
			sb.WriteString(",slow_path(" + SlowPathReasonString(reason) + ")") // slowpath.go
		} else if formatSampleCookie(sb, u.Userdata) { // samplecookie.go
		} else if u.Userdata != nil {
			fmt.Fprintf(sb, ",userdata(%x)", u.Userdata)
		}
		if u.WithActions {
			sb.WriteString(",actions")
		}
		if u.HasTunnelOutPort {
			fmt.Fprintf(sb, ",tunnel_out_port=%d", u.TunnelOutPort)
		}
		sb.WriteByte(')')
	case ActionSet, ActionSetMasked:
		sb.WriteString("set(")
		formatSetKey(sb, a)
		sb.WriteByte(')')
	case ActionPushVLAN:
		sb.WriteString("push_vlan(")
		if a.VLAN.TPID != flow.EthTypeVLAN {
			fmt.Fprintf(sb, "tpid=0x%04x,", a.VLAN.TPID)
		}
		tci := a.VLAN.TCI
		fmt.Fprintf(sb, "vid=%d,pcp=%d", tci&flow.VLANVIDMask, tci>>13)
		if tci&flow.VLANPresent == 0 {
			sb.WriteString(",cfi=0")
		}
		sb.WriteByte(')')
	case ActionPopVLAN:
		sb.WriteString("pop_vlan")
	case ActionSample:
		fmt.Fprintf(sb, "sample(sample=%.1f%%,actions(", 100*float64(a.Prob)/math.MaxUint32)
		formatActions(sb, a.Actions)
		sb.WriteString("))")
	case ActionRecirc:
		fmt.Fprintf(sb, "recirc(%s)", hexC(uint64(a.ID)))
	case ActionHash:
		switch a.HashAlg {
		case HashAlgL4:
			fmt.Fprintf(sb, "hash(l4(%d))", a.HashBasis)
		case 1:
			fmt.Fprintf(sb, "hash(sym_l4(%d))", a.HashBasis)
		default:
			fmt.Fprintf(sb, "hash(Unknown hash algorithm(%d))", a.HashAlg)
		}
	case ActionPushMPLS, ActionAddMPLS:
		name := "push_mpls("
		if a.Type == ActionAddMPLS {
			name = "add_mpls("
		}
		sb.WriteString(name)
		formatLSE(sb, a.MPLSLSE)
		fmt.Fprintf(sb, ",eth_type=0x%x)", a.EthType)
	case ActionPopMPLS:
		fmt.Fprintf(sb, "pop_mpls(eth_type=0x%x)", a.EthType)
	case ActionCT:
		formatCT(sb, &a.CT)
	case ActionTrunc:
		fmt.Fprintf(sb, "trunc(%d)", a.MaxLen)
	case ActionPushEth:
		fmt.Fprintf(sb, "push_eth(src=%s,dst=%s)", macString(a.EthSrc[:]), macString(a.EthDst[:]))
	case ActionPopEth:
		sb.WriteString("pop_eth")
	case ActionCTClear:
		sb.WriteString("ct_clear")
	case ActionPopNSH:
		sb.WriteString("pop_nsh()")
	case ActionPushNSH:
		sb.WriteString("push_nsh(")
		m := nshFullMask(a.NSH.MDType)
		sb.Write(flow.AppendFormatNSH(nil, &a.NSH, &m))
		if a.NSH.MDType == flow.NSHMDType2 {
			fmt.Fprintf(sb, ",md2=0x%x", a.NSHMD2)
		}
		sb.WriteByte(')')
	case ActionMeter:
		fmt.Fprintf(sb, "meter(%d)", a.ID)
	case ActionClone:
		sb.WriteString("clone(")
		formatActions(sb, a.Actions)
		sb.WriteByte(')')
	case ActionCheckPktLen:
		fmt.Fprintf(sb, "check_pkt_len(size=%d,gt(", a.PktLen)
		formatActions(sb, a.IfGreater)
		sb.WriteString("),le(")
		formatActions(sb, a.IfLessEq)
		sb.WriteString("))")
	case ActionDecTTL:
		sb.WriteString("dec_ttl(le_1(")
		formatActions(sb, a.Actions)
		sb.WriteString("))")
	default:
		formatGeneric(sb, "action", uint16(a.Type), a.Data)
	}
}

// formatGeneric writes an attribute OVS has no syntax for: name, type and
// the payload's bytes.
func formatGeneric(sb *strings.Builder, name string, typ uint16, data []byte) {
	fmt.Fprintf(sb, "%s%d", name, typ)
	for i, c := range data {
		if i == 0 {
			sb.WriteByte('(')
		} else {
			sb.WriteByte(' ')
		}
		fmt.Fprintf(sb, "%02x", c)
	}
	if len(data) > 0 {
		sb.WriteByte(')')
	}
}

func formatLSE(sb *strings.Builder, lse uint32) {
	fmt.Fprintf(sb, "label=%d,tc=%d,ttl=%d,bos=%d", lse>>12, lse>>9&7, lse&0xff, lse>>8&1)
}

func macString(m []byte) string {
	return fmt.Sprintf("%02x:%02x:%02x:%02x:%02x:%02x", m[0], m[1], m[2], m[3], m[4], m[5])
}

// labelString formats 16 label bytes as the number whose least significant
// byte is l[0], as package flow and OVS print labels.
func labelString(l []byte) string {
	var sb strings.Builder
	printed := false
	for i := len(l) - 1; i >= 0; i-- {
		switch {
		case printed:
			fmt.Fprintf(&sb, "%02x", l[i])
		case l[i] != 0:
			fmt.Fprintf(&sb, "0x%x", l[i])
			printed = true
		}
	}
	if !printed {
		return "0"
	}
	return sb.String()
}

func formatCT(sb *strings.Builder, ct *CT) {
	sb.WriteString("ct")
	var parts []string
	if ct.Commit {
		parts = append(parts, "commit")
	}
	if ct.ForceCommit {
		parts = append(parts, "force_commit")
	}
	if ct.Zone != 0 {
		parts = append(parts, fmt.Sprintf("zone=%d", ct.Zone))
	}
	if ct.MarkMask != 0 {
		parts = append(parts, fmt.Sprintf("mark=%s/%s", hexC(uint64(ct.Mark)), hexC(uint64(ct.MarkMask))))
	}
	if ct.LabelsMask != [16]byte{} {
		s := "label=" + labelString(ct.Labels[:])
		if !allOnesBytes(ct.LabelsMask[:]) {
			s += "/" + labelString(ct.LabelsMask[:])
		}
		parts = append(parts, s)
	}
	if len(ct.Helper) != 0 {
		parts = append(parts, "helper="+string(ct.Helper))
	}
	if len(ct.Timeout) != 0 {
		parts = append(parts, "timeout="+string(ct.Timeout))
	}
	if ct.HasNAT {
		parts = append(parts, natString(&ct.NAT))
	}
	if len(parts) > 0 {
		sb.WriteString("(" + strings.Join(parts, ",") + ")")
	}
}

func natString(n *NAT) string {
	if !n.Src && !n.Dst {
		return "nat"
	}
	s := "nat(src"
	if n.Dst {
		s = "nat(dst"
	}
	if n.IPMin.IsValid() {
		s += "=" + natAddr(n.IPMin, n.ProtoMin != 0)
		if n.IPMax.IsValid() && n.IPMax != n.IPMin {
			s += "-" + natAddr(n.IPMax, n.ProtoMin != 0)
		}
		if n.ProtoMin != 0 {
			s += fmt.Sprintf(":%d", n.ProtoMin)
			if n.ProtoMax != 0 && n.ProtoMax != n.ProtoMin {
				s += fmt.Sprintf("-%d", n.ProtoMax)
			}
		}
	}
	if n.Persistent {
		s += ",persistent"
	}
	if n.ProtoHash {
		s += ",hash"
	}
	if n.ProtoRandom {
		s += ",random"
	}
	return s + ")"
}

// natAddr brackets an IPv6 address when a port follows, as OVS does.
func natAddr(ip netip.Addr, port bool) string {
	if ip.Is6() && port {
		return "[" + ip.String() + "]"
	}
	return ip.String()
}

func allOnesBytes(b []byte) bool {
	for _, c := range b {
		if c != 0xff {
			return false
		}
	}
	return true
}

// setField is one field of a set action's key attribute in text.
type setField struct {
	name string
	off  int // offset in the ovs_key_* struct
	size int
	kind fieldKind
}

type fieldKind uint8

const (
	kindDec   fieldKind = iota // decimal, masked as /0x..
	kindHex                    // C "%#x"
	kindIPv4                   // dotted quad
	kindIPv6                   // RFC 5952
	kindMAC                    // colon hex
	kindFrag                   // no/first/later
	kindLabel                  // 128-bit hex, least significant byte first
	kindU32                    // host-order u32, "%#x"
)

// setFields lists the text fields of each key attribute a set action can
// carry, in OVS's order. Multi-byte numbers are big-endian unless kindU32.
var setFields = map[KeyAttr][]setField{
	KeyAttrPriority: {{"", 0, 4, kindU32}},
	KeyAttrSkbMark:  {{"", 0, 4, kindU32}},
	KeyAttrCtMark:   {{"", 0, 4, kindU32}},
	KeyAttrCtLabels: {{"", 0, 16, kindLabel}},
	KeyAttrEthernet: {{"src", 0, 6, kindMAC}, {"dst", 6, 6, kindMAC}},
	KeyAttrIPv4: {{"src", 0, 4, kindIPv4}, {"dst", 4, 4, kindIPv4}, {"proto", 8, 1, kindDec},
		{"tos", 9, 1, kindHex}, {"ttl", 10, 1, kindDec}, {"frag", 11, 1, kindFrag}},
	KeyAttrIPv6: {{"src", 0, 16, kindIPv6}, {"dst", 16, 16, kindIPv6}, {"label", 32, 4, kindHex},
		{"proto", 36, 1, kindDec}, {"tclass", 37, 1, kindHex}, {"hlimit", 38, 1, kindDec}, {"frag", 39, 1, kindFrag}},
	KeyAttrTCP:  {{"src", 0, 2, kindDec}, {"dst", 2, 2, kindDec}},
	KeyAttrUDP:  {{"src", 0, 2, kindDec}, {"dst", 2, 2, kindDec}},
	KeyAttrSCTP: {{"src", 0, 2, kindDec}, {"dst", 2, 2, kindDec}},
	KeyAttrARP: {{"sip", 0, 4, kindIPv4}, {"tip", 4, 4, kindIPv4}, {"op", 8, 2, kindDec},
		{"sha", 10, 6, kindMAC}, {"tha", 16, 6, kindMAC}},
	KeyAttrICMP:   {{"type", 0, 1, kindDec}, {"code", 1, 1, kindDec}},
	KeyAttrICMPv6: {{"type", 0, 1, kindDec}, {"code", 1, 1, kindDec}},
	KeyAttrND:     {{"target", 0, 16, kindIPv6}, {"sll", 16, 6, kindMAC}, {"tll", 22, 6, kindMAC}},
}

var setAttrNames = map[KeyAttr]string{
	KeyAttrPriority: "skb_priority", KeyAttrSkbMark: "skb_mark", KeyAttrCtMark: "ct_mark",
	KeyAttrCtLabels: "ct_label", KeyAttrEthernet: "eth", KeyAttrIPv4: "ipv4", KeyAttrIPv6: "ipv6",
	KeyAttrTCP: "tcp", KeyAttrUDP: "udp", KeyAttrSCTP: "sctp", KeyAttrMPLS: "mpls", KeyAttrTunnel: "tunnel",
	KeyAttrARP: "arp", KeyAttrICMP: "icmp", KeyAttrICMPv6: "icmpv6", KeyAttrND: "nd", KeyAttrNSH: "nsh",
}

func beUint(b []byte) uint64 {
	var v uint64
	for _, c := range b {
		v = v<<8 | uint64(c)
	}
	return v
}

func putBEUint(b []byte, v uint64) {
	for i := len(b) - 1; i >= 0; i-- {
		b[i] = byte(v)
		v >>= 8
	}
}

func fieldValue(f setField, b []byte) string {
	d := b[f.off : f.off+f.size]
	switch f.kind {
	case kindHex:
		return hexC(beUint(d))
	case kindU32:
		return hexC(uint64(binary.NativeEndian.Uint32(d)))
	case kindIPv4:
		return netip.AddrFrom4([4]byte(d)).String()
	case kindIPv6:
		return netip.AddrFrom16([16]byte(d)).String()
	case kindMAC:
		return macString(d)
	case kindFrag:
		switch d[0] {
		case fragNone:
			return "no"
		case fragFirst:
			return "first"
		case fragLater:
			return "later"
		}
		return strconv.Itoa(int(d[0]))
	case kindLabel:
		return labelString(d)
	}
	return strconv.FormatUint(beUint(d), 10)
}

func fieldMask(f setField, m []byte) string {
	switch f.kind {
	case kindIPv4, kindIPv6, kindMAC, kindLabel:
		return fieldValue(f, m)
	case kindU32:
		return hexC(uint64(binary.NativeEndian.Uint32(m[f.off:])))
	}
	return hexC(beUint(m[f.off : f.off+f.size]))
}

func formatSetKey(sb *strings.Builder, a *Action) {
	name, ok := setAttrNames[a.SetAttr]
	if !ok {
		formatGeneric(sb, "key", a.SetAttr, a.SetKey)
		return
	}
	sb.WriteString(name + "(")
	defer sb.WriteByte(')')
	switch a.SetAttr {
	case KeyAttrNSH:
		var v, m flow.NSH
		if DecodeSetNSH(a.SetKey, &v, &m) == nil {
			sb.Write(flow.AppendFormatNSH(nil, &v, &m))
		}
		return
	case KeyAttrTunnel:
		formatTunnelSet(sb, a.SetKey)
		return
	case KeyAttrMPLS:
		lse := binary.BigEndian.Uint32(a.SetKey)
		if a.SetMask == nil || allOnesBytes(a.SetMask) {
			formatLSE(sb, lse)
			return
		}
		m := binary.BigEndian.Uint32(a.SetMask)
		fmt.Fprintf(sb, "label=%d/0x%x,tc=%d/%x,ttl=%d/0x%x,bos=%d/%x",
			lse>>12, m>>12, lse>>9&7, m>>9&7, lse&0xff, m&0xff, lse>>8&1, m>>8&1)
		return
	}
	var parts []string
	for _, f := range setFields[a.SetAttr] {
		s := fieldValue(f, a.SetKey)
		if a.SetMask != nil {
			md := a.SetMask[f.off : f.off+f.size]
			if allZero(md) {
				continue
			}
			if !allOnesBytes(md) && !(f.name == "label" && beUint(md)&0xfffff == 0xfffff) {
				s += "/" + fieldMask(f, a.SetMask)
			}
		}
		if f.name != "" {
			s = f.name + "=" + s
		}
		parts = append(parts, s)
	}
	sb.WriteString(strings.Join(parts, ","))
}

// tunnelFlagOrder is OVS's order of tunnel flag names.
var tunnelFlagOrder = []struct {
	name string
	bit  uint16
}{{"oam", flow.TunnelOAM}, {"df", flow.TunnelDontFragment}, {"csum", flow.TunnelCsum}, {"key", flow.TunnelKey}}

func formatTunnelSet(sb *strings.Builder, d []byte) {
	var t flow.Tunnel
	if err := decodeTunnel(d, &t); err != nil {
		fmt.Fprintf(sb, "error(%v)", err)
		return
	}
	var parts []string
	if t.Flags&flow.TunnelKey != 0 {
		parts = append(parts, "tun_id="+"0x"+strconv.FormatUint(t.ID, 16))
	}
	if tunnelIPv6(&t) {
		if !isZero16(t.IPv6Src) {
			parts = append(parts, "ipv6_src="+netip.AddrFrom16(t.IPv6Src).String())
		}
		parts = append(parts, "ipv6_dst="+netip.AddrFrom16(t.IPv6Dst).String())
	} else {
		if !isZero4(t.IPv4Src) {
			parts = append(parts, "src="+netip.AddrFrom4(t.IPv4Src).String())
		}
		parts = append(parts, "dst="+netip.AddrFrom4(t.IPv4Dst).String())
	}
	if t.TOS != 0 {
		parts = append(parts, "tos="+hexC(uint64(t.TOS)))
	}
	parts = append(parts, fmt.Sprintf("ttl=%d", t.TTL))
	if t.TpSrc != 0 {
		parts = append(parts, fmt.Sprintf("tp_src=%d", t.TpSrc))
	}
	if t.TpDst != 0 {
		parts = append(parts, fmt.Sprintf("tp_dst=%d", t.TpDst))
	}
	if g := flow.AppendGbp(nil, &t); len(g) > 0 {
		parts = append(parts, string(g))
	}
	if g := flow.AppendGeneve(nil, &t); len(g) > 0 {
		parts = append(parts, string(g))
	}
	if e := flow.AppendErspan(nil, &t); len(e) > 0 {
		parts = append(parts, string(e))
	}
	var flags []string
	for _, f := range tunnelFlagOrder {
		if t.Flags&f.bit != 0 {
			flags = append(flags, f.name)
		}
	}
	if len(flags) == 0 {
		flags = []string{"0"}
	}
	parts = append(parts, "flags("+strings.Join(flags, "|")+")")
	sb.WriteString(strings.Join(parts, ","))
}

// ---- Parsing.

// ParseActions parses the ovs-dpctl text of a list of actions, as
// FormatActions writes it, into their netlink encoding. "drop" and the
// empty string are the empty list. Output ports are numbers (names need a
// datapath to resolve). The error names the action that failed to parse.
func ParseActions(s string) ([]byte, error) {
	s = strings.TrimSpace(s)
	if s == "" || s == "drop" {
		return []byte{}, nil
	}
	return parseActionList(nil, s)
}

func parseActionList(b []byte, s string) ([]byte, error) {
	items, err := splitTop(s)
	if err != nil {
		return nil, err
	}
	for _, item := range items {
		b, err = parseAction(b, item)
		if err != nil {
			return nil, fmt.Errorf("datapath: action %q: %w", item, err)
		}
	}
	return b, nil
}

// splitTop splits s at the commas outside parentheses.
func splitTop(s string) ([]string, error) {
	var out []string
	depth, start := 0, 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '(':
			depth++
		case ')':
			depth--
			if depth < 0 {
				return nil, fmt.Errorf("datapath: unbalanced ')' in %q", s)
			}
		case ',':
			if depth == 0 {
				out = append(out, strings.TrimSpace(s[start:i]))
				start = i + 1
			}
		}
	}
	if depth != 0 {
		return nil, fmt.Errorf("datapath: unbalanced '(' in %q", s)
	}
	if rest := strings.TrimSpace(s[start:]); rest != "" || len(out) > 0 {
		out = append(out, rest)
	}
	for _, it := range out {
		if it == "" {
			return nil, fmt.Errorf("datapath: empty item in %q", s)
		}
	}
	return out, nil
}

// call splits "name(args)" into name and args; ok is false for a bare
// word or a malformed call.
func call(s string) (name, args string, ok bool) {
	i := strings.IndexByte(s, '(')
	if i < 0 || !strings.HasSuffix(s, ")") {
		return s, "", false
	}
	return s[:i], s[i+1 : len(s)-1], true
}

func parseUint(s string, bits int) (uint64, error) {
	return strconv.ParseUint(strings.TrimSpace(s), 0, bits)
}

// keyValues parses "k=v,k=v,flag" into ordered pairs.
func keyValues(s string) ([][2]string, error) {
	items, err := splitTop(s)
	if err != nil {
		return nil, err
	}
	out := make([][2]string, 0, len(items))
	for _, it := range items {
		k, v, _ := strings.Cut(it, "=")
		out = append(out, [2]string{strings.TrimSpace(k), strings.TrimSpace(v)})
	}
	return out, nil
}

func parseAction(b []byte, s string) ([]byte, error) {
	if s[0] >= '0' && s[0] <= '9' {
		port, err := parseUint(s, 32)
		if err != nil {
			return nil, err
		}
		return AppendOutput(b, uint32(port)), nil
	}
	name, args, isCall := call(s)
	if !isCall {
		switch s {
		case "pop_vlan":
			return AppendPopVLAN(b), nil
		case "pop_eth":
			return AppendPopEth(b), nil
		case "ct_clear":
			return AppendCTClear(b), nil
		case "pop_nsh":
			return AppendPopNSH(b), nil
		case "ct":
			return AppendCT(b, &CT{}), nil
		}
		return nil, fmt.Errorf("unknown action")
	}
	switch name {
	case "push_nsh":
		v, _, err := parseNSHFields(args)
		if err != nil {
			return nil, err
		}
		if v.MDType != flow.NSHMDType1 {
			return nil, fmt.Errorf("push_nsh: only md type 1 is parsed")
		}
		return AppendPushNSH(b, &v, nil), nil
	case "pop_nsh":
		if args != "" {
			return nil, fmt.Errorf("pop_nsh takes no arguments")
		}
		return AppendPopNSH(b), nil
	case "trunc", "recirc", "meter":
		v, err := parseUint(args, 32)
		if err != nil {
			return nil, err
		}
		switch name {
		case "trunc":
			return AppendTrunc(b, uint32(v)), nil
		case "recirc":
			return AppendRecirc(b, uint32(v)), nil
		}
		return AppendMeter(b, uint32(v)), nil
	case "userspace":
		return parseUserspace(b, args)
	case "set":
		return parseSet(b, args)
	case "push_vlan":
		return parsePushVLAN(b, args)
	case "sample":
		return parseSample(b, args)
	case "hash":
		alg, basis, ok := call(args)
		if !ok {
			return nil, fmt.Errorf("want hash(l4(basis))")
		}
		v, err := parseUint(basis, 32)
		if err != nil {
			return nil, err
		}
		switch alg {
		case "l4":
			return AppendHash(b, HashAlgL4, uint32(v)), nil
		case "sym_l4":
			return AppendHash(b, 1, uint32(v)), nil
		}
		return nil, fmt.Errorf("unknown hash algorithm %q", alg)
	case "push_mpls", "add_mpls":
		lse, et, err := parseLSE(args)
		if err != nil {
			return nil, err
		}
		if name == "push_mpls" {
			return AppendPushMPLS(b, lse, et), nil
		}
		return AppendAddMPLS(b, lse, et, 0), nil
	case "pop_mpls":
		kv, err := keyValues(args)
		if err != nil || len(kv) != 1 || kv[0][0] != "eth_type" {
			return nil, fmt.Errorf("want pop_mpls(eth_type=...)")
		}
		v, err := parseUint(kv[0][1], 16)
		if err != nil {
			return nil, err
		}
		return AppendPopMPLS(b, uint16(v)), nil
	case "ct":
		return parseCT(b, args)
	case "push_eth":
		var src, dst [6]byte
		kv, err := keyValues(args)
		if err != nil {
			return nil, err
		}
		for _, p := range kv {
			var dstp *[6]byte
			switch p[0] {
			case "src":
				dstp = &src
			case "dst":
				dstp = &dst
			default:
				return nil, fmt.Errorf("unknown field %q", p[0])
			}
			if err := parseMAC(p[1], dstp[:]); err != nil {
				return nil, err
			}
		}
		return AppendPushEth(b, src, dst), nil
	case "clone":
		inner, err := parseNested(args)
		if err != nil {
			return nil, err
		}
		return AppendClone(b, inner), nil
	case "check_pkt_len":
		return parseCheckPktLen(b, args)
	case "dec_ttl":
		n, inner, ok := call(args)
		if !ok || n != "le_1" {
			return nil, fmt.Errorf("want dec_ttl(le_1(actions))")
		}
		acts, err := parseNested(inner)
		if err != nil {
			return nil, err
		}
		return AppendDecTTL(b, acts), nil
	}
	return nil, fmt.Errorf("unknown action")
}

// parseNested parses a nested action list, where "drop" or nothing is the
// empty list.
func parseNested(s string) ([]byte, error) {
	s = strings.TrimSpace(s)
	if s == "" || s == "drop" {
		return []byte{}, nil
	}
	return parseActionList(nil, s)
}

func parseUserspace(b []byte, args string) ([]byte, error) {
	kv, err := keyValues(args)
	if err != nil {
		return nil, err
	}
	var u Userspace
	hasPID := false
	for _, p := range kv {
		switch {
		case p[0] == "pid":
			v, err := parseUint(p[1], 32)
			if err != nil {
				return nil, err
			}
			u.PID, hasPID = uint32(v), true
		case p[0] == "actions" && p[1] == "":
			u.WithActions = true
		case p[0] == "tunnel_out_port":
			v, err := parseUint(p[1], 32)
			if err != nil {
				return nil, err
			}
			u.TunnelOutPort, u.HasTunnelOutPort = uint32(v), true
		default:
			n, data, ok := call(p[0])
			if ok && n == "slow_path" && p[1] == "" {
				// As OVS parses it: no input port, a zero UUID.
				reasons, err := parseSlowPathReasons(data)
				if err != nil {
					return nil, err
				}
				u.Userdata = make([]byte, SlowPathCookieLen)
				PutSlowPathCookie(u.Userdata, reasons, 0xffff, &[16]byte{})
				continue
			}
			// keyValues cut flow_sample(a=1,...) and ipfix(output_port=N)
			// at their first '='.
			if sn, sdata, sok := call(p[0] + "=" + p[1]); sok && (sn == "flow_sample" || sn == "ipfix") && p[1] != "" {
				if u.Userdata, err = parseSampleCookie(sn == "flow_sample", sdata); err != nil { // samplecookie.go
					return nil, err
				}
				continue
			}
			if !ok || n != "userdata" || p[1] != "" {
				return nil, fmt.Errorf("unknown userspace option %q", p[0])
			}
			u.Userdata, err = hex.DecodeString(strings.TrimPrefix(data, "0x"))
			if err != nil {
				return nil, fmt.Errorf("userdata: %w", err)
			}
		}
	}
	if !hasPID {
		return nil, fmt.Errorf("userspace needs a pid")
	}
	return AppendUserspaceAction(b, &u), nil
}

func parsePushVLAN(b []byte, args string) ([]byte, error) {
	kv, err := keyValues(args)
	if err != nil {
		return nil, err
	}
	tpid, vid, pcp, cfi := uint64(flow.EthTypeVLAN), uint64(0), uint64(0), uint64(1)
	for _, p := range kv {
		var dst *uint64
		bits := 16
		switch p[0] {
		case "tpid":
			dst = &tpid
		case "vid":
			dst, bits = &vid, 12
		case "pcp":
			dst, bits = &pcp, 3
		case "cfi":
			dst, bits = &cfi, 1
		default:
			return nil, fmt.Errorf("unknown field %q", p[0])
		}
		if *dst, err = parseUint(p[1], bits); err != nil {
			return nil, err
		}
	}
	tci := uint16(vid) | uint16(pcp)<<13
	if cfi != 0 {
		tci |= flow.VLANPresent
	}
	// The builder forces the present bit the kernel requires; a cfi=0 in
	// text must survive, so encode directly.
	b, p := netlinkio.AppendReserve(b, uint16(ActionPushVLAN), 4)
	binary.BigEndian.PutUint16(p, uint16(tpid))
	binary.BigEndian.PutUint16(p[2:], tci)
	return b, nil
}

func parseSample(b []byte, args string) ([]byte, error) {
	items, err := splitTop(args)
	if err != nil {
		return nil, err
	}
	if len(items) != 2 || !strings.HasPrefix(items[0], "sample=") || !strings.HasSuffix(items[0], "%") {
		return nil, fmt.Errorf("want sample(sample=P%%,actions(...))")
	}
	pct, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimPrefix(items[0], "sample="), "%"), 64)
	if err != nil || pct < 0 || pct > 100 {
		return nil, fmt.Errorf("bad probability %q", items[0])
	}
	n, inner, ok := call(items[1])
	if !ok || n != "actions" {
		return nil, fmt.Errorf("want actions(...)")
	}
	acts, err := parseNested(inner)
	if err != nil {
		return nil, err
	}
	return AppendSample(b, uint32(math.Round(pct/100*math.MaxUint32)), acts), nil
}

func parseLSE(args string) (lse uint32, ethType uint16, err error) {
	kv, err := keyValues(args)
	if err != nil {
		return 0, 0, err
	}
	for _, p := range kv {
		v, err := parseUint(p[1], 32)
		if err != nil {
			return 0, 0, err
		}
		switch p[0] {
		case "label":
			lse |= uint32(v&0xfffff) << 12
		case "tc":
			lse |= uint32(v&7) << 9
		case "ttl":
			lse |= uint32(v & 0xff)
		case "bos":
			lse |= uint32(v&1) << 8
		case "eth_type":
			ethType = uint16(v)
		default:
			return 0, 0, fmt.Errorf("unknown field %q", p[0])
		}
	}
	return lse, ethType, nil
}

func parseCheckPktLen(b []byte, args string) ([]byte, error) {
	items, err := splitTop(args)
	if err != nil {
		return nil, err
	}
	var size uint64
	var gt, le []byte
	seen := 0
	for _, it := range items {
		if v, ok := strings.CutPrefix(it, "size="); ok {
			if size, err = parseUint(v, 16); err != nil {
				return nil, err
			}
			seen |= 1
			continue
		}
		n, inner, ok := call(it)
		if !ok {
			return nil, fmt.Errorf("unknown field %q", it)
		}
		acts, err := parseNested(inner)
		if err != nil {
			return nil, err
		}
		switch n {
		case "gt":
			gt, seen = acts, seen|2
		case "le":
			le, seen = acts, seen|4
		default:
			return nil, fmt.Errorf("unknown field %q", it)
		}
	}
	if seen != 7 {
		return nil, fmt.Errorf("want check_pkt_len(size=N,gt(...),le(...))")
	}
	return AppendCheckPktLen(b, uint16(size), gt, le), nil
}

func parseCT(b []byte, args string) ([]byte, error) {
	var ct CT
	items, err := splitTop(args)
	if err != nil {
		return nil, err
	}
	for _, it := range items {
		k, v, hasV := strings.Cut(it, "=")
		switch {
		case it == "commit":
			ct.Commit = true
		case it == "force_commit":
			ct.ForceCommit = true
		case k == "zone" && hasV:
			z, err := parseUint(v, 16)
			if err != nil {
				return nil, err
			}
			ct.Zone = uint16(z)
		case k == "mark" && hasV:
			val, mask, err := parseMasked(v, 32)
			if err != nil {
				return nil, err
			}
			ct.Mark, ct.MarkMask = uint32(val), uint32(mask)
		case k == "label" && hasV:
			val, mask, _ := strings.Cut(v, "/")
			if err := parseLabel(val, ct.Labels[:]); err != nil {
				return nil, err
			}
			if mask == "" {
				ct.LabelsMask = [16]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}
			} else if err := parseLabel(mask, ct.LabelsMask[:]); err != nil {
				return nil, err
			}
		case k == "helper" && hasV:
			ct.Helper = []byte(v)
		case k == "timeout" && hasV:
			ct.Timeout = []byte(v)
		case it == "nat" || strings.HasPrefix(it, "nat("):
			ct.HasNAT = true
			if it != "nat" {
				_, inner, _ := call(it)
				if err := parseNAT(inner, &ct.NAT); err != nil {
					return nil, err
				}
			}
		default:
			return nil, fmt.Errorf("unknown ct option %q", it)
		}
	}
	return AppendCT(b, &ct), nil
}

// parseMasked parses "v" or "v/m"; a missing mask is all ones.
func parseMasked(s string, bits int) (v, m uint64, err error) {
	val, mask, hasMask := strings.Cut(s, "/")
	if v, err = parseUint(val, bits); err != nil {
		return 0, 0, err
	}
	m = 1<<bits - 1
	if hasMask {
		if m, err = parseUint(mask, bits); err != nil {
			return 0, 0, err
		}
	}
	return v, m, nil
}

// parseLabel parses a 128-bit number (hex with 0x, or decimal up to 64
// bits) into 16 bytes, least significant first.
func parseLabel(s string, out []byte) error {
	clear(out)
	h, ok := strings.CutPrefix(s, "0x")
	if !ok {
		v, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			return err
		}
		binary.LittleEndian.PutUint64(out, v)
		return nil
	}
	if len(h) == 0 || len(h) > 32 {
		return fmt.Errorf("bad label %q", s)
	}
	if len(h)%2 == 1 {
		h = "0" + h
	}
	be, err := hex.DecodeString(h)
	if err != nil {
		return err
	}
	for i, c := range be {
		out[len(be)-1-i] = c
	}
	return nil
}

func parseNAT(s string, n *NAT) error {
	items, err := splitTop(s)
	if err != nil {
		return err
	}
	for _, it := range items {
		k, v, hasV := strings.Cut(it, "=")
		switch k {
		case "src", "dst":
			if k == "src" {
				n.Src = true
			} else {
				n.Dst = true
			}
			if hasV {
				if err := parseNATRange(v, n); err != nil {
					return err
				}
			}
		case "persistent":
			n.Persistent = true
		case "hash":
			n.ProtoHash = true
		case "random":
			n.ProtoRandom = true
		default:
			return fmt.Errorf("unknown nat option %q", it)
		}
	}
	if n.Src && n.Dst {
		return fmt.Errorf("nat is both src and dst")
	}
	return nil
}

// parseNATRange parses "ip[-ip][:port[-port]]", IPv6 addresses bracketed
// when a port follows.
func parseNATRange(s string, n *NAT) error {
	var ips, ports string
	if strings.HasPrefix(s, "[") {
		// [a]-[b]:p-q or [a]:p
		end := strings.LastIndex(s, "]")
		ips = strings.NewReplacer("[", "", "]", "").Replace(s[:end+1])
		ports, _ = strings.CutPrefix(s[end+1:], ":")
	} else if strings.Count(s, ":") == 1 || (strings.Contains(s, ".") && strings.Contains(s, ":")) {
		ips, ports, _ = strings.Cut(s, ":")
	} else {
		ips = s
	}
	lo, hi, hasHi := strings.Cut(ips, "-")
	var err error
	if n.IPMin, err = netip.ParseAddr(lo); err != nil {
		return err
	}
	if hasHi {
		if n.IPMax, err = netip.ParseAddr(hi); err != nil {
			return err
		}
	}
	if ports != "" {
		plo, phi, hasPHi := strings.Cut(ports, "-")
		v, err := parseUint(plo, 16)
		if err != nil {
			return err
		}
		n.ProtoMin = uint16(v)
		if hasPHi {
			if v, err = parseUint(phi, 16); err != nil {
				return err
			}
			n.ProtoMax = uint16(v)
		}
	}
	return nil
}

func parseMAC(s string, out []byte) error {
	hw, err := netParseMAC(s)
	if err != nil {
		return err
	}
	copy(out, hw)
	return nil
}

// netParseMAC parses six colon-separated hex bytes.
func netParseMAC(s string) ([]byte, error) {
	parts := strings.Split(s, ":")
	if len(parts) != 6 {
		return nil, fmt.Errorf("bad MAC address %q", s)
	}
	out := make([]byte, 6)
	for i, p := range parts {
		v, err := strconv.ParseUint(p, 16, 8)
		if err != nil {
			return nil, fmt.Errorf("bad MAC address %q", s)
		}
		out[i] = byte(v)
	}
	return out, nil
}

// parseNSHFields parses the fields inside nsh(...), set(nsh(...)) and
// push_nsh(...) with package flow's parser.
func parseNSHFields(s string) (flow.NSH, flow.NSH, error) {
	k, m, err := flow.Parse("eth_type(0x894f),nsh(" + s + ")")
	if err != nil {
		return flow.NSH{}, flow.NSH{}, fmt.Errorf("nsh: %w", err)
	}
	return k.NSH, m.NSH, nil
}

// parseSet parses the key attribute of a set action. A field list that
// covers every bit of the attribute makes a plain set; anything less a
// masked set, as OVS decides.
func parseSet(b []byte, args string) ([]byte, error) {
	name, inner, ok := call(args)
	if !ok {
		return nil, fmt.Errorf("want set(key(fields))")
	}
	var attr KeyAttr
	found := false
	for a, n := range setAttrNames {
		if n == name {
			attr, found = a, true
		}
	}
	if !found {
		return nil, fmt.Errorf("cannot set %q", name)
	}
	switch attr {
	case KeyAttrTunnel:
		var k flow.Key
		if err := parseTunnelSet(inner, &k.Tunnel); err != nil {
			return nil, err
		}
		return AppendSet(b, KeyAttrTunnel, &k), nil
	case KeyAttrMPLS:
		return parseSetMPLS(b, inner)
	case KeyAttrNSH:
		v, m, err := parseNSHFields(inner)
		if err != nil {
			return nil, err
		}
		return AppendSetNSHMasked(b, &v, &m), nil
	}
	n := setAttrLen(attr)
	val := make([]byte, n)
	mask := make([]byte, n)
	fields := setFields[attr]
	var items [][2]string
	if len(fields) == 1 && fields[0].name == "" {
		items = [][2]string{{"", inner}}
	} else {
		var err error
		if items, err = keyValues(inner); err != nil {
			return nil, err
		}
	}
	for _, it := range items {
		var f *setField
		for i := range fields {
			if fields[i].name == it[0] {
				f = &fields[i]
			}
		}
		if f == nil {
			return nil, fmt.Errorf("unknown field %q of %s", it[0], name)
		}
		if err := parseField(*f, it[1], val, mask); err != nil {
			return nil, fmt.Errorf("%s: %w", it[0], err)
		}
	}
	if attr == KeyAttrIPv6 && beUint(mask[32:36]) == 0xffffffff {
		// label=V is a full match of the 20-bit label.
		putBEUint(mask[32:36], 0x000fffff)
	}
	full := allOnesBytes(mask)
	if attr == KeyAttrIPv6 {
		m := append([]byte(nil), mask...)
		if beUint(m[32:36]) == 0x000fffff {
			putBEUint(m[32:36], 0xffffffff)
		}
		full = allOnesBytes(m)
	}
	if full {
		return AppendSetAttr(b, attr, val), nil
	}
	for i := range val {
		val[i] &= mask[i]
	}
	return AppendSetMaskedAttr(b, attr, val, mask), nil
}

// parseField parses one "value[/mask]" into the value and mask structs.
func parseField(f setField, s string, val, mask []byte) error {
	v, m, hasMask := strings.Cut(s, "/")
	d := val[f.off : f.off+f.size]
	md := mask[f.off : f.off+f.size]
	parseOne := func(s string, out []byte) error {
		switch f.kind {
		case kindIPv4, kindIPv6:
			ip, err := netip.ParseAddr(s)
			if err != nil || (f.kind == kindIPv4) != ip.Is4() {
				return fmt.Errorf("bad address %q", s)
			}
			copy(out, ip.AsSlice())
		case kindMAC:
			return parseMAC(s, out)
		case kindFrag:
			switch s {
			case "no":
				out[0] = fragNone
			case "first":
				out[0] = fragFirst
			case "later":
				out[0] = fragLater
			default:
				x, err := parseUint(s, 8)
				if err != nil {
					return err
				}
				out[0] = byte(x)
			}
		case kindLabel:
			return parseLabel(s, out)
		case kindU32:
			x, err := parseUint(s, 32)
			if err != nil {
				return err
			}
			binary.NativeEndian.PutUint32(out, uint32(x))
		default:
			x, err := parseUint(s, 8*f.size)
			if err != nil {
				return err
			}
			putBEUint(out, x)
		}
		return nil
	}
	if err := parseOne(v, d); err != nil {
		return err
	}
	if !hasMask {
		for i := range md {
			md[i] = 0xff
		}
		return nil
	}
	if f.kind == kindFrag {
		x, err := parseUint(m, 8)
		if err != nil {
			return err
		}
		md[0] = byte(x)
		return nil
	}
	return parseOne(m, md)
}

func parseSetMPLS(b []byte, inner string) ([]byte, error) {
	kv, err := keyValues(inner)
	if err != nil {
		return nil, err
	}
	var lse, mask uint32
	for _, p := range kv {
		v, m, err := parseMasked(p[1], 32)
		if err != nil {
			return nil, err
		}
		var shift, width uint32
		switch p[0] {
		case "label":
			shift, width = 12, 0xfffff
		case "tc":
			shift, width = 9, 7
		case "ttl":
			shift, width = 0, 0xff
		case "bos":
			shift, width = 8, 1
		default:
			return nil, fmt.Errorf("unknown field %q of mpls", p[0])
		}
		lse |= uint32(v) & width << shift
		mask |= uint32(m) & width << shift
	}
	var val, msk [4]byte
	binary.BigEndian.PutUint32(val[:], lse&mask)
	binary.BigEndian.PutUint32(msk[:], mask)
	if mask == 0xffffffff {
		return AppendSetAttr(b, KeyAttrMPLS, val[:]), nil
	}
	return AppendSetMaskedAttr(b, KeyAttrMPLS, val[:], msk[:]), nil
}

func parseTunnelSet(s string, t *flow.Tunnel) error {
	items, err := splitTop(s)
	if err != nil {
		return err
	}
	for _, it := range items {
		k, v, _ := strings.Cut(it, "=")
		switch k {
		case "tun_id":
			x, err := parseUint(v, 64)
			if err != nil {
				return err
			}
			t.ID = x
			t.Flags |= flow.TunnelKey
		case "src", "dst", "ipv6_src", "ipv6_dst":
			ip, err := netip.ParseAddr(v)
			if err != nil {
				return err
			}
			switch {
			case k == "src" && ip.Is4():
				t.IPv4Src = ip.As4()
			case k == "dst" && ip.Is4():
				t.IPv4Dst = ip.As4()
			case k == "ipv6_src" && ip.Is6():
				t.IPv6Src = ip.As16()
			case k == "ipv6_dst" && ip.Is6():
				t.IPv6Dst = ip.As16()
			default:
				return fmt.Errorf("bad address %q", it)
			}
		case "tos", "ttl":
			x, err := parseUint(v, 8)
			if err != nil {
				return err
			}
			if k == "tos" {
				t.TOS = uint8(x)
			} else {
				t.TTL = uint8(x)
			}
		case "tp_src", "tp_dst":
			x, err := parseUint(v, 16)
			if err != nil {
				return err
			}
			if k == "tp_src" {
				t.TpSrc = uint16(x)
			} else {
				t.TpDst = uint16(x)
			}
		default:
			n, flags, ok := call(it)
			if ok && n == "erspan" {
				if err := parseErspanSet(flags, t); err != nil {
					return fmt.Errorf("erspan(%s): %w", flags, err)
				}
				continue
			}
			if ok && n == "vxlan" {
				if err := parseGbpSet(flags, t); err != nil {
					return fmt.Errorf("vxlan(%s): %w", flags, err)
				}
				continue
			}
			if !ok || n != "flags" {
				return fmt.Errorf("unknown tunnel field %q", it)
			}
			for f := range strings.SplitSeq(flags, "|") {
				known := f == "0"
				for _, tf := range tunnelFlagOrder {
					if tf.name == f {
						t.Flags |= tf.bit
						known = true
					}
				}
				if !known {
					return fmt.Errorf("unknown tunnel flag %q", f)
				}
			}
		}
	}
	return nil
}

// parseErspanSet parses the inside of an action's erspan(...) as
// flow.AppendErspan writes it: ver=1,idx=N or ver=2,dir=N,hwid=N.
func parseErspanSet(s string, t *flow.Tunnel) error {
	kvs, err := keyValues(s)
	if err != nil {
		return err
	}
	for _, kv := range kvs {
		bits := map[string]int{"ver": 8, "idx": 32, "dir": 1, "hwid": 6}[kv[0]]
		if bits == 0 {
			return fmt.Errorf("unknown field %q", kv[0])
		}
		x, err := parseUint(kv[1], bits)
		if err != nil {
			return err
		}
		switch kv[0] {
		case "ver":
			t.ErspanVer = uint8(x)
		case "idx":
			t.ErspanIdx = uint32(x)
		case "dir":
			t.ErspanDir = uint8(x)
		case "hwid":
			t.ErspanHwid = uint8(x)
		}
	}
	if t.ErspanVer != 1 && t.ErspanVer != 2 {
		return fmt.Errorf("version %d (1 or 2)", t.ErspanVer)
	}
	if t.ErspanVer == 1 && (t.ErspanDir != 0 || t.ErspanHwid != 0) || t.ErspanVer == 2 && t.ErspanIdx != 0 {
		return fmt.Errorf("fields of another version than %d", t.ErspanVer)
	}
	return nil
}

// parseGbpSet parses the inside of an action's vxlan(...) as
// flow.AppendGbp writes it: gbp(id=N,flags=N), either field optional.
func parseGbpSet(s string, t *flow.Tunnel) error {
	n, args, ok := call(s)
	if !ok || n != "gbp" {
		return fmt.Errorf("want gbp(...)")
	}
	kvs, err := keyValues(args)
	if err != nil {
		return err
	}
	for _, kv := range kvs {
		switch kv[0] {
		case "id":
			x, err := parseUint(kv[1], 16)
			if err != nil {
				return err
			}
			t.GbpID = uint16(x)
		case "flags":
			x, err := parseUint(kv[1], 8)
			if err != nil {
				return err
			}
			t.GbpFlags = uint8(x)
		default:
			return fmt.Errorf("unknown field %q", kv[0])
		}
	}
	return nil
}

// ErrnoText words an error as OVS's tools word an errno (strerror, with a
// capital: "File exists"); an error that wraps no errno keeps its text.
func ErrnoText(err error) string {
	var en unix.Errno
	if errors.As(err, &en) {
		s := en.Error()
		return strings.ToUpper(s[:1]) + s[1:]
	}
	return err.Error()
}
