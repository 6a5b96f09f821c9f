package ofproto

// isReservedMulticast reports whether dst is one of the link-local
// protocol addresses that a learning switch must not forward (unless the
// bridge's other_config:forward-bpdu says so), the list OVS's
// eth_addr_is_reserved keeps: IEEE 802.1D's 01:80:c2:00:00:00-0f (STP,
// pause, LACP, 802.1X, LLDP ...), Extreme's EDP and EAPS, Cisco's ISL,
// CDP/VTP/DTP/PAgP/UDLD, PVST+, Uplink Fast and CFM.
func isReservedMulticast(dst [6]byte) bool {
	if dst[0] == 0x00 && dst[1] == 0xe0 && dst[2] == 0x2b && dst[3] == 0 && dst[4] == 0 {
		return dst[5] == 0 || dst[5] == 4 || dst[5] == 6 // Extreme's EDP and EAPS, unicast
	}
	if dst[0]&1 == 0 {
		return false // the others are group addresses: the common case ends here
	}
	switch {
	case dst[0] == 0x01 && dst[1] == 0x80 && dst[2] == 0xc2 && dst[3] == 0 && dst[4] == 0 && dst[5] <= 0x0f:
		return true
	case dst[0] == 0x01 && dst[1] == 0x00 && dst[2] == 0x0c:
		switch [3]byte{dst[3], dst[4], dst[5]} {
		case [3]byte{0x00, 0x00, 0x00}, // ISL
			[3]byte{0xcc, 0xcc, 0xcc}, // PAgP, UDLD, CDP, DTP, VTP
			[3]byte{0xcc, 0xcc, 0xcd}, // PVST+
			[3]byte{0xcd, 0xcd, 0xcd}: // STP Uplink Fast, FlexLink
			return true
		}
		return dst[3] == 0xcc && dst[4] == 0xcc && dst[5]&0xf8 == 0xc0 // CFM: cc:cc:c0-c7
	}
	return false
}
