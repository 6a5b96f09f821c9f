package datapath

import (
	"encoding/binary"
	"strings"
)

// slowPathReasons are ovs-vswitchd's slow path reasons, bit i named
// slowPathReasons[i] (odp-util.h's SPR list).
var slowPathReasons = [...]string{"cfm", "bfd", "lacp", "stp", "lldp", "action", "match"}

// slowPathText formats a userspace action's userdata as ovs-dpctl does
// when it is ovs-vswitchd's 48-byte user_action_cookie of type slow path
// (2, host byte order) with its reasons at [28:32]: ",slow_path(stp)".
// ok is false for any other userdata.
func slowPathText(ud []byte) (string, bool) {
	if len(ud) != 48 || binary.LittleEndian.Uint16(ud) != 2 {
		return "", false
	}
	reason := binary.LittleEndian.Uint32(ud[28:])
	var names []string
	for i, n := range slowPathReasons {
		if reason&(1<<i) != 0 {
			names = append(names, n)
		}
	}
	if reason>>len(slowPathReasons) != 0 || len(names) == 0 {
		return "", false
	}
	return ",slow_path(" + strings.Join(names, ",") + ")", true
}
