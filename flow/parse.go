package flow

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"strconv"
	"strings"
	"time"
)

// ParseError reports text that Parse or ParseDumpLine cannot accept. Token
// is the offending piece of text (an attribute, a field or a value), Offset
// its byte offset in the input. Err is ErrUnsupported for valid ODP text
// that a Key cannot hold, else nil.
type ParseError struct {
	Offset int
	Token  string
	Msg    string
	Err    error
}

func (e *ParseError) Error() string {
	return fmt.Sprintf("flow: parse error at offset %d, %q: %s", e.Offset, e.Token, e.Msg)
}

// Unwrap returns e.Err, so errors.Is(err, ErrUnsupported) works.
func (e *ParseError) Unwrap() error { return e.Err }

// ErrUnsupported is wrapped by errors for syntax that is valid ODP text but
// that a Key cannot hold (geneve options, NSH, a second MPLS label, a
// conntrack original tuple that is matched, ...).
var ErrUnsupported = errors.New("not representable in flow.Key")

// Parse reads a flow key and mask in the syntax ovs-dpctl 3.1 prints for
// kernel flows, with or without -m: a list of attributes such as
// "in_port(1),eth(src=..,dst=..),eth_type(0x0800),ipv4(..),tcp(..)"
// separated by commas or spaces. It is ParseWithPorts without port names.
func Parse(s string) (Key, Mask, error) {
	return ParseWithPorts(s, nil)
}

// ParseWithPorts is Parse for text that may name ports, as ovs-dpctl prints
// in_port with --names (the default with -m): ports maps a port name to its
// datapath port number. ports may be nil.
//
// Every field may carry a /mask where OVS allows one; a field without one is
// exact, an attribute or field that is absent is wildcarded, with one
// exception that mirrors the kernel: the kernel always matches the VLAN TCI,
// so when the text has eth(...), each VLAN level without a vlan(...) gets an
// exact TCI mask with a zero TCI, meaning "no tag here". Masks are limited
// to each field's width (see Format). The returned Key has no bits outside
// the Mask: it is what the kernel stores and dumps.
//
// Attributes that a Key cannot hold (ct_tuple4, ct_tuple6, nd_ext, and
// attributes OVS prints raw as keyN(...), such as the kernel's IPv6
// extension headers, key32) are accepted only when wholly wildcarded, as
// ovs-dpctl prints them for flows OVS installed; a match on one, and nsh,
// packet_type or tunnel options, fail with an error wrapping
// ErrUnsupported. Text that ovs-dpctl prints for an 802.3 frame,
// "eth_type(0/0xffff)", yields EthType EthTypeNone with an exact mask.
//
// Errors are *ParseError values naming the offending token; those for text
// a Key cannot hold satisfy errors.Is(err, ErrUnsupported). Parse never
// panics; it allocates only for errors.
func ParseWithPorts(s string, ports map[string]uint32) (Key, Mask, error) {
	p := parser{s: s, ports: ports}
	p.l3At = -1
	if err := p.attrs(0); err != nil {
		return Key{}, Mask{}, err
	}
	if err := p.finish(); err != nil {
		return Key{}, Mask{}, err
	}
	return p.k.Apply(&p.m), p.m, nil
}

type parser struct {
	s     string
	pos   int
	ports map[string]uint32
	k     Key
	m     Mask

	sawEth  bool
	vlanAt  [3]bool // a vlan(...) was read at this level
	ethType [3]struct {
		set  bool
		v, m uint16
		off  int
	}
	l3At  int // level of the first L3/L4 attribute, or -1
	l3Off int
	seen  [3]uint64 // attributes read at each level, by index in attrNames
	// generic records keyN(...) attributes read at each level, by N.
	generic [3]uint64
}

// attrNames lists the attributes Parse knows, for duplicate detection.
var attrNames = [...]string{
	"recirc_id", "dp_hash", "skb_priority", "skb_mark", "ct_mark", "ct_zone", "ct_state",
	"ct_label", "in_port", "tunnel", "eth", "eth_type", "vlan", "encap", "mpls", "ipv4",
	"ipv6", "arp", "tcp", "udp", "sctp", "tcp_flags", "icmp", "icmpv6", "nd", "ct_tuple4",
	"ct_tuple6", "nd_ext", "nsh", "packet_type",
}

const delimiters = ", \t\r\n"

func (p *parser) errAt(off int, tok, format string, args ...any) error {
	return &ParseError{Offset: off, Token: tok, Msg: fmt.Sprintf(format, args...)}
}

func (p *parser) unsupported(off int, tok, what string) error {
	return &ParseError{Offset: off, Token: tok, Msg: what + ": " + ErrUnsupported.Error(), Err: ErrUnsupported}
}

func (p *parser) skipDelims() {
	for p.pos < len(p.s) && strings.IndexByte(delimiters, p.s[p.pos]) >= 0 {
		p.pos++
	}
}

func isNameByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_'
}

// name reads an attribute or field name.
func (p *parser) name() string {
	start := p.pos
	for p.pos < len(p.s) && isNameByte(p.s[p.pos]) {
		p.pos++
	}
	return p.s[start:p.pos]
}

// tokenAround returns a short piece of the input starting at off, for error
// messages about text that does not even form a name.
func (p *parser) tokenAround(off int) string {
	end := off
	for end < len(p.s) && end-off < 24 && strings.IndexByte(",()", p.s[end]) < 0 {
		end++
	}
	if end == off && end < len(p.s) {
		end++
	}
	return p.s[off:end]
}

// attrs parses attributes at VLAN nesting level until the end of the input
// (level 0) or the ')' closing an encap (deeper levels), which it consumes.
func (p *parser) attrs(level int) error {
	for {
		p.skipDelims()
		if p.pos >= len(p.s) {
			if level > 0 {
				return p.errAt(p.pos, "encap(", "unterminated encap(")
			}
			return nil
		}
		if p.s[p.pos] == ')' && level > 0 {
			p.pos++
			return nil
		}
		off := p.pos
		name := p.name()
		if name == "" || p.pos >= len(p.s) || p.s[p.pos] != '(' {
			return p.errAt(off, p.tokenAround(off), "expected an attribute such as in_port(...)")
		}
		p.pos++ // '('
		if err := p.attr(level, name, off); err != nil {
			return err
		}
	}
}

// once rejects an attribute given twice at the same level.
func (p *parser) once(level int, name string, off int) error {
	if isGenericAttr(name) {
		n, _ := strconv.Atoi(name[3:])
		if n >= 64 {
			return p.errAt(off, name, "attribute number out of range")
		}
		if p.generic[level]&(1<<n) != 0 {
			return p.errAt(off, name, "attribute given twice")
		}
		p.generic[level] |= 1 << n
		return nil
	}
	for i, n := range attrNames {
		if n != name {
			continue
		}
		if p.seen[level]&(1<<i) != 0 {
			return p.errAt(off, name, "attribute given twice")
		}
		p.seen[level] |= 1 << i
		return nil
	}
	return p.errAt(off, name, "unknown attribute")
}

func (p *parser) attr(level int, name string, off int) error {
	if err := p.once(level, name, off); err != nil {
		return err
	}
	k, m := &p.k, &p.m
	switch name {
	case "recirc_id":
		return p.single32(&k.RecircID, &m.RecircID)
	case "dp_hash":
		return p.single32(&k.DPHash, &m.DPHash)
	case "skb_priority":
		return p.single32(&k.Priority, &m.Priority)
	case "skb_mark":
		return p.single32(&k.Mark, &m.Mark)
	case "ct_mark":
		return p.single32(&k.CtMark, &m.CtMark)
	case "ct_zone":
		tok, toff, err := p.inner()
		if err != nil {
			return err
		}
		v, mv, err := p.numMask(tok, toff, 16, 0xffff)
		k.CtZone, m.CtZone = uint16(v), uint16(mv)
		return err
	case "ct_state":
		tok, toff, err := p.inner()
		if err != nil {
			return err
		}
		v, mv, err := p.flagsValue(tok, toff, &ctStateFlags, 0xffffffff, 32)
		k.CtState, m.CtState = v, mv
		return err
	case "ct_label":
		tok, toff, err := p.inner()
		if err != nil {
			return err
		}
		return p.label(tok, toff)
	case "in_port":
		return p.inPort()
	case "tunnel":
		return p.tunnel()
	case "eth":
		if level != 0 {
			return p.errAt(off, name, "eth(...) inside encap(...)")
		}
		p.sawEth = true
		return p.fields(name, func(f string, foff int) error {
			switch f {
			case "src":
				return p.macField(foff, &k.EthSrc, &m.EthSrc)
			case "dst":
				return p.macField(foff, &k.EthDst, &m.EthDst)
			}
			return nil
		}, "src", "dst")
	case "eth_type":
		tok, toff, err := p.inner()
		if err != nil {
			return err
		}
		v, mv, err := p.numMask(tok, toff, 16, 0xffff)
		if err != nil {
			return err
		}
		p.ethType[level].set = true
		p.ethType[level].v, p.ethType[level].m = uint16(v), uint16(mv)
		p.ethType[level].off = off
		return nil
	case "vlan":
		if level >= len(k.VLANs) {
			return p.unsupported(off, name, "a third VLAN tag")
		}
		p.vlanAt[level] = true
		// As in OVS, a vlan(...) without cfi= means a tag is present.
		tci, tm := VLANPresent, VLANPresent
		err := p.fields(name, func(f string, foff int) error {
			var bits, shift uint
			switch f {
			case "vid":
				bits, shift = 12, 0
			case "pcp":
				bits, shift = 3, 13
			case "cfi":
				bits, shift = 1, 12
			}
			v, mv, err := p.valueNum(foff, bits, 1<<bits-1)
			if err != nil {
				return err
			}
			if mv>>bits != 0 {
				return p.errAt(foff, f, "mask wider than %d bits", bits)
			}
			fm := uint16(1<<bits-1) << shift
			tci = tci&^fm | uint16(v)<<shift
			tm = tm&^fm | uint16(mv)<<shift
			return nil
		}, "vid", "pcp", "cfi")
		k.VLANs[level].TCI, m.VLANs[level].TCI = tci, tm
		return err
	case "encap":
		if !p.vlanAt[level] {
			return p.errAt(off, name, "encap(...) without a vlan(...) before it")
		}
		if level+1 > len(k.VLANs) {
			return p.unsupported(off, name, "a third VLAN tag")
		}
		return p.attrs(level + 1)
	case "mpls":
		p.markL3(level, off)
		return p.mpls()
	case "ipv4", "ipv6", "arp":
		p.markL3(level, off)
		return p.l3(name)
	case "tcp", "udp", "sctp":
		p.markL3(level, off)
		return p.fields(name, func(f string, foff int) error {
			switch f {
			case "src":
				return p.field16(foff, &k.TpSrc, &m.TpSrc)
			case "dst":
				return p.field16(foff, &k.TpDst, &m.TpDst)
			}
			return nil
		}, "src", "dst")
	case "tcp_flags":
		p.markL3(level, off)
		tok, toff, err := p.inner()
		if err != nil {
			return err
		}
		v, mv, err := p.flagsValue(tok, toff, &tcpFlags, tcpFlagsWidth, 16)
		k.TCPFlags, m.TCPFlags = uint16(v), uint16(mv)
		return err
	case "icmp", "icmpv6":
		p.markL3(level, off)
		return p.fields(name, func(f string, foff int) error {
			v, mv, err := p.valueNum(foff, 8, 0xff)
			if err != nil {
				return err
			}
			if f == "type" {
				k.TpSrc, m.TpSrc = uint16(v), uint16(mv)
			} else {
				k.TpDst, m.TpDst = uint16(v), uint16(mv)
			}
			return nil
		}, "type", "code")
	case "nd":
		p.markL3(level, off)
		return p.fields(name, func(f string, foff int) error {
			switch f {
			case "target":
				return p.ipv6Field(foff, &k.NDTarget, &m.NDTarget)
			case "sll":
				return p.macField(foff, &k.NDSLL, &m.NDSLL)
			case "tll":
				return p.macField(foff, &k.NDTLL, &m.NDTLL)
			}
			return nil
		}, "target", "sll", "tll")
	case "ct_tuple4":
		t, mt := &k.CtOrig, &m.CtOrig
		return p.fields(name, func(f string, foff int) error {
			switch f {
			case "src":
				return p.ipv4Field(foff, &t.IPv4Src, &mt.IPv4Src)
			case "dst":
				return p.ipv4Field(foff, &t.IPv4Dst, &mt.IPv4Dst)
			case "proto":
				return p.field8(&t.Proto, &mt.Proto)
			case "tp_src":
				return p.field16(foff, &t.TpSrc, &mt.TpSrc)
			default:
				return p.field16(foff, &t.TpDst, &mt.TpDst)
			}
		}, "src", "dst", "proto", "tp_src", "tp_dst")
	case "ct_tuple6":
		// ovs-dpctl prints src_port and dst_port and reads tp_src and
		// tp_dst: both are taken.
		t, mt := &k.CtOrig, &m.CtOrig
		return p.fields(name, func(f string, foff int) error {
			switch f {
			case "src":
				return p.ipv6Field(foff, &t.IPv6Src, &mt.IPv6Src)
			case "dst":
				return p.ipv6Field(foff, &t.IPv6Dst, &mt.IPv6Dst)
			case "proto":
				return p.field8(&t.Proto, &mt.Proto)
			case "src_port", "tp_src":
				return p.field16(foff, &t.TpSrc, &mt.TpSrc)
			default:
				return p.field16(foff, &t.TpDst, &mt.TpDst)
			}
		}, "src", "dst", "proto", "src_port", "dst_port", "tp_src", "tp_dst")
	case "nd_ext":
		return p.wildcardOnly(name, off)
	case "nsh":
		p.markL3(level, off)
		return p.nsh()
	case "packet_type":
		return p.unsupported(off, name, name+" matches")
	}
	if isGenericAttr(name) {
		return p.genericAttr(name, off)
	}
	return p.errAt(off, name, "unknown attribute")
}

func (p *parser) markL3(level, off int) {
	if p.l3At < 0 {
		p.l3At, p.l3Off = level, off
	}
}

// inner returns the text up to the ')' that closes the current attribute
// and consumes it.
func (p *parser) inner() (string, int, error) {
	start := p.pos
	i := strings.IndexByte(p.s[start:], ')')
	if i < 0 {
		return "", start, p.errAt(start-1, p.tokenAround(start), "missing ')'")
	}
	p.pos = start + i + 1
	return p.s[start : start+i], start, nil
}

func (p *parser) single32(v, m *uint32) error {
	tok, off, err := p.inner()
	if err != nil {
		return err
	}
	x, mx, err := p.numMask(tok, off, 32, 0xffffffff)
	*v, *m = uint32(x), uint32(mx)
	return err
}

// fields parses "name=value,name=value...)" of a struct attribute, calling
// fn with the position after '=' for each field; fn must consume the value.
// Only the listed field names are accepted, each at most once.
func (p *parser) fields(attr string, fn func(field string, off int) error, names ...string) error {
	var seen uint32
	for first := true; ; first = false {
		if p.pos < len(p.s) && p.s[p.pos] == ')' {
			p.pos++
			return nil
		}
		if !first {
			if p.pos >= len(p.s) || p.s[p.pos] != ',' {
				return p.errAt(p.pos, p.tokenAround(p.pos), "expected ',' or ')' in %s(...)", attr)
			}
			p.pos++
			for p.pos < len(p.s) && p.s[p.pos] == ' ' {
				p.pos++
			}
		}
		off := p.pos
		f := p.name()
		idx := -1
		for i, n := range names {
			if n == f {
				idx = i
			}
		}
		if idx < 0 || p.pos >= len(p.s) || p.s[p.pos] != '=' {
			return p.errAt(off, p.tokenAround(off), "unknown field of %s(...)", attr)
		}
		if seen&(1<<idx) != 0 {
			return p.errAt(off, f, "field given twice in %s(...)", attr)
		}
		seen |= 1 << idx
		p.pos++ // '='
		if err := fn(f, p.pos); err != nil {
			return err
		}
	}
}

// value consumes a field value, up to ',' or ')', and splits it at '/'.
func (p *parser) value() (v, m string, hasMask bool, off int) {
	off = p.pos
	for p.pos < len(p.s) && p.s[p.pos] != ',' && p.s[p.pos] != ')' {
		p.pos++
	}
	tok := p.s[off:p.pos]
	if i := strings.IndexByte(tok, '/'); i >= 0 {
		return tok[:i], tok[i+1:], true, off
	}
	return tok, "", false, off
}

// valueNum consumes a numeric field value with an optional /mask, both at
// most bits wide; a value without a mask gets mask full.
func (p *parser) valueNum(off int, bits uint, full uint64) (uint64, uint64, error) {
	vs, ms, hasMask, off := p.value()
	v, err := p.number(vs, off, bits)
	if err != nil {
		return 0, 0, err
	}
	if !hasMask {
		return v, full, nil
	}
	m, err := p.number(ms, off+len(vs)+1, bits)
	return v, m, err
}

func (p *parser) field16(off int, v, m *uint16) error {
	x, mx, err := p.valueNum(off, 16, 0xffff)
	*v, *m = uint16(x), uint16(mx)
	return err
}

// numMask parses "value[/mask]" from a whole token.
func (p *parser) numMask(tok string, off int, bits uint, full uint64) (uint64, uint64, error) {
	vs, ms, hasMask := tok, "", false
	if i := strings.IndexByte(tok, '/'); i >= 0 {
		vs, ms, hasMask = tok[:i], tok[i+1:], true
	}
	v, err := p.number(vs, off, bits)
	if err != nil || !hasMask {
		return v, full, err
	}
	m, err := p.number(ms, off+len(vs)+1, bits)
	return v, m, err
}

// number parses an unsigned integer as C's %i does: 0x for hex, a leading 0
// for octal, else decimal; no sign, no spaces.
func (p *parser) number(s string, off int, bits uint) (uint64, error) {
	base, digits := 10, s
	switch {
	case len(s) > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X'):
		base, digits = 16, s[2:]
	case len(s) > 1 && s[0] == '0':
		base, digits = 8, s[1:]
	}
	if digits == "" {
		return 0, p.errAt(off, s, "expected a number")
	}
	for i := 0; i < len(digits); i++ {
		c := digits[i]
		ok := c >= '0' && c <= '7' || base != 8 && (c == '8' || c == '9') ||
			base == 16 && (c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F')
		if !ok {
			return 0, p.errAt(off, s, "expected a number")
		}
	}
	v, err := strconv.ParseUint(digits, base, int(bits))
	if err != nil {
		return 0, p.errAt(off, s, "number does not fit in %d bits", bits)
	}
	return v, nil
}

// flagsValue parses a flag set as OVS prints it: "a|b" or "0" (exact, mask
// exact), "+a-b" (the named bits matched), or a number with optional mask.
func (p *parser) flagsValue(tok string, off int, fs *flagSet, exact uint32, bits uint) (uint32, uint32, error) {
	if tok == "" {
		return 0, 0, p.errAt(off, tok, "empty flags")
	}
	if c := tok[0]; c >= '0' && c <= '9' {
		v, m, err := p.numMask(tok, off, bits, uint64(exact))
		return uint32(v), uint32(m), err
	}
	lookup := func(name string, noff int) (uint32, error) {
		if bit := fs.bit(name); bit != 0 {
			return bit, nil
		}
		if strings.HasPrefix(name, "0x") {
			v, err := p.number(name, noff, bits)
			return uint32(v), err
		}
		return 0, p.errAt(noff, name, "unknown flag")
	}
	if c := tok[0]; c == '+' || c == '-' {
		var v, m uint32
		for i := 0; i < len(tok); {
			set := tok[i] == '+'
			if tok[i] != '+' && tok[i] != '-' {
				return 0, 0, p.errAt(off+i, tok[i:], "expected + or - before a flag")
			}
			j := i + 1
			for j < len(tok) && tok[j] != '+' && tok[j] != '-' {
				j++
			}
			bit, err := lookup(tok[i+1:j], off+i+1)
			if err != nil {
				return 0, 0, err
			}
			m |= bit
			if set {
				v |= bit
			}
			i = j
		}
		return v, m, nil
	}
	var v uint32
	for i := 0; i <= len(tok); {
		j := strings.IndexByte(tok[i:], '|')
		if j < 0 {
			j = len(tok) - i
		}
		bit, err := lookup(tok[i:i+j], off+i)
		if err != nil {
			return 0, 0, err
		}
		v |= bit
		i += j + 1
	}
	return v, exact, nil
}

// label parses a ct_label value: a 128-bit number in hex (or a decimal that
// fits 64 bits), with an optional mask.
func (p *parser) label(tok string, off int) error {
	vs, ms, hasMask := tok, "", false
	if i := strings.IndexByte(tok, '/'); i >= 0 {
		vs, ms, hasMask = tok[:i], tok[i+1:], true
	}
	if err := p.u128(vs, off, &p.k.CtLabels); err != nil {
		return err
	}
	if !hasMask {
		p.m.CtLabels = allOnes16
		return nil
	}
	return p.u128(ms, off+len(vs)+1, &p.m.CtLabels)
}

func (p *parser) u128(s string, off int, out *[16]byte) error {
	*out = [16]byte{}
	if len(s) > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X') {
		h := s[2:]
		if len(h) > 32 {
			return p.errAt(off, s, "more than 128 bits")
		}
		for i := 0; i < len(h); i++ {
			c := h[len(h)-1-i]
			var d byte
			switch {
			case c >= '0' && c <= '9':
				d = c - '0'
			case c >= 'a' && c <= 'f':
				d = c - 'a' + 10
			case c >= 'A' && c <= 'F':
				d = c - 'A' + 10
			default:
				return p.errAt(off, s, "expected a hex number")
			}
			out[i/2] |= d << (4 * (i % 2))
		}
		return nil
	}
	v, err := p.number(s, off, 64)
	if err != nil {
		return err
	}
	binary.LittleEndian.PutUint64(out[:8], v)
	return nil
}

func (p *parser) inPort() error {
	tok, off, err := p.inner()
	if err != nil {
		return err
	}
	if tok != "" && tok[0] >= '0' && tok[0] <= '9' {
		v, m, err := p.numMask(tok, off, 32, 0xffffffff)
		p.k.InPort, p.m.InPort = uint32(v), uint32(m)
		return err
	}
	n, ok := p.ports[tok]
	if !ok {
		return p.errAt(off, tok, "unknown port name (give ParseWithPorts a map, or use ovs-dpctl --no-names)")
	}
	p.k.InPort, p.m.InPort = n, 0xffffffff
	return nil
}

func (p *parser) macField(off int, v, m *[6]byte) error {
	vs, ms, hasMask, off := p.value()
	if !parseMAC(vs, v) {
		return p.errAt(off, vs, "expected an Ethernet address")
	}
	if !hasMask {
		*m = allOnes6
		return nil
	}
	if !parseMAC(ms, m) {
		return p.errAt(off+len(vs)+1, ms, "expected an Ethernet address mask")
	}
	return nil
}

// parseMAC parses six groups of one or two hex digits separated by ':'.
func parseMAC(s string, out *[6]byte) bool {
	var a [6]byte
	if !parseGroups(s, a[:], ':', 16, 2) {
		return false
	}
	*out = a
	return true
}

// parseGroups parses len(out) numbers in base, each of 1 to maxDigits
// digits and fitting a byte, separated by sep, with nothing left over.
func parseGroups(s string, out []byte, sep byte, base, maxDigits int) bool {
	for i := range out {
		n := 0
		for n < len(s) && n <= maxDigits && s[n] != sep {
			n++
		}
		if n == 0 || n > maxDigits {
			return false
		}
		v, err := strconv.ParseUint(s[:n], base, 8)
		if err != nil {
			return false
		}
		out[i] = byte(v)
		s = s[n:]
		if i < len(out)-1 {
			if s == "" || s[0] != sep {
				return false
			}
			s = s[1:]
		}
	}
	return s == ""
}

func (p *parser) ipv4Field(off int, v, m *[4]byte) error {
	vs, ms, hasMask, off := p.value()
	if !parseIPv4(vs, v) {
		return p.errAt(off, vs, "expected an IPv4 address")
	}
	if !hasMask {
		*m = allOnes4
		return nil
	}
	if parseIPv4(ms, m) {
		return nil
	}
	if n, err := strconv.ParseUint(ms, 10, 8); err == nil && n <= 32 {
		binary.BigEndian.PutUint32(m[:], prefixMask32(int(n)))
		return nil
	}
	return p.errAt(off+len(vs)+1, ms, "expected an IPv4 mask")
}

func prefixMask32(n int) uint32 {
	if n == 0 {
		return 0
	}
	return ^uint32(0) << (32 - n)
}

// parseIPv4 parses four decimal octets separated by dots.
func parseIPv4(s string, out *[4]byte) bool {
	var a [4]byte
	if !parseGroups(s, a[:], '.', 10, 3) {
		return false
	}
	*out = a
	return true
}

func (p *parser) ipv6Field(off int, v, m *[16]byte) error {
	vs, ms, hasMask, off := p.value()
	if !parseIPv6(vs, v) {
		return p.errAt(off, vs, "expected an IPv6 address")
	}
	if !hasMask {
		*m = allOnes16
		return nil
	}
	if parseIPv6(ms, m) {
		return nil
	}
	if n, err := strconv.ParseUint(ms, 10, 8); err == nil && n <= 128 {
		*m = [16]byte{}
		for i := 0; i < int(n); i++ {
			m[i/8] |= 0x80 >> (i % 8)
		}
		return nil
	}
	return p.errAt(off+len(vs)+1, ms, "expected an IPv6 mask")
}

func parseIPv6(s string, out *[16]byte) bool {
	if !strings.Contains(s, ":") {
		return false
	}
	a, err := netip.ParseAddr(s)
	if err != nil || a.Zone() != "" || !a.Is6() {
		return false
	}
	*out = a.As16()
	return true
}

var tunnelFields = [...]string{"tun_id", "src", "dst", "ipv6_src", "ipv6_dst", "tos", "ttl", "tp_src", "tp_dst", "flags"}

func (p *parser) tunnel() error {
	t, mt := &p.k.Tunnel, &p.m.Tunnel
	var seen uint32
	for first := true; ; first = false {
		if p.pos < len(p.s) && p.s[p.pos] == ')' {
			p.pos++
			return nil
		}
		if !first {
			if p.pos >= len(p.s) || p.s[p.pos] != ',' {
				return p.errAt(p.pos, p.tokenAround(p.pos), "expected ',' or ')' in tunnel(...)")
			}
			p.pos++
		}
		off := p.pos
		f := p.name()
		if p.pos >= len(p.s) || (p.s[p.pos] != '=' && p.s[p.pos] != '(') {
			return p.errAt(off, p.tokenAround(off), "unknown field of tunnel(...)")
		}
		nested := p.s[p.pos] == '('
		p.pos++
		for i, n := range tunnelFields {
			if n != f {
				continue
			}
			if seen&(1<<i) != 0 {
				return p.errAt(off, f, "field given twice in tunnel(...)")
			}
			seen |= 1 << i
		}
		var err error
		switch {
		case nested && f == "flags":
			var tok string
			var toff int
			if tok, toff, err = p.inner(); err == nil {
				var v, m uint32
				v, m, err = p.flagsValue(tok, toff, &tunnelFlags, tunnelFlagsWidth, 16)
				t.Flags, mt.Flags = uint16(v), uint16(m)
			}
		case nested && (f == "vxlan" || f == "geneve" || f == "erspan" || f == "gtpu"):
			return p.unsupported(off, f+"(", "tunnel options")
		case nested:
			return p.errAt(off, f+"(", "unknown field of tunnel(...)")
		case f == "tun_id":
			var v, m uint64
			v, m, err = p.valueNum(p.pos, 64, ^uint64(0))
			t.ID, mt.ID = v, m
		case f == "src":
			err = p.ipv4Field(p.pos, &t.IPv4Src, &mt.IPv4Src)
		case f == "dst":
			err = p.ipv4Field(p.pos, &t.IPv4Dst, &mt.IPv4Dst)
		case f == "ipv6_src":
			err = p.ipv6Field(p.pos, &t.IPv6Src, &mt.IPv6Src)
		case f == "ipv6_dst":
			err = p.ipv6Field(p.pos, &t.IPv6Dst, &mt.IPv6Dst)
		case f == "tos":
			err = p.field8(&t.TOS, &mt.TOS)
		case f == "ttl":
			err = p.field8(&t.TTL, &mt.TTL)
		case f == "tp_src":
			err = p.field16(p.pos, &t.TpSrc, &mt.TpSrc)
		case f == "tp_dst":
			err = p.field16(p.pos, &t.TpDst, &mt.TpDst)
		default:
			return p.errAt(off, f, "unknown field of tunnel(...)")
		}
		if err != nil {
			return err
		}
	}
}

func (p *parser) field8(v, m *uint8) error {
	x, mx, err := p.valueNum(p.pos, 8, 0xff)
	*v, *m = uint8(x), uint8(mx)
	return err
}

func (p *parser) fragField(off int) error {
	vs, _, hasMask, voff := p.value()
	if hasMask {
		return p.errAt(voff, p.s[voff:p.pos], "frag takes no mask")
	}
	switch vs {
	case "no":
		p.k.NwFrag = 0
	case "first":
		p.k.NwFrag = FragAny
	case "later":
		p.k.NwFrag = FragAny | FragLater
	default:
		return p.errAt(off, vs, "frag must be no, first or later")
	}
	p.m.NwFrag = FragAny | FragLater
	return nil
}

func (p *parser) l3(name string) error {
	k, m := &p.k, &p.m
	switch name {
	case "ipv4":
		return p.fields(name, func(f string, off int) error {
			switch f {
			case "src":
				return p.ipv4Field(off, &k.IPv4Src, &m.IPv4Src)
			case "dst":
				return p.ipv4Field(off, &k.IPv4Dst, &m.IPv4Dst)
			case "proto":
				return p.field8(&k.NwProto, &m.NwProto)
			case "tos":
				return p.field8(&k.NwTos, &m.NwTos)
			case "ttl":
				return p.field8(&k.NwTTL, &m.NwTTL)
			default:
				return p.fragField(off)
			}
		}, "src", "dst", "proto", "tos", "ttl", "frag")
	case "ipv6":
		return p.fields(name, func(f string, off int) error {
			switch f {
			case "src":
				return p.ipv6Field(off, &k.IPv6Src, &m.IPv6Src)
			case "dst":
				return p.ipv6Field(off, &k.IPv6Dst, &m.IPv6Dst)
			case "label":
				v, mv, err := p.valueNum(off, 32, ipv6LabelWidth)
				if err == nil && v > ipv6LabelWidth {
					err = p.errAt(off, strconv.FormatUint(v, 10), "flow label wider than 20 bits")
				}
				k.IPv6Label, m.IPv6Label = uint32(v), uint32(mv)&ipv6LabelWidth
				return err
			case "proto":
				return p.field8(&k.NwProto, &m.NwProto)
			case "tclass":
				return p.field8(&k.NwTos, &m.NwTos)
			case "hlimit":
				return p.field8(&k.NwTTL, &m.NwTTL)
			default:
				return p.fragField(off)
			}
		}, "src", "dst", "label", "proto", "tclass", "hlimit", "frag")
	default: // arp
		return p.fields(name, func(f string, off int) error {
			switch f {
			case "sip":
				return p.ipv4Field(off, &k.IPv4Src, &m.IPv4Src)
			case "tip":
				return p.ipv4Field(off, &k.IPv4Dst, &m.IPv4Dst)
			case "op":
				v, mv, err := p.valueNum(off, 16, 0xffff)
				if err == nil && v > 0xff {
					err = p.errAt(off, strconv.FormatUint(v, 10), "ARP opcode above 255 (the datapath keeps 8 bits)")
				}
				k.NwProto, m.NwProto = uint8(v), uint8(mv)
				return err
			case "sha":
				return p.macField(off, &k.ArpSHA, &m.ArpSHA)
			default:
				return p.macField(off, &k.ArpTHA, &m.ArpTHA)
			}
		}, "sip", "tip", "op", "sha", "tha")
	}
}

func (p *parser) mpls() error {
	var lse, mask uint32
	err := p.fields("mpls", func(f string, off int) error {
		var bits, shift uint
		switch f {
		case "label":
			bits, shift = 20, mplsLabelShift
		case "tc":
			bits, shift = 3, mplsTCShift
		case "ttl":
			bits, shift = 8, 0
		case "bos":
			bits, shift = 1, mplsBoSShift
		}
		v, mv, err := p.valueNum(off, 32, 1<<bits-1)
		if err != nil {
			return err
		}
		if v>>bits != 0 || mv>>bits != 0 {
			return p.errAt(off, f, "value or mask wider than %d bits", bits)
		}
		fm := uint32(1<<bits-1) << shift
		lse = lse&^fm | uint32(v)<<shift
		mask = mask&^fm | uint32(mv)<<shift
		return nil
	}, "label", "tc", "ttl", "bos")
	if err != nil {
		var pe *ParseError
		if errors.As(err, &pe) && strings.HasPrefix(pe.Msg, "field given twice") {
			return p.unsupported(pe.Offset, pe.Token, "a second MPLS label stack entry")
		}
		return err
	}
	p.k.MPLSLSE, p.m.MPLSLSE = lse, mask
	return nil
}

// nsh parses nsh(flags=..,ttl=..,mdtype=..,np=..,spi=..,si=..,c1=..,...).
// A full spi mask may be written as 0xffffffff, as ovs-dpctl prints it.
func (p *parser) nsh() error {
	k, m := &p.k.NSH, &p.m.NSH
	return p.fields("nsh", func(f string, off int) error {
		switch f {
		case "flags":
			return p.field8(&k.Flags, &m.Flags)
		case "ttl":
			return p.field8(&k.TTL, &m.TTL)
		case "mdtype":
			return p.field8(&k.MDType, &m.MDType)
		case "np":
			return p.field8(&k.NP, &m.NP)
		case "si":
			return p.field8(&k.SI, &m.SI)
		case "spi":
			v, mv, err := p.valueNum(off, 32, uint64(NSHSPIMask))
			if err != nil {
				return err
			}
			if mv == 0xffffffff {
				mv = uint64(NSHSPIMask)
			}
			if v > uint64(NSHSPIMask) || mv > uint64(NSHSPIMask) {
				return p.errAt(off, f, "value or mask wider than 24 bits")
			}
			k.SPI, m.SPI = uint32(v)&uint32(mv), uint32(mv)
			return nil
		default:
			i := f[1] - '1'
			v, mv, err := p.valueNum(off, 32, 0xffffffff)
			k.C[i], m.C[i] = uint32(v&mv), uint32(mv)
			return err
		}
	}, "flags", "ttl", "mdtype", "np", "spi", "si", "c1", "c2", "c3", "c4")
}

// wildcardOnly accepts an attribute a Key cannot hold when every field in
// it carries an all-zero mask, as ovs-dpctl -m prints unmatched attributes.
func (p *parser) wildcardOnly(name string, off int) error {
	tok, _, err := p.inner()
	if err != nil {
		return err
	}
	if tok == "" {
		return nil
	}
	for rest := tok; rest != ""; {
		var f string
		f, rest, _ = strings.Cut(rest, ",")
		eq := strings.IndexByte(f, '=')
		slash := strings.LastIndexByte(f, '/')
		if eq < 0 || slash < eq || !zeroMask(f[slash+1:]) {
			return p.unsupported(off, name+"("+tok+")", name+" matches")
		}
	}
	return nil
}

// isGenericAttr reports whether name is OVS's name for an attribute type it
// does not know, "key" and a decimal number: ovs-dpctl 3.1 prints the
// kernel's OVS_KEY_ATTR_IPV6_EXTHDRS (32) as key32(...).
func isGenericAttr(name string) bool {
	if len(name) < 4 || len(name) > 5 || name[:3] != "key" {
		return false
	}
	for i := 3; i < len(name); i++ {
		if name[i] < '0' || name[i] > '9' {
			return false
		}
	}
	return true
}

// genericAttr accepts an attribute printed as raw bytes, "key32(00 00/00
// 00)", when its mask is all zero; a Key has nowhere to keep a match on it.
func (p *parser) genericAttr(name string, off int) error {
	tok, toff, err := p.inner()
	if err != nil {
		return err
	}
	v, m, ok := strings.Cut(tok, "/")
	if !hexBytes(v) || (ok && !hexBytes(m)) {
		return p.errAt(toff, tok, "expected hex bytes like 00 00/00 00")
	}
	if !ok || strings.Trim(m, "0 ") != "" {
		return p.unsupported(off, name+"("+tok+")", "a match on attribute "+name[3:])
	}
	return nil
}

// hexBytes reports whether s is space-separated pairs of hex digits.
func hexBytes(s string) bool {
	if s == "" {
		return false
	}
	for {
		if len(s) < 2 || !isHex(s[0]) || !isHex(s[1]) {
			return false
		}
		s = s[2:]
		if s == "" {
			return true
		}
		if s[0] != ' ' {
			return false
		}
		s = s[1:]
	}
}

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

// zeroMask reports whether s is an all-zero number or address.
func zeroMask(s string) bool {
	if s == "" {
		return false
	}
	s = strings.TrimPrefix(s, "0x")
	for i := 0; i < len(s); i++ {
		if c := s[i]; c != '0' && c != ':' && c != '.' {
			return false
		}
	}
	return true
}

// finish resolves where each eth_type belongs and applies the kernel's
// implicit VLAN matches.
func (p *parser) finish() error {
	deepest := 0
	for deepest < len(p.k.VLANs) && p.vlanAt[deepest] {
		deepest++
	}
	for level := 0; level <= len(p.k.VLANs); level++ {
		et := &p.ethType[level]
		if level < len(p.k.VLANs) && p.vlanAt[level] {
			if et.set {
				p.k.VLANs[level].TPID, p.m.VLANs[level].TPID = et.v, et.m
			}
			continue
		}
		if !et.set {
			continue
		}
		if level != deepest {
			return p.errAt(et.off, "eth_type", "eth_type at a level without vlan(...) above another tag")
		}
		p.k.EthType, p.m.EthType = et.v, et.m
		if et.v == 0 && et.m == 0xffff {
			// OVS's way of printing a key without an ethertype: an 802.3
			// frame.
			p.k.EthType = EthTypeNone
		}
	}
	if p.l3At >= 0 && p.l3At < len(p.k.VLANs) && p.vlanAt[p.l3At] {
		return p.errAt(p.l3Off, p.tokenAround(p.l3Off), "L3/L4 attribute next to vlan(...) instead of inside encap(...)")
	}
	if p.sawEth {
		for level := range p.k.VLANs {
			if !p.vlanAt[level] {
				p.k.VLANs[level].TCI, p.m.VLANs[level].TCI = 0, 0xffff
			}
		}
	}
	return nil
}

// DumpFlow is one line of `ovs-dpctl dump-flows` output, with or without -m:
//
//	[ufid:UUID, ]KEY, packets:N, bytes:N, used:never|S.SSSs[, flags:F][, offloaded:X][, dp:X], actions:ACTIONS
type DumpFlow struct {
	UFID    [16]byte // the flow's UFID in the byte order of its UUID text; valid if HasUFID
	HasUFID bool
	Key     Key
	Mask    Mask
	Packets uint64
	Bytes   uint64
	// Used is how long before the dump the flow last matched a packet, to
	// the millisecond; UsedNever is true (and Used zero) for "used:never".
	Used      time.Duration
	UsedNever bool
	// TCPFlags is the flags: field as printed (tcpdump style, e.g. "S."),
	// empty when absent.
	TCPFlags string
	// Offloaded and DP are the -m fields offloaded: and dp:, empty when absent.
	Offloaded string
	DP        string
	// Actions is the text after "actions:", not parsed (the caller owns
	// action syntax), without any trailing ", dp-extra-info:..." part.
	Actions string
}

// ParseDumpLine parses one line of ovs-dpctl dump-flows output: the key and
// mask as ParseWithPorts does (ports may be nil), and the statistics and
// actions that follow. Leading and trailing white space is ignored.
func ParseDumpLine(line string, ports map[string]uint32) (DumpFlow, error) {
	var d DumpFlow
	pos := len(line) - len(strings.TrimLeft(line, " \t\r\n"))
	end := len(strings.TrimRight(line, " \t\r\n"))
	if end < pos {
		end = pos
	}
	if strings.HasPrefix(line[pos:end], "ufid:") {
		n := strings.IndexAny(line[pos:end], ", ")
		if n < 0 {
			n = end - pos
		}
		if !parseUUID(line[pos+5:pos+n], &d.UFID) {
			return DumpFlow{}, &ParseError{Offset: pos, Token: line[pos : pos+n], Msg: "bad UFID"}
		}
		d.HasUFID = true
		pos += n
		for pos < end && (line[pos] == ',' || line[pos] == ' ') {
			pos++
		}
	}
	i := strings.Index(line[pos:end], ", packets:")
	if i < 0 {
		return DumpFlow{}, &ParseError{Offset: pos, Token: truncate(line[pos:end]), Msg: "no \", packets:\" after the flow key"}
	}
	k, m, err := ParseWithPorts(line[pos:pos+i], ports)
	if err != nil {
		var pe *ParseError
		if errors.As(err, &pe) {
			pe.Offset += pos
		}
		return DumpFlow{}, err
	}
	d.Key, d.Mask = k, m
	pos += i + 2
	stats := pos
	for pos < end {
		rest := line[pos:end]
		if a, ok := strings.CutPrefix(rest, "actions:"); ok {
			if j := strings.Index(a, ", dp-extra-info:"); j >= 0 {
				a = a[:j]
			}
			d.Actions = a
			return d, nil
		}
		item, _, _ := strings.Cut(rest, ", ")
		name, val, ok := strings.Cut(item, ":")
		if !ok {
			return DumpFlow{}, &ParseError{Offset: pos, Token: item, Msg: "expected name:value"}
		}
		switch name {
		case "packets", "bytes":
			n, err := strconv.ParseUint(val, 10, 64)
			if err != nil {
				return DumpFlow{}, &ParseError{Offset: pos, Token: item, Msg: "bad counter"}
			}
			if name == "packets" {
				d.Packets = n
			} else {
				d.Bytes = n
			}
		case "used":
			if val == "never" {
				d.UsedNever = true
				break
			}
			sec, ok := strings.CutSuffix(val, "s")
			f, err := strconv.ParseFloat(sec, 64)
			if !ok || err != nil || !(f >= 0 && f <= 1e9) {
				return DumpFlow{}, &ParseError{Offset: pos, Token: item, Msg: "used: wants never or seconds like 0.512s"}
			}
			d.Used = time.Duration(f*1000+0.5) * time.Millisecond
		case "flags":
			d.TCPFlags = val
		case "offloaded":
			d.Offloaded = val
		case "dp":
			d.DP = val
		default:
			return DumpFlow{}, &ParseError{Offset: pos, Token: item, Msg: "unknown statistic"}
		}
		pos += len(item) + 2
	}
	return DumpFlow{}, &ParseError{Offset: stats, Token: truncate(line[stats:end]), Msg: "no actions: field"}
}

func truncate(s string) string {
	if len(s) > 40 {
		return s[:40] + "..."
	}
	return s
}

// parseUUID parses the 8-4-4-4-12 hex form OVS prints a UFID in.
func parseUUID(s string, out *[16]byte) bool {
	if len(s) != 36 {
		return false
	}
	j := 0
	for i := 0; i < len(s); {
		if i == 8 || i == 13 || i == 18 || i == 23 {
			if s[i] != '-' {
				return false
			}
			i++
			continue
		}
		v, err := strconv.ParseUint(s[i:i+2], 16, 8)
		if err != nil {
			return false
		}
		out[j] = byte(v)
		j++
		i += 2
	}
	return true
}
