package flow

// TunMetadataSpace is the room a Key has for Geneve options: the TLVs of a
// packet as the datapath carries them (headers included), or the
// tun_metadata fields a bridge's TLV table maps them to. OVS has 256
// bytes; govswitchd keeps the Key small and refuses more (a TLV map that
// needs more space fails with NXTTMFC_TABLE_FULL, a packet with more
// option bytes fails key parsing).
const TunMetadataSpace = 64

// TunMetadataFields is the number of tun_metadata<n> fields.
const TunMetadataFields = 64

// TunMetadata is a tunnel's Geneve options in one of two forms, as OVS's
// struct tun_metadata:
//   - as the datapath carries them (Tunnel.Flags has TunnelUDPIF): Opts
//     holds the option TLVs, Present their length in bytes (in a mask,
//     0xff: the length is matched exactly);
//   - as OpenFlow fields: Present has bit n set when tun_metadata<n> is
//     present, and the field's bytes sit in Opts where the process's
//     tun_metadata layout places them (ofproto's TLV tables).
//
// The zero TunMetadata is no options.
type TunMetadata struct {
	Present uint64
	Opts    [TunMetadataSpace]byte
}

// GeneveOpts returns the option TLVs of a tunnel in the datapath's form, nil
// in the other form or with no options.
func (t *Tunnel) GeneveOpts() []byte {
	if t.Flags&TunnelUDPIF == 0 || t.Metadata.Present == 0 || t.Metadata.Present > TunMetadataSpace {
		return nil
	}
	return t.Metadata.Opts[:t.Metadata.Present]
}

// geneve prints a tunnel's Geneve options in the datapath's form as OVS's
// format_odp_tun_geneve does: geneve({class=..,type=..,len=..,0x..}...),
// each option's header fields when their mask is not zero, with /mask
// when it is partial, and its data when the mask selects any of it.
func (f *formatter) geneve(v, m *Tunnel) {
	opts := v.GeneveOpts()
	if opts == nil {
		return
	}
	mo := m.Metadata.Opts[:len(opts)]
	f.attr("geneve")
	for len(opts) > 0 {
		if len(opts) < 4 {
			f.b = append(f.b, "opt len "...)
			f.dec(uint64(len(opts)))
			f.b = append(f.b, " less than minimum 4"...)
			break
		}
		dlen := 4 * int(opts[3]&0x1f)
		if 4+dlen > len(opts) {
			f.b = append(f.b, "opt len "...)
			f.dec(uint64(4 + dlen))
			f.b = append(f.b, " greater than remaining "...)
			f.dec(uint64(len(opts)))
			break
		}
		f.b = append(f.b, '{')
		start := f.start
		f.start = len(f.b)
		class, classM := uint64(opts[0])<<8|uint64(opts[1]), uint64(mo[0])<<8|uint64(mo[1])
		if classM != 0 {
			f.field("class")
			f.hexC(class)
			if classM != 0xffff {
				f.b = append(f.b, '/')
				f.hexC(classM)
			}
		}
		if mo[2] != 0 {
			f.field("type")
			f.hexC(uint64(opts[2]))
			if mo[2] != 0xff {
				f.b = append(f.b, '/')
				f.hexC(uint64(mo[2]))
			}
		}
		if lm := mo[3] & 0x1f; lm != 0 {
			f.field("len")
			f.dec(uint64(dlen))
			if lm != 0x1f {
				f.b = append(f.b, '/')
				f.hexC(uint64(lm))
			}
		}
		data, dm := opts[4:4+dlen], mo[4:4+dlen]
		if dlen > 0 && !allZero(dm) {
			f.sep()
			f.b = appendHexBytes(f.b, data)
			if !allOnes(dm) {
				f.b = append(f.b, '/')
				f.b = appendHexBytes(f.b, dm)
			}
		}
		f.start = start
		f.b = append(f.b, '}')
		opts, mo = opts[4+dlen:], mo[4+dlen:]
	}
	f.end()
}

func allZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

// appendHexBytes appends b as OVS's ds_put_hex: 0x and the bytes from the
// first nonzero one, "0" when all are zero.
func appendHexBytes(dst, b []byte) []byte {
	const digits = "0123456789abcdef"
	printed := false
	for _, c := range b {
		if c == 0 && !printed {
			continue
		}
		if !printed {
			dst = append(dst, '0', 'x')
			if c >= 16 {
				dst = append(dst, digits[c>>4])
			}
			dst = append(dst, digits[c&15])
			printed = true
			continue
		}
		dst = append(dst, digits[c>>4], digits[c&15])
	}
	if !printed {
		dst = append(dst, '0')
	}
	return dst
}

// AppendGeneve appends t's Geneve options (datapath form) as ovs-dpctl
// prints them in an action, geneve({class=...,type=...,len=...,0x...}),
// or nothing when t has none.
func AppendGeneve(dst []byte, t *Tunnel) []byte {
	m := Tunnel{Flags: TunnelUDPIF, Metadata: TunMetadata{Present: 0xff}}
	for i := range m.Metadata.Opts {
		m.Metadata.Opts[i] = 0xff
	}
	f := formatter{b: dst, start: len(dst)}
	f.geneve(t, &m)
	return f.b
}
