package datapath

import (
	"encoding/binary"
	"fmt"

	"github.com/govswitch/govswitch/flow"
	"github.com/govswitch/govswitch/netlinkio"
)

// NSH (RFC 8300) in keys and actions: OVS_KEY_ATTR_NSH nests
// OVS_NSH_KEY_ATTR_BASE (struct ovs_nsh_key_base: flags, ttl, mdtype, np,
// and the service path header, spi << 8 | si, big-endian), MD1 (the four
// context words) and, in push_nsh only, MD2 (the TLVs). A flow key holds
// MD1 for an MD type 1 packet and no context for MD type 2 (the kernel
// keys none); a mask always holds MD1. In a masked set, each nested
// attribute carries its value followed by its mask.
const (
	nshAttrBase = 1
	nshAttrMD1  = 2
	nshAttrMD2  = 3

	sizeNSHBase = 8
	sizeNSHMD1  = 16

	// NSHMD2MaxLen is the most MD type 2 metadata push_nsh carries
	// (the kernel's NSH_CTX_HDRS_MAX_LEN).
	NSHMD2MaxLen = 248
)

func putNSHBase(p []byte, v *flow.NSH) {
	p[0], p[1], p[2], p[3] = v.Flags, v.TTL, v.MDType, v.NP
	binary.BigEndian.PutUint32(p[4:], v.SPI<<8|uint32(v.SI))
}

func putNSHMD1(p []byte, v *flow.NSH) {
	for i, c := range v.C {
		binary.BigEndian.PutUint32(p[4*i:], c)
	}
}

func getNSHBase(d []byte, v *flow.NSH) {
	v.Flags, v.TTL, v.MDType, v.NP = d[0], d[1], d[2], d[3]
	ph := binary.BigEndian.Uint32(d[4:])
	v.SPI, v.SI = ph>>8, uint8(ph)
}

func getNSHMD1(d []byte, v *flow.NSH) {
	for i := range v.C {
		v.C[i] = binary.BigEndian.Uint32(d[4*i:])
	}
}

// appendNSHKey appends v as OVS_KEY_ATTR_NSH of a flow key (md1 says
// whether it carries the context) or a mask.
func appendNSHKey(b []byte, v *flow.NSH, md1 bool) []byte {
	b, start := netlinkio.BeginNested(b, KeyAttrNSH)
	b, p := netlinkio.AppendReserve(b, nshAttrBase, sizeNSHBase)
	putNSHBase(p, v)
	if md1 {
		b, p = netlinkio.AppendReserve(b, nshAttrMD1, sizeNSHMD1)
		putNSHMD1(p, v)
	}
	return netlinkio.EndNested(b, start)
}

// decodeNSHKey decodes the payload of OVS_KEY_ATTR_NSH of a flow key or
// mask into v. MD2 is an error there, and so is MD1 in the key of a
// packet whose MD type is not 1, as in the kernel.
func decodeNSHKey(d []byte, v *flow.NSH, isMask bool) error {
	var seen uint8
	it := netlinkio.NewAttrIter(d)
	for it.Next() {
		t, p := it.Type(), it.Data()
		if seen&(1<<(t&7)) != 0 && t <= nshAttrMD2 {
			return keyErr("nsh: duplicate attribute %d", t)
		}
		switch t {
		case nshAttrBase:
			if len(p) != sizeNSHBase {
				return keyErr("nsh base of %d bytes, want %d", len(p), sizeNSHBase)
			}
			getNSHBase(p, v)
		case nshAttrMD1:
			if len(p) != sizeNSHMD1 {
				return keyErr("nsh md1 of %d bytes, want %d", len(p), sizeNSHMD1)
			}
			getNSHMD1(p, v)
		default:
			return keyErr("nsh: attribute %d in a flow key", t)
		}
		seen |= 1 << (t & 7)
	}
	if err := it.Err(); err != nil {
		return fmt.Errorf("%w: nsh: %w", ErrKeyAttr, err)
	}
	if !isMask && seen&(1<<nshAttrMD1) != 0 && v.MDType != flow.NSHMDType1 {
		return keyErr("nsh: md1 context in a key of md type %d", v.MDType)
	}
	return nil
}

// AppendPushNSH appends a push_nsh action, which nests one
// OVS_KEY_ATTR_NSH as the kernel's validate_nsh reads it: the header n (its NP is the
// datapath's to choose, from the packet, and written as given) with MD1
// context for MD type 1, or the MD type 2 metadata md2 (TLVs, a multiple
// of 4 bytes, at most NSHMD2MaxLen) for MD type 2.
func AppendPushNSH(b []byte, n *flow.NSH, md2 []byte) []byte {
	b, start := netlinkio.BeginNested(b, uint16(ActionPushNSH))
	b, key := netlinkio.BeginNested(b, KeyAttrNSH)
	b, p := netlinkio.AppendReserve(b, nshAttrBase, sizeNSHBase)
	putNSHBase(p, n)
	if n.MDType == flow.NSHMDType2 {
		b = netlinkio.AppendAttr(b, nshAttrMD2, md2)
	} else {
		b, p = netlinkio.AppendReserve(b, nshAttrMD1, sizeNSHMD1)
		putNSHMD1(p, n)
	}
	b = netlinkio.EndNested(b, key)
	return netlinkio.EndNested(b, start)
}

// decodePushNSH decodes push_nsh's payload into a.NSH and a.NSHMD2, with
// the kernel's checks: a base, and MD1 or MD2 as its MD type says.
func decodePushNSH(a *Action) error {
	outer := netlinkio.NewAttrIter(a.Data)
	if !outer.Next() || outer.Type() != KeyAttrNSH ||
		netlinkio.Align(netlinkio.AttrHeaderLen+len(outer.Data())) != len(a.Data) {
		return actionErr("push_nsh must hold exactly one nsh key attribute")
	}
	var hasBase, hasMD1, hasMD2 bool
	it := netlinkio.NewAttrIter(outer.Data())
	for it.Next() {
		p := it.Data()
		switch it.Type() {
		case nshAttrBase:
			if hasBase || len(p) != sizeNSHBase {
				return actionErr("push_nsh: base of %d bytes, or twice", len(p))
			}
			getNSHBase(p, &a.NSH)
			hasBase = true
		case nshAttrMD1:
			if hasMD1 || len(p) != sizeNSHMD1 {
				return actionErr("push_nsh: md1 of %d bytes, or twice", len(p))
			}
			getNSHMD1(p, &a.NSH)
			hasMD1 = true
		case nshAttrMD2:
			if hasMD2 || len(p) == 0 || len(p) > NSHMD2MaxLen {
				return actionErr("push_nsh: md2 of %d bytes, or twice", len(p))
			}
			a.NSHMD2 = p
			hasMD2 = true
		default:
			return actionErr("push_nsh: unknown attribute %d", it.Type())
		}
	}
	if err := it.Err(); err != nil {
		return actionErr("push_nsh: %v", err)
	}
	switch {
	case !hasBase:
		return actionErr("push_nsh without a base header")
	case hasMD1 == hasMD2:
		return actionErr("push_nsh needs exactly one of md1 and md2")
	case hasMD1 && a.NSH.MDType != flow.NSHMDType1, hasMD2 && a.NSH.MDType != flow.NSHMDType2:
		return actionErr("push_nsh: metadata does not match md type %d", a.NSH.MDType)
	}
	return nil
}

// AppendSetNSHMasked appends set(nsh(...)) of the fields of v that m
// selects: the kernel writes flags, ttl, spi, si and, for an MD type 1
// packet, the context; mdtype and np are not writable and their mask
// bits are ignored. MD1 is carried only when m selects context bits.
func AppendSetNSHMasked(b []byte, v, m *flow.NSH) []byte {
	mm := *m
	mm.MDType, mm.NP = 0, 0
	mm.SPI &= flow.NSHSPIMask
	vv := flow.NSH{Flags: v.Flags & mm.Flags, TTL: v.TTL & mm.TTL, SPI: v.SPI & mm.SPI, SI: v.SI & mm.SI}
	for i := range vv.C {
		vv.C[i] = v.C[i] & mm.C[i]
	}
	b, set := netlinkio.BeginNested(b, uint16(ActionSetMasked))
	b, nsh := netlinkio.BeginNested(b, KeyAttrNSH)
	b, p := netlinkio.AppendReserve(b, nshAttrBase, 2*sizeNSHBase)
	putNSHBase(p, &vv)
	putNSHBase(p[sizeNSHBase:], &mm)
	if mm.C != ([4]uint32{}) {
		b, p = netlinkio.AppendReserve(b, nshAttrMD1, 2*sizeNSHMD1)
		putNSHMD1(p, &vv)
		putNSHMD1(p[sizeNSHMD1:], &mm)
	}
	b = netlinkio.EndNested(b, nsh)
	return netlinkio.EndNested(b, set)
}

// DecodeSetNSH decodes the payload of a masked set's OVS_KEY_ATTR_NSH
// (Action.SetKey of a set with SetAttr KeyAttrNSH) into value and mask.
func DecodeSetNSH(d []byte, v, m *flow.NSH) error {
	*v, *m = flow.NSH{}, flow.NSH{}
	var seen uint8
	it := netlinkio.NewAttrIter(d)
	for it.Next() {
		p := it.Data()
		t := it.Type()
		switch t {
		case nshAttrBase:
			if len(p) != 2*sizeNSHBase {
				return actionErr("set(nsh): base of %d bytes, want %d", len(p), 2*sizeNSHBase)
			}
			getNSHBase(p, v)
			getNSHBase(p[sizeNSHBase:], m)
		case nshAttrMD1:
			if len(p) != 2*sizeNSHMD1 {
				return actionErr("set(nsh): md1 of %d bytes, want %d", len(p), 2*sizeNSHMD1)
			}
			getNSHMD1(p, v)
			getNSHMD1(p[sizeNSHMD1:], m)
		default:
			return actionErr("set(nsh): attribute %d", t)
		}
		if seen&(1<<t) != 0 {
			return actionErr("set(nsh): attribute %d twice", t)
		}
		seen |= 1 << t
	}
	if err := it.Err(); err != nil {
		return actionErr("set(nsh): %v", err)
	}
	return nil
}

// nshFullMask is the mask push_nsh's text prints with: every field, and
// the context of an MD type 1 header.
func nshFullMask(mdType uint8) flow.NSH {
	m := flow.NSH{Flags: 0xff, TTL: 0xff, MDType: 0xff, NP: 0xff, SPI: 0xffffffff, SI: 0xff}
	if mdType == flow.NSHMDType1 {
		m.C = [4]uint32{^uint32(0), ^uint32(0), ^uint32(0), ^uint32(0)}
	}
	return m
}
