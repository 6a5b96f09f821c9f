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

// unwildcardSetField makes the bits a set_field writes exact in the
// megaflow (xlate_unwildcard.go): the whole field, or a masked one's mask
// bits, run by run, as OVS's mf_mask_field_masked.
func (c *xctx) unwildcardSetField(a *openflow.Action) {
	n := a.Field.Size()
	if !a.Masked {
		c.unwildcardDst(a.Field, 0, uint16(8*n))
		return
	}
	bit := func(p int) bool { return a.Mask[n-1-p/8]>>(p%8)&1 != 0 }
	for p := 0; p < 8*n; {
		if !bit(p) {
			p++
			continue
		}
		ofs := p
		for p < 8*n && bit(p) {
			p++
		}
		c.unwildcardDst(a.Field, uint16(ofs), uint16(p-ofs))
	}
}
