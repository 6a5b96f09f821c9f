package sflow

import (
	"bytes"
	"encoding/hex"
	"net/netip"
	"reflect"
	"strings"
	"testing"
)

func sampleDatagram() []byte {
	h := Header{Agent: netip.MustParseAddr("10.0.0.1"), SubAgentID: 0, Seq: 7, Uptime: 1234, NSamples: 2}
	b := AppendHeader(nil, &h)
	b = AppendFlowSample(b, &FlowSample{Seq: 1, SourceID: SourceID(2, 1000), Rate: 400, Pool: 400, Input: 5,
		Output: 6, HasHeader: true, Protocol: HeaderEthernet, Frame: 64, Stripped: 4,
		Packet: []byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14}, HasSwitch: true, SrcVLAN: 10, DstVLAN: 20, DstPrio: 3})
	return AppendCounterSample(b, &CounterSample{Seq: 2, SourceID: 5, HasGeneric: true,
		Generic: IfCounters{Index: 5, Type: 6, Direction: 1, Status: 3, InOctets: 1 << 33, InUcast: 9, OutOctets: 77, OutUcast: 8}})
}

func unhex(s string) []byte {
	var keep strings.Builder
	for _, l := range strings.Split(s, "\n") {
		if i := strings.Index(l, "#"); i >= 0 {
			l = l[:i]
		}
		keep.WriteString(strings.Join(strings.Fields(l), ""))
	}
	b, err := hex.DecodeString(keep.String())
	if err != nil {
		panic(err)
	}
	return b
}

// TestEncodeWire: the bytes of a datagram, field by field, as sFlow v5
// lays them out.
func TestEncodeWire(t *testing.T) {
	want := unhex(`
		00000005 # version
		00000001 0a000001 # agent IPv4 10.0.0.1
		00000000 # sub-agent id
		00000007 # sequence
		000004d2 # uptime 1234 ms
		00000002 # samples
		00000001 00000060 # flow sample, 96 bytes
		00000001 # sequence
		020003e8 # source: class 2 (physical entity), index 1000
		00000190 00000190 00000000 # rate 400, pool 400, drops
		00000005 00000006 # input, output
		00000002 # records
		00000001 00000020 # raw packet header, 32 bytes
		00000001 00000040 00000004 0000000e # ethernet, frame 64, stripped 4, 14 bytes
		0102030405060708090a0b0c0d0e0000 # header, padded to 4
		000003e9 00000010 # extended switch, 16 bytes
		0000000a 00000000 00000014 00000003 # src vlan 10 pcp 0, dst vlan 20 pcp 3
		00000002 0000006c # counter sample, 108 bytes
		00000002 00000005 00000001 # sequence, source ifIndex 5, records
		00000001 00000058 # generic interface counters, 88 bytes
		00000005 00000006 0000000000000000 00000001 00000003 # index, type, speed, direction, status
		0000000200000000 00000009 00000000 00000000 00000000 00000000 00000000 # in
		000000000000004d 00000008 00000000 00000000 00000000 00000000 00000000 # out, promiscuous
	`)
	got := sampleDatagram()
	if !bytes.Equal(got, want) {
		t.Errorf("datagram\n got %x\nwant %x", got, want)
	}
}

func TestRoundTrip(t *testing.T) {
	d, err := Decode(sampleDatagram())
	if err != nil {
		t.Fatal(err)
	}
	if d.Agent != netip.MustParseAddr("10.0.0.1") || d.Seq != 7 || len(d.Flows) != 1 || len(d.Counters) != 1 {
		t.Fatalf("%+v", d)
	}
	f := d.Flows[0]
	if f.Rate != 400 || f.Frame != 64 || len(f.Packet) != 14 || f.DstVLAN != 20 || f.DstPrio != 3 || !f.HasSwitch {
		t.Errorf("flow sample %+v", f)
	}
	want := IfCounters{Index: 5, Type: 6, Direction: 1, Status: 3, InOctets: 1 << 33, InUcast: 9, OutOctets: 77, OutUcast: 8}
	if !reflect.DeepEqual(d.Counters[0].Generic, want) {
		t.Errorf("counters %+v", d.Counters[0].Generic)
	}
}

func TestDecodeTruncated(t *testing.T) {
	b := sampleDatagram()
	for n := 0; n < len(b); n++ {
		if _, err := Decode(b[:n]); err == nil {
			t.Errorf("%d of %d bytes decoded without error", n, len(b))
		}
	}
}

func FuzzDecode(f *testing.F) {
	f.Add(sampleDatagram())
	h := Header{Agent: netip.MustParseAddr("2001:db8::1"), NSamples: 0}
	f.Add(AppendHeader(nil, &h))
	f.Fuzz(func(t *testing.T, b []byte) {
		d, err := Decode(b)
		if err != nil {
			return
		}
		// What decodes re-encodes to a datagram that decodes the same.
		e := AppendHeader(nil, &Header{Agent: d.Agent, SubAgentID: d.SubAgentID, Seq: d.Seq, Uptime: d.Uptime,
			NSamples: uint32(len(d.Flows) + len(d.Counters))})
		for i := range d.Flows {
			e = AppendFlowSample(e, &d.Flows[i])
		}
		for i := range d.Counters {
			e = AppendCounterSample(e, &d.Counters[i])
		}
		d2, err := Decode(e)
		if err != nil {
			t.Fatalf("re-encoded datagram: %v", err)
		}
		if len(d2.Flows) != len(d.Flows) || len(d2.Counters) != len(d.Counters) {
			t.Fatalf("re-encoded %d/%d samples, had %d/%d", len(d2.Flows), len(d2.Counters), len(d.Flows), len(d.Counters))
		}
	})
}
