package openflow

import (
	"testing"

	"github.com/govswitch/govswitch/flow"
)

// golden11 are OpenFlow 1.1 and 1.2 messages, field by field; the first
// two are what ovs-ofctl 3.1 sent (testdata/ovs-ofctl/of11-del-flows and
// of11-packet-out).
func golden11() []golden {
	env := func(v uint8, xid uint32) Envelope { return Envelope{Version: v, Xid: xid} }
	var icmp Match
	icmp.Key.EthType, icmp.Mask.EthType = flow.EthTypeIPv4, 0xffff
	icmp.Key.NwProto, icmp.Mask.NwProto = flow.IPProtoICMP, 0xff
	icmp.Key.TpSrc, icmp.Mask.TpSrc = 8, 0xffff
	arp := wireARP
	var vlan Match
	vlan.Key.InPort, vlan.Mask.InPort = 3, ^uint32(0)
	vlan.Key.VLANs[0].TCI, vlan.Mask.VLANs[0].TCI = flow.VLANPresent|5<<13, flow.VLANPresent|flow.VLANPCPMask
	vlan.Key.IPv4Src, vlan.Mask.IPv4Src = [4]byte{10, 0, 0, 1}, [4]byte{0xff, 0xff, 0xff, 0xff}
	vlan.Key.EthType, vlan.Mask.EthType = flow.EthTypeARP, 0xffff
	return []golden{
		{"1.1 delete", &FlowMod{Envelope: env(Version11, 6), TableID: 1, Command: FlowDelete, Priority: 0x8000,
			BufferID: NoBuffer, OutPort: 2, OutGroup: GroupAny, Match: icmp}, `
			02 0e 0088 00000006                     // header: FLOW_MOD, length 136
			0000000000000000 0000000000000000       // cookie, cookie mask
			01 03 0000 0000 8000                    // table 1, DELETE, idle, hard, priority
			ffffffff 00000002 ffffffff 0000         // buffer none, out_port 2, out_group any, flags
			0000                                    // pad
			0000 0058 00000000                      // ofp11_match: STANDARD, 88 bytes, in_port
			00000397                                // wildcards: all but dl_type, nw_proto, tp_src
			000000000000 ffffffffffff               // dl_src, mask (1s: don't care)
			000000000000 ffffffffffff               // dl_dst, mask
			0000 00 00 0800 00 01                   // dl_vlan, pcp, pad, dl_type IPv4, nw_tos, nw_proto ICMP
			00000000 ffffffff 00000000 ffffffff     // nw_src, mask, nw_dst, mask
			0008 0000                               // tp_src: ICMP type 8, tp_dst
			00000000 00 000000                      // mpls_label, mpls_tc, pad
			0000000000000000 ffffffffffffffff       // metadata, mask`},
		{"1.1 packet out", &PacketOut{Envelope: env(Version11, 6), BufferID: NoBuffer, InPort: 1,
			Actions: []Action{{Type: ActSetField, Field: FieldEthSrc, Value: [16]byte{5: 9}}, Output(2, 0)},
			Data:    arp}, `
			02 0d 0062 00000006                     // header: PACKET_OUT, length 98
			ffffffff 00000001 0020 000000000000     // buffer none, in_port 1, actions_len 32, pad
			0003 0010 000000000009 000000000000     // SET_DL_SRC 00:00:00:00:00:09
			0000 0010 00000002 0000 000000000000    // OUTPUT port 2, max_len 0
			ffffffffffff 000000000001 0806 0001 0800 06 04 0001 000000000001 c0a80001 000000000000 c0a80002`},
		{"1.1 flow mod: VLAN PCP, any VID; arp", &FlowMod{Envelope: env(Version11, 7), Command: FlowAdd, Priority: 1,
			BufferID: NoBuffer, OutPort: PortAny, OutGroup: GroupAny, Match: vlan,
			Instructions: Instructions{Apply: []Action{{Type: ActStripVLAN}}, GotoTable: true, Table: 2}}, `
			02 0e 00a0 00000007                     // header: FLOW_MOD, length 160
			0000000000000000 0000000000000000       // cookie, cookie mask
			00 00 0000 0000 0001                    // table 0, ADD, idle, hard, priority 1
			ffffffff ffffffff ffffffff 0000 0000    // buffer, out_port, out_group, flags, pad
			0000 0058 00000003                      // ofp11_match, in_port 3
			000003f0                                // wildcards: tos, proto, tp, mpls
			000000000000 ffffffffffff 000000000000 ffffffffffff
			fffe 05 00 0806 00 00                   // dl_vlan ANY (a tag), pcp 5, dl_type ARP
			0a000001 00000000 00000000 ffffffff     // nw_src 10.0.0.1 exact, nw_dst any
			0000 0000 00000000 00 000000
			0000000000000000 ffffffffffffffff
			0004 0010 00000000                      // APPLY_ACTIONS, 16 bytes
			0012 0008 00000000                      // POP_VLAN
			0001 0008 02 000000                     // GOTO_TABLE 2`},
		{"1.1 packet in", &PacketIn{Envelope: env(Version11, 0), BufferID: NoBuffer, InPort: 2, TotalLen: 42,
			Reason: PacketInAction, TableID: 3, Match: inPortMatch(2), Data: arp}, `
			02 0a 0042 00000000                     // header: PACKET_IN, length 66
			ffffffff 00000002 00000002              // buffer none, in_port 2, in_phy_port 2
			002a 01 03                              // total_len 42, reason ACTION, table 3
			ffffffffffff 000000000001 0806 0001 0800 06 04 0001 000000000001 c0a80001 000000000000 c0a80002`},
		{"1.2 packet in", &PacketIn{Envelope: env(Version12, 0), BufferID: NoBuffer, InPort: 2, TotalLen: 42,
			Reason: PacketInNoMatch, TableID: 0, Match: inPortMatch(2), Data: arp}, `
			03 0a 004c 00000000                     // header: PACKET_IN, length 76
			ffffffff 002a 00 00                     // buffer none, total_len 42, reason NO_MATCH, table 0
			0001 000c 80000004 00000002 00000000    // OXM match: in_port 2, padded to 16
			0000                                    // pad
			ffffffffffff 000000000001 0806 0001 0800 06 04 0001 000000000001 c0a80001 000000000000 c0a80002`},
		{"1.1 flow removed", &FlowRemoved{Envelope: env(Version11, 0), Cookie: 5, Priority: 7,
			Reason: FlowRemovedIdleTimeout, TableID: 1, DurationSec: 2, DurationNsec: 3, IdleTimeout: 10,
			PacketCount: 4, ByteCount: 400, Match: inPortMatch(1)}, `
			02 0b 0088 00000000                     // header: FLOW_REMOVED, length 136
			0000000000000005 0007 00 01             // cookie, priority, reason IDLE, table 1
			00000002 00000003 000a 0000             // duration, idle_timeout, pad
			0000000000000004 0000000000000190       // packets, bytes
			0000 0058 00000001 000003fe             // ofp11_match: in_port 1, the rest wildcarded
			000000000000 ffffffffffff 000000000000 ffffffffffff
			0000 00 00 0000 00 00
			00000000 ffffffff 00000000 ffffffff
			0000 0000 00000000 00 000000
			0000000000000000 ffffffffffffffff`},
		{"1.2 table stats", &TableStatsReply{Envelope: env(Version12, 2), Stats: []TableStats{{TableID: 0,
			Name: "classifier", MaxEntries: 1000000, ActiveCount: 1, LookupCount: 9, MatchedCount: 8,
			V11: TableStats11{Match: 0xf, Wildcards: 0x3, WriteActions: 1, ApplyActions: 1 << 25, WriteSetFields: 2,
				ApplySetFields: 4, MetadataMatch: ^uint64(0), MetadataWrite: 0xff, Instructions: 0x3e}}}}, `
			03 13 0090 00000002 0003 0000 00000000  // header: STATS_REPLY, TABLE, flags
			00 00000000000000                       // table 0, pad
			636c6173736966696572 00*22              // name "classifier"
			000000000000000f 0000000000000003       // match, wildcards (OXM field bits)
			00000001 02000000                       // write actions: output; apply: set_field
			0000000000000002 0000000000000004       // write, apply set-fields
			ffffffffffffffff 00000000000000ff       // metadata match, write
			0000003e 00000000 000f4240              // instructions, config, max_entries
			00000001 0000000000000009 0000000000000008 // active, lookups, matches`},
	}
}

func TestGolden11(t *testing.T) { checkGolden(t, golden11()) }

// wireARP is an ARP request from 00:00:00:00:00:01, 192.168.0.1 for
// 192.168.0.2, as ovs-ofctl's packet-out captures carry it.
var wireARP = []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0, 0, 1, 0x08, 0x06, 0, 1, 0x08, 0, 6, 4, 0, 1,
	0, 0, 0, 0, 0, 1, 0xc0, 0xa8, 0, 1, 0, 0, 0, 0, 0, 0, 0xc0, 0xa8, 0, 2}
