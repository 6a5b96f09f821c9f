package openflow

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/govswitch/govswitch/flow"
)

// The conntrack original-direction tuple fields (OVS 2.8's ct_nw_src,
// ct_nw_dst, ct_ipv6_src, ct_ipv6_dst, ct_nw_proto, ct_tp_src, ct_tp_dst):
// Nicira class 1, fields 119-125, read-only, matchable when the match pins
// down a valid connection (ctValid). They map onto flow.Key.CtOrig, which
// the datapath fills in after a ct action.

func defCtTupleFields(nx1 func(uint8) uint32) {
	orig := func(k *flow.Key) *flow.CtTuple { return &k.CtOrig }
	defBytes(FieldCtNwSrc, "ct_nw_src", nx1(120), noHeader, 4, true, both, preCT,
		func(k *flow.Key) []byte { return orig(k).IPv4Src[:] })
	defBytes(FieldCtNwDst, "ct_nw_dst", nx1(121), noHeader, 4, true, both, preCT,
		func(k *flow.Key) []byte { return orig(k).IPv4Dst[:] })
	defBytes(FieldCtIPv6Src, "ct_ipv6_src", nx1(122), noHeader, 16, true, both, preCT,
		func(k *flow.Key) []byte { return orig(k).IPv6Src[:] })
	defBytes(FieldCtIPv6Dst, "ct_ipv6_dst", nx1(123), noHeader, 16, true, both, preCT,
		func(k *flow.Key) []byte { return orig(k).IPv6Dst[:] })
	defInt(FieldCtNwProto, "ct_nw_proto", nx1(119), noHeader, 1, false, both, preCTProto,
		func(k *flow.Key) *uint8 { return &k.CtOrig.Proto }, 0, 0xff)
	defInt(FieldCtTpSrc, "ct_tp_src", nx1(124), noHeader, 2, true, both, preCTProto,
		func(k *flow.Key) *uint16 { return &k.CtOrig.TpSrc }, 0, 0xffff)
	defInt(FieldCtTpDst, "ct_tp_dst", nx1(125), noHeader, 2, true, both, preCTProto,
		func(k *flow.Key) *uint16 { return &k.CtOrig.TpDst }, 0, 0xffff)
}

// ctValid reports whether the match k/m pins down a valid connection, as
// OVS's is_ct_valid does for a match: a ct_state bit that implies one
// (new, est, rel, rpl, snat, dnat) matched set, or +trk with -inv.
func ctValid(k *flow.Key, m *flow.Mask) bool {
	const implies = flow.CtNew | flow.CtEstablished | flow.CtRelated | flow.CtReplyDir | flow.CtSrcNAT | flow.CtDstNAT
	st := k.CtState & m.CtState
	return st&implies != 0 || st&flow.CtTracked != 0 && m.CtState&flow.CtInvalid != 0 && st&flow.CtInvalid == 0
}

// CtValid reports whether the match k/m pins down a valid connection
// (ctValid), the prerequisite of the tuple fields and of
// resubmit(,table,ct).
func CtValid(k *flow.Key, m *flow.Mask) bool { return ctValid(k, m) }

// ctProtoValid is the prerequisite of ct_nw_proto, ct_tp_src and
// ct_tp_dst: a valid connection and a nonzero protocol. ovs-vswitchd's is
// the connection alone, but its encoder (nx_put_raw) writes the three only
// with a nonzero protocol, so a flow matching ct_tp_src without it would
// come back from dump-flows without the match: we refuse that flow
// (OFPBMC_BAD_PREREQ) rather than keep a match no dump shows.
func ctProtoValid(k *flow.Key, m *flow.Mask) bool {
	return ctValid(k, m) && k.CtOrig.Proto != 0 && m.CtOrig.Proto == 0xff
}

// ctTuple appends the tuple fields of k/m in ovs-ofctl's order
// and syntax (match_format): the addresses, then the protocol and, with
// it, the ports.
func (t *textWriter) ctTuple(k *flow.Key, m *flow.Mask) {
	o, mo := &k.CtOrig, &m.CtOrig
	t.ipv4("ct_nw_src", &o.IPv4Src, &mo.IPv4Src)
	t.ipv6("ct_ipv6_src", &o.IPv6Src, &mo.IPv6Src)
	t.ipv4("ct_nw_dst", &o.IPv4Dst, &mo.IPv4Dst)
	t.ipv6("ct_ipv6_dst", &o.IPv6Dst, &mo.IPv6Dst)
	if mo.Proto != 0 {
		t.field("ct_nw_proto")
		t.b = strconv.AppendUint(t.b, uint64(o.Proto), 10)
		t.u16masked("ct_tp_src", o.TpSrc, mo.TpSrc, false)
		t.u16masked("ct_tp_dst", o.TpDst, mo.TpDst, false)
	}
}

// flowCtTupleMask sets in m the tuple fields an exact flow's text shows
// (OVS's flow_wildcards_init_for_packet): all of its family's when the
// packet is of a valid connection.
func flowCtTupleMask(k *flow.Key, m *flow.Mask) {
	if k.CtState&(flow.CtNew|flow.CtEstablished|flow.CtReplyDir) == 0 {
		return
	}
	mo := &m.CtOrig
	switch k.EthType {
	case flow.EthTypeIPv4:
		mo.IPv4Src, mo.IPv4Dst = [4]byte{255, 255, 255, 255}, [4]byte{255, 255, 255, 255}
	case flow.EthTypeIPv6:
		for i := range mo.IPv6Src {
			mo.IPv6Src[i], mo.IPv6Dst[i] = 0xff, 0xff
		}
	default:
		return
	}
	mo.Proto, mo.TpSrc, mo.TpDst = 0xff, 0xffff, 0xffff
}

// setCtFlowField sets a conntrack field of an exact flow given as text
// (ofproto/trace's flow): ct_state as flag names joined by | or +, or a
// number; the tuple fields as addresses and numbers.
func setCtFlowField(k *flow.Key, name, val string) error {
	var err error
	switch name {
	case "ct_state":
		k.CtState, err = parseCtStateFlags(val)
	case "ct_nw_src":
		k.CtOrig.IPv4Src, err = parseIPv4(val)
	case "ct_nw_dst":
		k.CtOrig.IPv4Dst, err = parseIPv4(val)
	case "ct_ipv6_src":
		k.CtOrig.IPv6Src, err = parseIPv6(val)
	case "ct_ipv6_dst":
		k.CtOrig.IPv6Dst, err = parseIPv6(val)
	case "ct_nw_proto":
		var v uint64
		v, err = parseNum(val, 8)
		k.CtOrig.Proto = uint8(v)
	case "ct_tp_src", "ct_tp_dst":
		var v uint64
		v, err = parseNum(val, 16)
		if name == "ct_tp_src" {
			k.CtOrig.TpSrc = uint16(v)
		} else {
			k.CtOrig.TpDst = uint16(v)
		}
	}
	return err
}

// parseCtStateFlags parses the set bits of a ct_state: "est|rpl|trk",
// "+trk+est" or a number.
func parseCtStateFlags(val string) (uint32, error) {
	if v, err := parseNum(val, 32); err == nil {
		return uint32(v), nil
	}
	var st uint32
	for _, f := range strings.FieldsFunc(val, func(r rune) bool { return r == '|' || r == '+' }) {
		i := 0
		for i < len(ctStateNames) && ctStateNames[i] != f {
			i++
		}
		if i == len(ctStateNames) {
			return 0, fmt.Errorf("%s: unknown connection tracking state flag", f)
		}
		st |= 1 << i
	}
	return st, nil
}
