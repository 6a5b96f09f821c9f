// Package ipfix exports IPFIX (RFC 7011) flow records as ovs-vswitchd
// 3.1's ofproto-dpif-ipfix does: one template per combination of L2
// (VLAN or not), L3, L4, tunnel and direction, sent before the first data
// and every 10 minutes after; each sampled packet becomes a flow cache
// entry, aggregated with the entries of the same flow key, and exported
// in a data message of its own when it has been in the cache for the
// active timeout or the cache holds more than its maximum of flows. The
// decoder (Collector) reads what any IPFIX exporter sends and never
// panics.
package ipfix

import "encoding/binary"

// Wire constants.
const (
	Version              = 10
	HeaderLen            = 16
	SetHeaderLen         = 4
	SetIDTemplate        = 2
	SetIDOptionsTemplate = 3
	TemplateIDMin        = 256
	// DefaultPort is the collector port of a target without one.
	DefaultPort = 4739
	// MaxMessageLen is where ovs-vswitchd starts a new template message.
	MaxMessageLen = 1024
	// TemplateInterval is how often templates are sent again (seconds),
	// RFC 7011's default for UDP.
	TemplateInterval = 600
	// VarLen is a field length meaning variable (RFC 7011 section 7).
	VarLen = 0xffff
	// EnterpriseVMware numbers the enterprise elements OVS sends.
	EnterpriseVMware = 6876
)

// Layers of a template, as ovs-vswitchd's ipfix_proto_*.
const (
	L2Eth  = 0
	L2VLAN = 1
	numL2  = 2

	L3Unknown = 0
	L3IPv4    = 1
	L3IPv6    = 2
	numL3     = 3

	L4Unknown = 0
	L4TCP     = 1
	L4UDP     = 2
	L4SCTP    = 3
	L4ICMP    = 4
	numL4     = 5

	NotTunneled = 0
	Tunneled    = 1
	numTunnel   = 2

	Ingress = 0
	Egress  = 1
	numDir  = 2
)

// Flow end reasons (RFC 7011 / IANA flowEndReason).
const (
	EndIdle            = 1
	EndActive          = 2
	EndOfFlow          = 3
	EndForced          = 4
	EndLackOfResources = 5
)

// Element is an information element of a template: its id (with the
// enterprise bit set when Enterprise is not 0), length (VarLen for a
// variable-length one) and enterprise number.
type Element struct {
	ID         uint16
	Len        uint16
	Enterprise uint32
}

// The information elements ovs-vswitchd 3.1 uses (IANA's registry; the
// tunnel ones are VMware's enterprise elements).
var (
	ObservationPointID      = Element{138, 4, 0}
	FlowDirection           = Element{61, 1, 0}
	SourceMAC               = Element{56, 6, 0}
	DestinationMAC          = Element{80, 6, 0}
	EthernetType            = Element{256, 2, 0}
	EthernetHeaderLength    = Element{240, 1, 0}
	IngressInterface        = Element{10, 4, 0}
	IngressInterfaceType    = Element{368, 4, 0}
	InterfaceName           = Element{82, VarLen, 0}
	InterfaceDescription    = Element{83, VarLen, 0}
	EgressInterface         = Element{14, 4, 0}
	EgressInterfaceType     = Element{369, 4, 0}
	VLANID                  = Element{58, 2, 0}
	Dot1qVLANID             = Element{243, 2, 0}
	Dot1qPriority           = Element{244, 1, 0}
	IPVersion               = Element{60, 1, 0}
	IPTTL                   = Element{192, 1, 0}
	ProtocolIdentifier      = Element{4, 1, 0}
	IPDiffServCodePoint     = Element{195, 1, 0}
	IPPrecedence            = Element{196, 1, 0}
	IPClassOfService        = Element{5, 1, 0}
	SourceIPv4              = Element{8, 4, 0}
	DestinationIPv4         = Element{12, 4, 0}
	SourceTransportPort     = Element{7, 2, 0}
	DestinationTransport    = Element{11, 2, 0}
	ICMPTypeIPv4            = Element{176, 1, 0}
	ICMPCodeIPv4            = Element{177, 1, 0}
	SourceIPv6              = Element{27, 16, 0}
	DestinationIPv6         = Element{28, 16, 0}
	FlowLabelIPv6           = Element{31, 4, 0}
	ICMPTypeIPv6            = Element{178, 1, 0}
	ICMPCodeIPv6            = Element{179, 1, 0}
	TunnelType              = Element{0x8000 | 891, 1, EnterpriseVMware}
	TunnelKey               = Element{0x8000 | 892, VarLen, EnterpriseVMware}
	TunnelSourceIPv4        = Element{0x8000 | 893, 4, EnterpriseVMware}
	TunnelDestinationIPv4   = Element{0x8000 | 894, 4, EnterpriseVMware}
	TunnelProtocol          = Element{0x8000 | 895, 1, EnterpriseVMware}
	TunnelSourcePort        = Element{0x8000 | 896, 2, EnterpriseVMware}
	TunnelDestinationPort   = Element{0x8000 | 897, 2, EnterpriseVMware}
	VirtualObsID            = Element{0x8000 | 898, VarLen, EnterpriseVMware}
	FlowStartDeltaMicros    = Element{158, 4, 0}
	FlowEndDeltaMicros      = Element{159, 4, 0}
	DroppedPacketDelta      = Element{133, 8, 0}
	DroppedPacketTotal      = Element{135, 8, 0}
	PacketDelta             = Element{2, 8, 0}
	PacketTotal             = Element{86, 8, 0}
	IngressUnicastTotal     = Element{354, 8, 0}
	IngressMulticastTotal   = Element{355, 8, 0}
	IngressBroadcastTotal   = Element{356, 8, 0}
	EgressUnicastTotal      = Element{357, 8, 0}
	EgressBroadcastTotal    = Element{358, 8, 0}
	PostMcastPacketDelta    = Element{19, 8, 0}
	PostMcastPacketTotal    = Element{174, 8, 0}
	Layer2OctetDelta        = Element{352, 8, 0}
	Layer2OctetTotal        = Element{353, 8, 0}
	FlowEndReason           = Element{136, 1, 0}
	DroppedOctetDelta       = Element{132, 8, 0}
	DroppedOctetTotal       = Element{134, 8, 0}
	OctetDelta              = Element{1, 8, 0}
	OctetTotal              = Element{85, 8, 0}
	OctetDeltaSumOfSquares  = Element{198, 8, 0}
	OctetTotalSumOfSquares  = Element{199, 8, 0}
	MinimumIPTotalLength    = Element{25, 8, 0}
	MaximumIPTotalLength    = Element{26, 8, 0}
	PostMcastOctetDelta     = Element{20, 8, 0}
	PostMcastOctetTotal     = Element{175, 8, 0}
	TCPAckTotal             = Element{222, 8, 0}
	TCPFinTotal             = Element{219, 8, 0}
	TCPPshTotal             = Element{221, 8, 0}
	TCPRstTotal             = Element{220, 8, 0}
	TCPSynTotal             = Element{218, 8, 0}
	TCPUrgTotal             = Element{223, 8, 0}
	ExportingProcessID      = Element{144, 4, 0}
	NotSentPacketTotalCount = Element{167, 8, 0}
)

// TemplateID is the id of the template for a combination of layers, as
// ovs-vswitchd numbers them.
func TemplateID(l2, l3, l4, tunnel, dir int) uint16 {
	id := l2
	id = id*numL3 + l3
	id = id*numL4 + l4
	id = id*numTunnel + tunnel
	id = id*numDir + dir
	return uint16(TemplateIDMin + id)
}

// OptionsTemplateID is the id of the exporting process statistics
// options template: the first past every data template's.
var OptionsTemplateID = TemplateID(numL2, numL3, numL4, numTunnel, numDir)

// TemplateFields are the fields of a data template, in order.
func TemplateFields(l2, l3, l4, tunnel, dir int, virtualObsID bool) []Element {
	f := []Element{ObservationPointID, FlowDirection, SourceMAC, DestinationMAC, EthernetType, EthernetHeaderLength,
		IngressInterface, IngressInterfaceType, InterfaceName, InterfaceDescription}
	if dir == Egress {
		f = append(f, EgressInterface, EgressInterfaceType, InterfaceName, InterfaceDescription)
	}
	if l2 == L2VLAN {
		f = append(f, VLANID, Dot1qVLANID, Dot1qPriority)
	}
	ports := l4 == L4TCP || l4 == L4UDP || l4 == L4SCTP
	if l3 != L3Unknown {
		f = append(f, IPVersion, IPTTL, ProtocolIdentifier, IPDiffServCodePoint, IPPrecedence, IPClassOfService)
		if l3 == L3IPv4 {
			f = append(f, SourceIPv4, DestinationIPv4)
			if ports {
				f = append(f, SourceTransportPort, DestinationTransport)
			} else if l4 == L4ICMP {
				f = append(f, ICMPTypeIPv4, ICMPCodeIPv4)
			}
		} else {
			f = append(f, SourceIPv6, DestinationIPv6, FlowLabelIPv6)
			if ports {
				f = append(f, SourceTransportPort, DestinationTransport)
			} else if l4 == L4ICMP {
				f = append(f, ICMPTypeIPv6, ICMPCodeIPv6)
			}
		}
	}
	if tunnel != NotTunneled {
		f = append(f, TunnelSourceIPv4, TunnelDestinationIPv4, TunnelProtocol, TunnelSourcePort, TunnelDestinationPort,
			TunnelType, TunnelKey)
	}
	if virtualObsID {
		f = append(f, VirtualObsID)
	}
	f = append(f, FlowStartDeltaMicros, FlowEndDeltaMicros, DroppedPacketDelta, DroppedPacketTotal, PacketDelta,
		PacketTotal, IngressUnicastTotal, IngressMulticastTotal, IngressBroadcastTotal, EgressUnicastTotal,
		EgressBroadcastTotal, PostMcastPacketDelta, PostMcastPacketTotal, Layer2OctetDelta, Layer2OctetTotal,
		FlowEndReason)
	if l3 != L3Unknown {
		f = append(f, DroppedOctetDelta, DroppedOctetTotal, OctetDelta, OctetTotal, OctetDeltaSumOfSquares,
			OctetTotalSumOfSquares, MinimumIPTotalLength, MaximumIPTotalLength, PostMcastOctetDelta, PostMcastOctetTotal)
	}
	if l4 == L4TCP {
		f = append(f, TCPAckTotal, TCPFinTotal, TCPPshTotal, TCPRstTotal, TCPSynTotal, TCPUrgTotal)
	}
	return f
}

// appendHeader appends a message header; its length is set when the
// message is complete (finishMessage).
func appendHeader(b []byte, exportTime, seq, domain uint32) []byte {
	b = binary.BigEndian.AppendUint16(b, Version)
	b = binary.BigEndian.AppendUint16(b, HeaderLen)
	b = binary.BigEndian.AppendUint32(b, exportTime)
	b = binary.BigEndian.AppendUint32(b, seq)
	return binary.BigEndian.AppendUint32(b, domain)
}

func finishMessage(b []byte) []byte {
	binary.BigEndian.PutUint16(b[2:], uint16(len(b)))
	return b
}

// beginSet appends a set header and returns its offset, for endSet.
func beginSet(b []byte, id uint16) ([]byte, int) {
	at := len(b)
	b = binary.BigEndian.AppendUint16(b, id)
	return binary.BigEndian.AppendUint16(b, 0), at
}

func endSet(b []byte, at int) {
	binary.BigEndian.PutUint16(b[at+2:], uint16(len(b)-at))
}

func appendElement(b []byte, e Element) []byte {
	b = binary.BigEndian.AppendUint16(b, e.ID)
	b = binary.BigEndian.AppendUint16(b, e.Len)
	if e.Enterprise != 0 {
		b = binary.BigEndian.AppendUint32(b, e.Enterprise)
	}
	return b
}

// TemplateMessages are the template messages ovs-vswitchd sends: every
// data template, in its order, in messages of about MaxMessageLen bytes
// (observation domain domain), then the options template message
// (domain 0). seq is the exporter's sequence number, which templates do
// not advance.
func TemplateMessages(exportTime, seq, domain uint32, virtualObsID bool) [][]byte {
	var msgs [][]byte
	begin := func() ([]byte, int) {
		return beginSet(appendHeader(nil, exportTime, seq, domain), SetIDTemplate)
	}
	m, at := begin()
	for l2 := 0; l2 < numL2; l2++ {
		for l3 := 0; l3 < numL3; l3++ {
			for l4 := 0; l4 < numL4; l4++ {
				if l3 == L3Unknown && l4 != L4Unknown {
					continue
				}
				for tun := 0; tun < numTunnel; tun++ {
					for dir := 0; dir < numDir; dir++ {
						if len(m) >= MaxMessageLen {
							endSet(m, at)
							msgs = append(msgs, finishMessage(m))
							m, at = begin()
						}
						fields := TemplateFields(l2, l3, l4, tun, dir, virtualObsID)
						m = binary.BigEndian.AppendUint16(m, TemplateID(l2, l3, l4, tun, dir))
						m = binary.BigEndian.AppendUint16(m, uint16(len(fields)))
						for _, f := range fields {
							m = appendElement(m, f)
						}
					}
				}
			}
		}
	}
	endSet(m, at)
	msgs = append(msgs, finishMessage(m))

	// The exporting process reliability statistics: scope
	// exportingProcessId, field notSentPacketTotalCount.
	m, at = beginSet(appendHeader(nil, exportTime, seq, 0), SetIDOptionsTemplate)
	m = binary.BigEndian.AppendUint16(m, OptionsTemplateID)
	m = binary.BigEndian.AppendUint16(m, 2) // fields
	m = binary.BigEndian.AppendUint16(m, 1) // of which scope
	m = appendElement(m, ExportingProcessID)
	m = appendElement(m, NotSentPacketTotalCount)
	endSet(m, at)
	return append(msgs, finishMessage(m))
}

// StatsMessage is the exporting process statistics data message.
func StatsMessage(exportTime, seq, exporterID uint32, notSent uint64) []byte {
	m, at := beginSet(appendHeader(nil, exportTime, seq, 0), OptionsTemplateID)
	m = binary.BigEndian.AppendUint32(m, exporterID)
	m = binary.BigEndian.AppendUint64(m, notSent)
	endSet(m, at)
	return finishMessage(m)
}
