package openflow

import (
	"bufio"
	"bytes"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// vswitchdLine is one message of a session between ovs-ofctl 3.1 and
// ovs-vswitchd 3.1, recorded by a proxy between the two: what ovs-ofctl
// sent (fromOfctl) or what ovs-vswitchd answered.
type vswitchdLine struct {
	cmd       string
	fromOfctl bool
	raw       []byte
}

func readVswitchdCapture(t *testing.T, name string) []vswitchdLine {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", "ovs-vswitchd", name+".hex"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []vswitchdLine
	cmd := ""
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		switch {
		case line == "":
		case strings.HasPrefix(line, "##"):
			cmd = strings.TrimSpace(line[2:])
		case line[0] == '>' || line[0] == '<':
			b, err := hex.DecodeString(strings.TrimSpace(line[1:]))
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, vswitchdLine{cmd: cmd, fromOfctl: line[0] == '>', raw: b})
		}
	}
	return out
}

// TestVswitchdGroupMeterCaptures decodes every group and meter message
// of a recorded ovs-ofctl/ovs-vswitchd session, requests and replies, and
// re-encodes each: the encoder must reproduce the bytes of OVS exactly.
func TestVswitchdGroupMeterCaptures(t *testing.T) {
	lines := readVswitchdCapture(t, "groups-meters")
	if len(lines) < 40 {
		t.Fatalf("%d messages in the capture", len(lines))
	}
	seen := map[string]int{}
	for _, l := range lines {
		m, err := Decode(l.raw)
		if err != nil {
			t.Errorf("%s: decode % x: %v", l.cmd, l.raw, err)
			continue
		}
		seen[strings.TrimPrefix(fmt.Sprintf("%T", m), "*openflow.")]++
		out, err := m.Append(nil)
		if err != nil {
			t.Errorf("%s: re-encode %T: %v", l.cmd, m, err)
			continue
		}
		if !bytes.Equal(out, l.raw) {
			t.Errorf("%s: %T re-encodes differently:\n got % x\nwant % x", l.cmd, m, out, l.raw)
		}
	}
	for _, want := range []string{"GroupMod", "GroupDescRequest", "GroupDescReply", "GroupStatsRequest",
		"GroupStatsReply", "GroupFeaturesRequest", "GroupFeaturesReply", "MeterMod", "MeterStatsRequest",
		"MeterStatsReply", "MeterConfigRequest", "MeterConfigReply", "MeterFeaturesRequest", "MeterFeaturesReply"} {
		if seen[want] == 0 {
			t.Errorf("no %s in the capture (saw %v)", want, seen)
		}
	}
}
