package openflow

import (
	"testing"

	"github.com/govswitch/govswitch/flow"
)

// inPortMatch matches in_port only.
func inPortMatch(p uint32) Match {
	var m Match
	m.Key.InPort, m.Mask.InPort = p, 0xffffffff
	return m
}

func ethTypeMatch(t uint16) Match {
	var m Match
	m.Key.EthType, m.Mask.EthType = t, 0xffff
	return m
}

func goldenNicira() []golden {
	var nxm Match
	nxm.Key.Regs[3], nxm.Mask.Regs[3] = 7, 0xffffffff
	nxm.Key.EthType, nxm.Mask.EthType = flow.EthTypeIPv6, 0xffff
	nxm.Key.IPv6Dst = [16]byte{0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 1}
	nxm.Mask.IPv6Dst = [16]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}
	var reg0 Match
	reg0.Key.Regs[0], reg0.Mask.Regs[0] = 1, 0xffffffff
	return []golden{
		{"set flow format", &NXSetFlowFormat{Envelope: env10(1), Format: NXFlowFormatNXM}, `
			01 04 0014 00000001  // header: VENDOR, length 20
			00002320 0000000c    // vendor Nicira, subtype SET_FLOW_FORMAT
			00000002             // format NXM`},
		{"flow mod table id", &NXFlowModTableID{Envelope: env10(2), Enable: true}, `
			01 04 0018 00000002  // header: VENDOR, length 24
			00002320 0000000f    // vendor Nicira, subtype FLOW_MOD_TABLE_ID
			01 00000000000000    // set 1, pad`},
		{"set packet in format", &NXSetPacketInFormat{Envelope: env10(3), Format: NXPacketInNXM}, `
			01 04 0014 00000003  // header: VENDOR, length 20
			00002320 00000010    // vendor Nicira, subtype SET_PACKET_IN_FORMAT
			00000001             // format NXM`},
		{"nx role request", &RoleRequest{Envelope: env10(20), Role: RoleMaster}, `
			01 04 0014 00000014  // header: VENDOR, length 20
			00002320 0000000a    // vendor Nicira, subtype ROLE_REQUEST
			00000001             // NX_ROLE_MASTER`},
		{"nx role reply", &RoleReply{Envelope: env10(20), Role: RoleSlave}, `
			01 04 0014 00000014  // header: VENDOR, length 20
			00002320 0000000b    // vendor Nicira, subtype ROLE_REPLY
			00000002             // NX_ROLE_SLAVE`},
		{"nx set async config", &SetAsync{Envelope: env10(21), AsyncConfig: AsyncConfig{
			PacketInMask: [2]uint32{3, 0}, PortStatusMask: [2]uint32{7, 7}, FlowRemovedMask: [2]uint32{0xf, 0}}, Props: async13Props}, `
			01 04 0028 00000015  // header: VENDOR, length 40
			00002320 00000013    // vendor Nicira, subtype SET_ASYNC_CONFIG
			00000003 00000000    // packet_in_mask master/other, slave
			00000007 00000007    // port_status_mask
			0000000f 00000000    // flow_removed_mask`},
		{"nx set controller id", &NXSetControllerID{Envelope: env10(22), ID: 7}, `
			01 04 0018 00000016  // header: VENDOR, length 24
			00002320 00000014    // vendor Nicira, subtype SET_CONTROLLER_ID
			000000000000 0007    // pad, controller_id 7`},
		{"nx flow mod", &FlowMod{Envelope: env10(4), NXM: true, Cookie: 1, TableID: 2, Command: FlowModify,
			Priority: 10, BufferID: NoBuffer, OutPort: PortAny, OutGroup: GroupAny, Match: nxm,
			Instructions: Instructions{Apply: []Action{Output(1, 0)}}}, `
			01 04 0070 00000004  // header: VENDOR, length 112
			00002320 0000000d    // vendor Nicira, subtype FLOW_MOD
			0000000000000001     // cookie
			0201                 // table 2, command MODIFY
			0000 0000 000a       // idle, hard, priority 10
			ffffffff ffff 0000   // buffer_id, out_port NONE, flags
			0032 000000000000    // match_len 50, pad
			00000602 86dd        // NXM_OF_ETH_TYPE = IPv6
			00012920 20010db800000001 0000000000000000 ffffffffffffffff 0000000000000000 // NXM_NX_IPV6_DST_W /64
			00010604 00000007    // NXM_NX_REG3 = 7
			000000000000         // match padding to 8
			0000 0008 0001 0000  // OUTPUT port 1`},
		{"nx packet in", &PacketIn{Envelope: env10(5), NXM: true, BufferID: NoBuffer, TotalLen: 4, InPort: 3,
			Reason: PacketInNoMatch, TableID: 1, Cookie: ^uint64(0), Match: inPortMatch(3), Data: []byte{9, 8, 7, 6}}, `
			01 04 0036 00000005  // header: VENDOR, length 54
			00002320 00000011    // vendor Nicira, subtype PACKET_IN
			ffffffff 0004 00 01  // buffer_id, total_len, reason NO_MATCH, table 1
			ffffffffffffffff     // cookie
			0006 000000000000    // match_len 6, pad
			00000002 0003 0000   // NXM_OF_IN_PORT = 3, padding to 8
			0000                 // 2 bytes to align the IP header
			09080706             // packet`},
		{"nx flow removed", &FlowRemoved{Envelope: env10(6), NXM: true, Match: inPortMatch(3), Cookie: 2,
			Priority: 3, Reason: FlowRemovedDelete, TableID: 4, DurationSec: 5, DurationNsec: 6, IdleTimeout: 7,
			PacketCount: 8, ByteCount: 9}, `
			01 04 0040 00000006  // header: VENDOR, length 64
			00002320 0000000e    // vendor Nicira, subtype FLOW_REMOVED
			0000000000000002     // cookie
			0003 02 04           // priority, reason DELETE, table
			00000005 00000006    // duration
			0007 0006            // idle_timeout, match_len 6
			0000000000000008     // packet_count
			0000000000000009     // byte_count
			00000002 0003 0000   // NXM_OF_IN_PORT = 3, padding`},
		{"nxst flow request", &FlowStatsRequest{Envelope: env10(7), NXM: true, TableID: TableAll, OutPort: PortAny,
			OutGroup: GroupAny, Match: reg0}, `
			01 10 0028 00000007  // header: STATS_REQUEST, length 40
			ffff 0000            // type VENDOR, flags
			00002320 00000000    // vendor Nicira, subtype NXST_FLOW
			00000000             // pad
			ffff 0008 ff 000000  // out_port NONE, match_len 8, table all, pad
			00010004 00000001    // NXM_NX_REG0 = 1`},
		{"nxst flow reply", &FlowStatsReply{Envelope: env10(7), NXM: true, Stats: []FlowStats{{
			TableID: 1, DurationSec: 2, DurationNsec: 3, Priority: 4, IdleTimeout: 5, HardTimeout: 6,
			IdleAge: 7, HardAge: 8, Cookie: 9, PacketCount: 10, ByteCount: 11, Match: ethTypeMatch(flow.EthTypeARP),
			Instructions: Instructions{Apply: []Action{Output(PortNormal, 0)}}}}}, `
			01 11 0058 00000007  // header: STATS_REPLY, length 88
			ffff 0000            // type VENDOR, flags
			00002320 00000000    // vendor Nicira, subtype NXST_FLOW
			00000000             // pad
			0040 01 00           // entry length 64, table 1, pad
			00000002 00000003    // duration
			0004 0005 0006       // priority, idle_timeout, hard_timeout
			0006 0007 0008       // match_len 6, idle_age, hard_age
			0000000000000009     // cookie
			000000000000000a     // packet_count
			000000000000000b     // byte_count
			00000602 0806 0000   // NXM_OF_ETH_TYPE = ARP, padding
			0000 0008 fffa 0000  // OUTPUT NORMAL`},
		{"nxst aggregate request", &AggregateStatsRequest{Envelope: env10(8), NXM: true, TableID: 0, OutPort: PortAny,
			OutGroup: GroupAny}, `
			01 10 0020 00000008  // header: STATS_REQUEST, length 32
			ffff 0000            // type VENDOR, flags
			00002320 00000001    // vendor Nicira, subtype NXST_AGGREGATE
			00000000             // pad
			ffff 0000 00 000000  // out_port NONE, match_len 0, table 0, pad`},
		{"nxst aggregate reply", &AggregateStatsReply{Envelope: env10(8), NXM: true, PacketCount: 1, ByteCount: 2, FlowCount: 3}, `
			01 11 0030 00000008  // header: STATS_REPLY, length 48
			ffff 0000            // type VENDOR, flags
			00002320 00000001    // vendor Nicira, subtype NXST_AGGREGATE
			00000000             // pad
			0000000000000001     // packet_count
			0000000000000002     // byte_count
			00000003 00000000    // flow_count, pad`},
	}
}

func TestGoldenNicira(t *testing.T) { checkGolden(t, goldenNicira()) }

func goldenStats10() []golden {
	return []golden{
		{"desc request", &DescStatsRequest{Envelope: env10(1)}, `01 10 000c 00000001 0000 0000 // STATS_REQUEST DESC`},
		{"desc reply", &DescStatsReply{Envelope: env10(1), Mfr: "govswitch", HW: "hw", SW: "0.1", Serial: "None", DP: "br0"}, `
			01 11 042c 00000001  // header: STATS_REPLY, length 1068
			0000 0000            // type DESC, flags
			676f76737769746368 00*247 // mfr_desc[256] "govswitch"
			6877 00*254          // hw_desc[256] "hw"
			302e31 00*253        // sw_desc[256] "0.1"
			4e6f6e65 00*28       // serial_num[32] "None"
			627230 00*253        // dp_desc[256] "br0"`},
		{"flow request", &FlowStatsRequest{Envelope: env10(2), TableID: TableAll, OutPort: PortAny, OutGroup: GroupAny}, `
			01 10 0038 00000002  // header: STATS_REQUEST, length 56
			0001 0000            // type FLOW, flags
			003820ff 00*36       // ofp_match: everything wildcarded
			ff 00 ffff           // table all, pad, out_port NONE`},
		{"flow reply", &FlowStatsReply{Envelope: env10(2), Flags: StatsReplyMore, Stats: []FlowStats{{
			TableID: 0, DurationSec: 1, DurationNsec: 2, Priority: 3, IdleTimeout: 4, HardTimeout: 5, Cookie: 6,
			PacketCount: 7, ByteCount: 8, Match: tcpMatch(), Instructions: Instructions{Apply: []Action{Output(1, 0)}}}}}, `
			01 11 006c 00000002  // header: STATS_REPLY, length 108
			0001 0001            // type FLOW, flags REPLY_MORE
			0060 00 00           // entry length 96, table 0, pad
			` + match10TCP + `
			00000001 00000002    // duration
			0003 0004 0005       // priority, idle, hard
			000000000000         // pad
			0000000000000006     // cookie
			0000000000000007     // packet_count
			0000000000000008     // byte_count
			0000 0008 0001 0000  // OUTPUT 1`},
		{"aggregate request", &AggregateStatsRequest{Envelope: env10(3), TableID: 1, OutPort: 2, OutGroup: GroupAny,
			Match: ethTypeMatch(flow.EthTypeARP)}, `
			01 10 0038 00000003  // header: STATS_REQUEST, length 56
			0002 0000            // type AGGREGATE, flags
			003820ef 0000 00*12 0000 00 00 0806 00 00 0000 00000000 00000000 0000 0000 // ofp_match dl_type=ARP
			01 00 0002           // table 1, pad, out_port 2`},
		{"aggregate reply", &AggregateStatsReply{Envelope: env10(3), PacketCount: 1, ByteCount: 2, FlowCount: 3}, `
			01 11 0024 00000003  // header: STATS_REPLY, length 36
			0002 0000            // type AGGREGATE, flags
			0000000000000001 0000000000000002 // packet_count, byte_count
			00000003 00000000    // flow_count, pad`},
		{"table request", &TableStatsRequest{Envelope: env10(4)}, `01 10 000c 00000004 0003 0000 // STATS_REQUEST TABLE`},
		{"table reply", &TableStatsReply{Envelope: env10(4), Stats: []TableStats{{TableID: 0, Name: "classifier",
			Wildcards: Wildcard10All, MaxEntries: 1000000, ActiveCount: 2, LookupCount: 3, MatchedCount: 4}}}, `
			01 11 004c 00000004  // header: STATS_REPLY, length 76
			0003 0000            // type TABLE, flags
			00 000000            // table_id, pad
			636c6173736966696572 00*22 // name[32] "classifier"
			003fffff             // wildcards
			000f4240             // max_entries 1000000
			00000002             // active_count
			0000000000000003     // lookup_count
			0000000000000004     // matched_count`},
		{"port request", &PortStatsRequest{Envelope: env10(5), PortNo: PortAny}, `
			01 10 0014 00000005  // header: STATS_REQUEST, length 20
			0004 0000            // type PORT, flags
			ffff 000000000000    // port_no NONE (all), pad`},
		{"port reply", &PortStatsReply{Envelope: env10(5), Stats: []PortStats{{PortNo: 1, RxPackets: 1, TxPackets: 2,
			RxBytes: 3, TxBytes: 4, RxDropped: 5, TxDropped: 6, RxErrors: 7, TxErrors: 8, RxFrameErr: 9,
			RxOverErr: 10, RxCRCErr: 11, Collisions: 12}}}, `
			01 11 0074 00000005  // header: STATS_REPLY, length 116
			0004 0000            // type PORT, flags
			0001 000000000000    // port_no, pad
			0000000000000001 0000000000000002 // rx_packets, tx_packets
			0000000000000003 0000000000000004 // rx_bytes, tx_bytes
			0000000000000005 0000000000000006 // rx_dropped, tx_dropped
			0000000000000007 0000000000000008 // rx_errors, tx_errors
			0000000000000009 000000000000000a // rx_frame_err, rx_over_err
			000000000000000b 000000000000000c // rx_crc_err, collisions`},
		{"queue request", &QueueStatsRequest{Envelope: env10(6), PortNo: 1, QueueID: QueueAll}, `
			01 10 0014 00000006  // header: STATS_REQUEST, length 20
			0005 0000            // type QUEUE, flags
			0001 0000 ffffffff   // port_no, pad, queue_id ALL`},
		{"queue reply", &QueueStatsReply{Envelope: env10(6), Stats: []QueueStats{{PortNo: 1, QueueID: 2, TxBytes: 3,
			TxPackets: 4, TxErrors: 5}}}, `
			01 11 002c 00000006  // header: STATS_REPLY, length 44
			0005 0000            // type QUEUE, flags
			0001 0000 00000002   // port_no, pad, queue_id
			0000000000000003 0000000000000004 0000000000000005 // tx_bytes, tx_packets, tx_errors`},
		{"port desc request", &PortDescRequest{Envelope: env10(7), PortNo: PortAny}, `01 10 000c 00000007 000d 0000 // STATS_REQUEST PORT_DESC (OVS)`},
		{"port desc reply", &PortDescReply{Envelope: env10(7), Ports: []Port{port10()}}, `
			01 11 003c 00000007  // header: STATS_REPLY, length 60
			000d 0000            // type PORT_DESC, flags
			` + port10Wire},
	}
}

func TestGoldenStats10(t *testing.T) { checkGolden(t, goldenStats10()) }

// oxmTCP: in_port=1, metadata=0x10/0xf0, ip, nw_src=10/8, tcp, tp_dst=22.
func oxmTCP() Match {
	var m Match
	m.Key.InPort, m.Mask.InPort = 1, 0xffffffff
	m.Key.OFMetadata, m.Mask.OFMetadata = 0x10, 0xf0
	m.Key.EthType, m.Mask.EthType = flow.EthTypeIPv4, 0xffff
	m.Key.IPv4Src, m.Mask.IPv4Src = [4]byte{10}, [4]byte{0xff}
	m.Key.NwProto, m.Mask.NwProto = flow.IPProtoTCP, 0xff
	m.Key.TpDst, m.Mask.TpDst = 22, 0xffff
	return m
}

const oxmTCPWire = `
	0001 003d            // ofp_match: type OXM, length 61
	80000004 00000001    // OXM_OF_IN_PORT = 1
	80000a02 0800        // OXM_OF_ETH_TYPE = IPv4
	80001708 0a000000 ff000000 // OXM_OF_IPV4_SRC_W 10.0.0.0/8
	80001401 06          // OXM_OF_IP_PROTO = TCP
	80001c02 0016        // OXM_OF_TCP_DST = 22
	80000510 0000000000000010 00000000000000f0 // OXM_OF_METADATA_W 0x10/0xf0
	000000               // padding to 64
`

func port13() Port {
	p := port10()
	p.PortNo, p.CurrSpeed, p.MaxSpeed = 0x10000, 1000000, 10000000
	return p
}

const port13Wire = `
	00010000 00000000    // port_no 65536, pad
	020000000001 0000    // hw_addr, pad
	65746831 00*12       // name "eth1"
	00000020 00000001    // config NO_FWD, state LINK_DOWN
	00000020 00000021    // curr, advertised
	00000022 00000023    // supported, peer
	000f4240 00989680    // curr_speed 1 Gb/s, max_speed 10 Gb/s
`

func golden13() []golden {
	fm := &FlowMod{Envelope: env13(0x20), Cookie: 0xabc, CookieMask: 0xfff, TableID: 1, Command: FlowAdd,
		IdleTimeout: 10, HardTimeout: 20, Priority: 1000, BufferID: NoBuffer, OutPort: PortAny, OutGroup: GroupAny,
		Flags: FlowCheckOverlap, Match: oxmTCP(), Instructions: Instructions{
			Meter: 3, Apply: []Action{Output(2, 0)}, Write: []Action{{Type: ActGroup, Group: 5}},
			GotoTable: true, Table: 2}}
	return []golden{
		{"hello", &Hello{Envelope: env13(1), Versions: VersionBitmap(Version10, Version13)}, `
			04 00 0010 00000001  // header: 1.3 HELLO, length 16
			0001 0008 00000012   // VERSIONBITMAP: versions 1 and 4`},
		{"experimenter error", &ErrorMsg{Envelope: env13(2), Type: Err13TypeExperimenter, Code: 7, Experimenter: NXVendorID,
			Data: []byte{4}}, `
			04 01 0011 00000002  // header: ERROR, length 17
			ffff 0007            // type EXPERIMENTER, exp_type 7
			00002320 04          // experimenter Nicira, data`},
		{"bad match error", &ErrorMsg{Envelope: env13(3), Type: Err13TypeBadMatch, Code: BadMatch13BadPrereq}, `
			04 01 000c 00000003 0004 0009 // ERROR BAD_MATCH/BAD_PREREQ`},
		{"features reply", &FeaturesReply{Envelope: env13(4), DatapathID: 1, NBuffers: 0, NTables: 254, AuxiliaryID: 1,
			Capabilities: CapFlowStats | CapTableStats | Cap13Groups}, `
			04 06 0020 00000004  // header: FEATURES_REPLY, length 32
			0000000000000001     // datapath_id
			00000000 fe 01 0000  // n_buffers, n_tables 254, auxiliary_id 1, pad
			0000000b 00000000    // capabilities, reserved`},
		{"packet in", &PacketIn{Envelope: env13(5), BufferID: NoBuffer, TotalLen: 4, InPort: 3, Reason: PacketInAction,
			TableID: 2, Cookie: 0x55, Match: inPortMatch(3), Data: []byte{1, 2, 3, 4}}, `
			04 0a 002e 00000005  // header: PACKET_IN, length 46
			ffffffff 0004 01 02  // buffer_id, total_len, reason ACTION, table 2
			0000000000000055     // cookie
			0001 000c 80000004 00000003 00000000 // match: OXM in_port=3, padding
			0000                 // pad
			01020304             // packet`},
		{"flow removed", &FlowRemoved{Envelope: env13(6), Match: inPortMatch(3), Cookie: 1, Priority: 2,
			Reason: FlowRemovedIdleTimeout, TableID: 3, DurationSec: 4, DurationNsec: 5, IdleTimeout: 6,
			HardTimeout: 7, PacketCount: 8, ByteCount: 9}, `
			04 0b 0040 00000006  // header: FLOW_REMOVED, length 64
			0000000000000001     // cookie
			0002 00 03           // priority, reason IDLE_TIMEOUT, table
			00000004 00000005    // duration
			0006 0007            // idle, hard
			0000000000000008 0000000000000009 // packet_count, byte_count
			0001 000c 80000004 00000003 00000000 // match: OXM in_port=3`},
		{"port status", &PortStatus{Envelope: env13(7), Reason: PortReasonAdd, Port: port13()}, `
			04 0c 0050 00000007  // header: PORT_STATUS, length 80
			00 00000000000000    // reason ADD, pad
			` + port13Wire},
		{"packet out", &PacketOut{Envelope: env13(8), BufferID: NoBuffer, InPort: PortController,
			Actions: []Action{Output(PortFlood, 0)}, Data: []byte{1, 2, 3, 4}}, `
			04 0d 002c 00000008  // header: PACKET_OUT, length 44
			ffffffff fffffffd    // buffer_id, in_port CONTROLLER
			0010 000000000000    // actions_len 16, pad
			0000 0010 fffffffb 0000 000000000000 // OUTPUT FLOOD
			01020304             // packet`},
		{"flow mod", fm, `
			04 0e 00a8 00000020  // header: FLOW_MOD, length 168
			0000000000000abc     // cookie
			0000000000000fff     // cookie_mask
			01 00                // table 1, command ADD
			000a 0014 03e8       // idle 10, hard 20, priority 1000
			ffffffff             // buffer_id
			ffffffff ffffffff    // out_port ANY, out_group ANY
			0002 0000            // flags CHECK_OVERLAP, pad
			` + oxmTCPWire + `
			0006 0008 00000003   // METER 3
			0004 0018 00000000   // APPLY_ACTIONS, length 24
			0000 0010 00000002 0000 000000000000 // OUTPUT 2
			0003 0010 00000000   // WRITE_ACTIONS, length 16
			0016 0008 00000005   // GROUP 5
			0001 0008 02 000000  // GOTO_TABLE 2`},
		{"port mod", &PortMod{Envelope: env13(9), PortNo: 7, HWAddr: [6]byte{2, 0, 0, 0, 0, 7}, Config: PortConfigNoPacket,
			Mask: PortConfigNoPacket, Advertise: 0x20}, `
			04 10 0028 00000009  // header: PORT_MOD, length 40
			00000007 00000000    // port_no, pad
			020000000007 0000    // hw_addr, pad
			00000040 00000040    // config NO_PACKET_IN, mask
			00000020 00000000    // advertise, pad`},
		{"barrier request", &BarrierRequest{Envelope: env13(10)}, `04 14 0008 0000000a`},
		{"barrier reply", &BarrierReply{Envelope: env13(10)}, `04 15 0008 0000000a`},
		{"role request", &RoleRequest{Envelope: env13(11), Role: RoleMaster, GenerationID: 42}, `
			04 18 0018 0000000b  // header: ROLE_REQUEST, length 24
			00000002 00000000    // role MASTER, pad
			000000000000002a     // generation_id`},
		{"role reply", &RoleReply{Envelope: env13(11), Role: RoleSlave, GenerationID: 43}, `
			04 19 0018 0000000b  // header: ROLE_REPLY
			00000003 00000000 000000000000002b`},
		{"get async request", &GetAsyncRequest{Envelope: env13(12)}, `04 1a 0008 0000000c`},
		{"get async reply", &GetAsyncReply{Envelope: env13(12), AsyncConfig: AsyncConfig{
			PacketInMask: [2]uint32{3, 0}, PortStatusMask: [2]uint32{7, 7}, FlowRemovedMask: [2]uint32{15, 0}}}, `
			04 1b 0020 0000000c  // header: GET_ASYNC_REPLY, length 32
			00000003 00000000    // packet_in_mask master/equal, slave
			00000007 00000007    // port_status_mask
			0000000f 00000000    // flow_removed_mask`},
		{"set async", &SetAsync{Envelope: env13(13), AsyncConfig: AsyncConfig{PacketInMask: [2]uint32{1, 1}}, Props: async13Props}, `
			04 1c 0020 0000000d  // header: SET_ASYNC
			00000001 00000001 00000000 00000000 00000000 00000000`},
	}
}

func TestGolden13(t *testing.T) { checkGolden(t, golden13()) }

func goldenMultipart13() []golden {
	return []golden{
		{"desc request", &DescStatsRequest{Envelope: env13(1)}, `04 12 0010 00000001 0000 0000 00000000 // MULTIPART_REQUEST DESC`},
		{"flow request", &FlowStatsRequest{Envelope: env13(2), TableID: TableAll, OutPort: PortAny, OutGroup: GroupAny,
			Cookie: 1, CookieMask: 0xff}, `
			04 12 0038 00000002  // header: MULTIPART_REQUEST, length 56
			0001 0000 00000000   // type FLOW, flags, pad
			ff 000000            // table all, pad
			ffffffff ffffffff    // out_port ANY, out_group ANY
			00000000             // pad
			0000000000000001 00000000000000ff // cookie, cookie_mask
			0001 0004 00000000   // empty OXM match, padding`},
		{"flow reply", &FlowStatsReply{Envelope: env13(2), Stats: []FlowStats{{TableID: 1, DurationSec: 2, DurationNsec: 3,
			Priority: 4, IdleTimeout: 5, HardTimeout: 6, Flags: FlowSendFlowRem, Cookie: 7, PacketCount: 8, ByteCount: 9,
			Match: ethTypeMatch(flow.EthTypeIPv6), Instructions: Instructions{Apply: []Action{Output(PortController, 0xffff)}}}}}, `
			04 13 0068 00000002  // header: MULTIPART_REPLY, length 104
			0001 0000 00000000   // type FLOW, flags, pad
			0058 01 00           // entry length 88, table 1, pad
			00000002 00000003    // duration
			0004 0005 0006 0001  // priority, idle, hard, flags SEND_FLOW_REM
			00000000             // pad
			0000000000000007 0000000000000008 0000000000000009 // cookie, packets, bytes
			0001 000a 80000a02 86dd 000000000000 // match eth_type=IPv6, padding
			0004 0018 00000000   // APPLY_ACTIONS
			0000 0010 fffffffd ffff 000000000000 // OUTPUT CONTROLLER max_len 65535`},
		{"aggregate request", &AggregateStatsRequest{Envelope: env13(3), TableID: 0, OutPort: 5, OutGroup: GroupAny,
			Match: inPortMatch(1)}, `
			04 12 0040 00000003  // header: MULTIPART_REQUEST, length 64
			0002 0000 00000000   // type AGGREGATE
			00 000000 00000005 ffffffff 00000000 // table 0, out_port 5, out_group ANY, pad
			0000000000000000 0000000000000000   // cookie, cookie_mask
			0001 000c 80000004 00000001 00000000 // match in_port=1`},
		{"aggregate reply", &AggregateStatsReply{Envelope: env13(3), PacketCount: 1, ByteCount: 2, FlowCount: 3}, `
			04 13 0028 00000003  // header: MULTIPART_REPLY, length 40
			0002 0000 00000000   // type AGGREGATE
			0000000000000001 0000000000000002 00000003 00000000`},
		{"table request", &TableStatsRequest{Envelope: env13(4)}, `04 12 0010 00000004 0003 0000 00000000`},
		{"table reply", &TableStatsReply{Envelope: env13(4), Stats: []TableStats{{TableID: 3, ActiveCount: 4,
			LookupCount: 5, MatchedCount: 6}}}, `
			04 13 0028 00000004  // header: MULTIPART_REPLY, length 40
			0003 0000 00000000   // type TABLE
			03 000000 00000004   // table_id, pad, active_count
			0000000000000005 0000000000000006 // lookup_count, matched_count`},
		{"port request", &PortStatsRequest{Envelope: env13(5), PortNo: PortAny}, `
			04 12 0018 00000005 0004 0000 00000000 // MULTIPART_REQUEST PORT_STATS
			ffffffff 00000000    // port_no ANY, pad`},
		{"port reply", &PortStatsReply{Envelope: env13(5), Stats: []PortStats{{PortNo: 2, RxPackets: 1,
			Collisions: 12, DurationSec: 13, DurationNsec: 14}}}, `
			04 13 0080 00000005  // header: MULTIPART_REPLY, length 128
			0004 0000 00000000   // type PORT_STATS
			00000002 00000000    // port_no, pad
			0000000000000001 00*80 000000000000000c // rx_packets .. collisions
			0000000d 0000000e    // duration`},
		{"queue request", &QueueStatsRequest{Envelope: env13(6), PortNo: PortAny, QueueID: QueueAll}, `
			04 12 0018 00000006 0005 0000 00000000 // MULTIPART_REQUEST QUEUE
			ffffffff ffffffff    // port_no ANY, queue_id ALL`},
		{"queue reply", &QueueStatsReply{Envelope: env13(6), Stats: []QueueStats{{PortNo: 1, QueueID: 2, TxBytes: 3,
			TxPackets: 4, TxErrors: 5, DurationSec: 6, DurationNsec: 7}}}, `
			04 13 0038 00000006  // header: MULTIPART_REPLY, length 56
			0005 0000 00000000   // type QUEUE
			00000001 00000002    // port_no, queue_id
			0000000000000003 0000000000000004 0000000000000005 // tx_bytes, tx_packets, tx_errors
			00000006 00000007    // duration`},
		{"port desc request", &PortDescRequest{Envelope: env13(7), PortNo: PortAny}, `04 12 0010 00000007 000d 0000 00000000`},
		{"port desc reply", &PortDescReply{Envelope: env13(7), Ports: []Port{port13()}}, `
			04 13 0050 00000007  // header: MULTIPART_REPLY, length 80
			000d 0000 00000000   // type PORT_DESC
			` + port13Wire},
		{"table features request", &TableFeaturesRequest{Envelope: env13(8)}, `04 12 0010 00000008 000c 0000 00000000`},
		{"table features reply", &TableFeaturesReply{Envelope: env13(8), Tables: []TableFeatures{{TableID: 0, Name: "t0",
			MetadataMatch: ^uint64(0), MetadataWrite: ^uint64(0), Config: 3, MaxEntries: 100,
			Properties: []TableFeatureProp{{Type: TFPMatch, Data: AppendOXMHeaders(nil, FieldInPort, FieldEthType)}}}}}, `
			04 13 0060 00000008  // header: MULTIPART_REPLY, length 96
			000c 0000 00000000   // type TABLE_FEATURES
			0050 00 0000000000   // length 80, table 0, pad
			7430 00*30           // name[32] "t0"
			ffffffffffffffff ffffffffffffffff // metadata_match, metadata_write
			00000003 00000064    // config, max_entries 100
			0008 000c 80000004 80000a02 00000000 // MATCH property: in_port, eth_type; padding`},
	}
}

func TestGoldenMultipart13(t *testing.T) { checkGolden(t, goldenMultipart13()) }

// allGoldenMsgs returns the message of every golden case.
func allGoldenMsgs(t *testing.T) []Msg {
	var out []Msg
	for _, cases := range [][]golden{golden10(), goldenNicira(), goldenStats10(), golden13(), goldenMultipart13(),
		golden14(), golden15()} {
		for _, c := range cases {
			out = append(out, c.msg)
		}
	}
	return out
}
