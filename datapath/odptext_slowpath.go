package datapath

import (
	"encoding/binary"
	"strconv"
	"strings"
)

// formatSlowPath writes ",slow_path(reasons)" for userdata that is OVS's
// 48-byte user_action_cookie of type USER_ACTION_COOKIE_SLOW_PATH (2),
// as ovs-dpctl prints it (lib/odp-util.c), and reports whether it was
// one. ofproto's LACP flows carry such a cookie; the reason word is at
// offset 28 (ofp_port_t is 32 bits), its bits named as OVS's
// slow_path_reason.
func formatSlowPath(sb *strings.Builder, ud []byte) bool {
	if len(ud) != 48 || binary.NativeEndian.Uint16(ud) != 2 {
		return false
	}
	names := []string{"cfm", "bfd", "lacp", "stp", "lldp", "action", "match"}
	r := binary.NativeEndian.Uint32(ud[28:])
	sb.WriteString(",slow_path(")
	first := true
	for i, n := range names {
		if r&(1<<i) == 0 {
			continue
		}
		if !first {
			sb.WriteByte(',')
		}
		first = false
		sb.WriteString(n)
		r &^= 1 << i
	}
	if r != 0 {
		if !first {
			sb.WriteByte(',')
		}
		sb.WriteString("0x" + strconv.FormatUint(uint64(r), 16))
	}
	sb.WriteByte(')')
	return true
}
