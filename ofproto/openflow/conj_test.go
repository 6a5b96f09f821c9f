package openflow

import (
	"errors"
	"os/exec"
	"regexp"
	"strings"
	"testing"
)

func TestConjCaptureMeaning(t *testing.T) {
	for _, name := range []string{"add-flows-conj", "of13-add-flows-conj"} {
		t.Run(name, func(t *testing.T) {
			fms := captureFlowMods(t, name, 6)
			if a := fms[1].Instructions.Apply; len(a) != 2 || !a[0].Equal(Conjunction(7, 0, 2)) || !a[1].Equal(Conjunction(8, 0, 3)) {
				t.Errorf("flow 1: %+v", a)
			}
			if m := fms[3].Match; m.Key.ConjID != 7 || m.Mask.ConjID != 0xffffffff {
				t.Errorf("flow 3 conj_id %d/%#x", m.Key.ConjID, m.Mask.ConjID)
			}
			if a := fms[4].Instructions.Apply; len(a) != 1 || !a[0].Equal(Conjunction(0xffffffff, 63, 64)) {
				t.Errorf("flow 4: %+v", a)
			}
			if err := CheckConjunctions(Version10, fms[2].Instructions.Apply); err != nil {
				t.Errorf("conjunction with note refused: %v", err)
			}
		})
	}
}

// TestConjOvsOfctlDump: ovs-ofctl prints our flow stats of the recorded
// conjunction flows as it prints its own parse of them.
func TestConjOvsOfctlDump(t *testing.T) {
	if _, err := exec.LookPath("ovs-ofctl"); err != nil {
		t.Skip("ovs-ofctl not installed")
	}
	parsed := regexp.MustCompile(`FLOW_MOD (?:\(OF1\.3\) )?\(xid=0x[0-9a-f]+\): ADD (?:table:(\d+) )?(.*)$`)
	for _, v := range []struct{ name, proto string }{{"add-flows-conj", ""}, {"of13-add-flows-conj", "OpenFlow13"}} {
		t.Run(v.name, func(t *testing.T) {
			s := newFakeSwitch(t)
			s.mu.Lock()
			for _, fm := range captureFlowMods(t, v.name, 6) {
				var fs FlowStats
				fs.TableID, fs.Priority, fs.Match, fs.Instructions = fm.TableID, fm.Priority, fm.Match, fm.Instructions
				if fs.TableID == 0xff {
					fs.TableID = 0
				}
				s.flows = append(s.flows, fs)
			}
			s.mu.Unlock()
			var opts []string
			if v.proto != "" {
				opts = []string{"-O", v.proto}
			}
			out := s.ofctl(t, append(opts, "dump-flows", "SW")...)
			s.take(t)
			ref, err := exec.Command("ovs-ofctl", append(opts, "parse-flows", "testdata/ovs-ofctl/conj-flows.txt")...).Output()
			if err != nil {
				t.Fatal(err)
			}
			var want, got []string
			for _, line := range strings.Split(string(ref), "\n") {
				if m := parsed.FindStringSubmatch(line); m != nil {
					want = append(want, m[2])
				}
			}
			for _, line := range strings.Split(out, "\n") {
				if i := strings.Index(line, "n_bytes=0, "); i >= 0 {
					got = append(got, line[i+len("n_bytes=0, "):])
				}
			}
			if len(got) != len(want) {
				t.Fatalf("dumped %d flows, want %d:\n%s", len(got), len(want), out)
			}
			for i := range want {
				if got[i] != want[i] {
					t.Errorf("flow %d:\n got %s\nwant %s", i, got[i], want[i])
				}
			}
		})
	}
}

func TestConjRefuses(t *testing.T) {
	for _, c := range []struct {
		name         string
		clause, n    byte
		v            uint8
		typ, code    uint16
		experimenter uint32
	}{
		{"one clause", 0, 1, Version10, ErrTypeBadAction, 526, NXVendorID},
		{"65 clauses", 0, 65, Version10, ErrTypeBadAction, 526, NXVendorID},
		{"clause past n", 2, 2, Version13, Err13TypeExperimenter, 15, NXVendorID},
	} {
		t.Run(c.name, func(t *testing.T) {
			act := learnAct(NXASTConjunction, c.clause, c.n, 0, 0, 0, 7)
			dec := DecodeActions10
			if c.v == Version13 {
				dec = DecodeActions13
			}
			_, err := dec(nil, act)
			var e *Error
			if !errors.As(err, &e) || e.Type != c.typ || e.Code != c.code || e.Experimenter != c.experimenter {
				t.Fatalf("err %v (%+v), want %d/%d exp %#x", err, e, c.typ, c.code, c.experimenter)
			}
		})
	}
	if err := CheckConjunctions(Version13, []Action{Conjunction(1, 0, 2), Output(2, 0)}); err == nil {
		t.Error("conjunction mixed with output accepted")
	}
}

func FuzzConjunction(f *testing.F) {
	f.Add([]byte{0, 2, 0, 0, 0, 7})
	f.Add([]byte{63, 64, 0xff, 0xff, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, body []byte) {
		act := learnAct(NXASTConjunction, body...)
		acts, err := DecodeActions13(nil, act)
		if err != nil {
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("error is no *Error: %v", err)
			}
			return
		}
		out, err := AppendActions10(nil, acts)
		if err != nil {
			t.Fatal(err)
		}
		back, err := DecodeActions10(nil, out)
		if err != nil || len(back) != 1 || !back[0].Equal(acts[0]) {
			t.Fatalf("re-decode: %v %+v %+v", err, acts, back)
		}
	})
}
