package ofproto

import (
	"bytes"
	"context"
	"encoding/hex"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/govswitch/govswitch/classifier"
)

// durations hides what differs between two dumps taken at different
// times: durations and ages.
var durations = regexp.MustCompile(`duration=[0-9.]+s, |idle_age=\d+, |hard_age=\d+, `)

var tableDesc14 = regexp.MustCompile(`(?m)^ +(eviction|vacancy events): not supported\n`)

func normalize(out string) string {
	out = durations.ReplaceAllString(out, "")
	// The reply's name carries the version.
	return regexp.MustCompile(`\(OF1\.[0-9]\)`).ReplaceAllString(out, "(OF)")
}

// TestConnOvsOfctl14And15 drives the real ovs-ofctl over OpenFlow 1.4 and
// 1.5 against the switch and holds what it prints against what it prints
// over 1.3 for the same tables.
func TestConnOvsOfctl14And15(t *testing.T) {
	needTool(t, "ovs-ofctl")
	s := newTestSwitch(t, 2, BridgeConfig{FailMode: FailSecure}, ConnConfig{})
	of13 := []string{"-O", "OpenFlow13"}
	versions := map[string][]string{"1.4": {"-O", "OpenFlow14"}, "1.5": {"-O", "OpenFlow15"}}

	s.ofctl(t, of13, "add-flow", "cookie=0x10,priority=100,in_port=1,actions=output:2")
	s.ofctl(t, of13, "add-flow", "table=1,priority=7,ipv6,ipv6_src=2001:db8::1,actions=drop")
	s.ofctl(t, of13, "add-flow", "priority=300,udp,tp_dst=53,actions=set_field:10.0.0.1->ip_dst,goto_table:3")

	for name, opts := range versions {
		t.Run(name, func(t *testing.T) {
			out := s.ofctl(t, opts, "show")
			for _, want := range []string{"OFPT_FEATURES_REPLY (OF" + name + ")", "capabilities: FLOW_STATS TABLE_STATS PORT_STATS GROUP_STATS BUNDLES", " 1(p1): addr:", " 2(p2): addr:", " LOCAL(br0): addr:"} {
				if !strings.Contains(out, want) {
					t.Errorf("show lacks %q:\n%s", want, out)
				}
			}
			if a, b := normalize(s.ofctl(t, opts, "dump-ports-desc")), normalize(s.ofctl(t, of13, "dump-ports-desc")); a != b {
				t.Errorf("dump-ports-desc differs from 1.3:\n%s\nvs\n%s", a, b)
			}
			want := normalize(s.ofctl(t, of13, "dump-flows"))
			if got := normalize(s.ofctl(t, opts, "dump-flows")); got != want {
				t.Errorf("dump-flows differs from 1.3:\n%s\nvs\n%s", got, want)
			}
			s.checkDump(t, parseFlows(t, s.ofctl(t, opts, "dump-flows")), -1)
			if got, want := normalize(s.ofctl(t, opts, "dump-aggregate")), normalize(s.ofctl(t, of13, "dump-aggregate")); got != want {
				t.Errorf("dump-aggregate differs from 1.3:\n%s\nvs\n%s", got, want)
			}
			if out := s.ofctl(t, opts, "dump-ports"); !strings.Contains(out, "3 ports") || !strings.Contains(out, "port  1: rx pkts=") {
				t.Errorf("dump-ports:\n%s", out)
			}
			for _, cmd := range []string{"dump-tables", "dump-table-features", "dump-desc", "get-frags", "queue-stats"} {
				// 1.4 adds what 1.3 cannot say: whether tables evict and
				// report vacancy (they do neither).
				got := tableDesc14.ReplaceAllString(normalize(s.ofctl(t, opts, cmd)), "")
				if want := normalize(s.ofctl(t, of13, cmd)); got != want {
					t.Errorf("%s differs from 1.3:\n%s\nvs\n%s", cmd, got, want)
				}
			}

			// add, modify, delete.
			s.ofctl(t, opts, "add-flow", "table=2,priority=9,tcp,tp_src=22,actions=output:1")
			f := findFlow(parseFlows(t, s.ofctl(t, opts, "dump-flows", "table=2")), "tcp,tp_src=22")
			if f == nil || f.priority != 9 || f.actions != "output:1" {
				t.Fatalf("added flow dumped as %+v", f)
			}
			s.ofctl(t, opts, "mod-flows", "table=2,tcp,tp_src=22,actions=output:2")
			if f := findFlow(parseFlows(t, s.ofctl(t, opts, "dump-flows", "table=2")), "tcp,tp_src=22"); f == nil || f.actions != "output:2" {
				t.Errorf("modified flow dumped as %+v", f)
			}
			s.ofctl(t, opts, "del-flows", "table=2,tcp")
			if n := len(parseFlows(t, s.ofctl(t, opts, "dump-flows", "table=2"))); n != 0 {
				t.Errorf("%d flows in table 2 after del-flows", n)
			}
			if name == "1.4" {
				s.ofctl(t, opts, "add-flow", "table=2,importance=5,priority=9,tcp,actions=drop")
				if out := s.ofctl(t, opts, "dump-flows", "table=2"); !strings.Contains(out, "importance=5") {
					t.Errorf("importance not kept:\n%s", out)
				}
				s.ofctl(t, opts, "del-flows", "table=2")
			}

			// packet-out
			for {
				if _, err := s.devs["p2"].Recv(10 * time.Millisecond); err != nil {
					break
				}
			}
			fr := frame(7, 8)
			s.ofctl(t, opts, "packet-out", "in_port=controller packet="+hex.EncodeToString(fr)+" actions=output:2")
			if got, err := s.devs["p2"].Recv(2 * time.Second); err != nil || !bytes.Equal(got, fr) {
				t.Errorf("packet-out: p2 got % x (%v), want % x", got, err, fr)
			}

			// mod-port
			s.ofctl(t, opts, "mod-port", "p2", "down")
			if p := s.b.Ports.Snapshot().ByOF(2); p == nil || !p.Down {
				t.Errorf("mod-port down: port %+v", p)
			}
			s.ofctl(t, opts, "mod-port", "p2", "up")
			if p := s.b.Ports.Snapshot().ByOF(2); p == nil || p.Down {
				t.Errorf("mod-port up: port %+v", p)
			}
		})
	}
}

// TestConnOvsOfctlBundle drives ovs-ofctl --bundle over 1.3 (the ONF
// extension), 1.4, 1.5 and the default negotiation: the flows land, a
// bundle with one bad flow changes nothing and reports the bad one.
func TestConnOvsOfctlBundle(t *testing.T) {
	needTool(t, "ovs-ofctl")
	s := newTestSwitch(t, 2, BridgeConfig{FailMode: FailSecure}, ConnConfig{})
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	good := write("good.txt", "priority=10,in_port=1,actions=output:2\ntable=1,priority=5,ip,nw_dst=10.0.0.1,actions=drop\n"+
		"table=4,priority=5,ip,nw_dst=10.0.0.2,actions=output:1\n")
	// The third flow is bad: the switch has no group 5 (ovs-vswitchd
	// refuses it the same way).
	bad := write("bad.txt", "priority=11,in_port=2,actions=output:1\ntable=1,priority=6,udp,actions=drop\n"+
		"table=3,priority=1,actions=group:5\n")
	for _, opts := range [][]string{
		{"-O", "OpenFlow13", "--bundle"},
		{"-O", "OpenFlow14", "--bundle"},
		{"-O", "OpenFlow15", "--bundle"},
		{"--bundle"},
	} {
		t.Run(strings.Join(opts, " "), func(t *testing.T) {
			s.ofctl(t, nil, "del-flows")
			s.ofctl(t, opts, "add-flows", good)
			if n := s.b.Tables.Len(); n != 3 {
				t.Fatalf("%d flows after --bundle add-flows, want 3", n)
			}
			s.checkDump(t, parseFlows(t, s.ofctl(t, opts, "dump-flows")), -1)

			before := normalize(s.ofctl(t, nil, "dump-flows"))
			out, err := s.ofctlErr(opts, "add-flows", bad)
			if err == nil {
				t.Fatalf("a bundle with a bad flow succeeded:\n%s", out)
			}
			msg := err.Error()
			t.Logf("ovs-ofctl %s add-flows (one bad flow): %v", strings.Join(opts, " "), err)
			if !strings.Contains(msg, "OFPBAC_BAD_OUT_GROUP") || !strings.Contains(msg, "OFPBFC_MSG_FAILED") {
				t.Errorf("bad bundle: want OFPBAC_BAD_OUT_GROUP then OFPBFC_MSG_FAILED, got %v", err)
			}
			if after := normalize(s.ofctl(t, nil, "dump-flows")); after != before || s.b.Tables.Len() != 3 {
				t.Errorf("a failed bundle changed the tables:\n%s\nvs\n%s", after, before)
			}

			s.ofctl(t, opts, "mod-flows", "table=1,ip,nw_dst=10.0.0.1,actions=output:1")
			if f := findFlow(parseFlows(t, s.ofctl(t, nil, "dump-flows", "table=1")), "ip,nw_dst=10.0.0.1"); f == nil || f.actions != "output:1" {
				t.Errorf("--bundle mod-flows: %+v", f)
			}
			s.ofctl(t, opts, "del-flows", "table=4")
			if n := s.b.Tables.Len(); n != 2 {
				t.Errorf("%d flows after --bundle del-flows, want 2", n)
			}
			s.ofctl(t, opts, "replace-flows", write("repl.txt", "priority=1,actions=drop\ntable=1,priority=5,ip,nw_dst=10.0.0.1,actions=drop\n"))
			flows := parseFlows(t, s.ofctl(t, nil, "dump-flows"))
			if len(flows) != 2 || findFlow(flows, "") == nil || findFlow(flows, "ip,nw_dst=10.0.0.1") == nil {
				t.Errorf("--bundle replace-flows left %+v", flows)
			}
		})
	}
}

// TestConnOsKen connects the switch to os-ken (python3-os-ken), a real
// controller framework, running a learning switch over OpenFlow 1.4 and
// 1.5 (testdata/osken_learn.py): os-ken negotiates the version, takes the
// features and port descriptions, installs its table-miss flow, and from
// packet-ins learns, installs flows and sends packet-outs that reach the
// other port.
func TestConnOsKen(t *testing.T) {
	if _, err := exec.LookPath("osken-manager"); err != nil {
		// Not needTool: scripts/install-deps does not install
		// python3-os-ken yet, so CI would fail for want of it.
		t.Skip("osken-manager not installed (Debian python3-os-ken)")
	}
	app, err := filepath.Abs("testdata/osken_learn.py")
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range []string{"14", "15"} {
		t.Run("OpenFlow"+v, func(t *testing.T) {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			port := ln.Addr().(*net.TCPAddr).Port
			ln.Close()
			ctx, cancel := context.WithCancel(context.Background())
			cmd := exec.CommandContext(ctx, "osken-manager", "--ofp-listen-host", "127.0.0.1",
				"--ofp-tcp-listen-port", fmt.Sprint(port), app)
			cmd.Env = append(os.Environ(), "OSKEN_OFP="+v)
			var out syncBuffer
			cmd.Stdout, cmd.Stderr = &out, &out
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() {
				cancel()
				cmd.Wait()
				if t.Failed() {
					t.Logf("osken-manager output:\n%s", out.String())
				}
			})
			// os-ken (Python) takes seconds to start; the switch's reconnect
			// backoff would add more.
			deadline := time.Now().Add(30 * time.Second)
			for {
				c, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", port))
				if err == nil {
					c.Close()
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("osken-manager does not listen: %v", err)
				}
				time.Sleep(100 * time.Millisecond)
			}
			s := newTestSwitch(t, 2, BridgeConfig{FailMode: FailSecure, HasControllers: true}, ConnConfig{
				Controllers: []string{fmt.Sprintf("tcp:127.0.0.1:%d", port)}})
			waitFor(t, "os-ken's table-miss flow", func() bool { return s.b.Tables.Len() > 0 })
			if st := s.m.Controllers()[0]; fmt.Sprintf("%x", st.Version) != map[string]string{"14": "5", "15": "6"}[v] {
				t.Fatalf("negotiated version %#x", st.Version)
			}
			ab := frame(0xa, 0xb)
			if err := s.devs["p1"].Send(ab); err != nil {
				t.Fatal(err)
			}
			if got, err := s.devs["p2"].Recv(10 * time.Second); err != nil || !bytes.Equal(got, ab) {
				t.Fatalf("os-ken's flood did not reach p2: % x, %v", got, err)
			}
			ba := frame(0xb, 0xa)
			if err := s.devs["p2"].Send(ba); err != nil {
				t.Fatal(err)
			}
			if got, err := s.devs["p1"].Recv(10 * time.Second); err != nil || !bytes.Equal(got, ba) {
				t.Fatalf("p1 got % x, %v; want the B→A frame", got, err)
			}
			waitFor(t, "os-ken's learned flow", func() bool { return s.b.Tables.Len() >= 2 })
			if !strings.Contains(out.String(), "LEARN connected version 0x0"+map[string]string{"14": "5", "15": "6"}[v]) {
				t.Errorf("os-ken did not report the version:\n%s", out.String())
			}
			t.Logf("os-ken over 1.%s: %d packet-ins, %d flows", v[1:], s.m.Controllers()[0].PacketInsSent, s.b.Tables.Len())
		})
	}
}

// syncBuffer is a bytes.Buffer safe for a process's output and a reader.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestConnOvsOfctlBundleSequence replays ovs-vswitchd's own test "ofproto
// - bundle with multiple flow mods (OpenFlow 1.4)" (tests/ofproto.at):
// within a bundle each flow mod sees the ones before it: an add of an
// existing flow replaces it, a delete of everything empties the tables,
// and a strict delete or modify picks out one flow.
func TestConnOvsOfctlBundleSequence(t *testing.T) {
	needTool(t, "ovs-ofctl")
	s := newTestSwitch(t, 2, BridgeConfig{FailMode: FailSecure}, ConnConfig{})
	dir := t.TempDir()
	run := func(flows, want string) {
		t.Helper()
		file := filepath.Join(dir, "flows.txt")
		if err := os.WriteFile(file, []byte(flows), 0o644); err != nil {
			t.Fatal(err)
		}
		s.ofctl(t, []string{"--no-names", "--bundle"}, "add-flows", file)
		var got []string
		for _, line := range strings.Split(s.ofctl(t, nil, "dump-flows"), "\n") {
			if strings.HasPrefix(line, " cookie=") {
				got = append(got, ofctlStrip(line))
			}
		}
		sort.Strings(got)
		if g := strings.Join(got, "\n"); g != want {
			t.Errorf("after the bundle:\n%s\nwant\n%s", g, want)
		}
	}
	s.ofctl(t, []string{"--no-names"}, "del-flows")
	run(`add idle_timeout=50 in_port=2 dl_src=00:66:77:88:99:aa actions=1
add idle_timeout=60 in_port=2 dl_src=00:77:88:99:aa:bb actions=2
add idle_timeout=70 in_port=2 dl_src=00:88:99:aa:bb:cc actions=3
add idle_timeout=50 in_port=2 dl_src=00:66:77:88:99:aa actions=4
delete
add idle_timeout=50 in_port=2 dl_src=00:66:77:88:99:aa actions=5
add idle_timeout=60 in_port=2 dl_src=00:77:88:99:aa:bb actions=6
add idle_timeout=70 in_port=2 dl_src=00:88:99:aa:bb:cc actions=7
delete in_port=2 dl_src=00:88:99:aa:bb:cc
`, ` idle_timeout=50, in_port=2,dl_src=00:66:77:88:99:aa actions=output:5
 idle_timeout=60, in_port=2,dl_src=00:77:88:99:aa:bb actions=output:6`)
	run(`modify actions=drop
modify_strict in_port=2 dl_src=00:77:88:99:aa:bb actions=7
`, ` idle_timeout=50, in_port=2,dl_src=00:66:77:88:99:aa actions=drop
 idle_timeout=60, in_port=2,dl_src=00:77:88:99:aa:bb actions=output:7`)
	run(`add idle_timeout=60 in_port=2 dl_src=00:77:88:99:aa:bb actions=8
delete_strict in_port=2 dl_src=00:66:77:88:99:aa
add in_port=2 dl_src=00:66:77:88:99:aa actions=drop
`, ` idle_timeout=60, in_port=2,dl_src=00:77:88:99:aa:bb actions=output:8
 in_port=2,dl_src=00:66:77:88:99:aa actions=drop`)
}

// ofctlStrip is OVS's ofctl_strip for a flow line: no cookie, duration,
// counters or ages.
func ofctlStrip(line string) string {
	return regexp.MustCompile(` cookie=0x[0-9a-f]+,| duration=[0-9.]+s,| n_packets=\d+,| n_bytes=\d+,| idle_age=\d+,| hard_age=\d+,| table=0,`).
		ReplaceAllString(line, "")
}

// TestConnOvsOfctlResetCounts: an OpenFlow 1.0 add always resets the
// counters of the flow it replaces, and 1.3+ dumps say so (reset_counts),
// as ovs-vswitchd's do ("ofproto - bundle packet-out" expects
// " reset_counts priority=0 actions=drop" for a flow ovs-ofctl added).
func TestConnOvsOfctlResetCounts(t *testing.T) {
	needTool(t, "ovs-ofctl")
	s := newTestSwitch(t, 2, BridgeConfig{FailMode: FailSecure}, ConnConfig{})
	s.ofctl(t, nil, "add-flow", "priority=0,actions=drop")
	for _, v := range []string{"OpenFlow13", "OpenFlow14", "OpenFlow15"} {
		if out := durations.ReplaceAllString(s.ofctl(t, []string{"-O", v}, "dump-flows"), ""); !strings.Contains(out, " reset_counts priority=0 actions=drop") {
			t.Errorf("%s dump-flows:\n%s", v, out)
		}
	}
	var all classifierMatchAll
	rules := s.b.Tables.Select(0, &all.m, 0, 0, 0xffffffff)
	if len(rules) != 1 {
		t.Fatalf("%d rules", len(rules))
	}
	rules[0].Value.Credit(5, 500, time.Now())
	s.ofctl(t, nil, "add-flow", "priority=0,actions=drop")
	if p, _ := s.b.Tables.Select(0, &all.m, 0, 0, 0xffffffff)[0].Value.Stats(); p != 0 {
		t.Errorf("a 1.0 re-add kept %d packets", p)
	}
	// A 1.3 add without reset_counts keeps them.
	rules = s.b.Tables.Select(0, &all.m, 0, 0, 0xffffffff)
	rules[0].Value.Credit(5, 500, time.Now())
	s.ofctl(t, []string{"-O", "OpenFlow13"}, "add-flow", "priority=0,actions=drop")
	if p, _ := s.b.Tables.Select(0, &all.m, 0, 0, 0xffffffff)[0].Value.Stats(); p != 5 {
		t.Errorf("a 1.3 re-add left %d packets, want 5", p)
	}
}

type classifierMatchAll struct{ m classifier.Match }
