package datapath

import (
	"encoding/binary"
	"fmt"
	"strconv"
	"strings"
)

// The slow-path cookie: the userdata of the userspace action that a
// slow-pathed datapath flow consists of, laid out as ovs-vswitchd's struct
// user_action_cookie (lib/odp-util.h) with type USER_ACTION_COOKIE_SLOW_PATH,
// so ovs-dpctl and ovs-appctl dpctl/dump-flows print it as
// "userspace(pid=N,slow_path(action))" for either switch. Host byte order,
// as OVS writes it (48 bytes):
//
//	[0:2]   type, 2 (USER_ACTION_COOKIE_SLOW_PATH)
//	[2:4]   padding
//	[4:8]   OpenFlow input port (ofp_port_t is 32 bits; 0xffff none)
//	[8:24]  the bridge's UUID
//	[24:26] 0
//	[26:28] padding
//	[28:32] slow-path reasons (SlowAction, SlowLACP, SlowSTP, ...)
//	[32:48] 0
//
// (The offsets are those the real ovs-dpctl decodes: vswitchd's
// TestIntegrationARPResponder reads the kernel's flows with it.) The
// userspace slow path, LACP and STP all write theirs with
// PutSlowPathCookie and tell them apart by the reason.
const (
	SlowPathCookieLen  = 48
	cookieTypeSlowPath = 2
)

// Slow-path reasons, OVS's enum slow_path_reason bits.
const (
	SlowCFM    uint32 = 1 << 0
	SlowBFD    uint32 = 1 << 1
	SlowLACP   uint32 = 1 << 2
	SlowSTP    uint32 = 1 << 3
	SlowLLDP   uint32 = 1 << 4
	SlowAction uint32 = 1 << 5
	SlowMatch  uint32 = 1 << 6
)

var slowReasons = [...]struct{ name, why string }{
	{"cfm", "Consists of CFM packets"},
	{"bfd", "Consists of BFD packets"},
	{"lacp", "Consists of LACP packets"},
	{"stp", "Consists of STP packets"},
	{"lldp", "Consists of LLDP packets"},
	{"action", "Uses action(s) not supported by datapath"},
	{"match", "Datapath can't match specifically enough"},
}

// PutSlowPathCookie writes the slow-path cookie for reasons, input port
// ofInPort and bridge UUID uuid into b, which holds SlowPathCookieLen
// bytes.
func PutSlowPathCookie(b []byte, reasons uint32, ofInPort uint32, uuid *[16]byte) {
	clear(b[:SlowPathCookieLen])
	binary.NativeEndian.PutUint16(b[0:], cookieTypeSlowPath)
	binary.NativeEndian.PutUint32(b[4:], ofInPort)
	copy(b[8:24], uuid[:])
	binary.NativeEndian.PutUint32(b[28:], reasons)
}

// SlowPathCookieUUID returns the bridge UUID of a slow-path cookie
// (PutSlowPathCookie's uuid).
func SlowPathCookieUUID(b []byte) []byte { return b[8:24] }

// ParseSlowPathCookie returns the reasons of a slow-path cookie; ok is
// false for any other userdata. As OVS, only userdata of exactly the
// cookie's size is read as one.
func ParseSlowPathCookie(b []byte) (reasons uint32, ok bool) {
	if len(b) != SlowPathCookieLen || binary.NativeEndian.Uint16(b) != cookieTypeSlowPath {
		return 0, false
	}
	return binary.NativeEndian.Uint32(b[28:]), true
}

// SlowPathReasonString names the reasons as OVS's format_flags does:
// "action", "lacp,action"; an unknown bit as its hex value.
func SlowPathReasonString(reasons uint32) string {
	var parts []string
	for i := 0; i < 32; i++ {
		bit := uint32(1) << i
		if reasons&bit == 0 {
			continue
		}
		if i < len(slowReasons) {
			parts = append(parts, slowReasons[i].name)
		} else {
			parts = append(parts, "0x"+strconv.FormatUint(uint64(bit), 16))
		}
	}
	return strings.Join(parts, ",")
}

// SlowPathExplanations returns ofproto/trace's sentence for each reason.
func SlowPathExplanations(reasons uint32) []string {
	var out []string
	for i := 0; i < 32; i++ {
		if reasons&(1<<i) == 0 {
			continue
		}
		if i < len(slowReasons) {
			out = append(out, slowReasons[i].why)
		} else {
			out = append(out, "<unknown>")
		}
	}
	return out
}

// parseSlowPathReasons parses SlowPathReasonString's text.
func parseSlowPathReasons(s string) (uint32, error) {
	var r uint32
	if s == "" {
		return 0, nil
	}
outer:
	for _, name := range strings.Split(s, ",") {
		for i, sr := range slowReasons {
			if sr.name == name {
				r |= 1 << i
				continue outer
			}
		}
		v, err := strconv.ParseUint(strings.TrimPrefix(name, "0x"), 16, 32)
		if err != nil || !strings.HasPrefix(name, "0x") {
			return 0, fmt.Errorf("unknown slow-path reason %q", name)
		}
		r |= uint32(v)
	}
	return r, nil
}
