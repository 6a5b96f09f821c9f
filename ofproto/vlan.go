package ofproto

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/govswitch/govswitch/flow"
)

// VLANMode is a port's 802.1Q mode, as Port.vlan_mode in
// ovs-vswitchd.conf.db(5). The zero value is trunk, the mode of a port with
// no VLAN configuration (every OpenFlow port not configured otherwise).
type VLANMode uint8

const (
	// VLANTrunk carries every VLAN in Trunks (all when Trunks is nil),
	// tagged; untagged frames are VLAN 0.
	VLANTrunk VLANMode = iota
	// VLANAccess carries the one VLAN Tag, untagged on the wire; tagged
	// frames received are dropped.
	VLANAccess
	// VLANNativeTagged is a trunk whose untagged frames belong to VLAN
	// Tag; frames of VLAN Tag are sent tagged.
	VLANNativeTagged
	// VLANNativeUntagged is a trunk whose untagged frames belong to VLAN
	// Tag; frames of VLAN Tag are sent untagged.
	VLANNativeUntagged
	// VLANDot1qTunnel is an 802.1ad (QinQ) customer port: every frame
	// received gets an outer tag of VLAN Tag (the S-VLAN, TPID QinQTPID)
	// pushed over whatever tag it has, frames of VLAN Tag leave with that
	// outer tag popped, and only the customer VLANs in CVLANs (all when
	// nil) are let in and out (vlan_qinq.go).
	VLANDot1qTunnel
)

// String returns the mode as vlan_mode spells it.
func (m VLANMode) String() string {
	switch m {
	case VLANAccess:
		return "access"
	case VLANNativeTagged:
		return "native-tagged"
	case VLANNativeUntagged:
		return "native-untagged"
	case VLANDot1qTunnel:
		return "dot1q-tunnel"
	}
	return "trunk"
}

// ParseVLANMode parses a vlan_mode value.
func ParseVLANMode(s string) (VLANMode, error) {
	switch s {
	case "trunk":
		return VLANTrunk, nil
	case "access":
		return VLANAccess, nil
	case "native-tagged":
		return VLANNativeTagged, nil
	case "native-untagged":
		return VLANNativeUntagged, nil
	case "dot1q-tunnel":
		return VLANDot1qTunnel, nil
	}
	return 0, fmt.Errorf("vlan_mode %q is not one of trunk, access, native-tagged, native-untagged, dot1q-tunnel", s)
}

// VLANSet is a set of VLAN IDs 0-4095, one bit each.
type VLANSet [4096 / 64]uint64

// Has reports whether vid is in the set.
func (s *VLANSet) Has(vid uint16) bool { return s[vid>>6&63]&(1<<(vid&63)) != 0 }

// Add puts vid in the set.
func (s *VLANSet) Add(vid uint16) { s[vid>>6&63] |= 1 << (vid & 63) }

// Remove takes vid out of the set.
func (s *VLANSet) Remove(vid uint16) { s[vid>>6&63] &^= 1 << (vid & 63) }

// PortVLAN is a port's VLAN configuration. The zero value is a trunk of
// every VLAN, as a port without tag, trunks or vlan_mode is in OVS.
type PortVLAN struct {
	Mode VLANMode
	// Tag is the access VLAN (VLANAccess) or the native VLAN (the native
	// modes); it is 0 for a trunk.
	Tag uint16
	// Trunks are the VLANs a trunk or native port carries; nil means all.
	// For the native modes the set includes Tag and excludes VLAN 0, as
	// ofproto-dpif forces. Never modified once the port is published.
	// A dot1q-tunnel port has none.
	Trunks *VLANSet
	// CVLANs are the customer VLANs a dot1q-tunnel port admits (Port
	// cvlans); nil means all, untagged frames (VLAN 0) included. Never
	// modified once the port is published.
	CVLANs *VLANSet
	// QinQTPID is the TPID of the outer tag a dot1q-tunnel port pushes:
	// flow.EthTypeQinQ (802.1ad, the default) or flow.EthTypeVLAN
	// (other_config:qinq-ethtype=802.1q). Zero for the other modes.
	QinQTPID uint16
	// PriorityTags is Port other_config:priority-tags: whether frames
	// leave with an 802.1Q header of VLAN 0 to carry their priority.
	PriorityTags PriorityTagsMode
}

// PriorityTagsMode is a port's priority-tags setting, as ovs-vswitchd
// reads it: "if-nonzero" (or "true") and "always"; anything else never.
type PriorityTagsMode uint8

const (
	PriorityTagsNever PriorityTagsMode = iota
	PriorityTagsIfNonzero
	PriorityTagsAlways
)

// ParsePriorityTags is ovs-vswitchd's reading of other_config:priority-tags.
func ParsePriorityTags(s string) PriorityTagsMode {
	switch s {
	case "if-nonzero", "true":
		return PriorityTagsIfNonzero
	case "always":
		return PriorityTagsAlways
	}
	return PriorityTagsNever
}

// NewPortVLAN builds the VLAN configuration of a port from its database
// columns, with ofproto-dpif's rules (bundle_set): an unset mode is access
// when a tag is set, else trunk; a trunk ignores the tag; the native modes
// always carry their native VLAN and never VLAN 0. tag < 0 means unset;
// trunks empty means all VLANs. It fails on a VLAN ID out of 0-4095 and on
// trunks given to an access port (which ovs-vswitchd ignores with an error
// in its log: here the port says so instead).
func NewPortVLAN(mode string, tag int, trunks []int) (PortVLAN, error) {
	var v PortVLAN
	if tag > 4095 {
		return v, fmt.Errorf("tag %d is not a VLAN ID (0 to 4095)", tag)
	}
	switch {
	case mode != "":
		m, err := ParseVLANMode(mode)
		if err != nil {
			return v, err
		}
		v.Mode = m
	case tag >= 0:
		v.Mode = VLANAccess
	default:
		v.Mode = VLANTrunk
	}
	if v.Mode != VLANTrunk && tag > 0 {
		v.Tag = uint16(tag)
	}
	if v.Mode == VLANDot1qTunnel {
		// As ofproto-dpif's bundle_set: trunks do not apply; the tag
		// is the S-VLAN (0 when unset).
		v.QinQTPID = flow.EthTypeQinQ
		return v, nil
	}
	if len(trunks) > 0 {
		if v.Mode == VLANAccess {
			return v, fmt.Errorf("trunks are not allowed in access mode")
		}
		s := new(VLANSet)
		for _, t := range trunks {
			if t < 0 || t > 4095 {
				return v, fmt.Errorf("trunk %d is not a VLAN ID (0 to 4095)", t)
			}
			s.Add(uint16(t))
		}
		v.Trunks = s
	}
	if (v.Mode == VLANNativeTagged || v.Mode == VLANNativeUntagged) && v.Tag != 0 &&
		(v.Trunks == nil || !v.Trunks.Has(v.Tag) || v.Trunks.Has(0)) {
		s := new(VLANSet)
		if v.Trunks != nil {
			*s = *v.Trunks
		} else {
			for i := range s {
				s[i] = ^uint64(0)
			}
		}
		s.Add(v.Tag)
		s.Remove(0)
		v.Trunks = s
	}
	return v, nil
}

// Equal reports whether v and w configure a port alike.
func (v *PortVLAN) Equal(w *PortVLAN) bool {
	if v.Mode != w.Mode || v.Tag != w.Tag || v.QinQTPID != w.QinQTPID ||
		(v.Trunks == nil) != (w.Trunks == nil) || (v.CVLANs == nil) != (w.CVLANs == nil) {
		return false
	}
	return (v.Trunks == nil || *v.Trunks == *w.Trunks) && (v.CVLANs == nil || *v.CVLANs == *w.CVLANs)
}

// String describes the configuration for logs: "access tag=10",
// "trunk trunks=10,20", "native-untagged tag=5".
func (v *PortVLAN) String() string {
	var sb strings.Builder
	sb.WriteString(v.Mode.String())
	if v.Mode != VLANTrunk {
		sb.WriteString(" tag=")
		sb.WriteString(strconv.Itoa(int(v.Tag)))
	}
	writeSet(&sb, " trunks=", v.Trunks)
	writeSet(&sb, " cvlans=", v.CVLANs)
	if v.Mode == VLANDot1qTunnel && v.QinQTPID == flow.EthTypeVLAN {
		sb.WriteString(" qinq-ethtype=802.1q")
	}
	return sb.String()
}

func writeSet(sb *strings.Builder, label string, s *VLANSet) {
	if s == nil {
		return
	}
	sb.WriteString(label)
	first := true
	for vid := 0; vid < 4096; vid++ {
		if s.Has(uint16(vid)) {
			if !first {
				sb.WriteByte(',')
			}
			first = false
			sb.WriteString(strconv.Itoa(vid))
		}
	}
}

// trunks reports whether the port carries vid tagged (xbundle_trunks_vlan).
func (v *PortVLAN) trunks(vid uint16) bool {
	return v.Mode != VLANAccess && v.Mode != VLANDot1qTunnel && (v.Trunks == nil || v.Trunks.Has(vid))
}

// includes reports whether the port carries VLAN vid at all, whatever
// inner tag the frame has (NORMAL asks includesX, which also looks at it).
func (v *PortVLAN) includes(vid uint16) bool { return vid == v.Tag || v.trunks(vid) }

// inputVLAN maps the VID of a frame received on the port (0 for untagged
// or priority-tagged) to the VLAN it belongs to. ok is false when the port
// does not accept the frame (input_vid_is_valid).
func (v *PortVLAN) inputVLAN(vid uint16) (vlan uint16, ok bool) {
	switch v.Mode {
	case VLANAccess:
		return v.Tag, vid == 0
	case VLANDot1qTunnel:
		return v.Tag, v.allowsCVLAN(vid)
	case VLANNativeTagged, VLANNativeUntagged:
		if vid == 0 {
			return v.Tag, true
		}
	}
	return vid, v.includes(vid)
}
