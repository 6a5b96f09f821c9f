package ofproto

import (
	"bytes"
	"encoding/binary"
)

// LACPDUs (IEEE 802.1AX, clause 6.4.2), as ovs-vswitchd's lib/lacp.c reads
// and writes them: a slow-protocols frame (ethertype 0x8809, destination
// 01:80:c2:00:00:02) whose 110-byte payload is
//
//	[0]      subtype: 1 LACP, 2 marker
//	[1]      version: 1
//	[2]      TLV type 1 (actor information)
//	[3]      TLV length 20
//	[4:19]   actor information (lacpInfo, 15 bytes)
//	[19:22]  reserved
//	[22]     TLV type 2 (partner information)
//	[23]     TLV length 20
//	[24:39]  partner information
//	[39:42]  reserved
//	[42]     TLV type 3 (collector information)
//	[43]     TLV length 16
//	[44:46]  collector max delay (OVS sends 0)
//	[46:110] reserved and terminator TLV: zero
//
// and an information block is
//
//	[0:2]   system priority (big-endian)
//	[2:8]   system id (a MAC address)
//	[8:10]  key
//	[10:12] port priority
//	[12:14] port id
//	[14]    state (lacpState* bits)
const (
	// EthTypeSlow is the slow-protocols ethertype LACP travels in.
	EthTypeSlow    = 0x8809
	lacpPDULen     = 110
	lacpInfoLen    = 15
	lacpSubtype    = 1
	markerSubtype  = 2
	lacpFrameLen   = 14 + lacpPDULen
	lacpActorOff   = 4
	lacpPartnerOff = 24
)

// lacpDst is the slow-protocols multicast address LACPDUs are sent to.
var lacpDst = [6]byte{0x01, 0x80, 0xc2, 0x00, 0x00, 0x02}

// LACP state bits of an information block.
const (
	lacpStateAct  = 0x01 // active (not passive)
	lacpStateTime = 0x02 // short timeout: the sender wants PDUs every second
	lacpStateAgg  = 0x04 // the link may be aggregated
	lacpStateSync = 0x08 // in sync: the link is attached to the right aggregator
	lacpStateCol  = 0x10 // collecting
	lacpStateDist = 0x20 // distributing
	lacpStateDef  = 0x40 // defaulted: no partner heard from
	lacpStateExp  = 0x80 // expired: the partner's information is out of date
)

// lacpInfo is an actor or partner information block, in host order.
type lacpInfo struct {
	SysPriority  uint16
	SysID        [6]byte
	Key          uint16
	PortPriority uint16
	PortID       uint16
	State        uint8
}

// put writes i's 15 bytes into b.
func (i *lacpInfo) put(b []byte) {
	_ = b[lacpInfoLen-1]
	binary.BigEndian.PutUint16(b[0:], i.SysPriority)
	copy(b[2:8], i.SysID[:])
	binary.BigEndian.PutUint16(b[8:], i.Key)
	binary.BigEndian.PutUint16(b[10:], i.PortPriority)
	binary.BigEndian.PutUint16(b[12:], i.PortID)
	b[14] = i.State
}

// parseLACPInfo reads an information block from the 15 bytes of b.
func parseLACPInfo(b []byte) lacpInfo {
	_ = b[lacpInfoLen-1]
	var i lacpInfo
	i.SysPriority = binary.BigEndian.Uint16(b[0:])
	copy(i.SysID[:], b[2:8])
	i.Key = binary.BigEndian.Uint16(b[8:])
	i.PortPriority = binary.BigEndian.Uint16(b[10:])
	i.PortID = binary.BigEndian.Uint16(b[12:])
	i.State = b[14]
	return i
}

// priorityLess reports whether a is the higher priority (the smaller
// byte string, as OVS compares the packed blocks with memcmp).
func (i *lacpInfo) priorityLess(o *lacpInfo) bool {
	var a, b [lacpInfoLen]byte
	i.put(a[:])
	o.put(b[:])
	return bytes.Compare(a[:], b[:]) < 0
}

// lacpPDU is a decoded LACPDU.
type lacpPDU struct {
	Actor, Partner lacpInfo
}

// lacpPDUKind is what a slow-protocols payload turned out to be.
type lacpPDUKind uint8

const (
	lacpPDUBad    lacpPDUKind = iota // neither: too short or malformed
	lacpPDULACP                      // a LACPDU
	lacpPDUMarker                    // a marker PDU (counted, not answered)
)

// parseLACPDU decodes the slow-protocols payload b (what follows the
// Ethernet header), as OVS's parse_lacp_packet accepts it: at least 110
// bytes, subtype 1, an actor TLV of type 1 and a partner TLV of type 2,
// each of length 20. A marker PDU needs 110 bytes too. It never panics.
func parseLACPDU(b []byte) (lacpPDU, lacpPDUKind) {
	if len(b) < lacpPDULen {
		return lacpPDU{}, lacpPDUBad
	}
	switch {
	case b[0] == lacpSubtype && b[2] == 1 && b[3] == 20 && b[22] == 2 && b[23] == 20:
		return lacpPDU{Actor: parseLACPInfo(b[lacpActorOff:]), Partner: parseLACPInfo(b[lacpPartnerOff:])}, lacpPDULACP
	case b[0] == markerSubtype:
		return lacpPDU{}, lacpPDUMarker
	}
	return lacpPDU{}, lacpPDUBad
}

// slowPayload is the slow-protocols payload of an Ethernet frame: what
// follows the ethertype, after one 802.1Q tag if there is one. ok is
// false when the frame is not a slow-protocols frame.
func slowPayload(frame []byte) (b []byte, ok bool) {
	if len(frame) < 14 {
		return nil, false
	}
	et, off := binary.BigEndian.Uint16(frame[12:]), 14
	if (et == 0x8100 || et == 0x88a8) && len(frame) >= 18 {
		et, off = binary.BigEndian.Uint16(frame[16:]), 18
	}
	if et != EthTypeSlow {
		return nil, false
	}
	return frame[off:], true
}

// appendLACPFrame appends the Ethernet frame of a LACPDU from src with
// actor and partner, as OVS's compose_lacp_pdu fills it.
func appendLACPFrame(b []byte, src [6]byte, actor, partner *lacpInfo) []byte {
	start := len(b)
	b = append(b, make([]byte, lacpFrameLen)...)
	f := b[start:]
	copy(f[0:6], lacpDst[:])
	copy(f[6:12], src[:])
	binary.BigEndian.PutUint16(f[12:], EthTypeSlow)
	p := f[14:]
	p[0], p[1] = lacpSubtype, 1
	p[2], p[3] = 1, 20
	actor.put(p[lacpActorOff:])
	p[22], p[23] = 2, 20
	partner.put(p[lacpPartnerOff:])
	p[42], p[43] = 3, 16
	return b
}
