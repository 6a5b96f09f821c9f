package datapathtest

import (
	"bytes"
	"encoding/binary"
)

// udpFrame builds an Ethernet/IPv4/UDP frame whose payload starts with
// tag, so that the suite recognises its own frames among whatever else a
// real network carries.
func udpFrame(src, dst [6]byte, srcIP, dstIP [4]byte, sport, dport uint16, tag []byte) []byte {
	payload := append([]byte("govswitch-dptest:"), tag...)
	b := make([]byte, 0, 14+20+8+len(payload))
	b = append(b, dst[:]...)
	b = append(b, src[:]...)
	b = binary.BigEndian.AppendUint16(b, 0x0800)
	ip := len(b)
	b = append(b,
		0x45, 0x00, // version, IHL; DSCP/ECN
		0, 0, // total length, below
		0x12, 0x34, // identification
		0x40, 0x00, // DF, offset 0
		64, 17, // TTL, UDP
		0, 0, // checksum, below
	)
	b = append(b, srcIP[:]...)
	b = append(b, dstIP[:]...)
	binary.BigEndian.PutUint16(b[ip+2:], uint16(20+8+len(payload)))
	binary.BigEndian.PutUint16(b[ip+10:], ipChecksum(b[ip:ip+20]))
	b = binary.BigEndian.AppendUint16(b, sport)
	b = binary.BigEndian.AppendUint16(b, dport)
	b = binary.BigEndian.AppendUint16(b, uint16(8+len(payload)))
	b = binary.BigEndian.AppendUint16(b, 0) // no UDP checksum
	return append(b, payload...)
}

func ipChecksum(h []byte) uint16 {
	var sum uint32
	for i := 0; i+1 < len(h); i += 2 {
		sum += uint32(binary.BigEndian.Uint16(h[i:]))
	}
	for sum > 0xffff {
		sum = sum&0xffff + sum>>16
	}
	return ^uint16(sum)
}

// hasTag reports whether frame is one of the suite's frames with tag.
func hasTag(tag []byte) func([]byte) bool {
	want := append([]byte("govswitch-dptest:"), tag...)
	return func(frame []byte) bool { return bytes.HasSuffix(frame, want) }
}
