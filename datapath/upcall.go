package datapath

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/govswitch/govswitch/flow"
	"github.com/govswitch/govswitch/netlinkio"
)

// OVS_PACKET_ATTR_* (enum ovs_packet_attr).
const (
	PacketAttrPacket       = 1
	PacketAttrKey          = 2
	PacketAttrActions      = 3
	PacketAttrUserdata     = 4
	PacketAttrEgressTunKey = 5
	PacketAttrProbe        = 8
	PacketAttrMRU          = 9
	PacketAttrLen          = 10
	PacketAttrHash         = 11
)

// OVSHeaderLen is the size of struct ovs_header (dp_ifindex), which follows
// the genlmsghdr in every message of the openvswitch families.
const OVSHeaderLen = 4

// ErrUpcall reports a malformed upcall message.
var ErrUpcall = errors.New("malformed upcall")

// DecodeUpcall decodes an OVS_PACKET_CMD_MISS or _ACTION message: b is its
// generic netlink payload (genlmsghdr, ovs_header, attributes), as
// netlinkio.MessageIter.Data returns it. It fills every field of u (u is
// overwritten, not merged) with slices aliasing b, and returns the
// datapath's ifindex from the ovs_header. It allocates nothing on success,
// and never panics on bad input: a malformed message is an error wrapping
// ErrUpcall (or ErrKeyAttr for a bad key).
func DecodeUpcall(b []byte, u *Upcall) (dpIndex int, err error) {
	cmd, _, rest, ok := netlinkio.Genl(b)
	if !ok || len(rest) < OVSHeaderLen {
		return 0, fmt.Errorf("%w: %d bytes", ErrUpcall, len(b))
	}
	if cmd != uint8(UpcallMiss) && cmd != uint8(UpcallAction) {
		return 0, fmt.Errorf("%w: command %d", ErrUpcall, cmd)
	}
	dpIndex = int(int32(binary.NativeEndian.Uint32(rest)))
	*u = Upcall{Cmd: UpcallCmd(cmd)}
	var haveKey, havePacket bool
	it := netlinkio.NewAttrIter(rest[OVSHeaderLen:])
	for it.Next() {
		switch it.Type() {
		case PacketAttrPacket:
			u.Packet, havePacket = it.Data(), true
		case PacketAttrKey:
			u.KeyAttrs, haveKey = it.Data(), true
		case PacketAttrActions:
			u.Actions = it.Data()
		case PacketAttrUserdata:
			u.Userdata = it.Data()
		case PacketAttrEgressTunKey:
			u.EgressTunnel, u.HasEgressTunnel = it.Data(), true
		case PacketAttrMRU:
			u.MRU = it.U16()
		case PacketAttrLen:
			u.Len = it.U32()
		case PacketAttrHash:
			u.Hash = it.U64()
		}
	}
	if err := it.Err(); err != nil {
		return 0, fmt.Errorf("%w: %w", ErrUpcall, err)
	}
	if !haveKey || !havePacket {
		return 0, fmt.Errorf("%w: missing key or packet", ErrUpcall)
	}
	if err := DecodeKey(u.KeyAttrs, &u.Key); err != nil {
		return 0, err
	}
	if u.HasEgressTunnel {
		if err := DecodeEgressTunnel(u.EgressTunnel, &u.EgressTunnelKey); err != nil {
			return 0, err
		}
	}
	return dpIndex, nil
}

// DecodeEgressTunnel decodes an OVS_PACKET_ATTR_EGRESS_TUN_KEY payload
// (nested OVS_TUNNEL_KEY_ATTR_* attributes, as the kernel's
// ovs_nla_put_tunnel_info writes the egress tunnel info it filled from
// the tunnel device: the route's source address and the UDP source port
// the device would choose) into t. It never panics; a malformed key is an
// error wrapping ErrUpcall.
func DecodeEgressTunnel(b []byte, t *flow.Tunnel) error {
	*t = flow.Tunnel{}
	if err := decodeTunnel(b, t); err != nil {
		return fmt.Errorf("%w: egress tunnel key: %w", ErrUpcall, err)
	}
	return nil
}

// AppendUpcall appends an upcall message's generic netlink payload
// (genlmsghdr, ovs_header, attributes) for u, as the kernel builds one:
// the inverse of DecodeUpcall, for the dummy datapath and tests. u.KeyAttrs
// is sent when set, else u.Key is encoded.
func AppendUpcall(b []byte, dpIndex int, u *Upcall) []byte {
	b = append(b, uint8(u.Cmd), 1, 0, 0)
	b = binary.NativeEndian.AppendUint32(b, uint32(int32(dpIndex)))
	b = netlinkio.AppendAttr(b, PacketAttrPacket, u.Packet)
	if u.KeyAttrs != nil {
		b = netlinkio.AppendAttr(b, PacketAttrKey, u.KeyAttrs)
	} else {
		var start int
		b, start = netlinkio.BeginNested(b, PacketAttrKey)
		b = AppendKey(b, &u.Key)
		b = netlinkio.EndNested(b, start)
	}
	if u.Userdata != nil {
		b = netlinkio.AppendAttr(b, PacketAttrUserdata, u.Userdata)
	}
	if u.Actions != nil {
		b = netlinkio.AppendAttr(b, PacketAttrActions, u.Actions)
	}
	if u.EgressTunnel != nil {
		b = netlinkio.AppendAttr(b, PacketAttrEgressTunKey, u.EgressTunnel)
	}
	if u.MRU != 0 {
		b = netlinkio.AppendU16(b, PacketAttrMRU, u.MRU)
	}
	if u.Len != 0 {
		b = netlinkio.AppendU32(b, PacketAttrLen, u.Len)
	}
	if u.Hash != 0 {
		b = netlinkio.AppendU64(b, PacketAttrHash, u.Hash)
	}
	return b
}

// MetadataKey returns the metadata of k (what Execute reads from its md
// argument) with every header field cleared, which AppendKey encodes as
// metadata attributes only; a packet without Ethernet keeps L3 and its
// ethertype.
func MetadataKey(k *flow.Key) flow.Key {
	return flow.Key{
		Tunnel:   k.Tunnel,
		InPort:   k.InPort,
		Priority: k.Priority,
		Mark:     k.Mark,
		RecircID: k.RecircID,
		DPHash:   k.DPHash,
		CtState:  k.CtState,
		CtZone:   k.CtZone,
		CtMark:   k.CtMark,
		CtLabels: k.CtLabels,
		CtOrig:   k.CtOrig,
		// A packet without Ethernet (Key.L3) needs its ethertype in
		// the key: the kernel parses it as an Ethernet frame otherwise.
		L3:      k.L3,
		EthType: l3EthType(k),
	}
}

func l3EthType(k *flow.Key) uint16 {
	if k.L3 {
		return k.EthType
	}
	return 0
}
