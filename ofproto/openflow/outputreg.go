package openflow

// output:field[ofs..] (NXAST_OUTPUT_REG): output to the port a subfield
// of the packet's flow holds. An ActOutputReg Action carries the subfield
// in Src, SrcOfs and NBits and the controller's max_len in MaxLen.
// NXAST_OUTPUT_REG2 is the same with a field header of 4 or 8 bytes;
// ovs-ofctl writes it for an experimenter field (tun_erspan_*, nsh_*),
// which NXAST_OUTPUT_REG's 4-byte word cannot name, and so does the
// encoder here; one that came as NXAST_OUTPUT_REG2 with a 4-byte header
// has OutputReg2 set and is written back so, as ovs-vswitchd keeps an
// action's raw form.

// NXASTOutputReg and NXASTOutputReg2 are the output_reg actions' Nicira
// subtypes.
const (
	NXASTOutputReg  uint16 = 15
	NXASTOutputReg2 uint16 = 32
)

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

// decodeOutputReg2 decodes a whole NXAST_OUTPUT_REG2: ofs_nbits,
// max_len, the source field's header (4 or 8 bytes), zero padding to 24.
func decodeOutputReg2(v uint8, act []byte) (Action, error) {
	if len(act) != 24 {
		return Action{}, errOf(v, kActBadLen, "output_reg2: length %d, want 24", len(act))
	}
	ofsNBits := u16(act[10:])
	f, h, n := pullActionField(act[14:])
	if n == 0 || f == FieldNone {
		return Action{}, errOf(v, kActBadSetType, "output_reg2: source %08x", h)
	}
	for _, c := range act[14+n:] {
		if c != 0 {
			return Action{}, errOf(v, kActBadArgument, "output_reg2: nonzero padding")
		}
	}
	a := Action{Type: ActOutputReg, Src: f, SrcOfs: ofsNBits >> 6, NBits: ofsNBits&0x3f + 1, MaxLen: u16(act[12:]),
		OutputReg2: true}
	if int(a.SrcOfs)+int(a.NBits) > a.Src.Bits() {
		return Action{}, errOf(v, kActBadArgument, "output_reg2: %s[%d..%d]", a.Src, a.SrcOfs, a.SrcOfs+a.NBits-1)
	}
	return a, nil
}

func appendOutputReg(b []byte, a *Action) ([]byte, error) {
	if (a.OutputReg2 || a.Src.IsExperimenter()) && actionFieldLen(a.Src) != 0 && a.NBits != 0 && a.NBits <= 64 && int(a.SrcOfs)+int(a.NBits) <= 8*a.Src.Size() {
		start := len(b)
		b = be16(be16(nxActionHeader(b, 24, NXASTOutputReg2), a.SrcOfs<<6|(a.NBits-1)), a.MaxLen)
		b, _ = appendActionField(b, a.Src, true)
		for len(b)-start < 24 {
			b = append(b, 0)
		}
		return b, nil
	}
	h, ok := a.Src.Header(true)
	if !ok || a.NBits == 0 || a.NBits > 64 || int(a.SrcOfs)+int(a.NBits) > 8*a.Src.Size() {
		return b, errOf(Version10, kActBadArgument, "output_reg from %s[%d], %d bits", a.Src, a.SrcOfs, a.NBits)
	}
	b = be32(be16(nxActionHeader(b, 24, NXASTOutputReg), a.SrcOfs<<6|(a.NBits-1)), h)
	return zeros(be16(b, a.MaxLen), 6), nil
}
