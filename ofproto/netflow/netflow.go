// Package netflow exports NetFlow version 5 flow records, as ovs-vswitchd
// 3.1's NetFlow does for a bridge: one record per IPv4 flow (input port,
// addresses, protocol, ToS, ports) when the datapath flows behind it
// expire, and every active timeout while it stays active, to the
// collectors of the bridge's NetFlow row. The decoder reads what the
// encoder writes and never panics.
package netflow

import (
	"encoding/binary"
	"errors"
	"fmt"
	"github.com/govswitch/govswitch/ofproto/collector"
	"net"
	"net/netip"
	"strconv"
	"sync"
	"time"
)

// Wire sizes and limits of NetFlow v5.
const (
	Version    = 5
	HeaderLen  = 24
	RecordLen  = 48
	MaxRecords = 30 // per datagram
	// DefaultActiveTimeout is the active timeout when the row sets none
	// (or a negative one), as ovs-vswitchd's.
	DefaultActiveTimeout = 600 * time.Second
)

// Output interfaces besides a port, as ovs-vswitchd's.
const (
	OutFlood = 0xffff // flooded
	OutMulti = 0xfffe // output to several ports
	OutDrop  = 0xfffd // dropped
)

// Header is a datagram's header.
type Header struct {
	Count                uint16
	SysUptime            uint32 // ms
	UnixSecs, UnixNsecs  uint32
	FlowSeq              uint32
	EngineType, EngineID uint8
	SamplingInterval     uint16
}

// Record is one flow record.
type Record struct {
	Src, Dst, NextHop [4]byte
	Input, Output     uint16
	Packets, Bytes    uint32
	First, Last       uint32 // sysuptime ms
	SrcPort, DstPort  uint16
	TCPFlags          uint8
	Proto, Tos        uint8
	SrcAS, DstAS      uint16
	SrcMask, DstMask  uint8
}

// AppendHeader appends h.
func AppendHeader(b []byte, h *Header) []byte {
	b = binary.BigEndian.AppendUint16(b, Version)
	b = binary.BigEndian.AppendUint16(b, h.Count)
	b = binary.BigEndian.AppendUint32(b, h.SysUptime)
	b = binary.BigEndian.AppendUint32(b, h.UnixSecs)
	b = binary.BigEndian.AppendUint32(b, h.UnixNsecs)
	b = binary.BigEndian.AppendUint32(b, h.FlowSeq)
	b = append(b, h.EngineType, h.EngineID)
	return binary.BigEndian.AppendUint16(b, h.SamplingInterval)
}

// AppendRecord appends r.
func AppendRecord(b []byte, r *Record) []byte {
	b = append(b, r.Src[:]...)
	b = append(b, r.Dst[:]...)
	b = append(b, r.NextHop[:]...)
	b = binary.BigEndian.AppendUint16(b, r.Input)
	b = binary.BigEndian.AppendUint16(b, r.Output)
	b = binary.BigEndian.AppendUint32(b, r.Packets)
	b = binary.BigEndian.AppendUint32(b, r.Bytes)
	b = binary.BigEndian.AppendUint32(b, r.First)
	b = binary.BigEndian.AppendUint32(b, r.Last)
	b = binary.BigEndian.AppendUint16(b, r.SrcPort)
	b = binary.BigEndian.AppendUint16(b, r.DstPort)
	b = append(b, 0, r.TCPFlags, r.Proto, r.Tos)
	b = binary.BigEndian.AppendUint16(b, r.SrcAS)
	b = binary.BigEndian.AppendUint16(b, r.DstAS)
	return append(b, r.SrcMask, r.DstMask, 0, 0)
}

// Decode reads a datagram: its header and its Count records.
func Decode(b []byte) (Header, []Record, error) {
	var h Header
	if len(b) < HeaderLen {
		return h, nil, errors.New("netflow: datagram shorter than its header")
	}
	if v := binary.BigEndian.Uint16(b); v != Version {
		return h, nil, fmt.Errorf("netflow: version %d, want %d", v, Version)
	}
	h = Header{Count: binary.BigEndian.Uint16(b[2:]), SysUptime: binary.BigEndian.Uint32(b[4:]),
		UnixSecs: binary.BigEndian.Uint32(b[8:]), UnixNsecs: binary.BigEndian.Uint32(b[12:]),
		FlowSeq: binary.BigEndian.Uint32(b[16:]), EngineType: b[20], EngineID: b[21],
		SamplingInterval: binary.BigEndian.Uint16(b[22:])}
	if len(b) != HeaderLen+int(h.Count)*RecordLen {
		return h, nil, fmt.Errorf("netflow: %d bytes for %d records", len(b), h.Count)
	}
	rs := make([]Record, h.Count)
	for i := range rs {
		p := b[HeaderLen+i*RecordLen:]
		r := &rs[i]
		copy(r.Src[:], p[0:4])
		copy(r.Dst[:], p[4:8])
		copy(r.NextHop[:], p[8:12])
		r.Input, r.Output = binary.BigEndian.Uint16(p[12:]), binary.BigEndian.Uint16(p[14:])
		r.Packets, r.Bytes = binary.BigEndian.Uint32(p[16:]), binary.BigEndian.Uint32(p[20:])
		r.First, r.Last = binary.BigEndian.Uint32(p[24:]), binary.BigEndian.Uint32(p[28:])
		r.SrcPort, r.DstPort = binary.BigEndian.Uint16(p[32:]), binary.BigEndian.Uint16(p[34:])
		r.TCPFlags, r.Proto, r.Tos = p[37], p[38], p[39]
		r.SrcAS, r.DstAS = binary.BigEndian.Uint16(p[40:]), binary.BigEndian.Uint16(p[42:])
		r.SrcMask, r.DstMask = p[44], p[45]
	}
	return h, rs, nil
}

// Key names a NetFlow flow: an IPv4 flow entering by an OpenFlow port.
// For ICMP, SrcPort and DstPort are the type and code.
type Key struct {
	InPort           uint16
	Src, Dst         [4]byte
	Proto, Tos       uint8
	SrcPort, DstPort uint16
}

// Config is a bridge's NetFlow configuration, resolved.
type Config struct {
	Targets              []string // "IP:PORT"
	EngineType, EngineID uint8
	AddIDToInterface     bool
	// ActiveTimeout is how often an active flow is reported; 0 means
	// DefaultActiveTimeout.
	ActiveTimeout time.Duration
}

type flowState struct {
	out                    uint16
	packets, bytes         uint64
	tcpFlags               uint16
	created, used, expired time.Time
}

// Exporter is one bridge's NetFlow. It is safe for concurrent use.
type Exporter struct {
	cfg   Config
	conns collector.Set
	boot  time.Time

	mu    sync.Mutex
	flows map[Key]*flowState
	buf   []byte
	count uint16
	seq   uint32
	sent  uint64
	errs  uint64

	stop, done chan struct{}
}

// NewExporter opens a UDP socket to each target and starts the
// exporter's clock (sends and active timeouts, every second).
func NewExporter(cfg Config) (*Exporter, error) {
	if cfg.ActiveTimeout <= 0 {
		cfg.ActiveTimeout = DefaultActiveTimeout
	}
	e := &Exporter{cfg: cfg, boot: time.Now(), flows: map[Key]*flowState{},
		stop: make(chan struct{}), done: make(chan struct{})}
	conns, err := collector.Dial("NetFlow", cfg.Targets, parseTarget)
	if err != nil {
		return nil, err
	}
	e.conns = conns
	go e.run()
	return e, nil
}

func parseTarget(s string) (netip.AddrPort, error) {
	if ap, err := netip.ParseAddrPort(s); err == nil {
		return ap, nil
	}
	host, port, err := net.SplitHostPort(s)
	if err == nil {
		if a, err1 := netip.ParseAddr(host); err1 == nil {
			if p, err2 := strconv.ParseUint(port, 10, 16); err2 == nil {
				return netip.AddrPortFrom(a, uint16(p)), nil
			}
		}
	}
	return netip.AddrPort{}, fmt.Errorf("NetFlow target %q: want IP:PORT", s)
}

// Config returns the configuration the exporter runs with.
func (e *Exporter) Config() Config { return e.cfg }

// Close reports every flow it holds, sends, and stops.
func (e *Exporter) Close() {
	close(e.stop)
	<-e.done
	e.mu.Lock()
	for k, f := range e.flows {
		e.expire(k, f)
	}
	e.sendLocked()
	e.mu.Unlock()
	e.conns.Close()
}

func (e *Exporter) run() {
	defer close(e.done)
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-e.stop:
			return
		case now := <-t.C:
			e.Run(now)
		}
	}
}

// Update credits packets and bytes seen at used to flow k, which left by
// output interface out (a port, OutFlood, OutMulti or OutDrop). A change
// of output reports the flow so far first, as ovs-vswitchd does.
func (e *Exporter) Update(k Key, out uint16, packets, bytes uint64, tcpFlags uint16, used time.Time) {
	e.mu.Lock()
	defer e.mu.Unlock()
	f := e.flows[k]
	if f == nil {
		f = &flowState{out: out, created: used, expired: used}
		e.flows[k] = f
	}
	if f.out != out {
		e.expire(k, f)
		f.created, f.out = used, out
	}
	f.packets += packets
	f.bytes += bytes
	f.tcpFlags |= tcpFlags
	if used.After(f.used) {
		f.used = used
	}
}

// Clear reports flow k and forgets it: its datapath flows are gone.
func (e *Exporter) Clear(k Key) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if f := e.flows[k]; f != nil {
		e.expire(k, f)
		delete(e.flows, k)
	}
}

// Run reports the flows active for longer than the active timeout and
// sends what is pending. The exporter calls it every second.
func (e *Exporter) Run(now time.Time) {
	e.mu.Lock()
	defer e.mu.Unlock()
	for k, f := range e.flows {
		if now.Sub(f.expired) > e.cfg.ActiveTimeout {
			idle := f.used.Before(f.expired)
			e.expire(k, f)
			f.expired = now
			if idle {
				delete(e.flows, k) // no datapath flow credits it any more
			}
		}
	}
	e.sendLocked()
}

func (e *Exporter) ms(t time.Time) uint32 { return uint32(t.Sub(e.boot).Milliseconds()) }

// expire adds f's record (or several, when its counts overflow 32 bits)
// and zeroes its counts. e.mu is held.
func (e *Exporter) expire(k Key, f *flowState) {
	pkts, bytes := f.packets, f.bytes
	if pkts == 0 {
		return
	}
	for bytes > 0 || pkts > 0 {
		n := (bytes + (1<<32 - 1) - 1) / (1<<32 - 1)
		n = max(n, (pkts+(1<<32-1)-1)/(1<<32-1), 1)
		p, b := pkts/n, bytes/n
		e.record(k, f, uint32(p), uint32(b))
		pkts -= p
		bytes -= b
	}
	f.packets, f.bytes, f.tcpFlags = 0, 0, 0
}

func (e *Exporter) record(k Key, f *flowState, pkts, bytes uint32) {
	in, out := k.InPort, f.out
	if e.cfg.AddIDToInterface {
		id := uint16(e.cfg.EngineID&0x7f) << 9
		in, out = id|in&0x1ff, id|out&0x1ff
	}
	last := f.used
	if last.Before(f.created) {
		last = f.created
	}
	r := Record{Src: k.Src, Dst: k.Dst, Input: in, Output: out, Packets: pkts, Bytes: bytes,
		First: e.ms(f.created), Last: e.ms(last), SrcPort: k.SrcPort, DstPort: k.DstPort,
		TCPFlags: uint8(f.tcpFlags), Proto: k.Proto, Tos: k.Tos & 0xfc}
	if k.Proto == 1 { // ICMP: type and code in the destination port
		r.SrcPort, r.DstPort = 0, k.SrcPort<<8|k.DstPort&0xff
	}
	if e.count == 0 {
		e.buf = AppendHeader(e.buf[:0], &Header{})
	}
	e.buf = AppendRecord(e.buf, &r)
	e.count++
	e.seq++
	if e.count >= MaxRecords {
		e.sendLocked()
	}
}

// sendLocked sends the pending records. e.mu is held.
func (e *Exporter) sendLocked() {
	if e.count == 0 {
		return
	}
	now := time.Now()
	h := Header{Count: e.count, SysUptime: e.ms(now), UnixSecs: uint32(now.Unix()), UnixNsecs: uint32(now.Nanosecond()),
		FlowSeq: e.seq - uint32(e.count), EngineType: e.cfg.EngineType, EngineID: e.cfg.EngineID}
	AppendHeader(e.buf[:0], &h)
	sent, failed, _ := e.conns.Send(e.buf)
	e.sent, e.errs = e.sent+sent, e.errs+failed
	e.count = 0
	e.buf = e.buf[:0]
}

// Flows returns how many flows the exporter tracks, for tests.
func (e *Exporter) Flows() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return len(e.flows)
}
