package openflow

import (
	"bytes"
	"encoding/hex"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
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

// TestControllerActionsAgainstOvsOfctl: every controller action ovs-ofctl
// encoded in the captures parses, and AppendController gives back its
// bytes; notes are recognised.
func TestControllerActionsAgainstOvsOfctl(t *testing.T) {
	want := map[string][]ControllerAction{
		"ctrl-actions-of13": {
			{MaxLen: 100, ID: 5, Reason: PacketInNoMatch, Userdata: []byte{1, 2, 3}, Pause: true, MeterID: 3},
			{MaxLen: 50, ID: 3, Reason: PacketInAction},
			{MaxLen: 0xffff, Reason: PacketInAction, Userdata: []byte{0xaa}},
			{MaxLen: 0xffff, Reason: PacketInAction, Pause: true},
		},
		"ctrl-actions-of10": {
			{MaxLen: 0xffff, Reason: PacketInAction, Userdata: []byte{1, 2, 3, 4, 5, 6, 7, 8, 9}},
			{MaxLen: 0xffff, ID: 1, Reason: PacketInInvalidTTL},
		},
	}
	for name, wantActs := range want {
		t.Run(name, func(t *testing.T) {
			var fm *FlowMod
			for _, raw := range readCapture(t, name) {
				m, err := Decode(raw)
				if err != nil {
					t.Fatal(err)
				}
				if f, ok := m.(*FlowMod); ok {
					fm = f
				}
			}
			if fm == nil {
				t.Fatal("no flow mod in the capture")
			}
			v := fm.Version
			var got []ControllerAction
			notes := 0
			for i := range fm.Instructions.Apply {
				a := &fm.Instructions.Apply[i]
				if IsNote(a) {
					notes++
					continue
				}
				if !IsController(a) {
					continue
				}
				ca, err := ParseController(a)
				if err != nil {
					t.Fatalf("action %d: %v", i, err)
				}
				got = append(got, ca)
				enc, err := AppendController(nil, v, &ca)
				if err != nil {
					t.Fatal(err)
				}
				orig, err := appendNXAction(nil, a)
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(enc, orig) {
					t.Errorf("action %d: AppendController\n got % x\nwant % x", i, enc, orig)
				}
			}
			if notes != 1 {
				t.Errorf("%d notes, want 1", notes)
			}
			if len(got) != len(wantActs) {
				t.Fatalf("controller actions %+v, want %+v", got, wantActs)
			}
			for i := range got {
				g, w := got[i], wantActs[i]
				if g.MaxLen != w.MaxLen || g.ID != w.ID || g.Reason != w.Reason || g.Pause != w.Pause ||
					g.MeterID != w.MeterID || !bytes.Equal(g.Userdata, w.Userdata) {
					t.Errorf("action %d = %+v, want %+v", i, g, w)
				}
			}
			// controller:70, the plain output form, as 1.3 encodes it.
			if name == "ctrl-actions-of13" {
				c := DefaultController
				c.MaxLen = 70
				enc, _ := AppendController(nil, v, &c)
				last := fm.Instructions.Apply[len(fm.Instructions.Apply)-1]
				orig, _ := AppendActions13(nil, []Action{last})
				if !bytes.Equal(enc, orig) {
					t.Errorf("controller:70 = % x, want % x", enc, orig)
				}
			}
		})
	}
}

// TestControllerActionBad: malformed controller2 bodies are refused with
// an action error, never a panic.
func TestControllerActionBad(t *testing.T) {
	for _, tc := range []struct {
		name string
		body []byte // after the vendor id
	}{
		{"controller long", []byte{0, 20, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}},
		{"controller2 prop overruns", []byte{0, 37, 0, 0, 0, 0, 0, 0, 0, 3, 0, 40, 1, 2, 3, 4}},
		{"controller2 unknown prop", []byte{0, 37, 0, 0, 0, 0, 0, 0, 0, 9, 0, 4, 0, 0, 0, 0}},
		{"controller2 pause with value", []byte{0, 37, 0, 0, 0, 0, 0, 0, 0, 4, 0, 5, 1, 0, 0, 0}},
		{"controller2 dup prop", []byte{0, 37, 0, 0, 0, 0, 0, 0, 0, 4, 0, 4, 0, 0, 0, 0, 0, 4, 0, 4, 0, 0, 0, 0}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			act := append(be32(be16(be16(nil, ActVendorType), uint16(8+len(tc.body))), NXVendorID), tc.body...)
			if len(act)%8 != 0 {
				act = append(act, make([]byte, 8-len(act)%8)...)
				act[2], act[3] = 0, byte(len(act))
			}
			_, err := DecodeActions13(nil, act)
			var e *Error
			if err == nil || !errors.As(err, &e) || e.Type != ErrTypeBadAction {
				t.Errorf("decode % x: %v, want a bad-action error", act, err)
			}
		})
	}
}

// TestPacketIn2RoundTrip: a packet-in2 with every property, and a
// continuation, encode and decode to themselves; the encoding is the
// property list ovs-vswitchd writes (checked field by field).
func TestPacketIn2RoundTrip(t *testing.T) {
	cont := &Continuation{Bridge: [16]byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16},
		Actions: []Action{Output(2, 0), Resubmit(PortInPort, 3)},
		Unrolls: []Unroll{{At: 0, TableID: 0, Cookie: 0}, {At: 1, TableID: 4, Cookie: 0x77}},
		OdpPort: 3}
	cb, err := AppendContinuation(nil, Version13, cont)
	if err != nil {
		t.Fatal(err)
	}
	want := "" +
		"8000 0014 0102030405060708090a0b0c0d0e0f10 00000000" + // NXCPT_BRIDGE, 20 bytes + pad
		"8006 0018 00000000 0000 0010 00000002 0000 000000000000" + // NXCPT_ACTIONS: output:2
		"8004 0005 04 000000" + // NXCPT_TABLE_ID 4
		"8005 0010 00000000 0000000000000077" + // NXCPT_COOKIE
		"8006 0018 00000000 ffff 0010 00002320 000e fff8 03 000000" + // NXCPT_ACTIONS: resubmit(,3)
		"8008 0008 00000003" // NXCPT_ODP_PORT
	if got := hex.EncodeToString(cb); got != strings.ReplaceAll(want, " ", "") {
		t.Errorf("continuation\n got %s\nwant %s", got, strings.ReplaceAll(want, " ", ""))
	}
	back, err := DecodeContinuation(Version13, cb)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(cont, back, cmpOpts...); d != "" {
		t.Errorf("continuation changed (-sent +decoded):\n%s", d)
	}
	m := &PacketIn2{Envelope: Envelope{Version: Version13, Xid: 9}, BufferID: NoBuffer, Packet: []byte{1, 2, 3, 4, 5},
		TableID: 2, Cookie: 0x55, Reason: PacketInAction, Userdata: []byte{0xaa, 0xbb}, Continuation: cb}
	m.Metadata.Key.InPort, m.Metadata.Mask.InPort = 1, ^uint32(0)
	m.Metadata.Key.Regs[0], m.Metadata.Mask.Regs[0] = 5, ^uint32(0)
	raw, err := m.Append(nil)
	if err != nil {
		t.Fatal(err)
	}
	head := "" +
		"04 04 0000 00000009 00002320 0000001e" + // NXT_PACKET_IN2 (length filled below)
		"0000 0009 0102030405 00000000000000" + // NXPINT_PACKET
		"0003 0005 02 000000" + // NXPINT_TABLE_ID
		"0004 0010 00000000 0000000000000055" + // NXPINT_COOKIE
		"0005 0005 01 000000" // NXPINT_REASON
	h, _ := hex.DecodeString(strings.ReplaceAll(head, " ", ""))
	h[2], h[3] = raw[2], raw[3]
	if !bytes.HasPrefix(raw, h) {
		t.Errorf("packet-in2 starts\n % x\nwant % x", raw[:len(h)], h)
	}
	back2, err := Decode(raw)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(Msg(m), back2, cmpOpts...); d != "" {
		t.Errorf("packet-in2 changed (-sent +decoded):\n%s", d)
	}
	if _, err := exec.LookPath("ovs-ofctl"); err == nil {
		out, err := exec.Command("ovs-ofctl", "ofp-print", hex.EncodeToString(raw)).CombinedOutput()
		if err != nil {
			t.Fatalf("ovs-ofctl ofp-print: %v\n%s", err, out)
		}
		for _, w := range []string{"NXT_PACKET_IN2 (OF1.3) (xid=0x9): table_id=2 cookie=0x55 total_len=5 reg0=0x5,in_port=1 (via action) data_len=5 (unbuffered)",
			" userdata=aa.bb\n", // OVS writes its UUID's four 32-bit words in host order.
			" continuation.bridge=04030201-0807-0605-0c0b-0a09100f0e0d\n",
			" continuation.actions=unroll_xlate(table=0, cookie=0),output:2,unroll_xlate(table=4, cookie=119),resubmit(,3)\n",
			" continuation.odp_port=3\n"} {
			if !strings.Contains(string(out), w) {
				t.Errorf("ovs-ofctl ofp-print lacks %q:\n%s", w, out)
			}
		}
	}
}
