package ofproto

import "github.com/govswitch/govswitch/ofproto/openflow"

// OpenFlow 1.1 action types the switch carries out: output, the field
// rewrites (all but set_nw_ecn), push/pop_vlan, set/dec_nw_ttl. 1.2 and
// later name them by featActions (set_field covers the rewrites).
var feat11Actions = []uint16{0, 1, 2, 3, 4, 5, 6, 7, 9, 10, 17, 18, 23, 24}

// tableStats11 is what a 1.1 or 1.2 table stats entry says about table id
// beyond its counters (1.3 moved it to table features, see
// tableFeatures): the fields it matches, all of them maskable as OVS's
// tables are, the instructions (no goto_table from the last table) and
// actions it takes. Config 0 is
// OFPTC11_TABLE_MISS_CONTROLLER, ovs-vswitchd's default, which sends
// unmatched packets to 1.0 to 1.2 controllers (see ConnManager).
func tableStats11(v uint8, id int) openflow.TableStats11 {
	var s openflow.TableStats11
	bitmap32 := func(types []uint16) uint32 {
		var m uint32
		for _, t := range types {
			m |= 1 << t
		}
		return m
	}
	for _, t := range featInstructions {
		s.Instructions |= 1 << t
	}
	if id == NumTables-1 {
		s.Instructions &^= 1 << 1 // OFPIT_GOTO_TABLE: nowhere to go
	}
	switch v {
	case openflow.Version11:
		// Every OFPFMF11_* bit: the 1.1 match has nothing the switch
		// cannot match on.
		s.Match, s.Wildcards = 1<<16-1, 1<<16-1
		s.WriteActions, s.ApplyActions = bitmap32(feat11Actions), bitmap32(feat11Actions)
	case openflow.Version12:
		// OXM basic fields 0..35 are 1.2's; the switch matches and sets
		// those the codec knows.
		for f := openflow.FieldNone + 1; f < openflow.NumFields; f++ {
			h, ok := f.Header(false)
			if !ok || h>>16 != uint32(openflow.ClassOpenFlow) {
				continue
			}
			if n := h >> 9 & 0x7f; n <= 35 {
				s.Match |= 1 << n
			}
		}
		// Every matched field but the two that say what the packet
		// is (eth_type, ip_proto) can be set, as in ovs-vswitchd's list.
		const oxmEthType, oxmIPProto = 5, 10
		s.Wildcards = s.Match
		s.WriteSetFields = s.Match &^ (1<<oxmEthType | 1<<oxmIPProto)
		s.ApplySetFields = s.WriteSetFields
		s.WriteActions, s.ApplyActions = bitmap32(featActions), bitmap32(featActions)
		s.MetadataMatch, s.MetadataWrite = ^uint64(0), ^uint64(0)
	}
	return s
}
