package flow

import "encoding/binary"

// Header sizes the kernel requires before it reads a header.
const (
	ethAddrsLen = 12 // destination and source MAC
	vlanTagLen  = 4  // TPID and TCI
	llcSnapLen  = 8  // DSAP, SSAP, control, OUI, type
	arpLen      = 28 // Ethernet/IPv4 ARP
	ipv4MinLen  = 20
	ipv6Len     = 40
	tcpMinLen   = 20
	udpLen      = 8
	sctpLen     = 12
	icmpLen     = 8 // struct icmphdr and struct icmp6hdr
	ndMsgLen    = 24
	mplsLen     = 4
	nshBaseLen  = 8  // base and service path headers
	nshMD1Len   = 24 // an MD type 1 header with its four context words
)

// IPv6 next-header values the extension walk knows.
const (
	ipv6HopByHop = 0
	ipv6Routing  = 43
	ipv6Fragment = 44
	ipv6AH       = 51
	ipv6NoNext   = 59
	ipv6DestOpts = 60
)

// ICMPv6 Neighbor Discovery types and option types.
const (
	ndSolicit      = 135
	ndAdvert       = 136
	ndOptSourceLL  = 1
	ndOptTargetLL  = 2
	ndOptUnitBytes = 8
)

// Extract returns the Key of the Ethernet frame pkt, received with the
// metadata md. It never fails and never panics: a truncated or malformed
// packet yields the fields that could be read, exactly as the kernel
// datapath would. The Key holds no reference to pkt. Extract copies a Key
// on return; per-packet code should use ExtractInto.
//
// Extract follows the Linux openvswitch module's key_extract (kernel 6.1,
// net/openvswitch/flow.c) field by field, because a packet that misses in
// the kernel datapath comes up with the kernel's key and that key must equal
// Extract of the same bytes. Where the kernel leaves a field unset (it
// extracts into an uninitialised stack key and sends userspace only the
// attributes that apply), Extract leaves the field zero, which is what
// userspace reads back from the upcall. TestIntegrationExtractKernel holds
// Extract to the kernel frame by frame in the bed. The mapping, header by
// header:
//
// Ethernet. EthDst and EthSrc are bytes 0..11. A frame shorter than 14
// bytes cannot come from the kernel (it requires ETH_HLEN); Extract fills
// the addresses it can read and leaves EthType zero.
//
// VLAN. Up to two tags are parsed, each with TPID 0x8100 or 0x88a8 in either
// position (the kernel's eth_type_vlan): VLANs[0] is the outer tag, VLANs[1]
// the inner. TCI is the wire TCI with VLANPresent (0x1000) forced on; TPID
// is the tag's TPID. A tag is parsed only when its 4 bytes and the 2-byte
// type after it are present; otherwise parsing stops and the TPID is read
// as the EthType, as in the kernel's own key. (A port's receive path drops
// a tagged frame shorter than 20 bytes, so only an inner tag can be cut
// short there; the kernel's upcall then shows it as ETHERTYPE 0, VLAN 0,
// an empty ENCAP, which OVS userspace rejects.) A third tag is not parsed:
// EthType is then its TPID and no L3 fields are set.
//
// 802.3. A type/length field below 0x600 is a length: if the next 8 bytes
// are an LLC/SNAP header (DSAP=SSAP=0xaa, OUI 0; the control byte is not
// checked) whose type is at least 0x600, EthType is that type and L3 starts
// after the SNAP header. Otherwise EthType is EthTypeNone (0x05ff). The
// kernel keeps ETH_P_802_2 internally and omits OVS_KEY_ATTR_ETHERTYPE from
// the upcall; OVS userspace reads the missing attribute as 0x05ff, and so
// does this package.
//
// MPLS (0x8847, 0x8848). MPLSLSE is the top label stack entry, but only if
// the stack's bottom-of-stack entry lies within the packet: for a truncated
// stack the kernel reports no labels, so MPLSLSE is zero.
//
// ARP and RARP. Set only for a 28-byte Ethernet/IPv4 ARP header (htype 1,
// ptype 0x0800, hlen 6, plen 4): NwProto is the opcode if it is at most
// 0xff and zero otherwise, IPv4Src/IPv4Dst the spa/tpa, ArpSHA/ArpTHA the
// hardware addresses. Any other ARP packet leaves all of these zero.
//
// IPv4. Needs 20 bytes and an IHL of at least 5 whose header fits in the
// packet; otherwise every L3 and L4 field is zero. The version nibble and
// total length are not checked; L4 headers are read up to the end of the
// packet, not of the IP datagram. NwTos is the whole DS byte. NwFrag is
// FragAny|FragLater for a non-zero fragment offset (and L4 fields are
// zero), FragAny for MF with offset zero (and L4 fields are read).
//
// IPv6. Needs 40 bytes; otherwise every L3 and L4 field is zero (the
// kernel leaves its flow label unset there; userspace then reads whatever
// the stack held, and Extract says zero). NwTos is the traffic class,
// IPv6Label the 20-bit flow label, NwTTL the hop limit. The payload length
// is not checked: headers are read up to the end of the frame.
// Extension headers are walked as ipv6_find_hdr does: Hop-by-Hop (0),
// Routing (43), Fragment (44), AH (51) and Destination Options (60) are
// followed; anything else (ESP, Mobility, No Next Header 59, transports)
// ends the walk and becomes NwProto. Only the first 2 bytes of a header
// (4 of a routing or fragment header) must be present to step over it.
//   - A fragment header makes NwFrag FragAny. If its offset is non-zero and
//     the next header is not an extension header, the packet is a later
//     fragment: NwFrag FragAny|FragLater, NwProto 44, no L4 fields.
//   - If the walk fails (a header cut short, or a later fragment followed by
//     another extension header) NwProto is 59 and no L4 fields are set;
//     NwFrag is FragAny if a fragment header was reached.
//
// L4, for IPv4 and IPv6 alike, with the header starting right after the IP
// header and its extensions. Each protocol needs its whole fixed header in
// the packet, or all L4 fields stay zero: TCP 20 bytes and its data offset
// (at least 5 words, all present), UDP 8, SCTP 12, ICMP 8, ICMPv6 8.
// TpSrc/TpDst are the ports; for ICMP and ICMPv6 they are the type and code.
// TCPFlags is the low 12 bits of TCP header bytes 12..13.
//
// ICMPv6 Neighbor Discovery (type 135 or 136, code 0, at least 24 bytes):
// NDTarget is the target address. Options are read while 8 or more bytes
// remain: an option of length 0 or longer than what remains ends the walk
// and keeps what was read so far; an 8-byte source (1) or target (2)
// link-layer address option sets NDSLL or NDTLL, and a second one of the
// same kind whose first was non-zero makes the message invalid, which
// clears NDTarget, NDSLL and NDTLL. For types 135 and 136 with a non-zero
// code the kernel still sends OVS_KEY_ATTR_ND, filled from its
// uninitialised stack key; OVS userspace ignores it there, and ND fields
// stay zero (so a decoder of upcall keys must ignore it too).
//
// The ND extensions (OVS's nd_reserved and nd_options_type, which the
// Linux datapath does not key): for types 135 and 136 with code 0,
// NDReserved is ICMPv6 bytes 4..7 (the R/S/O flags and reserved bits of
// an advertisement) even when the target is cut short, and NDOptionsType
// the type of the first 8-byte link-layer address option (1 or 2), kept
// when a second one makes the message invalid. Extract leaves them zero,
// as a datapath key has them; ExtractNDExt fills them from the packet.
//
// NSH (ethertype 0x894f): the header as ExtractNSH reads it.
//
// Not extracted (no Key fields for them): IPv6 extension-header
// presence bits (OVS_KEY_ATTR_IPV6_EXTHDRS), MPLS entries below the top,
// GSO-derived fragment marking, and L3 packets without an Ethernet header.
func Extract(pkt []byte, md Metadata) Key {
	var k Key
	ExtractInto(&k, pkt, &md)
	return k
}

// ExtractInto overwrites every field of *k with the Key of the Ethernet
// frame pkt received with metadata *md, as Extract does, without copying a
// Key. A nil md means the zero Metadata. It keeps no reference to pkt or md
// and does not allocate.
func ExtractInto(k *Key, pkt []byte, md *Metadata) {
	extractInto(k, pkt, md)
	k.NDReserved, k.NDOptionsType = 0, 0 // not in a datapath key: ExtractNDExt
}

func extractInto(k *Key, pkt []byte, md *Metadata) {
	*k = Key{}
	if md != nil {
		k.Tunnel = md.Tunnel
		k.InPort = md.InPort
		k.Priority = md.Priority
		k.Mark = md.Mark
		k.RecircID = md.RecircID
		k.DPHash = md.DPHash
		k.CtState = md.CtState
		k.CtZone = md.CtZone
		k.CtMark = md.CtMark
		k.CtLabels = md.CtLabels
		k.CtOrig = md.CtOrig
	}

	if len(pkt) >= 6 {
		copy(k.EthDst[:], pkt[0:6])
	}
	if len(pkt) < ethAddrsLen {
		return // a partial source address is not read: fields are whole or zero
	}
	copy(k.EthSrc[:], pkt[6:12])

	off := ethAddrsLen
	for i := range k.VLANs {
		tpid, ok := vlanTag(pkt, off)
		if !ok {
			break
		}
		k.VLANs[i] = VLAN{TPID: tpid, TCI: be16(pkt[off+2:]) | VLANPresent}
		off += vlanTagLen
	}

	if len(pkt) < off+2 {
		return
	}
	typ := be16(pkt[off:])
	off += 2
	if typ < 0x600 {
		typ = EthTypeNone
		if llc := pkt[off:]; len(llc) >= llcSnapLen &&
			llc[0] == 0xaa && llc[1] == 0xaa && llc[3]|llc[4]|llc[5] == 0 {
			if t := be16(llc[6:]); t >= 0x600 {
				typ = t
				off += llcSnapLen
			}
		}
	}
	k.EthType = typ

	nh := pkt[off:]
	switch typ {
	case EthTypeIPv4:
		extractIPv4(k, nh)
	case EthTypeIPv6:
		extractIPv6(k, nh)
	case EthTypeARP, EthTypeRARP:
		extractARP(k, nh)
	case EthTypeMPLS, EthTypeMPLSM:
		extractMPLS(k, nh)
	case EthTypeNSH:
		ExtractNSH(&k.NSH, nh)
	}
}

// ExtractNSH reads the NSH header at the start of nh into *n, as the
// kernel's parse_nsh does, and reports whether the datapath keys it: the
// version must be 0, the whole header (its length field, in 4-byte words)
// present, and the MD type 1 with a 24-byte header or 2 (whose context
// stays zero: the datapath keys no MD type 2 metadata). The kernel drops
// a packet it does not key; *n is then zero.
func ExtractNSH(n *NSH, nh []byte) bool {
	*n = NSH{}
	if len(nh) < nshBaseLen {
		return false
	}
	w0 := be16(nh)
	hlen := int(w0&0x3f) * 4
	if w0>>14 != 0 || len(nh) < hlen {
		return false
	}
	mdType := nh[2]
	switch mdType {
	case NSHMDType1:
		if hlen != nshMD1Len {
			return false
		}
		for i := range n.C {
			n.C[i] = be32(nh[nshBaseLen+4*i:])
		}
	case NSHMDType2:
	default:
		n.C = [4]uint32{}
		return false
	}
	n.Flags = uint8(w0>>12) & 3
	n.TTL = uint8(w0>>6) & 0x3f
	n.MDType = mdType
	n.NP = nh[3]
	ph := be32(nh[4:])
	n.SPI, n.SI = ph>>8, uint8(ph)
	return true
}

// vlanTag reports whether a VLAN tag starts at pkt[off:] that the kernel
// would parse, and returns its TPID.
func vlanTag(pkt []byte, off int) (uint16, bool) {
	if len(pkt) < off+vlanTagLen+2 {
		return 0, false
	}
	tpid := be16(pkt[off:])
	return tpid, tpid == EthTypeVLAN || tpid == EthTypeQinQ
}

func extractARP(k *Key, nh []byte) {
	if len(nh) < arpLen ||
		be16(nh[0:]) != 1 || be16(nh[2:]) != EthTypeIPv4 || nh[4] != 6 || nh[5] != 4 {
		return
	}
	if op := be16(nh[6:]); op <= 0xff {
		k.NwProto = uint8(op)
	}
	copy(k.ArpSHA[:], nh[8:14])
	copy(k.IPv4Src[:], nh[14:18])
	copy(k.ArpTHA[:], nh[18:24])
	copy(k.IPv4Dst[:], nh[24:28])
}

func extractMPLS(k *Key, nh []byte) {
	const bottomOfStack = 0x100
	for off := 0; len(nh) >= off+mplsLen; off += mplsLen {
		if be32(nh[off:])&bottomOfStack != 0 {
			k.MPLSLSE = be32(nh)
			return
		}
	}
}

func extractIPv4(k *Key, nh []byte) {
	if len(nh) < ipv4MinLen {
		return
	}
	ihl := int(nh[0]&0x0f) * 4
	if ihl < ipv4MinLen || len(nh) < ihl {
		return
	}
	copy(k.IPv4Src[:], nh[12:16])
	copy(k.IPv4Dst[:], nh[16:20])
	k.NwProto = nh[9]
	k.NwTos = nh[1]
	k.NwTTL = nh[8]

	const (
		moreFragments = 0x2000
		offsetMask    = 0x1fff
	)
	frag := be16(nh[6:])
	if frag&offsetMask != 0 {
		k.NwFrag = FragAny | FragLater
		return
	}
	if frag&moreFragments != 0 {
		k.NwFrag = FragAny
	}
	extractL4(k, nh[ihl:], IPProtoICMP)
}

func extractIPv6(k *Key, nh []byte) {
	if len(nh) < ipv6Len {
		return
	}
	k.NwTos = uint8(be16(nh[0:]) >> 4)
	k.IPv6Label = be32(nh[0:]) & 0x000fffff
	k.NwTTL = nh[7]
	copy(k.IPv6Src[:], nh[8:24])
	copy(k.IPv6Dst[:], nh[24:40])

	next, start := nh[6], ipv6Len
	for isIPv6Ext(next) && next != ipv6NoNext {
		if len(nh) < start+2 {
			k.NwProto = ipv6NoNext
			return
		}
		var hdrLen int
		switch next {
		case ipv6Fragment:
			k.NwFrag = FragAny
			if len(nh) < start+4 {
				k.NwProto = ipv6NoNext
				return
			}
			if be16(nh[start+2:])&^7 != 0 {
				if after := nh[start]; !isIPv6Ext(after) || after == ipv6NoNext {
					k.NwFrag = FragAny | FragLater
					k.NwProto = ipv6Fragment
				} else {
					// ipv6_find_hdr gives up without reporting the offset,
					// so the kernel calls this a first fragment it cannot
					// parse.
					k.NwProto = ipv6NoNext
				}
				return
			}
			hdrLen = 8
		case ipv6AH:
			hdrLen = (int(nh[start+1]) + 2) * 4
		case ipv6Routing:
			if len(nh) < start+4 {
				k.NwProto = ipv6NoNext
				return
			}
			hdrLen = (int(nh[start+1]) + 1) * 8
		default:
			hdrLen = (int(nh[start+1]) + 1) * 8
		}
		next = nh[start]
		start += hdrLen
	}
	k.NwProto = next
	var l4 []byte
	if start <= len(nh) {
		l4 = nh[start:]
	}
	extractL4(k, l4, IPProtoICMPv6)
}

// isIPv6Ext reports whether the kernel's ipv6_ext_hdr calls next an
// extension header.
func isIPv6Ext(next uint8) bool {
	switch next {
	case ipv6HopByHop, ipv6Routing, ipv6Fragment, ipv6AH, ipv6NoNext, ipv6DestOpts:
		return true
	}
	return false
}

// extractL4 reads the transport header th of protocol k.NwProto. icmp is the
// ICMP protocol number of the IP version (1 or 58).
func extractL4(k *Key, th []byte, icmp uint8) {
	switch k.NwProto {
	case IPProtoTCP:
		if len(th) < tcpMinLen {
			return
		}
		if doff := int(th[12]>>4) * 4; doff < tcpMinLen || len(th) < doff {
			return
		}
		k.TpSrc, k.TpDst = be16(th[0:]), be16(th[2:])
		k.TCPFlags = be16(th[12:]) & 0x0fff
	case IPProtoUDP:
		if len(th) >= udpLen {
			k.TpSrc, k.TpDst = be16(th[0:]), be16(th[2:])
		}
	case IPProtoSCTP:
		if len(th) >= sctpLen {
			k.TpSrc, k.TpDst = be16(th[0:]), be16(th[2:])
		}
	case icmp:
		if len(th) < icmpLen {
			return
		}
		k.TpSrc, k.TpDst = uint16(th[0]), uint16(th[1])
		if icmp == IPProtoICMPv6 && th[1] == 0 && (th[0] == ndSolicit || th[0] == ndAdvert) {
			extractND(k, th)
		}
	}
}

// extractND reads a Neighbor Solicitation or Advertisement.
func extractND(k *Key, icmp []byte) {
	k.NDReserved = be32(icmp[4:]) // icmpLen bytes are there
	if len(icmp) < ndMsgLen {
		return
	}
	copy(k.NDTarget[:], icmp[8:24])
	opts := icmp[ndMsgLen:]
	for len(opts) >= ndOptUnitBytes {
		n := int(opts[1]) * ndOptUnitBytes
		if n == 0 || n > len(opts) {
			return
		}
		if n == ndOptUnitBytes {
			var ll *[6]byte
			switch opts[0] {
			case ndOptSourceLL:
				ll = &k.NDSLL
			case ndOptTargetLL:
				ll = &k.NDTLL
			}
			if ll != nil {
				if k.NDOptionsType == 0 {
					k.NDOptionsType = opts[0]
				}
				if *ll != [6]byte{} {
					k.NDTarget, k.NDSLL, k.NDTLL = [16]byte{}, [6]byte{}, [6]byte{}
					return
				}
				copy(ll[:], opts[2:8])
			}
		}
		opts = opts[n:]
	}
}

// ExtractNDExt sets k's NDReserved and NDOptionsType from the packet pkt
// that k (a Key from a datapath key) describes, as Extract would: zero
// unless k is an ICMPv6 neighbour solicitation or advertisement with code
// 0. It does not allocate.
func ExtractNDExt(k *Key, pkt []byte, md *Metadata) {
	k.NDReserved, k.NDOptionsType = 0, 0
	if !IsND(k) {
		return
	}
	var s Key
	extractInto(&s, pkt, md)
	if IsND(&s) {
		k.NDReserved, k.NDOptionsType = s.NDReserved, s.NDOptionsType
	}
}

// IsND reports whether k is an ICMPv6 neighbour solicitation or
// advertisement with code 0, the packets that have ND extension fields.
func IsND(k *Key) bool {
	return k.EthType == EthTypeIPv6 && k.NwProto == IPProtoICMPv6 && k.TpDst == 0 &&
		(k.TpSrc == ndSolicit || k.TpSrc == ndAdvert) && k.NwFrag&FragLater == 0
}

func be16(b []byte) uint16 { return binary.BigEndian.Uint16(b) }
func be32(b []byte) uint32 { return binary.BigEndian.Uint32(b) }
