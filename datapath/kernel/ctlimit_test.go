package kernel

import (
	"encoding/binary"
	"errors"
	"testing"

	"github.com/govswitch/govswitch/datapath"
	"github.com/govswitch/govswitch/netlinkio"
	"golang.org/x/sys/unix"
)

// ctLimitReply builds an OVS_CT_LIMIT_CMD_GET reply as Linux 6.1 writes
// it: the ovs_header, then one ZONE_LIMIT attribute of ovs_zone_limit
// entries.
func ctLimitReply(entries ...[3]int64) []byte {
	b := binary.NativeEndian.AppendUint32(nil, 7)
	b, at := netlinkio.BeginNested(b, ctLimitAttrZoneLimit)
	for _, e := range entries {
		b = binary.NativeEndian.AppendUint32(b, uint32(int32(e[0])))
		b = binary.NativeEndian.AppendUint32(b, uint32(e[1]))
		b = binary.NativeEndian.AppendUint32(b, uint32(e[2]))
	}
	return netlinkio.EndNested(b, at)
}

func TestParseCTLimits(t *testing.T) {
	def, zones, err := parseCTLimits(ctLimitReply([3]int64{-1, 10, 0}, [3]int64{0, 5, 5}, [3]int64{3, 3, 1}))
	if err != nil {
		t.Fatal(err)
	}
	want := []datapath.ZoneLimit{{Zone: 0, Limit: 5, Count: 5}, {Zone: 3, Limit: 3, Count: 1}}
	if def != 10 || len(zones) != 2 || zones[0] != want[0] || zones[1] != want[1] {
		t.Errorf("got default %d, zones %+v; want 10, %+v", def, zones, want)
	}
	for name, b := range map[string][]byte{
		"short":          {1, 2},
		"no default":     ctLimitReply([3]int64{1, 5, 0}),
		"partial entry":  ctLimitReply([3]int64{-1, 10, 0})[:len(ctLimitReply([3]int64{-1, 10, 0}))-4],
		"zone too large": ctLimitReply([3]int64{-1, 10, 0}, [3]int64{70000, 1, 0}),
	} {
		if _, _, err := parseCTLimits(b); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
	// A truncated attribute is the attribute walker's error, still EBADMSG-ish, never a panic.
	if _, _, err := parseCTLimits(ctLimitReply([3]int64{-1, 1, 0})[:9]); err == nil || errors.Is(err, unix.ENOENT) {
		t.Errorf("truncated attribute: %v", err)
	}
}

func FuzzParseCTLimits(f *testing.F) {
	f.Add(ctLimitReply([3]int64{-1, 10, 0}, [3]int64{0, 5, 5}))
	f.Add(ctLimitReply())
	f.Add([]byte{0, 0, 0, 0, 4, 0, 1, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		def, zones, err := parseCTLimits(b)
		if err != nil && (def != 0 || zones != nil) {
			t.Fatalf("error %v with results %d %v", err, def, zones)
		}
	})
}
