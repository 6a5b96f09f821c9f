package openflow

import (
	"bytes"
	"errors"
	"os/exec"
	"strings"
	"testing"
)

func TestOutputRegCapture(t *testing.T) {
	for _, name := range []string{"add-flow-output-reg", "of13-add-flow-output-reg"} {
		fms := captureFlowMods(t, name, 1)
		a := fms[0].Instructions.Apply
		if len(a) != 3 || a[0].Type != ActOutputReg || a[0].Src != FieldReg0 || a[0].NBits != 16 || a[0].MaxLen != 0xffff ||
			a[1].Src != FieldReg3 || a[1].SrcOfs != 16 || a[2].Src != FieldNXMInPort {
			t.Errorf("%s: %+v", name, a)
		}
	}
	if _, err := exec.LookPath("ovs-ofctl"); err != nil {
		t.Skip("ovs-ofctl not installed")
	}
	s := newFakeSwitch(t)
	var fs FlowStats
	fs.Priority, fs.Instructions = 0x8000, captureFlowMods(t, "add-flow-output-reg", 1)[0].Instructions
	s.mu.Lock()
	s.flows = []FlowStats{fs}
	s.mu.Unlock()
	out := s.ofctl(t, "dump-flows", "SW")
	s.take(t)
	if want := "actions=output:NXM_NX_REG0[0..15],output:NXM_NX_REG3[16..31],output:NXM_OF_IN_PORT[]"; !strings.Contains(out, want) {
		t.Errorf("ovs-ofctl printed\n%s\nwant %s", out, want)
	}
}

func FuzzOutputReg(f *testing.F) {
	f.Add([]byte{0, 0x0f, 0, 1, 0, 4, 0xff, 0xff, 0, 0, 0, 0, 0, 0})
	f.Fuzz(func(t *testing.T, body []byte) {
		act := learnAct(NXASTOutputReg, body...)
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
			t.Fatalf("decoded output_reg does not encode: %v %+v", err, acts)
		}
		back, err := DecodeActions13(nil, out)
		if err != nil || len(back) != 1 || !back[0].Equal(acts[0]) {
			t.Fatalf("re-decode: %v %+v %+v", err, acts, back)
		}
	})
}

// FuzzOutputReg2: NXAST_OUTPUT_REG2's decoder (a 4- or 8-byte field
// header) never panics, and what it takes encodes and decodes back.
func FuzzOutputReg2(f *testing.F) {
	// output:tun_erspan_idx[0..15] and output:nsh_c1[0..15], as ovs-ofctl 3.1 encodes them.
	f.Add([]byte{0, 0x0f, 0xff, 0xff, 0xff, 0xff, 0x16, 0x08, 0, 0, 0x23, 0x20, 0, 0})
	f.Add([]byte{0, 0x0f, 0xff, 0xff, 0xff, 0xff, 0x0c, 0x08, 0, 0x5a, 0xd6, 0x50, 0, 0})
	f.Add([]byte{0, 0x0f, 0, 0, 0, 1, 0, 4, 0, 0, 0, 0, 0, 0})
	f.Fuzz(func(t *testing.T, body []byte) {
		act := learnAct(NXASTOutputReg2, body...)
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
			t.Fatalf("decoded output_reg2 does not encode: %v %+v", err, acts)
		}
		back, err := DecodeActions13(nil, out)
		if err != nil || len(back) != 1 || !back[0].Equal(acts[0]) {
			t.Fatalf("re-decode: %v %+v %+v", err, acts, back)
		}
		// The header may change form (an OXM one comes back as the NXM
		// one, as OVS's nx_put_mff_header writes it); an experimenter
		// field's cannot.
		if acts[0].Src.IsExperimenter() && !bytes.Equal(out, act) {
			t.Fatalf("output_reg2 of %s:\n in  %x\n out %x", acts[0].Src, act, out)
		}
	})
}

func TestExitCapture(t *testing.T) {
	fms := captureFlowMods(t, "add-flow-exit", 1)
	a := fms[0].Instructions.Apply
	if len(a) != 3 || a[1].Type != ActExit {
		t.Fatalf("%+v", a)
	}
	if _, err := exec.LookPath("ovs-ofctl"); err != nil {
		t.Skip("ovs-ofctl not installed")
	}
	s := newFakeSwitch(t)
	var fs FlowStats
	fs.Priority, fs.Instructions = 0x8000, fms[0].Instructions
	s.mu.Lock()
	s.flows = []FlowStats{fs}
	s.mu.Unlock()
	out := s.ofctl(t, "-O", "OpenFlow13", "dump-flows", "SW")
	s.take(t)
	if !strings.Contains(out, "actions=output:2,exit,output:3") {
		t.Errorf("ovs-ofctl printed\n%s", out)
	}
}
