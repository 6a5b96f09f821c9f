package openflow

import (
	"bytes"
	"os"
	"os/exec"
	"testing"
)

// ctrlCaptures are the ovs-ofctl sessions behind the controller-feature
// codec (controller/controller2/note actions, packet-in formats, flow
// monitors), recorded as TestOvsOfctl records its own.
var ctrlCaptures = []capture{
	{"ctrl-actions-of13", []string{"-O", "OpenFlow13", "add-flow", "SW",
		"actions=controller(reason=no_match,max_len=100,id=5,userdata=01.02.03,pause,meter_id=3),note:01.02.03.04.05," +
			"controller(id=3,max_len=50),controller(userdata=aa),controller(pause),controller:70"}},
	{"ctrl-actions-of10", []string{"add-flow", "SW",
		"actions=controller(userdata=01.02.03.04.05.06.07.08.09),note:aa.bb,controller(reason=invalid_ttl,id=1)"}},
}

// TestOvsOfctlCtrlCaptures records (OFCTL_RECORD=1) or checks the
// controller-feature captures: every message decodes and re-encodes to
// ovs-ofctl's own bytes.
func TestOvsOfctlCtrlCaptures(t *testing.T) {
	if os.Getenv("OFCTL_RECORD") == "1" {
		if _, err := exec.LookPath("ovs-ofctl"); err != nil {
			t.Skip("ovs-ofctl not installed")
		}
		s := newFakeSwitch(t)
		for _, c := range ctrlCaptures {
			s.ofctl(t, c.args...)
			raw, _ := s.take(t)
			writeCapture(t, c, raw)
		}
	}
	for _, c := range ctrlCaptures {
		t.Run(c.name, func(t *testing.T) {
			for i, raw := range readCapture(t, c.name) {
				m, err := Decode(raw)
				if err != nil {
					t.Fatalf("message %d (% x): %v", i, raw, err)
				}
				out, err := m.Append(nil)
				if err != nil {
					t.Fatalf("message %d (%T): re-encode: %v", i, m, err)
				}
				if !bytes.Equal(out, raw) {
					t.Errorf("message %d (%T) re-encodes differently:\n got % x\nwant % x", i, m, out, raw)
				}
			}
		})
	}
}
