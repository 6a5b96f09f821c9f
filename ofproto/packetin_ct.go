package ofproto

import (
	"github.com/govswitch/govswitch/flow"
	"github.com/govswitch/govswitch/ofproto/openflow"
)

// The conntrack part of a packet-in's metadata. As in ovs-vswitchd
// (process_upcall's CONTROLLER_UPCALL and flow_get_metadata), it comes from
// the upcall's key, what the datapath knew of the packet's connection when
// it executed the userspace action, not from the translation: one megaflow
// serves every connection, and the key says which one this packet is of.
// The translation says only whether the packet was conntracked there (it
// came through a ct action's recirculation, and no ct() or ct_clear since
// cleared the fields): ctrlFlagConntracked in the userdata.

// ctrlFlagConntracked marks, in byte 3 of a controller userdata (both
// UserdataController and UserdataController2), a packet-in whose
// translation saw conntrack fields.
const ctrlFlagConntracked = 2

// ctrlFlags returns the flags byte of a controller userdata for the
// translation's current state.
func (c *xctx) ctrlFlags() uint8 {
	if c.flow.CtState != 0 {
		return ctrlFlagConntracked
	}
	return 0
}

// pinCtMetadata adds to m the conntrack metadata of the upcall key k as
// flow_get_metadata reports it: ct_state with the ethertype it is to be
// read with, the original-direction tuple of a valid connection, and
// ct_zone, ct_mark and ct_label when not zero. It does not allocate.
func pinCtMetadata(m *openflow.Match, k *flow.Key) {
	if k.CtState != 0 {
		m.Key.CtState, m.Mask.CtState = k.CtState, ^uint32(0)
		m.Key.EthType, m.Mask.EthType = k.EthType, 0xffff
		const valid = flow.CtNew | flow.CtEstablished | flow.CtReplyDir
		if o := &k.CtOrig; k.CtState&valid != 0 && o.Proto != 0 {
			mo, ko := &m.Mask.CtOrig, &m.Key.CtOrig
			switch k.EthType {
			case flow.EthTypeIPv4:
				ko.IPv4Src, ko.IPv4Dst = o.IPv4Src, o.IPv4Dst
				mo.IPv4Src, mo.IPv4Dst = ones4, ones4
			case flow.EthTypeIPv6:
				ko.IPv6Src, ko.IPv6Dst = o.IPv6Src, o.IPv6Dst
				mo.IPv6Src, mo.IPv6Dst = ones16, ones16
			}
			if k.EthType == flow.EthTypeIPv4 || k.EthType == flow.EthTypeIPv6 {
				ko.Proto, ko.TpSrc, ko.TpDst = o.Proto, o.TpSrc, o.TpDst
				mo.Proto, mo.TpSrc, mo.TpDst = 0xff, 0xffff, 0xffff
			}
		}
	}
	if k.CtZone != 0 {
		m.Key.CtZone, m.Mask.CtZone = k.CtZone, 0xffff
	}
	if k.CtMark != 0 {
		m.Key.CtMark, m.Mask.CtMark = k.CtMark, ^uint32(0)
	}
	if k.CtLabels != ([16]byte{}) {
		m.Key.CtLabels = k.CtLabels
		for i := range m.Mask.CtLabels {
			m.Mask.CtLabels[i] = 0xff
		}
	}
}
