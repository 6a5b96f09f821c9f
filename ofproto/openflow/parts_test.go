package openflow

import (
	"bytes"
	"errors"
	"testing"

	"github.com/govswitch/govswitch/flow"
)

func manyFlows(n int) []FlowStats {
	out := make([]FlowStats, n)
	for i := range out {
		s := &out[i]
		s.Priority, s.Cookie = uint16(i), uint64(i)
		s.Match = ethTypeMatch(flow.EthTypeIPv4)
		s.Match.Key.IPv4Dst, s.Match.Mask.IPv4Dst = [4]byte{10, 0, byte(i >> 8), byte(i)}, exactIPv4()
		s.Instructions.Apply = []Action{Output(uint32(i%48+1), 0)}
	}
	return out
}

// TestAppendParts: a reply too big for one message splits into parts of at
// most the limit, all but the last flagged REPLY_MORE, that decode back to
// the same entries in order.
func TestAppendParts(t *testing.T) {
	flows := manyFlows(3000)
	for _, tc := range []struct {
		name   string
		env    Envelope
		nxm    bool
		maxLen int
		parts  int // at least
	}{
		{"NX, default limit", env10(7), true, 0, 2},
		{"1.0, default limit", env10(7), false, 0, 3},
		{"1.3, default limit", env13(7), false, 0, 2},
		{"1.3, 1000-byte parts", env13(7), false, 1000, 300},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := &FlowStatsReply{Envelope: tc.env, NXM: tc.nxm, Stats: flows}
			if _, err := m.Append(nil); !errors.Is(err, ErrTooLong) {
				t.Fatalf("unsplit Append of %d flows: %v, want ErrTooLong", len(flows), err)
			}
			b, err := m.AppendParts([]byte{0xee}, tc.maxLen)
			if err != nil {
				t.Fatal(err)
			}
			if b[0] != 0xee {
				t.Fatal("AppendParts overwrote the caller's prefix")
			}
			limit := tc.maxLen
			if limit == 0 {
				limit = MaxMessageLen
			}
			f := NewFramer(0)
			r := bytes.NewReader(b[1:])
			var got []FlowStats
			parts := 0
			for {
				raw, err := f.ReadMsg(r)
				if err != nil {
					break
				}
				parts++
				if len(raw) > limit {
					t.Fatalf("part %d is %d bytes, limit %d", parts, len(raw), limit)
				}
				dm, err := Decode(raw)
				if err != nil {
					t.Fatalf("part %d: %v", parts, err)
				}
				p := dm.(*FlowStatsReply)
				if p.Xid != 7 || p.NXM != tc.nxm {
					t.Fatalf("part %d: %+v", parts, p.Envelope)
				}
				got = append(got, p.Stats...)
				more := p.Flags&StatsReplyMore != 0
				if last := len(got) == len(flows); more == last {
					t.Fatalf("part %d: REPLY_MORE=%v with %d of %d entries", parts, more, len(got), len(flows))
				}
			}
			if parts < tc.parts || len(got) != len(flows) {
				t.Fatalf("%d parts, %d entries", parts, len(got))
			}
			for i := range got {
				if got[i].Cookie != uint64(i) || got[i].Match != flows[i].Match {
					t.Fatalf("entry %d out of order or changed: %+v", i, got[i])
				}
			}
		})
	}
	// 254 tables with a few hundred bytes of properties each overflow one
	// message, as a real switch's do.
	tf := &TableFeaturesReply{Envelope: env13(2)}
	for i := 0; i < 254; i++ {
		tf.Tables = append(tf.Tables, TableFeatures{TableID: uint8(i), Name: "t", MaxEntries: 1 << 20,
			Properties: []TableFeatureProp{{Type: TFPMatch, Data: AppendOXMHeaders(nil, FieldInPort, FieldEthSrc,
				FieldEthDst, FieldEthType, FieldVLANVID, FieldIPv4Src, FieldIPv4Dst, FieldIPv6Src, FieldIPv6Dst,
				FieldIPProto, FieldTCPSrc, FieldTCPDst, FieldUDPSrc, FieldUDPDst, FieldICMPv4Type, FieldICMPv6Type,
				FieldARPOp, FieldARPSPA, FieldARPTPA, FieldTunnelID, FieldMetadata, FieldNDTarget)},
				{Type: TFPWildcards, Data: AppendOXMHeaders(nil, FieldIPv4Src, FieldIPv4Dst, FieldIPv6Src, FieldIPv6Dst,
					FieldMetadata, FieldEthSrc, FieldEthDst, FieldVLANVID, FieldTunnelID, FieldARPSPA, FieldARPTPA)},
				{Type: TFPApplySetField, Data: AppendOXMHeaders(nil, FieldEthSrc, FieldEthDst, FieldVLANVID, FieldIPv4Src,
					FieldIPv4Dst, FieldIPv6Src, FieldIPv6Dst, FieldTCPSrc, FieldTCPDst, FieldUDPSrc, FieldUDPDst)},
				{Type: TFPWriteSetField, Data: AppendOXMHeaders(nil, FieldEthSrc, FieldEthDst, FieldVLANVID, FieldIPv4Src,
					FieldIPv4Dst, FieldIPv6Src, FieldIPv6Dst, FieldTCPSrc, FieldTCPDst, FieldUDPSrc, FieldUDPDst)}}})
	}
	if _, err := tf.Append(nil); !errors.Is(err, ErrTooLong) {
		t.Fatalf("254 tables in one message: %v", err)
	}
	tb, err := tf.AppendParts(nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var tables, parts int
	for f, r := NewFramer(0), bytes.NewReader(tb); ; {
		raw, err := f.ReadMsg(r)
		if err != nil {
			break
		}
		dm, err := Decode(raw)
		if err != nil {
			t.Fatal(err)
		}
		parts++
		tables += len(dm.(*TableFeaturesReply).Tables)
	}
	if parts < 2 || tables != 254 {
		t.Fatalf("table features: %d parts, %d tables", parts, tables)
	}

	one := &PortDescReply{Envelope: env13(1), Ports: []Port{port13()}}
	if _, err := one.AppendParts(nil, 80); err != nil {
		t.Fatalf("a part exactly at the limit: %v", err)
	}
	if b, err := one.AppendParts([]byte{1}, 79); !errors.Is(err, ErrTooLong) || len(b) != 1 {
		t.Fatalf("an entry that cannot fit: %v, % x", err, b)
	}
	// Zero allocations, split or not.
	m := &FlowStatsReply{Envelope: env10(1), NXM: true, Stats: flows}
	buf := make([]byte, 0, 1<<20)
	if n := testing.AllocsPerRun(10, func() { m.AppendParts(buf[:0], 0) }); n != 0 {
		t.Fatalf("%v allocations", n)
	}
}
