// Package sflow encodes and decodes sFlow version 5 datagrams
// (sflow.org/sflow_version_5.txt) and exports them: the flow samples a
// bridge's datapath sample actions send up and the interface counters of
// its ports, to the collectors of the bridge's sFlow row.
//
// The encoder writes what ovs-vswitchd 3.1's sFlow agent writes for a
// bridge: compact flow samples (format 1) whose source is the bridge's
// sampler (class 2, physical entity, index 1000+sub-agent id), carrying a
// raw packet header record and an extended switch record, and compact
// counter samples (format 2) of each port (class 0, its ifIndex) with the
// generic interface counters record. The decoder reads those and skips
// records it does not know; it never panics on any input.
package sflow

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
)

// Version is the sFlow version written and read.
const Version = 5

// Address types of the datagram header.
const (
	addrIPv4 = 1
	addrIPv6 = 2
)

// Sample and record formats (enterprise 0).
const (
	FormatFlowSample    = 1
	FormatCounterSample = 2
	RecordRawHeader     = 1    // flow record: raw packet header
	RecordExtSwitch     = 1001 // flow record: extended switch data
	RecordGenericIf     = 1    // counter record: generic interface counters
	HeaderEthernet      = 1    // header_protocol: ETHERNET-ISO88023
	genericIfLen        = 88
)

// Output values of a flow sample besides an ifIndex (sFlow v5, "Input/
// output port information").
const (
	OutputMultiple = 0x80000000 // | the number of output ports
	OutputDiscard  = 0x40000000 // | a reason; 256 is "unknown"
)

// SourceID makes a data source id from its class (0 ifIndex, 2 physical
// entity) and index.
func SourceID(class uint8, index uint32) uint32 { return uint32(class)<<24 | index&0xffffff }

// Header is a datagram's header.
type Header struct {
	Agent      netip.Addr
	SubAgentID uint32
	Seq        uint32 // datagram sequence number, per sub-agent
	Uptime     uint32 // milliseconds since the agent started
	NSamples   uint32
}

// FlowSample is a compact flow sample with the records the agent writes.
type FlowSample struct {
	Seq, SourceID, Rate, Pool, Drops, Input, Output uint32
	// Raw packet header record: Frame is the frame's length on the wire,
	// FCS included; Stripped is what was taken off it (4, the FCS);
	// Packet holds at most the configured header length.
	HasHeader       bool
	Protocol        uint32
	Frame, Stripped uint32
	Packet          []byte
	// Extended switch record.
	HasSwitch                              bool
	SrcVLAN, SrcPriority, DstVLAN, DstPrio uint32
}

// IfCounters is the generic interface counters record.
type IfCounters struct {
	Index, Type uint32
	Speed       uint64
	Direction   uint32 // 0 unknown, 1 full duplex, 2 half, 3 in, 4 out
	Status      uint32 // bit 0 admin up, bit 1 oper up
	InOctets    uint64
	InUcast     uint32
	InMcast     uint32
	InBcast     uint32
	InDiscards  uint32
	InErrors    uint32
	InUnknown   uint32
	OutOctets   uint64
	OutUcast    uint32
	OutMcast    uint32
	OutBcast    uint32
	OutDiscards uint32
	OutErrors   uint32
	Promiscuous uint32
}

// CounterSample is a compact counter sample with a generic interface
// counters record.
type CounterSample struct {
	Seq, SourceID uint32
	HasGeneric    bool
	Generic       IfCounters
}

func be32(b []byte, v uint32) []byte { return binary.BigEndian.AppendUint32(b, v) }
func be64(b []byte, v uint64) []byte { return binary.BigEndian.AppendUint64(b, v) }

// AppendHeader appends a datagram header.
func AppendHeader(b []byte, h *Header) []byte {
	b = be32(b, Version)
	if h.Agent.Is4() || h.Agent.Is4In6() {
		a := h.Agent.Unmap().As4()
		b = be32(b, addrIPv4)
		b = append(b, a[:]...)
	} else {
		a := h.Agent.As16()
		b = be32(b, addrIPv6)
		b = append(b, a[:]...)
	}
	b = be32(b, h.SubAgentID)
	b = be32(b, h.Seq)
	b = be32(b, h.Uptime)
	return be32(b, h.NSamples)
}

// AppendFlowSample appends s as a compact flow sample.
func AppendFlowSample(b []byte, s *FlowSample) []byte {
	b = be32(b, FormatFlowSample)
	b, lenAt := reserve(b)
	b = be32(b, s.Seq)
	b = be32(b, s.SourceID)
	b = be32(b, s.Rate)
	b = be32(b, s.Pool)
	b = be32(b, s.Drops)
	b = be32(b, s.Input)
	b = be32(b, s.Output)
	n := uint32(0)
	if s.HasHeader {
		n++
	}
	if s.HasSwitch {
		n++
	}
	b = be32(b, n)
	if s.HasHeader {
		b = be32(b, RecordRawHeader)
		var rl int
		b, rl = reserve(b)
		b = be32(b, s.Protocol)
		b = be32(b, s.Frame)
		b = be32(b, s.Stripped)
		b = be32(b, uint32(len(s.Packet)))
		b = append(b, s.Packet...)
		for i := len(s.Packet); i%4 != 0; i++ {
			b = append(b, 0) // opaque data is padded to 4 bytes
		}
		b = fill(b, rl)
	}
	if s.HasSwitch {
		b = be32(b, RecordExtSwitch)
		b = be32(b, 16)
		b = be32(b, s.SrcVLAN)
		b = be32(b, s.SrcPriority)
		b = be32(b, s.DstVLAN)
		b = be32(b, s.DstPrio)
	}
	return fill(b, lenAt)
}

// AppendCounterSample appends s as a compact counter sample.
func AppendCounterSample(b []byte, s *CounterSample) []byte {
	b = be32(b, FormatCounterSample)
	b, lenAt := reserve(b)
	b = be32(b, s.Seq)
	b = be32(b, s.SourceID)
	if !s.HasGeneric {
		b = be32(b, 0)
		return fill(b, lenAt)
	}
	b = be32(b, 1)
	g := &s.Generic
	b = be32(b, RecordGenericIf)
	b = be32(b, genericIfLen)
	b = be32(b, g.Index)
	b = be32(b, g.Type)
	b = be64(b, g.Speed)
	b = be32(b, g.Direction)
	b = be32(b, g.Status)
	b = be64(b, g.InOctets)
	for _, v := range [...]uint32{g.InUcast, g.InMcast, g.InBcast, g.InDiscards, g.InErrors, g.InUnknown} {
		b = be32(b, v)
	}
	b = be64(b, g.OutOctets)
	for _, v := range [...]uint32{g.OutUcast, g.OutMcast, g.OutBcast, g.OutDiscards, g.OutErrors, g.Promiscuous} {
		b = be32(b, v)
	}
	return fill(b, lenAt)
}

// reserve appends a length word to fill in later: it returns where the
// data after it starts.
func reserve(b []byte) ([]byte, int) { return append(b, 0, 0, 0, 0), len(b) + 4 }

func fill(b []byte, start int) []byte {
	binary.BigEndian.PutUint32(b[start-4:], uint32(len(b)-start))
	return b
}

// Datagram is a decoded datagram. Packet slices alias the decoded bytes.
type Datagram struct {
	Header
	Flows    []FlowSample
	Counters []CounterSample
	// Other counts samples of formats the decoder does not read.
	Other int
}

// ErrShort is returned (wrapped) for a datagram that ends early.
var ErrShort = errors.New("sflow: datagram truncated")

type reader struct {
	b   []byte
	err error
}

func (r *reader) u32() uint32 {
	if r.err != nil || len(r.b) < 4 {
		r.err = ErrShort
		return 0
	}
	v := binary.BigEndian.Uint32(r.b)
	r.b = r.b[4:]
	return v
}

func (r *reader) u64() uint64 { return uint64(r.u32())<<32 | uint64(r.u32()) }

func (r *reader) bytes(n uint32) []byte {
	if r.err != nil || uint64(len(r.b)) < uint64(n) {
		r.err = ErrShort
		return nil
	}
	v := r.b[:n:n]
	r.b = r.b[n:]
	return v
}

// Decode reads one datagram.
func Decode(b []byte) (*Datagram, error) {
	r := &reader{b: b}
	if v := r.u32(); r.err == nil && v != Version {
		return nil, fmt.Errorf("sflow: version %d, want %d", v, Version)
	}
	d := &Datagram{}
	switch t := r.u32(); t {
	case addrIPv4:
		if a := r.bytes(4); a != nil {
			d.Agent = netip.AddrFrom4([4]byte(a))
		}
	case addrIPv6:
		if a := r.bytes(16); a != nil {
			d.Agent = netip.AddrFrom16([16]byte(a))
		}
	default:
		if r.err != nil {
			return nil, r.err
		}
		return nil, fmt.Errorf("sflow: agent address type %d", t)
	}
	if r.err != nil {
		return nil, r.err
	}
	d.SubAgentID, d.Seq, d.Uptime, d.NSamples = r.u32(), r.u32(), r.u32(), r.u32()
	if r.err != nil {
		return nil, r.err
	}
	for i := uint32(0); i < d.NSamples; i++ {
		tag := r.u32()
		body := &reader{b: r.bytes(r.u32())}
		if r.err != nil {
			return nil, fmt.Errorf("sample %d: %w", i, r.err)
		}
		switch tag {
		case FormatFlowSample:
			s, err := decodeFlow(body)
			if err != nil {
				return nil, fmt.Errorf("flow sample %d: %w", i, err)
			}
			d.Flows = append(d.Flows, s)
		case FormatCounterSample:
			s, err := decodeCounter(body)
			if err != nil {
				return nil, fmt.Errorf("counter sample %d: %w", i, err)
			}
			d.Counters = append(d.Counters, s)
		default:
			d.Other++
		}
	}
	return d, nil
}

func decodeFlow(r *reader) (FlowSample, error) {
	var s FlowSample
	s.Seq, s.SourceID, s.Rate, s.Pool, s.Drops, s.Input, s.Output = r.u32(), r.u32(), r.u32(), r.u32(), r.u32(), r.u32(), r.u32()
	n := r.u32()
	for i := uint32(0); i < n && r.err == nil; i++ {
		tag := r.u32()
		rec := &reader{b: r.bytes(r.u32())}
		if r.err != nil {
			break
		}
		switch tag {
		case RecordRawHeader:
			s.HasHeader = true
			s.Protocol, s.Frame, s.Stripped = rec.u32(), rec.u32(), rec.u32()
			s.Packet = rec.bytes(rec.u32())
			if rec.err != nil {
				return s, fmt.Errorf("raw header: %w", rec.err)
			}
		case RecordExtSwitch:
			s.HasSwitch = true
			s.SrcVLAN, s.SrcPriority, s.DstVLAN, s.DstPrio = rec.u32(), rec.u32(), rec.u32(), rec.u32()
			if rec.err != nil {
				return s, fmt.Errorf("extended switch: %w", rec.err)
			}
		}
	}
	return s, r.err
}

func decodeCounter(r *reader) (CounterSample, error) {
	var s CounterSample
	s.Seq, s.SourceID = r.u32(), r.u32()
	n := r.u32()
	for i := uint32(0); i < n && r.err == nil; i++ {
		tag := r.u32()
		rec := &reader{b: r.bytes(r.u32())}
		if r.err != nil {
			break
		}
		if tag != RecordGenericIf {
			continue
		}
		g := &s.Generic
		s.HasGeneric = true
		g.Index, g.Type, g.Speed, g.Direction, g.Status = rec.u32(), rec.u32(), rec.u64(), rec.u32(), rec.u32()
		g.InOctets = rec.u64()
		g.InUcast, g.InMcast, g.InBcast, g.InDiscards, g.InErrors, g.InUnknown = rec.u32(), rec.u32(), rec.u32(), rec.u32(), rec.u32(), rec.u32()
		g.OutOctets = rec.u64()
		g.OutUcast, g.OutMcast, g.OutBcast, g.OutDiscards, g.OutErrors, g.Promiscuous = rec.u32(), rec.u32(), rec.u32(), rec.u32(), rec.u32(), rec.u32()
		if rec.err != nil {
			return s, fmt.Errorf("generic interface counters: %w", rec.err)
		}
	}
	return s, r.err
}
