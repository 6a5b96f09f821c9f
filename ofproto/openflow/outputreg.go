package openflow

// output:field[ofs..] (NXAST_OUTPUT_REG): output to the port a subfield
// of the packet's flow holds. An ActOutputReg Action carries the subfield
// in Src, SrcOfs and NBits and the controller's max_len in MaxLen.
// NXAST_OUTPUT_REG2 (for experimenter fields) is not modelled.

// NXASTOutputReg is the output_reg action's Nicira subtype.
const NXASTOutputReg uint16 = 15

// NXASTExit is the exit action's Nicira subtype: it ends the translation
// (the action set included, as ovs-vswitchd's do_xlate_actions stops on
// ctx->exit); in a group bucket it ends only the bucket.
const NXASTExit uint16 = 17

// decodeOutputReg decodes a whole NXAST_OUTPUT_REG: ofs_nbits, src,
// max_len, 6 zero bytes (24 bytes), checked as ovs-vswitchd checks it.
func decodeOutputReg(v uint8, act []byte) (Action, error) {
	if len(act) != 24 {
		return Action{}, errOf(v, kActBadLen, "output_reg: length %d, want 24", len(act))
	}
	for _, c := range act[18:24] {
		if c != 0 {
			return Action{}, errOf(v, kActBadArgument, "output_reg: nonzero padding")
		}
	}
	ofsNBits := u16(act[10:])
	a := Action{Type: ActOutputReg, Src: nxmField(u32(act[12:])), SrcOfs: ofsNBits >> 6, NBits: ofsNBits&0x3f + 1,
		MaxLen: u16(act[16:])}
	if a.Src == FieldNone {
		return Action{}, errOf(v, kActBadSetType, "output_reg: source %08x", u32(act[12:]))
	}
	if int(a.SrcOfs)+int(a.NBits) > 8*a.Src.Size() {
		return Action{}, errOf(v, kActBadArgument, "output_reg: %s[%d..%d]", a.Src, a.SrcOfs, a.SrcOfs+a.NBits-1)
	}
	return a, nil
}

func appendOutputReg(b []byte, a *Action) ([]byte, error) {
	h, ok := a.Src.Header(true)
	if !ok || a.NBits == 0 || a.NBits > 64 || int(a.SrcOfs)+int(a.NBits) > 8*a.Src.Size() {
		return b, errOf(Version10, kActBadArgument, "output_reg from %s[%d], %d bits", a.Src, a.SrcOfs, a.NBits)
	}
	b = be32(be16(nxActionHeader(b, 24, NXASTOutputReg), a.SrcOfs<<6|(a.NBits-1)), h)
	return zeros(be16(b, a.MaxLen), 6), nil
}
