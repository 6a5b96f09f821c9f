package datapath

import (
	"encoding/binary"

	"github.com/govswitch/govswitch/flow"
	"github.com/govswitch/govswitch/netlinkio"
)

// VXLAN Group Based Policy in the tunnel key: OVS_TUNNEL_KEY_ATTR_VXLAN_OPTS
// nests the OVS_VXLAN_EXT_* attributes (include/uapi/linux/openvswitch.h),
// of which OVS_VXLAN_EXT_GBP is the only one: a host-order u32 the kernel
// keeps as struct vxlan_metadata's gbp, the policy ID in bits 0-15 and
// the GBP header's flag byte in bits 16-23 (0x40 don't learn, 0x08
// policy applied; VXLAN_GBP_DONT_LEARN and VXLAN_GBP_POLICY_APPLIED).
const (
	vxlanExtGBP     = 1
	vxlanExtMax     = 1
	vxlanOptsGBPLen = 4
	// vxlanOptsLen is the nested attribute, header and one u32.
	vxlanOptsLen = 4 + 4 + vxlanOptsGBPLen
)

// gbpWord packs t's policy ID and flags as OVS_VXLAN_EXT_GBP carries them.
func gbpWord(t *flow.Tunnel) uint32 { return uint32(t.GbpFlags)<<16 | uint32(t.GbpID) }

// appendGbp appends OVS_TUNNEL_KEY_ATTR_VXLAN_OPTS for the tunnel values
// vt when they carry any GBP bits, as OVS's tun_key_to_attr does for a
// key, a mask or a set(tunnel): a key without GBP and a mask that
// wildcards it have none.
func appendGbp(b []byte, vt *flow.Tunnel) []byte {
	if vt.GbpID == 0 && vt.GbpFlags == 0 {
		return b
	}
	b, start := netlinkio.BeginNested(b, tunAttrVXLANOpts)
	b = netlinkio.AppendU32(b, vxlanExtGBP, gbpWord(vt))
	return netlinkio.EndNested(b, start)
}

// decodeVxlanOpts decodes the payload d of OVS_TUNNEL_KEY_ATTR_VXLAN_OPTS
// into t (a key or a mask, the same layout). Extensions newer than GBP
// are skipped; a GBP attribute of another length than 4 or a duplicate
// is an error. Bits above the flag byte, which the kernel never sets, are
// dropped.
func decodeVxlanOpts(d []byte, t *flow.Tunnel) error {
	seen := false
	it := netlinkio.NewAttrIter(d)
	for it.Next() {
		if it.Type() != vxlanExtGBP {
			continue
		}
		v := it.Data()
		if len(v) != vxlanOptsGBPLen {
			return keyErr("vxlan gbp option has %d bytes, want %d", len(v), vxlanOptsGBPLen)
		}
		if seen {
			return keyErr("duplicate vxlan gbp option")
		}
		seen = true
		w := binary.NativeEndian.Uint32(v)
		t.GbpID, t.GbpFlags = uint16(w), uint8(w>>16)
	}
	if err := it.Err(); err != nil {
		return keyErr("vxlan options: %v", err)
	}
	return nil
}
