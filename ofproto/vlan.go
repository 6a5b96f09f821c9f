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
	}
	return 0, fmt.Errorf("vlan_mode %q is not one of trunk, access, native-tagged, native-untagged", s)
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
	Trunks *VLANSet
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
	if v.Mode != w.Mode || v.Tag != w.Tag || (v.Trunks == nil) != (w.Trunks == nil) {
		return false
	}
	return v.Trunks == nil || *v.Trunks == *w.Trunks
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
	if v.Trunks != nil {
		sb.WriteString(" trunks=")
		first := true
		for vid := 0; vid < 4096; vid++ {
			if v.Trunks.Has(uint16(vid)) {
				if !first {
					sb.WriteByte(',')
				}
				first = false
				sb.WriteString(strconv.Itoa(vid))
			}
		}
	}
	return sb.String()
}

// trunks reports whether the port carries vid tagged (xbundle_trunks_vlan).
func (v *PortVLAN) trunks(vid uint16) bool {
	return v.Mode != VLANAccess && (v.Trunks == nil || v.Trunks.Has(vid))
}

// includes reports whether the port carries VLAN vid at all
// (xbundle_includes_vlan).
func (v *PortVLAN) includes(vid uint16) bool { return vid == v.Tag || v.trunks(vid) }

// inputVLAN maps the VID of a frame received on the port (0 for untagged
// or priority-tagged) to the VLAN it belongs to. ok is false when the port
// does not accept the frame (input_vid_is_valid).
func (v *PortVLAN) inputVLAN(vid uint16) (vlan uint16, ok bool) {
	switch v.Mode {
	case VLANAccess:
		return v.Tag, vid == 0
	case VLANNativeTagged, VLANNativeUntagged:
		if vid == 0 {
			return v.Tag, true
		}
	}
	return vid, v.includes(vid)
}

// outputVID is the VID a frame of VLAN vlan leaves the port with; tagged
// is false when it leaves with no tag at all, not even a priority tag
// (xvlan_output_translate).
func (v *PortVLAN) outputVID(vlan uint16) (vid uint16, tagged bool) {
	switch v.Mode {
	case VLANAccess:
		return 0, false
	case VLANNativeUntagged:
		if vlan == v.Tag {
			return 0, false
		}
	}
	return vlan, true
}

// vlanHeader returns the 802.1Q header a frame of VLAN vid with priority pcp
// carries out of a port: TPID 0 and TCI 0 for untagged.
func vlanHeader(vid, pcp uint16, tpid uint16) flow.VLAN {
	if vid == 0 && pcp == 0 {
		return flow.VLAN{}
	}
	if tpid == 0 {
		tpid = flow.EthTypeVLAN
	}
	return flow.VLAN{TPID: tpid, TCI: vid | pcp<<13 | flow.VLANPresent}
}
