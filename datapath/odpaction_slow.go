package datapath

import (
	"encoding/binary"

	"github.com/govswitch/govswitch/flow"
)

// Set actions of the key attributes the kernel datapath cannot write
// (its validate_set refuses OVS_KEY_ATTR_ARP, _ICMP, _ICMPV6, _ND): a switch
// emits them only on the userspace slow path, where they run on the
// packet bytes in userspace (Executor) and never reach the kernel.

// putSlowSetValue writes the struct ovs_key_arp, ovs_key_icmp or
// ovs_key_nd of v.
func putSlowSetValue(p []byte, attr KeyAttr, v *flow.Key) {
	switch attr {
	case KeyAttrARP:
		copy(p[0:4], v.IPv4Src[:])
		copy(p[4:8], v.IPv4Dst[:])
		binary.BigEndian.PutUint16(p[8:], uint16(v.NwProto))
		copy(p[10:16], v.ArpSHA[:])
		copy(p[16:22], v.ArpTHA[:])
	case KeyAttrICMP, KeyAttrICMPv6:
		p[0], p[1] = byte(v.TpSrc), byte(v.TpDst)
	case KeyAttrND:
		copy(p[0:16], v.NDTarget[:])
		copy(p[16:22], v.NDSLL[:])
		copy(p[22:28], v.NDTLL[:])
	}
}

// getSlowSetValue reads what putSlowSetValue writes. The ARP opcode's
// high byte has no place in a flow.Key (OVS's flow keeps the low byte
// too).
func getSlowSetValue(p []byte, attr KeyAttr, v *flow.Key) {
	switch attr {
	case KeyAttrARP:
		copy(v.IPv4Src[:], p[0:4])
		copy(v.IPv4Dst[:], p[4:8])
		v.NwProto = p[9]
		copy(v.ArpSHA[:], p[10:16])
		copy(v.ArpTHA[:], p[16:22])
	case KeyAttrICMP, KeyAttrICMPv6:
		v.TpSrc, v.TpDst = uint16(p[0]), uint16(p[1])
	case KeyAttrND:
		copy(v.NDTarget[:], p[0:16])
		copy(v.NDSLL[:], p[16:22])
		copy(v.NDTLL[:], p[22:28])
	}
}

// IsSlowSet reports whether a is a set action the kernel datapath cannot
// carry out, one that must run in userspace.
func IsSlowSet(a *Action) bool {
	if a.Type != ActionSet && a.Type != ActionSetMasked {
		return false
	}
	switch a.SetAttr {
	case KeyAttrARP, KeyAttrICMP, KeyAttrICMPv6, KeyAttrND:
		return true
	}
	return false
}
