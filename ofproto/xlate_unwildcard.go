package ofproto

import "github.com/govswitch/govswitch/ofproto/openflow"

// unwildcardDst makes the bits of field f that a set_field, load or move
// writes (nbits from bit ofs) exact in the megaflow, as ovs-vswitchd's
// mf_mask_field_masked does for every write: the datapath flow then only
// catches packets whose written bits are what this translation saw, and
// its mask reads as ovs-vswitchd's in dpctl/dump-flows. Pipeline metadata
// (registers, metadata) is no datapath field, and the input port is always
// exact (in datapath numbering, which the field's value is not): both are
// left alone.
func (c *xctx) unwildcardDst(f openflow.Field, ofs, nbits uint16) {
	if f == openflow.FieldMetadata || f == openflow.FieldInPort || f == openflow.FieldNXMInPort || f >= openflow.FieldReg0 && f <= openflow.FieldReg15 ||
		f >= openflow.FieldXReg0 && f <= openflow.FieldXXReg3 {
		return
	}
	c.unwildcardBits(f, ofs, nbits)
}

// unwildcardBits makes bits ofs to ofs+nbits of field f exact in the
// megaflow.
func (c *xctx) unwildcardBits(f openflow.Field, ofs, nbits uint16) {
	n := f.Size()
	if n == 0 || n > len(c.scratch[0]) {
		return
	}
	// OR the written bits into the mask's own value of the field: no
	// temporary mask, which would escape through SetValue.
	wc := c.out.WC.Key()
	cur, ok := f.Value(c.scratch[0][:0], wc)
	if !ok || len(cur) != n {
		return
	}
	for i := int(ofs); i < int(ofs)+int(nbits) && i < 8*n; i++ {
		cur[n-1-i/8] |= 1 << (i % 8)
	}
	f.SetValue(wc, cur)
}
