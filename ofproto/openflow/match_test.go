package openflow

import (
	"errors"
	"testing"

	"github.com/govswitch/govswitch/flow"
)

// match10Bytes builds a 40-byte ofp_match from its fields.
func match10Bytes(w uint32, inPort uint16, vid uint16, pcp uint8, dlType uint16, tos, proto uint8,
	src, dst uint32, tpSrc, tpDst uint16) []byte {
	b := be32(nil, w)
	b = be16(b, inPort)
	b = append(b, make([]byte, 12)...)
	b = be16(b, vid)
	b = append(b, pcp, 0)
	b = be16(b, dlType)
	b = append(b, tos, proto, 0, 0)
	b = be32(be32(b, src), dst)
	return be16(be16(b, tpSrc), tpDst)
}

func TestMatch10Decode(t *testing.T) {
	const all = Wildcard10All
	wc := func(clear uint32, srcBits, dstBits uint32) uint32 {
		return all&^clear&^(0x3f<<8)&^(0x3f<<14) | srcBits<<8 | dstBits<<14
	}
	ip := Wildcard10DlType
	for _, tc := range []struct {
		name  string
		in    []byte
		check func(k *flow.Key, m *flow.Mask) bool
	}{
		{"all wildcarded", match10Bytes(all, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9),
			func(k *flow.Key, m *flow.Mask) bool { return m.IsZero() && *k == flow.Key{} }},
		{"nw_src /0 via shift 32", match10Bytes(wc(ip, 32, 32), 0, 0, 0, 0x0800, 0, 0, 0x0a000001, 0, 0, 0),
			func(k *flow.Key, m *flow.Mask) bool { return m.IPv4Src == [4]byte{} && k.IPv4Src == [4]byte{} }},
		{"nw_src shift 63 is /0", match10Bytes(wc(ip, 63, 63), 0, 0, 0, 0x0800, 0, 0, 0x0a000001, 0, 0, 0),
			func(k *flow.Key, m *flow.Mask) bool { return m.IPv4Src == [4]byte{} }},
		{"nw_src /1", match10Bytes(wc(ip, 31, 32), 0, 0, 0, 0x0800, 0, 0, 0xc0000001, 0, 0, 0),
			func(k *flow.Key, m *flow.Mask) bool { return m.IPv4Src == [4]byte{0x80} && k.IPv4Src == [4]byte{0x80} }},
		{"nw_src /24 clears host bits", match10Bytes(wc(ip, 8, 32), 0, 0, 0, 0x0800, 0, 0, 0x0a0b0c0d, 0, 0, 0),
			func(k *flow.Key, m *flow.Mask) bool {
				return m.IPv4Src == [4]byte{0xff, 0xff, 0xff} && k.IPv4Src == [4]byte{10, 11, 12}
			}},
		{"nw_dst /32", match10Bytes(wc(ip, 32, 0), 0, 0, 0, 0x0800, 0, 0, 0, 0x0a0b0c0d, 0, 0),
			func(k *flow.Key, m *flow.Mask) bool {
				return m.IPv4Dst == exactIPv4() && k.IPv4Dst == [4]byte{10, 11, 12, 13}
			}},
		{"nw_src without dl_type is dropped", match10Bytes(wc(0, 0, 32), 0, 0, 0, 0, 0, 0, 0x0a000001, 0, 0, 0),
			func(k *flow.Key, m *flow.Mask) bool { return m.IsZero() }},
		{"tp_dst without nw_proto is dropped", match10Bytes(wc(ip|Wildcard10TpDst, 32, 32), 0, 0, 0, 0x0800, 0, 0, 0, 0, 0, 80),
			func(k *flow.Key, m *flow.Mask) bool { return m.TpDst == 0 && m.EthType == 0xffff }},
		{"ARP opcode and spa kept, tos dropped",
			match10Bytes(wc(ip|Wildcard10NwProto|Wildcard10NwTos, 0, 32), 0, 0, 0, 0x0806, 0x10, 2, 0x0a000001, 0, 0, 0),
			func(k *flow.Key, m *flow.Mask) bool {
				return k.NwProto == 2 && m.NwProto == 0xff && k.IPv4Src == [4]byte{10, 0, 0, 1} && m.NwTos == 0
			}},
		{"nw_tos keeps DSCP bits only", match10Bytes(wc(ip|Wildcard10NwTos, 32, 32), 0, 0, 0, 0x0800, 0xbb, 0, 0, 0, 0, 0),
			func(k *flow.Key, m *flow.Mask) bool { return k.NwTos == 0xb8 && m.NwTos == 0xfc }},
		{"icmp type and code", match10Bytes(wc(ip|Wildcard10NwProto|Wildcard10TpSrc|Wildcard10TpDst, 32, 32), 0, 0, 0, 0x0800, 0, 1, 0, 0, 8, 0),
			func(k *flow.Key, m *flow.Mask) bool { return k.TpSrc == 8 && m.TpSrc == 0xffff && m.TpDst == 0xffff }},
		{"icmpv6 on an IPv6 dl_type", match10Bytes(wc(ip|Wildcard10NwProto|Wildcard10TpSrc, 32, 32), 0, 0, 0, 0x86dd, 0, 58, 0, 0, 135, 0),
			func(k *flow.Key, m *flow.Mask) bool {
				return k.TpSrc == 135 && m.TpSrc == 0xffff && m.IPv4Src == [4]byte{}
			}},
		{"no VLAN tag", match10Bytes(all&^Wildcard10DlVLAN, 0, 0xffff, 5, 0, 0, 0, 0, 0, 0, 0),
			func(k *flow.Key, m *flow.Mask) bool { return k.VLANs[0].TCI == 0 && m.VLANs[0].TCI == 0xffff }},
		{"no VLAN tag ignores pcp", match10Bytes(all&^Wildcard10DlVLAN&^Wildcard10DlVLANPCP, 0, 0xffff, 5, 0, 0, 0, 0, 0, 0, 0),
			func(k *flow.Key, m *flow.Mask) bool { return k.VLANs[0].TCI == 0 && m.VLANs[0].TCI == 0xffff }},
		{"VID and PCP", match10Bytes(all&^Wildcard10DlVLAN&^Wildcard10DlVLANPCP, 0, 100, 5, 0, 0, 0, 0, 0, 0, 0),
			func(k *flow.Key, m *flow.Mask) bool {
				return k.VLANs[0].TCI == 5<<13|0x1000|100 && m.VLANs[0].TCI == 0xffff
			}},
		{"PCP only", match10Bytes(all&^Wildcard10DlVLANPCP, 0, 0, 3, 0, 0, 0, 0, 0, 0, 0),
			func(k *flow.Key, m *flow.Mask) bool {
				return k.VLANs[0].TCI == 3<<13|0x1000 && m.VLANs[0].TCI == 0xf000
			}},
		{"in_port LOCAL widens", match10Bytes(all&^Wildcard10InPort, 0xfffe, 0, 0, 0, 0, 0, 0, 0, 0, 0),
			func(k *flow.Key, m *flow.Mask) bool { return k.InPort == PortLocal && m.InPort == 0xffffffff }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var m Match
			if err := DecodeMatch10(tc.in, &m); err != nil {
				t.Fatal(err)
			}
			if !tc.check(&m.Key, &m.Mask) {
				t.Fatalf("key %+v\nmask %+v", m.Key, m.Mask)
			}
			// Whatever 1.0 decodes, 1.0, NXM and OXM can all encode, and
			// the 1.0 encoding decodes back to the same match.
			b, err := AppendMatch10(nil, &m)
			if err != nil {
				t.Fatalf("re-encode: %v", err)
			}
			var back Match
			if err := DecodeMatch10(b, &back); err != nil || back != m {
				t.Fatalf("1.0 round trip: %v\n%+v\n%+v", err, back, m)
			}
			if _, err := AppendNXM(nil, &m); err != nil {
				t.Fatalf("NXM: %v", err)
			}
			if _, err := AppendOXM(nil, &m); err != nil {
				t.Fatalf("OXM: %v", err)
			}
		})
	}
	if err := DecodeMatch10(make([]byte, 39), &Match{}); !errors.Is(err, ErrBadLength) {
		t.Fatalf("short ofp_match: %v", err)
	}
}

func TestMatch10EncodeRejects(t *testing.T) {
	for _, tc := range []struct {
		name string
		set  func(m *Match)
	}{
		{"partial MAC mask", func(m *Match) { m.Mask.EthSrc = [6]byte{0xff} }},
		{"non-CIDR IPv4 mask", func(m *Match) {
			m.Key.EthType, m.Mask.EthType = flow.EthTypeIPv4, 0xffff
			m.Mask.IPv4Src = [4]byte{0xff, 0, 0xff}
		}},
		{"IPv6 address", func(m *Match) { m.Mask.IPv6Src[0] = 0xff }},
		{"register", func(m *Match) { m.Mask.Regs[2] = 1 }},
		{"metadata", func(m *Match) { m.Mask.OFMetadata = 1 }},
		{"32-bit in_port", func(m *Match) { m.Key.InPort, m.Mask.InPort = 0x10000, 0xffffffff }},
		{"masked in_port", func(m *Match) { m.Mask.InPort = 0xff }},
		{"ECN bits", func(m *Match) { m.Mask.NwTos = 0x03 }},
		{"odd VLAN mask", func(m *Match) { m.Mask.VLANs[0].TCI = 0x0fff }},
		{"masked tp_dst", func(m *Match) { m.Mask.TpDst = 0xff00 }},
		{"tp_dst without nw_proto", func(m *Match) {
			m.Key.EthType, m.Mask.EthType = flow.EthTypeIPv4, 0xffff
			m.Key.TpDst, m.Mask.TpDst = 80, 0xffff
		}},
		{"nw_src without dl_type", func(m *Match) { m.Key.IPv4Src, m.Mask.IPv4Src = [4]byte{10}, [4]byte{0xff} }},
		{"nw_tos on ARP", func(m *Match) {
			m.Key.EthType, m.Mask.EthType = flow.EthTypeARP, 0xffff
			m.Key.NwTos, m.Mask.NwTos = 0x10, 0xfc
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var m Match
			tc.set(&m)
			b, err := AppendMatch10([]byte{1}, &m)
			if !errors.Is(err, ErrUnsupported) {
				t.Fatalf("got %v, want ErrUnsupported", err)
			}
			if len(b) != 1 {
				t.Fatalf("failed encode changed the buffer to % x", b)
			}
		})
	}
}

// richMatch uses most fields NXM/OXM know, with their prerequisites.
func richMatches() map[string]Match {
	ms := map[string]Match{}
	var nd Match
	nd.Key.Tunnel.ID, nd.Mask.Tunnel.ID = 0x1234, 0xffff
	nd.Key.Regs[15], nd.Mask.Regs[15] = 0x80000000, 0x80000000
	nd.Key.Mark, nd.Mask.Mark = 9, 0xffffffff
	nd.Key.CtState, nd.Mask.CtState = flow.CtTracked|flow.CtEstablished, flow.CtTracked|flow.CtEstablished
	nd.Key.CtZone, nd.Mask.CtZone = 3, 0xffff
	nd.Key.EthSrc, nd.Mask.EthSrc = [6]byte{1, 2, 3, 4, 5, 6}, [6]byte{0xff, 0xff, 0xff}
	nd.Key.EthType, nd.Mask.EthType = flow.EthTypeIPv6, 0xffff
	nd.Key.NwProto, nd.Mask.NwProto = flow.IPProtoICMPv6, 0xff
	nd.Key.TpSrc, nd.Mask.TpSrc = 135, 0xffff
	nd.Key.TpDst, nd.Mask.TpDst = 0, 0xffff
	nd.Key.NDTarget, nd.Mask.NDTarget = [16]byte{0xfe, 0x80, 15: 1}, allOnes16
	nd.Key.NDSLL, nd.Mask.NDSLL = [6]byte{1, 2, 3, 4, 5, 6}, exactMAC()
	nd.Key.IPv6Label, nd.Mask.IPv6Label = 0xabcde, 0xfffff
	nd.Key.NwTTL, nd.Mask.NwTTL = 255, 0xff
	ms["ipv6 nd"] = nd

	var arp Match
	arp.Key.InPort, arp.Mask.InPort = 7, 0xffffffff
	arp.Key.VLANs[0].TCI, arp.Mask.VLANs[0].TCI = 0x1000|42, 0x1fff
	arp.Key.EthType, arp.Mask.EthType = flow.EthTypeARP, 0xffff
	arp.Key.NwProto, arp.Mask.NwProto = 1, 0xff
	arp.Key.IPv4Src, arp.Mask.IPv4Src = [4]byte{10, 0, 0, 1}, exactIPv4()
	arp.Key.IPv4Dst, arp.Mask.IPv4Dst = [4]byte{10, 0, 0}, [4]byte{0xff, 0xff, 0xff}
	arp.Key.ArpSHA, arp.Mask.ArpSHA = [6]byte{1}, exactMAC()
	ms["arp with vlan"] = arp

	var tcp Match
	tcp.Key.EthType, tcp.Mask.EthType = flow.EthTypeIPv4, 0xffff
	tcp.Key.NwProto, tcp.Mask.NwProto = flow.IPProtoTCP, 0xff
	tcp.Key.NwTos, tcp.Mask.NwTos = 0xb9, 0xff
	tcp.Key.NwFrag, tcp.Mask.NwFrag = 0, flow.FragAny
	tcp.Key.TpSrc, tcp.Mask.TpSrc = 0x1000, 0xf000
	tcp.Key.TCPFlags, tcp.Mask.TCPFlags = 0x002, 0x012
	ms["tcp with tos, ecn, frag, masked port, flags"] = tcp

	var mpls Match
	mpls.Key.OFMetadata, mpls.Mask.OFMetadata = 0xff00, 0xff00
	mpls.Key.EthType, mpls.Mask.EthType = flow.EthTypeMPLS, 0xffff
	mpls.Key.MPLSLSE, mpls.Mask.MPLSLSE = 100<<12|5<<9|1<<8, 0xfffff<<12|7<<9|1<<8
	ms["mpls and metadata"] = mpls

	var sctp Match
	sctp.Key.EthType, sctp.Mask.EthType = flow.EthTypeIPv4, 0xffff
	sctp.Key.NwProto, sctp.Mask.NwProto = flow.IPProtoSCTP, 0xff
	sctp.Key.TpDst, sctp.Mask.TpDst = 9, 0xffff
	sctp.Key.Tunnel.IPv4Dst, sctp.Mask.Tunnel.IPv4Dst = [4]byte{1, 1, 1, 1}, exactIPv4()
	sctp.Key.CtLabels[15], sctp.Mask.CtLabels[15] = 1, 1
	ms["sctp with tunnel and ct_label"] = sctp
	// Found by FuzzDecodeNXM: a TCI mask with part of the PCP has no
	// vlan_vid/vlan_pcp form and must travel as NXM_OF_VLAN_TCI in OXM.
	var tci Match
	tci.Key.VLANs[0].TCI, tci.Mask.VLANs[0].TCI = 0x3005, 0x3fff
	ms["vlan tci with a partial pcp mask"] = tci
	// And a 32-bit in_port must travel as OXM in_port inside NXM.
	ms["32-bit in_port"] = inPortMatch(0x12345)
	for name, m := range ms {
		m.Key = m.Key.Apply(&m.Mask) // decoders never set bits outside the mask
		ms[name] = m
	}
	return ms
}

func TestNXMAndOXMRoundTrip(t *testing.T) {
	for name, m := range richMatches() {
		for _, nxm := range []bool{true, false} {
			t.Run(name+map[bool]string{true: "/nxm", false: "/oxm"}[nxm], func(t *testing.T) {
				var b []byte
				var err error
				var back Match
				if nxm {
					b, err = AppendNXM(nil, &m)
					if err == nil {
						err = DecodeNXM(Version10, b, &back)
					}
				} else {
					b, err = AppendOXM(nil, &m)
					if err == nil {
						if len(b)%8 != 0 {
							t.Fatalf("ofp_match of %d bytes is not padded", len(b))
						}
						var n int
						n, err = DecodeOXM(b, &back)
						if err == nil && n != len(b) {
							t.Fatalf("DecodeOXM used %d of %d bytes", n, len(b))
						}
					}
				}
				if err != nil {
					t.Fatal(err)
				}
				if back != m {
					t.Fatalf("round trip changed the match\n got %+v\nwant %+v", back, m)
				}
			})
		}
	}
}

// tlv builds one NXM/OXM TLV.
func tlv(class uint16, field uint8, hasMask bool, body ...byte) []byte {
	h := uint32(class)<<16 | uint32(field)<<9 | uint32(len(body))
	if hasMask {
		h |= 1 << 8
	}
	return append(be32(nil, h), body...)
}

func cat(bs ...[]byte) []byte {
	var out []byte
	for _, b := range bs {
		out = append(out, b...)
	}
	return out
}

func TestTLVDecodeErrors(t *testing.T) {
	ethIPv4 := tlv(ClassOpenFlow, 5, false, 0x08, 0x00)
	protoTCP := tlv(ClassOpenFlow, 10, false, 6)
	for _, tc := range []struct {
		name   string
		in     []byte
		code13 uint16 // OFPBMC_* under OFPET_BAD_MATCH in 1.3
		code10 uint16 // NXBRC_NXM_* under OFPET_BAD_REQUEST in 1.0
	}{
		{"unknown field", tlv(ClassOpenFlow, 99, false, 0), BadMatch13BadField, BadRequestNXMBadType},
		{"experimenter class", tlv(ClassExperimenter, 1, false, 0, 0, 0, 0), BadMatch13BadField, BadRequestNXMBadType},
		{"truncated header", []byte{0x80, 0, 0x0a}, BadMatch13BadLen, BadRequestNXMInvalid},
		{"length beyond buffer", []byte{0x80, 0, 0x0a, 0x02, 0x08}, BadMatch13BadLen, BadRequestNXMInvalid},
		{"wrong length for field", tlv(ClassOpenFlow, 5, false, 0x08), BadMatch13BadLen, BadRequestNXMInvalid},
		{"mask on eth_type", tlv(ClassOpenFlow, 5, true, 0x08, 0, 0xff, 0xff), BadMatch13BadMask, BadRequestNXMBadMask},
		{"duplicate field", cat(ethIPv4, ethIPv4), BadMatch13DupField, BadRequestNXMDupType},
		{"overlapping fields", cat(ethIPv4, protoTCP, tlv(ClassOpenFlow, 14, false, 0, 80), tlv(ClassOpenFlow, 16, false, 0, 80)),
			BadMatch13DupField, BadRequestNXMDupType},
		{"tcp_dst without ip_proto", cat(ethIPv4, tlv(ClassOpenFlow, 14, false, 0, 80)), BadMatch13BadPrereq, BadRequestNXMBadPrereq},
		{"ipv4_src without eth_type", tlv(ClassOpenFlow, 11, false, 1, 2, 3, 4), BadMatch13BadPrereq, BadRequestNXMBadPrereq},
		{"nd_target on echo request", cat(tlv(ClassOpenFlow, 5, false, 0x86, 0xdd), tlv(ClassOpenFlow, 10, false, 58),
			tlv(ClassOpenFlow, 29, false, 128), tlv(ClassOpenFlow, 31, false, make([]byte, 16)...)), BadMatch13BadPrereq, BadRequestNXMBadPrereq},
		{"vlan_vid above 13 bits", tlv(ClassOpenFlow, 6, false, 0x20, 0x01), BadMatch13BadValue, BadRequestNXMBadValue},
		{"arp_op above 255", cat(tlv(ClassOpenFlow, 5, false, 0x08, 0x06), tlv(ClassOpenFlow, 21, false, 1, 0)), BadMatch13BadValue, BadRequestNXMBadValue},
		{"ip_dscp above 63", cat(ethIPv4, tlv(ClassOpenFlow, 8, false, 64)), BadMatch13BadValue, BadRequestNXMBadValue},
		{"vlan_vid mask above 13 bits", tlv(ClassOpenFlow, 6, true, 0x10, 0x01, 0xff, 0xff), BadMatch13BadMask, BadRequestNXMBadMask},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, v := range []uint8{Version10, Version13} {
				err := DecodeNXM(v, tc.in, &Match{})
				var e *Error
				if !errors.As(err, &e) {
					t.Fatalf("v%d: got %v, want *Error", v, err)
				}
				wantType, wantCode := Err13TypeBadMatch, tc.code13
				if v == Version10 {
					wantType, wantCode = ErrTypeBadRequest, tc.code10
				}
				if e.Type != wantType || e.Code != wantCode {
					t.Fatalf("v%d: type %d code %#x (%v), want %d %#x", v, e.Type, e.Code, e, wantType, wantCode)
				}
			}
		})
	}
}

func TestTLVEncodeRejects(t *testing.T) {
	for _, tc := range []struct {
		name string
		set  func(m *Match)
	}{
		{"tp_dst without nw_proto", func(m *Match) {
			m.Key.EthType, m.Mask.EthType = flow.EthTypeIPv4, 0xffff
			m.Mask.TpDst = 0xffff
		}},
		{"ipv6_src without eth_type", func(m *Match) { m.Mask.IPv6Src[0] = 0xff }},
		{"masked eth_type", func(m *Match) { m.Mask.EthType = 0xff00 }},
		{"ICMP type above 255", func(m *Match) {
			m.Key.EthType, m.Mask.EthType = flow.EthTypeIPv4, 0xffff
			m.Key.NwProto, m.Mask.NwProto = flow.IPProtoICMP, 0xff
			m.Key.TpSrc, m.Mask.TpSrc = 300, 0xffff
		}},
		{"VLAN TPID", func(m *Match) { m.Mask.VLANs[0].TPID = 0xffff }},
		{"inner VLAN", func(m *Match) { m.Mask.VLANs[1].TCI = 0xffff }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var m Match
			tc.set(&m)
			for _, nxm := range []bool{true, false} {
				b, err := appendTLVs([]byte{9}, &m, nxm, Version13)
				if !errors.Is(err, ErrUnsupported) || len(b) != 1 {
					t.Fatalf("nxm=%v: %v, buffer % x", nxm, err, b)
				}
			}
		})
	}
}

// TestNXMOnlyFieldsInOXM: OXM matches carry NXM-only fields (registers)
// with their NXM headers, as OVS does; NXM matches carry OXM-only fields
// (metadata) with OXM headers.
func TestNXMOnlyFieldsInOXM(t *testing.T) {
	var m Match
	m.Key.Regs[1], m.Mask.Regs[1] = 5, 0xffffffff
	m.Key.OFMetadata, m.Mask.OFMetadata = 1, ^uint64(0)
	b, err := AppendOXM(nil, &m)
	if err != nil {
		t.Fatal(err)
	}
	want := cat([]byte{0, 1, 0, 4 + 8 + 12}, tlv(ClassNXM1, 1, false, 0, 0, 0, 5),
		tlv(ClassOpenFlow, 2, false, 0, 0, 0, 0, 0, 0, 0, 1)) // 24 bytes: no padding needed
	if string(b) != string(want) {
		t.Fatalf("got % x\nwant % x", b, want)
	}
}
