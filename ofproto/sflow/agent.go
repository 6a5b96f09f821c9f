package sflow

import (
	"fmt"
	"github.com/govswitch/govswitch/ofproto/collector"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Defaults of the sFlow row's optional columns, as ovs-vswitchd's.
const (
	DefaultSampling  = 400
	DefaultPolling   = 30 * time.Second
	DefaultHeader    = 128
	DefaultPort      = 6343
	maxDatagram      = 1400 // what a datagram grows to before it is sent
	flushInterval    = time.Second
	physicalEntity   = 2
	samplerIndexBase = 1000
)

// Config is a bridge's sFlow configuration, resolved.
type Config struct {
	Agent      netip.Addr // the agent address the datagrams carry
	SubAgentID uint32     // the bridge's number among those with sFlow
	Targets    []string   // collectors, "IP:PORT"
	Sampling   uint32     // one packet in Sampling, on average, is sampled (≥ 1)
	Polling    time.Duration
	Header     int // bytes of each sampled packet sent, at most
}

// Probability is the datapath sample action's probability for c's
// sampling rate, as ovs-vswitchd computes it: UINT32_MAX/rate, at least 1.
func (c *Config) Probability() uint32 {
	if c.Sampling <= 1 {
		return ^uint32(0)
	}
	return max(1, ^uint32(0)/c.Sampling)
}

// ParseTarget returns an sFlow target as "IP:PORT", the port 6343 when
// it has none, as ovs-vswitchd's inet_parse_active does.
func ParseTarget(s string) (netip.AddrPort, error) {
	if ap, err := netip.ParseAddrPort(s); err == nil {
		return ap, nil
	}
	h := strings.TrimSuffix(strings.TrimPrefix(s, "["), "]")
	if a, err := netip.ParseAddr(h); err == nil {
		return netip.AddrPortFrom(a, DefaultPort), nil
	}
	host, port, err := net.SplitHostPort(s)
	if err != nil {
		return netip.AddrPort{}, fmt.Errorf("sFlow target %q: want IP[:PORT]", s)
	}
	a, err := netip.ParseAddr(host)
	if err != nil {
		return netip.AddrPort{}, fmt.Errorf("sFlow target %q: %q is not an IP address", s, host)
	}
	p, err := strconv.ParseUint(port, 10, 16)
	if err != nil {
		return netip.AddrPort{}, fmt.Errorf("sFlow target %q: bad port %q", s, port)
	}
	return netip.AddrPortFrom(a, uint16(p)), nil
}

// Counters returns the counters of every port to poll. It runs on the
// exporter's goroutine.
type Counters func() []IfCounters

// Exporter is one bridge's sFlow agent: it numbers and batches flow and
// counter samples into datagrams and sends them to every target. It is
// safe for concurrent use; Sample may be called from upcall handlers.
type Exporter struct {
	cfg     Config
	conns   collector.Set
	poll    Counters
	start   time.Time
	samplID uint32 // the sampler's data source id

	mu         sync.Mutex
	buf        []byte // the datagram being filled: room for its header, then the samples
	hdrLen     int
	fs         FlowSample // Sample's scratch, so that it does not escape
	nSamples   uint32
	seq        uint32 // datagrams sent
	flowSeq    uint32
	pool       uint32
	counterSeq map[uint32]uint32
	sent       uint64
	sendErrs   uint64
	lastErr    error

	stop chan struct{}
	done chan struct{}
}

// NewExporter opens a UDP socket to each target and starts the
// exporter's clock: a flush of pending samples every second and counter
// polls every cfg.Polling (none when 0). A target that cannot be opened
// fails the whole configuration, so the caller can refuse it loudly.
func NewExporter(cfg Config, poll Counters) (*Exporter, error) {
	if cfg.Sampling == 0 {
		cfg.Sampling = DefaultSampling
	}
	if cfg.Header <= 0 {
		cfg.Header = DefaultHeader
	}
	e := &Exporter{cfg: cfg, poll: poll, start: time.Now(), counterSeq: map[uint32]uint32{},
		samplID: SourceID(physicalEntity, samplerIndexBase+cfg.SubAgentID),
		stop:    make(chan struct{}), done: make(chan struct{})}
	e.hdrLen = len(AppendHeader(nil, &Header{Agent: cfg.Agent}))
	e.buf = make([]byte, e.hdrLen, 2*maxDatagram+e.hdrLen)
	conns, err := collector.Dial("sFlow", cfg.Targets, ParseTarget)
	if err != nil {
		return nil, err
	}
	e.conns = conns
	go e.run()
	return e, nil
}

// Config returns the configuration the exporter runs with.
func (e *Exporter) Config() Config { return e.cfg }

// Close stops the exporter, sending what it holds.
func (e *Exporter) Close() {
	close(e.stop)
	<-e.done
	e.mu.Lock()
	e.flushLocked()
	e.mu.Unlock()
	e.conns.Close()
}

func (e *Exporter) run() {
	defer close(e.done)
	flush := time.NewTicker(flushInterval)
	defer flush.Stop()
	var poll <-chan time.Time
	if e.cfg.Polling > 0 && e.poll != nil {
		t := time.NewTicker(e.cfg.Polling)
		defer t.Stop()
		poll = t.C
	}
	for {
		select {
		case <-e.stop:
			return
		case <-flush.C:
			e.mu.Lock()
			e.flushLocked()
			e.mu.Unlock()
		case <-poll:
			e.pollCounters()
		}
	}
}

// Sample adds a flow sample of packet pkt (the frame without FCS) that
// came in on ifIndex in and left by output (an ifIndex, or OutputMultiple
// or OutputDiscard with their operand), with the source and destination
// VLAN TCIs (0 when untagged). It copies what it keeps of pkt, and
// allocates nothing once its buffer has grown.
func (e *Exporter) Sample(pkt []byte, in, output uint32, srcTCI, dstTCI uint16) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.flowSeq++
	// As ovs-vswitchd: the datapath's random sampling is taken to
	// converge on the configured rate, so each sample stands for Sampling
	// packets.
	e.pool += e.cfg.Sampling
	hdr := pkt
	if len(hdr) > e.cfg.Header {
		hdr = hdr[:e.cfg.Header]
	}
	e.fs = FlowSample{Seq: e.flowSeq, SourceID: e.samplID, Rate: e.cfg.Sampling, Pool: e.pool,
		Input: in, Output: output, HasHeader: true, Protocol: HeaderEthernet,
		Frame: uint32(len(pkt)) + 4, Stripped: 4, Packet: hdr, HasSwitch: true,
		SrcVLAN: uint32(srcTCI & 0xfff), SrcPriority: uint32(srcTCI >> 13),
		DstVLAN: uint32(dstTCI & 0xfff), DstPrio: uint32(dstTCI >> 13)}
	n := len(e.buf)
	e.buf = AppendFlowSample(e.buf, &e.fs)
	e.fs.Packet = nil
	e.added(n)
}

// added accounts for the sample appended to the datagram from offset n:
// when it takes the datagram past maxDatagram, what was there before is
// sent and the sample starts the next one. e.mu is held.
func (e *Exporter) added(n int) {
	if len(e.buf) > maxDatagram && n > e.hdrLen {
		end := len(e.buf)
		e.buf = e.buf[:n]
		e.flushLocked()
		e.buf = append(e.buf, e.buf[n:end]...) // the tail is still in the array
	}
	e.nSamples++
}

// pollCounters sends a counter sample of every port.
func (e *Exporter) pollCounters() {
	cs := e.poll()
	e.mu.Lock()
	defer e.mu.Unlock()
	for i := range cs {
		src := SourceID(0, cs[i].Index)
		e.counterSeq[src]++
		s := CounterSample{Seq: e.counterSeq[src], SourceID: src, HasGeneric: true, Generic: cs[i]}
		n := len(e.buf)
		e.buf = AppendCounterSample(e.buf, &s)
		e.added(n)
	}
	e.flushLocked()
}

// flushLocked sends the pending samples as one datagram, its header
// written into the room kept for it at the front. e.mu is held.
func (e *Exporter) flushLocked() {
	if e.nSamples == 0 {
		return
	}
	e.seq++
	h := Header{Agent: e.cfg.Agent, SubAgentID: e.cfg.SubAgentID, Seq: e.seq,
		Uptime: uint32(time.Since(e.start).Milliseconds()), NSamples: e.nSamples}
	AppendHeader(e.buf[:0], &h)
	sent, failed, err := e.conns.Send(e.buf)
	e.sent, e.sendErrs = e.sent+sent, e.sendErrs+failed
	if err != nil {
		e.lastErr = err
	}
	e.buf = e.buf[:e.hdrLen]
	e.nSamples = 0
}

// Stats are an exporter's counters, for logs and tests.
type Stats struct {
	FlowSamples uint32
	Datagrams   uint32
	Sent        uint64 // datagrams written, counting each target
	SendErrors  uint64
	LastError   error
}

// Stats returns the exporter's counters.
func (e *Exporter) Stats() Stats {
	e.mu.Lock()
	defer e.mu.Unlock()
	return Stats{FlowSamples: e.flowSeq, Datagrams: e.seq, Sent: e.sent, SendErrors: e.sendErrs, LastError: e.lastErr}
}
