package datapath

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/govswitch/govswitch/flow"
	"github.com/govswitch/govswitch/netlinkio"
)

// Flow keys and masks as the kernel datapath reads and writes them: the
// payload of OVS_FLOW_ATTR_KEY, OVS_FLOW_ATTR_MASK and OVS_PACKET_ATTR_KEY,
// a sequence of OVS_KEY_ATTR_* attributes (linux/openvswitch.h). The layout
// follows what kernel 6.1 emits (net/openvswitch/flow_netlink.c,
// __ovs_nla_put_key) so that a key we send looks like a key we receive:
//
//	RECIRC_ID DP_HASH PRIORITY [TUNNEL] IN_PORT SKB_MARK
//	CT_STATE CT_ZONE CT_MARK CT_LABELS
//	ETHERNET
//	[ETHERTYPE=tpid VLAN=tci ENCAP{            (802.1Q / 802.1ad tag)
//	    [ETHERTYPE=tpid VLAN=tci ENCAP{        (inner tag)
//	ETHERTYPE L3 L4 [TCP_FLAGS] [ND] }}]
//
// An 802.3 frame without a SNAP ethertype (flow.EthTypeNone) has no
// ETHERTYPE attribute at all, as in the kernel.

// KeyAttr is an OVS_KEY_ATTR_* attribute type.
type KeyAttr = uint16

// OVS_KEY_ATTR_* (enum ovs_key_attr).
const (
	KeyAttrEncap          KeyAttr = 1
	KeyAttrPriority       KeyAttr = 2
	KeyAttrInPort         KeyAttr = 3
	KeyAttrEthernet       KeyAttr = 4
	KeyAttrVLAN           KeyAttr = 5
	KeyAttrEthertype      KeyAttr = 6
	KeyAttrIPv4           KeyAttr = 7
	KeyAttrIPv6           KeyAttr = 8
	KeyAttrTCP            KeyAttr = 9
	KeyAttrUDP            KeyAttr = 10
	KeyAttrICMP           KeyAttr = 11
	KeyAttrICMPv6         KeyAttr = 12
	KeyAttrARP            KeyAttr = 13
	KeyAttrND             KeyAttr = 14
	KeyAttrSkbMark        KeyAttr = 15
	KeyAttrTunnel         KeyAttr = 16
	KeyAttrSCTP           KeyAttr = 17
	KeyAttrTCPFlags       KeyAttr = 18
	KeyAttrDPHash         KeyAttr = 19
	KeyAttrRecircID       KeyAttr = 20
	KeyAttrMPLS           KeyAttr = 21
	KeyAttrCtState        KeyAttr = 22
	KeyAttrCtZone         KeyAttr = 23
	KeyAttrCtMark         KeyAttr = 24
	KeyAttrCtLabels       KeyAttr = 25
	KeyAttrCtOrigTupleV4  KeyAttr = 26
	KeyAttrCtOrigTupleV6  KeyAttr = 27
	KeyAttrNSH            KeyAttr = 28
	KeyAttrPacketType     KeyAttr = 29 // userspace only; never sent to the kernel
	KeyAttrNDExtensions   KeyAttr = 30 // userspace only; never sent to the kernel
	KeyAttrTunnelInfo     KeyAttr = 31 // kernel internal (29 in the kernel's numbering)
	KeyAttrIPv6ExtHeaders KeyAttr = 32 // newer than kernel 6.1
	keyAttrMax                    = 32
)

// OVS_TUNNEL_KEY_ATTR_* (enum ovs_tunnel_key_attr).
const (
	tunAttrID           = 0
	tunAttrIPv4Src      = 1
	tunAttrIPv4Dst      = 2
	tunAttrTOS          = 3
	tunAttrTTL          = 4
	tunAttrDontFragment = 5
	tunAttrCsum         = 6
	tunAttrOAM          = 7
	tunAttrGeneveOpts   = 8
	tunAttrTpSrc        = 9
	tunAttrTpDst        = 10
	tunAttrVXLANOpts    = 11
	tunAttrIPv6Src      = 12
	tunAttrIPv6Dst      = 13
	tunAttrPad          = 14
	tunAttrERSPANOpts   = 15
	tunAttrIPv4Bridge   = 16
	tunAttrMax          = 16
)

// OVS_FRAG_TYPE_* values of ipv4_frag / ipv6_frag.
const (
	fragNone  = 0
	fragFirst = 1
	fragLater = 2
)

// ctStateSupported is the kernel's CT_SUPPORTED_MASK: the ct_state bits it
// accepts in a key or mask.
const ctStateSupported = 0xff

// Conntrack state bits (OVS_CS_F_*) FitMask reasons about.
const (
	ctStateInvalid = 0x10
	ctStateTracked = 0x20
)

// Payload sizes of the fixed-size key attributes (struct ovs_key_*).
const (
	sizeEthernet = 12
	sizeIPv4     = 12
	sizeIPv6     = 40
	sizeL4Ports  = 4 // ovs_key_tcp, _udp, _sctp
	sizeICMP     = 2 // ovs_key_icmp, _icmpv6
	sizeARP      = 24
	sizeND       = 28
	sizeMPLS     = 4
	sizeLabels   = 16
	// struct ovs_key_ct_tuple_ipv4 / _ipv6: 13 and 37 bytes and padding.
	sizeCtTupleV4 = 16
	sizeCtTupleV6 = 40
)

// keyAttrLen is the payload size of each OVS_KEY_ATTR_* the kernel knows, -1
// for nested or variable attributes, 0 for types it does not know.
var keyAttrLen = [keyAttrMax + 1]int8{
	KeyAttrEncap:          -1,
	KeyAttrPriority:       4,
	KeyAttrInPort:         4,
	KeyAttrEthernet:       sizeEthernet,
	KeyAttrVLAN:           2,
	KeyAttrEthertype:      2,
	KeyAttrIPv4:           sizeIPv4,
	KeyAttrIPv6:           sizeIPv6,
	KeyAttrTCP:            sizeL4Ports,
	KeyAttrUDP:            sizeL4Ports,
	KeyAttrICMP:           sizeICMP,
	KeyAttrICMPv6:         sizeICMP,
	KeyAttrARP:            sizeARP,
	KeyAttrND:             sizeND,
	KeyAttrSkbMark:        4,
	KeyAttrTunnel:         -1,
	KeyAttrSCTP:           sizeL4Ports,
	KeyAttrTCPFlags:       2,
	KeyAttrDPHash:         4,
	KeyAttrRecircID:       4,
	KeyAttrMPLS:           -1, // an array of 4-byte label stack entries
	KeyAttrCtState:        4,
	KeyAttrCtZone:         2,
	KeyAttrCtMark:         4,
	KeyAttrCtLabels:       sizeLabels,
	KeyAttrCtOrigTupleV4:  sizeCtTupleV4,
	KeyAttrCtOrigTupleV6:  sizeCtTupleV6,
	KeyAttrNSH:            -1,
	KeyAttrPacketType:     4,
	KeyAttrNDExtensions:   -1,
	KeyAttrTunnelInfo:     -1,
	KeyAttrIPv6ExtHeaders: 2,
}

// MaxKeyLen bounds the bytes AppendKey or AppendMask appends for any Key:
// a buffer with this much spare capacity never grows.
const MaxKeyLen = 384 + 44 + 4 + flow.TunMetadataSpace + 4 + erspanOptsLen + vxlanOptsLen // + Geneve, ERSPAN and VXLAN options

// ErrKeyAttr is wrapped by every error DecodeKey and DecodeMask return for
// malformed or contradictory attributes.
var ErrKeyAttr = errors.New("malformed flow key attribute")

func keyErr(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrKeyAttr, fmt.Sprintf(format, args...))
}

func isVLANType(t uint16) bool { return t == flow.EthTypeVLAN || t == flow.EthTypeQinQ }

func isMPLSType(t uint16) bool { return t == flow.EthTypeMPLS || t == flow.EthTypeMPLSM }

func vlanPresent(v flow.VLAN) bool { return v.TCI&flow.VLANPresent != 0 }

// keyShape is what a Key carries on the wire: which L3 and L4 attributes,
// how many VLAN levels. Key and mask encoding both follow the key's shape.
type keyShape struct {
	tags      int    // VLAN tags present: 0, 1 or 2
	truncated bool   // EthType is a VLAN TPID whose tag could not be parsed
	l3        uint16 // KeyAttrIPv4, KeyAttrIPv6, KeyAttrARP, KeyAttrMPLS or 0
	l4        uint16 // KeyAttrTCP, UDP, SCTP, ICMP, ICMPv6 or 0
	nd        bool   // ICMPv6 neighbour solicitation or advertisement
	noHeaders bool   // EthType zero: metadata only
	noEth     bool   // Key.L3: an ethertype and L3 and L4, no Ethernet attribute
}

func shapeOf(k *flow.Key) keyShape {
	var s keyShape
	if !k.L3 && k.EthType == 0 && k.EthSrc == [6]byte{} && k.EthDst == [6]byte{} && !vlanPresent(k.VLANs[0]) {
		s.noHeaders = true
		return s
	}
	if k.L3 {
		s.noEth = true
		s.l3 = l3Attr(k.EthType)
		s.l4 = l4Attr(k, s.l3)
		s.nd = s.l4 == KeyAttrICMPv6 && (k.TpSrc == 135 || k.TpSrc == 136)
		return s
	}
	if vlanPresent(k.VLANs[0]) {
		s.tags = 1
		if vlanPresent(k.VLANs[1]) {
			s.tags = 2
		}
	}
	if isVLANType(k.EthType) {
		// A tag the parser could not read (truncated) or a third tag: no
		// L3 either way.
		s.truncated = s.tags < 2
		return s
	}
	s.l3 = l3Attr(k.EthType)
	s.l4 = l4Attr(k, s.l3)
	s.nd = s.l4 == KeyAttrICMPv6 && (k.TpSrc == 135 || k.TpSrc == 136)
	return s
}

// l3Attr is the L3 attribute of a packet of ethertype t, 0 for none.
func l3Attr(t uint16) uint16 {
	switch {
	case t == flow.EthTypeIPv4:
		return KeyAttrIPv4
	case t == flow.EthTypeIPv6:
		return KeyAttrIPv6
	case t == flow.EthTypeARP || t == flow.EthTypeRARP:
		return KeyAttrARP
	case isMPLSType(t):
		return KeyAttrMPLS
	case t == flow.EthTypeNSH:
		return KeyAttrNSH
	}
	return 0
}

// l4Attr is the L4 attribute of k under L3 attribute l3, 0 for none.
func l4Attr(k *flow.Key, l3 uint16) uint16 {
	if (l3 != KeyAttrIPv4 && l3 != KeyAttrIPv6) || k.NwFrag&flow.FragLater != 0 {
		return 0
	}
	switch k.NwProto {
	case flow.IPProtoTCP:
		return KeyAttrTCP
	case flow.IPProtoUDP:
		return KeyAttrUDP
	case flow.IPProtoSCTP:
		return KeyAttrSCTP
	case flow.IPProtoICMP:
		if l3 == KeyAttrIPv4 {
			return KeyAttrICMP
		}
	case flow.IPProtoICMPv6:
		if l3 == KeyAttrIPv6 {
			return KeyAttrICMPv6
		}
	}
	return 0
}

// AppendKey appends k as a flow key: the payload of OVS_PACKET_ATTR_KEY,
// or of OVS_FLOW_ATTR_KEY for a flow without a mask. For a flow put with a
// mask use AppendFlowKey. It never allocates when b has MaxKeyLen bytes of
// spare capacity.
//
// RECIRC_ID, DP_HASH, PRIORITY, IN_PORT and SKB_MARK are always present,
// zero or not, as the kernel writes them. The conntrack attributes
// (CT_STATE, CT_ZONE, CT_MARK, CT_LABELS) are present only when non-zero:
// the kernel knows each only when built with the matching conntrack option
// (CONFIG_NF_CONNTRACK_ZONES, _MARK, _LABELS) and rejects a key that
// carries one it lacks; kernel 6.1 in the test bed has no zones. The tunnel
// attribute is present when k.Tunnel is not the zero Tunnel; the kernel
// then requires a destination address. A Key with EthType zero has no
// packet headers and encodes as metadata only, which is what an
// OVS_PACKET_CMD_EXECUTE needs; a flow key needs an EthType (flow.EthTypeNone
// for an 802.3 frame). OFMetadata and Regs never reach the datapath.
//
// The values are written as given; the kernel rejects a flow key with an
// in_port of 65536 or more, ct_state bits outside 0xff, an ARP opcode above
// 0xff or a flow label above 0xfffff.
func AppendKey(b []byte, k *flow.Key) []byte {
	return AppendFlowKey(b, k, nil)
}

// AppendFlowKey appends k as the flow key of a flow put whose mask is m
// (nil for none): AppendKey, plus every conntrack attribute that
// AppendMask(k, m) matches on even where k's value is zero, since the
// kernel rejects a mask attribute absent from the key. Matching a
// conntrack field the kernel was built without fails the put with EINVAL.
func AppendFlowKey(b []byte, k *flow.Key, m *flow.Mask) []byte {
	s := shapeOf(k)
	var need ctAttrs
	if m != nil {
		need = ctMasked(m)
	}
	b = appendMeta(b, k, k, false, k.Tunnel != flow.Tunnel{}, need|ctNonZero(k))
	if s.noHeaders {
		return b
	}
	return appendHeaders(b, k, k, &s, false)
}

// AppendMask appends the mask m for the flow key k: the payload of
// OVS_FLOW_ATTR_MASK, in the shape AppendFlowKey gives k. m is first
// fitted to what the kernel can hold (see FitMask; m itself is not
// modified), so the mask the kernel installs is exactly FitMask(k, m). It
// never allocates when b has MaxKeyLen bytes of spare capacity.
func AppendMask(b []byte, k *flow.Key, m *flow.Mask) []byte {
	fm := *m
	FitMask(k, &fm)
	s := shapeOf(k)
	v := fm.Key()
	b = appendMeta(b, k, v, true, fm.Tunnel != flow.Tunnel{}, ctMasked(&fm))
	if s.noHeaders {
		return b
	}
	return appendHeaders(b, k, v, &s, true)
}

// ctAttrs says which conntrack attributes to write.
type ctAttrs uint8

const (
	ctState ctAttrs = 1 << iota
	ctZone
	ctMark
	ctLabels
	ctOrig
)

// ctNonZero returns the conntrack attributes whose values in v are not
// zero.
func ctNonZero(v *flow.Key) ctAttrs {
	var c ctAttrs
	if v.CtState != 0 {
		c |= ctState
	}
	if v.CtZone != 0 {
		c |= ctZone
	}
	if v.CtMark != 0 {
		c |= ctMark
	}
	if v.CtLabels != [16]byte{} {
		c |= ctLabels
	}
	if v.CtOrig != (flow.CtTuple{}) {
		c |= ctOrig
	}
	return c
}

// ctMasked returns the conntrack attributes the fitted form of mask m
// matches on.
func ctMasked(m *flow.Mask) ctAttrs {
	c := ctNonZero(m.Key())
	if m.CtState&ctStateSupported == 0 {
		c &^= ctState
	}
	return c
}

// appendMeta appends the metadata attributes of v, with the conntrack
// attributes ct; k is the key they belong to (the same as v for a key, the
// key of mask v otherwise).
func appendMeta(b []byte, k, v *flow.Key, isMask, tunnel bool, ct ctAttrs) []byte {
	b = netlinkio.AppendU32(b, KeyAttrRecircID, v.RecircID)
	b = netlinkio.AppendU32(b, KeyAttrDPHash, v.DPHash)
	b = netlinkio.AppendU32(b, KeyAttrPriority, v.Priority)
	if tunnel {
		b = appendTunnel(b, KeyAttrTunnel, &k.Tunnel, &v.Tunnel, isMask)
	}
	b = netlinkio.AppendU32(b, KeyAttrInPort, v.InPort)
	b = netlinkio.AppendU32(b, KeyAttrSkbMark, v.Mark)
	if ct&ctState != 0 {
		b = netlinkio.AppendU32(b, KeyAttrCtState, v.CtState)
	}
	if ct&ctZone != 0 {
		b = netlinkio.AppendU16(b, KeyAttrCtZone, v.CtZone)
	}
	if ct&ctMark != 0 {
		b = netlinkio.AppendU32(b, KeyAttrCtMark, v.CtMark)
	}
	if ct&ctLabels != 0 {
		b = netlinkio.AppendAttr(b, KeyAttrCtLabels, v.CtLabels[:])
	}
	if ct&ctOrig != 0 {
		b = appendCtTuple(b, k.EthType, &v.CtOrig)
	}
	return b
}

// appendCtTuple appends the original-direction tuple t as the kernel
// writes it for a packet of ethertype et (ovs_ct_put_key): the IPv4 form
// for IPv4, the IPv6 form for IPv6, nothing for other packets, which the
// tracker never sees. A metadata-only key (et zero, an execute's) has
// the form its addresses say: IPv6 when it has IPv6 addresses.
func appendCtTuple(b []byte, et uint16, t *flow.CtTuple) []byte {
	if et == 0 {
		et = flow.EthTypeIPv4
		if t.IPv6Src != ([16]byte{}) || t.IPv6Dst != ([16]byte{}) {
			et = flow.EthTypeIPv6
		}
	}
	var p []byte
	switch et {
	case flow.EthTypeIPv4:
		b, p = netlinkio.AppendReserve(b, KeyAttrCtOrigTupleV4, sizeCtTupleV4)
		copy(p[0:4], t.IPv4Src[:])
		copy(p[4:8], t.IPv4Dst[:])
		binary.BigEndian.PutUint16(p[8:], t.TpSrc)
		binary.BigEndian.PutUint16(p[10:], t.TpDst)
		p[12] = t.Proto
		p[13], p[14], p[15] = 0, 0, 0
	case flow.EthTypeIPv6:
		b, p = netlinkio.AppendReserve(b, KeyAttrCtOrigTupleV6, sizeCtTupleV6)
		copy(p[0:16], t.IPv6Src[:])
		copy(p[16:32], t.IPv6Dst[:])
		binary.BigEndian.PutUint16(p[32:], t.TpSrc)
		binary.BigEndian.PutUint16(p[34:], t.TpDst)
		p[36] = t.Proto
		p[37], p[38], p[39] = 0, 0, 0
	}
	return b
}

// takeCtTuple decodes the conntrack tuple attribute, if any, of a key of
// ethertype et into t: the kernel writes the IPv4 form for IPv4 packets
// and the IPv6 form for IPv6 ones, and a tuple of the other form is
// malformed. A metadata-only key (et zero) takes either. It leaves the
// attribute in a when the key's ethertype is another, for leftover to
// report.
func takeCtTuple(a *attrSet, et uint16, t *flow.CtTuple) error {
	typ := KeyAttrCtOrigTupleV4
	other := KeyAttrCtOrigTupleV6
	switch et {
	case 0:
		// Metadata only: either form (appendCtTuple's choice).
		if a.has(typ) && a.has(other) {
			return keyErr("both conntrack tuple forms in one key")
		}
		if a.has(other) {
			typ = other
		}
		if a.has(typ) {
			decodeCtTuple(typ, a.take(typ), t)
		}
		return nil
	case flow.EthTypeIPv4:
	case flow.EthTypeIPv6:
		typ, other = other, typ
	default:
		return nil
	}
	if a.has(other) {
		return keyErr("conntrack tuple attribute %d in a key of ethertype %#04x", other, et)
	}
	if a.has(typ) {
		decodeCtTuple(typ, a.take(typ), t)
	}
	return nil
}

// decodeCtTuple decodes the tuple attribute of type typ (IPv4 or IPv6
// form, length already checked) into t.
func decodeCtTuple(typ KeyAttr, d []byte, t *flow.CtTuple) {
	if typ == KeyAttrCtOrigTupleV4 {
		copy(t.IPv4Src[:], d[0:4])
		copy(t.IPv4Dst[:], d[4:8])
		t.TpSrc = binary.BigEndian.Uint16(d[8:])
		t.TpDst = binary.BigEndian.Uint16(d[10:])
		t.Proto = d[12]
		return
	}
	copy(t.IPv6Src[:], d[0:16])
	copy(t.IPv6Dst[:], d[16:32])
	t.TpSrc = binary.BigEndian.Uint16(d[32:])
	t.TpDst = binary.BigEndian.Uint16(d[34:])
	t.Proto = d[36]
}

func isZero4(a [4]byte) bool   { return a == [4]byte{} }
func isZero16(a [16]byte) bool { return a == [16]byte{} }

// tunnelIPv6 reports whether the tunnel metadata kt (of a key) is an IPv6
// tunnel.
func tunnelIPv6(kt *flow.Tunnel) bool { return !isZero16(kt.IPv6Src) || !isZero16(kt.IPv6Dst) }

// maskTunnelIPv6 reports whether the mask of tunnel kt under mt uses IPv6
// addresses: those of an IPv6 tunnel, or of an untunnelled key whose mask
// matches only IPv6 tunnel addresses.
func maskTunnelIPv6(kt, mt *flow.Tunnel) bool {
	if tunnelIPv6(kt) {
		return true
	}
	if !isZero4(kt.IPv4Src) || !isZero4(kt.IPv4Dst) {
		return false
	}
	return isZero4(mt.IPv4Src) && isZero4(mt.IPv4Dst) && (!isZero16(mt.IPv6Src) || !isZero16(mt.IPv6Dst))
}

// appendTunnel appends a nested OVS_TUNNEL_KEY_ATTR_* set of type typ for
// the tunnel values vt, of the key tunnel kt. The flag attributes carry
// vt.Flags; in a mask, an ID attribute is present when the ID or the key
// flag is matched.
func appendTunnel(b []byte, typ uint16, kt, vt *flow.Tunnel, isMask bool) []byte {
	b, start := netlinkio.BeginNested(b, typ)
	if vt.Flags&flow.TunnelKey != 0 || (isMask && vt.ID != 0) {
		b = netlinkio.AppendBE64(b, tunAttrID, vt.ID)
	}
	v6 := tunnelIPv6(kt)
	if isMask {
		v6 = maskTunnelIPv6(kt, vt)
	}
	if v6 {
		if !isZero16(vt.IPv6Src) {
			b = netlinkio.AppendAttr(b, tunAttrIPv6Src, vt.IPv6Src[:])
		}
		if !isZero16(vt.IPv6Dst) {
			b = netlinkio.AppendAttr(b, tunAttrIPv6Dst, vt.IPv6Dst[:])
		}
	} else {
		if !isZero4(vt.IPv4Src) {
			b = netlinkio.AppendAttr(b, tunAttrIPv4Src, vt.IPv4Src[:])
		}
		if !isZero4(vt.IPv4Dst) {
			b = netlinkio.AppendAttr(b, tunAttrIPv4Dst, vt.IPv4Dst[:])
		}
	}
	if vt.TOS != 0 {
		b = netlinkio.AppendU8(b, tunAttrTOS, vt.TOS)
	}
	b = netlinkio.AppendU8(b, tunAttrTTL, vt.TTL) // the kernel requires it in a key
	if vt.Flags&flow.TunnelDontFragment != 0 {
		b = netlinkio.AppendFlag(b, tunAttrDontFragment)
	}
	if vt.Flags&flow.TunnelCsum != 0 {
		b = netlinkio.AppendFlag(b, tunAttrCsum)
	}
	if vt.TpSrc != 0 {
		b = netlinkio.AppendBE16(b, tunAttrTpSrc, vt.TpSrc)
	}
	if vt.TpDst != 0 {
		b = netlinkio.AppendBE16(b, tunAttrTpDst, vt.TpDst)
	}
	if vt.Flags&flow.TunnelOAM != 0 {
		b = netlinkio.AppendFlag(b, tunAttrOAM)
	}
	b = appendGbp(b, vt) // odp_gbp.go
	if opts := kt.GeneveOpts(); opts != nil {
		// A mask's options are as long as the key's: the kernel
		// refuses any other length.
		if isMask {
			opts = vt.Metadata.Opts[:len(opts)]
		}
		b = netlinkio.AppendAttr(b, tunAttrGeneveOpts, opts)
	}
	// ERSPAN metadata goes with a key (and a set(tunnel)) that has it,
	// and with a mask that matches any of it, laid out as the key's
	// version says; the kernel then matches the whole struct under it.
	if kt.ErspanVer != 0 && (!isMask || vt.ErspanVer != 0 || vt.ErspanIdx != 0 || vt.ErspanDir != 0 || vt.ErspanHwid != 0) {
		var p []byte
		b, p = netlinkio.AppendReserve(b, tunAttrERSPANOpts, erspanOptsLen)
		putErspanOpts(p, kt.ErspanVer, vt)
	}
	return netlinkio.EndNested(b, start)
}

// fragToODP maps Key.NwFrag bits to an OVS_FRAG_TYPE_* value.
func fragToODP(f uint8) uint8 {
	switch {
	case f&flow.FragLater != 0:
		return fragLater
	case f&flow.FragAny != 0:
		return fragFirst
	}
	return fragNone
}

// fragMaskToODP maps a mask of Key.NwFrag bits to the ODP frag mask byte:
// bit 0 selects "is a fragment", bit 1 "is a later fragment", as OVS
// userspace writes it, and the unused high bits are set with any of them.
func fragMaskToODP(f uint8) uint8 {
	var m uint8
	if f&flow.FragAny != 0 {
		m |= 1
	}
	if f&flow.FragLater != 0 {
		m |= 2
	}
	if m != 0 {
		m |= 0xfc
	}
	return m
}

// appendHeaders appends the L2, L3 and L4 attributes of values v in the
// shape s of key k.
func appendHeaders(b []byte, k, v *flow.Key, s *keyShape, isMask bool) []byte {
	if s.noEth {
		// The kernel takes a key with an ethertype and no Ethernet
		// attribute for a packet without Ethernet (MAC_PROTO_NONE), and
		// always matches the ethertype of one.
		et := v.EthType
		if isMask {
			et = 0xffff
		}
		b = netlinkio.AppendBE16(b, KeyAttrEthertype, et)
		return appendL3L4(b, v, s, isMask)
	}
	b, eth := netlinkio.AppendReserve(b, KeyAttrEthernet, sizeEthernet)
	copy(eth[0:6], v.EthSrc[:])
	copy(eth[6:12], v.EthDst[:])

	var encaps [2]int
	depth := 0
	for depth < s.tags {
		tag := v.VLANs[depth]
		tpid := tag.TPID
		if isMask {
			tpid = 0xffff // the kernel requires the TPID exact
		}
		b = netlinkio.AppendBE16(b, KeyAttrEthertype, tpid)
		b = netlinkio.AppendBE16(b, KeyAttrVLAN, tag.TCI)
		b, encaps[depth] = netlinkio.BeginNested(b, KeyAttrEncap)
		depth++
	}
	switch {
	case s.truncated:
		// A VLAN TPID with no readable tag: the kernel writes the TPID,
		// a zero TCI and an empty encapsulation. A mask needs only the
		// ethertype; the kernel always matches the TCI.
		b = netlinkio.AppendBE16(b, KeyAttrEthertype, v.EthType)
		if !isMask {
			b = netlinkio.AppendBE16(b, KeyAttrVLAN, 0)
			b = netlinkio.AppendAttr(b, KeyAttrEncap, nil)
		}
	case k.EthType < 0x600:
		// 802.3 (EthTypeNone): no ethertype in a key; in a mask, an
		// exact match on it. Inside a tag the mask needs it even when
		// zero: the kernel drops an empty (all-zero) encap from a mask
		// and then rejects the tag's vlan attribute. Other values below
		// 0x600 are written as they are: the kernel writes them in the
		// masked keys of flows that wildcard the ethertype (and rejects
		// them in a put).
		if isMask && (v.EthType != 0 || depth > 0) || !isMask && k.EthType != flow.EthTypeNone {
			b = netlinkio.AppendBE16(b, KeyAttrEthertype, v.EthType)
		}
	default:
		b = netlinkio.AppendBE16(b, KeyAttrEthertype, v.EthType)
		b = appendL3L4(b, v, s, isMask)
	}
	for depth > 0 {
		depth--
		b = netlinkio.EndNested(b, encaps[depth])
	}
	return b
}

func appendL3L4(b []byte, v *flow.Key, s *keyShape, isMask bool) []byte {
	frag := fragToODP(v.NwFrag)
	if isMask {
		frag = fragMaskToODP(v.NwFrag)
	}
	var p []byte
	switch s.l3 {
	case KeyAttrIPv4:
		b, p = netlinkio.AppendReserve(b, KeyAttrIPv4, sizeIPv4)
		copy(p[0:4], v.IPv4Src[:])
		copy(p[4:8], v.IPv4Dst[:])
		p[8], p[9], p[10], p[11] = v.NwProto, v.NwTos, v.NwTTL, frag
	case KeyAttrIPv6:
		b, p = netlinkio.AppendReserve(b, KeyAttrIPv6, sizeIPv6)
		copy(p[0:16], v.IPv6Src[:])
		copy(p[16:32], v.IPv6Dst[:])
		binary.BigEndian.PutUint32(p[32:], v.IPv6Label)
		p[36], p[37], p[38], p[39] = v.NwProto, v.NwTos, v.NwTTL, frag
	case KeyAttrARP:
		b, p = netlinkio.AppendReserve(b, KeyAttrARP, sizeARP)
		copy(p[0:4], v.IPv4Src[:])
		copy(p[4:8], v.IPv4Dst[:])
		binary.BigEndian.PutUint16(p[8:], uint16(v.NwProto))
		copy(p[10:16], v.ArpSHA[:])
		copy(p[16:22], v.ArpTHA[:])
	case KeyAttrMPLS:
		b = netlinkio.AppendBE32(b, KeyAttrMPLS, v.MPLSLSE)
	case KeyAttrNSH:
		// A key always carries it (the kernel requires it of an NSH
		// key), with the context of an MD type 1 header; a mask only
		// when it matches something (the kernel takes an NSH mask only
		// with an exact ethertype, which FitMask sees to).
		if !isMask || v.NSH != (flow.NSH{}) {
			b = appendNSHKey(b, &v.NSH, isMask || v.NSH.MDType == flow.NSHMDType1)
		}
	}
	switch s.l4 {
	case KeyAttrTCP, KeyAttrUDP, KeyAttrSCTP:
		b, p = netlinkio.AppendReserve(b, s.l4, sizeL4Ports)
		binary.BigEndian.PutUint16(p[0:], v.TpSrc)
		binary.BigEndian.PutUint16(p[2:], v.TpDst)
		if s.l4 == KeyAttrTCP {
			b = netlinkio.AppendBE16(b, KeyAttrTCPFlags, v.TCPFlags)
		}
	case KeyAttrICMP, KeyAttrICMPv6:
		b, p = netlinkio.AppendReserve(b, s.l4, sizeICMP)
		p[0], p[1] = uint8(v.TpSrc), uint8(v.TpDst)
		if s.nd {
			b, p = netlinkio.AppendReserve(b, KeyAttrND, sizeND)
			copy(p[0:16], v.NDTarget[:])
			copy(p[16:22], v.NDSLL[:])
			copy(p[22:28], v.NDTLL[:])
		}
	}
	return b
}

// FitMask narrows or widens m, a mask for key k, to the mask the kernel
// datapath installs for it, so that callers can hold exactly what the
// kernel holds: DecodeMask(AppendMask(k, m)) equals FitMask(k, m). The
// kernel's rules, and what FitMask does for them:
//
//   - Some fields are matched exactly or not at all: in_port, the ethertype,
//     the fragment type, a VLAN tag's TPID and presence bit. A partially
//     masked one becomes exact.
//   - A field may be matched only if the field that says it exists is
//     matched exactly: L3 fields need the ethertype, L4 fields the IP
//     protocol (and the ethertype), Neighbor Discovery fields the ICMPv6
//     type. Those prerequisites are made exact.
//   - The VLAN TCI is always matched in full when no tag is present
//     (no tag means "TCI zero"), as the kernel does.
//   - Bits of fields the key's protocols do not carry (IPv6 addresses of an
//     IPv4 key, ports of a later fragment, ICMP type bits above 8) are
//     cleared: the kernel has nowhere to put them. Where such bits were set,
//     the fields that decide the protocols (ethertype, IP protocol, fragment
//     type, ICMPv6 type) are made exact first, so the fitted mask never
//     matches a packet the original mask would not.
//   - Tunnel masks: only the flags the kernel knows, the key flag with any
//     ID bit, addresses of the key's family only (none for an untunnelled
//     key, where any tunnel mask makes the kernel match "not tunnelled").
//   - OFMetadata and Regs are cleared: the datapath never sees them.
//
// Every change either adds bits (a more specific flow) or removes bits
// that no packet matching the fitted mask could have set, so a flow
// installed with the fitted mask matches a subset of what m matched.
func FitMask(k *flow.Key, m *flow.Mask) {
	m.OFMetadata = 0
	m.Regs = [16]uint32{}
	m.ConjID = 0 // OpenFlow's conj_id: a table lookup's, never the datapath's
	if m.InPort != 0 {
		m.InPort = ^uint32(0)
	}
	m.CtState &= ctStateSupported
	fitTunnel(&k.Tunnel, &m.Tunnel)
	fitCtTuple(k, m)

	s := shapeOf(k)
	if s.noHeaders {
		// Metadata only: there is nothing to match headers against.
		meta := *m
		*m = flow.Mask{}
		copyMeta(m, &meta)
		m.VLANs[0].TCI, m.VLANs[1].TCI = 0xffff, 0xffff
		return
	}

	// VLAN tags: exact TPID and presence bit for a tag that is there, the
	// whole TCI (zero) for one that is not.
	for i := range m.VLANs {
		if i < s.tags {
			m.VLANs[i].TPID = 0xffff
			m.VLANs[i].TCI |= flow.VLANPresent
		} else {
			m.VLANs[i] = flow.VLAN{TCI: 0xffff}
		}
	}

	carried := carriedMask(k, &s)
	cw, mw := carried.Words(), m.Words()
	dropped := false
	for i := flow.StageEnd[1]; i < flow.KeyWords; i++ {
		if mw[i]&^cw[i] != 0 {
			dropped = true
		}
		mw[i] &= cw[i]
	}
	if m.MPLSLSE != 0 && s.l3 != KeyAttrMPLS {
		dropped = true
		m.MPLSLSE = 0
	}
	if dropped {
		m.EthType = 0xffff
		if s.l3 == KeyAttrIPv4 || s.l3 == KeyAttrIPv6 {
			m.NwProto = 0xff
			m.NwFrag = flow.FragAny | flow.FragLater
		}
		if s.l4 == KeyAttrICMPv6 {
			m.TpSrc |= 0x00ff
		}
	}

	// Prerequisites, innermost first.
	if s.nd && (m.NDTarget != [16]byte{} || m.NDSLL != [6]byte{} || m.NDTLL != [6]byte{}) {
		m.TpSrc |= 0x00ff
	}
	if s.l4 != 0 && (m.TpSrc != 0 || m.TpDst != 0 || m.TCPFlags != 0) {
		m.NwProto = 0xff
	}
	if m.NwFrag != 0 {
		m.NwFrag = flow.FragAny | flow.FragLater
	}
	if l3Masked(m, &s) {
		m.EthType = 0xffff
	}
	if m.EthType != 0 {
		m.EthType = 0xffff
	}
	m.L3 = false
	if s.noEth {
		// No Ethernet attribute to match; the kernel matches the
		// ethertype of a packet without one in full.
		m.EthSrc, m.EthDst = [6]byte{}, [6]byte{}
		m.EthType = 0xffff
	}
}

// fitCtTuple fits the mask of the original-direction tuple: the kernel
// holds the addresses of the key's family only (the IPv4 and IPv6 tuples
// share storage there), none for a key that is neither, and dumps a tuple
// mask only when it matches the protocol; so the protocol, and the
// ethertype that chose the family, become exact.
func fitCtTuple(k *flow.Key, m *flow.Mask) {
	t := &m.CtOrig
	if *t == (flow.CtTuple{}) {
		return
	}
	if k.CtOrig == (flow.CtTuple{}) {
		// The key has no tuple (no connection, or an invalid one): the
		// kernel holds no tuple mask for such a flow. What keeps packets
		// that have a tuple out of it is their conntrack state, which a
		// rule reading the tuple must match (OpenFlow's prerequisite for
		// ct_nw_src and the rest: a tracked, valid connection), and a
		// tuple comes only with a tracked, valid connection.
		*t = flow.CtTuple{}
		return
	}
	switch k.EthType {
	case flow.EthTypeIPv4:
		t.IPv6Src, t.IPv6Dst = [16]byte{}, [16]byte{}
	case flow.EthTypeIPv6:
		t.IPv4Src, t.IPv4Dst = [4]byte{}, [4]byte{}
	default:
		*t = flow.CtTuple{}
		return
	}
	t.Proto = 0xff
	m.EthType = 0xffff
}

// copyMeta copies the stage-0 metadata fields the datapath knows.
func copyMeta(dst, src *flow.Mask) {
	dst.Tunnel = src.Tunnel
	dst.InPort = src.InPort
	dst.Priority = src.Priority
	dst.Mark = src.Mark
	dst.RecircID = src.RecircID
	dst.DPHash = src.DPHash
	dst.CtState = src.CtState
	dst.CtZone = src.CtZone
	dst.CtMark = src.CtMark
	dst.CtLabels = src.CtLabels
	dst.CtOrig = src.CtOrig
}

// l3Masked reports whether m matches any bit of the key's L3 attribute.
func l3Masked(m *flow.Mask, s *keyShape) bool {
	switch s.l3 {
	case KeyAttrIPv4:
		return !isZero4(m.IPv4Src) || !isZero4(m.IPv4Dst) || m.NwProto != 0 || m.NwTos != 0 || m.NwTTL != 0 || m.NwFrag != 0
	case KeyAttrIPv6:
		return !isZero16(m.IPv6Src) || !isZero16(m.IPv6Dst) || m.IPv6Label != 0 || m.NwProto != 0 || m.NwTos != 0 || m.NwTTL != 0 || m.NwFrag != 0
	case KeyAttrARP:
		return !isZero4(m.IPv4Src) || !isZero4(m.IPv4Dst) || m.NwProto != 0 || m.ArpSHA != [6]byte{} || m.ArpTHA != [6]byte{}
	case KeyAttrMPLS:
		return m.MPLSLSE != 0
	case KeyAttrNSH:
		return m.NSH != flow.NSH{}
	}
	return false
}

// carriedMask returns the bits of the L3 and L4 stages that the attributes
// of a key of shape s carry.
func carriedMask(k *flow.Key, s *keyShape) flow.Mask {
	var c flow.Mask
	ones4 := [4]byte{0xff, 0xff, 0xff, 0xff}
	ones6 := [6]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}
	var ones16 [16]byte
	for i := range ones16 {
		ones16[i] = 0xff
	}
	switch s.l3 {
	case KeyAttrIPv4:
		c.IPv4Src, c.IPv4Dst = ones4, ones4
		c.NwProto, c.NwTos, c.NwTTL, c.NwFrag = 0xff, 0xff, 0xff, flow.FragAny|flow.FragLater
	case KeyAttrIPv6:
		c.IPv6Src, c.IPv6Dst = ones16, ones16
		c.IPv6Label = 0x000fffff
		c.NwProto, c.NwTos, c.NwTTL, c.NwFrag = 0xff, 0xff, 0xff, flow.FragAny|flow.FragLater
	case KeyAttrARP:
		c.IPv4Src, c.IPv4Dst = ones4, ones4
		c.NwProto = 0xff
		c.ArpSHA, c.ArpTHA = ones6, ones6
	case KeyAttrNSH:
		c.NSH = flow.NSH{Flags: 0xff, TTL: 0xff, MDType: 0xff, NP: 0xff, SPI: flow.NSHSPIMask, SI: 0xff}
		if k.NSH.MDType == flow.NSHMDType1 {
			c.NSH.C = [4]uint32{^uint32(0), ^uint32(0), ^uint32(0), ^uint32(0)}
		}
	}
	switch s.l4 {
	case KeyAttrTCP:
		c.TpSrc, c.TpDst, c.TCPFlags = 0xffff, 0xffff, 0xffff
	case KeyAttrUDP, KeyAttrSCTP:
		c.TpSrc, c.TpDst = 0xffff, 0xffff
	case KeyAttrICMP, KeyAttrICMPv6:
		c.TpSrc, c.TpDst = 0x00ff, 0x00ff
	}
	if s.nd {
		c.NDTarget = ones16
		c.NDSLL, c.NDTLL = ones6, ones6
	}
	return c
}

// fitTunnel fits the tunnel mask mt of key tunnel kt: only the flags the
// kernel knows, the key flag with any ID bit, and addresses of one family.
func fitTunnel(kt, mt *flow.Tunnel) {
	if *mt == (flow.Tunnel{}) {
		return
	}
	mt.Flags &= flow.TunnelDontFragment | flow.TunnelCsum | flow.TunnelKey | flow.TunnelOAM
	fitErspan(kt, mt) // odp_erspan.go
	if kt.ErspanVer != 0 || len(kt.GeneveOpts()) > 0 {
		// The kernel holds one block of options: a key with Geneve
		// or ERSPAN ones has no VXLAN-GBP to match.
		mt.GbpID, mt.GbpFlags = 0, 0
	}
	// Geneve options go to the kernel as the key's TLVs under a mask of
	// the same length, which the kernel matches exactly.
	if n := len(kt.GeneveOpts()); n > 0 {
		// The mask keeps the form bit, so a masked key does too.
		mt.Flags |= flow.TunnelUDPIF
		mt.Metadata.Present = 0xff
		clear(mt.Metadata.Opts[n:])
	} else {
		mt.Metadata = flow.TunMetadata{}
	}
	if mt.ID != 0 {
		mt.Flags |= flow.TunnelKey
	}
	ones4 := [4]byte{0xff, 0xff, 0xff, 0xff}
	var ones16 [16]byte
	for i := range ones16 {
		ones16[i] = 0xff
	}
	if *kt == (flow.Tunnel{}) {
		// The kernel matches "not tunnelled" by the tunnel protocol,
		// which any tunnel mask attribute makes exact, and keeps no
		// address bits for an untunnelled key (it dumps none). The TTL
		// mask keeps the attribute there once the addresses are gone.
		// Nor GBP bits: the key has no options, and its in_port,
		// always exact, is no tunnel's.
		if !isZero4(mt.IPv4Src) || !isZero4(mt.IPv4Dst) || !isZero16(mt.IPv6Src) || !isZero16(mt.IPv6Dst) {
			mt.IPv4Src, mt.IPv4Dst, mt.IPv6Src, mt.IPv6Dst = [4]byte{}, [4]byte{}, [16]byte{}, [16]byte{}
			mt.TTL = 0xff
		}
		mt.GbpID, mt.GbpFlags = 0, 0
		return
	}
	if maskTunnelIPv6(kt, mt) {
		if !isZero4(mt.IPv4Src) || !isZero4(mt.IPv4Dst) {
			mt.IPv4Src, mt.IPv4Dst = [4]byte{}, [4]byte{}
			mt.IPv6Dst = ones16
		}
	} else if !isZero16(mt.IPv6Src) || !isZero16(mt.IPv6Dst) {
		mt.IPv6Src, mt.IPv6Dst = [16]byte{}, [16]byte{}
		mt.IPv4Dst = ones4
	}
}

// attrSet holds the attributes of one flow key or mask level by type, as
// the kernel's a[] array does; nested VLAN levels are parsed into the same
// set once the outer level's VLAN attributes are consumed.
type attrSet struct {
	present uint64
	data    [keyAttrMax + 1][]byte
}

// Attributes the Key has no fields for. DecodeKey and DecodeMask check
// their lengths and otherwise ignore them.
const unrepresented = 1<<KeyAttrNSH |
	1<<KeyAttrPacketType | 1<<KeyAttrNDExtensions | 1<<KeyAttrTunnelInfo | 1<<KeyAttrIPv6ExtHeaders

func (a *attrSet) has(t KeyAttr) bool { return a.present&(1<<t) != 0 }
func (a *attrSet) clear(t KeyAttr)    { a.present &^= 1 << t }

// take returns the payload of t and consumes it.
func (a *attrSet) take(t KeyAttr) []byte {
	a.present &^= 1 << t
	return a.data[t]
}

func (a *attrSet) be16(t KeyAttr) uint16 { return binary.BigEndian.Uint16(a.data[t]) }

func allZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

// parse adds the attributes in b to the set. Types beyond those known are
// skipped. In a mask, an all-zero attribute counts as absent, as in the
// kernel.
func (a *attrSet) parse(b []byte, isMask bool) error {
	it := netlinkio.NewAttrIter(b)
	for it.Next() {
		t := it.Type()
		if int(t) > keyAttrMax || keyAttrLen[t] == 0 {
			continue
		}
		d := it.Data()
		if want := int(keyAttrLen[t]); want >= 0 && len(d) != want {
			return keyErr("attribute %d has %d bytes, want %d", t, len(d), want)
		}
		if t == KeyAttrMPLS && len(d)%sizeMPLS != 0 {
			// Kernel 6.1 writes one entry per label it matches on: none
			// in the masked key of a flow that wildcards them.
			return keyErr("mpls attribute has %d bytes, want a multiple of 4", len(d))
		}
		if a.has(t) {
			return keyErr("duplicate attribute %d", t)
		}
		if isMask && allZero(d) {
			continue
		}
		a.present |= 1 << t
		a.data[t] = d
	}
	if err := it.Err(); err != nil {
		return fmt.Errorf("%w: %w", ErrKeyAttr, err)
	}
	return nil
}

// DecodeKey decodes a flow key (OVS_FLOW_ATTR_KEY, OVS_PACKET_ATTR_KEY)
// into k, which it first zeroes; k may be reused across calls. It does not
// allocate unless it returns an error, and it never keeps b.
//
// Absent attributes leave their fields zero; a key without ethernet and
// ethertype attributes (metadata only) has EthType zero, and one with an
// ethernet but no ethertype attribute is an 802.3 frame, flow.EthTypeNone.
// Attributes of types newer than this package are skipped, and so are the
// ones Key has no fields for: conntrack original-direction tuples, NSH
// outside an NSH key,
// IPv6 extension headers; Geneve options longer than flow.TunMetadataSpace are an error. An
// error wrapping ErrKeyAttr reports a malformed attribute (wrong length,
// duplicate, truncated), a fragment type above 2, a VLAN ethertype without
// its tag, or an attribute that does not apply to the key's protocols (TCP
// ports of a later fragment, say). An ethertype below 0x600 is kept as it
// is: the kernel writes 0 in the masked key of a flow that wildcards it.
func DecodeKey(b []byte, k *flow.Key) error {
	*k = flow.Key{}
	var a attrSet
	if err := a.parse(b, false); err != nil {
		return err
	}
	if err := decodeMeta(&a, k, false); err != nil {
		return err
	}
	hasEth := a.has(KeyAttrEthernet)
	if hasEth {
		d := a.take(KeyAttrEthernet)
		copy(k.EthSrc[:], d[0:6])
		copy(k.EthDst[:], d[6:12])
	}
	truncated := false
	for level := 0; level < 2 && a.has(KeyAttrEthertype) && isVLANType(a.be16(KeyAttrEthertype)); level++ {
		tpid := a.be16(KeyAttrEthertype)
		if !hasEth {
			return keyErr("vlan ethertype %#04x without an ethernet attribute", tpid)
		}
		if !a.has(KeyAttrVLAN) || !a.has(KeyAttrEncap) {
			return keyErr("ethertype %#04x without vlan and encap attributes", tpid)
		}
		tci := binary.BigEndian.Uint16(a.take(KeyAttrVLAN))
		enc := a.take(KeyAttrEncap)
		a.clear(KeyAttrEthertype)
		if tci&flow.VLANPresent == 0 {
			if tci != 0 || len(enc) != 0 {
				return keyErr("vlan tci %#04x without the present bit", tci)
			}
			k.EthType = tpid
			truncated = true
			break
		}
		k.VLANs[level] = flow.VLAN{TPID: tpid, TCI: tci}
		if err := a.parse(enc, false); err != nil {
			return err
		}
	}
	if !truncated {
		switch {
		case a.has(KeyAttrEthertype):
			k.EthType = binary.BigEndian.Uint16(a.take(KeyAttrEthertype))
			k.L3 = !hasEth
		case hasEth:
			k.EthType = flow.EthTypeNone
		}
	}
	if err := decodeL3L4(&a, k, k, false); err != nil {
		return err
	}
	if err := takeCtTuple(&a, k.EthType, &k.CtOrig); err != nil {
		return err
	}
	return leftover(&a)
}

// leftover reports attributes that do not apply to the key decoded.
func leftover(a *attrSet) error {
	if rest := a.present &^ unrepresented; rest != 0 {
		for t := range keyAttrMax + 1 {
			if rest&(1<<t) != 0 {
				return keyErr("attribute %d does not apply to this key", t)
			}
		}
	}
	return nil
}

// decodeMeta decodes the metadata attributes into v.
func decodeMeta(a *attrSet, v *flow.Key, isMask bool) error {
	u32 := func(t KeyAttr) uint32 {
		if !a.has(t) {
			return 0
		}
		return binary.NativeEndian.Uint32(a.take(t))
	}
	v.RecircID = u32(KeyAttrRecircID)
	v.DPHash = u32(KeyAttrDPHash)
	v.Priority = u32(KeyAttrPriority)
	v.InPort = u32(KeyAttrInPort)
	if isMask {
		// The kernel matches the 16-bit port exactly or not at all, and
		// dumps a wildcarded one as 0xffff0000.
		if v.InPort&0xffff != 0 {
			v.InPort = ^uint32(0)
		} else {
			v.InPort = 0
		}
	}
	v.Mark = u32(KeyAttrSkbMark)
	v.CtState = u32(KeyAttrCtState)
	v.CtMark = u32(KeyAttrCtMark)
	if a.has(KeyAttrCtZone) {
		v.CtZone = binary.NativeEndian.Uint16(a.take(KeyAttrCtZone))
	}
	if a.has(KeyAttrCtLabels) {
		copy(v.CtLabels[:], a.take(KeyAttrCtLabels))
	}
	if a.has(KeyAttrTunnel) {
		if err := decodeTunnelKey(a.take(KeyAttrTunnel), &v.Tunnel, isMask); err != nil {
			return err
		}
	}
	return nil
}

// tunAttrLen is the payload size of each OVS_TUNNEL_KEY_ATTR_*, -1 for
// variable ones.
var tunAttrLen = [tunAttrMax + 1]int8{
	tunAttrID: 8, tunAttrIPv4Src: 4, tunAttrIPv4Dst: 4, tunAttrTOS: 1, tunAttrTTL: 1,
	tunAttrDontFragment: 0, tunAttrCsum: 0, tunAttrOAM: 0, tunAttrGeneveOpts: -1,
	tunAttrTpSrc: 2, tunAttrTpDst: 2, tunAttrVXLANOpts: -1, tunAttrIPv6Src: 16,
	tunAttrIPv6Dst: 16, tunAttrPad: -1, tunAttrERSPANOpts: -1, tunAttrIPv4Bridge: 0,
}

// decodeTunnel decodes nested OVS_TUNNEL_KEY_ATTR_* attributes into t. The
// same attributes serve keys and masks: an ID attribute sets
// flow.TunnelKey, flag attributes set their flags.
func decodeTunnel(b []byte, t *flow.Tunnel) error { return decodeTunnelKey(b, t, false) }

// decodeTunnelKey is decodeTunnel for a key (isMask false) or a mask: a
// mask's Geneve options have Metadata.Present 0xff (the length is exact).
func decodeTunnelKey(b []byte, t *flow.Tunnel, isMask bool) error {
	var seen uint32
	v4, v6 := false, false
	it := netlinkio.NewAttrIter(b)
	for it.Next() {
		typ := it.Type()
		if typ > tunAttrMax {
			continue
		}
		d := it.Data()
		if want := int(tunAttrLen[typ]); want >= 0 && len(d) != want {
			return keyErr("tunnel attribute %d has %d bytes, want %d", typ, len(d), want)
		}
		if seen&(1<<typ) != 0 && typ != tunAttrPad {
			return keyErr("duplicate tunnel attribute %d", typ)
		}
		seen |= 1 << typ
		switch typ {
		case tunAttrID:
			t.ID = binary.BigEndian.Uint64(d)
			t.Flags |= flow.TunnelKey
		case tunAttrIPv4Src:
			copy(t.IPv4Src[:], d)
			v4 = true
		case tunAttrIPv4Dst:
			copy(t.IPv4Dst[:], d)
			v4 = true
		case tunAttrIPv6Src:
			copy(t.IPv6Src[:], d)
			v6 = true
		case tunAttrIPv6Dst:
			copy(t.IPv6Dst[:], d)
			v6 = true
		case tunAttrTOS:
			t.TOS = d[0]
		case tunAttrTTL:
			t.TTL = d[0]
		case tunAttrDontFragment:
			t.Flags |= flow.TunnelDontFragment
		case tunAttrCsum:
			t.Flags |= flow.TunnelCsum
		case tunAttrOAM:
			t.Flags |= flow.TunnelOAM
		case tunAttrTpSrc:
			t.TpSrc = binary.BigEndian.Uint16(d)
		case tunAttrTpDst:
			t.TpDst = binary.BigEndian.Uint16(d)
		case tunAttrGeneveOpts:
			if len(d)%4 != 0 {
				return keyErr("geneve options of %d bytes, not a multiple of 4", len(d))
			}
			if len(d) > flow.TunMetadataSpace {
				return keyErr("geneve options of %d bytes: govswitchd holds at most %d", len(d), flow.TunMetadataSpace)
			}
			if len(d) == 0 {
				break
			}
			copy(t.Metadata.Opts[:], d)
			t.Metadata.Present = uint64(len(d))
			if isMask {
				t.Metadata.Present = 0xff
			}
			t.Flags |= flow.TunnelUDPIF
		case tunAttrERSPANOpts:
			if err := decodeErspanOpts(d, t, isMask); err != nil {
				return err
			}
		case tunAttrVXLANOpts:
			if err := decodeVxlanOpts(d, t); err != nil { // odp_gbp.go
				return err
			}
		}
	}
	if err := it.Err(); err != nil {
		return fmt.Errorf("%w: tunnel: %w", ErrKeyAttr, err)
	}
	if v4 && v6 {
		return keyErr("tunnel has both IPv4 and IPv6 addresses")
	}
	if n := seen & (1<<tunAttrGeneveOpts | 1<<tunAttrERSPANOpts | 1<<tunAttrVXLANOpts); n&(n-1) != 0 {
		// The kernel takes one block of options.
		return keyErr("tunnel has more than one of geneve, erspan and vxlan options")
	}
	return nil
}

// decodeL3L4 decodes the L3 and L4 attributes of key k into v (k itself
// for a key, the mask otherwise). k's EthType, and for L4 its IP protocol
// and fragment type, must already be known.
func decodeL3L4(a *attrSet, k, v *flow.Key, isMask bool) error {
	s := shapeOf(k)
	if s.l3 != 0 && a.has(s.l3) {
		d := a.take(s.l3)
		var frag uint8
		switch s.l3 {
		case KeyAttrIPv4:
			copy(v.IPv4Src[:], d[0:4])
			copy(v.IPv4Dst[:], d[4:8])
			v.NwProto, v.NwTos, v.NwTTL, frag = d[8], d[9], d[10], d[11]
		case KeyAttrIPv6:
			copy(v.IPv6Src[:], d[0:16])
			copy(v.IPv6Dst[:], d[16:32])
			v.IPv6Label = binary.BigEndian.Uint32(d[32:])
			v.NwProto, v.NwTos, v.NwTTL, frag = d[36], d[37], d[38], d[39]
			if isMask {
				v.IPv6Label &= 0x000fffff
			}
		case KeyAttrARP:
			copy(v.IPv4Src[:], d[0:4])
			copy(v.IPv4Dst[:], d[4:8])
			v.NwProto = uint8(binary.BigEndian.Uint16(d[8:]))
			copy(v.ArpSHA[:], d[10:16])
			copy(v.ArpTHA[:], d[16:22])
		case KeyAttrMPLS:
			if len(d) >= sizeMPLS {
				v.MPLSLSE = binary.BigEndian.Uint32(d)
			}
		case KeyAttrNSH:
			if err := decodeNSHKey(d, &v.NSH, isMask); err != nil {
				return err
			}
			v.NSH.SPI &= flow.NSHSPIMask
		}
		if s.l3 == KeyAttrIPv4 || s.l3 == KeyAttrIPv6 {
			if isMask {
				if frag&1 != 0 {
					v.NwFrag |= flow.FragAny
				}
				if frag&2 != 0 {
					v.NwFrag |= flow.FragLater
				}
			} else {
				switch frag {
				case fragNone:
				case fragFirst:
					v.NwFrag = flow.FragAny
				case fragLater:
					v.NwFrag = flow.FragAny | flow.FragLater
				default:
					return keyErr("fragment type %d", frag)
				}
			}
		}
		if !isMask {
			s = shapeOf(k) // the IP protocol and fragment type decide L4
		}
	}
	if s.l4 != 0 && a.has(s.l4) {
		d := a.take(s.l4)
		switch s.l4 {
		case KeyAttrTCP, KeyAttrUDP, KeyAttrSCTP:
			v.TpSrc = binary.BigEndian.Uint16(d[0:])
			v.TpDst = binary.BigEndian.Uint16(d[2:])
		case KeyAttrICMP, KeyAttrICMPv6:
			v.TpSrc, v.TpDst = uint16(d[0]), uint16(d[1])
		}
		if !isMask {
			s = shapeOf(k) // the ICMPv6 type decides ND
		}
	}
	if s.l4 == KeyAttrTCP && a.has(KeyAttrTCPFlags) {
		v.TCPFlags = binary.BigEndian.Uint16(a.take(KeyAttrTCPFlags))
	}
	if s.nd && a.has(KeyAttrND) {
		d := a.take(KeyAttrND)
		copy(v.NDTarget[:], d[0:16])
		copy(v.NDSLL[:], d[16:22])
		copy(v.NDTLL[:], d[22:28])
	}
	return nil
}

// DecodeMask decodes a flow mask (OVS_FLOW_ATTR_MASK) for the key k into
// m, which it first zeroes. As in the kernel, an absent or all-zero
// attribute wildcards its fields, except the VLAN TCI, which the kernel
// always matches in full unless the mask says otherwise. A mask decodes in
// the shape of its key: the ethertype attribute of a VLAN level is the
// tag's TPID mask. Partial masks the kernel does not keep are widened as it
// does (in_port, fragment type). It does not allocate unless it returns an
// error. Errors wrap ErrKeyAttr, as for DecodeKey; a mask attribute that
// does not apply to k is one.
func DecodeMask(b []byte, k *flow.Key, m *flow.Mask) error {
	*m = flow.Mask{}
	v := m.Key()
	var a attrSet
	if err := a.parse(b, true); err != nil {
		return err
	}
	if err := decodeMeta(&a, v, true); err != nil {
		return err
	}
	// The kernel always matches the TCI in full unless the mask says
	// otherwise (for a metadata-only key too: FitMask agrees).
	m.VLANs[0].TCI, m.VLANs[1].TCI = 0xffff, 0xffff
	s := shapeOf(k)
	if s.noHeaders {
		return leftover(&a)
	}
	if a.has(KeyAttrEthernet) {
		d := a.take(KeyAttrEthernet)
		copy(m.EthSrc[:], d[0:6])
		copy(m.EthDst[:], d[6:12])
	}
	level := 0
	for ; level < s.tags && a.has(KeyAttrEncap); level++ {
		if a.has(KeyAttrEthertype) {
			m.VLANs[level].TPID = binary.BigEndian.Uint16(a.take(KeyAttrEthertype))
		}
		if a.has(KeyAttrVLAN) {
			m.VLANs[level].TCI = binary.BigEndian.Uint16(a.take(KeyAttrVLAN))
		}
		if err := a.parse(a.take(KeyAttrEncap), true); err != nil {
			return err
		}
	}
	if a.has(KeyAttrVLAN) && s.truncated && level == s.tags {
		m.VLANs[level].TCI = binary.BigEndian.Uint16(a.take(KeyAttrVLAN))
	}
	if a.has(KeyAttrEthertype) {
		m.EthType = binary.BigEndian.Uint16(a.take(KeyAttrEthertype))
	}
	if err := decodeL3L4(&a, k, v, true); err != nil {
		return err
	}
	if err := takeCtTuple(&a, k.EthType, &m.CtOrig); err != nil {
		return err
	}
	return leftover(&a)
}
