package openflow

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestTshark11 shows our 1.1 and 1.2 messages (ovs-ofctl's recorded ones
// re-encoded, the golden ones, and the replies the fake switch sends) to
// tshark. Wireshark
// has no 1.1 or 1.2 dissector: it reads the common header (version,
// type, length, xid) and leaves the body undissected. So the check is what
// it can be: every frame is one OpenFlow message of the right version to
// tshark, framed by its length, and none is marked malformed.
func TestTshark11(t *testing.T) {
	if _, err := exec.LookPath("tshark"); err != nil {
		t.Skip("tshark not installed")
	}
	var raws [][]byte
	for _, c := range ofctl11Captures {
		for _, raw := range readCapture(t, c.name) {
			m, err := Decode(raw)
			if err != nil {
				t.Fatal(err)
			}
			raws = append(raws, mustAppend(t, m))
		}
	}
	for _, c := range golden11() {
		raws = append(raws, mustAppend(t, c.msg))
	}
	s := &fakeSwitch{flows: dumpFlows11()}
	for _, v := range []uint8{Version11, Version12} {
		env := Envelope{Version: v, Xid: 7}
		for _, req := range []Msg{&FeaturesRequest{Envelope: env}, &TableStatsRequest{Envelope: env},
			&FlowStatsRequest{Envelope: env, TableID: TableAll, OutPort: PortAny, OutGroup: GroupAny},
			&PortStatsRequest{Envelope: env, PortNo: PortAny}, &PortDescRequest{Envelope: env}} {
			raws = append(raws, mustAppend(t, s.answer(req)))
		}
	}
	path := filepath.Join(t.TempDir(), "openflow11.pcap")
	writePcap(t, path, raws)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, "tshark", "-r", path, "-T", "fields", "-E", "separator=;",
		"-e", "frame.number", "-e", "openflow.version", "-e", "_ws.malformed", "-e", "_ws.expert.severity").Output()
	if err != nil {
		t.Fatalf("tshark: %v", err)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) != len(raws) {
		t.Fatalf("tshark read %d frames, wrote %d", len(lines), len(raws))
	}
	for i, line := range lines {
		f := strings.Split(line, ";")
		if len(f) != 4 {
			t.Fatalf("frame %d: odd tshark line %q", i+1, line)
		}
		// One version value: tshark framed exactly one message, by the
		// header's length, in the segment.
		if want := fmt.Sprintf("0x%02x", raws[i][0]); f[1] != want {
			t.Errorf("frame %d (%s): tshark saw version %q, want one message of %s", i+1, describe(raws[i]), f[1], want)
		}
		if f[2] != "" || strings.Contains(f[3], fmt.Sprint(severityError)) {
			t.Errorf("frame %d (%s): tshark marks it malformed or in error: %q", i+1, describe(raws[i]), line)
		}
	}
}
