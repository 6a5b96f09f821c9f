package openflow

import (
	"os/exec"
	"regexp"
	"strings"
	"testing"
)

// ctCaptureFlowMods decodes the flow mods of a recorded ct capture.
func ctCaptureFlowMods(t *testing.T, name string) []*FlowMod {
	return ctCaptureFlowModsN(t, name, 10)
}

func ctCaptureFlowModsN(t *testing.T, name string, n int) []*FlowMod {
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
	if len(fms) != n {
		t.Fatalf("%s: %d flow mods, want %d", name, len(fms), n)
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
	for _, v := range []struct {
		name, proto, file string
		n                 int
	}{
		{"add-flows-ct", "", "ct-flows.txt", 10},
		{"of13-add-flows-ct", "OpenFlow13", "ct-flows.txt", 10},
		{"add-flows-ct-tuple", "", "ct-tuple-flows.txt", 4},
		{"of13-add-flows-ct-tuple", "OpenFlow13", "ct-tuple-flows.txt", 4},
	} {
		t.Run(v.name, func(t *testing.T) {
			s := newFakeSwitch(t)
			s.mu.Lock()
			for _, fm := range ctCaptureFlowModsN(t, v.name, v.n) {
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
			ref, err := exec.Command("ovs-ofctl", append(opts, "parse-flows", "testdata/ovs-ofctl/"+v.file)...).Output()
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

// TestCtTupleMatchText checks the conntrack tuple matches ovs-ofctl
// encoded (NXM and OXM) against what ovs-ofctl printed for them
// (parse-flows), field by field: the codec decodes them into Key.CtOrig
// and prints them back in ovs-ofctl's order, and re-encodes them into the
// bytes ovs-ofctl sent.
func TestCtTupleMatchText(t *testing.T) {
	want := []string{
		"ct_state=+est+trk,ct_nw_src=10.1.1.1,ct_nw_dst=10.1.1.0/24,ct_nw_proto=17,ct_tp_src=1,ct_tp_dst=0x100/0xff00,ip",
		"ct_state=+new+trk,ct_ipv6_src=2001:db8::1,ct_ipv6_dst=2001:db8::/32,ct_nw_proto=6,ct_tp_dst=80,ipv6",
		"ct_state=-inv+trk,ct_nw_proto=1",
		"ct_state=+rpl+trk,ct_mark=0x2,ct_nw_dst=192.168.0.1,tcp",
	}
	for _, name := range []string{"add-flows-ct-tuple", "of13-add-flows-ct-tuple"} {
		t.Run(name, func(t *testing.T) {
			fms := ctCaptureFlowModsN(t, name, len(want))
			for i, fm := range fms {
				got := string(AppendMatchText(nil, &fm.Match.Key, &fm.Match.Mask, MatchText{Priority: DefaultPriority}))
				if got != want[i] {
					t.Errorf("flow %d:\n got %s\nwant %s", i, got, want[i])
				}
			}
			if o := fms[0].Match.Key.CtOrig; o.Proto != 17 || o.TpSrc != 1 || o.IPv4Src != [4]byte{10, 1, 1, 1} {
				t.Errorf("flow 0 tuple %+v", o)
			}
		})
	}
}

// TestCtTupleNeedsValidConnection: a tuple match without a ct_state that
// pins down a valid connection is OFPBMC_BAD_PREREQ, as in ovs-vswitchd.
func TestCtTupleNeedsValidConnection(t *testing.T) {
	var m Match
	m.Key.CtOrig.IPv4Src = [4]byte{10, 0, 0, 1}
	m.Mask.CtOrig.IPv4Src = [4]byte{255, 255, 255, 255}
	for _, st := range []struct {
		v, m uint32
		ok   bool
	}{
		{0, 0, false},
		{0x20, 0x20, false}, // +trk
		{0x20, 0x30, true},  // +trk-inv
		{0x22, 0x22, true},  // +trk+est
		{0x30, 0x30, false}, // +trk+inv
		{0x01, 0x01, true},  // +new
		{0x00, 0x01, false}, // -new
	} {
		m.Key.CtState, m.Mask.CtState = st.v, st.m
		if got := FieldCtNwSrc.PrereqsMet(&m.Key, &m.Mask); got != st.ok {
			t.Errorf("ct_state %#x/%#x: prerequisites met %v, want %v", st.v, st.m, got, st.ok)
		}
	}
}
