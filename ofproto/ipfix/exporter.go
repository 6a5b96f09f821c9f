package ipfix

import (
	"encoding/binary"
	"fmt"
	"github.com/govswitch/govswitch/ofproto/collector"
	"hash/maphash"
	"net"
	"net/netip"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/govswitch/govswitch/flow"
)

// MaxVirtualObsIDLen is the longest virtual_obs_id ovs-vswitchd accepts.
const MaxVirtualObsIDLen = 254

// Config is one exporter's configuration (a bridge's IPFIX row, or a
// Flow_Sample_Collector_Set's).
type Config struct {
	// Targets are "IP:PORT" (DefaultPort when a target has none).
	Targets []string
	// ActiveTimeout is how long an entry stays in the cache (whole
	// seconds; 0: it is exported at once).
	ActiveTimeout time.Duration
	// MaxFlows is how many entries the cache holds before the oldest are
	// exported (0: none, every sample is exported at once).
	MaxFlows int
	// VirtualObsID, when not "", is sent in every data record.
	VirtualObsID string
	// TunnelSampling is enable-tunnel-sampling: a sample with a tunnel
	// (Sample.Tunnel) is exported with the Tunneled template and the
	// tunnel elements; without it every record is NotTunneled.
	TunnelSampling bool
}

// Tunnel types of the tunnelType element, as ovs-vswitchd's
// dpif_ipfix_tunnel_type numbers them (4 and 6 are reserved).
const (
	TunnelUnknown = 0
	TunnelVXLAN   = 1
	TunnelGRE     = 2
	TunnelLISP    = 3
	TunnelSTT     = 4
	TunnelGeneve  = 7
)

// TunnelTypeOf is the tunnelType of a tunnel port of Interface type kind,
// TunnelUnknown for the types ovs-vswitchd sends no tunnel elements for
// (ip6gre, erspan, ip6erspan, ...).
func TunnelTypeOf(kind string) uint8 {
	switch kind {
	case "vxlan":
		return TunnelVXLAN
	case "gre":
		return TunnelGRE
	case "lisp":
		return TunnelLISP
	case "stt":
		return TunnelSTT
	case "geneve":
		return TunnelGeneve
	}
	return TunnelUnknown
}

// tunnelKeyLen is how many low bytes of the 64-bit tunnel ID the
// tunnelKey element carries for a tunnel type: GRE's 32-bit key, the
// 24-bit VNI of VXLAN, LISP and Geneve, STT's 64-bit context.
func tunnelKeyLen(typ uint8) int {
	switch typ {
	case TunnelGRE:
		return 4
	case TunnelVXLAN, TunnelLISP, TunnelGeneve:
		return 3
	case TunnelSTT:
		return 8
	}
	return 0
}

const ipProtoGRE = 47

// tunnelProtocol is the tunnelProtocolIdentifier of a tunnel type: the
// outer header's IP protocol.
func tunnelProtocol(typ uint8) uint8 {
	switch typ {
	case TunnelVXLAN, TunnelLISP, TunnelGeneve:
		return flow.IPProtoUDP
	case TunnelGRE:
		return ipProtoGRE
	case TunnelSTT:
		return flow.IPProtoTCP
	}
	return 0
}

// Iface is an interface of a sample, as its record names it; the zero
// value is an unknown interface (all zero in the record).
type Iface struct {
	Index, Type uint32
	Name, Descr string
}

// Sample is one sampled packet.
type Sample struct {
	Key *flow.Key // the packet's flow, as the datapath reported it
	Len int       // the frame's length in bytes
	In  Iface
	// Out is the output interface of an egress sample.
	Out       Iface
	Direction int // Ingress or Egress
	// Delta is how many packets the sample stands for (the inverse of
	// the sampling probability).
	Delta               uint64
	ObsDomain, ObsPoint uint32
	// Output is set when the sampled packet's actions are known to
	// output it; otherwise it counts as dropped (ovs-vswitchd knows only
	// when the userspace action carried the actions, which its bridge and
	// flow samples never do).
	Output bool
	// Tunnel, when not nil and TunnelType is not TunnelUnknown, is the
	// outer header of a sample of tunnel traffic: the packet's own tunnel
	// metadata for an ingress sample of a packet received on a tunnel
	// port, the datapath's egress tunnel key for an egress sample on one.
	// The record carries its outer IPv4 addresses (zero for an IPv6
	// outer header, as in ovs-vswitchd), UDP ports and ID, with
	// Config.TunnelSampling only.
	Tunnel     *flow.Tunnel
	TunnelType uint8
}

// Stats are an exporter's counters, as ovs-ofctl dump-ipfix-bridge
// shows them.
type Stats struct {
	TotalFlows, CurrentFlows                      uint64
	Packets, IPv4, IPv6, Errors, IPv4Err, IPv6Err uint64
	TxPackets, TxErrors                           uint64
}

type totals struct {
	droppedPackets, droppedOctets, packets, octets, sumSquares, l2Octets uint64
	ack, fin, psh, rst, syn, urg                                         uint64
	postMcastPackets, postMcastOctets                                    uint64
	inUcast, inMcast, inBcast, outUcast, outBcast                        uint64
}

// maxKeyLen bounds the flow key part of a data record: the fixed fields,
// two interfaces with the longest names and descriptions, VLAN, IPv6,
// ports and the tunnel elements with the longest key.
const maxKeyLen = 20 + 2*(10+64+128) + 5 + 6 + 36 + 4 + 15 + 8

type entry struct {
	domain     uint32
	template   uint16
	hash       uint64
	next       *entry // in the cache's hash chain
	keyLen     int
	key        [maxKeyLen]byte // the flow key part of the data record
	start, end uint64          // µs since the epoch

	droppedPacketDelta, packetDelta, l2OctetDelta  uint64
	postMcastPacketDelta, postMcastOctetDelta      uint64
	droppedOctetDelta, octetDelta, sumSquaresDelta uint64
	tot                                            totals // the exporter's totals at the last sample
	minLen, maxLen                                 uint16
	tcpDelta                                       uint64
}

func (e *entry) same(f *entry) bool {
	return e.hash == f.hash && e.domain == f.domain && e.template == f.template && e.keyLen == f.keyLen &&
		e.key == f.key
}

var exporterCount atomic.Uint32

// Exporter is one IPFIX exporting process: its collectors, flow cache and
// counters. It is safe for concurrent use.
type Exporter struct {
	cfg   Config
	id    uint32
	conns collector.Set

	mu sync.Mutex
	// cache holds the entries by hash of their flow key (chained);
	// order holds them by start time, the oldest first; free are
	// entries to reuse, so that sampling does not allocate.
	cache        map[uint64]*entry
	order        []*entry
	free         []*entry
	seed         maphash.Seed
	tot          totals
	seq          uint32
	lastTemplate int64 // export time (s) of the last templates
	stats        Stats
	buf          []byte

	kick       chan struct{}
	stop, done chan struct{}
}

// NewExporter opens a UDP socket to each target and starts the cache's
// clock.
func NewExporter(cfg Config) (*Exporter, error) {
	if len(cfg.VirtualObsID) > MaxVirtualObsIDLen {
		return nil, fmt.Errorf("virtual observation ID too long (%d bytes), should not be longer than %d bytes",
			len(cfg.VirtualObsID), MaxVirtualObsIDLen)
	}
	e := &Exporter{cfg: cfg, id: exporterCount.Add(1), cache: map[uint64]*entry{}, seq: 1, seed: maphash.MakeSeed(),
		kick: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
	conns, err := collector.Dial("IPFIX", cfg.Targets, ParseTarget)
	if err != nil {
		return nil, err
	}
	e.conns = conns
	go e.run()
	return e, nil
}

// ParseTarget reads "IP[:PORT]" or "[IPv6][:PORT]", DefaultPort when the
// port is absent. Host names are not looked up.
func ParseTarget(s string) (netip.AddrPort, error) {
	if ap, err := netip.ParseAddrPort(s); err == nil {
		return ap, nil
	}
	if a, err := netip.ParseAddr(trimBrackets(s)); err == nil {
		return netip.AddrPortFrom(a, DefaultPort), nil
	}
	if host, port, err := net.SplitHostPort(s); err == nil {
		if a, err1 := netip.ParseAddr(host); err1 == nil {
			if p, err2 := strconv.ParseUint(port, 10, 16); err2 == nil {
				return netip.AddrPortFrom(a, uint16(p)), nil
			}
		}
	}
	return netip.AddrPort{}, fmt.Errorf("IPFIX target %q: want IP[:PORT]", s)
}

func trimBrackets(s string) string {
	if len(s) >= 2 && s[0] == '[' && s[len(s)-1] == ']' {
		return s[1 : len(s)-1]
	}
	return s
}

// Config returns the exporter's configuration.
func (e *Exporter) Config() Config { return e.cfg }

// Stats returns the exporter's counters.
func (e *Exporter) Stats() Stats {
	e.mu.Lock()
	defer e.mu.Unlock()
	s := e.stats
	s.CurrentFlows = uint64(len(e.order))
	return s
}

// Close exports every cached entry (flow end reason "forced end") and
// stops.
func (e *Exporter) Close() {
	close(e.stop)
	<-e.done
	e.mu.Lock()
	e.expire(true, nowMicros())
	e.mu.Unlock()
	e.conns.Close()
}

func (e *Exporter) run() {
	defer close(e.done)
	t := time.NewTimer(time.Hour)
	defer t.Stop()
	for {
		select {
		case <-e.stop:
			return
		case <-e.kick:
		case <-t.C:
		}
		e.mu.Lock()
		e.expire(false, nowMicros())
		next := time.Hour
		if len(e.order) > 0 {
			due := int64(e.order[0].start) + e.cfg.ActiveTimeout.Microseconds()
			next = time.Duration(due-int64(nowMicros())) * time.Microsecond
		}
		e.mu.Unlock()
		if !t.Stop() {
			select {
			case <-t.C:
			default:
			}
		}
		t.Reset(max(next, time.Millisecond))
	}
}

// nowMicros is ovs-vswitchd's ipfix_now: the wall clock in whole
// milliseconds, as microseconds.
func nowMicros() uint64 { return uint64(time.Now().UnixMilli()) * 1000 }

// Sample adds a sampled packet to the cache.
func (e *Exporter) Sample(s *Sample) {
	k := s.Key
	l2 := L2Eth
	if k.VLANs[0].TCI != 0 {
		l2 = L2VLAN
	}
	l3, l4 := L3Unknown, L4Unknown
	ok := true
	switch k.EthType {
	case flow.EthTypeIPv4, flow.EthTypeIPv6:
		l3 = L3IPv4
		icmp := uint8(flow.IPProtoICMP)
		if k.EthType == flow.EthTypeIPv6 {
			l3, icmp = L3IPv6, flow.IPProtoICMPv6
		}
		switch k.NwProto {
		case flow.IPProtoTCP:
			l4 = L4TCP
		case flow.IPProtoUDP:
			l4 = L4UDP
		case flow.IPProtoSCTP:
			l4 = L4SCTP
		case icmp:
			l4 = L4ICMP
		default:
			ok = false
		}
	}
	dir := s.Direction
	tun := s.Tunnel
	if !e.cfg.TunnelSampling || s.TunnelType == TunnelUnknown {
		tun = nil
	}
	tunneled := NotTunneled
	if tun != nil {
		tunneled = Tunneled
	}
	var ent entry // on the stack: added to the cache as a copy
	ent.domain, ent.template = s.ObsDomain, TemplateID(l2, l3, l4, tunneled, dir)

	hdrLen := 14
	if l2 == L2VLAN {
		hdrLen = 18
	}
	b := binary.BigEndian.AppendUint32(ent.key[:0], s.ObsPoint)
	b = append(b, uint8(dir))
	b = append(b, k.EthSrc[:]...)
	b = append(b, k.EthDst[:]...)
	b = binary.BigEndian.AppendUint16(b, k.EthType)
	b = append(b, uint8(hdrLen))
	b = appendIface(b, &s.In)
	if dir == Egress {
		b = appendIface(b, &s.Out)
	}
	if l2 == L2VLAN {
		vid := k.VLANs[0].TCI & flow.VLANVIDMask
		b = binary.BigEndian.AppendUint16(b, vid)
		b = binary.BigEndian.AppendUint16(b, vid)
		b = append(b, uint8(k.VLANs[0].TCI>>13))
	}
	if l3 != L3Unknown {
		v := uint8(4)
		if l3 == L3IPv6 {
			v = 6
		}
		b = append(b, v, k.NwTTL, k.NwProto, k.NwTos>>2, k.NwTos>>5, k.NwTos)
		if l3 == L3IPv4 {
			b = append(b, k.IPv4Src[:]...)
			b = append(b, k.IPv4Dst[:]...)
		} else {
			b = append(b, k.IPv6Src[:]...)
			b = append(b, k.IPv6Dst[:]...)
			b = binary.BigEndian.AppendUint32(b, k.IPv6Label)
		}
	}
	switch l4 {
	case L4TCP, L4UDP, L4SCTP:
		b = binary.BigEndian.AppendUint16(b, k.TpSrc)
		b = binary.BigEndian.AppendUint16(b, k.TpDst)
	case L4ICMP:
		b = append(b, uint8(k.TpSrc), uint8(k.TpDst))
	}
	if tun != nil {
		b = append(b, tun.IPv4Src[:]...)
		b = append(b, tun.IPv4Dst[:]...)
		b = append(b, tunnelProtocol(s.TunnelType))
		b = binary.BigEndian.AppendUint16(b, tun.TpSrc)
		b = binary.BigEndian.AppendUint16(b, tun.TpDst)
		n := tunnelKeyLen(s.TunnelType)
		b = append(b, s.TunnelType, uint8(n))
		var id [8]byte
		binary.BigEndian.PutUint64(id[:], tun.ID)
		b = append(b, id[8-n:]...)
	}
	ent.keyLen = len(b)

	bcast := k.EthDst == [6]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}
	mcast := !bcast && k.EthDst[0]&1 != 0

	e.mu.Lock()
	defer e.mu.Unlock()
	ent.hash = maphash.Bytes(e.seed, ent.key[:ent.keyLen]) ^ uint64(ent.domain)<<16 ^ uint64(ent.template)
	t := &e.tot
	now := nowMicros()
	ent.start, ent.end = now, now
	delta := s.Delta
	l2Octets := delta * uint64(s.Len)
	if !s.Output {
		ent.droppedPacketDelta = delta
	}
	ent.packetDelta, ent.l2OctetDelta = delta, l2Octets
	t.droppedPackets += ent.droppedPacketDelta
	t.packets += delta
	t.l2Octets += l2Octets
	switch {
	case bcast && dir == Ingress:
		t.inBcast += delta
	case bcast:
		t.outBcast += delta
	case mcast && dir == Ingress:
		t.inMcast += delta
	case mcast:
		ent.postMcastPacketDelta = delta
		t.postMcastPackets += delta
	case dir == Ingress:
		t.inUcast += delta
	default:
		t.outUcast += delta
	}
	if l3 != L3Unknown {
		ipLen := uint64(uint16(s.Len - hdrLen))
		octets := delta * ipLen
		if !s.Output {
			ent.droppedOctetDelta = octets
		}
		ent.octetDelta, ent.sumSquaresDelta = octets, octets*ipLen
		ent.minLen, ent.maxLen = uint16(ipLen), uint16(ipLen)
		t.droppedOctets += ent.droppedOctetDelta
		t.octets += octets
		t.sumSquares += ent.sumSquaresDelta
		if mcast && dir == Egress {
			ent.postMcastOctetDelta = octets
			t.postMcastOctets += octets
		}
	}
	if l4 == L4TCP {
		ent.tcpDelta = delta
		f := k.TCPFlags
		for _, c := range []struct {
			bit uint16
			n   *uint64
		}{{0x10, &t.ack}, {0x01, &t.fin}, {0x08, &t.psh}, {0x04, &t.rst}, {0x02, &t.syn}, {0x20, &t.urg}} {
			if f&c.bit != 0 {
				*c.n += delta
			}
		}
	}
	ent.tot = *t

	e.stats.Packets++
	switch {
	case l3 == L3IPv4 && ok:
		e.stats.IPv4++
	case l3 == L3IPv6 && ok:
		e.stats.IPv6++
	case l3 == L3IPv4:
		e.stats.IPv4Err++
		e.stats.Errors++
	case l3 == L3IPv6:
		e.stats.IPv6Err++
		e.stats.Errors++
	}

	for old := e.cache[ent.hash]; old != nil; old = old.next {
		if old.same(&ent) {
			old.aggregate(&ent)
			return
		}
	}
	var n *entry
	if k := len(e.free); k > 0 {
		n, e.free = e.free[k-1], e.free[:k-1]
	} else {
		n = new(entry)
	}
	*n = ent
	n.next = e.cache[n.hash]
	e.cache[n.hash] = n
	e.order = append(e.order, n)
	e.stats.TotalFlows++
	if len(e.order) > e.cfg.MaxFlows {
		e.expire(false, now)
	}
	if e.cfg.ActiveTimeout > 0 && len(e.order) == 1 {
		select {
		case e.kick <- struct{}{}:
		default:
		}
	}
}

// aggregate adds the sample f into e, as ipfix_cache_aggregate_entries.
func (e *entry) aggregate(f *entry) {
	e.start, e.end = min(e.start, f.start), max(e.end, f.end)
	e.droppedPacketDelta += f.droppedPacketDelta
	e.packetDelta += f.packetDelta
	e.l2OctetDelta += f.l2OctetDelta
	e.postMcastPacketDelta += f.postMcastPacketDelta
	e.postMcastOctetDelta += f.postMcastOctetDelta
	e.droppedOctetDelta += f.droppedOctetDelta
	e.octetDelta += f.octetDelta
	e.sumSquaresDelta += f.sumSquaresDelta
	e.tot = f.tot
	if e.minLen == 0 || f.minLen != 0 && e.minLen > f.minLen {
		e.minLen = f.minLen
	}
	e.maxLen = max(e.maxLen, f.maxLen)
	e.tcpDelta += f.tcpDelta
}

func appendIface(b []byte, i *Iface) []byte {
	b = binary.BigEndian.AppendUint32(b, i.Index)
	b = binary.BigEndian.AppendUint32(b, i.Type)
	name, descr := i.Name, i.Descr
	if len(name) > 64 {
		name = name[:64]
	}
	if len(descr) > 128 {
		descr = descr[:128]
	}
	b = append(b, uint8(len(name)))
	b = append(b, name...)
	b = append(b, uint8(len(descr)))
	return append(b, descr...)
}

// expire exports the entries whose time is up (all when forced), as
// dpif_ipfix_cache_expire: oldest first, until one has neither been
// cached for the active timeout nor is one too many. e.mu is held.
func (e *Exporter) expire(forced bool, nowUs uint64) {
	if len(e.order) == 0 {
		return
	}
	exportSec := uint32((nowUs + 999999) / 1000000)
	oldest := int64(nowUs) - e.cfg.ActiveTimeout.Microseconds()
	templatesSent := false
	n := 0
	for _, ent := range e.order {
		var reason uint8
		switch {
		case forced:
			reason = EndForced
		case int64(ent.start) <= oldest:
			reason = EndActive
		case len(e.order)-n > e.cfg.MaxFlows:
			reason = EndLackOfResources
		}
		if reason == 0 {
			break
		}
		n++
		e.unlink(ent)
		if !templatesSent && e.lastTemplate+TemplateInterval <= int64(exportSec) {
			for _, m := range TemplateMessages(exportSec, e.seq, ent.domain, e.cfg.VirtualObsID != "") {
				e.send(m)
			}
			e.lastTemplate = int64(exportSec)
			templatesSent = true
			e.send(StatsMessage(exportSec, e.seq, e.id, e.stats.TxErrors))
			e.seq++
		}
		e.buf = e.appendData(e.buf[:0], exportSec, ent, reason)
		e.send(e.buf)
		e.seq++
	}
	e.free = append(e.free, e.order[:n]...)
	if len(e.free) > 64 {
		clear(e.free[64:])
		e.free = e.free[:64]
	}
	// Shift rather than reslice, so the array is reused.
	m := copy(e.order, e.order[n:])
	clear(e.order[m:])
	e.order = e.order[:m]
}

// unlink takes ent out of its hash chain. e.mu is held.
func (e *Exporter) unlink(ent *entry) {
	p := e.cache[ent.hash]
	if p == ent {
		if ent.next == nil {
			delete(e.cache, ent.hash)
		} else {
			e.cache[ent.hash] = ent.next
		}
		return
	}
	for ; p != nil; p = p.next {
		if p.next == ent {
			p.next = ent.next
			return
		}
	}
}

// appendData appends the data message of one entry. e.mu is held.
func (e *Exporter) appendData(m []byte, exportSec uint32, ent *entry, reason uint8) []byte {
	m = appendHeader(m, exportSec, e.seq, ent.domain)
	m, at := beginSet(m, ent.template)
	m = append(m, ent.key[:ent.keyLen]...)
	if v := e.cfg.VirtualObsID; v != "" {
		m = append(m, uint8(len(v)))
		m = append(m, v...)
	}
	exportUs := uint64(exportSec) * 1000000
	t := &ent.tot
	m = binary.BigEndian.AppendUint32(m, uint32(exportUs-ent.start))
	m = binary.BigEndian.AppendUint32(m, uint32(exportUs-ent.end))
	for _, v := range []uint64{ent.droppedPacketDelta, t.droppedPackets, ent.packetDelta, t.packets, t.inUcast,
		t.inMcast, t.inBcast, t.outUcast, t.outBcast, ent.postMcastPacketDelta, t.postMcastPackets, ent.l2OctetDelta,
		t.l2Octets} {
		m = binary.BigEndian.AppendUint64(m, v)
	}
	m = append(m, reason)
	if ent.sumSquaresDelta != 0 { // an IP packet, as ovs-vswitchd tells
		for _, v := range []uint64{ent.droppedOctetDelta, t.droppedOctets, ent.octetDelta, t.octets, ent.sumSquaresDelta,
			t.sumSquares, uint64(ent.minLen), uint64(ent.maxLen), ent.postMcastOctetDelta, t.postMcastOctets} {
			m = binary.BigEndian.AppendUint64(m, v)
		}
	}
	if ent.tcpDelta != 0 {
		for _, v := range []uint64{t.ack, t.fin, t.psh, t.rst, t.syn, t.urg} {
			m = binary.BigEndian.AppendUint64(m, v)
		}
	}
	endSet(m, at)
	return finishMessage(m)
}

// send sends message m to every collector. e.mu is held.
func (e *Exporter) send(m []byte) {
	sent, failed, _ := e.conns.Send(m)
	e.stats.TxPackets, e.stats.TxErrors = e.stats.TxPackets+sent, e.stats.TxErrors+failed
}
