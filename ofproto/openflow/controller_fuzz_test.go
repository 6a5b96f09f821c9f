package openflow

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// Fuzz targets for the controller-feature decoders: the packet-in2 /
// resume property lists (through Decode, in every version), continuations,
// and the controller actions. Seeds: testdata/fuzz/<target> and the f.Add
// calls below (ovs-ofctl's own encodings and our packet-in2s).

func ctrlFuzzSeeds() [][]byte {
	cont := &Continuation{Bridge: [16]byte{1, 2, 3}, Actions: []Action{Output(2, 0), Resubmit(PortInPort, 3)},
		Unrolls: []Unroll{{At: 1, TableID: 4, Cookie: 7}}, ActionSet: []Action{Output(1, 0)}, OdpPort: 3}
	cb, _ := AppendContinuation(nil, Version13, cont)
	m := &PacketIn2{Envelope: Envelope{Version: Version13, Xid: 9}, BufferID: NoBuffer, Packet: []byte{1, 2, 3, 4, 5},
		TableID: 2, Cookie: 0x55, Reason: PacketInAction, Userdata: []byte{0xaa, 0xbb}, Continuation: cb}
	m.Metadata.Key.InPort, m.Metadata.Mask.InPort = 1, ^uint32(0)
	pin, _ := m.Append(nil)
	m.Resume, m.Userdata = true, nil
	res, _ := m.Append(nil)
	cancel, _ := (&NXFlowMonitorCancel{Envelope: Envelope{Version: Version10}, ID: 3}).Append(nil)
	return [][]byte{pin, res, cb, cancel}
}

func FuzzPacketIn2(f *testing.F) {
	for _, s := range ctrlFuzzSeeds() {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		for _, v := range []uint8{Version10, Version13, Version15} {
			c := append([]byte(nil), b...)
			if len(c) > 0 {
				c[0] = v
			}
			fuzzDecode(t, c)
		}
	})
}

// monitorFuzzSeeds are flow monitor requests and replies in every form.
func monitorFuzzSeeds() [][]byte {
	var out [][]byte
	var mt Match
	mt.Key.InPort, mt.Mask.InPort = 1, ^uint32(0)
	for _, v := range []uint8{Version10, Version13, Version14} {
		env := Envelope{Version: v, Xid: 3}
		req := &FlowMonitorRequest{Envelope: env, Monitors: []FlowMonitor{{ID: 1, Flags: MonitorInitial | MonitorAdd | MonitorInstructions,
			OutPort: PortAny, OutGroup: GroupAny, TableID: TableAll, Match: mt}}}
		rep := &FlowMonitorReply{Envelope: env, Updates: []FlowUpdate{
			{Event: UpdateAdded, TableID: 1, Priority: 5, Cookie: 9, Match: mt, Instructions: Instructions{Apply: []Action{Output(2, 0)}}},
			{Event: UpdateRemoved, Reason: 2, Match: mt},
			{Event: UpdateAbbrev, Xid: 77}}}
		for _, m := range []Msg{req, rep, &NXFlowMonitorCancel{Envelope: env, ID: 1}, &NXFlowMonitorFlowControl{Envelope: env}} {
			if b, err := m.Append(nil); err == nil {
				out = append(out, b)
			}
		}
	}
	return out
}

// FuzzFlowMonitor holds the flow monitor decoders (NXST, ONFST, OFPMP and
// the cancel/paused/resumed messages) to fuzzDecode's rules.
func FuzzFlowMonitor(f *testing.F) {
	for _, s := range monitorFuzzSeeds() {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		for _, v := range []uint8{Version10, Version13, Version14} {
			c := append([]byte(nil), b...)
			if len(c) > 0 {
				c[0] = v
			}
			fuzzDecode(t, c)
		}
	})
}

func FuzzContinuation(f *testing.F) {
	for _, s := range ctrlFuzzSeeds() {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		for _, v := range []uint8{Version10, Version13} {
			c, err := DecodeContinuation(v, b)
			if err != nil {
				var e *Error
				if !errors.As(err, &e) {
					t.Fatalf("error is no *Error: %v", err)
				}
				continue
			}
			out, err := AppendContinuation(nil, v, c)
			if err != nil {
				// Decoded actions that do not encode in v (vendor data of
				// odd length and such) are the action codec's business.
				continue
			}
			c2, err := DecodeContinuation(v, out)
			if err != nil {
				t.Fatalf("re-encoded continuation does not decode: %v\n% x", err, out)
			}
			// Empty action groups are not written back, so compare what
			// runs: the actions, the action set and the state.
			c.Unrolls, c2.Unrolls = nil, nil
			if d := cmp.Diff(c, c2, cmpOpts...); d != "" {
				t.Fatalf("continuation changed:\n%s", d)
			}
		}
	})
}

func FuzzControllerAction(f *testing.F) {
	f.Add([]byte{0, 37, 0, 0, 0, 0, 0, 0, 0, 0, 0, 8, 0, 100, 0, 0, 0, 3, 0, 7, 1, 2, 3, 0, 0, 4, 0, 4, 0, 0, 0, 0})
	f.Add([]byte{0, 20, 0, 50, 0, 3, 1, 0})
	f.Add([]byte{0, 8, 1, 2, 3, 4, 5, 0})
	f.Fuzz(func(t *testing.T, body []byte) {
		if len(body) < 2 {
			return
		}
		n := 8 + len(body)
		n = (n + 7) &^ 7
		if n > 0xfff8 {
			return
		}
		act := be32(be16(be16(nil, ActVendorType), uint16(n)), NXVendorID)
		act = append(act, body...)
		act = append(act, make([]byte, n-len(act))...)
		acts, err := DecodeActions13(nil, act)
		if err != nil {
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("error is no *Error: %v", err)
			}
			return
		}
		a := &acts[0]
		if !IsController(a) {
			return
		}
		c, err := ParseController(a)
		if err != nil {
			t.Fatalf("decoded controller action does not parse: %v", err)
		}
		enc, err := AppendController(nil, Version13, &c)
		if err != nil {
			return // userdata too long for one action
		}
		back, err := DecodeActions13(nil, enc)
		if err != nil {
			t.Fatalf("AppendController's bytes do not decode: %v\n% x", err, enc)
		}
		var c2 ControllerAction
		if IsController(&back[0]) {
			c2, err = ParseController(&back[0])
			if err != nil {
				t.Fatal(err)
			}
		} else {
			c2 = DefaultController
			c2.MaxLen = back[0].MaxLen
		}
		if c.MaxLen != c2.MaxLen || c.ID != c2.ID || c.Reason != c2.Reason || c.Pause != c2.Pause ||
			c.MeterID != c2.MeterID || !bytes.Equal(c.Userdata, c2.Userdata) {
			t.Fatalf("controller action changed: %+v -> %+v", c, c2)
		}
	})
}

// TestGenCtrlFuzzCorpus writes the seeds above, and the ovs-ofctl
// controller-action captures, into testdata/fuzz (GEN_FUZZ_CORPUS=1).
func TestGenCtrlFuzzCorpus(t *testing.T) {
	if os.Getenv("GEN_FUZZ_CORPUS") != "1" {
		t.Skip("set GEN_FUZZ_CORPUS=1 to regenerate testdata/fuzz")
	}
	write := func(target string, i int, b []byte) {
		dir := filepath.Join("testdata", "fuzz", target)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		s := "go test fuzz v1\n[]byte(" + strconv.Quote(string(b)) + ")\n"
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("seed-%03d", i)), []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for i, s := range ctrlFuzzSeeds() {
		write("FuzzPacketIn2", i, s)
		write("FuzzContinuation", i, s)
	}
	for i, s := range monitorFuzzSeeds() {
		write("FuzzFlowMonitor", i, s)
	}
	n := 0
	for _, c := range ctrlCaptures {
		for _, raw := range readCapture(t, c.name) {
			m, err := Decode(raw)
			if err != nil {
				t.Fatal(err)
			}
			fm, ok := m.(*FlowMod)
			if !ok {
				continue
			}
			for _, a := range fm.Instructions.Apply {
				if a.Type == ActVendor {
					write("FuzzControllerAction", n, a.Data)
					n++
				}
			}
		}
	}
}
