package kernel

import (
	"encoding/binary"
	"testing"

	"github.com/govswitch/govswitch/netlinkio"
)

// meterReply builds a reply of the ovs_meter family as Linux 6.1 writes
// it: ovs_header, then attributes.
func meterFeaturesReply() []byte {
	b := binary.NativeEndian.AppendUint32(nil, 7)
	b = netlinkio.AppendU32(b, meterAttrMaxMeters, 200000)
	b = netlinkio.AppendU32(b, meterAttrMaxBands, 1)
	b, bands := netlinkio.BeginNested(b, meterAttrBands)
	b, band := netlinkio.BeginNested(b, 0)
	b = netlinkio.AppendU32(b, bandAttrType, meterBandTypeDrop)
	b = netlinkio.EndNested(b, band)
	return netlinkio.EndNested(b, bands)
}

func flowStats(p, by uint64) []byte {
	return binary.NativeEndian.AppendUint64(binary.NativeEndian.AppendUint64(nil, p), by)
}

func meterStatsReply(id uint32) []byte {
	b := binary.NativeEndian.AppendUint32(nil, 7)
	b = netlinkio.AppendU32(b, meterAttrID, id)
	b = netlinkio.AppendAttr(b, meterAttrStats, flowStats(200, 8400))
	b, bands := netlinkio.BeginNested(b, meterAttrBands)
	b, band := netlinkio.BeginNested(b, 0)
	b = netlinkio.AppendAttr(b, bandAttrStats, flowStats(172, 7224))
	b = netlinkio.EndNested(b, band)
	return netlinkio.EndNested(b, bands)
}

func TestParseMeterReplies(t *testing.T) {
	f, err := parseMeterFeatures(meterFeaturesReply())
	if err != nil || f.MaxMeters != 200000 || f.MaxBands != 1 || !f.DropBand {
		t.Errorf("features %+v, %v", f, err)
	}
	st, err := parseMeterStats(meterStatsReply(3), 3)
	if err != nil || st.Packets != 200 || st.Bytes != 8400 || len(st.Bands) != 1 || st.Bands[0].Packets != 172 {
		t.Errorf("stats %+v, %v", st, err)
	}
	if _, err := parseMeterStats(meterStatsReply(4), 3); err == nil {
		t.Error("a reply for another meter was taken")
	}
	if _, err := parseMeterStats(meterStatsReply(3)[:4], 3); err == nil {
		t.Error("a reply without an id was taken")
	}
}

// FuzzParseMeterReply: replies of the kernel's meter family never panic
// the parsers.
func FuzzParseMeterReply(f *testing.F) {
	f.Add(meterFeaturesReply())
	f.Add(meterStatsReply(3))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		parseMeterFeatures(b)
		if st, err := parseMeterStats(b, 3); err == nil && len(st.Bands) > len(b) {
			t.Fatalf("%d bands from %d bytes", len(st.Bands), len(b))
		}
	})
}
