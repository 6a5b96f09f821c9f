package flow

import (
	"fmt"
	"reflect"
	"strings"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
)

// gopacketKey decodes pkt with gopacket and returns the Key the kernel
// datapath would extract, as far as gopacket's decoding tells: want holds
// the expected values and mask the fields gopacket vouches for. Fields
// outside mask are not claimed either way.
//
// gopacket and the kernel do not parse packets the same way; where they
// differ, the kernel's semantics win and the mapping says why:
//   - gopacket stops at an IPv4 or IPv6 first fragment; the kernel reads the
//     L4 header of a first fragment, so the fragment payload is decoded on
//     its own as the next protocol.
//   - gopacket bounds a payload by the IPv4 total length, the IPv6 payload
//     length and the 802.3 length; the kernel reads to the end of the frame.
//     A header gopacket decodes inside those bounds is therefore also seen
//     by the kernel, but fields that depend on where the frame ends (ND
//     options) are claimed only when nothing follows the IPv6 payload.
//   - gopacket needs 4 bytes for ICMPv6, the kernel 8 (struct icmp6hdr).
//   - gopacket keeps DEI apart; the kernel overwrites it with VLANPresent.
//     gopacket exposes only 9 of the 12 TCP flag bits; the 3 reserved bits
//     are not claimed.
//   - gopacket decodes a third VLAN tag and anything under it; the kernel
//     stops after two and reports the third TPID as the EthType.
//   - gopacket masks the I/G and C/R bits out of LLC SAPs and takes a
//     2-byte control field for I and S frames; the kernel wants raw SAPs of
//     0xaa and a 1-byte control field before its SNAP header.
//   - gopacket rejects bad TCP, IPv4 and HBH options the kernel ignores; a
//     layer gopacket could not decode (one followed by a DecodeFailure) is
//     not trusted and nothing after it is claimed.
func gopacketKey(pkt []byte) (want Key, mask Mask) {
	o := gpOracle{pkt: pkt, want: &want, mask: mask.Key(), inputs: map[gopacket.Layer][]byte{}}
	o.walk(o.decode(pkt, layers.LayerTypeEthernet))
	return want, mask
}

type gpOracle struct {
	pkt    []byte
	want   *Key
	mask   *Key                      // fields set to all ones are claimed
	inputs map[gopacket.Layer][]byte // what each decode began with, by first layer
}

// decode decodes data, a part of o.pkt, as first and returns the layers.
func (o *gpOracle) decode(data []byte, first gopacket.LayerType) []gopacket.Layer {
	ls := gopacket.NewPacket(data, first, gopacket.DecodeOptions{NoCopy: true}).Layers()
	if len(ls) > 0 {
		o.inputs[ls[0]] = data
	}
	return ls
}

// claim marks the named fields of o.want as vouched for.
func (o *gpOracle) claim(fields ...string) {
	m := reflect.ValueOf(o.mask).Elem()
	for _, f := range fields {
		v := m.FieldByName(f)
		if !v.IsValid() {
			panic("no Key field " + f)
		}
		oracleSetOnes(v)
	}
}

func oracleSetOnes(v reflect.Value) {
	switch v.Kind() {
	case reflect.Array:
		for i := 0; i < v.Len(); i++ {
			oracleSetOnes(v.Index(i))
		}
	case reflect.Struct:
		for i := 0; i < v.NumField(); i++ {
			if v.Type().Field(i).Name != "_" {
				oracleSetOnes(v.Field(i))
			}
		}
	case reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		v.SetUint(^uint64(0))
	}
}

// oracleTrusted reports whether ls[i] exists, is of the wanted type, and
// was decoded without error. Many gopacket decoders add their layer before
// they know whether it decoded, and the DecodeFailure that follows does not
// say whose failure it is; so the layer before a failure is decoded again
// from its input, and trusted only if that succeeds.
func oracleTrusted[T gopacket.Layer](o *gpOracle, ls []gopacket.Layer, i int) (T, bool) {
	var zero T
	if i >= len(ls) {
		return zero, false
	}
	l, ok := ls[i].(T)
	if !ok {
		return zero, false
	}
	if i+1 < len(ls) {
		if _, bad := ls[i+1].(*gopacket.DecodeFailure); bad && !o.redecodes(ls, i) {
			return zero, false
		}
	}
	return l, true
}

// redecodes reports whether a fresh layer of ls[i]'s type decodes ls[i]'s
// input without error.
func (o *gpOracle) redecodes(ls []gopacket.Layer, i int) bool {
	var input []byte
	switch {
	case i == 0:
		input = o.inputs[ls[0]]
	default:
		if ip, ok := ls[i-1].(*layers.IPv6); ok && ip.HopByHop != nil && gopacket.Layer(ip.HopByHop) == ls[i] {
			// Decoded inside the IPv6 layer, from its input.
			return o.redecodes(ls, i-1)
		}
		input = ls[i-1].LayerPayload()
	}
	fresh, ok := reflect.New(reflect.TypeOf(ls[i]).Elem()).Interface().(gopacket.DecodingLayer)
	if !ok {
		// The layers used here that are not DecodingLayers (IPv6Routing,
		// MPLS, Fragment) are added only once they have decoded.
		return true
	}
	return input != nil && fresh.DecodeFromBytes(input, gopacket.NilDecodeFeedback) == nil
}

func (o *gpOracle) walk(ls []gopacket.Layer) {
	k := o.want
	eth, ok := oracleTrusted[*layers.Ethernet](o, ls, 0)
	if !ok {
		return
	}
	copy(k.EthDst[:], eth.DstMAC)
	copy(k.EthSrc[:], eth.SrcMAC)
	o.claim("EthDst", "EthSrc")

	typ := uint16(eth.EthernetType)
	if eth.EthernetType == layers.EthernetTypeLLC {
		typ = eth.Length
	}
	i := 1
	for tags := 0; i < len(ls); tags++ {
		if _, isTag := ls[i].(*layers.Dot1Q); !isTag {
			break
		}
		if tags == 2 || (typ != EthTypeVLAN && typ != EthTypeQinQ) {
			// The kernel parses two tags, of these two TPIDs only.
			k.EthType = typ
			o.claim("VLANs", "EthType")
			return
		}
		d, ok := oracleTrusted[*layers.Dot1Q](o, ls, i)
		if !ok {
			return
		}
		k.VLANs[tags] = VLAN{
			TPID: typ,
			TCI:  uint16(d.Priority)<<13 | VLANPresent | d.VLANIdentifier,
		}
		typ = uint16(d.Type)
		i++
	}
	o.claim("VLANs")

	if typ < 0x600 {
		llc, ok := oracleTrusted[*layers.LLC](o, ls, i)
		if !ok {
			return
		}
		isSNAP := llc.DSAP == 0xaa && !llc.IG && llc.SSAP == 0xaa && !llc.CR
		if !isSNAP {
			k.EthType = EthTypeNone
			o.claim("EthType")
			return
		}
		if len(llc.Contents) != 3 {
			return // a 2-byte control field: the SNAP header is elsewhere for the kernel
		}
		snap, ok := oracleTrusted[*layers.SNAP](o, ls, i+1)
		if !ok {
			return
		}
		i += 2
		typ = uint16(snap.Type)
		if snap.OrganizationalCode[0]|snap.OrganizationalCode[1]|snap.OrganizationalCode[2] != 0 || typ < 0x600 {
			k.EthType = EthTypeNone
			o.claim("EthType")
			return
		}
	}
	k.EthType = typ
	o.claim("EthType")

	switch typ {
	case EthTypeIPv4:
		o.ipv4(ls, i)
	case EthTypeIPv6:
		o.ipv6(ls, i)
	case EthTypeARP, EthTypeRARP:
		arp, ok := oracleTrusted[*layers.ARP](o, ls, i)
		if !ok && typ == EthTypeRARP {
			// gopacket does not decode RARP; its body is an ARP body.
			arp, ok = oracleTrusted[*layers.ARP](o, o.decode(ls[i-1].LayerPayload(), layers.LayerTypeARP), 0)
		}
		if ok {
			o.arp(arp)
		}
	case EthTypeMPLS, EthTypeMPLSM:
		top, ok := oracleTrusted[*layers.MPLS](o, ls, i)
		if !ok {
			return
		}
		for j := i; j < len(ls); j++ {
			m, ok := oracleTrusted[*layers.MPLS](o, ls, j)
			if !ok {
				return
			}
			if m.StackBottom {
				k.MPLSLSE = top.Label<<12 | uint32(top.TrafficClass)<<9 | oracleBit(top.StackBottom)<<8 | uint32(top.TTL)
				o.claim("MPLSLSE")
				return
			}
		}
	}
}

func oracleBit(b bool) uint32 {
	if b {
		return 1
	}
	return 0
}

func (o *gpOracle) arp(a *layers.ARP) {
	k := o.want
	o.claim("NwProto", "IPv4Src", "IPv4Dst", "ArpSHA", "ArpTHA")
	if a.AddrType != layers.LinkTypeEthernet || a.Protocol != layers.EthernetTypeIPv4 ||
		a.HwAddressSize != 6 || a.ProtAddressSize != 4 {
		return // the kernel zeroes all of them
	}
	if a.Operation <= 0xff {
		k.NwProto = uint8(a.Operation)
	}
	copy(k.ArpSHA[:], a.SourceHwAddress)
	copy(k.IPv4Src[:], a.SourceProtAddress)
	copy(k.ArpTHA[:], a.DstHwAddress)
	copy(k.IPv4Dst[:], a.DstProtAddress)
}

func (o *gpOracle) ipv4(ls []gopacket.Layer, i int) {
	k := o.want
	ip, ok := oracleTrusted[*layers.IPv4](o, ls, i)
	if !ok {
		return
	}
	copy(k.IPv4Src[:], ip.SrcIP)
	copy(k.IPv4Dst[:], ip.DstIP)
	k.NwProto = uint8(ip.Protocol)
	k.NwTos = ip.TOS
	k.NwTTL = ip.TTL
	o.claim("IPv4Src", "IPv4Dst", "NwProto", "NwTos", "NwTTL", "NwFrag")
	switch {
	case ip.FragOffset != 0:
		k.NwFrag = FragAny | FragLater
		o.claim("TpSrc", "TpDst", "TCPFlags") // zero: the kernel reads no L4 of a later fragment
		return
	case ip.Flags&layers.IPv4MoreFragments != 0:
		k.NwFrag = FragAny
		o.firstFragment(ls, i+1, ip.Protocol)
		return
	}
	o.l4(ls, i+1, ip.Protocol, IPProtoICMP)
}

// firstFragment decodes the payload of a first fragment, which gopacket
// leaves as a Fragment, as the protocol next.
func (o *gpOracle) firstFragment(ls []gopacket.Layer, i int, next layers.IPProtocol) {
	frag, ok := oracleTrusted[*gopacket.Fragment](o, ls, i)
	if !ok {
		return
	}
	o.l4(o.decode(*frag, next.LayerType()), 0, next, IPProtoICMP)
}

func (o *gpOracle) ipv6(ls []gopacket.Layer, i int) {
	k := o.want
	if i >= len(ls) {
		return
	}
	ip, ok := ls[i].(*layers.IPv6)
	if !ok || len(ip.Contents) != ipv6Len {
		return
	}
	copy(k.IPv6Src[:], ip.SrcIP)
	copy(k.IPv6Dst[:], ip.DstIP)
	k.NwTos = ip.TrafficClass
	k.IPv6Label = ip.FlowLabel
	k.NwTTL = ip.HopLimit
	o.claim("IPv6Src", "IPv6Dst", "NwTos", "IPv6Label", "NwTTL")
	if _, ok := oracleTrusted[*layers.IPv6](o, ls, i); !ok {
		return
	}
	o.ipv6Chain(ls, i+1, ip.NextHeader)
}

// ipv6Chain follows the extension headers from ls[i], whose protocol is
// next, as the kernel's ipv6_find_hdr does, then the transport header.
func (o *gpOracle) ipv6Chain(ls []gopacket.Layer, i int, next layers.IPProtocol) {
	k := o.want
	for ; isIPv6Ext(uint8(next)) && next != ipv6NoNext; i++ {
		var after layers.IPProtocol
		switch next {
		case ipv6HopByHop:
			h, ok := oracleTrusted[*layers.IPv6HopByHop](o, ls, i)
			if !ok {
				return
			}
			after = h.NextHeader
		case ipv6Routing:
			h, ok := oracleTrusted[*layers.IPv6Routing](o, ls, i)
			if !ok {
				return
			}
			after = h.NextHeader
		case ipv6DestOpts:
			h, ok := oracleTrusted[*layers.IPv6Destination](o, ls, i)
			if !ok {
				return
			}
			after = h.NextHeader
		case ipv6AH:
			h, ok := oracleTrusted[*layers.IPSecAH](o, ls, i)
			if !ok {
				return
			}
			after = h.NextHeader
		case ipv6Fragment:
			h, ok := oracleTrusted[*layers.IPv6Fragment](o, ls, i)
			if !ok {
				return
			}
			k.NwFrag = FragAny
			after = h.NextHeader
			if h.FragmentOffset != 0 {
				if isIPv6Ext(uint8(after)) && after != ipv6NoNext {
					// ipv6_find_hdr fails without reporting the offset.
					k.NwProto = ipv6NoNext
				} else {
					k.NwFrag |= FragLater
					k.NwProto = ipv6Fragment
				}
				o.claim("NwProto", "NwFrag", "TpSrc", "TpDst", "TCPFlags")
				return
			}
			// gopacket stops at every fragment header, even an atomic
			// one; the kernel carries on when the offset is zero.
			o.ipv6Chain(o.decode(h.Payload, after.LayerType()), 0, after)
			return
		}
		next = after
	}
	k.NwProto = uint8(next)
	o.claim("NwProto", "NwFrag")
	o.l4(ls, i, next, IPProtoICMPv6)
}

// l4 reads the transport layer ls[i] of protocol proto; icmp is the ICMP
// protocol of the IP version, the only one the kernel reads there.
func (o *gpOracle) l4(ls []gopacket.Layer, i int, proto layers.IPProtocol, icmp uint8) {
	k := o.want
	if (proto == layers.IPProtocolICMPv4 || proto == layers.IPProtocolICMPv6) && uint8(proto) != icmp {
		return
	}
	switch proto {
	case layers.IPProtocolTCP:
		t, ok := oracleTrusted[*layers.TCP](o, ls, i)
		if !ok {
			return
		}
		k.TpSrc, k.TpDst = uint16(t.SrcPort), uint16(t.DstPort)
		for bit, set := range []bool{t.FIN, t.SYN, t.RST, t.PSH, t.ACK, t.URG, t.ECE, t.CWR, t.NS} {
			if set {
				k.TCPFlags |= 1 << bit
			}
		}
		o.claim("TpSrc", "TpDst")
		o.mask.TCPFlags = 0x01ff
	case layers.IPProtocolUDP:
		u, ok := oracleTrusted[*layers.UDP](o, ls, i)
		if !ok {
			return
		}
		k.TpSrc, k.TpDst = uint16(u.SrcPort), uint16(u.DstPort)
		o.claim("TpSrc", "TpDst", "TCPFlags")
	case layers.IPProtocolSCTP:
		if i >= len(ls) {
			return
		}
		// SCTP is trusted even before a failing chunk: the chunks are
		// separate layers and the 12-byte common header decoded.
		s, ok := ls[i].(*layers.SCTP)
		if !ok || len(s.Contents) < sctpLen {
			return
		}
		k.TpSrc, k.TpDst = uint16(s.SrcPort), uint16(s.DstPort)
		o.claim("TpSrc", "TpDst", "TCPFlags")
	case layers.IPProtocolICMPv4:
		c, ok := oracleTrusted[*layers.ICMPv4](o, ls, i)
		if !ok {
			return
		}
		k.TpSrc, k.TpDst = uint16(c.TypeCode.Type()), uint16(c.TypeCode.Code())
		o.claim("TpSrc", "TpDst", "TCPFlags")
	case layers.IPProtocolICMPv6:
		o.icmpv6(ls, i)
	}
}

func (o *gpOracle) icmpv6(ls []gopacket.Layer, i int) {
	k := o.want
	c, ok := oracleTrusted[*layers.ICMPv6](o, ls, i)
	if !ok || len(c.Contents)+len(c.Payload) < icmpLen {
		return // the kernel needs 8 bytes, gopacket 4
	}
	typ, code := c.TypeCode.Type(), c.TypeCode.Code()
	k.TpSrc, k.TpDst = uint16(typ), uint16(code)
	o.claim("TpSrc", "TpDst", "TCPFlags")
	if code != 0 || (typ != ndSolicit && typ != ndAdvert) {
		o.claim("NDTarget", "NDSLL", "NDTLL")
		return
	}
	var (
		target []byte
		opts   layers.ICMPv6Options
		body   []byte
	)
	if ns, ok := oracleTrusted[*layers.ICMPv6NeighborSolicitation](o, ls, i+1); ok {
		target, opts, body = ns.TargetAddress, ns.Options, ns.Contents
	} else if na, ok := oracleTrusted[*layers.ICMPv6NeighborAdvertisement](o, ls, i+1); ok {
		target, opts, body = na.TargetAddress, na.Options, na.Contents
	} else {
		return
	}
	if oracleOffsetIn(o.pkt, body)+len(body) != len(o.pkt) {
		return // the kernel would read options from bytes gopacket left out
	}
	copy(k.NDTarget[:], target)
	o.claim("NDTarget", "NDSLL", "NDTLL")
	for _, opt := range opts {
		if len(opt.Data) != 6 {
			continue
		}
		var ll *[6]byte
		switch opt.Type {
		case layers.ICMPv6OptSourceAddress:
			ll = &k.NDSLL
		case layers.ICMPv6OptTargetAddress:
			ll = &k.NDTLL
		default:
			continue
		}
		if *ll != [6]byte{} {
			k.NDTarget, k.NDSLL, k.NDTLL = [16]byte{}, [6]byte{}, [6]byte{}
			return
		}
		copy(ll[:], opt.Data)
	}
}

// offsetIn returns where sub starts in pkt; sub must be a subslice of pkt
// (they then share the end of their capacity).
func oracleOffsetIn(pkt, sub []byte) int { return cap(pkt) - cap(sub) }

// diffKeys describes the fields, under m, where got and want differ.
func extractDiffKeys(got, want *Key, m *Mask) string {
	var b strings.Builder
	gv, wv, mv := reflect.ValueOf(got).Elem(), reflect.ValueOf(want).Elem(), reflect.ValueOf(m.Key()).Elem()
	for i := 0; i < gv.NumField(); i++ {
		name := gv.Type().Field(i).Name
		if name == "_" {
			continue
		}
		g, w, mm := gv.Field(i), wv.Field(i), mv.Field(i)
		if reflect.DeepEqual(mm.Interface(), reflect.Zero(mm.Type()).Interface()) {
			continue
		}
		var gk, wk Key
		reflect.ValueOf(&gk).Elem().Field(i).Set(g)
		reflect.ValueOf(&wk).Elem().Field(i).Set(w)
		if !gk.EqualMasked(&wk, m) {
			fmt.Fprintf(&b, "%s: got %v, want %v (mask %v); ", name, extractFmtField(g), extractFmtField(w), extractFmtField(mm))
		}
	}
	return b.String()
}

func extractFmtField(v reflect.Value) string {
	if v.Kind() == reflect.Array && v.Type().Elem().Kind() == reflect.Uint8 {
		return fmt.Sprintf("%x", v.Slice(0, v.Len()).Interface())
	}
	return fmt.Sprintf("%#x", v.Interface())
}
