package openflow

import (
	"bytes"
	"encoding/hex"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/govswitch/govswitch/flow"
)

// wire turns a golden table into bytes: hex tokens, "//" comments, and
// "00*N" for N repetitions of a byte.
func wire(t testing.TB, s string) []byte {
	t.Helper()
	var b []byte
	for _, line := range strings.Split(s, "\n") {
		if i := strings.Index(line, "//"); i >= 0 {
			line = line[:i]
		}
		for _, tok := range strings.Fields(line) {
			n := 1
			if i := strings.IndexByte(tok, '*'); i >= 0 {
				var err error
				if n, err = strconv.Atoi(tok[i+1:]); err != nil {
					t.Fatalf("bad repeat %q", tok)
				}
				tok = tok[:i]
			}
			v, err := hex.DecodeString(tok)
			if err != nil {
				t.Fatalf("bad hex %q: %v", tok, err)
			}
			for ; n > 0; n-- {
				b = append(b, v...)
			}
		}
	}
	return b
}

var cmpOpts = []cmp.Option{cmpopts.EquateEmpty(), cmp.Comparer(func(a, b flow.Key) bool { return a == b }),
	cmp.Comparer(func(a, b flow.Mask) bool { return a == b })}

type golden struct {
	name string
	msg  Msg
	wire string
}

// checkGolden asserts encode(msg) == wire and decode(wire) == msg.
func checkGolden(t *testing.T, cases []golden) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			want := wire(t, tc.wire)
			got, err := tc.msg.Append(nil)
			if err != nil {
				t.Fatalf("encode: %v", err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("encode:\n got % x\nwant % x", got, want)
			}
			// Appending after existing bytes must not disturb them.
			pre := []byte{0xde, 0xad}
			got2, err := tc.msg.Append(pre)
			if err != nil || !bytes.Equal(got2[:2], []byte{0xde, 0xad}) || !bytes.Equal(got2[2:], want) {
				t.Errorf("encode after a prefix: % x, %v", got2, err)
			}
			m, err := Decode(want)
			if err != nil {
				t.Fatalf("decode: %v", err)
			}
			if d := cmp.Diff(tc.msg, m, cmpOpts...); d != "" {
				t.Errorf("decode mismatch (-want +got):\n%s", d)
			}
		})
	}
}

func env10(xid uint32) Envelope { return Envelope{Version: Version10, Xid: xid} }
func env13(xid uint32) Envelope { return Envelope{Version: Version13, Xid: xid} }

func exactMAC() [6]byte  { return [6]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff} }
func exactIPv4() [4]byte { return [4]byte{0xff, 0xff, 0xff, 0xff} }
func setfield(f Field, v ...byte) Action {
	a := Action{Type: ActSetField, Field: f}
	copy(a.Value[:], v)
	return a
}

// tcpMatch: in_port=1, tcp, nw_dst=192.168.0.0/16, tp_dst=443.
func tcpMatch() Match {
	var m Match
	m.Key.InPort, m.Mask.InPort = 1, 0xffffffff
	m.Key.EthType, m.Mask.EthType = flow.EthTypeIPv4, 0xffff
	m.Key.NwProto, m.Mask.NwProto = flow.IPProtoTCP, 0xff
	m.Key.IPv4Dst, m.Mask.IPv4Dst = [4]byte{192, 168}, [4]byte{0xff, 0xff}
	m.Key.TpDst, m.Mask.TpDst = 443, 0xffff
	return m
}

const match10TCP = `
	0034204e             // wildcards: all but in_port, dl_type, nw_proto, tp_dst; nw_src /0 (32<<8), nw_dst /16 (16<<14)
	0001                 // in_port 1
	000000000000         // dl_src (wildcarded)
	000000000000         // dl_dst (wildcarded)
	0000 00 00           // dl_vlan, dl_vlan_pcp, pad
	0800                 // dl_type IPv4
	00 06 0000           // nw_tos, nw_proto TCP, pad
	00000000             // nw_src (wildcarded)
	c0a80000             // nw_dst 192.168.0.0
	0000 01bb            // tp_src (wildcarded), tp_dst 443
`

func port10() Port {
	return Port{PortNo: 1, HWAddr: [6]byte{2, 0, 0, 0, 0, 1}, Name: "eth1", Config: PortConfigNoFwd,
		State: PortStateLinkDown, Curr: 0x20, Advertised: 0x21, Supported: 0x22, Peer: 0x23}
}

const port10Wire = `
	0001                 // port_no 1
	020000000001         // hw_addr
	65746831 00*12       // name "eth1", NUL-padded to 16
	00000020             // config NO_FWD
	00000001             // state LINK_DOWN
	00000020             // curr 1GB_FD
	00000021             // advertised
	00000022             // supported
	00000023             // peer
`

func golden10() []golden {
	fm := &FlowMod{Envelope: env10(0x10), Cookie: 0xc0ffee, Command: FlowAdd, IdleTimeout: 30, HardTimeout: 300,
		Priority: 0x8000, BufferID: NoBuffer, OutPort: PortAny, OutGroup: GroupAny, Flags: FlowSendFlowRem,
		Match: tcpMatch(), Instructions: Instructions{Apply: []Action{
			Output(2, 0),
			{Type: ActSetVLANVID, VLANVID: 5},
			setfield(FieldEthDst, 0, 0x11, 0x22, 0x33, 0x44, 0x55),
			setfield(FieldIPTOS, 0xb8),
			setfield(FieldTpDst, 0x1f, 0x90),
			{Type: ActEnqueue, Port: 3, Queue: 9},
			Resubmit(PortInPort, 4),
		}}}
	return []golden{
		{"hello", &Hello{Envelope: env10(1)}, `01 00 0008 00000001 // header: 1.0 HELLO, no elements`},
		{"hello with bitmap", &Hello{Envelope: env10(2), Versions: VersionBitmap(Version10)}, `
			01 00 0010 00000002  // header: HELLO, length 16
			0001 0008            // element VERSIONBITMAP, length 8
			00000002             // bitmap: version 1`},
		{"error", &ErrorMsg{Envelope: env10(3), Type: ErrTypeBadRequest, Code: BadRequestBadSubtype, Data: []byte{1, 4, 0, 0x14}}, `
			01 01 0010 00000003  // header: ERROR, length 16
			0001 0004            // type BAD_REQUEST, code BAD_SUBTYPE
			01040014             // data: start of the offending message`},
		{"echo request", &EchoRequest{Envelope: env10(4), Data: []byte("hi")}, `01 02 000a 00000004 6869 // ECHO_REQUEST "hi"`},
		{"echo reply", &EchoReply{Envelope: env10(4), Data: []byte("hi")}, `01 03 000a 00000004 6869 // ECHO_REPLY "hi"`},
		{"features request", &FeaturesRequest{Envelope: env10(5)}, `01 05 0008 00000005`},
		{"features reply", &FeaturesReply{Envelope: env10(5), DatapathID: 0x0102030405060708, NBuffers: 256, NTables: 2,
			Capabilities: CapFlowStats | CapPortStats, Actions: 0xfff, Ports: []Port{port10()}}, `
			01 06 0050 00000005  // header: FEATURES_REPLY, length 80
			0102030405060708     // datapath_id
			00000100             // n_buffers 256
			02 000000            // n_tables 2, pad
			00000005             // capabilities FLOW_STATS|PORT_STATS
			00000fff             // actions bitmap
			` + port10Wire},
		{"get config request", &GetConfigRequest{Envelope: env10(6)}, `01 07 0008 00000006`},
		{"get config reply", &GetConfigReply{Envelope: env10(6), Flags: ConfigFragDrop, MissSendLen: 128}, `
			01 08 000c 00000006  // header: GET_CONFIG_REPLY
			0001 0080            // flags FRAG_DROP, miss_send_len 128`},
		{"set config", &SetConfig{Envelope: env10(7), MissSendLen: 0xffff}, `
			01 09 000c 00000007  // header: SET_CONFIG
			0000 ffff            // flags FRAG_NORMAL, miss_send_len all`},
		{"packet in", &PacketIn{Envelope: env10(8), BufferID: NoBuffer, TotalLen: 60, InPort: PortLocal,
			Reason: PacketInAction, Data: []byte{0xaa, 0xbb, 0xcc, 0xdd}}, `
			01 0a 0016 00000008  // header: PACKET_IN, length 22
			ffffffff             // buffer_id NO_BUFFER
			003c                 // total_len 60
			fffe                 // in_port LOCAL
			01 00                // reason ACTION, pad
			aabbccdd             // packet`},
		{"flow removed", &FlowRemoved{Envelope: env10(9), Match: tcpMatch(), Cookie: 7, Priority: 100,
			Reason: FlowRemovedHardTimeout, DurationSec: 10, DurationNsec: 500, IdleTimeout: 5,
			PacketCount: 3, ByteCount: 180}, `
			01 0b 0058 00000009  // header: FLOW_REMOVED, length 88
			` + match10TCP + `
			0000000000000007     // cookie
			0064 01 00           // priority 100, reason HARD_TIMEOUT, pad
			0000000a 000001f4    // duration 10 s 500 ns
			0005 0000            // idle_timeout 5, pad
			0000000000000003     // packet_count
			00000000000000b4     // byte_count`},
		{"port status", &PortStatus{Envelope: env10(10), Reason: PortReasonModify, Port: port10()}, `
			01 0c 0040 0000000a  // header: PORT_STATUS, length 64
			02 00000000000000    // reason MODIFY, pad
			` + port10Wire},
		{"packet out", &PacketOut{Envelope: env10(11), BufferID: NoBuffer, InPort: PortController,
			Actions: []Action{Output(PortTable, 0)}, Data: []byte{1, 2, 3, 4}}, `
			01 0d 001c 0000000b  // header: PACKET_OUT, length 28
			ffffffff             // buffer_id NO_BUFFER
			fffd 0008            // in_port CONTROLLER, actions_len 8
			0000 0008 fff9 0000  // OUTPUT len 8 port TABLE max_len 0
			01020304             // packet`},
		{"flow mod add", fm, `
			01 0e 0098 00000010  // header: FLOW_MOD, length 152
			` + match10TCP + `
			0000000000c0ffee     // cookie
			0000                 // command ADD (table byte 0)
			001e 012c            // idle_timeout 30, hard_timeout 300
			8000                 // priority
			ffffffff             // buffer_id NO_BUFFER
			ffff                 // out_port NONE
			0001                 // flags SEND_FLOW_REM
			0000 0008 0002 0000  // OUTPUT port 2
			0001 0008 0005 0000  // SET_VLAN_VID 5
			0005 0010 001122334455 000000000000 // SET_DL_DST
			0008 0008 b8 000000  // SET_NW_TOS 0xb8 (DSCP 46)
			000a 0008 1f90 0000  // SET_TP_DST 8080
			000b 0010 0003 000000000000 00000009 // ENQUEUE port 3 queue 9
			ffff 0010 00002320 000e fff8 04 000000 // NXAST_RESUBMIT_TABLE in_port IN_PORT table 4`},
		{"flow mod delete strict, table id", &FlowMod{Envelope: env10(0x11), TableID: 3, Command: FlowDeleteStrict,
			Priority: 1, BufferID: NoBuffer, OutPort: 2, OutGroup: GroupAny}, `
			01 0e 0048 00000011  // header: FLOW_MOD, length 72
			003820ff 0000        // wildcards ALL (nw shifts 32), in_port
			00*34                // rest of ofp_match, all wildcarded
			0000000000000000     // cookie
			0304                 // table 3 (NXT_FLOW_MOD_TABLE_ID), command DELETE_STRICT
			0000 0000 0001       // idle, hard, priority 1
			ffffffff 0002 0000   // buffer_id, out_port 2, flags`},
		{"port mod", &PortMod{Envelope: env10(0x12), PortNo: 3, HWAddr: [6]byte{2, 0, 0, 0, 0, 3},
			Config: PortConfigDown, Mask: PortConfigDown, Advertise: 0}, `
			01 0f 0020 00000012  // header: PORT_MOD, length 32
			0003 020000000003    // port_no, hw_addr
			00000001 00000001    // config PORT_DOWN, mask PORT_DOWN
			00000000 00000000    // advertise, pad`},
		{"barrier request", &BarrierRequest{Envelope: env10(0x13)}, `01 12 0008 00000013`},
		{"barrier reply", &BarrierReply{Envelope: env10(0x13)}, `01 13 0008 00000013`},
	}
}

func TestGolden10(t *testing.T) { checkGolden(t, golden10()) }
