package openflow

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// deleteFieldActs are delete_field (NXAST_DELETE_FIELD) as ovs-ofctl 3.1
// writes it: the first, a middle and the last tun_metadata field (mapped by withTunMDLayout), after a
// set_field of the same field.
const deleteFieldActs = "actions=delete_field:tun_metadata0,delete_field:tun_metadata2,delete_field:tun_metadata63,output:2"

// deleteFieldCaptures are the ovs-ofctl 3.1 sessions behind the
// delete_field codec, recorded with OFCTL_RECORD=1: the action is the same
// Nicira action in every version.
var deleteFieldCaptures = []capture{
	{"delete-field-of10", []string{"add-flow", "SW", deleteFieldActs}},
	{"delete-field-of13", []string{"-O", "OpenFlow13", "add-flow", "SW", deleteFieldActs}},
	{"delete-field-of15", []string{"-O", "OpenFlow15", "add-flow", "SW", deleteFieldActs}},
}

// TestOvsOfctlDeleteFieldCaptures records (OFCTL_RECORD=1) or checks the
// captures: every message decodes, the flow mod to the three delete_fields
// and the output, and re-encodes to ovs-ofctl's bytes but for the
// tun_metadata headers' length, which the switch writes mapped (4, 4 and
// 8 here) where ovs-ofctl writes its unmapped 124.
func TestOvsOfctlDeleteFieldCaptures(t *testing.T) {
	defer withTunMDLayout()()
	if os.Getenv("OFCTL_RECORD") == "1" {
		liveOrRecordCaptures(t, deleteFieldCaptures)
	}
	want := []Action{DeleteField(FieldTunMetadata0), DeleteField(FieldTunMetadata0 + 2), DeleteField(FieldTunMetadata63), Output(2, 0)}
	for _, c := range deleteFieldCaptures {
		t.Run(c.name, func(t *testing.T) {
			n := 0
			for i, raw := range readCapture(t, c.name) {
				m, err := Decode(raw)
				if err != nil {
					t.Fatalf("message %d (% x): %v", i, raw, err)
				}
				fm, ok := m.(*FlowMod)
				if !ok {
					continue
				}
				n++
				if got := fm.Instructions.Apply; len(got) != len(want) || !got[0].Equal(want[0]) || !got[1].Equal(want[1]) ||
					!got[2].Equal(want[2]) || !got[3].Equal(want[3]) {
					t.Errorf("actions %+v, want %+v", got, want)
				}
				out, err := m.Append(nil)
				if err != nil {
					t.Fatal(err)
				}
				exp := append([]byte(nil), raw...)
				lens := []byte{4, 4, 8}
				for j, k := 0, 0; j+14 <= len(exp) && k < len(lens); j++ {
					if bytes.Equal(exp[j:j+10], []byte{0xff, 0xff, 0, 24, 0, 0, 0x23, 0x20, 0, 50}) {
						if exp[j+13] != 124 {
							t.Fatalf("ovs-ofctl's delete_field header length %d, want 124", exp[j+13])
						}
						exp[j+13] = lens[k]
						k++
					}
				}
				if !bytes.Equal(out, exp) {
					t.Errorf("re-encoding:\n got % x\nwant % x", out, exp)
				}
			}
			if n != 1 {
				t.Errorf("%d flow mods in the capture, want 1", n)
			}
		})
	}
}

// TestDeleteFieldDumpFlows: ovs-ofctl prints the delete_fields this codec
// encodes (mapped header lengths) as it printed them when it sent them.
func TestDeleteFieldDumpFlows(t *testing.T) {
	if _, err := exec.LookPath("ovs-ofctl"); err != nil {
		t.Skip("ovs-ofctl not installed")
	}
	defer withTunMDLayout()()
	s := newFakeSwitch(t)
	var fs FlowStats
	fs.Priority = 0x8000
	fs.Instructions.Apply = []Action{DeleteField(FieldTunMetadata0), DeleteField(FieldTunMetadata0 + 2),
		DeleteField(FieldTunMetadata63), Output(2, 0)}
	s.mu.Lock()
	s.flows = []FlowStats{fs}
	s.mu.Unlock()
	for _, opts := range [][]string{nil, {"-O", "OpenFlow13"}, {"-O", "OpenFlow15"}} {
		out := s.ofctl(t, append(opts, "dump-flows", "SW")...)
		s.take(t)
		if want := " " + deleteFieldActs; !strings.Contains(out, want) {
			t.Errorf("%v: ovs-ofctl printed\n%s\nwant %s", opts, out, want)
		}
	}
}

// TestDeleteFieldDecode: lengths other than 24, unknown and unmapped
// fields are refused as ovs-vswitchd refuses them.
func TestDeleteFieldDecode(t *testing.T) {
	defer withTunMDLayout()()
	hdr := func(h uint32, n int) []byte {
		b := learnAct(NXASTDeleteField, byte(h>>24), byte(h>>16), byte(h>>8), byte(h))
		for len(b) < n {
			b = append(b, 0)
		}
		b[2], b[3] = byte(len(b)>>8), byte(len(b))
		return b
	}
	tm0 := uint32(0x0001507c)
	if acts, err := DecodeActions10(nil, hdr(tm0, 24)); err != nil || len(acts) != 1 || !acts[0].Equal(DeleteField(FieldTunMetadata0)) {
		t.Errorf("delete_field:tun_metadata0: %v %+v", err, acts)
	}
	for _, tc := range []struct {
		name string
		act  []byte
		code uint16
	}{
		{"32 bytes", hdr(tm0, 32), 0},
		{"unmapped tun_metadata5", hdr(0x00015a7c, 24), 536},
		{"unknown field", hdr(0x0001fe04, 24), 0},
	} {
		_, err := DecodeActions10(nil, tc.act)
		var e *Error
		if !errors.As(err, &e) || tc.code != 0 && e.Code != tc.code {
			t.Errorf("%s: %v, want an error (code %d)", tc.name, err, tc.code)
		}
	}
}

func FuzzDeleteFieldAction(f *testing.F) {
	f.Add([]byte{0, 1, 0x50, 0x7c, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0})
	f.Add([]byte{0, 1, 0xce, 0x08, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0})
	f.Add([]byte{0xff, 0xff, 0x02, 0x05, 0x00, 0x5a, 0xd6, 0x50, 0, 0, 0, 0, 0, 0})
	f.Fuzz(func(t *testing.T, body []byte) {
		defer withTunMDLayout()()
		acts, err := DecodeActions10(nil, learnAct(NXASTDeleteField, body...))
		if err != nil {
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("error is no *Error: %v", err)
			}
			return
		}
		out, err := AppendActions13(nil, acts)
		if err != nil {
			t.Fatalf("decoded delete_field does not encode: %v %+v", err, acts)
		}
		back, err := DecodeActions13(nil, out)
		if err != nil || len(back) != 1 || !back[0].Equal(acts[0]) {
			t.Fatalf("re-decode: %v %+v %+v", err, acts, back)
		}
	})
}
