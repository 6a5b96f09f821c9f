package openflow

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// TestTsharkGroupsMeters: tshark dissects every group and meter message
// of the ovs-vswitchd session (which this codec reproduces byte for byte,
// TestVswitchdGroupMeterCaptures) without a malformed or error mark,
// except 1.5 buckets: tshark 4.0 reads an ofp15_bucket as 1.1's (weight,
// watch_port, watch_group fields) and throws, on ovs-vswitchd's own bytes
// as on ours, so 1.5 group mods and group descriptions are excused.
func TestTsharkGroupsMeters(t *testing.T) {
	if _, err := exec.LookPath("tshark"); err != nil {
		t.Skip("tshark not installed")
	}
	var raws [][]byte
	var cmds []string
	for _, l := range readVswitchdCapture(t, "groups-meters") {
		m, err := Decode(l.raw)
		if err != nil {
			t.Fatal(err)
		}
		switch m.(type) {
		case *GroupMod, *GroupStatsRequest, *GroupStatsReply, *GroupDescRequest, *GroupDescReply,
			*GroupFeaturesRequest, *GroupFeaturesReply, *MeterMod, *MeterStatsRequest, *MeterStatsReply,
			*MeterConfigRequest, *MeterConfigReply, *MeterFeaturesRequest, *MeterFeaturesReply:
			out, err := m.Append(nil)
			if err != nil {
				t.Fatal(err)
			}
			raws = append(raws, out)
			cmds = append(cmds, fmt.Sprintf("%T (%s)", m, l.cmd))
		}
	}
	path := filepath.Join(t.TempDir(), "groups.pcap")
	writePcap(t, path, raws)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	full, err := exec.CommandContext(ctx, "tshark", "-r", path, "-V").Output()
	if err != nil {
		t.Fatalf("tshark -V: %v", err)
	}
	frames := bytes.Split(full, []byte("\nFrame "))
	if len(frames) != len(raws) {
		t.Fatalf("tshark -V printed %d frames, want %d", len(frames), len(raws))
	}
	for i, fr := range frames {
		if r := raws[i]; r[0] == Version15 && (r[1] == Type13GroupMod || r[1] == Type13MultipartReply && u16(r[8:]) == StatsGroupDesc) {
			continue
		}
		for _, bad := range [][]byte{[]byte("Malformed"), []byte("Expert Info (Error")} {
			if bytes.Contains(fr, bad) {
				t.Errorf("frame %d, %s: tshark marks it %s:\n%s", i+1, cmds[i], bad, fr)
			}
		}
	}
}
