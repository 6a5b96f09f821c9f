// Package conntrack reads and flushes the kernel's connection tracking
// table over ctnetlink (NETLINK_NETFILTER, subsystem CTNETLINK), the
// table the openvswitch datapath's ct() action commits to. It formats
// entries as ovs-dpctl dump-conntrack prints them.
//
// Dump and Flush need CAP_NET_ADMIN and act on the calling thread's
// network namespace.
package conntrack

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"strings"

	"github.com/mdlayher/netlink"
	"golang.org/x/sys/unix"
)

// Tuple is one direction of a connection.
type Tuple struct {
	Src, Dst         netip.Addr
	Proto            uint8
	SrcPort, DstPort uint16 // TCP, UDP, SCTP, ...
	ICMPID           uint16 // ICMP and ICMPv6
	ICMPType         uint8
	ICMPCode         uint8
}

// Counters are a direction's packet and byte counts (the kernel keeps
// them only with nf_conntrack_acct on).
type Counters struct{ Packets, Bytes uint64 }

// Entry is one connection.
type Entry struct {
	Orig, Reply       Tuple
	OrigCnt, ReplyCnt Counters
	Zone              uint16
	Mark              uint32
	Labels            [16]byte
	ID                uint32
	Status            uint32
	Timeout           uint32 // seconds left
	TCPState          uint8  // the kernel's TCP_CONNTRACK_* state; 0 for others
	HasTCPState       bool
	Helper            string // the conntrack helper (ALG) attached, "" for none
}

// ctnetlink message types, attributes and their nested attributes
// (linux/netfilter/nfnetlink_conntrack.h).
const (
	nfnlSubsysCtnetlink = 1
	msgNew              = 0
	msgGet              = 1
	msgDelete           = 2

	ctaTupleOrig     = 1
	ctaTupleReply    = 2
	ctaStatus        = 3
	ctaProtoinfo     = 4
	ctaTimeout       = 7
	ctaMark          = 8
	ctaCountersOrig  = 9
	ctaCountersReply = 10
	ctaID            = 12
	ctaZone          = 18
	ctaHelp          = 5
	ctaHelpName      = 1
	ctaLabels        = 22

	ctaTupleIP    = 1
	ctaTupleProto = 2

	ctaIPv4Src = 1
	ctaIPv4Dst = 2
	ctaIPv6Src = 3
	ctaIPv6Dst = 4

	ctaProtoNum      = 1
	ctaProtoSrcPort  = 2
	ctaProtoDstPort  = 3
	ctaProtoICMPID   = 4
	ctaProtoICMPType = 5
	ctaProtoICMPCode = 6
	ctaProtoICMP6ID  = 7
	ctaProtoICMP6Typ = 8
	ctaProtoICMP6Cod = 9

	ctaProtoinfoTCP      = 1
	ctaProtoinfoTCPState = 1

	ctaCountersPackets = 1
	ctaCountersBytes   = 2
)

// request sends a ctnetlink request and returns the replies' payloads.
func request(typ uint16, flags netlink.HeaderFlags) ([][]byte, error) {
	return requestAttrs(typ, flags, unix.AF_UNSPEC, nil)
}

// requestAttrs is request for one address family (the kernel parses a
// tuple only for a given family), with attributes after the nfgenmsg.
func requestAttrs(typ uint16, flags netlink.HeaderFlags, family uint8, attrs []byte) ([][]byte, error) {
	c, err := netlink.Dial(unix.NETLINK_NETFILTER, nil)
	if err != nil {
		return nil, fmt.Errorf("conntrack: %w", err)
	}
	defer c.Close()
	// struct nfgenmsg: family (all), version 0, res_id 0.
	msg := netlink.Message{Header: netlink.Header{Type: netlink.HeaderType(nfnlSubsysCtnetlink<<8 | typ),
		Flags: netlink.Request | flags}, Data: append([]byte{family, 0, 0, 0}, attrs...)}
	msgs, err := c.Execute(msg)
	if err != nil {
		return nil, fmt.Errorf("conntrack: %w", err)
	}
	out := make([][]byte, 0, len(msgs))
	for _, m := range msgs {
		out = append(out, m.Data)
	}
	return out, nil
}

// Dump returns every connection of the table, of every zone.
func Dump() ([]Entry, error) {
	msgs, err := request(msgGet, netlink.Dump)
	if err != nil {
		return nil, err
	}
	entries := make([]Entry, 0, len(msgs))
	for _, m := range msgs {
		e, err := ParseEntry(m)
		if err != nil {
			return nil, err
		}
		entries = append(entries, e)
	}
	return entries, nil
}

// Flush deletes every connection of the table.
func Flush() error {
	_, err := request(msgDelete, netlink.Acknowledge)
	return err
}

// Delete deletes the connection e names by its original tuple and zone;
// an error wrapping unix.ENOENT if it is gone.
func Delete(e *Entry) error {
	b, err := encodeKey(e)
	if err != nil {
		return err
	}
	family := uint8(unix.AF_INET)
	if e.Orig.Src.Is6() {
		family = unix.AF_INET6
	}
	_, err = requestAttrs(msgDelete, netlink.Acknowledge, family, b)
	return err
}

// encodeKey encodes what names a connection to the kernel: its original
// tuple and its zone.
func encodeKey(e *Entry) ([]byte, error) {
	ae := netlink.NewAttributeEncoder()
	ae.ByteOrder = binary.BigEndian
	t := &e.Orig
	ae.Nested(ctaTupleOrig, func(n *netlink.AttributeEncoder) error {
		n.Nested(ctaTupleIP, func(ip *netlink.AttributeEncoder) error {
			if t.Src.Is4() {
				ip.Bytes(ctaIPv4Src, t.Src.AsSlice())
				ip.Bytes(ctaIPv4Dst, t.Dst.AsSlice())
			} else {
				ip.Bytes(ctaIPv6Src, t.Src.AsSlice())
				ip.Bytes(ctaIPv6Dst, t.Dst.AsSlice())
			}
			return nil
		})
		n.Nested(ctaTupleProto, func(p *netlink.AttributeEncoder) error {
			p.Uint8(ctaProtoNum, t.Proto)
			switch t.Proto {
			case unix.IPPROTO_ICMP:
				p.Uint16(ctaProtoICMPID, t.ICMPID)
				p.Uint8(ctaProtoICMPType, t.ICMPType)
				p.Uint8(ctaProtoICMPCode, t.ICMPCode)
			case unix.IPPROTO_ICMPV6:
				p.Uint16(ctaProtoICMP6ID, t.ICMPID)
				p.Uint8(ctaProtoICMP6Typ, t.ICMPType)
				p.Uint8(ctaProtoICMP6Cod, t.ICMPCode)
			default:
				p.Uint16(ctaProtoSrcPort, t.SrcPort)
				p.Uint16(ctaProtoDstPort, t.DstPort)
			}
			return nil
		})
		return nil
	})
	if e.Zone != 0 {
		ae.Uint16(ctaZone, e.Zone)
	}
	return ae.Encode()
}

// ParseEntry decodes one ctnetlink conntrack message's payload (struct
// nfgenmsg and attributes). It never panics; malformed input is an
// error.
func ParseEntry(b []byte) (Entry, error) {
	var e Entry
	if len(b) < 4 {
		return e, errors.New("conntrack: message shorter than nfgenmsg")
	}
	ad, err := netlink.NewAttributeDecoder(b[4:])
	if err != nil {
		return e, fmt.Errorf("conntrack: %w", err)
	}
	ad.ByteOrder = binary.BigEndian
	for ad.Next() {
		switch ad.Type() {
		case ctaTupleOrig:
			ad.Nested(func(n *netlink.AttributeDecoder) error { return parseTuple(n, &e.Orig) })
		case ctaTupleReply:
			ad.Nested(func(n *netlink.AttributeDecoder) error { return parseTuple(n, &e.Reply) })
		case ctaStatus:
			e.Status = ad.Uint32()
		case ctaTimeout:
			e.Timeout = ad.Uint32()
		case ctaMark:
			e.Mark = ad.Uint32()
		case ctaID:
			e.ID = ad.Uint32()
		case ctaZone:
			e.Zone = ad.Uint16()
		case ctaLabels:
			l := ad.Bytes()
			if len(l) != 16 {
				return e, fmt.Errorf("conntrack: labels of %d bytes", len(l))
			}
			copy(e.Labels[:], l)
		case ctaHelp:
			ad.Nested(func(n *netlink.AttributeDecoder) error {
				for n.Next() {
					if n.Type() == ctaHelpName {
						e.Helper = strings.TrimRight(string(n.Bytes()), "\x00")
					}
				}
				return nil
			})
		case ctaCountersOrig:
			ad.Nested(func(n *netlink.AttributeDecoder) error { return parseCounters(n, &e.OrigCnt) })
		case ctaCountersReply:
			ad.Nested(func(n *netlink.AttributeDecoder) error { return parseCounters(n, &e.ReplyCnt) })
		case ctaProtoinfo:
			ad.Nested(func(n *netlink.AttributeDecoder) error { return parseProtoinfo(n, &e) })
		}
	}
	if err := ad.Err(); err != nil {
		return e, fmt.Errorf("conntrack: %w", err)
	}
	if !e.Orig.Src.IsValid() || !e.Reply.Src.IsValid() {
		return e, errors.New("conntrack: entry without both tuples")
	}
	return e, nil
}

func parseTuple(ad *netlink.AttributeDecoder, t *Tuple) error {
	for ad.Next() {
		switch ad.Type() {
		case ctaTupleIP:
			ad.Nested(func(n *netlink.AttributeDecoder) error { return parseTupleIP(n, t) })
		case ctaTupleProto:
			ad.Nested(func(n *netlink.AttributeDecoder) error { return parseTupleProto(n, t) })
		}
	}
	return nil
}

// parseTupleIP takes t's addresses from CTA_TUPLE_IP; an address of the
// wrong length for its family is an error.
func parseTupleIP(n *netlink.AttributeDecoder, t *Tuple) error {
	for n.Next() {
		a, ok := netip.AddrFromSlice(n.Bytes())
		switch typ := n.Type(); {
		case (typ == ctaIPv4Src || typ == ctaIPv4Dst) && ok && a.Is4(),
			(typ == ctaIPv6Src || typ == ctaIPv6Dst) && ok && a.Is6():
			if typ == ctaIPv4Src || typ == ctaIPv6Src {
				t.Src = a
			} else {
				t.Dst = a
			}
		case typ >= ctaIPv4Src && typ <= ctaIPv6Dst:
			return fmt.Errorf("bad address attribute %d of %d bytes", typ, len(n.Bytes()))
		}
	}
	return nil
}

// parseTupleProto takes t's protocol, ports and ICMP fields from
// CTA_TUPLE_PROTO.
func parseTupleProto(n *netlink.AttributeDecoder, t *Tuple) error {
	for n.Next() {
		switch n.Type() {
		case ctaProtoNum:
			t.Proto = n.Uint8()
		case ctaProtoSrcPort:
			t.SrcPort = n.Uint16()
		case ctaProtoDstPort:
			t.DstPort = n.Uint16()
		case ctaProtoICMPID, ctaProtoICMP6ID:
			t.ICMPID = n.Uint16()
		case ctaProtoICMPType, ctaProtoICMP6Typ:
			t.ICMPType = n.Uint8()
		case ctaProtoICMPCode, ctaProtoICMP6Cod:
			t.ICMPCode = n.Uint8()
		}
	}
	return nil
}

// parseProtoinfo takes the TCP state from CTA_PROTOINFO's
// CTA_PROTOINFO_TCP, the one protocol's information ovs-dpctl prints.
func parseProtoinfo(ad *netlink.AttributeDecoder, e *Entry) error {
	for ad.Next() {
		if ad.Type() == ctaProtoinfoTCP {
			ad.Nested(func(t *netlink.AttributeDecoder) error {
				for t.Next() {
					if t.Type() == ctaProtoinfoTCPState {
						e.TCPState, e.HasTCPState = t.Uint8(), true
					}
				}
				return nil
			})
		}
	}
	return nil
}

func parseCounters(ad *netlink.AttributeDecoder, c *Counters) error {
	for ad.Next() {
		switch ad.Type() {
		case ctaCountersPackets:
			c.Packets = ad.Uint64()
		case ctaCountersBytes:
			c.Bytes = ad.Uint64()
		}
	}
	return nil
}

// ProtoName is how ovs-dpctl names an IP protocol in a conntrack entry.
func ProtoName(p uint8) string {
	switch p {
	case unix.IPPROTO_ICMP:
		return "icmp"
	case unix.IPPROTO_ICMPV6:
		return "icmpv6"
	case unix.IPPROTO_TCP:
		return "tcp"
	case unix.IPPROTO_UDP:
		return "udp"
	case unix.IPPROTO_SCTP:
		return "sctp"
	case unix.IPPROTO_UDPLITE:
		return "udplite"
	case unix.IPPROTO_DCCP:
		return "dccp"
	case unix.IPPROTO_IGMP:
		return "igmp"
	}
	return fmt.Sprint(p)
}

// TCPStateName is the name ovs-dpctl prints for the kernel's TCP state,
// with its coalescing of states the kernel and OVS's own tracker see
// differently (FIN_WAIT_2 as TIME_WAIT, SYN_RECV as ESTABLISHED).
func TCPStateName(kernelState uint8) string {
	// The kernel's TCP_CONNTRACK_* in order: NONE, SYN_SENT, SYN_RECV,
	// ESTABLISHED, FIN_WAIT, CLOSE_WAIT, LAST_ACK, TIME_WAIT, CLOSE,
	// SYN_SENT2.
	names := [...]string{"CLOSED", "SYN_SENT", "ESTABLISHED", "ESTABLISHED", "FIN_WAIT_1", "CLOSE_WAIT",
		"LAST_ACK", "TIME_WAIT", "CLOSING", "SYN_SENT"}
	if int(kernelState) < len(names) {
		return names[kernelState]
	}
	return "CLOSED"
}

func (t *Tuple) format(sb *strings.Builder) {
	fmt.Fprintf(sb, "src=%s,dst=%s", t.Src, t.Dst)
	if t.Proto == unix.IPPROTO_ICMP || t.Proto == unix.IPPROTO_ICMPV6 {
		fmt.Fprintf(sb, ",id=%d,type=%d,code=%d", t.ICMPID, t.ICMPType, t.ICMPCode)
	} else {
		fmt.Fprintf(sb, ",sport=%d,dport=%d", t.SrcPort, t.DstPort)
	}
}

// Format prints e as ovs-dpctl dump-conntrack does; verbose (-m) adds the
// id and status, stats (-s) the counters and timeout.
func (e *Entry) Format(verbose, stats bool) string {
	var sb strings.Builder
	sb.WriteString(ProtoName(e.Orig.Proto))
	sb.WriteString(",orig=(")
	e.Orig.format(&sb)
	if stats && (e.OrigCnt.Packets != 0 || e.OrigCnt.Bytes != 0) {
		fmt.Fprintf(&sb, ",packets=%d,bytes=%d", e.OrigCnt.Packets, e.OrigCnt.Bytes)
	}
	sb.WriteString("),reply=(")
	e.Reply.format(&sb)
	if stats && (e.ReplyCnt.Packets != 0 || e.ReplyCnt.Bytes != 0) {
		fmt.Fprintf(&sb, ",packets=%d,bytes=%d", e.ReplyCnt.Packets, e.ReplyCnt.Bytes)
	}
	sb.WriteByte(')')
	if verbose {
		fmt.Fprintf(&sb, ",id=%d", e.ID)
	}
	if e.Zone != 0 {
		fmt.Fprintf(&sb, ",zone=%d", e.Zone)
	}
	if verbose {
		sb.WriteString(",status=" + statusText(e.Status))
	}
	if stats {
		fmt.Fprintf(&sb, ",timeout=%d", e.Timeout)
	}
	if e.Mark != 0 {
		fmt.Fprintf(&sb, ",mark=%d", e.Mark)
	}
	if e.Labels != ([16]byte{}) {
		// CTA_LABELS is the label bitmap, bit 0 in the first byte; OVS
		// prints it as the 128-bit number whose bit n is label n.
		var be [16]byte
		for i := range be {
			be[i] = e.Labels[15-i]
		}
		fmt.Fprintf(&sb, ",labels=0x%s", strings.TrimLeft(fmt.Sprintf("%x", be[:]), "0"))
	}
	if e.HasTCPState {
		sb.WriteString(",protoinfo=(state=" + TCPStateName(e.TCPState) + ")")
	}
	if e.Helper != "" {
		sb.WriteString(",helper=" + e.Helper)
	}
	return sb.String()
}

// statusNames are the IPS_* status bits, as ovs-dpctl -m names them.
var statusNames = [...]string{"EXPECTED", "SEEN_REPLY", "ASSURED", "CONFIRMED", "SRC_NAT", "DST_NAT",
	"SEQ_ADJUST", "SRC_NAT_DONE", "DST_NAT_DONE", "DYING", "FIXED_TIMEOUT", "TEMPLATE", "UNTRACKED"}

func statusText(s uint32) string {
	var parts []string
	for i, n := range statusNames {
		if s&(1<<i) != 0 {
			parts = append(parts, n)
		}
	}
	if len(parts) == 0 {
		return "0"
	}
	return strings.Join(parts, "|")
}
