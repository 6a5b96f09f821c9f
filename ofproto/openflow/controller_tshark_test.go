package openflow

import (
	"bytes"
	"context"
	"encoding/hex"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// TestTsharkCtrl: tshark reads the controller-feature messages (packet-in2,
// resume, flow monitor requests, replies, cancel and flow control, and
// flow mods with controller2 and note actions) with no malformed-packet or
// error marks. tshark dissects Nicira messages only as experimenter
// messages, which is still a check of their framing.
func TestTsharkCtrl(t *testing.T) {
	if _, err := exec.LookPath("tshark"); err != nil {
		t.Skip("tshark not installed")
	}
	raws := append(ctrlFuzzSeeds()[:2:2], monitorFuzzSeeds()...)
	raws = append(raws, ctrlFuzzSeeds()[3])
	for _, c := range ctrlCaptures {
		for _, raw := range readCapture(t, c.name) {
			if raw[1] == TypeFlowMod {
				raws = append(raws, raw)
			}
		}
	}
	// tshark 4.0 marks every OpenFlow 1.3 experimenter multipart reply
	// malformed, even a bare ofp_multipart_reply with an experimenter
	// header and no body (this control, last); ONFST_FLOW_MONITOR replies
	// are such replies, excused while the control is marked too.
	control, _ := hex.DecodeString("04130018" + "00000003" + "ffff0000" + "00000000" + "4f4e4600" + "000007ff")
	raws = append(raws, control)
	isExpReply13 := func(r []byte) bool {
		return r[0] == Version13 && r[1] == Type13MultipartReply && u16(r[8:]) == StatsVendor
	}
	path := filepath.Join(t.TempDir(), "ctrl.pcap")
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
	controlBad := bytes.Contains(frames[len(frames)-1], []byte("Malformed"))
	if !controlBad {
		t.Log("tshark no longer marks a bare 1.3 experimenter multipart reply; the exemption can go")
	}
	for i, fr := range frames[:len(frames)-1] {
		if !bytes.Contains(fr, []byte("OpenFlow")) {
			t.Errorf("frame %d (%s): not dissected as OpenFlow", i+1, describe(raws[i]))
		}
		if controlBad && isExpReply13(raws[i]) {
			continue
		}
		for _, bad := range [][]byte{[]byte("Malformed"), []byte("Expert Info (Error")} {
			if j := bytes.Index(fr, bad); j >= 0 {
				t.Errorf("frame %d (%s): tshark marks it:\n%s", i+1, describe(raws[i]), context3(fr, j))
			}
		}
	}
}
