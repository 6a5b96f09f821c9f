package openflow

import (
	"fmt"
	"net/netip"
)

// NXTCtFlushZone is the Nicira subtype of NXT_CT_FLUSH_ZONE (any OpenFlow
// version): flush the connection tracking entries of one zone.
// ovn-controller sends it for the zones of logical ports it (re)assigns.
const NXTCtFlushZone uint32 = 29

// CtFlushZone is NXT_CT_FLUSH_ZONE (struct nx_zone_id: six zero bytes and
// the zone).
type CtFlushZone struct {
	Envelope
	Zone uint16
}

func (m *CtFlushZone) Append(b []byte) ([]byte, error) {
	b, start := begin(b, m.Version, TypeVendor, m.Xid)
	b = be32(be32(b, NXVendorID), NXTCtFlushZone)
	return finish(be16(zeros(b, 6), m.Zone), start)
}

func decodeCtFlushZone(env Envelope, rest []byte) (Msg, error) {
	if len(rest) != 8 {
		return nil, badLen(env.Version, "NXT_CT_FLUSH_ZONE", len(rest), 8)
	}
	return &CtFlushZone{Envelope: env, Zone: u16(rest[6:])}, nil
}

// NXTCtFlush is the Nicira subtype of NXT_CT_FLUSH (any OpenFlow version,
// new in OVS 3.1): flush the connection tracking entries a partial
// original and reply tuple select, in a zone or in all.
const NXTCtFlush uint32 = 32

// NXT_CT_FLUSH property types (enum nx_ct_flush_tlv_type and enum
// nx_ct_flush_tuple_tlv_type).
const (
	ctFlushOrigTuple  = 0 // nested tuple properties
	ctFlushReplyTuple = 1 // nested tuple properties
	ctFlushZoneID     = 2 // be16

	ctTupleSrc      = 0 // 16 bytes: IPv6, or IPv4 mapped
	ctTupleDst      = 1
	ctTupleSrcPort  = 2 // be16
	ctTupleDstPort  = 3 // be16
	ctTupleICMPID   = 4 // be16
	ctTupleICMPType = 5 // u8
	ctTupleICMPCode = 6 // u8
)

// CtFlushTuple is one direction of NXT_CT_FLUSH. An invalid address (not
// given, or all zeros on the wire) and a zero port match anything; for
// ICMP the id, type and code are the fields, and the ports are unused.
type CtFlushTuple struct {
	Src, Dst         netip.Addr // IPv4 unmapped
	SrcPort, DstPort uint16
	ICMPID           uint16
	ICMPType         uint8
	ICMPCode         uint8
}

// CtFlush is NXT_CT_FLUSH (struct nx_ct_flush: ip_proto, 7 zero bytes,
// then properties). Family is the address family of its addresses
// (unix.AF_INET or AF_INET6; 0 if it has none); one flush's addresses are
// all of one family.
type CtFlush struct {
	Envelope
	Proto       uint8
	Family      uint8
	Orig, Reply CtFlushTuple
	HasZone     bool
	Zone        uint16
}

func isICMPProto(p uint8) bool { return p == 1 || p == 58 }

// Append encodes m as ovs-ofctl 3.1's ct-flush does: a tuple property
// only when the tuple has something to say, ports only when non-zero, ICMP
// id, type and code always for ICMP.
func (m *CtFlush) Append(b []byte) ([]byte, error) {
	b, start := begin(b, m.Version, TypeVendor, m.Xid)
	b = be32(be32(b, NXVendorID), NXTCtFlush)
	b = zeros(append(b, m.Proto), 7)
	b = m.Orig.append(b, ctFlushOrigTuple, m.Proto)
	b = m.Reply.append(b, ctFlushReplyTuple, m.Proto)
	if m.HasZone {
		b = appendProp(b, ctFlushZoneID, []byte{byte(m.Zone >> 8), byte(m.Zone)})
	}
	return finish(b, start)
}

func (t *CtFlushTuple) append(b []byte, typ uint16, proto uint8) []byte {
	var in []byte
	for i, a := range []netip.Addr{t.Src, t.Dst} {
		if a.IsValid() {
			a16 := a.As16()
			in = appendProp(in, uint16(ctTupleSrc+i), a16[:])
		}
	}
	if isICMPProto(proto) {
		in = appendProp(in, ctTupleICMPID, []byte{byte(t.ICMPID >> 8), byte(t.ICMPID)})
		in = appendProp(in, ctTupleICMPType, []byte{t.ICMPType})
		in = appendProp(in, ctTupleICMPCode, []byte{t.ICMPCode})
	} else {
		if t.SrcPort != 0 {
			in = appendProp(in, ctTupleSrcPort, []byte{byte(t.SrcPort >> 8), byte(t.SrcPort)})
		}
		if t.DstPort != 0 {
			in = appendProp(in, ctTupleDstPort, []byte{byte(t.DstPort >> 8), byte(t.DstPort)})
		}
	}
	if len(in) == 0 {
		return b
	}
	return appendNested(b, typ, in)
}

// ctFlushErr is the error ovs-vswitchd 3.1 gives for a bad NXT_CT_FLUSH
// in version v: OFPBPC_BAD_LEN (bad=false) or OFPBPC_BAD_VALUE (bad=true),
// numbered per version as OVS numbers them.
func ctFlushErr(v uint8, badValue bool, format string, args ...any) *Error {
	e := &Error{Version: v, Err: ErrUnsupported, Detail: "NXT_CT_FLUSH: " + fmt.Sprintf(format, args...)}
	if !badValue {
		e.Err = ErrBadLength
	}
	off := uint16(0)
	if badValue {
		off = 1
	}
	switch {
	case v >= Version14:
		e.Type, e.Code = Err14TypeBadProperty, BadProperty14BadLen+off
	case v == Version12:
		e.Type, e.Code, e.Experimenter = Err13TypeExperimenter, 26+off, NXVendorID
	default: // 1.0, 1.1 (Nicira's numbers) and 1.3 agree
		e.Type, e.Code = Err13TypeTableFeatFailed, 3+off
	}
	return e
}

// ctProps walks NXT_CT_FLUSH's properties as ofpprop_pull does: each
// padded to 8 bytes, the padding present. fn gets the type and the body
// after the 4-byte header.
func ctProps(v uint8, b []byte, fn func(typ uint16, body []byte) error) error {
	for len(b) > 0 {
		if len(b) < 4 {
			return ctFlushErr(v, false, "property of %d bytes", len(b))
		}
		typ, n := u16(b), int(u16(b[2:]))
		padded := (n + 7) &^ 7
		if n < 4 || padded > len(b) {
			return ctFlushErr(v, false, "property length %d in %d bytes", n, len(b))
		}
		if typ == 0xffff && n < 12 {
			return ctFlushErr(v, false, "experimenter property of %d bytes", n)
		}
		if err := fn(typ, b[4:n]); err != nil {
			return err
		}
		b = b[padded:]
	}
	return nil
}

func decodeCtFlush(env Envelope, rest []byte) (Msg, error) {
	v := env.Version
	if len(rest) < 8 {
		return nil, badLen(v, "NXT_CT_FLUSH", len(rest), 8)
	}
	for _, p := range rest[1:8] {
		if p != 0 {
			// NXBRC_MUST_BE_ZERO: Nicira's (1,515) in 1.0 and 1.1, its
			// experimenter code 4 from 1.2 on.
			e := &Error{Version: v, Type: ErrTypeBadRequest, Code: 515, Err: ErrUnsupported, Detail: "NXT_CT_FLUSH: nonzero padding"}
			if v >= Version12 {
				e.Type, e.Code, e.Experimenter = Err13TypeExperimenter, 4, NXVendorID
			}
			return nil, e
		}
	}
	m := &CtFlush{Envelope: env, Proto: rest[0]}
	err := ctProps(v, rest[8:], func(typ uint16, body []byte) error {
		switch typ {
		case ctFlushOrigTuple:
			return m.decodeTuple(v, body, &m.Orig)
		case ctFlushReplyTuple:
			return m.decodeTuple(v, body, &m.Reply)
		case ctFlushZoneID:
			if len(body) < 2 {
				return ctFlushErr(v, false, "zone property of %d bytes", len(body)+4)
			}
			m.HasZone, m.Zone = true, u16(body)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	for _, a := range []netip.Addr{m.Orig.Src, m.Orig.Dst, m.Reply.Src, m.Reply.Dst} {
		if !a.IsValid() {
			continue
		}
		fam := uint8(afInet)
		if a.Is6() {
			fam = afInet6
		}
		if m.Family != 0 && m.Family != fam {
			return nil, ctFlushErr(v, true, "IPv4 and IPv6 addresses in one flush")
		}
		m.Family = fam
	}
	return m, nil
}

// decodeTuple decodes a nested tuple property (body after its 4-byte
// header: 4 bytes of padding, then the inner properties).
func (m *CtFlush) decodeTuple(v uint8, body []byte, t *CtFlushTuple) error {
	if len(body) < 4 {
		return ctFlushErr(v, false, "tuple property of %d bytes", len(body)+4)
	}
	return ctProps(v, body[4:], func(typ uint16, b []byte) error {
		var need int
		switch typ {
		case ctTupleSrc, ctTupleDst:
			need = 16
		case ctTupleSrcPort, ctTupleDstPort, ctTupleICMPID:
			need = 2
		case ctTupleICMPType, ctTupleICMPCode:
			need = 1
		default:
			return nil
		}
		if len(b) < need {
			return ctFlushErr(v, false, "tuple property %d of %d bytes", typ, len(b)+4)
		}
		switch typ {
		case ctTupleSrc, ctTupleDst:
			a := netip.AddrFrom16([16]byte(b[:16])).Unmap()
			if a.IsUnspecified() && a.Is6() {
				// All zeros is "any". (ovs-vswitchd 3.1 lets it reset the
				// family, so that the other addresses go uncompared;
				// ovs-ofctl never sends one.)
				a = netip.Addr{}
			}
			if typ == ctTupleSrc {
				t.Src = a
			} else {
				t.Dst = a
			}
		case ctTupleSrcPort:
			t.SrcPort = u16(b)
		case ctTupleDstPort:
			t.DstPort = u16(b)
		case ctTupleICMPID:
			t.ICMPID = u16(b)
		case ctTupleICMPType:
			t.ICMPType = b[0]
		case ctTupleICMPCode:
			t.ICMPCode = b[0]
		}
		return nil
	})
}

// Address families as <sys/socket.h> numbers them (this package does no
// I/O and imports no x/sys).
const (
	afInet  = 2
	afInet6 = 10
)
