package ofproto

import (
	"github.com/govswitch/govswitch/ofproto/openflow"
)

// outputReg is output:field[ofs..]: output to the OpenFlow port the
// subfield holds (16-bit numbering, as OVS's xlate_output_reg_action
// reads it; a value above 0xffff outputs nowhere). The translation now
// depends on the subfield: its bits join the megaflow.
func (c *xctx) outputReg(a *openflow.Action) {
	var buf [16]byte
	v, ok := a.Src.Value(buf[:0], &c.flow)
	if !ok {
		return
	}
	x := openflow.NBitsValue(v, int(a.SrcOfs), int(a.NBits))
	maskSubfield(&c.out.WC, a.Src, a.SrcOfs, a.NBits)
	for _, b := range x[:14] {
		if b != 0 {
			return
		}
	}
	c.output(openflow.Port10To32(uint16(x[14])<<8|uint16(x[15])), a.MaxLen)
}
