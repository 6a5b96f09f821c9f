package datapath

import (
	"encoding/binary"
	"fmt"
	"strconv"
	"strings"
)

// The IPFIX cookies of OVS's user_action_cookie (ofproto's SampleCookie
// builds them): a flow sample's (the sample action's collector set,
// domain, point, output port and direction at offset 24) and a bridge
// sample's (the output port at 24), both SlowPathCookieLen bytes in host
// byte order. ovs-dpctl prints them as flow_sample(...) and
// ipfix(output_port=N) rather than as userdata; so do FormatActions and
// ParseActions.
const (
	cookieTypeFlowSample = 3
	cookieTypeIPFIX      = 4
)

// formatSampleCookie writes ud as ovs-dpctl's format_odp_userspace_action
// does, when it is a flow-sample or IPFIX cookie; it reports whether it
// was one. Output ports print as numbers (ovs-dpctl without --names).
func formatSampleCookie(sb *strings.Builder, ud []byte) bool {
	if len(ud) != SlowPathCookieLen {
		return false
	}
	ne := binary.NativeEndian
	switch ne.Uint16(ud) {
	case cookieTypeFlowSample:
		fmt.Fprintf(sb, ",flow_sample(probability=%d,collector_set_id=%d,obs_domain_id=%d,obs_point_id=%d,output_port=%d",
			ne.Uint16(ud[24:]), ne.Uint32(ud[28:]), ne.Uint32(ud[32:]), ne.Uint32(ud[36:]), ne.Uint32(ud[40:]))
		switch ne.Uint32(ud[44:]) {
		case 1:
			sb.WriteString(",ingress")
		case 2:
			sb.WriteString(",egress")
		}
		sb.WriteByte(')')
	case cookieTypeIPFIX:
		fmt.Fprintf(sb, ",ipfix(output_port=%d)", ne.Uint32(ud[24:]))
	default:
		return false
	}
	return true
}

// parseSampleCookie reads the arguments of flow_sample(...) (flowSample
// true) or ipfix(...) into a cookie, as OVS's parser does: the input port
// OFPP_NONE and a zero bridge UUID, which the text does not carry.
func parseSampleCookie(flowSample bool, args string) ([]byte, error) {
	ud := make([]byte, SlowPathCookieLen)
	ne := binary.NativeEndian
	ne.PutUint32(ud[4:], 0xffff)
	kv, err := keyValues(args)
	if err != nil {
		return nil, err
	}
	num := func(v string, bits int) (uint64, error) { return strconv.ParseUint(v, 0, bits) }
	if !flowSample {
		if len(kv) != 1 || kv[0][0] != "output_port" {
			return nil, fmt.Errorf("want ipfix(output_port=N)")
		}
		v, err := num(kv[0][1], 32)
		if err != nil {
			return nil, fmt.Errorf("ipfix output_port: %w", err)
		}
		ne.PutUint16(ud, cookieTypeIPFIX)
		ne.PutUint32(ud[24:], uint32(v))
		return ud, nil
	}
	// OVS scans the five fields in this order, then ingress or egress.
	names := []string{"probability", "collector_set_id", "obs_domain_id", "obs_point_id", "output_port"}
	if len(kv) < len(names) || len(kv) > len(names)+1 {
		return nil, fmt.Errorf("want flow_sample(%s=N[,ingress|egress])", strings.Join(names, "=N,"))
	}
	ne.PutUint16(ud, cookieTypeFlowSample)
	for i, n := range names {
		bits := 32
		if i == 0 {
			bits = 16
		}
		if kv[i][0] != n {
			return nil, fmt.Errorf("flow_sample: %q where %s goes", kv[i][0], n)
		}
		v, err := num(kv[i][1], bits)
		if err != nil {
			return nil, fmt.Errorf("flow_sample %s: %w", n, err)
		}
		if i == 0 {
			ne.PutUint16(ud[24:], uint16(v))
		} else {
			ne.PutUint32(ud[24+4*i:], uint32(v))
		}
	}
	if len(kv) > len(names) {
		switch kv[len(names)] {
		case [2]string{"ingress", ""}:
			ne.PutUint32(ud[44:], 1)
		case [2]string{"egress", ""}:
			ne.PutUint32(ud[44:], 2)
		default:
			return nil, fmt.Errorf("flow_sample: %q, want ingress or egress", kv[len(names)][0])
		}
	}
	return ud, nil
}
