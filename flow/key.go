// Package flow is the vocabulary of the switch: Key, the fixed-size value
// that names a packet's headers and metadata; Mask, which says which of a
// Key's bits matter; extraction of a Key from packet bytes; hashing; and the
// textual form ovs-dpctl prints.
//
// Key and Mask hold no pointers and no slices. A Key is copied, compared and
// hashed as an array of 64-bit words (see Words); the layout is ordered by
// lookup stage — metadata, L2, L3, L4 — so a staged classifier can hash a
// prefix of the words. The layout has no implicit padding; explicit blank
// fields fill the gaps and are always zero.
package flow

import "unsafe"

// Tunnel is the outer header of a packet that arrived through a tunnel
// vport (OVS_KEY_ATTR_TUNNEL). The zero Tunnel means "not tunnelled".
// Exactly one of the IPv4 or IPv6 address pairs is set on a tunnelled packet.
type Tunnel struct {
	ID      uint64  // tunnel key (VNI, GRE key); valid when Flags&TunnelKey
	IPv4Src [4]byte // outer IPv4 source
	IPv4Dst [4]byte // outer IPv4 destination
	IPv6Src [16]byte
	IPv6Dst [16]byte
	TpSrc   uint16 // outer UDP source port
	TpDst   uint16 // outer UDP destination port
	Flags   uint16 // TunnelDontFragment | TunnelCsum | TunnelKey | TunnelOAM | TunnelUDPIF
	TOS     uint8
	TTL     uint8
	// ERSPAN metadata (OVS_TUNNEL_KEY_ATTR_ERSPAN_OPTS): ErspanVer 1
	// (type II) carries ErspanIdx, the 20-bit port index; 2 (type III)
	// carries ErspanDir (0 ingress, 1 egress) and the 6-bit ErspanHwid.
	// ErspanVer 0 means the packet has none (not an ERSPAN tunnel).
	ErspanVer  uint8
	ErspanDir  uint8
	ErspanHwid uint8
	_          uint8
	ErspanIdx  uint32
	// VXLAN Group Based Policy (OVS_TUNNEL_KEY_ATTR_VXLAN_OPTS'
	// OVS_VXLAN_EXT_GBP): the 16-bit group policy ID and the 8 flag bits
	// of the GBP header (0x40 don't learn, 0x08 policy applied), as
	// OpenFlow's tun_gbp_id and tun_gbp_flags. Both zero means none.
	GbpID    uint16
	GbpFlags uint8
	_        [5]uint8
	// Metadata is the packet's Geneve options (tun_metadata.go).
	Metadata TunMetadata
}

// Tunnel flags, carried in Tunnel.Flags.
const (
	TunnelDontFragment uint16 = 1 << 0 // outer DF bit
	TunnelCsum         uint16 = 1 << 1 // outer checksum present
	TunnelKey          uint16 = 1 << 2 // Tunnel.ID is meaningful
	TunnelOAM          uint16 = 1 << 3 // OAM frame
	// TunnelUDPIF says Tunnel.Metadata holds the Geneve options as the
	// datapath carries them (TLVs) rather than as tun_metadata fields.
	// It is ours, never a datapath or OpenFlow flag.
	TunnelUDPIF uint16 = 1 << 4
)

// VLAN is one 802.1Q or 802.1ad tag.
type VLAN struct {
	// TPID is the tag protocol identifier: 0x8100 (802.1Q) or 0x88a8
	// (802.1ad). Zero when TCI&VLANPresent is clear.
	TPID uint16
	// TCI is the tag control information (PCP, DEI, VID) with the DEI/CFI bit
	// (VLANPresent, 0x1000) forced on to mean "a tag is present", as the
	// datapath does. A TCI of zero means no tag.
	TCI uint16
}

// VLANPresent is the bit of VLAN.TCI that marks a tag as present. It is the
// CFI/DEI bit of the wire TCI, which Ethernet never sets; the datapath
// reuses it, and so do we.
const VLANPresent uint16 = 0x1000

// VLANVIDMask and VLANPCPMask select the VID and PCP of a TCI.
const (
	VLANVIDMask uint16 = 0x0fff
	VLANPCPMask uint16 = 0xe000
)

// Fragment bits of Key.NwFrag.
const (
	FragAny   uint8 = 1 << 0 // the packet is a fragment (first or later)
	FragLater uint8 = 1 << 1 // the packet is a fragment other than the first
)

// Connection-tracking state bits of Key.CtState (OVS_CS_F_* values).
const (
	CtNew         uint32 = 0x01
	CtEstablished uint32 = 0x02
	CtRelated     uint32 = 0x04
	CtReplyDir    uint32 = 0x08
	CtInvalid     uint32 = 0x10
	CtTracked     uint32 = 0x20
	CtSrcNAT      uint32 = 0x40
	CtDstNAT      uint32 = 0x80
)

// EthTypeNone is the EthType of an 802.3 frame without a SNAP ethertype
// (length field below 0x600), as OVS writes it.
const EthTypeNone uint16 = 0x05ff

// Common ethertypes and IP protocols.
const (
	EthTypeIPv4  uint16 = 0x0800
	EthTypeARP   uint16 = 0x0806
	EthTypeRARP  uint16 = 0x8035
	EthTypeVLAN  uint16 = 0x8100 // 802.1Q
	EthTypeQinQ  uint16 = 0x88a8 // 802.1ad
	EthTypeIPv6  uint16 = 0x86dd
	EthTypeMPLS  uint16 = 0x8847
	EthTypeMPLSM uint16 = 0x8848 // MPLS multicast

	IPProtoICMP   uint8 = 1
	IPProtoTCP    uint8 = 6
	IPProtoUDP    uint8 = 17
	IPProtoICMPv6 uint8 = 58
	IPProtoSCTP   uint8 = 132
)

// Key is every field the kernel datapath and the OpenFlow tables match on.
//
// The zero Key is a valid key: no metadata, no headers. Fields that do not
// apply to a packet (IPv6 fields of an IPv4 packet, ports of a later
// fragment) are zero.
//
// A few fields carry more than one header, as in OVS:
//   - for ARP and RARP, IPv4Src/IPv4Dst are the sender and target protocol
//     addresses (spa, tpa), NwProto is the low byte of the opcode, and
//     ArpSHA/ArpTHA the hardware addresses;
//   - for ICMP and ICMPv6, TpSrc is the type and TpDst the code;
//   - for ICMPv6 Neighbor Discovery, NDTarget, NDSLL and NDTLL hold the
//     target address and the link-layer address options.
type Key struct {
	// ---- Stage 0: metadata (from the datapath and the OpenFlow pipeline).

	Tunnel   Tunnel
	InPort   uint32 // datapath port number (OpenFlow: in_port after mapping)
	Priority uint32 // skb priority
	Mark     uint32 // skb mark (OpenFlow pkt_mark)
	RecircID uint32
	DPHash   uint32
	CtState  uint32 // Ct* bits
	CtZone   uint16
	_        [2]byte
	CtMark   uint32
	CtLabels [16]byte
	// CtOrig is the original-direction tuple of the packet's connection
	// (of the parent connection for a related one), which the datapath
	// reports after a ct action (OVS_KEY_ATTR_CT_ORIG_TUPLE_IPV4/IPV6);
	// OpenFlow's ct_nw_src ... ct_tp_dst. The zero CtTuple means none.
	CtOrig CtTuple
	// OFMetadata is the OpenFlow 1.3 metadata field and Regs are the Nicira
	// registers reg0..reg15. The datapath never sees them; they live here so
	// one classifier matches on everything.
	OFMetadata uint64
	Regs       [16]uint32

	// ---- Stage 1: L2.

	VLANs   [2]VLAN // VLANs[0] is the outermost tag; VLANs[1] an inner 802.1Q tag under an 802.1ad tag
	EthSrc  [6]byte
	EthDst  [6]byte
	EthType uint16 // ethertype after the VLAN tags; EthTypeNone for 802.3 without SNAP
	// L3 says the packet has no Ethernet header (it came from a
	// legacy_l3 tunnel): EthType is the datapath's ethertype attribute
	// alone, EthSrc, EthDst and VLANs are zero. In a Mask it means
	// nothing: the datapath always matches the packet's kind.
	L3      bool
	_       [1]byte
	MPLSLSE uint32 // top MPLS label stack entry (label, TC, BoS, TTL) when EthType is MPLS
	// ConjID is OpenFlow's conj_id: nonzero only while a table's
	// conjunctive lookup looks for conj_id's flow; never in a packet's or
	// a datapath flow's key.
	ConjID uint32

	// ---- Stage 2: L3.

	IPv6Src   [16]byte
	IPv6Dst   [16]byte
	IPv4Src   [4]byte // also ARP spa
	IPv4Dst   [4]byte // also ARP tpa
	IPv6Label uint32  // IPv6 flow label (20 bits)
	NwProto   uint8   // IP protocol or IPv6 next header after extensions; ARP opcode low byte
	NwTos     uint8   // whole DS byte: DSCP << 2 | ECN
	NwTTL     uint8   // IPv4 TTL or IPv6 hop limit
	NwFrag    uint8   // FragAny | FragLater
	ArpSHA    [6]byte
	ArpTHA    [6]byte
	// NSH is the Network Service Header of a packet whose EthType is
	// EthTypeNSH (an NSH packet with or without an Ethernet header).
	NSH NSH

	// ---- Stage 3: L4.

	TpSrc    uint16 // TCP/UDP/SCTP source port; ICMP type
	TpDst    uint16 // TCP/UDP/SCTP destination port; ICMP code
	TCPFlags uint16 // the 12 flag bits of the TCP header
	// NDOptionsType and NDReserved are OpenFlow's nd_options_type and
	// nd_reserved (OVS's IPv6 ND extensions): the type of the first ND
	// option and the 32-bit word after the ICMPv6 checksum of a
	// neighbour solicitation or advertisement. The Linux datapath has no
	// key for them, so they are filled from the packet's bytes
	// (ExtractNDExt), never from a datapath key, and a megaflow that
	// needs them is never installed.
	NDOptionsType uint8
	_             [1]byte
	NDTarget      [16]byte
	NDSLL         [6]byte
	NDTLL         [6]byte
	NDReserved    uint32
}

// NSH is a Network Service Header (RFC 8300) as the datapath keys it
// (struct ovs_key_nsh): the base and service path headers and, for MD
// type 1, the four context words. The zero NSH means none.
type NSH struct {
	Flags  uint8  // the O and U bits of the base header, (word0 >> 12) & 3
	TTL    uint8  // 6 bits
	MDType uint8  // the whole MD type byte (its upper 4 bits are unassigned)
	NP     uint8  // next protocol: NSHNextIPv4, NSHNextIPv6, NSHNextEthernet, ...
	SPI    uint32 // service path identifier, 24 bits
	SI     uint8  // service index
	_      [3]byte
	C      [4]uint32 // MD type 1 context headers c1..c4; zero for MD type 2
}

// NSH constants: the ethertype, MD types and next protocols.
const (
	EthTypeNSH uint16 = 0x894f

	NSHMDType1 uint8 = 1
	NSHMDType2 uint8 = 2

	NSHNextIPv4     uint8 = 1
	NSHNextIPv6     uint8 = 2
	NSHNextEthernet uint8 = 3
	NSHNextNSH      uint8 = 4
	NSHNextMPLS     uint8 = 5

	NSHSPIMask uint32 = 0xffffff
)

// CtTuple is a connection's original-direction tuple. IPv4Src and IPv4Dst
// are set for an IPv4 connection, IPv6Src and IPv6Dst for an IPv6 one (the
// Key's EthType says which); Proto zero means no tuple.
type CtTuple struct {
	IPv4Src [4]byte
	IPv4Dst [4]byte
	IPv6Src [16]byte
	IPv6Dst [16]byte
	TpSrc   uint16
	TpDst   uint16
	Proto   uint8
	_       [3]byte
}

// Mask says which bits of a Key matter: a 1 bit is matched, a 0 bit is
// wildcarded. It has the fields of Key. The zero Mask wildcards everything.
type Mask Key

// KeyWords is the size of a Key in 64-bit words.
const KeyWords = int(unsafe.Sizeof(Key{}) / 8)

// Word offsets where each lookup stage begins. Stage i covers words
// [StageEnd[i-1], StageEnd[i]); stage 0 starts at word 0.
var StageEnd = [4]int{
	int(unsafe.Offsetof(Key{}.VLANs) / 8),
	int(unsafe.Offsetof(Key{}.IPv6Src) / 8),
	int(unsafe.Offsetof(Key{}.TpSrc) / 8),
	KeyWords,
}

// Words returns the Key's storage as an array of 64-bit words. The array
// aliases k: writing it writes k. Word values depend on the machine's byte
// order, so they may be hashed and compared but never sent anywhere.
func (k *Key) Words() *[KeyWords]uint64 {
	return (*[KeyWords]uint64)(unsafe.Pointer(k))
}

// Words returns the Mask's storage as an array of 64-bit words, as
// Key.Words does.
func (m *Mask) Words() *[KeyWords]uint64 {
	return (*[KeyWords]uint64)(unsafe.Pointer(m))
}

// Key returns m as a Key, for code that treats a mask's bits as values.
func (m *Mask) Key() *Key { return (*Key)(m) }

// ExactMask returns a Mask with every bit set: an exact match on every field.
func ExactMask() Mask {
	var m Mask
	w := m.Words()
	for i := range w {
		w[i] = ^uint64(0)
	}
	return m
}

// Apply returns k with the bits outside m cleared.
func (k Key) Apply(m *Mask) Key {
	kw, mw := k.Words(), m.Words()
	for i := range kw {
		kw[i] &= mw[i]
	}
	return k
}

// EqualMasked reports whether k and o agree on every bit m selects.
func (k *Key) EqualMasked(o *Key, m *Mask) bool {
	kw, ow, mw := k.Words(), o.Words(), m.Words()
	for i := range kw {
		if (kw[i]^ow[i])&mw[i] != 0 {
			return false
		}
	}
	return true
}

// Or widens m to also select every bit o selects.
func (m *Mask) Or(o *Mask) {
	mw, ow := m.Words(), o.Words()
	for i := range mw {
		mw[i] |= ow[i]
	}
}

// And narrows m to the bits o also selects.
func (m *Mask) And(o *Mask) {
	mw, ow := m.Words(), o.Words()
	for i := range mw {
		mw[i] &= ow[i]
	}
}

// IsZero reports whether m wildcards every bit.
func (m *Mask) IsZero() bool {
	for _, w := range m.Words() {
		if w != 0 {
			return false
		}
	}
	return true
}

// IsExact reports whether m selects every bit.
func (m *Mask) IsExact() bool {
	for _, w := range m.Words() {
		if w != ^uint64(0) {
			return false
		}
	}
	return true
}

// Covers reports whether every bit o selects is also selected by m.
func (m *Mask) Covers(o *Mask) bool {
	mw, ow := m.Words(), o.Words()
	for i := range mw {
		if ow[i]&^mw[i] != 0 {
			return false
		}
	}
	return true
}

// Metadata is what the datapath knows of a packet besides its bytes: the
// input to Extract. The zero Metadata is a packet on port 0 with no
// tunnel, mark or conntrack state.
type Metadata struct {
	InPort   uint32
	Priority uint32
	Mark     uint32
	RecircID uint32
	DPHash   uint32
	Tunnel   Tunnel
	CtState  uint32
	CtZone   uint16
	CtMark   uint32
	CtLabels [16]byte
	CtOrig   CtTuple
}

// metadataKey returns a Key holding md and nothing else.
func metadataKey(md *Metadata) Key {
	return Key{
		Tunnel:   md.Tunnel,
		InPort:   md.InPort,
		Priority: md.Priority,
		Mark:     md.Mark,
		RecircID: md.RecircID,
		DPHash:   md.DPHash,
		CtState:  md.CtState,
		CtZone:   md.CtZone,
		CtMark:   md.CtMark,
		CtLabels: md.CtLabels,
		CtOrig:   md.CtOrig,
	}
}
