package openflow

import (
	"os/exec"
	"regexp"
	"strings"
	"testing"
)

// ctCaptureFlowMods decodes the flow mods of a recorded ct capture.
func ctCaptureFlowMods(t *testing.T, name string) []*FlowMod {
	t.Helper()
	var fms []*FlowMod
	for i, raw := range readCapture(t, name) {
		m, err := Decode(raw)
		if err != nil {
			t.Fatalf("message %d: %v", i, err)
		}
		if fm, ok := m.(*FlowMod); ok {
			fms = append(fms, fm)
		}
	}
	if len(fms) != 10 {
		t.Fatalf("%s: %d flow mods, want 10", name, len(fms))
	}
	return fms
}

// TestCtCaptureMeaning checks what the recorded ct flows decode to.
func TestCtCaptureMeaning(t *testing.T) {
	for _, name := range []string{"add-flows-ct", "of13-add-flows-ct"} {
		t.Run(name, func(t *testing.T) {
			fms := ctCaptureFlowMods(t, name)
			ct := func(i int) *CtAction {
				t.Helper()
				a := fms[i].Instructions.Apply
				if len(a) == 0 || a[0].Type != ActCT {
					t.Fatalf("flow %d: actions %+v", i, a)
				}
				return a[0].Ct
			}
			if c := ct(0); c.Table != 1 || c.Flags != 0 || len(c.Actions) != 0 {
				t.Errorf("flow 0: %+v", c)
			}
			if m := fms[0].Match; m.Key.CtState != 0 || m.Mask.CtState != 0x20 {
				t.Errorf("flow 0 match ct_state %#x/%#x", m.Key.CtState, m.Mask.CtState)
			}
			if c := ct(1); c.Flags != CtCommit || c.Table != CtNoRecirc {
				t.Errorf("flow 1: %+v", c)
			}
			m := fms[3].Match
			if m.Key.CtZone != 5 || m.Mask.CtZone != 0xffff || m.Key.CtMark != 1 || m.Mask.CtMark != 0xff ||
				m.Key.CtLabels[0] != 1 || m.Mask.CtLabels[0] != 0xf || m.Mask.CtState != 0xff || m.Key.CtState != 0x6d {
				t.Errorf("flow 3 match %+v", m)
			}
			c := ct(4)
			nat := c.NAT()
			if c.ZoneImm != 5 || c.Flags != CtCommit || nat == nil || nat.Flags != NATSrc|NATPersistent|NATProtoRandom ||
				nat.IPMin.String() != "10.0.0.1" || nat.IPMax.String() != "10.0.0.9" || nat.ProtoMin != 1000 || nat.ProtoMax != 2000 {
				t.Errorf("flow 4: %+v nat %+v", c, nat)
			}
			c = ct(5)
			if c.Flags != CtCommit|CtForce || c.ZoneField != FieldReg0 || c.ZoneOfs != 0 || c.Table != 3 || c.Alg != 21 ||
				c.NAT() == nil || c.NAT().Flags != NATDst || c.NAT().ProtoMin != 80 {
				t.Errorf("flow 5: %+v", c)
			}
			if a := fms[6].Instructions.Apply; len(a) != 3 || a[1].Type != ActCTClear || !ct(6).NAT().IPMin.Is6() {
				t.Errorf("flow 6: %+v", a)
			}
			if c := ct(7); c.Flags != 0 || c.NAT() == nil || c.NAT().Flags != 0 {
				t.Errorf("flow 7: %+v", c)
			}
		})
	}
}

// TestCtOvsOfctlDump serves the recorded ct flows back to the real
// ovs-ofctl as flow stats: what it prints must be what it prints for the
// flows it encoded itself (parse-flows), since ovs-vswitchd answers with
// the bytes ovs-ofctl sent.
func TestCtOvsOfctlDump(t *testing.T) {
	if _, err := exec.LookPath("ovs-ofctl"); err != nil {
		t.Skip("ovs-ofctl not installed")
	}
	parsed := regexp.MustCompile(`FLOW_MOD (?:\(OF1\.3\) )?\(xid=0x[0-9a-f]+\): ADD (?:table:(\d+) )?(.*)$`)
	for _, v := range []struct{ name, proto string }{{"add-flows-ct", ""}, {"of13-add-flows-ct", "OpenFlow13"}} {
		t.Run(v.name, func(t *testing.T) {
			s := newFakeSwitch(t)
			s.mu.Lock()
			for _, fm := range ctCaptureFlowMods(t, v.name) {
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
			ref, err := exec.Command("ovs-ofctl", append(opts, "parse-flows", "testdata/ovs-ofctl/ct-flows.txt")...).Output()
			if err != nil {
				t.Fatal(err)
			}
			var want []string
			for _, line := range strings.Split(string(ref), "\n") {
				if m := parsed.FindStringSubmatch(line); m != nil {
					want = append(want, m[2])
				}
			}
			var got []string
			for _, line := range strings.Split(out, "\n") {
				if i := strings.Index(line, "n_bytes=0, "); i >= 0 {
					got = append(got, line[i+len("n_bytes=0, "):])
				}
			}
			if len(got) != len(want) {
				t.Fatalf("dumped %d flows, want %d:\n%s", len(got), len(want), out)
			}
			for i := range want {
				// parse-flows prints the priority only when it is not the
				// default; dump-flows always prints it when not 32768.
				g := strings.TrimPrefix(got[i], "priority=32768,")
				if g != want[i] {
					t.Errorf("flow %d:\n got %s\nwant %s", i, g, want[i])
				}
			}
		})
	}
}
