package ofproto

import (
	"github.com/govswitch/govswitch/datapath"
	"github.com/govswitch/govswitch/ofproto/openflow"
)

// ctSetField applies a set_field nested in ct(exec(...)) to the ct
// action's mark or labels, under its mask when it has one (OpenFlow 1.5's
// masked set_field, which ovn-controller uses for ct_mark and ct_label
// bits): the datapath sets the connection's mark and labels under a mask
// of its own, so the other bits of the connection's stay as they were.
func ctSetField(n *openflow.Action, d *datapath.CT) {
	switch n.Field {
	case openflow.FieldCtMark:
		v := uint32(n.Value[0])<<24 | uint32(n.Value[1])<<16 | uint32(n.Value[2])<<8 | uint32(n.Value[3])
		m := ^uint32(0)
		if n.Masked {
			m = uint32(n.Mask[0])<<24 | uint32(n.Mask[1])<<16 | uint32(n.Mask[2])<<8 | uint32(n.Mask[3])
		}
		d.Mark = d.Mark&^m | v&m
		d.MarkMask |= m
	case openflow.FieldCtLabel:
		for j := range d.Labels {
			// Big-endian on the wire, least significant byte first in
			// the kernel's action.
			v, m := n.Value[15-j], byte(0xff)
			if n.Masked {
				m = n.Mask[15-j]
			}
			d.Labels[j] = d.Labels[j]&^m | v&m
			d.LabelsMask[j] |= m
		}
	}
}
