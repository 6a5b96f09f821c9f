package openflow

import (
	"encoding/hex"
	"strings"
	"testing"
)

func env14(xid uint32) Envelope { return Envelope{Version: Version14, Xid: xid} }
func env15(xid uint32) Envelope { return Envelope{Version: Version15, Xid: xid} }

// port14Wire is port13() as an ofp14_port with its Ethernet property.
const port14Wire = `
	00010000 0048 0000   // port_no 65536, length 72, pad
	020000000001 0000    // hw_addr, pad
	65746831 00*12       // name "eth1"
	00000020 00000001    // config NO_FWD, state LINK_DOWN
	0000 0020 00000000   // property ETHERNET, length 32, pad
	00000020 00000021    // curr, advertised
	00000022 00000023    // supported, peer
	000f4240 00989680    // curr_speed 1 Gb/s, max_speed 10 Gb/s
`

func golden14() []golden {
	all := AsyncConfig{PacketInMask: [2]uint32{3, 0}, PortStatusMask: [2]uint32{7, 7}, FlowRemovedMask: [2]uint32{0xf, 0},
		RoleStatusMask: [2]uint32{7, 7}, TableStatusMask: [2]uint32{0x18, 0}, RequestForwardMask: [2]uint32{3, 0}}
	return []golden{
		{"hello 1.5 bitmap", &Hello{Envelope: env15(1), Versions: VersionBitmap(Version10, Version13, Version14, Version15)}, `
			06 00 0010 00000001  // header: HELLO 1.5
			0001 0008 00000072   // VERSIONBITMAP: 1.0, 1.3, 1.4, 1.5`},
		{"port status", &PortStatus{Envelope: env14(7), Reason: PortReasonModify, Port: port13()}, `
			05 0c 0058 00000007  // header: PORT_STATUS, length 88
			02 00000000000000    // reason MODIFY, pad
			` + port14Wire},
		{"port desc reply", &PortDescReply{Envelope: env14(8), Ports: []Port{port13()}}, `
			05 13 0058 00000008  // header: MULTIPART_REPLY, length 88
			000d 0000 00000000   // type PORT_DESC, flags, pad
			` + port14Wire},
		{"port mod", &PortMod{Envelope: env14(9), PortNo: 3, HWAddr: [6]byte{2, 0, 0, 0, 0, 3}, Config: PortConfigDown,
			Mask: PortConfigDown, Advertise: 0x20}, `
			05 10 0028 00000009  // header: PORT_MOD, length 40
			00000003 00000000    // port_no, pad
			020000000003 0000    // hw_addr, pad
			00000001 00000001    // config PORT_DOWN, mask PORT_DOWN
			0000 0008 00000020   // property ETHERNET, length 8, advertise`},
		{"port stats reply", &PortStatsReply{Envelope: env14(10), Stats: []PortStats{{PortNo: 2, RxPackets: 1, TxPackets: 2,
			RxBytes: 3, TxBytes: 4, RxDropped: 5, TxDropped: 6, RxErrors: 7, TxErrors: 8, RxFrameErr: 9, RxOverErr: 10,
			RxCRCErr: 11, Collisions: 12, DurationSec: 13, DurationNsec: 14}}}, `
			05 13 0088 0000000a  // header: MULTIPART_REPLY, length 136
			0004 0000 00000000   // type PORT_STATS, flags, pad
			0078 0000 00000002   // length 120, pad, port_no
			0000000d 0000000e    // duration
			0000000000000001 0000000000000002 // rx, tx packets
			0000000000000003 0000000000000004 // rx, tx bytes
			0000000000000005 0000000000000006 // rx, tx dropped
			0000000000000007 0000000000000008 // rx, tx errors
			0000 0028 00000000   // property ETHERNET, length 40, pad
			0000000000000009 000000000000000a // rx_frame_err, rx_over_err
			000000000000000b 000000000000000c // rx_crc_err, collisions`},
		{"queue stats reply", &QueueStatsReply{Envelope: env14(11), Stats: []QueueStats{{PortNo: 1, QueueID: 2, TxBytes: 3,
			TxPackets: 4, TxErrors: 5, DurationSec: 6, DurationNsec: 7}}}, `
			05 13 0040 0000000b  // header: MULTIPART_REPLY, length 64
			0005 0000 00000000   // type QUEUE_STATS, flags, pad
			0030 000000000000    // length 48, pad
			00000001 00000002    // port_no, queue_id
			0000000000000003 0000000000000004 0000000000000005 // tx bytes, packets, errors
			00000006 00000007    // duration`},
		{"flow mod importance", &FlowMod{Envelope: env14(12), TableID: 1, Command: FlowAdd, Priority: 10,
			BufferID: NoBuffer, OutPort: PortAny, OutGroup: GroupAny, Importance: 7, Match: inPortMatch(1)}, `
			05 0e 0040 0000000c  // header: FLOW_MOD, length 64
			0000000000000000 0000000000000000 // cookie, cookie_mask
			01 00 0000 0000 000a // table 1, ADD, idle, hard, priority 10
			ffffffff ffffffff ffffffff // buffer_id, out_port, out_group
			0000 0007            // flags, importance 7
			0001 000c 80000004 00000001 00000000 // match: in_port=1`},
		{"set async", &SetAsync{Envelope: env14(13), AsyncConfig: AsyncConfig{PacketInMask: [2]uint32{3, 1}},
			Props: 1<<AsyncPropPacketInSlave | 1<<AsyncPropPacketInMaster}, `
			05 1c 0018 0000000d  // header: SET_ASYNC, length 24
			0000 0008 00000001   // PACKET_IN_SLAVE
			0001 0008 00000003   // PACKET_IN_MASTER`},
		{"get async reply", &GetAsyncReply{Envelope: env14(14), AsyncConfig: all}, `
			05 1b 0068 0000000e  // header: GET_ASYNC_REPLY, length 104
			0000 0008 00000000   // PACKET_IN_SLAVE
			0001 0008 00000003   // PACKET_IN_MASTER
			0002 0008 00000007   // PORT_STATUS_SLAVE
			0003 0008 00000007   // PORT_STATUS_MASTER
			0004 0008 00000000   // FLOW_REMOVED_SLAVE
			0005 0008 0000000f   // FLOW_REMOVED_MASTER
			0006 0008 00000007   // ROLE_STATUS_SLAVE
			0007 0008 00000007   // ROLE_STATUS_MASTER
			0008 0008 00000000   // TABLE_STATUS_SLAVE
			0009 0008 00000018   // TABLE_STATUS_MASTER
			000a 0008 00000000   // REQUESTFORWARD_SLAVE
			000b 0008 00000003   // REQUESTFORWARD_MASTER`},
		{"role status", &RoleStatus{Envelope: env14(15), Role: RoleSlave, Reason: RoleReasonMasterRequest, GenerationID: 9}, `
			05 1e 0018 0000000f  // header: ROLE_STATUS, length 24
			00000003 00 000000   // role SLAVE, reason MASTER_REQUEST, pad
			0000000000000009     // generation_id`},
		{"onf role status", &RoleStatus{Envelope: env13(22), Role: RoleSlave, Reason: RoleReasonMasterRequest, GenerationID: 9}, `
			04 04 0020 00000016  // header: EXPERIMENTER, length 32
			4f4e4600 00000777    // ONF, ONFT_ROLE_STATUS (1911)
			00000003 00 000000   // role SLAVE, reason MASTER_REQUEST, pad
			0000000000000009     // generation_id`},
		{"bundle open", &BundleControl{Envelope: env14(16), BundleID: 3, Type: BundleOpenRequest, Flags: BundleAtomic | BundleOrdered}, `
			05 21 0010 00000010  // header: BUNDLE_CONTROL, length 16
			00000003 0000 0003   // bundle 3, OPEN_REQUEST, flags ATOMIC|ORDERED`},
		{"bundle add", &BundleAdd{Envelope: env14(17), BundleID: 3, Flags: BundleAtomic,
			Message: hx("05 14 0008 00000011")}, `
			05 22 0018 00000011  // header: BUNDLE_ADD_MESSAGE, length 24
			00000003 0000 0001   // bundle 3, pad, flags ATOMIC
			05 14 0008 00000011  // the bundled message: a barrier, same xid`},
		{"bundle add with property", &BundleAdd{Envelope: env14(18), BundleID: 3,
			Message: hx("05 14 0008 00000012"), Properties: hx("ffff 000c 00002320 00000001 00000000")}, `
			05 22 0028 00000012  // header: BUNDLE_ADD_MESSAGE, length 40
			00000003 0000 0000   // bundle 3, pad, flags
			05 14 0008 00000012  // the bundled barrier
			ffff 000c 00002320 00000001 // property EXPERIMENTER (Nicira, type 1)
			00000000             // padding to 8`},
		{"onf bundle commit", &BundleControl{Envelope: env13(19), BundleID: 0, Type: BundleCommitRequest, Flags: BundleAtomic | BundleOrdered}, `
			04 04 0018 00000013  // header: EXPERIMENTER, length 24
			4f4e4600 000008fc    // ONF, ONFT_BUNDLE_CONTROL (2300)
			00000000 0004 0003   // bundle 0, COMMIT_REQUEST, flags ATOMIC|ORDERED`},
		{"onf bundle add", &BundleAdd{Envelope: env13(20), BundleID: 1, Flags: BundleOrdered,
			Message: hx("04 14 0008 00000014")}, `
			04 04 0020 00000014  // header: EXPERIMENTER, length 32
			4f4e4600 000008fd    // ONF, ONFT_BUNDLE_ADD_MESSAGE (2301)
			00000001 0000 0002   // bundle 1, pad, flags ORDERED
			04 14 0008 00000014  // the bundled barrier`},
		{"onf bundle error", &ErrorMsg{Envelope: env13(21), Type: Err13TypeExperimenter, Code: 2300 + BundleFailedMsgFailed,
			Experimenter: ONFVendorID, Data: []byte{4, 4, 0, 0x18}}, `
			04 01 0014 00000015  // header: ERROR, length 20
			ffff 0909            // EXPERIMENTER, exp_type 2313 (OFPBFC_MSG_FAILED)
			4f4e4600             // ONF
			04040018             // data`},
	}
}

func golden15() []golden {
	tcp := FlowStats{TableID: 2, DurationSec: 4, DurationNsec: 5, Priority: 300, IdleTimeout: 6, HardTimeout: 7,
		Flags: FlowSendFlowRem, Importance: 1, IdleAge: 3, Cookie: 0x1234, PacketCount: 10, ByteCount: 600,
		Match: inPortMatch(1), Instructions: Instructions{Apply: []Action{Output(2, 0)}}}
	return []golden{
		{"flow stats reply", &FlowStatsReply{Envelope: env15(1), Stats: []FlowStats{tcp}}, `
			06 13 0088 00000001  // header: MULTIPART_REPLY, length 136
			0001 0000 00000000   // type FLOW_DESC, flags, pad
			0078 0000 02 00 012c // length 120, pad, table 2, pad, priority 300
			0006 0007 0001 0001  // idle, hard, flags SEND_FLOW_REM, importance
			0000000000001234     // cookie
			0001 000c 80000004 00000001 00000000 // match: in_port=1
			0000 0034            // ofp_oxs_stat: length 52
			80020008 00000004 00000005 // OXS DURATION 4.000000005 s
			80020208 00000002 00000000 // OXS IDLE_TIME 2 s
			80020808 000000000000000a  // OXS PACKET_COUNT 10
			80020a08 0000000000000258  // OXS BYTE_COUNT 600
			00000000             // padding to 8
			0004 0018 00000000   // APPLY_ACTIONS, length 24
			0000 0010 00000002 0000 000000000000 // OUTPUT 2`},
		{"aggregate reply", &AggregateStatsReply{Envelope: env15(2), PacketCount: 7, ByteCount: 700, FlowCount: 2}, `
			06 13 0038 00000002  // header: MULTIPART_REPLY, length 56
			0002 0000 00000000   // type AGGREGATE_STATS, flags, pad
			0000 0024            // ofp_oxs_stat: length 36
			80020808 0000000000000007  // OXS PACKET_COUNT
			80020a08 00000000000002bc  // OXS BYTE_COUNT
			80020604 00000002          // OXS FLOW_COUNT
			00000000             // padding to 8`},
		{"flow removed", &FlowRemoved{Envelope: env15(3), Match: inPortMatch(3), Cookie: 1, Priority: 2,
			Reason: FlowRemovedHardTimeout, TableID: 3, DurationSec: 4, DurationNsec: 5, IdleTimeout: 6,
			HardTimeout: 7, PacketCount: 8, ByteCount: 9}, `
			06 0b 0050 00000003  // header: FLOW_REMOVED, length 80
			03 01 0002           // table 3, reason HARD_TIMEOUT, priority 2
			0006 0007            // idle, hard
			0000000000000001     // cookie
			0001 000c 80000004 00000003 00000000 // match: in_port=3
			0000 0028            // ofp_oxs_stat: length 40
			80020008 00000004 00000005 // OXS DURATION
			80020808 0000000000000008  // OXS PACKET_COUNT
			80020a08 0000000000000009  // OXS BYTE_COUNT`},
		{"packet out", &PacketOut{Envelope: env15(4), BufferID: NoBuffer, InPort: PortController,
			Actions: []Action{Output(PortFlood, 0)}, Data: []byte{1, 2, 3, 4}}, `
			06 0d 0034 00000004  // header: PACKET_OUT, length 52
			ffffffff 0010 0000   // buffer_id, actions_len 16, pad
			0001 000c 80000004 fffffffd 00000000 // match: in_port=CONTROLLER
			0000 0010 fffffffb 0000 000000000000 // OUTPUT FLOOD
			01020304             // packet`},
		{"port desc request", &PortDescRequest{Envelope: env15(5), PortNo: 2}, `
			06 12 0018 00000005  // header: MULTIPART_REQUEST, length 24
			000d 0000 00000000   // type PORT_DESC, flags, pad
			00000002 00000000    // port_no 2, pad`},
		{"bundle commit", &BundleControl{Envelope: env15(6), BundleID: 1, Type: BundleCommitReply}, `
			06 21 0010 00000006  // header: BUNDLE_CONTROL, length 16
			00000001 0005 0000   // bundle 1, COMMIT_REPLY`},
	}
}

// hx decodes space-separated hex for bytes nested in a golden message.
func hx(s string) []byte {
	b, err := hex.DecodeString(strings.ReplaceAll(s, " ", ""))
	if err != nil {
		panic(err)
	}
	return b
}

func TestGolden14(t *testing.T) { checkGolden(t, golden14()) }
func TestGolden15(t *testing.T) { checkGolden(t, golden15()) }
