package openflow

import (
	"fmt"

	"github.com/govswitch/govswitch/flow"
)

// Field names one wire form of a matchable (and usually settable) field:
// an NXM header, an OXM header, or both when they carry the same bits the
// same way. Fields map onto bits of a flow.Key; several fields may share
// storage (TCP, UDP and SCTP ports and the ICMP type all live in
// Key.TpSrc), told apart by their prerequisites. The zero Field is no field.
type Field uint8

// The fields this codec knows, in the order matches are encoded (OVS's
// order, so our encodings of OVS's matches are byte-identical to its own).
const (
	FieldNone      Field = iota
	FieldDPHash          // NXM_NX_DP_HASH
	FieldRecircID        // NXM_NX_RECIRC_ID
	FieldConjID          // NXM_NX_CONJ_ID ↔ Key.ConjID (match only, exact)
	FieldInPort          // OXM in_port, 32 bits
	FieldNXMInPort       // NXM_OF_IN_PORT, 16 bits in 1.0 port numbering
	FieldEthSrc
	FieldEthDst
	FieldEthType
	FieldVLANVID   // OXM vlan_vid: VID | OFPVID_PRESENT (0x1000)
	FieldVLANPCP   // OXM vlan_pcp
	FieldVLANTCI   // NXM_OF_VLAN_TCI: the whole TCI, 0x1000 = tag present
	FieldMPLSTC    // OXM mpls_tc
	FieldMPLSBOS   // OXM mpls_bos
	FieldMPLSLabel // OXM mpls_label
	FieldIPv4Src
	FieldIPv4Dst
	FieldIPv6Src
	FieldIPv6Dst
	FieldIPFrag
	FieldIPDSCP // OXM ip_dscp: DSCP shifted down (tos >> 2)
	FieldIPTOS  // NXM_OF_IP_TOS: the DSCP bits in place (tos & 0xfc)
	FieldIPECN
	FieldIPTTL
	FieldIPv6Label
	FieldIPProto
	FieldTCPSrc
	FieldTCPDst
	FieldTCPFlags
	FieldUDPSrc
	FieldUDPDst
	FieldSCTPSrc
	FieldSCTPDst
	FieldICMPv4Type
	FieldICMPv4Code
	FieldICMPv6Type
	FieldICMPv6Code
	FieldNDReserved // ERICOXM_OF_ICMPV6_ND_RESERVED (OVS emits it before nd_target)
	FieldNDTarget
	FieldNDOptionsType // ERICOXM_OF_ICMPV6_ND_OPTIONS_TYPE (after nd_target)
	FieldNDSLL
	FieldNDTLL
	FieldARPOp
	FieldARPSPA
	FieldARPTPA
	FieldARPSHA
	FieldARPTHA
	FieldTunnelID    // NXM_NX_TUN_ID / OXM tunnel_id ↔ Key.Tunnel.ID
	FieldTunFlags    // NXM_NX_TUN_FLAGS (field_tun.go); in OVS's order of TLVs
	FieldTunIPv4Src  // NXM_NX_TUN_IPV4_SRC
	FieldTunIPv4Dst  // NXM_NX_TUN_IPV4_DST
	FieldTunIPv6Src  // NXM_NX_TUN_IPV6_SRC (field_tun.go)
	FieldTunIPv6Dst  // NXM_NX_TUN_IPV6_DST
	FieldTunGbpID    // NXM_NX_TUN_GBP_ID (field_tun.go)
	FieldTunGbpFlags // NXM_NX_TUN_GBP_FLAGS
	// FieldTunMetadata0…FieldTunMetadata63 are NXM_NX_TUN_METADATA0-63,
	// the Geneve options a TLV table maps (field_tunmd.go).
	FieldTunMetadata0
	FieldTunMetadata63 Field = iota + 62 // the lines below count on from here
	// The ERSPAN metadata (field_erspan.go): NXOXM experimenter fields.
	FieldTunErspanIdx
	FieldTunErspanVer
	FieldTunErspanDir
	FieldTunErspanHwid
	// The NSH fields (field_nsh.go): experimenter OXMs of NXOXM_NSH.
	FieldNSHFlags
	FieldNSHTTL
	FieldNSHMDType
	FieldNSHNP
	FieldNSHSPI
	FieldNSHSI
	FieldNSHC1 // … FieldNSHC1+3 is nsh_c4
	FieldNSHC2
	FieldNSHC3
	FieldNSHC4
	FieldReg0 // NXM_NX_REG0 … FieldReg0+15 is NXM_NX_REG15
	FieldReg1
	FieldReg2
	FieldReg3
	FieldReg4
	FieldReg5
	FieldReg6
	FieldReg7
	FieldReg8
	FieldReg9
	FieldReg10
	FieldReg11
	FieldReg12
	FieldReg13
	FieldReg14
	FieldReg15
	FieldPktMark // NXM_NX_PKT_MARK ↔ Key.Mark
	FieldCtState // NXM_NX_CT_STATE
	FieldCtZone  // NXM_NX_CT_ZONE
	FieldCtMark  // NXM_NX_CT_MARK
	FieldCtLabel // NXM_NX_CT_LABEL
	// The conntrack original-direction tuple (Key.CtOrig), read-only, in
	// the order ovs-vswitchd encodes them (field_ct.go).
	FieldCtNwSrc   // NXM_NX_CT_NW_SRC
	FieldCtIPv6Src // NXM_NX_CT_IPV6_SRC
	FieldCtNwDst   // NXM_NX_CT_NW_DST
	FieldCtIPv6Dst // NXM_NX_CT_IPV6_DST
	FieldCtNwProto // NXM_NX_CT_NW_PROTO
	FieldCtTpSrc   // NXM_NX_CT_TP_SRC
	FieldCtTpDst   // NXM_NX_CT_TP_DST
	FieldMetadata  // OXM metadata ↔ Key.OFMetadata
	// FieldTpSrc and FieldTpDst have no wire header: they are the
	// protocol-independent targets of OpenFlow 1.0 set_tp_src/dst.
	FieldTpSrc
	FieldTpDst
	// FieldXReg0…FieldXReg0+7 are OXM_OF_PKT_REG0-7 (xreg0-7, class
	// 0x8001): each the 64-bit pair reg(2N):reg(2N+1), reg(2N) the high
	// half. FieldXXReg0…+3 are NXM_NX_XXREG0-3: the 128-bit quad
	// reg(4N)…reg(4N+3), reg(4N) the most significant. Both overlay the
	// Regs: decoders take them in matches and actions, and matches are
	// encoded and printed as the regN fields they cover, as ovs-vswitchd
	// does below OpenFlow 1.5.
	FieldXReg0
	FieldXReg1
	FieldXReg2
	FieldXReg3
	FieldXReg4
	FieldXReg5
	FieldXReg6
	FieldXReg7
	FieldXXReg0
	FieldXXReg1
	FieldXXReg2
	FieldXXReg3
	numFields
)

// OXM/NXM header classes.
const (
	ClassNXM0         uint16 = 0x0000 // NXM_OF_*
	ClassNXM1         uint16 = 0x0001 // NXM_NX_*
	ClassOpenFlow     uint16 = 0x8000 // OXM_OF_*
	ClassPacketRegs   uint16 = 0x8001 // OXM_OF_PKT_REG* (xreg)
	ClassEricsson     uint16 = 0x1000 // ERICOXM_OF_* (nd_reserved, nd_options_type)
	ClassExperimenter uint16 = 0xffff
)

const noHeader = ^uint32(0)

// hdr builds the class/field part of a TLV header (hasmask and length zero).
func hdr(class uint16, field uint8) uint32 { return uint32(class)<<16 | uint32(field)<<9 }

// prereq is what a field needs the rest of the match to pin down.
type prereq uint8

const (
	preNone prereq = iota
	preIP          // IPv4 or IPv6
	preIPv4
	preIPv6
	preARP // ARP or RARP
	preMPLS
	preTCP
	preUDP
	preSCTP
	preICMPv4
	preICMPv6
	preND      // ICMPv6 neighbour solicitation or advertisement
	preNDSLL   // neighbour solicitation
	preNDTLL   // neighbour advertisement
	preCT      // a valid connection: OVS's MFP_CT_VALID (field_ct.go)
	preCTProto // a valid connection and a ct_nw_proto (field_ct.go)
	preNSH     // eth_type 0x894f (field_nsh.go)
)

// Encodings a field is emitted in.
const (
	encNXM = 1 << iota
	encOXM
)

type fieldDef struct {
	name     string
	nxm, oxm uint32 // header without hasmask/length, or noHeader
	size     int    // value bytes on the wire
	maskable bool
	enc      uint8
	pre      prereq
	// Integer fields have get/set; byte-string fields have bytes. set
	// writes only the field's bits; a value that does not survive set+get
	// is out of range.
	get   func(k *flow.Key) uint64
	set   func(k *flow.Key, v uint64)
	bytes func(k *flow.Key) []byte
	// Register overlays (xreg, xxreg) have load/store instead: the value's
	// wire bytes from and into the Regs they span. They are alias fields,
	// never emitted in a match (see FieldXReg0).
	load  func(k *flow.Key, dst []byte) []byte
	store func(k *flow.Key, v []byte)
	alias bool
	// tunmd marks tun_metadata<n>, whose place and size in a Key the
	// process's TLV layout decides (field_tunmd.go).
	tunmd    bool
	tunmdIdx uint8
	// exp is the experimenter ID of a field whose OXM header (oxm, class
	// 0xffff) is followed by it on the wire, an 8-byte header
	// (field_erspan.go, and NXOXMExperimenter's for field_nsh.go's); 0 for
	// the others. Such a field is found by
	// fieldByExpHeader, not byHeader, and has no 4-byte Header.
	exp uint32
	// bits is the width OVS's mf_field n_bits gives a field narrower than
	// its wire bytes (field_erspan.go, field_nsh.go); 0 for 8*size.
	bits  int
	cover flow.Mask // the Key bits this field maps onto
	// coverWords lists the nonzero words of cover, so an encoder can skip
	// a field the mask does not touch with a load or two.
	coverWords []coverWord
}

type coverWord struct {
	i    int
	bits uint64
}

// touches reports whether m selects any bit of the field.
func (d *fieldDef) touches(m *flow.Mask) bool {
	if d.tunmd {
		return tunMDTouches(d, m)
	}
	mw := m.Words()
	for _, cw := range d.coverWords {
		if mw[cw.i]&cw.bits != 0 {
			return true
		}
	}
	return false
}

type uintT interface {
	~uint8 | ~uint16 | ~uint32 | ~uint64
}

// bitsOf maps a field onto the bits fm<<shift of the integer *p(k).
func bitsOf[T uintT](p func(*flow.Key) *T, shift uint, fm uint64) (func(*flow.Key) uint64, func(*flow.Key, uint64)) {
	return func(k *flow.Key) uint64 { return uint64(*p(k)) >> shift & fm },
		func(k *flow.Key, v uint64) {
			q := p(k)
			*q = *q&^T(fm<<shift) | T((v&fm)<<shift)
		}
}

var fields [numFields]fieldDef

// byHeader finds a field by the class/field part of its header.
var byHeader = map[uint32]Field{}

func defInt[T uintT](f Field, name string, nxm, oxm uint32, size int, maskable bool, enc uint8, pre prereq,
	p func(*flow.Key) *T, shift uint, fm uint64) {
	g, s := bitsOf(p, shift, fm)
	fields[f] = fieldDef{name: name, nxm: nxm, oxm: oxm, size: size, maskable: maskable, enc: enc, pre: pre, get: g, set: s}
}

func defBytes(f Field, name string, nxm, oxm uint32, size int, maskable bool, enc uint8, pre prereq,
	p func(*flow.Key) []byte) {
	fields[f] = fieldDef{name: name, nxm: nxm, oxm: oxm, size: size, maskable: maskable, enc: enc, pre: pre, bytes: p}
}

const both = encNXM | encOXM

func init() {
	oxm := func(n uint8) uint32 { return hdr(ClassOpenFlow, n) }
	nx0 := func(n uint8) uint32 { return hdr(ClassNXM0, n) }
	nx1 := func(n uint8) uint32 { return hdr(ClassNXM1, n) }
	u64m := uint64(1<<64 - 1)

	defInt(FieldInPort, "in_port", noHeader, oxm(0), 4, false, encOXM, preNone,
		func(k *flow.Key) *uint32 { return &k.InPort }, 0, 0xffffffff)
	fields[FieldNXMInPort] = fieldDef{name: "in_port", nxm: nx0(0), oxm: noHeader, size: 2, enc: encNXM,
		get: func(k *flow.Key) uint64 {
			if p, ok := Port32To10(k.InPort); ok {
				return uint64(p)
			}
			return uint64(k.InPort) | 1<<32 // does not fit: the encoder rejects it
		},
		set: func(k *flow.Key, v uint64) { k.InPort = Port10To32(uint16(v)) }}
	defInt(FieldMetadata, "metadata", noHeader, oxm(2), 8, true, both, preNone,
		func(k *flow.Key) *uint64 { return &k.OFMetadata }, 0, u64m)
	defInt(FieldTunnelID, "tun_id", nx1(16), oxm(38), 8, true, both, preNone,
		func(k *flow.Key) *uint64 { return &k.Tunnel.ID }, 0, u64m)
	defBytes(FieldTunIPv4Src, "tun_src", nx1(31), noHeader, 4, true, both, preNone,
		func(k *flow.Key) []byte { return k.Tunnel.IPv4Src[:] })
	defBytes(FieldTunIPv4Dst, "tun_dst", nx1(32), noHeader, 4, true, both, preNone,
		func(k *flow.Key) []byte { return k.Tunnel.IPv4Dst[:] })
	defTunnelFields(nx1) // field_tun.go
	defTunMDFields(nx1)  // field_tunmd.go
	defErspanFields()    // field_erspan.go
	defNSHFields()       // field_nsh.go
	defInt(FieldPktMark, "pkt_mark", nx1(33), noHeader, 4, true, both, preNone,
		func(k *flow.Key) *uint32 { return &k.Mark }, 0, 0xffffffff)
	defInt(FieldDPHash, "dp_hash", nx1(35), noHeader, 4, true, both, preNone,
		func(k *flow.Key) *uint32 { return &k.DPHash }, 0, 0xffffffff)
	defInt(FieldConjID, "conj_id", nx1(37), noHeader, 4, false, both, preNone,
		func(k *flow.Key) *uint32 { return &k.ConjID }, 0, 0xffffffff)
	defInt(FieldRecircID, "recirc_id", nx1(36), noHeader, 4, false, both, preNone,
		func(k *flow.Key) *uint32 { return &k.RecircID }, 0, 0xffffffff)
	defInt(FieldCtState, "ct_state", nx1(105), noHeader, 4, true, both, preNone,
		func(k *flow.Key) *uint32 { return &k.CtState }, 0, 0xffffffff)
	defInt(FieldCtZone, "ct_zone", nx1(106), noHeader, 2, false, both, preNone,
		func(k *flow.Key) *uint16 { return &k.CtZone }, 0, 0xffff)
	defInt(FieldCtMark, "ct_mark", nx1(107), noHeader, 4, true, both, preNone,
		func(k *flow.Key) *uint32 { return &k.CtMark }, 0, 0xffffffff)
	// The label is a 128-bit number, big-endian on the wire; the Key
	// holds it as the kernel does, least significant byte first.
	defBytes(FieldCtLabel, "ct_label", nx1(108), noHeader, 16, true, both, preNone,
		func(k *flow.Key) []byte { return k.CtLabels[:] })
	fields[FieldCtLabel].load = func(k *flow.Key, dst []byte) []byte {
		for i := 15; i >= 0; i-- {
			dst = append(dst, k.CtLabels[i])
		}
		return dst
	}
	fields[FieldCtLabel].store = func(k *flow.Key, v []byte) {
		for i := range k.CtLabels {
			k.CtLabels[i] = v[15-i]
		}
	}
	defCtTupleFields(nx1) // field_ct.go
	for i := 0; i < 16; i++ {
		i := i
		defInt(FieldReg0+Field(i), fmt.Sprintf("reg%d", i), nx1(uint8(i)), noHeader, 4, true, both, preNone,
			func(k *flow.Key) *uint32 { return &k.Regs[i] }, 0, 0xffffffff)
	}
	regs := func(f Field, name string, h uint32, first, n int) {
		fields[f] = fieldDef{name: name, nxm: noHeader, oxm: h, size: 4 * n, maskable: true, enc: both, alias: true,
			load: func(k *flow.Key, dst []byte) []byte {
				for _, r := range k.Regs[first : first+n] {
					dst = append(dst, byte(r>>24), byte(r>>16), byte(r>>8), byte(r))
				}
				return dst
			},
			store: func(k *flow.Key, v []byte) {
				for i := range k.Regs[first : first+n] {
					k.Regs[first+i] = uint32(v[4*i])<<24 | uint32(v[4*i+1])<<16 | uint32(v[4*i+2])<<8 | uint32(v[4*i+3])
				}
			}}
	}
	for i := 0; i < 8; i++ {
		regs(FieldXReg0+Field(i), fmt.Sprintf("xreg%d", i), hdr(ClassPacketRegs, uint8(i)), 2*i, 2)
	}
	for i := 0; i < 4; i++ {
		// NXM class, but OVS carries them in OXM matches and set_field
		// alike; Header falls back to this one.
		regs(FieldXXReg0+Field(i), fmt.Sprintf("xxreg%d", i), hdr(ClassNXM1, uint8(111+i)), 4*i, 4)
	}
	defBytes(FieldEthDst, "eth_dst", nx0(1), oxm(3), 6, true, both, preNone,
		func(k *flow.Key) []byte { return k.EthDst[:] })
	defBytes(FieldEthSrc, "eth_src", nx0(2), oxm(4), 6, true, both, preNone,
		func(k *flow.Key) []byte { return k.EthSrc[:] })
	defInt(FieldEthType, "eth_type", nx0(3), oxm(5), 2, false, both, preNone,
		func(k *flow.Key) *uint16 { return &k.EthType }, 0, 0xffff)
	tci := func(k *flow.Key) *uint16 { return &k.VLANs[0].TCI }
	defInt(FieldVLANTCI, "vlan_tci", nx0(4), noHeader, 2, true, encNXM, preNone, tci, 0, 0xffff)
	defInt(FieldVLANVID, "vlan_vid", noHeader, oxm(6), 2, true, encOXM, preNone, tci, 0, 0x1fff)
	defInt(FieldVLANPCP, "vlan_pcp", noHeader, oxm(7), 1, false, encOXM, preNone, tci, 13, 7)
	lse := func(k *flow.Key) *uint32 { return &k.MPLSLSE }
	defInt(FieldMPLSLabel, "mpls_label", noHeader, oxm(34), 4, false, both, preMPLS, lse, 12, 0xfffff)
	defInt(FieldMPLSTC, "mpls_tc", noHeader, oxm(35), 1, false, both, preMPLS, lse, 9, 7)
	defInt(FieldMPLSBOS, "mpls_bos", noHeader, oxm(36), 1, false, both, preMPLS, lse, 8, 1)
	defBytes(FieldIPv4Src, "ip_src", nx0(7), oxm(11), 4, true, both, preIPv4,
		func(k *flow.Key) []byte { return k.IPv4Src[:] })
	defBytes(FieldIPv4Dst, "ip_dst", nx0(8), oxm(12), 4, true, both, preIPv4,
		func(k *flow.Key) []byte { return k.IPv4Dst[:] })
	defBytes(FieldIPv6Src, "ipv6_src", nx1(19), oxm(26), 16, true, both, preIPv6,
		func(k *flow.Key) []byte { return k.IPv6Src[:] })
	defBytes(FieldIPv6Dst, "ipv6_dst", nx1(20), oxm(27), 16, true, both, preIPv6,
		func(k *flow.Key) []byte { return k.IPv6Dst[:] })
	defInt(FieldIPv6Label, "ipv6_label", nx1(27), oxm(28), 4, true, both, preIPv6,
		func(k *flow.Key) *uint32 { return &k.IPv6Label }, 0, 0xfffff)
	proto := func(k *flow.Key) *uint8 { return &k.NwProto }
	defInt(FieldIPProto, "nw_proto", nx0(6), oxm(10), 1, false, both, preIP, proto, 0, 0xff)
	tos := func(k *flow.Key) *uint8 { return &k.NwTos }
	defInt(FieldIPTOS, "nw_tos", nx0(5), noHeader, 1, false, encNXM, preIP, tos, 0, 0xfc)
	defInt(FieldIPDSCP, "ip_dscp", noHeader, oxm(8), 1, false, encOXM, preIP, tos, 2, 0x3f)
	defInt(FieldIPECN, "nw_ecn", nx1(28), oxm(9), 1, false, both, preIP, tos, 0, 3)
	defInt(FieldIPTTL, "nw_ttl", nx1(29), noHeader, 1, false, both, preIP,
		func(k *flow.Key) *uint8 { return &k.NwTTL }, 0, 0xff)
	defInt(FieldIPFrag, "ip_frag", nx1(26), noHeader, 1, true, both, preIP,
		func(k *flow.Key) *uint8 { return &k.NwFrag }, 0, 3)
	defInt(FieldARPOp, "arp_op", nx0(15), oxm(21), 2, false, both, preARP, proto, 0, 0xff)
	defBytes(FieldARPSPA, "arp_spa", nx0(16), oxm(22), 4, true, both, preARP,
		func(k *flow.Key) []byte { return k.IPv4Src[:] })
	defBytes(FieldARPTPA, "arp_tpa", nx0(17), oxm(23), 4, true, both, preARP,
		func(k *flow.Key) []byte { return k.IPv4Dst[:] })
	defBytes(FieldARPSHA, "arp_sha", nx1(17), oxm(24), 6, true, both, preARP,
		func(k *flow.Key) []byte { return k.ArpSHA[:] })
	defBytes(FieldARPTHA, "arp_tha", nx1(18), oxm(25), 6, true, both, preARP,
		func(k *flow.Key) []byte { return k.ArpTHA[:] })
	tpSrc := func(k *flow.Key) *uint16 { return &k.TpSrc }
	tpDst := func(k *flow.Key) *uint16 { return &k.TpDst }
	defInt(FieldTCPSrc, "tcp_src", nx0(9), oxm(13), 2, true, both, preTCP, tpSrc, 0, 0xffff)
	defInt(FieldTCPDst, "tcp_dst", nx0(10), oxm(14), 2, true, both, preTCP, tpDst, 0, 0xffff)
	defInt(FieldTCPFlags, "tcp_flags", nx1(34), noHeader, 2, true, both, preTCP,
		func(k *flow.Key) *uint16 { return &k.TCPFlags }, 0, 0x0fff)
	defInt(FieldUDPSrc, "udp_src", nx0(11), oxm(15), 2, true, both, preUDP, tpSrc, 0, 0xffff)
	defInt(FieldUDPDst, "udp_dst", nx0(12), oxm(16), 2, true, both, preUDP, tpDst, 0, 0xffff)
	defInt(FieldSCTPSrc, "sctp_src", noHeader, oxm(17), 2, true, both, preSCTP, tpSrc, 0, 0xffff)
	defInt(FieldSCTPDst, "sctp_dst", noHeader, oxm(18), 2, true, both, preSCTP, tpDst, 0, 0xffff)
	// ICMP type and code own the whole 16-bit TpSrc/TpDst so that a 1.0
	// match (16-bit tp_src) and an NXM match (8-bit icmp_type) agree.
	defInt(FieldICMPv4Type, "icmp_type", nx0(13), oxm(19), 1, false, both, preICMPv4, tpSrc, 0, 0xffff)
	defInt(FieldICMPv4Code, "icmp_code", nx0(14), oxm(20), 1, false, both, preICMPv4, tpDst, 0, 0xffff)
	defInt(FieldICMPv6Type, "icmpv6_type", nx1(21), oxm(29), 1, false, both, preICMPv6, tpSrc, 0, 0xffff)
	defInt(FieldICMPv6Code, "icmpv6_code", nx1(22), oxm(30), 1, false, both, preICMPv6, tpDst, 0, 0xffff)
	// nd_reserved and nd_options_type (OVS's IPv6 ND extensions) have
	// only an OXM header, in the Ericsson class 0x1000 (a plain 4-byte
	// header, no experimenter ID); an NXM match carries that header too.
	// Neither is maskable.
	defInt(FieldNDReserved, "nd_reserved", noHeader, hdr(ClassEricsson, 1), 4, false, both, preND,
		func(k *flow.Key) *uint32 { return &k.NDReserved }, 0, 0xffffffff)
	defInt(FieldNDOptionsType, "nd_options_type", noHeader, hdr(ClassEricsson, 2), 1, false, both, preND,
		func(k *flow.Key) *uint8 { return &k.NDOptionsType }, 0, 0xff)
	defBytes(FieldNDTarget, "nd_target", nx1(23), oxm(31), 16, true, both, preND,
		func(k *flow.Key) []byte { return k.NDTarget[:] })
	defBytes(FieldNDSLL, "nd_sll", nx1(24), oxm(32), 6, true, both, preNDSLL,
		func(k *flow.Key) []byte { return k.NDSLL[:] })
	defBytes(FieldNDTLL, "nd_tll", nx1(25), oxm(33), 6, true, both, preNDTLL,
		func(k *flow.Key) []byte { return k.NDTLL[:] })
	defInt(FieldTpSrc, "tp_src", noHeader, noHeader, 2, false, 0, preNone, tpSrc, 0, 0xffff)
	defInt(FieldTpDst, "tp_dst", noHeader, noHeader, 2, false, 0, preNone, tpDst, 0, 0xffff)

	for f := FieldNone + 1; f < numFields; f++ {
		d := &fields[f]
		if d.name == "" {
			panic(fmt.Sprintf("openflow: field %d not defined", f))
		}
		if d.tunmd {
			// no fixed cover
		} else if d.store != nil {
			var ones [16]byte
			for i := range ones {
				ones[i] = 0xff
			}
			d.store(d.cover.Key(), ones[:d.size])
		} else if d.bytes != nil {
			for i := range d.bytes(d.cover.Key()) {
				d.bytes(d.cover.Key())[i] = 0xff
			}
		} else {
			d.set(d.cover.Key(), ^uint64(0))
		}
		for i, w := range d.cover.Words() {
			if w != 0 {
				d.coverWords = append(d.coverWords, coverWord{i, w})
			}
		}
		if d.exp != 0 {
			if _, dup := byExpHeader[d.oxm]; dup {
				panic(fmt.Sprintf("openflow: experimenter header %08x defined twice", d.oxm))
			}
			byExpHeader[d.oxm] = f
			continue
		}
		for _, h := range [2]uint32{d.nxm, d.oxm} {
			if h != noHeader {
				if _, dup := byHeader[h]; dup {
					panic(fmt.Sprintf("openflow: header %08x defined twice", h))
				}
				byHeader[h] = f
			}
		}
	}
}

// String returns the field's name in ovs-ofctl's syntax.
func (f Field) String() string {
	if f == FieldNone || f >= numFields {
		return fmt.Sprintf("field(%d)", uint8(f))
	}
	return fields[f].name
}

// Bits returns the field's width in bits as ovs-vswitchd's mf_field
// n_bits has it: the bits a move, push/pop or output_reg arriving on the
// wire may name (mf_check_src/dst). It is 8*Size but for the ERSPAN
// metadata (tun_erspan_idx 20, _ver 4, _dir 1, _hwid 6) and nsh_spi (24).
func (f Field) Bits() int {
	if f < numFields && fields[f].bits != 0 {
		return fields[f].bits
	}
	return 8 * f.Size()
}

// Size returns the field's value length on the wire, 0 for FieldNone.
func (f Field) Size() int {
	if f >= numFields {
		return 0
	}
	if fields[f].tunmd {
		return tunMDSize(f)
	}
	return fields[f].size
}

// Header returns the field's TLV header (hasmask clear, length = Size) in
// the given encoding: NXM preference when nxm is true, else OXM. ok is
// false for a field without any wire header.
func (f Field) Header(nxm bool) (h uint32, ok bool) {
	if f == FieldNone || f >= numFields {
		return 0, false
	}
	d := &fields[f]
	if d.exp != 0 {
		return 0, false // an 8-byte header: expHeader
	}
	first, second := d.oxm, d.nxm
	if nxm {
		first, second = d.nxm, d.oxm
	}
	if first == noHeader {
		first = second
	}
	if first == noHeader {
		return 0, false
	}
	return first | uint32(f.Size()), true
}

// FieldByHeader returns the field a TLV header names (hasmask and length
// are ignored), or FieldNone.
func FieldByHeader(h uint32) Field { return byHeader[h&^0x1ff] }

// Value reads the field out of k into dst (Size bytes, big-endian) and
// returns dst extended. A value that does not fit the wire width (a 32-bit
// port in a 16-bit field) yields ok false.
func (f Field) Value(dst []byte, k *flow.Key) (b []byte, ok bool) {
	if f == FieldNone || f >= numFields {
		return dst, false
	}
	d := &fields[f]
	if d.tunmd {
		return tunMDValue(f, dst, k)
	}
	if d.load != nil {
		return d.load(k, dst), true
	}
	if d.bytes != nil {
		return append(dst, d.bytes(k)...), true
	}
	v := d.get(k)
	if d.size < 8 && v>>(8*d.size) != 0 {
		return dst, false
	}
	for i := d.size - 1; i >= 0; i-- {
		dst = append(dst, byte(v>>(8*i)))
	}
	return dst, true
}

// SetValue writes the wire value v (Size bytes, big-endian) into k's bits
// of the field and leaves k's other bits alone. It reports false, leaving
// k's field in an unspecified state, when v has the wrong length or does
// not fit the field (a VLAN VID above 0x1fff, an ARP opcode above 255).
func (f Field) SetValue(k *flow.Key, v []byte) bool {
	if f == FieldNone || f >= numFields {
		return false
	}
	d := &fields[f]
	if d.tunmd {
		return tunMDSetValue(f, k, v)
	}
	if len(v) != d.size {
		return false
	}
	if d.store != nil {
		d.store(k, v)
		return true
	}
	if d.bytes != nil {
		copy(d.bytes(k), v)
		return true
	}
	var x uint64
	for _, c := range v {
		x = x<<8 | uint64(c)
	}
	d.set(k, x)
	return d.get(k) == x
}

// Cover returns the bits of a Key the field maps onto.
func (f Field) Cover() flow.Mask {
	if f >= numFields {
		return flow.Mask{}
	}
	if fields[f].tunmd {
		return tunMDCover(f)
	}
	return fields[f].cover
}

// PrereqsMet reports whether a match k/m pins down what setting or
// matching f requires (ip_src needs an IPv4 ethertype, tcp_dst IP and
// TCP, ...): a set_field whose prerequisites a flow's match does not
// meet is OFPBAC_MATCH_INCONSISTENT.
func (f Field) PrereqsMet(k *flow.Key, m *flow.Mask) bool {
	if f >= numFields {
		return false
	}
	return prereqOK(fields[f].pre, k, m)
}

// prereqOK reports whether k/m pin down what p requires.
func prereqOK(p prereq, k *flow.Key, m *flow.Mask) bool {
	eth := func(t uint16) bool { return m.EthType == 0xffff && k.EthType == t }
	proto := func(p uint8) bool { return m.NwProto == 0xff && k.NwProto == p }
	ip := func() bool { return eth(flow.EthTypeIPv4) || eth(flow.EthTypeIPv6) }
	icmp6 := func(t uint16) bool { return m.TpSrc&0xff == 0xff && k.TpSrc == t }
	switch p {
	case preNone:
		return true
	case preIP:
		return ip()
	case preIPv4:
		return eth(flow.EthTypeIPv4)
	case preIPv6:
		return eth(flow.EthTypeIPv6)
	case preARP:
		return eth(flow.EthTypeARP) || eth(flow.EthTypeRARP)
	case preMPLS:
		return eth(flow.EthTypeMPLS) || eth(flow.EthTypeMPLSM)
	case preTCP:
		return ip() && proto(flow.IPProtoTCP)
	case preUDP:
		return ip() && proto(flow.IPProtoUDP)
	case preSCTP:
		return ip() && proto(flow.IPProtoSCTP)
	case preICMPv4:
		return eth(flow.EthTypeIPv4) && proto(flow.IPProtoICMP)
	case preICMPv6:
		return eth(flow.EthTypeIPv6) && proto(flow.IPProtoICMPv6)
	case preND:
		return prereqOK(preICMPv6, k, m) && (icmp6(135) || icmp6(136))
	case preNDSLL:
		return prereqOK(preICMPv6, k, m) && icmp6(135)
	case preNDTLL:
		return prereqOK(preICMPv6, k, m) && icmp6(136)
	case preCT:
		return ctValid(k, m)
	case preCTProto:
		return ctProtoValid(k, m)
	case preNSH:
		return eth(flow.EthTypeNSH)
	}
	return false
}
