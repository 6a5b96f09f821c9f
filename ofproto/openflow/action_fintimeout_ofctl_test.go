package openflow

import (
	"bytes"
	"errors"
	"os/exec"
	"strings"
	"testing"
)

// finTimeoutCaptures are the ovs-ofctl 3.1 sessions behind the
// fin_timeout codec and learn's fin timeouts, recorded as TestOvsOfctl
// records its own (OFCTL_RECORD=1).
var finTimeoutCaptures = []capture{
	{"fin-timeout-of10", []string{"add-flow", "SW",
		"tcp,actions=fin_timeout(idle_timeout=1),fin_timeout(hard_timeout=65535),fin_timeout(idle_timeout=10,hard_timeout=20),fin_timeout(),output:2"}},
	{"fin-timeout-of13", []string{"-O", "OpenFlow13", "add-flow", "SW",
		"tcp6,actions=fin_timeout(hard_timeout=3,idle_timeout=2),output:1"}},
	{"fin-timeout-learn-of13", []string{"-O", "OpenFlow13", "add-flow", "SW",
		"tcp,actions=learn(table=1,idle_timeout=60,fin_idle_timeout=1,fin_hard_timeout=7,eth_type=0x800,nw_proto=6,NXM_OF_IP_SRC[],NXM_OF_TCP_SRC[],output:NXM_OF_IN_PORT[]),output:2"}},
}

// TestOvsOfctlFinTimeoutCaptures records (OFCTL_RECORD=1) or checks the
// captures: every message decodes and re-encodes to ovs-ofctl's bytes.
func TestOvsOfctlFinTimeoutCaptures(t *testing.T) {
	recordOrCheckCaptures(t, finTimeoutCaptures)
}

// TestFinTimeoutCaptureMeaning checks what the recorded actions decode
// to, and that the same actions built here encode to ovs-ofctl's bytes.
func TestFinTimeoutCaptureMeaning(t *testing.T) {
	for _, tc := range []struct {
		name string
		want []Action
	}{
		{"fin-timeout-of10", []Action{FinTimeout(1, 0), FinTimeout(0, 65535), FinTimeout(10, 20), FinTimeout(0, 0), Output(2, 0)}},
		{"fin-timeout-of13", []Action{FinTimeout(2, 3), Output(1, 0)}},
	} {
		fm, raw := finCaptureFlowMod(t, tc.name)
		if got := fm.Instructions.Apply; !actionsEqual(got, tc.want) {
			t.Errorf("%s:\n got %+v\nwant %+v", tc.name, got, tc.want)
		}
		fm.Instructions.Apply = tc.want
		out, err := fm.Append(nil)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(out, raw) {
			t.Errorf("%s: built actions encode\n % x\nwant % x", tc.name, out, raw)
		}
	}
	fm, _ := finCaptureFlowMod(t, "fin-timeout-learn-of13")
	if a := fm.Instructions.Apply; len(a) != 2 || a[0].Type != ActLearn || a[0].Learn.FinIdleTimeout != 1 ||
		a[0].Learn.FinHardTimeout != 7 || a[0].Learn.IdleTimeout != 60 {
		t.Errorf("learn: %+v", a)
	}
}

// finCaptureFlowMod returns the flow mod of capture name and its bytes.
func finCaptureFlowMod(t *testing.T, name string) (*FlowMod, []byte) {
	t.Helper()
	for _, r := range readCapture(t, name) {
		m, err := Decode(r)
		if err != nil {
			t.Fatal(err)
		}
		if f, ok := m.(*FlowMod); ok {
			return f, r
		}
	}
	t.Fatalf("%s: no flow mod", name)
	return nil, nil
}

// TestFinTimeoutDecode: the lengths ovs-vswitchd refuses, and padding it
// ignores.
func TestFinTimeoutDecode(t *testing.T) {
	ok := []byte{
		0xff, 0xff, 0x00, 0x10, // vendor action, length 16
		0x00, 0x00, 0x23, 0x20, // NX vendor id
		0x00, 0x13, // NXAST_FIN_TIMEOUT
		0x00, 0x05, // fin_idle_timeout 5
		0x00, 0x06, // fin_hard_timeout 6
		0xab, 0xcd, // padding, not checked
	}
	for _, v := range []uint8{Version10, Version13} {
		a, err := decodeVendorAction(v, ok)
		if err != nil || !a.Equal(FinTimeout(5, 6)) {
			t.Errorf("v%d: %+v %v", v, a, err)
		}
		long := append(append([]byte(nil), ok...), make([]byte, 8)...)
		long[3] = 24
		if _, err := decodeVendorAction(v, long); err == nil {
			t.Errorf("v%d: 24-byte fin_timeout decoded", v)
		}
	}
}

// TestFinTimeoutDumpFlows: ovs-ofctl prints the actions this codec encodes
// as it printed them when it sent them.
func TestFinTimeoutDumpFlows(t *testing.T) {
	if _, err := exec.LookPath("ovs-ofctl"); err != nil {
		t.Skip("ovs-ofctl not installed")
	}
	s := newFakeSwitch(t)
	var fs FlowStats
	fs.Priority, fs.IdleTimeout = 0x8000, 1
	fs.Instructions.Apply = []Action{FinTimeout(1, 0), FinTimeout(0, 9), FinTimeout(3, 4), Output(2, 0)}
	s.mu.Lock()
	s.flows = []FlowStats{fs}
	s.mu.Unlock()
	out := s.ofctl(t, "dump-flows", "SW")
	s.take(t)
	if want := "idle_timeout=1, actions=fin_timeout(idle_timeout=1),fin_timeout(hard_timeout=9),fin_timeout(idle_timeout=3,hard_timeout=4),output:2"; !strings.Contains(out, want) {
		t.Errorf("ovs-ofctl printed\n%s\nwant %s", out, want)
	}
}

func FuzzFinTimeout(f *testing.F) {
	f.Add([]byte{0, 1, 0, 2, 0, 0})
	f.Add([]byte{0, 1, 0, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0})
	f.Fuzz(func(t *testing.T, body []byte) {
		act := learnAct(NXASTFinTimeout, body...)
		acts, err := DecodeActions10(nil, act)
		if err != nil {
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("error is no *Error: %v", err)
			}
			return
		}
		out, err := AppendActions13(nil, acts)
		if err != nil {
			t.Fatalf("decoded fin_timeout does not encode: %v %+v", err, acts)
		}
		back, err := DecodeActions13(nil, out)
		if err != nil || len(back) != 1 || !back[0].Equal(acts[0]) {
			t.Fatalf("re-decode: %v %+v %+v", err, acts, back)
		}
	})
}
