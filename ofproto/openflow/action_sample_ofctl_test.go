package openflow

import (
	"bytes"
	"os/exec"
	"regexp"
	"strings"
	"testing"
)

// sampleCaptures are the ovs-ofctl 3.1 sessions behind the sample action
// codec, recorded as TestOvsOfctl records its own (OFCTL_RECORD=1): each
// has the three encodings (SAMPLE; SAMPLE2 for a sampling port; SAMPLE3
// for a direction).
var sampleCaptures = []capture{
	{"sample-actions-of10", []string{"add-flow", "SW",
		"ip,actions=sample(probability=65535,collector_set_id=1,obs_domain_id=2,obs_point_id=3)," +
			"sample(probability=100,collector_set_id=4,obs_domain_id=5,obs_point_id=6,sampling_port=2)," +
			"sample(probability=12345,collector_set_id=7,obs_domain_id=8,obs_point_id=9,ingress),output:2"}},
	{"sample-actions-of13", []string{"-O", "OpenFlow13", "add-flow", "SW",
		"ip,actions=sample(probability=1,collector_set_id=4294967295,obs_domain_id=0,obs_point_id=4294967295)," +
			"sample(probability=32768,collector_set_id=1,obs_domain_id=2,obs_point_id=3,sampling_port=LOCAL,egress)," +
			"output:1,sample(probability=2,collector_set_id=3,obs_domain_id=4,obs_point_id=5,sampling_port=1)"}},
	{"sample-actions-of15", []string{"-O", "OpenFlow15", "add-flow", "SW",
		"ip,actions=sample(probability=65535,collector_set_id=1,obs_domain_id=2,obs_point_id=3,egress)," +
			"sample(probability=6553,collector_set_id=9,obs_domain_id=8,obs_point_id=7),output:2"}},
}

// TestOvsOfctlSampleCaptures records (OFCTL_RECORD=1) or checks the
// captures: every message decodes and re-encodes to ovs-ofctl's bytes.
func TestOvsOfctlSampleCaptures(t *testing.T) {
	recordOrCheckCaptures(t, sampleCaptures)
}

// TestSampleCaptureMeaning checks what the recorded actions decode to,
// and that the same actions built here encode to ovs-ofctl's bytes.
func TestSampleCaptureMeaning(t *testing.T) {
	for _, tc := range []struct {
		name string
		want []Action
	}{
		{"sample-actions-of10", []Action{Sample(65535, 1, 2, 3, PortAny, SampleDefault), Sample(100, 4, 5, 6, 2, SampleDefault),
			Sample(12345, 7, 8, 9, PortAny, SampleIngress), Output(2, 0)}},
		{"sample-actions-of13", []Action{Sample(1, 0xffffffff, 0, 0xffffffff, PortAny, SampleDefault),
			Sample(32768, 1, 2, 3, PortLocal, SampleEgress), Output(1, 0), Sample(2, 3, 4, 5, 1, SampleDefault)}},
		{"sample-actions-of15", []Action{Sample(65535, 1, 2, 3, PortAny, SampleEgress), Sample(6553, 9, 8, 7, PortAny, SampleDefault),
			Output(2, 0)}},
	} {
		var fm *FlowMod
		var raw []byte
		for _, r := range readCapture(t, tc.name) {
			m, err := Decode(r)
			if err != nil {
				t.Fatal(err)
			}
			if f, ok := m.(*FlowMod); ok {
				fm, raw = f, r
			}
		}
		if fm == nil {
			t.Fatalf("%s: no flow mod", tc.name)
		}
		got := fm.Instructions.Apply
		for i := range got {
			if got[i].Type == ActSample {
				got[i].Ofs = 0 // the subtype it came as
			}
		}
		if !actionsEqual(got, tc.want) {
			t.Errorf("%s:\n got %+v\nwant %+v", tc.name, got, tc.want)
		}
		// Built from scratch, the actions encode as ovs-ofctl chose.
		fm.Instructions.Apply = tc.want
		out, err := fm.Append(nil)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(out, raw) {
			t.Errorf("%s: built actions encode\n % x\nwant % x", tc.name, out, raw)
		}
	}
}

// TestSampleDecodeErrors: what ovs-vswitchd refuses.
func TestSampleDecodeErrors(t *testing.T) {
	base := func(sub uint16, n int) []byte {
		b := nxActionHeader(nil, uint16(n), sub)
		b = be16(b, 1)
		for len(b) < n {
			b = append(b, 0)
		}
		return b
	}
	zeroProb := base(NXASTSample, 24)
	zeroProb[11] = 0
	badDir := base(NXASTSample3, 32)
	badDir[26] = 3
	pad := base(NXASTSample3, 32)
	pad[31] = 1
	pad2 := base(NXASTSample2, 32)
	pad2[26], pad2[31] = 7, 1 // SAMPLE2 reads neither
	for _, tc := range []struct {
		name string
		act  []byte
		ok   bool
	}{
		{"zero probability", zeroProb, false},
		{"sample of 32 bytes", base(NXASTSample, 32), false},
		{"sample3 of 24 bytes", base(NXASTSample3, 24), false},
		{"bad direction", badDir, false},
		{"sample3 padding", pad, false},
		{"sample2 ignores direction and padding", pad2, true},
	} {
		a, err := decodeVendorAction(Version10, tc.act)
		if (err == nil) != tc.ok {
			t.Errorf("%s: %+v, %v", tc.name, a, err)
		}
		if tc.ok && a.TTL != SampleDefault {
			t.Errorf("%s: direction %d", tc.name, a.TTL)
		}
	}
}

// TestSampleOvsOfctlDump serves the recorded flows back to the real
// ovs-ofctl as flow stats: it prints what it prints for the same text
// (parse-flow).
func TestSampleOvsOfctlDump(t *testing.T) {
	if _, err := exec.LookPath("ovs-ofctl"); err != nil {
		t.Skip("ovs-ofctl not installed")
	}
	parsed := regexp.MustCompile(`FLOW_MOD (?:\(OF1\.[0-9]\) )?\(xid=0x[0-9a-f]+\): ADD (?:table:(\d+) )?(.*)$`)
	for _, c := range sampleCaptures {
		t.Run(c.name, func(t *testing.T) {
			s := newFakeSwitch(t)
			var opts []string
			if c.args[0] == "-O" {
				opts = c.args[:2]
			}
			flowText := c.args[len(c.args)-1]
			s.mu.Lock()
			for _, raw := range readCapture(t, c.name) {
				m, err := Decode(raw)
				if err != nil {
					t.Fatal(err)
				}
				if fm, ok := m.(*FlowMod); ok {
					var fs FlowStats
					fs.Priority, fs.Match, fs.Instructions = fm.Priority, fm.Match, fm.Instructions
					s.flows = append(s.flows, fs)
				}
			}
			s.mu.Unlock()
			out := s.ofctl(t, append(opts, "dump-flows", "SW")...)
			s.take(t)
			ref, err := exec.Command("ovs-ofctl", append(opts, "parse-flow", flowText)...).Output()
			if err != nil {
				t.Fatal(err)
			}
			var want string
			for _, line := range strings.Split(string(ref), "\n") {
				if m := parsed.FindStringSubmatch(line); m != nil {
					want = m[2]
				}
			}
			var got string
			for _, line := range strings.Split(out, "\n") {
				if i := strings.Index(line, "n_bytes=0, "); i >= 0 {
					got = line[i+len("n_bytes=0, "):]
				}
			}
			if want == "" || got != want || !strings.Contains(got, "sample(") {
				t.Errorf("dump-flows:\n got %s\nwant %s\n(%s)", got, want, out)
			}
		})
	}
}

// TestSampleTshark: tshark reads the 1.0 and 1.3 flow mods carrying our
// sample actions (ovs-ofctl's bytes: they re-encode identically) without
// a malformed or error mark. (Its 1.5 dissector throws on any OXM match,
// TestTshark's control for it.)
func TestSampleTshark(t *testing.T) {
	if _, err := exec.LookPath("tshark"); err != nil {
		t.Skip("tshark not installed")
	}
	var raws [][]byte
	for _, name := range []string{"sample-actions-of10", "sample-actions-of13"} {
		for _, raw := range readCapture(t, name) {
			if raw[1] == TypeFlowMod {
				m, err := Decode(raw)
				if err != nil {
					t.Fatal(err)
				}
				raws = append(raws, mustAppend(t, m))
			}
		}
	}
	path := t.TempDir() + "/sample.pcap"
	writePcap(t, path, raws)
	full, err := exec.Command("tshark", "-r", path, "-V").Output()
	if err != nil {
		t.Fatalf("tshark -V: %v", err)
	}
	for _, bad := range []string{"Malformed", "Expert Info (Error"} {
		if strings.Contains(string(full), bad) {
			t.Errorf("tshark marks the sample flow mods %q:\n%s", bad, full)
		}
	}
	if !strings.Contains(string(full), "OFPT_FLOW_MOD") && !strings.Contains(string(full), "FLOW_MOD") {
		t.Errorf("tshark did not read flow mods:\n%s", full)
	}
}

// FuzzSampleAction: the sample decoder takes any body without
// panicking, and what it accepts re-encodes to the same bytes (SAMPLE2's
// unread direction and padding aside).
func FuzzSampleAction(f *testing.F) {
	f.Add([]byte{0, 0x1d, 0xff, 0xff, 0, 0, 0, 1, 0, 0, 0, 2, 0, 0, 0, 3})
	f.Add([]byte{0, 0x29, 0x30, 0x39, 0, 0, 0, 7, 0, 0, 0, 8, 0, 0, 0, 9, 0xff, 0xff, 1, 0, 0, 0, 0, 0})
	f.Add([]byte{0, 0x26, 0, 100, 0, 0, 0, 4, 0, 0, 0, 5, 0, 0, 0, 6, 0, 2, 0, 0, 0, 0, 0, 0})
	f.Fuzz(func(t *testing.T, body []byte) {
		act := be32(be16(be16(nil, 0xffff), uint16(8+len(body))), NXVendorID)
		act = append(act, body...)
		if len(act) < 16 || len(act)%8 != 0 {
			return
		}
		a, err := decodeVendorAction(Version10, act)
		if err != nil || a.Type != ActSample {
			return
		}
		out, err := appendSample(nil, &a)
		if err != nil {
			t.Fatalf("%x decoded as %+v, does not re-encode: %v", act, a, err)
		}
		if a.Ofs == NXASTSample2 {
			out[26], act[26] = 0, 0
			copy(act[27:32], out[27:32])
		}
		if !bytes.Equal(out, act) {
			t.Fatalf("%x decoded as %+v, re-encoded %x", act, a, out)
		}
	})
}
