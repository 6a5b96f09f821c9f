package flow

import (
	"encoding/binary"
	"strconv"
)

// String returns k in ovs-dpctl's syntax as an exact key: every field that
// is relevant to k's protocol stack prints, with its value. Metadata fields
// other than in_port print only when non-zero, as do tunnel fields (a
// tunnel prints when k.Tunnel is not the zero Tunnel). Parse(k.String())
// returns k, and the mask of the fields printed.
func (k Key) String() string {
	m := stackMask(&k)
	return string(AppendFormat(make([]byte, 0, 256), &k, &m))
}

// Format returns the megaflow (k, m) in the syntax ovs-dpctl dump-flows
// prints for kernel flows: wholly wildcarded attributes are omitted, exact
// fields print plain and partially masked fields as value/mask. The result
// is the text of the masked key k.Apply(m); Format does not modify k or m.
//
// The syntax is that of ovs-dpctl 3.1 for kernel flows (lib/odp-util.c, format_odp_key_attr and odp_flow_format), e.g.
//
//	recirc_id(0),in_port(1),eth(src=52:54:00:00:00:01,dst=52:54:00:00:00:02),
//	eth_type(0x0800),ipv4(src=10.0.0.1,dst=10.0.0.2,proto=6,tos=0,ttl=64,frag=no),
//	tcp(src=40000,dst=80),tcp_flags(syn)
//
// (one line; wrapped here). Attributes come in the order the kernel emits
// them (recirc_id, dp_hash, skb_priority, tunnel, in_port, skb_mark, ct_*,
// eth, vlan/encap, eth_type, L3, L4, tcp_flags, nd), fields within an
// attribute in OVS's order, numbers in OVS's radix for each field.
//
// # What gets printed
//
// The datapath's netlink key can say "this header is present but every bit
// of it is wildcarded"; a Key and Mask cannot. Format therefore decides which
// attributes exist the way OVS and the kernel decide what goes into an ODP
// key, from the masked key k&m, and then prints, as ovs-dpctl does without -m,
// only attributes with at least one matched bit:
//
//   - metadata attributes print when their mask is non-zero; tunnel(...) when
//     any tunnel field is matched;
//   - eth(...) prints when any L2 field (addresses, VLANs, ethertype) is
//     matched, as "eth()" if the addresses are wildcarded;
//   - VLAN level i (0 outer, 1 inner) exists when the masked VLANs[i] has a
//     TPID or the VLANPresent bit: it prints as eth_type(TPID),vlan(...),
//     encap(...), the rest of the key nested inside encap;
//   - the L3 attribute is chosen by the masked EthType: ipv4, ipv6, arp (ARP
//     and RARP) or mpls;
//   - the L4 attribute is chosen by the masked NwProto, for IPv4 and IPv6
//     packets that are not later fragments (masked NwFrag without
//     FragLater): tcp plus tcp_flags, udp, sctp, icmp (IPv4 only), icmpv6
//     (IPv6 only) plus nd when the masked ICMPv6 type is 135 or 136.
//
// Within an attribute a field with a zero mask is omitted, a field whose mask
// covers its whole width prints its value, any other prints value/mask.
//
// # Field widths
//
// Some Key fields are wider than what the datapath carries; only these bits
// are printed and Parse sets only these bits in a Mask: ICMP type and code
// (TpSrc, TpDst) 8 bits; the ARP opcode (NwProto) 8 bits, which the 16-bit
// attribute always shows with its mask, "op=1/0xff", as the kernel reports
// it; TCPFlags 12 bits
// (0x0fff); IPv6Label 20 bits; Tunnel.Flags 4 bits; NwFrag 2 bits, where the
// ODP text can only say "matched" (FragAny set in the mask, printed as
// frag=no/first/later) or "wildcarded". CtState prints as flag names: with a
// mask of all 32 bits as "new|trk", otherwise as "+new-est..." listing the
// masked bits of the low 8 (the kernel reports ct_state masks of at most
// 0xff). A masked VLAN TCI prints vid and pcp, and "cfi=0" when the
// VLANPresent bit is clear in the value.
//
// A pair (k, m) is representable, that is Parse(Format(k, m)) returns exactly
// (k.Apply(m), m), when its mask stays within those widths and names a
// protocol stack consistently: L3 fields are masked only for the L3 protocol
// the masked EthType names, and so on; tagged VLAN levels have VLANPresent
// set in both value and mask and an exact TPID mask; untagged levels have a
// zero TPID mask and, whenever any L2 field is matched, an exact TCI mask
// (the kernel always matches TCI, so the text means "no tag" by omission,
// see Parse); frag is matched with mask 0 or FragAny|FragLater; CtState
// masks are 0xffffffff or within 0xff. The Regs and OFMetadata fields never
// reach the datapath and never print.
//
// # Dumped text is not always installable text
//
// Format prints what the kernel dumps, as ovs-dpctl does, and like
// ovs-dpctl's output the text cannot always be fed back to ovs-dpctl
// add-flow: the kernel requires the L4 attribute (and tcp_flags for TCP)
// whenever the IP protocol is matched exactly and the packet is not a later
// fragment, which Format omits when those fields are wildcarded; and OVS's
// parser turns "eth_type(0/0xffff)" into a key with ethertype 0, which the
// kernel rejects. Code that installs flows builds netlink attributes, not
// text, and is not affected.
func Format(k *Key, m *Mask) string {
	return string(AppendFormat(make([]byte, 0, 256), k, m))
}

// AppendFormat appends the text Format returns to b and returns the extended
// slice; b's contents before len(b) are untouched and the result aliases b
// when b has room. It allocates only when b lacks capacity (about 400 bytes suffice
// for any flow), so logs and dumps can reuse one buffer.
func AppendFormat(b []byte, k *Key, m *Mask) []byte {
	v := k.Apply(m)
	f := formatter{b: b, start: len(b)}
	f.metadata(&v, m, k.EthType)
	if k.L3 {
		// No Ethernet header: the ethertype and what follows, as
		// ovs-dpctl prints a packet of a legacy_l3 port.
		f.ethType(k.EthType, 0xffff)
		f.l3(&v, m)
		return f.b
	}
	if l2Matched(m) {
		f.attr("eth")
		f.eth("src", &v.EthSrc, &m.EthSrc)
		f.eth("dst", &v.EthDst, &m.EthDst)
		f.end()
		f.l2Level(&v, m, 0)
	}
	return f.b
}

// formatter appends attributes and their fields. Separators are decided by
// the last byte written: a field or attribute that follows anything but an
// opening parenthesis (or the caller's prefix) is preceded by a comma.
type formatter struct {
	b     []byte
	start int
}

func (f *formatter) sep() {
	if n := len(f.b); n > f.start && f.b[n-1] != '(' {
		f.b = append(f.b, ',')
	}
}

func (f *formatter) attr(name string) {
	f.sep()
	f.b = append(f.b, name...)
	f.b = append(f.b, '(')
}

func (f *formatter) end() { f.b = append(f.b, ')') }

func (f *formatter) field(name string) {
	f.sep()
	f.b = append(f.b, name...)
	f.b = append(f.b, '=')
}

// hexC appends v as C's printf("%#x") does: "0" for zero, else 0x-prefixed
// lower-case hex.
func (f *formatter) hexC(v uint64) {
	if v == 0 {
		f.b = append(f.b, '0')
		return
	}
	f.b = append(f.b, '0', 'x')
	f.b = strconv.AppendUint(f.b, v, 16)
}

func (f *formatter) dec(v uint64) { f.b = strconv.AppendUint(f.b, v, 10) }

// single prints one whole-attribute number in %#x form, with /mask unless
// the mask is full.
func (f *formatter) single(name string, v, m, full uint64) {
	if m == 0 {
		return
	}
	f.attr(name)
	f.hexC(v)
	if m != full {
		f.b = append(f.b, '/')
		f.hexC(m)
	}
	f.end()
}

// num prints a named field: value in decimal (hex=false) or %#x form, and
// /mask in %#x form when the mask is partial. Fields with a zero mask are
// skipped.
func (f *formatter) num(name string, v, m, full uint64, hex bool) {
	if m == 0 {
		return
	}
	f.field(name)
	if hex {
		f.hexC(v)
	} else {
		f.dec(v)
	}
	if m&full != full {
		f.b = append(f.b, '/')
		f.hexC(m)
	}
}

func (f *formatter) ipv4(name string, v, m *[4]byte) {
	if *m == ([4]byte{}) {
		return
	}
	f.field(name)
	f.b = appendIPv4(f.b, v)
	if *m != [4]byte{255, 255, 255, 255} {
		f.b = append(f.b, '/')
		f.b = appendIPv4(f.b, m)
	}
}

func (f *formatter) ipv6(name string, v, m *[16]byte) {
	if *m == ([16]byte{}) {
		return
	}
	f.field(name)
	f.b = appendIPv6(f.b, v)
	if !allOnes(m[:]) {
		f.b = append(f.b, '/')
		f.b = appendIPv6(f.b, m)
	}
}

func (f *formatter) eth(name string, v, m *[6]byte) {
	if *m == ([6]byte{}) {
		return
	}
	f.field(name)
	f.b = appendMAC(f.b, v)
	if !allOnes(m[:]) {
		f.b = append(f.b, '/')
		f.b = appendMAC(f.b, m)
	}
}

// flags prints a flag set: with a mask covering width as names joined by
// '|' ("0" when none, unnamed bits last as one hex number), otherwise as
// +name/-name for each masked bit, as OVS's format_flags and
// format_flags_masked do. Bits come in the order of fs, which is OVS's bit
// order for that set.
func (f *formatter) flags(fs *flagSet, v, m, width uint32) {
	if m&width == width {
		if v == 0 {
			f.b = append(f.b, '0')
			return
		}
		first := true
		for i, bit := range fs.bits {
			if bit == 0 || v&bit == 0 {
				continue
			}
			if !first {
				f.b = append(f.b, '|')
			}
			f.b = append(f.b, fs.names[i]...)
			first = false
		}
		if unknown := v &^ fs.known(); unknown != 0 {
			if !first {
				f.b = append(f.b, '|')
			}
			f.b = append(f.b, '0', 'x')
			f.b = strconv.AppendUint(f.b, uint64(unknown), 16)
		}
		return
	}
	m &= width
	sign := func(bit uint32) {
		if v&bit != 0 {
			f.b = append(f.b, '+')
		} else {
			f.b = append(f.b, '-')
		}
	}
	for i, bit := range fs.bits {
		if bit != 0 && m&bit != 0 {
			sign(bit)
			f.b = append(f.b, fs.names[i]...)
		}
	}
	unknown := m &^ fs.known()
	for bit := uint32(1); bit != 0 && bit <= unknown; bit <<= 1 {
		if unknown&bit != 0 {
			sign(bit)
			f.b = append(f.b, '0', 'x')
			f.b = strconv.AppendUint(f.b, uint64(bit), 16)
		}
	}
}

// flagSet names the bits of a flag field, listed in the order OVS prints
// them (its own bit order, which for tunnel flags differs from ours).
type flagSet struct {
	bits  [12]uint32
	names [12]string
}

func (fs *flagSet) known() uint32 {
	var k uint32
	for _, b := range fs.bits {
		k |= b
	}
	return k
}

// bit returns the bit named name, or 0.
func (fs *flagSet) bit(name string) uint32 {
	for i, n := range fs.names {
		if n != "" && n == name {
			return fs.bits[i]
		}
	}
	return 0
}

var (
	ctStateFlags = flagSet{
		bits:  [12]uint32{CtNew, CtEstablished, CtRelated, CtReplyDir, CtInvalid, CtTracked, CtSrcNAT, CtDstNAT},
		names: [12]string{"new", "est", "rel", "rpl", "inv", "trk", "snat", "dnat"},
	}
	tcpFlags = flagSet{
		bits:  [12]uint32{0x1, 0x2, 0x4, 0x8, 0x10, 0x20, 0x40, 0x80, 0x100, 0x200, 0x400, 0x800},
		names: [12]string{"fin", "syn", "rst", "psh", "ack", "urg", "ece", "cwr", "ns", "[200]", "[400]", "[800]"},
	}
	// OVS numbers tunnel flags oam, df, csum, key from bit 0.
	tunnelFlags = flagSet{
		bits:  [12]uint32{uint32(TunnelOAM), uint32(TunnelDontFragment), uint32(TunnelCsum), uint32(TunnelKey)},
		names: [12]string{"oam", "df", "csum", "key"},
	}
)

const (
	tcpFlagsWidth    = 0x0fff
	tunnelFlagsWidth = 0x000f
	ipv6LabelWidth   = 0x000fffff
	ctStateShown     = 0xff // the ct_state bits the kernel knows
)

func (f *formatter) metadata(v *Key, m *Mask, ethType uint16) {
	f.single("recirc_id", uint64(v.RecircID), uint64(m.RecircID), 0xffffffff)
	f.single("dp_hash", uint64(v.DPHash), uint64(m.DPHash), 0xffffffff)
	f.single("skb_priority", uint64(v.Priority), uint64(m.Priority), 0xffffffff)
	if m.Tunnel != (Tunnel{}) {
		f.tunnel(&v.Tunnel, &m.Tunnel)
	}
	if m.InPort != 0 {
		f.attr("in_port")
		f.dec(uint64(v.InPort))
		if m.InPort != 0xffffffff {
			f.b = append(f.b, '/')
			f.hexC(uint64(m.InPort))
		}
		f.end()
	}
	f.single("skb_mark", uint64(v.Mark), uint64(m.Mark), 0xffffffff)
	if m.CtState == 0xffffffff || m.CtState&ctStateShown != 0 {
		mask := m.CtState
		if mask != 0xffffffff {
			mask &= ctStateShown
		}
		f.attr("ct_state")
		f.flags(&ctStateFlags, v.CtState, mask, 0xffffffff)
		f.end()
	}
	f.single("ct_zone", uint64(v.CtZone), uint64(m.CtZone), 0xffff)
	f.single("ct_mark", uint64(v.CtMark), uint64(m.CtMark), 0xffffffff)
	if m.CtLabels != ([16]byte{}) {
		f.attr("ct_label")
		f.b = appendLabel(f.b, &v.CtLabels)
		if !allOnes(m.CtLabels[:]) {
			f.b = append(f.b, '/')
			f.b = appendLabel(f.b, &m.CtLabels)
		}
		f.end()
	}
	f.ctTuple(&v.CtOrig, &m.CtOrig, ethType)
}

// ctTuple prints the original-direction tuple as ovs-dpctl does:
// ct_tuple4(src=..,dst=..,proto=..,tp_src=..,tp_dst=..) for an IPv4 key,
// ct_tuple6(src=..,dst=..,proto=..,src_port=..,dst_port=..) for IPv6.
func (f *formatter) ctTuple(v, m *CtTuple, ethType uint16) {
	if *m == (CtTuple{}) {
		return
	}
	sport, dport := "tp_src", "tp_dst"
	switch ethType {
	case EthTypeIPv4:
		f.attr("ct_tuple4")
		f.ipv4("src", &v.IPv4Src, &m.IPv4Src)
		f.ipv4("dst", &v.IPv4Dst, &m.IPv4Dst)
	case EthTypeIPv6:
		f.attr("ct_tuple6")
		f.ipv6("src", &v.IPv6Src, &m.IPv6Src)
		f.ipv6("dst", &v.IPv6Dst, &m.IPv6Dst)
		sport, dport = "src_port", "dst_port"
	default:
		return // the datapath carries no tuple for other packets
	}
	f.num("proto", uint64(v.Proto), uint64(m.Proto), 0xff, false)
	f.num(sport, uint64(v.TpSrc), uint64(m.TpSrc), 0xffff, false)
	f.num(dport, uint64(v.TpDst), uint64(m.TpDst), 0xffff, false)
	f.end()
}

func (f *formatter) tunnel(v, m *Tunnel) {
	f.attr("tunnel")
	if m.ID != 0 {
		f.field("tun_id")
		f.b = append(f.b, '0', 'x')
		f.b = strconv.AppendUint(f.b, v.ID, 16)
		if m.ID != ^uint64(0) {
			f.b = append(f.b, '/')
			f.hexC(m.ID)
		}
	}
	f.ipv4("src", &v.IPv4Src, &m.IPv4Src)
	f.ipv4("dst", &v.IPv4Dst, &m.IPv4Dst)
	f.ipv6("ipv6_src", &v.IPv6Src, &m.IPv6Src)
	f.ipv6("ipv6_dst", &v.IPv6Dst, &m.IPv6Dst)
	f.num("tos", uint64(v.TOS), uint64(m.TOS), 0xff, true)
	f.num("ttl", uint64(v.TTL), uint64(m.TTL), 0xff, false)
	f.num("tp_src", uint64(v.TpSrc), uint64(m.TpSrc), 0xffff, false)
	f.num("tp_dst", uint64(v.TpDst), uint64(m.TpDst), 0xffff, false)
	f.gbp(v, m, true)    // gbp.go
	f.geneve(v, m)       // tun_metadata.go
	f.erspan(v, m, true) // erspan.go
	if m.Flags&tunnelFlagsWidth != 0 {
		f.sep()
		f.b = append(f.b, "flags("...)
		f.flags(&tunnelFlags, uint32(v.Flags&^TunnelUDPIF), uint32(m.Flags&^TunnelUDPIF), tunnelFlagsWidth)
		f.end()
	}
	f.end()
}

// l2Matched reports whether any Ethernet-level field is matched, which is
// what makes Format print eth(...).
func l2Matched(m *Mask) bool {
	return m.EthSrc != ([6]byte{}) || m.EthDst != ([6]byte{}) || m.EthType != 0 ||
		m.VLANs != ([2]VLAN{})
}

func vlanExists(v *Key, level int) bool {
	return v.VLANs[level].TPID != 0 || v.VLANs[level].TCI&VLANPresent != 0
}

// l2Level prints what follows eth(...) at VLAN nesting level: a tag and an
// encap(...) holding the next level, or the ethertype and the L3 and L4
// attributes.
func (f *formatter) l2Level(v *Key, m *Mask, level int) {
	if level < len(v.VLANs) && vlanExists(v, level) {
		vl, ml := &v.VLANs[level], &m.VLANs[level]
		if ml.TPID != 0 {
			f.ethType(vl.TPID, ml.TPID)
		}
		f.attr("vlan")
		f.vlanTCI(vl.TCI, ml.TCI)
		f.end()
		f.attr("encap")
		f.l2Level(v, m, level+1)
		f.end()
		return
	}
	if m.EthType != 0 {
		if v.EthType == EthTypeNone && m.EthType == 0xffff {
			// An 802.3 frame: the kernel leaves the ethertype out of the
			// key and matches it in the mask, which OVS prints this way.
			f.sep()
			f.b = append(f.b, "eth_type(0/0xffff)"...)
		} else {
			f.ethType(v.EthType, m.EthType)
		}
	}
	f.l3(v, m)
}

func (f *formatter) ethType(v, m uint16) {
	f.attr("eth_type")
	f.b = appendHex4(f.b, v)
	if m != 0xffff {
		f.b = append(f.b, '/')
		f.b = appendHex4(f.b, m)
	}
	f.end()
}

// vlanTCI prints the fields of a TCI as OVS's format_vlan_tci does without
// -m: vid and pcp when matched or non-zero, and cfi=0 for a TCI without the
// VLANPresent bit.
func (f *formatter) vlanTCI(tci, mask uint16) {
	vid, vidm := tci&VLANVIDMask, mask&VLANVIDMask
	if vid != 0 || vidm != 0 {
		f.field("vid")
		f.dec(uint64(vid))
		if vidm != VLANVIDMask {
			f.b = append(f.b, '/', '0', 'x')
			f.b = strconv.AppendUint(f.b, uint64(vidm), 16)
		}
	}
	pcp, pcpm := tci>>13, mask>>13
	if pcp != 0 || pcpm != 0 {
		f.field("pcp")
		f.dec(uint64(pcp))
		if pcpm != 7 {
			f.b = append(f.b, '/', '0', 'x')
			f.b = strconv.AppendUint(f.b, uint64(pcpm), 16)
		}
	}
	if tci&VLANPresent == 0 {
		f.field("cfi")
		f.b = append(f.b, '0')
	}
}

func (f *formatter) frag(v, m uint8) {
	if m&FragAny == 0 {
		return
	}
	f.field("frag")
	switch {
	case v&FragAny == 0:
		f.b = append(f.b, "no"...)
	case v&FragLater != 0:
		f.b = append(f.b, "later"...)
	default:
		f.b = append(f.b, "first"...)
	}
}

func (f *formatter) l3(v *Key, m *Mask) {
	switch v.EthType {
	case EthTypeIPv4:
		if m.IPv4Src != ([4]byte{}) || m.IPv4Dst != ([4]byte{}) || m.NwProto != 0 ||
			m.NwTos != 0 || m.NwTTL != 0 || m.NwFrag&FragAny != 0 {
			f.attr("ipv4")
			f.ipv4("src", &v.IPv4Src, &m.IPv4Src)
			f.ipv4("dst", &v.IPv4Dst, &m.IPv4Dst)
			f.num("proto", uint64(v.NwProto), uint64(m.NwProto), 0xff, false)
			f.num("tos", uint64(v.NwTos), uint64(m.NwTos), 0xff, true)
			f.num("ttl", uint64(v.NwTTL), uint64(m.NwTTL), 0xff, false)
			f.frag(v.NwFrag, m.NwFrag)
			f.end()
		}
		f.l4(v, m)
	case EthTypeIPv6:
		if m.IPv6Src != ([16]byte{}) || m.IPv6Dst != ([16]byte{}) || m.IPv6Label&ipv6LabelWidth != 0 ||
			m.NwProto != 0 || m.NwTos != 0 || m.NwTTL != 0 || m.NwFrag&FragAny != 0 {
			f.attr("ipv6")
			f.ipv6("src", &v.IPv6Src, &m.IPv6Src)
			f.ipv6("dst", &v.IPv6Dst, &m.IPv6Dst)
			if m.IPv6Label&ipv6LabelWidth != 0 {
				f.field("label")
				f.hexC(uint64(v.IPv6Label))
				if m.IPv6Label&ipv6LabelWidth != ipv6LabelWidth {
					f.b = append(f.b, '/')
					f.hexC(uint64(m.IPv6Label))
				}
			}
			f.num("proto", uint64(v.NwProto), uint64(m.NwProto), 0xff, false)
			f.num("tclass", uint64(v.NwTos), uint64(m.NwTos), 0xff, true)
			f.num("hlimit", uint64(v.NwTTL), uint64(m.NwTTL), 0xff, false)
			f.frag(v.NwFrag, m.NwFrag)
			f.end()
		}
		f.l4(v, m)
	case EthTypeARP, EthTypeRARP:
		if m.IPv4Src != ([4]byte{}) || m.IPv4Dst != ([4]byte{}) || m.NwProto != 0 ||
			m.ArpSHA != ([6]byte{}) || m.ArpTHA != ([6]byte{}) {
			f.attr("arp")
			f.ipv4("sip", &v.IPv4Src, &m.IPv4Src)
			f.ipv4("tip", &v.IPv4Dst, &m.IPv4Dst)
			// The attribute's opcode is 16 bits but the kernel keeps 8, so
			// it reports a mask of at most 0x00ff and ovs-dpctl always
			// prints it: "op=1/0xff".
			f.num("op", uint64(v.NwProto), uint64(m.NwProto), 0xffff, false)
			f.eth("sha", &v.ArpSHA, &m.ArpSHA)
			f.eth("tha", &v.ArpTHA, &m.ArpTHA)
			f.end()
		}
	case EthTypeMPLS, EthTypeMPLSM:
		if m.MPLSLSE != 0 {
			f.attr("mpls")
			f.mpls(v.MPLSLSE, m.MPLSLSE)
			f.end()
		}
	case EthTypeNSH:
		if m.NSH != (NSH{}) {
			f.attr("nsh")
			f.nsh(&v.NSH, &m.NSH)
			f.end()
		}
	}
}

// AppendFormatNSH appends the fields of v that m selects in the syntax
// ovs-dpctl prints inside nsh(...), set(nsh(...)) and push_nsh(...)
// (without the parentheses), and returns the extended slice.
func AppendFormatNSH(b []byte, v, m *NSH) []byte {
	f := formatter{b: b, start: len(b)}
	f.nsh(v, m)
	return f.b
}

// nsh appends the fields of an NSH key that m selects, as ovs-dpctl
// prints them: 8-bit fields in decimal when exact and as 0x%02x/0x%02x
// otherwise, spi and c1..c4 in hex with an 8-digit /mask when partial.
func (f *formatter) nsh(v, m *NSH) {
	u8 := func(name string, v, m uint8) {
		if m == 0 {
			return
		}
		f.field(name)
		if m == 0xff {
			f.dec(uint64(v))
			return
		}
		f.b = append(f.b, "0x"...)
		f.b = appendHex2(f.b, v)
		f.b = append(f.b, "/0x"...)
		f.b = appendHex2(f.b, m)
	}
	u32 := func(name string, v, m uint32) {
		if m == 0 {
			return
		}
		f.field(name)
		f.b = append(f.b, "0x"...)
		f.b = strconv.AppendUint(f.b, uint64(v), 16)
		if m != 0xffffffff {
			f.b = append(f.b, "/0x"...)
			for sh := 28; sh >= 0; sh -= 4 {
				f.b = append(f.b, hexDigits[m>>uint(sh)&0xf])
			}
		}
	}
	u8("flags", v.Flags, m.Flags)
	u8("ttl", v.TTL, m.TTL)
	u8("mdtype", v.MDType, m.MDType)
	u8("np", v.NP, m.NP)
	spiMask := m.SPI
	if spiMask == NSHSPIMask {
		spiMask = 0xffffffff
	}
	u32("spi", v.SPI, spiMask)
	u8("si", v.SI, m.SI)
	for i, name := range [4]string{"c1", "c2", "c3", "c4"} {
		u32(name, v.C[i], m.C[i])
	}
}

func appendHex2(b []byte, v uint8) []byte { return append(b, hexDigits[v>>4], hexDigits[v&15]) }

// MPLS label stack entry layout: label(20) tc(3) bos(1) ttl(8).
const (
	mplsLabelShift = 12
	mplsTCShift    = 9
	mplsBoSShift   = 8
)

func (f *formatter) mpls(lse, mask uint32) {
	exact := mask == 0xffffffff
	f.field("label")
	f.dec(uint64(lse >> mplsLabelShift))
	if !exact {
		f.b = append(f.b, "/0x"...)
		f.b = strconv.AppendUint(f.b, uint64(mask>>mplsLabelShift), 16)
	}
	f.field("tc")
	f.dec(uint64(lse >> mplsTCShift & 7))
	if !exact {
		f.b = append(f.b, '/')
		f.b = strconv.AppendUint(f.b, uint64(mask>>mplsTCShift&7), 16)
	}
	f.field("ttl")
	f.dec(uint64(lse & 0xff))
	if !exact {
		f.b = append(f.b, "/0x"...)
		f.b = strconv.AppendUint(f.b, uint64(mask&0xff), 16)
	}
	f.field("bos")
	f.dec(uint64(lse >> mplsBoSShift & 1))
	if !exact {
		f.b = append(f.b, '/')
		f.b = strconv.AppendUint(f.b, uint64(mask>>mplsBoSShift&1), 16)
	}
}

// Neighbor Discovery ICMPv6 types, which carry nd(...).
const (
	icmp6NeighborSolicit = 135
	icmp6NeighborAdvert  = 136
)

func (f *formatter) l4(v *Key, m *Mask) {
	if v.NwFrag&FragLater != 0 {
		return
	}
	ports := func(name string) {
		if m.TpSrc == 0 && m.TpDst == 0 {
			return
		}
		f.attr(name)
		f.num("src", uint64(v.TpSrc), uint64(m.TpSrc), 0xffff, false)
		f.num("dst", uint64(v.TpDst), uint64(m.TpDst), 0xffff, false)
		f.end()
	}
	icmp := func(name string) {
		if uint8(m.TpSrc) == 0 && uint8(m.TpDst) == 0 {
			return
		}
		f.attr(name)
		f.num("type", uint64(uint8(v.TpSrc)), uint64(uint8(m.TpSrc)), 0xff, false)
		f.num("code", uint64(uint8(v.TpDst)), uint64(uint8(m.TpDst)), 0xff, false)
		f.end()
	}
	switch v.NwProto {
	case IPProtoTCP:
		ports("tcp")
		if m.TCPFlags&tcpFlagsWidth != 0 {
			f.attr("tcp_flags")
			f.flags(&tcpFlags, uint32(v.TCPFlags), uint32(m.TCPFlags), tcpFlagsWidth)
			f.end()
		}
	case IPProtoUDP:
		ports("udp")
	case IPProtoSCTP:
		ports("sctp")
	case IPProtoICMP:
		if v.EthType == EthTypeIPv4 {
			icmp("icmp")
		}
	case IPProtoICMPv6:
		if v.EthType != EthTypeIPv6 {
			return
		}
		icmp("icmpv6")
		if t := uint8(v.TpSrc); (t == icmp6NeighborSolicit || t == icmp6NeighborAdvert) &&
			(m.NDTarget != ([16]byte{}) || m.NDSLL != ([6]byte{}) || m.NDTLL != ([6]byte{})) {
			f.attr("nd")
			f.ipv6("target", &v.NDTarget, &m.NDTarget)
			f.eth("sll", &v.NDSLL, &m.NDSLL)
			f.eth("tll", &v.NDTLL, &m.NDTLL)
			f.end()
		}
	}
}

// stackMask returns the exact mask of the fields relevant to k's protocol
// stack, at each field's width (see Format): what String prints.
func stackMask(k *Key) Mask {
	var m Mask
	if k.Tunnel != (Tunnel{}) {
		t, mt := &k.Tunnel, &m.Tunnel
		if t.ID != 0 || t.Flags&TunnelKey != 0 {
			mt.ID = ^uint64(0)
		}
		if t.IPv6Src != ([16]byte{}) || t.IPv6Dst != ([16]byte{}) {
			mt.IPv6Src, mt.IPv6Dst = allOnes16, allOnes16
		} else {
			mt.IPv4Src, mt.IPv4Dst = allOnes4, allOnes4
		}
		if t.TOS != 0 {
			mt.TOS = 0xff
		}
		mt.TTL = 0xff
		if t.TpSrc != 0 {
			mt.TpSrc = 0xffff
		}
		if t.TpDst != 0 {
			mt.TpDst = 0xffff
		}
		mt.Flags = tunnelFlagsWidth
	}
	m.InPort = 0xffffffff
	nonZero32 := func(v uint32) uint32 {
		if v != 0 {
			return 0xffffffff
		}
		return 0
	}
	m.RecircID = nonZero32(k.RecircID)
	m.DPHash = nonZero32(k.DPHash)
	m.Priority = nonZero32(k.Priority)
	m.Mark = nonZero32(k.Mark)
	m.CtState = nonZero32(k.CtState)
	m.CtMark = nonZero32(k.CtMark)
	if k.CtZone != 0 {
		m.CtZone = 0xffff
	}
	if k.CtLabels != ([16]byte{}) {
		m.CtLabels = allOnes16
	}
	if k.CtOrig.Proto != 0 {
		m.CtOrig = CtTuple{IPv4Src: allOnes4, IPv4Dst: allOnes4, IPv6Src: allOnes16, IPv6Dst: allOnes16,
			TpSrc: 0xffff, TpDst: 0xffff, Proto: 0xff}
		if k.EthType == EthTypeIPv4 {
			m.CtOrig.IPv6Src, m.CtOrig.IPv6Dst = [16]byte{}, [16]byte{}
		} else {
			m.CtOrig.IPv4Src, m.CtOrig.IPv4Dst = [4]byte{}, [4]byte{}
		}
	}

	m.EthSrc, m.EthDst = allOnes6, allOnes6
	for i := range k.VLANs {
		m.VLANs[i].TCI = 0xffff
		if k.VLANs[i].TCI != 0 || k.VLANs[i].TPID != 0 {
			m.VLANs[i].TPID = 0xffff
		}
	}
	m.EthType = 0xffff
	switch k.EthType {
	case EthTypeIPv4, EthTypeIPv6:
		if k.EthType == EthTypeIPv4 {
			m.IPv4Src, m.IPv4Dst = allOnes4, allOnes4
		} else {
			m.IPv6Src, m.IPv6Dst = allOnes16, allOnes16
			m.IPv6Label = ipv6LabelWidth
		}
		m.NwProto, m.NwTos, m.NwTTL, m.NwFrag = 0xff, 0xff, 0xff, FragAny|FragLater
		if k.NwFrag&FragLater != 0 {
			break
		}
		switch k.NwProto {
		case IPProtoTCP:
			m.TpSrc, m.TpDst, m.TCPFlags = 0xffff, 0xffff, tcpFlagsWidth
		case IPProtoUDP, IPProtoSCTP:
			m.TpSrc, m.TpDst = 0xffff, 0xffff
		case IPProtoICMP, IPProtoICMPv6:
			if (k.NwProto == IPProtoICMP) != (k.EthType == EthTypeIPv4) {
				break
			}
			m.TpSrc, m.TpDst = 0xff, 0xff
			if t := k.TpSrc; k.NwProto == IPProtoICMPv6 &&
				(t == icmp6NeighborSolicit || t == icmp6NeighborAdvert) {
				m.NDTarget, m.NDSLL, m.NDTLL = allOnes16, allOnes6, allOnes6
			}
		}
	case EthTypeARP, EthTypeRARP:
		m.IPv4Src, m.IPv4Dst = allOnes4, allOnes4
		m.NwProto = 0xff
		m.ArpSHA, m.ArpTHA = allOnes6, allOnes6
	case EthTypeMPLS, EthTypeMPLSM:
		m.MPLSLSE = 0xffffffff
	case EthTypeNSH:
		m.NSH = NSH{Flags: 0xff, TTL: 0xff, MDType: 0xff, NP: 0xff, SPI: NSHSPIMask, SI: 0xff}
		if k.NSH.MDType == NSHMDType1 {
			m.NSH.C = [4]uint32{^uint32(0), ^uint32(0), ^uint32(0), ^uint32(0)}
		}
	}
	return m
}

var (
	allOnes4  = [4]byte{0xff, 0xff, 0xff, 0xff}
	allOnes6  = [6]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}
	allOnes16 = [16]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}
)

func allOnes(b []byte) bool {
	for _, c := range b {
		if c != 0xff {
			return false
		}
	}
	return true
}

const hexDigits = "0123456789abcdef"

func appendHex4(b []byte, v uint16) []byte {
	return append(b, '0', 'x', hexDigits[v>>12], hexDigits[v>>8&0xf], hexDigits[v>>4&0xf], hexDigits[v&0xf])
}

func appendIPv4(b []byte, a *[4]byte) []byte {
	for i, c := range a {
		if i > 0 {
			b = append(b, '.')
		}
		b = strconv.AppendUint(b, uint64(c), 10)
	}
	return b
}

func appendMAC(b []byte, a *[6]byte) []byte {
	for i, c := range a {
		if i > 0 {
			b = append(b, ':')
		}
		b = append(b, hexDigits[c>>4], hexDigits[c&0xf])
	}
	return b
}

// appendIPv6 appends a as glibc's inet_ntop prints it, which is what OVS
// shows: RFC 5952 compression of the first longest run of two or more zero
// groups, and a dotted IPv4 tail for ::a.b.c.d and ::ffff:a.b.c.d forms.
func appendIPv6(b []byte, a *[16]byte) []byte {
	var w [8]uint16
	for i := range w {
		w[i] = binary.BigEndian.Uint16(a[2*i:])
	}
	best, bestLen := -1, 0
	for i := 0; i < 8; {
		if w[i] != 0 {
			i++
			continue
		}
		j := i
		for j < 8 && w[j] == 0 {
			j++
		}
		if j-i > bestLen {
			best, bestLen = i, j-i
		}
		i = j
	}
	if bestLen < 2 {
		best, bestLen = -1, 0
	}
	for i := 0; i < 8; i++ {
		if i == best {
			b = append(b, ':')
			if i == 0 {
				b = append(b, ':')
			}
			i += bestLen - 1
			continue
		}
		if i == 6 && best == 0 && (bestLen == 6 || bestLen == 5 && w[5] == 0xffff) {
			v4 := [4]byte{a[12], a[13], a[14], a[15]}
			return appendIPv4(b, &v4)
		}
		b = strconv.AppendUint(b, uint64(w[i]), 16)
		if i < 7 {
			b = append(b, ':')
		}
	}
	return b
}

// appendLabel appends 128 connection-tracking label bits as OVS's
// ds_put_hex prints them: the number whose least significant byte is
// CtLabels[0] (bit i of the number is label bit i, as the kernel's label
// bitmap numbers them), in hex without leading zeros, or "0".
func appendLabel(b []byte, l *[16]byte) []byte {
	printed := false
	for i := 15; i >= 0; i-- {
		c := l[i]
		switch {
		case printed:
			b = append(b, hexDigits[c>>4], hexDigits[c&0xf])
		case c != 0:
			b = append(b, '0', 'x')
			b = strconv.AppendUint(b, uint64(c), 16)
			printed = true
		}
	}
	if !printed {
		b = append(b, '0')
	}
	return b
}
