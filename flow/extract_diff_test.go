package flow

import (
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
)

// The differential test: packets of every kind Extract knows, built with
// gopacket's SerializeLayers from a fixed seed, extracted by Extract and
// decoded by gopacket (gopacketKey), must agree on every field gopacket
// vouches for. Each kind also names the fields gopacket must vouch for, so
// that a decoding gap cannot turn the comparison into a no-op.

const genSeed = 0x6f76732d6b657973 // "ovs-keys"

// genPacket is one generated frame.
type genPacket struct {
	kind string
	data []byte
	// must lists the Key fields gopacketKey has to claim for this packet.
	must []string
}

type genKind struct {
	name string
	gen  genFunc
}

var genL2Fields = []string{"EthDst", "EthSrc", "VLANs", "EthType"}

func genFields(groups ...[]string) []string {
	var out []string
	for _, g := range groups {
		out = append(out, g...)
	}
	return out
}

type genFunc = func(r *rand.Rand) ([]gopacket.SerializableLayer, []string)

func ip4Kind(proto layers.IPProtocol) genFunc {
	return func(r *rand.Rand) ([]gopacket.SerializableLayer, []string) { return ip4Packet(r, proto) }
}

func ip6Kind(proto layers.IPProtocol) genFunc {
	return func(r *rand.Rand) ([]gopacket.SerializableLayer, []string) { return ip6Packet(r, proto) }
}

var genKinds = []genKind{
	{"tcp4", ip4Kind(layers.IPProtocolTCP)},
	{"udp4", ip4Kind(layers.IPProtocolUDP)},
	{"sctp4", ip4Kind(layers.IPProtocolSCTP)},
	{"icmp4", ip4Kind(layers.IPProtocolICMPv4)},
	{"tcp6", ip6Kind(layers.IPProtocolTCP)},
	{"udp6", ip6Kind(layers.IPProtocolUDP)},
	{"sctp6", ip6Kind(layers.IPProtocolSCTP)},
	{"icmp6", ip6Kind(layers.IPProtocolICMPv6)},
	{"nd6", ip6Kind(ndProto)},
	{"esp6", ip6Kind(layers.IPProtocolESP)},
	{"nonext6", ip6Kind(layers.IPProtocolNoNextHeader)},
	{"arp", arpPacket},
	{"llc", llcPacket},
	{"mpls", mplsPacket},
	{"qinq3", qinq3Packet},
}

// qinq3Packet has three VLAN tags, one more than the kernel parses.
func qinq3Packet(r *rand.Rand) ([]gopacket.SerializableLayer, []string) {
	ls := genL2(r, layers.EthernetTypeIPv4, 3, 3)
	ls = append(ls, ip4Header(r, layers.IPProtocolUDP, false), genUDP(r), genPayload(r))
	return ls, genL2Fields
}

// ndProto asks ip6Packet for a Neighbor Solicitation or Advertisement.
const ndProto layers.IPProtocol = 0xfe

// genPackets returns n packets of each kind, deterministically.
func genPackets(tb testing.TB, n int) []genPacket {
	tb.Helper()
	r := rand.New(rand.NewPCG(genSeed, genSeed>>1))
	out := make([]genPacket, 0, n*len(genKinds))
	buf := gopacket.NewSerializeBuffer()
	opts := gopacket.SerializeOptions{FixLengths: true}
	for i := 0; i < n; i++ {
		for _, kind := range genKinds {
			ls, must := kind.gen(r)
			if err := gopacket.SerializeLayers(buf, opts, ls...); err != nil {
				tb.Fatalf("%s: serialize: %v", kind.name, err)
			}
			data := append([]byte(nil), buf.Bytes()...)
			out = append(out, genPacket{kind: kind.name, data: data, must: must})
		}
	}
	return out
}

func genRandBytes(r *rand.Rand, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

func genPayload(r *rand.Rand) gopacket.Payload { return genRandBytes(r, r.IntN(40)) }

// l2 returns an Ethernet header and between minTags and maxTags VLAN tags
// of random TPIDs, ending in typ.
func genL2(r *rand.Rand, typ layers.EthernetType, minTags, maxTags int) []gopacket.SerializableLayer {
	eth := &layers.Ethernet{SrcMAC: genRandBytes(r, 6), DstMAC: genRandBytes(r, 6)}
	ls := []gopacket.SerializableLayer{eth}
	prev := &eth.EthernetType
	for range minTags + r.IntN(maxTags-minTags+1) {
		*prev = layers.EthernetTypeDot1Q
		if r.IntN(2) == 0 {
			*prev = layers.EthernetTypeQinQ
		}
		d := &layers.Dot1Q{Priority: uint8(r.IntN(8)), DropEligible: r.IntN(2) == 0, VLANIdentifier: uint16(r.IntN(4096))}
		ls = append(ls, d)
		prev = &d.Type
	}
	*prev = typ
	return ls
}

func ip4Header(r *rand.Rand, proto layers.IPProtocol, frag bool) *layers.IPv4 {
	ip := &layers.IPv4{
		Version: 4, TOS: uint8(r.Uint32()), TTL: uint8(r.Uint32()), Id: uint16(r.Uint32()),
		Protocol: proto, SrcIP: genRandBytes(r, 4), DstIP: genRandBytes(r, 4),
	}
	switch r.IntN(4) {
	case 1:
		ip.Options = []layers.IPv4Option{{OptionType: 1}, {OptionType: 0x94, OptionLength: 4, OptionData: genRandBytes(r, 2)}, {OptionType: 0}}
	case 2:
		n := 1 + r.IntN(9)
		ip.Options = []layers.IPv4Option{{OptionType: 7, OptionLength: uint8(3 + 4*n), OptionData: genRandBytes(r, 1+4*n)}}
	}
	if r.IntN(2) == 0 {
		ip.Flags = layers.IPv4DontFragment
	}
	if frag {
		switch r.IntN(3) {
		case 1:
			ip.Flags = layers.IPv4MoreFragments
		case 2:
			ip.FragOffset = uint16(1 + r.IntN(0x1fff))
			if r.IntN(2) == 0 {
				ip.Flags = layers.IPv4MoreFragments
			}
		}
	}
	return ip
}

func genTCP(r *rand.Rand) *layers.TCP {
	t := &layers.TCP{
		SrcPort: layers.TCPPort(r.Uint32()), DstPort: layers.TCPPort(r.Uint32()),
		Seq: r.Uint32(), Ack: r.Uint32(), Window: uint16(r.Uint32()),
		FIN: r.IntN(2) == 0, SYN: r.IntN(2) == 0, RST: r.IntN(2) == 0, PSH: r.IntN(2) == 0,
		ACK: r.IntN(2) == 0, URG: r.IntN(2) == 0, ECE: r.IntN(2) == 0, CWR: r.IntN(2) == 0, NS: r.IntN(2) == 0,
	}
	if r.IntN(2) == 0 {
		t.Options = []layers.TCPOption{
			{OptionType: layers.TCPOptionKindMSS, OptionLength: 4, OptionData: genRandBytes(r, 2)},
			{OptionType: layers.TCPOptionKindNop},
			{OptionType: layers.TCPOptionKindWindowScale, OptionLength: 3, OptionData: genRandBytes(r, 1)},
		}
	}
	return t
}

func genUDP(r *rand.Rand) *layers.UDP {
	return &layers.UDP{SrcPort: layers.UDPPort(r.Uint32()), DstPort: layers.UDPPort(r.Uint32())}
}

// transport returns the layers of an L4 header of proto and the fields
// it fills.
func genTransport(r *rand.Rand, proto layers.IPProtocol) ([]gopacket.SerializableLayer, []string) {
	l4 := []string{"TpSrc", "TpDst", "TCPFlags"}
	switch proto {
	case layers.IPProtocolTCP:
		return []gopacket.SerializableLayer{genTCP(r), genPayload(r)}, l4
	case layers.IPProtocolUDP:
		return []gopacket.SerializableLayer{genUDP(r), genPayload(r)}, l4
	case layers.IPProtocolSCTP:
		s := &layers.SCTP{SrcPort: layers.SCTPPort(r.Uint32()), DstPort: layers.SCTPPort(r.Uint32()), VerificationTag: r.Uint32()}
		return []gopacket.SerializableLayer{s}, l4
	case layers.IPProtocolICMPv4:
		c := &layers.ICMPv4{TypeCode: layers.CreateICMPv4TypeCode(uint8(r.Uint32()), uint8(r.Uint32())), Id: uint16(r.Uint32())}
		return []gopacket.SerializableLayer{c, genPayload(r)}, l4
	case layers.IPProtocolICMPv6:
		typ := uint8(r.Uint32())
		if typ == ndSolicit || typ == ndAdvert {
			typ = 128 // echo request; ND has its own kind
		}
		c := &layers.ICMPv6{TypeCode: layers.CreateICMPv6TypeCode(typ, uint8(r.Uint32()))}
		return []gopacket.SerializableLayer{c, gopacket.Payload(genRandBytes(r, 4+r.IntN(40)))}, genFields(l4, []string{"NDTarget", "NDSLL", "NDTLL"})
	case ndProto:
		return ndMessage(r)
	}
	// At least one byte: gopacket rejects an IPv6 payload length of 0.
	return []gopacket.SerializableLayer{gopacket.Payload(genRandBytes(r, 1+r.IntN(40)))}, nil
}

// ndMessage returns an NS or NA with random options, including the ones
// the kernel treats specially: non-8-byte link-layer options (ignored) and
// repeated ones (the message is invalid).
func ndMessage(r *rand.Rand) ([]gopacket.SerializableLayer, []string) {
	var opts layers.ICMPv6Options
	for range r.IntN(5) {
		switch r.IntN(5) {
		case 0:
			opts = append(opts, layers.ICMPv6Option{Type: layers.ICMPv6OptSourceAddress, Data: genRandBytes(r, 6)})
		case 1:
			opts = append(opts, layers.ICMPv6Option{Type: layers.ICMPv6OptTargetAddress, Data: genRandBytes(r, 6)})
		case 2:
			opts = append(opts, layers.ICMPv6Option{Type: layers.ICMPv6OptSourceAddress, Data: genRandBytes(r, 14)})
		case 3:
			opts = append(opts, layers.ICMPv6Option{Type: layers.ICMPv6OptMTU, Data: genRandBytes(r, 6)})
		case 4:
			opts = append(opts, layers.ICMPv6Option{Type: layers.ICMPv6OptPrefixInfo, Data: genRandBytes(r, 30)})
		}
	}
	code := uint8(0)
	if r.IntN(8) == 0 {
		code = uint8(1 + r.IntN(255))
	}
	target := genRandBytes(r, 16)
	var msg gopacket.SerializableLayer
	typ := uint8(ndSolicit)
	if r.IntN(2) == 0 {
		msg = &layers.ICMPv6NeighborSolicitation{TargetAddress: target, Options: opts}
	} else {
		typ = ndAdvert
		msg = &layers.ICMPv6NeighborAdvertisement{TargetAddress: target, Flags: uint8(r.Uint32()), Options: opts}
	}
	c := &layers.ICMPv6{TypeCode: layers.CreateICMPv6TypeCode(typ, code)}
	return []gopacket.SerializableLayer{c, msg}, []string{"TpSrc", "TpDst", "NDTarget", "NDSLL", "NDTLL"}
}

func ip4Packet(r *rand.Rand, proto layers.IPProtocol) ([]gopacket.SerializableLayer, []string) {
	ls := genL2(r, layers.EthernetTypeIPv4, 0, 2)
	ip := ip4Header(r, proto, true)
	ls = append(ls, ip)
	l3 := []string{"IPv4Src", "IPv4Dst", "NwProto", "NwTos", "NwTTL", "NwFrag"}
	l4, must := genTransport(r, proto)
	ls = append(ls, l4...)
	return ls, genFields(genL2Fields, l3, must)
}

// rawExt is an IPv6 extension header gopacket cannot serialize the way the
// test wants (Hop-by-Hop and Destination Options padded with one PadN
// option, AH with random contents).
type rawExt struct {
	next layers.IPProtocol
	ah   bool
	body []byte // after the next-header and length bytes
}

func (e rawExt) LayerType() gopacket.LayerType { return gopacket.LayerTypePayload }

func (e rawExt) SerializeTo(b gopacket.SerializeBuffer, _ gopacket.SerializeOptions) error {
	out, err := b.PrependBytes(2 + len(e.body))
	if err != nil {
		return err
	}
	out[0] = uint8(e.next)
	n := 2 + len(e.body)
	if e.ah {
		out[1] = uint8(n/4 - 2)
	} else {
		out[1] = uint8(n/8 - 1)
	}
	copy(out[2:], e.body)
	return nil
}

// extHeader returns one extension header of type typ carrying next.
func genExtHeader(r *rand.Rand, typ, next layers.IPProtocol, fragMode int) gopacket.SerializableLayer {
	switch typ {
	case ipv6HopByHop, ipv6DestOpts:
		n := 8 * (1 + r.IntN(3))
		body := make([]byte, n-2)
		body[0], body[1] = 1, uint8(n-4) // PadN
		return rawExt{next: next, body: body}
	case ipv6AH:
		n := 12 + 4*r.IntN(4)
		return rawExt{next: next, ah: true, body: genRandBytes(r, n-2)}
	case ipv6Routing:
		rt := &layers.IPv6Routing{
			RoutingType: uint8(r.IntN(5)), SegmentsLeft: uint8(r.IntN(3)),
			Reserved: []byte{0, 0, 0, 0}, Data: genRandBytes(r, 8*r.IntN(3)),
		}
		rt.NextHeader = next
		return rt
	case ipv6Fragment:
		f := &layers.IPv6Fragment{NextHeader: next, Identification: r.Uint32()}
		switch fragMode {
		case 1: // first
			f.MoreFragments = true
		case 2: // later
			f.FragmentOffset = uint16(1 + r.IntN(0x1fff))
			f.MoreFragments = r.IntN(2) == 0
		}
		return f
	}
	panic("not an extension header")
}

func ip6Packet(r *rand.Rand, proto layers.IPProtocol) ([]gopacket.SerializableLayer, []string) {
	ls := genL2(r, layers.EthernetTypeIPv6, 0, 2)
	ip := &layers.IPv6{
		Version: 6, TrafficClass: uint8(r.Uint32()), FlowLabel: r.Uint32() & 0xfffff,
		HopLimit: uint8(r.Uint32()), SrcIP: genRandBytes(r, 16), DstIP: genRandBytes(r, 16),
	}
	// A random chain of extension headers, Hop-by-Hop only first.
	var chain []layers.IPProtocol
	if r.IntN(3) == 0 {
		chain = append(chain, ipv6HopByHop)
	}
	others := []layers.IPProtocol{ipv6DestOpts, ipv6Routing, ipv6AH, ipv6Fragment}
	for range r.IntN(4) {
		chain = append(chain, others[r.IntN(len(others))])
	}
	fragMode := r.IntN(3)
	wire := proto
	if proto == ndProto {
		wire = layers.IPProtocolICMPv6
	}
	l3 := []string{"IPv6Src", "IPv6Dst", "NwTos", "IPv6Label", "NwTTL", "NwProto", "NwFrag"}
	ip.NextHeader = wire
	if len(chain) > 0 {
		ip.NextHeader = chain[0]
	}
	ls = append(ls, ip)
	later := false
	for j, typ := range chain {
		next := wire
		if j+1 < len(chain) {
			next = chain[j+1]
		}
		ls = append(ls, genExtHeader(r, typ, next, fragMode))
		if typ == ipv6Fragment && fragMode == 2 {
			later = true
		}
	}
	l4, must := genTransport(r, proto)
	ls = append(ls, l4...)
	if later {
		// The kernel reads no L4 fields of a later fragment, and gopacket
		// cannot be asked about what follows.
		must = nil
	}
	return ls, genFields(genL2Fields, l3, must)
}

func arpPacket(r *rand.Rand) ([]gopacket.SerializableLayer, []string) {
	typ := layers.EthernetTypeARP
	if r.IntN(4) == 0 {
		typ = layers.EthernetType(EthTypeRARP)
	}
	ls := genL2(r, typ, 0, 2)
	a := &layers.ARP{
		AddrType: layers.LinkTypeEthernet, Protocol: layers.EthernetTypeIPv4,
		HwAddressSize: 6, ProtAddressSize: 4, Operation: uint16(1 + r.IntN(2)),
	}
	switch r.IntN(8) {
	case 0:
		a.HwAddressSize = 8
	case 1:
		a.ProtAddressSize = 16
		a.Protocol = layers.EthernetTypeIPv6
	case 2:
		a.AddrType = layers.LinkType(6) // IEEE 802 networks
	case 3:
		a.Operation = uint16(0x100 + r.IntN(0xff00))
	case 4:
		a.Operation = uint16(r.IntN(0x100))
	}
	h, p := int(a.HwAddressSize), int(a.ProtAddressSize)
	a.SourceHwAddress, a.DstHwAddress = genRandBytes(r, h), genRandBytes(r, h)
	a.SourceProtAddress, a.DstProtAddress = genRandBytes(r, p), genRandBytes(r, p)
	return append(ls, a), genFields(genL2Fields, []string{"NwProto", "IPv4Src", "IPv4Dst", "ArpSHA", "ArpTHA"})
}

// llcPacket returns an 802.3 frame, tagged or not. gopacket fills in the
// 802.3 length only right after an Ethernet header, so the body is
// serialized first and its length written as the type.
func llcPacket(r *rand.Rand) ([]gopacket.SerializableLayer, []string) {
	llc := &layers.LLC{DSAP: 0xaa, SSAP: 0xaa, Control: 3}
	snap := &layers.SNAP{OrganizationalCode: []byte{0, 0, 0}, Type: layers.EthernetTypeIPv4}
	must := genFields(genL2Fields, []string{"IPv4Src", "NwProto", "TpSrc"})
	body := []gopacket.SerializableLayer{llc, snap, ip4Header(r, layers.IPProtocolUDP, false), genUDP(r), genPayload(r)}
	switch r.IntN(4) {
	case 1: // a non-zero OUI: not an encapsulated ethertype
		snap.OrganizationalCode = []byte{0, 0x0c, byte(1 + r.IntN(255))}
		must = genL2Fields
	case 2: // not SNAP at all
		llc.DSAP, llc.SSAP = 0x42, 0x42
		body = []gopacket.SerializableLayer{llc, genPayload(r)}
		must = genL2Fields
	}
	buf := gopacket.NewSerializeBuffer()
	if err := gopacket.SerializeLayers(buf, gopacket.SerializeOptions{FixLengths: true}, body...); err != nil {
		panic(err)
	}
	b := append([]byte(nil), buf.Bytes()...)
	return append(genL2(r, layers.EthernetType(len(b)), 0, 1), gopacket.Payload(b)), must
}

func mplsPacket(r *rand.Rand) ([]gopacket.SerializableLayer, []string) {
	typ := layers.EthernetTypeMPLSUnicast
	if r.IntN(2) == 0 {
		typ = layers.EthernetTypeMPLSMulticast
	}
	ls := genL2(r, typ, 0, 1)
	n := 1 + r.IntN(3)
	for j := range n {
		ls = append(ls, &layers.MPLS{
			Label: r.Uint32() & 0xfffff, TrafficClass: uint8(r.IntN(8)),
			StackBottom: j == n-1, TTL: uint8(r.Uint32()),
		})
	}
	ls = append(ls, ip4Header(r, layers.IPProtocolUDP, false), genUDP(r), genPayload(r))
	return ls, genFields(genL2Fields, []string{"MPLSLSE"})
}

func TestExtractMatchesGopacket(t *testing.T) {
	pkts := genPackets(t, 400)
	claimed := map[string]int{}
	for i, p := range pkts {
		got := Extract(p.data, Metadata{})
		want, mask := gopacketKey(p.data)
		if !got.EqualMasked(&want, &mask) {
			t.Errorf("packet %d (%s) %x:\n%s", i, p.kind, p.data, extractDiffKeys(&got, &want, &mask))
			continue
		}
		for _, f := range p.must {
			if reflect.ValueOf(mask.Key()).Elem().FieldByName(f).IsZero() {
				t.Errorf("packet %d (%s) %x: gopacket did not decode field %s", i, p.kind, p.data, f)
			}
		}
		claimed[p.kind]++
	}
	for _, k := range genKinds {
		if claimed[k.name] == 0 {
			t.Errorf("kind %s: no packet compared", k.name)
		}
	}
	t.Logf("compared %d packets of %d kinds", len(pkts), len(genKinds))
}

// TestExtractTruncated cuts every generated packet at every length. Each
// prefix must extract without panicking to a Key whose fields are each
// either the full packet's value or zero, except for the fallbacks the
// kernel takes on a short packet (listed in prefixConsistent), and once a
// prefix yields the full Key every longer prefix must too.
func TestExtractTruncated(t *testing.T) {
	pkts := genPackets(t, 40)
	for i, p := range pkts {
		full := Extract(p.data, Metadata{})
		m := ExactMask()
		if ndCleared(&full) {
			// A prefix too short for the target reads as an invalid message.
			m.NDTarget, m.NDSLL, m.NDTLL = [16]byte{}, [6]byte{}, [6]byte{}
		}
		stable := -1
		for n := 0; n <= len(p.data); n++ {
			var k Key
			ExtractInto(&k, p.data[:n:n], nil)
			if msg := prefixConsistent(&k, &full); msg != "" {
				t.Fatalf("packet %d (%s) %x cut at %d: %s", i, p.kind, p.data, n, msg)
			}
			same := k.EqualMasked(&full, &m)
			switch {
			case same && stable < 0:
				stable = n
			case !same && stable >= 0:
				t.Fatalf("packet %d (%s) %x: prefix %d gave the full key but %d does not: %s",
					i, p.kind, p.data, stable, n, extractDiffKeys(&k, &full, &m))
			}
		}
		if stable < 0 {
			t.Fatalf("packet %d (%s): the whole packet does not give the full key", i, p.kind)
		}
	}
}

// ndCleared reports whether k is an NS or NA whose ND fields are zero, as
// they are when the kernel finds the message invalid.
func ndCleared(k *Key) bool {
	return k.NDTarget == [16]byte{} && k.EthType == EthTypeIPv6 && k.NwProto == IPProtoICMPv6 &&
		k.TpDst == 0 && (k.TpSrc == ndSolicit || k.TpSrc == ndAdvert)
}

// prefixConsistent checks k, extracted from a prefix of a packet, against
// full, extracted from the whole packet, and says what is wrong.
func prefixConsistent(k, full *Key) string {
	kv, fv := reflect.ValueOf(k).Elem(), reflect.ValueOf(full).Elem()
	// ND fields of an invalid (cleared) message are set in a prefix that
	// ends before the repeated option.
	ndCleared := ndCleared(full)
	for i := 0; i < kv.NumField(); i++ {
		name := kv.Type().Field(i).Name
		a, b := kv.Field(i), fv.Field(i)
		if name == "_" || a.IsZero() || a.Equal(b) {
			continue
		}
		switch name {
		case "VLANs":
			if k.VLANs[0] == full.VLANs[0] && k.VLANs[1] == (VLAN{}) {
				continue
			}
		case "EthType":
			// An 802.3 frame too short for SNAP, or a tag cut short, is
			// read as it stands.
			if k.EthType == EthTypeNone || k.EthType == EthTypeVLAN || k.EthType == EthTypeQinQ {
				continue
			}
		case "NwProto":
			if k.EthType == EthTypeIPv6 && k.NwProto == ipv6NoNext {
				continue // the extension-header walk ran off the end
			}
		case "NwFrag":
			if k.NwFrag == FragAny && full.NwFrag == FragAny|FragLater {
				continue // the fragment header was cut before its offset
			}
		case "NDTarget", "NDSLL", "NDTLL":
			if ndCleared {
				continue
			}
		}
		return name + ": " + extractFmtField(a) + " is neither zero nor the full packet's " + extractFmtField(b)
	}
	return ""
}
