package openflow

import (
	"bytes"
	"fmt"
	"net/netip"
)

// Connection tracking: the Nicira ct action (NXAST_CT, with its nested
// actions and NXAST_NAT) and ct_clear (NXAST_CT_CLEAR), in the bytes
// ovs-ofctl 3.1 sends.

// Nicira conntrack action subtypes.
const (
	NXASTCT      uint16 = 35
	NXASTNAT     uint16 = 36
	NXASTCTClear uint16 = 43
)

// CtAction flags (NX_CT_F_*).
const (
	CtCommit uint16 = 1 << 0
	CtForce  uint16 = 1 << 1 // needs CtCommit
)

// CtNoRecirc is CtAction.Table when the ct action does not recirculate.
const CtNoRecirc uint8 = 0xff

// NAT flags (NX_NAT_F_*).
const (
	NATSrc         uint16 = 1 << 0
	NATDst         uint16 = 1 << 1
	NATPersistent  uint16 = 1 << 2
	NATProtoHash   uint16 = 1 << 3
	NATProtoRandom uint16 = 1 << 4
	natFlagsMask          = NATSrc | NATDst | NATPersistent | NATProtoHash | NATProtoRandom
)

// NX_NAT_RANGE_* bits of range_present.
const (
	natRangeIPv4Min  = 1 << 0
	natRangeIPv4Max  = 1 << 1
	natRangeIPv6Min  = 1 << 2
	natRangeIPv6Max  = 1 << 3
	natRangeProtoMin = 1 << 4
	natRangeProtoMax = 1 << 5
)

// CtAction is the body of an ActCT action: send the packet through the
// kernel's connection tracker.
type CtAction struct {
	Flags uint16 // CtCommit, CtForce
	// The zone is ZoneImm when ZoneField is FieldNone, else the 16 bits
	// of ZoneField at ZoneOfs (NBits is always 16).
	ZoneField Field
	ZoneOfs   uint16
	ZoneImm   uint16
	// Table is where the tracked packet resumes in the pipeline,
	// CtNoRecirc for nowhere.
	Table uint8
	Alg   uint16 // the ALG's well-known port (21 ftp, 69 tftp), 0 for none
	// Actions are the nested actions, in order: set_field, load or move
	// into ct_mark or ct_label (exec(...)) and at most one ActNAT.
	Actions []Action
}

// NATAction is the body of an ActNAT action, nested in a ct action.
type NATAction struct {
	Flags uint16 // NATSrc or NATDst, NATPersistent, NATProtoHash or NATProtoRandom
	// IPMin..IPMax and ProtoMin..ProtoMax are the ranges; an invalid
	// IPMin means none (and then no port range either). IPMax and
	// ProtoMax are invalid/0 for a single value.
	IPMin, IPMax       netip.Addr
	ProtoMin, ProtoMax uint16
}

// Commit reports whether the ct action commits the connection.
func (c *CtAction) Commit() bool { return c.Flags&CtCommit != 0 }

// NAT returns the ct action's nested nat clause, nil for none.
func (c *CtAction) NAT() *NATAction {
	for i := range c.Actions {
		if c.Actions[i].Type == ActNAT {
			return c.Actions[i].NAT
		}
	}
	return nil
}

func (c *CtAction) equal(o *CtAction) bool {
	if c == nil || o == nil {
		return c == o
	}
	if c.Flags != o.Flags || c.ZoneField != o.ZoneField || c.ZoneOfs != o.ZoneOfs || c.ZoneImm != o.ZoneImm ||
		c.Table != o.Table || c.Alg != o.Alg || len(c.Actions) != len(o.Actions) {
		return false
	}
	for i := range c.Actions {
		if !c.Actions[i].Equal(o.Actions[i]) {
			return false
		}
	}
	return true
}

func (n *NATAction) equal(o *NATAction) bool {
	if n == nil || o == nil {
		return n == o
	}
	return *n == *o
}

// ctField reports whether f is a conntrack field that only a ct action's
// nested actions may set.
func ctField(f Field) bool { return f == FieldCtMark || f == FieldCtLabel }

// decodeCT decodes a whole NXAST_CT action of version v (len >= 16).
func decodeCT(v uint8, act []byte) (Action, error) {
	if len(act) < 24 {
		return Action{}, errOf(v, kActBadLen, "ct: length %d, want at least 24", len(act))
	}
	c := &CtAction{Flags: u16(act[10:]), Table: act[18], Alg: u16(act[22:])}
	if c.Flags&^(CtCommit|CtForce) != 0 {
		return Action{}, errOf(v, kActBadArgument, "ct: flags %#x", c.Flags)
	}
	if c.Flags&CtForce != 0 && c.Flags&CtCommit == 0 {
		return Action{}, errOf(v, kActBadArgument, "ct: force without commit")
	}
	if src := u32(act[12:]); src != 0 {
		f := FieldByHeader(src)
		if f == FieldNone || fields[f].enc == 0 || src&0x1ff != uint32(fields[f].size) {
			return Action{}, errOf(v, kActBadSetType, "ct: zone source %08x", src)
		}
		ofsNBits := u16(act[16:])
		c.ZoneField, c.ZoneOfs = f, ofsNBits>>6
		if n := ofsNBits&0x3f + 1; n != 16 {
			return Action{}, errOf(v, kActBadSetLen, "ct: zone of %d bits", n)
		}
		if int(c.ZoneOfs)+16 > 8*f.Size() {
			return Action{}, errOf(v, kActBadArgument, "ct: zone %s[%d..%d]", f, c.ZoneOfs, c.ZoneOfs+15)
		}
	} else {
		c.ZoneImm = u16(act[16:])
	}
	var err error
	nested := act[24:]
	if v == Version10 {
		c.Actions, err = DecodeActions10(nil, nested)
	} else {
		c.Actions, err = decodeActionsFor(v, nil, nested)
	}
	if err != nil {
		if e, ok := err.(*Error); ok {
			e.Version = v
		}
		return Action{}, err
	}
	nats := 0
	for i := range c.Actions {
		a := &c.Actions[i]
		switch {
		case a.Type == ActNAT:
			nats++
			if c.Flags&CtCommit == 0 && (a.NAT.Flags != 0 || a.NAT.IPMin.IsValid()) {
				return Action{}, errOf(v, kActBadArgument, "ct: nat with arguments needs commit")
			}
		case (a.Type == ActSetField || a.Type == ActRegLoad || a.Type == ActRegMove) && ctField(a.Field):
			if c.Flags&CtCommit == 0 {
				return Action{}, errOf(v, kActBadArgument, "ct: setting %s needs commit", a.Field)
			}
		default:
			return Action{}, errOf(v, kActBadArgument, "ct: %s cannot be nested in ct", a.Type)
		}
	}
	if nats > 1 {
		return Action{}, errOf(v, kActBadArgument, "ct: more than one nat")
	}
	return Action{Type: ActCT, Ct: c}, nil
}

// decodeNAT decodes a whole NXAST_NAT action (len >= 16).
func decodeNAT(v uint8, act []byte) (Action, error) {
	if len(act) < 16 {
		return Action{}, errOf(v, kActBadLen, "nat: length %d", len(act))
	}
	n := &NATAction{Flags: u16(act[12:])}
	present := u16(act[14:])
	if n.Flags&^natFlagsMask != 0 || n.Flags&(NATSrc|NATDst) == NATSrc|NATDst ||
		n.Flags&(NATProtoHash|NATProtoRandom) == NATProtoHash|NATProtoRandom {
		return Action{}, errOf(v, kActBadArgument, "nat: flags %#x", n.Flags)
	}
	bad := func(what string) (Action, error) {
		return Action{}, errOf(v, kActBadArgument, "nat: %s (range_present %#x)", what, present)
	}
	opts := act[16:]
	take := func(k int) ([]byte, bool) {
		if len(opts) < k {
			return nil, false
		}
		b := opts[:k]
		opts = opts[k:]
		return b, true
	}
	switch {
	case present&natRangeIPv4Min != 0:
		if present&(natRangeIPv6Min|natRangeIPv6Max) != 0 {
			return bad("IPv4 and IPv6 ranges")
		}
		b, ok := take(4)
		if !ok || u32(b) == 0 {
			return bad("IPv4 minimum")
		}
		n.IPMin = netip.AddrFrom4([4]byte(b))
		if present&natRangeIPv4Max != 0 {
			b, ok := take(4)
			if !ok || u32(b) < u32(n.IPMin.AsSlice()) {
				return bad("IPv4 maximum")
			}
			n.IPMax = netip.AddrFrom4([4]byte(b))
		}
	case present&natRangeIPv4Max != 0:
		return bad("IPv4 maximum without minimum")
	case present&natRangeIPv6Min != 0:
		b, ok := take(16)
		if !ok || allZeroBytes(b) {
			return bad("IPv6 minimum")
		}
		n.IPMin = netip.AddrFrom16([16]byte(b))
		if present&natRangeIPv6Max != 0 {
			b, ok := take(16)
			if !ok || bytes.Compare(b, n.IPMin.AsSlice()) < 0 {
				return bad("IPv6 maximum")
			}
			n.IPMax = netip.AddrFrom16([16]byte(b))
		}
	case present&natRangeIPv6Max != 0:
		return bad("IPv6 maximum without minimum")
	}
	if present&natRangeProtoMin != 0 {
		b, ok := take(2)
		if !n.IPMin.IsValid() || !ok || u16(b) == 0 {
			return bad("port minimum")
		}
		n.ProtoMin = u16(b)
		if present&natRangeProtoMax != 0 {
			b, ok := take(2)
			if !ok || u16(b) < n.ProtoMin {
				return bad("port maximum")
			}
			n.ProtoMax = u16(b)
		}
	} else if present&natRangeProtoMax != 0 {
		return bad("port maximum without minimum")
	}
	return Action{Type: ActNAT, NAT: n}, nil
}

func allZeroBytes(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

// appendCT appends an NXAST_CT action with its nested actions in version v.
func appendCT(b []byte, a *Action, v uint8) ([]byte, error) {
	c := a.Ct
	if c == nil {
		return b, fmt.Errorf("openflow: ct action without body: %w", ErrUnsupported)
	}
	start := len(b)
	b = be16(nxActionHeader(b, 24, NXASTCT), c.Flags)
	if c.ZoneField != FieldNone {
		h, ok := c.ZoneField.Header(true)
		if !ok {
			return b[:start], fmt.Errorf("openflow: ct zone from %s: %w", c.ZoneField, ErrUnsupported)
		}
		b = be16(be32(b, h), c.ZoneOfs<<6|15)
	} else {
		b = be16(be32(b, 0), c.ZoneImm)
	}
	b = be16(append(b, c.Table, 0, 0, 0), c.Alg)
	var err error
	if v == Version10 {
		b, err = AppendActions10(b, c.Actions)
	} else {
		b, err = appendActionsFor(b, v, c.Actions)
	}
	if err != nil {
		return b[:start], err
	}
	n := len(b) - start
	if n > 0xffff {
		return b[:start], fmt.Errorf("openflow: ct action of %d bytes: %w", n, ErrBadLength)
	}
	b[start+2], b[start+3] = byte(n>>8), byte(n)
	return b, nil
}

// appendNAT appends an NXAST_NAT action, padded to 8 bytes.
func appendNAT(b []byte, n *NATAction) ([]byte, error) {
	if n == nil {
		return b, fmt.Errorf("openflow: nat action without body: %w", ErrUnsupported)
	}
	start := len(b)
	b = be16(be16(zeros(nxActionHeader(b, 16, NXASTNAT), 2), n.Flags), 0)
	var present uint16
	if n.IPMin.IsValid() {
		if n.IPMin.Is4() {
			present |= natRangeIPv4Min
		} else {
			present |= natRangeIPv6Min
		}
		b = append(b, n.IPMin.AsSlice()...)
		if n.IPMax.IsValid() {
			present |= present << 1 // the matching _MAX bit
			b = append(b, n.IPMax.AsSlice()...)
		}
		if n.ProtoMin != 0 {
			present |= natRangeProtoMin
			b = be16(b, n.ProtoMin)
		}
		if n.ProtoMax != 0 {
			present |= natRangeProtoMax
			b = be16(b, n.ProtoMax)
		}
	}
	if pad := (len(b) - start) % 8; pad != 0 {
		b = zeros(b, 8-pad)
	}
	l := len(b) - start
	b[start+2], b[start+3] = byte(l>>8), byte(l)
	b[start+14], b[start+15] = byte(present>>8), byte(present)
	return b, nil
}
