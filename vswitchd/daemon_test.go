package vswitchd

import (
	"bytes"
	"encoding/binary"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/govswitch/govswitch/datapath/dummy"
)

// setIPv4Checksum computes and writes the checksum of the IPv4 header ip[:20].
func setIPv4Checksum(ip []byte) {
	binary.BigEndian.PutUint16(ip[10:], 0)
	var sum uint32
	for i := 0; i < 20; i += 2 {
		sum += uint32(binary.BigEndian.Uint16(ip[i:]))
	}
	for sum > 0xffff {
		sum = sum&0xffff + sum>>16
	}
	binary.BigEndian.PutUint16(ip[10:], ^uint16(sum))
}

// tcpFrame builds an Ethernet/IPv4/TCP SYN from src to dst MACs with the
// given ports.
func tcpFrame(src, dst [6]byte, sport, dport uint16) []byte {
	b := make([]byte, 14+20+20)
	copy(b[0:], dst[:])
	copy(b[6:], src[:])
	binary.BigEndian.PutUint16(b[12:], 0x0800)
	ip := b[14:]
	ip[0] = 0x45
	binary.BigEndian.PutUint16(ip[2:], 40)
	ip[8] = 64
	ip[9] = 6
	copy(ip[12:], []byte{10, 0, 0, 1})
	copy(ip[16:], []byte{10, 0, 0, 2})
	setIPv4Checksum(ip)
	tcp := ip[20:]
	binary.BigEndian.PutUint16(tcp[0:], sport)
	binary.BigEndian.PutUint16(tcp[2:], dport)
	tcp[12] = 5 << 4
	tcp[13] = 0x02 // SYN
	return b
}

var (
	macA = [6]byte{0x02, 0, 0, 0, 0, 0xa}
	macB = [6]byte{0x02, 0, 0, 0, 0, 0xb}
)

type testSwitch struct {
	d      *Daemon
	prov   *dummy.Provider
	p1, p2 *dummy.Netdev
	log    *bytes.Buffer
}

func startSwitch(t *testing.T, prov *dummy.Provider, rundir string, extra ...string) *testSwitch {
	t.Helper()
	if prov == nil {
		prov = dummy.New()
		for _, n := range []string{"p1", "p2"} {
			if _, err := prov.AddNetdev(n); err != nil {
				t.Fatal(err)
			}
		}
	}
	args := append([]string{"--datapath", "dummy", "--rundir", rundir, "--handlers", "2",
		"--bridge", "br0", "--port", "p1", "--port", "p2"}, extra...)
	cfg, _, _, err := ParseArgs(args)
	if err != nil {
		t.Fatal(err)
	}
	var log bytes.Buffer
	d, err := New(cfg, prov, &log)
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Start(); err != nil {
		t.Fatal(err)
	}
	return &testSwitch{d: d, prov: prov, p1: prov.Netdev("p1"), p2: prov.Netdev("p2"), log: &log}
}

func (s *testSwitch) appctl(t *testing.T, cmd string, args ...string) string {
	t.Helper()
	out, err := s.d.ctl.Run(cmd, args)
	if err != nil {
		t.Fatalf("%s: %v", cmd, err)
	}
	return out
}

// expectFrame waits for a frame on n and checks it is want.
func expectFrame(t *testing.T, n *dummy.Netdev, want []byte) {
	t.Helper()
	got, err := n.Recv(2 * time.Second)
	if err != nil {
		t.Fatalf("%s: no frame: %v", n.Name(), err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("%s: got a different frame", n.Name())
	}
}

func expectNoFrame(t *testing.T, n *dummy.Netdev) {
	t.Helper()
	if f, err := n.Recv(100 * time.Millisecond); err == nil {
		t.Fatalf("%s: unexpected frame of %d bytes", n.Name(), len(f))
	}
}

// TestNormalSwitching: a standalone bridge learns and forwards; the first
// packet of each direction upcalls, later ones hit the datapath flow, and
// the flows' masks are NORMAL's (no L3/L4 bits).
func TestNormalSwitching(t *testing.T) {
	s := startSwitch(t, nil, t.TempDir())
	defer s.d.Stop()

	ab := tcpFrame(macA, macB, 40000, 80)
	s.p1.Send(ab)
	expectFrame(t, s.p2, ab) // B unknown: flooded (the only other port with a device)
	ba := tcpFrame(macB, macA, 80, 40000)
	s.p2.Send(ba)
	expectFrame(t, s.p1, ba) // A learned on p1
	expectNoFrame(t, s.p2)

	// A new TCP connection between the same hosts is forwarded by the
	// datapath flow alone: NORMAL's megaflow has no L4 bits.
	b := s.d.Bridge("br0")
	before := b.Udpif.Stats().Misses
	// Let the handler's put land before sending the next packet.
	waitFor(t, func() bool { st, _ := b.DP.Stats(); return st.Flows >= 2 })
	s.p1.Send(tcpFrame(macA, macB, 40001, 443))
	expectFrame(t, s.p2, tcpFrame(macA, macB, 40001, 443))
	if after := b.Udpif.Stats().Misses; after != before {
		t.Errorf("a second connection upcalled (%d -> %d misses): megaflow too narrow", before, after)
	}
	dump := s.appctl(t, "dpctl/dump-flows")
	if strings.Contains(dump, "tcp(") || strings.Contains(dump, "ipv4(src") {
		t.Errorf("NORMAL megaflows should not match L3/L4:\n%s", dump)
	}
	if !strings.Contains(dump, "eth(src=02:00:00:00:00:0a,dst=02:00:00:00:00:0b)") {
		t.Errorf("dump lacks the A->B flow:\n%s", dump)
	}
	fdb := s.appctl(t, "fdb/show", "br0")
	if !strings.Contains(fdb, "02:00:00:00:00:0a") || !strings.Contains(fdb, "02:00:00:00:00:0b") {
		t.Errorf("fdb/show:\n%s", fdb)
	}
	show := s.appctl(t, "dpif/show")
	for _, want := range []string{"dummy@ovs-system: hit:", "  br0:", "    p1 1/2: (system)", "    br0 65534/1: (internal)"} {
		if !strings.Contains(show, want) {
			t.Errorf("dpif/show lacks %q:\n%s", want, show)
		}
	}
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met in 5s")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestDisableMegaflows: exact-match flows, one per microflow.
func TestDisableMegaflows(t *testing.T) {
	s := startSwitch(t, nil, t.TempDir(), "--disable-megaflows")
	defer s.d.Stop()
	b := s.d.Bridge("br0")
	for i := 0; i < 5; i++ {
		f := tcpFrame(macA, macB, uint16(50000+i), 80)
		s.p1.Send(f)
		expectFrame(t, s.p2, f)
	}
	waitFor(t, func() bool { st, _ := b.DP.Stats(); return st.Flows == 5 })
	dump := s.appctl(t, "dpctl/dump-flows")
	if !strings.Contains(dump, "tcp(src=50003,dst=80)") {
		t.Errorf("exact-match flows should carry the ports:\n%s", dump)
	}
}

// TestGovernorStorm: with --governor engaged (a low threshold), a storm of
// one-packet flows is delivered packet by packet while few flows get
// installed; a flow that keeps sending gets installed.
func TestGovernorStorm(t *testing.T) {
	s := startSwitch(t, nil, t.TempDir(), "--governor", "--governor-threshold", "100", "--disable-megaflows")
	defer s.d.Stop()
	b := s.d.Bridge("br0")
	// Teach the switch both MACs so frames are unicast.
	s.p2.Send(tcpFrame(macB, macA, 1, 1))
	s.p1.Recv(time.Second)
	const n = 2000
	for i := 0; i < n; i++ {
		f := tcpFrame(macA, macB, uint16(10000+i), 80)
		s.p1.Send(f)
		if _, err := s.p2.Recv(2 * time.Second); err != nil {
			t.Fatalf("packet %d of the storm was not delivered: %v", i, err)
		}
	}
	st := b.Udpif.Stats()
	if st.GovernorExecutes == 0 {
		t.Fatalf("the governor never declined a flow: %+v", st)
	}
	flows, _ := b.DP.Stats()
	if flows.Flows > 400 {
		t.Errorf("%d datapath flows after %d one-packet flows: the governor should keep it near its threshold", flows.Flows, n)
	}
	// A long flow: its packets keep upcalling until the governor installs it.
	long := tcpFrame(macA, macB, 9, 9)
	installed := false
	for i := 0; i < 20 && !installed; i++ {
		s.p1.Send(long)
		s.p2.Recv(time.Second)
		waitFor(t, func() bool { return true })
		dump := s.appctl(t, "dpctl/dump-flows")
		installed = strings.Contains(dump, "tcp(src=9,dst=9)")
	}
	if !installed {
		t.Errorf("a long flow was never installed")
	}
	gs := s.appctl(t, "governor/show")
	if !strings.Contains(gs, "engaged") {
		t.Errorf("governor/show:\n%s", gs)
	}
	t.Logf("storm of %d one-packet flows: %d datapath flows, governor executes %d, installs %d", n,
		flows.Flows, st.GovernorExecutes, st.GovernorInstalls)
}

// TestRestartReattaches: stopping the daemon leaves the datapath and its
// flows; a new daemon reattaches, keeps forwarding, and adopts the flows
// that still translate the same on its first revalidation.
func TestRestartReattaches(t *testing.T) {
	rundir := t.TempDir()
	s := startSwitch(t, nil, rundir)
	ab := tcpFrame(macA, macB, 1000, 80)
	ba := tcpFrame(macB, macA, 80, 1000)
	s.p1.Send(ab)
	s.p2.Recv(time.Second)
	s.p2.Send(ba)
	s.p1.Recv(time.Second)
	b := s.d.Bridge("br0")
	waitFor(t, func() bool { st, _ := b.DP.Stats(); return st.Flows >= 2 })
	s.d.Stop()

	// Between runs, traffic still flows in the datapath.
	s.p1.Send(ab)
	expectFrame(t, s.p2, ab)

	s2 := startSwitch(t, s.prov, rundir)
	defer s2.d.Stop()
	b2 := s2.d.Bridge("br0")
	if !strings.Contains(s2.log.String(), "reattached=true") {
		t.Errorf("the second run did not reattach:\n%s", s2.log.String())
	}
	// The MAC table is empty after a restart, so A->B now floods: the old
	// unicast flow no longer translates the same and is replaced; B->A
	// likewise. What matters: traffic flows and nothing stale survives.
	b2.Udpif.Revalidate()
	st := b2.Udpif.Stats()
	if st.Adopted+st.StaleDeleted == 0 {
		t.Errorf("the first revalidation neither adopted nor deleted the old flows: %+v", st)
	}
	s2.p1.Send(ab)
	expectFrame(t, s2.p2, ab)
	t.Logf("after restart: adopted %d, deleted %d", st.Adopted, st.StaleDeleted)
}

func TestBadConfig(t *testing.T) {
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"--port", "eth0"}, "must follow a --bridge"},
		{[]string{"--bridge", "br0", "--datapath", "vpp"}, "want system or dummy"},
		{[]string{"--bridge", "averyveryverylongname"}, "1 to 15 characters"},
		{[]string{"--bridge", "br0", "--fail-mode", "open"}, "fail mode"},
		{[]string{"--bridge", "br0", "--flow-limit", "lots"}, "non-negative number"},
		{[]string{"--bridge", "br0", "--bogus"}, "unrecognized option '--bogus'"},
		{[]string{"--bridge", "br0", "--port", "p1", "--bridge", "br1", "--port", "p1"}, "on two bridges"},
		{[]string{"unix:/run/db.sock", "--bridge", "br0"}, "exclude each other"},
		{[]string{"--ovsdb", "ssl:1.2.3.4:6640"}, "database ssl:1.2.3.4:6640 needs -p/--private-key"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			cfg, _, _, err := ParseArgs(tt.args)
			if err == nil {
				_, err = New(cfg, dummy.New(), &bytes.Buffer{})
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("err = %v, want %q", err, tt.want)
			}
		})
	}
}

// TestOVSDBArgument: ovs-vswitchd's DATABASE argument and --ovsdb both
// select database-driven configuration, with no bridge on the command line.
func TestOVSDBArgument(t *testing.T) {
	for _, args := range [][]string{
		{"unix:/var/run/openvswitch/db.sock", "--datapath", "dummy"},
		{"--datapath", "dummy", "--ovsdb", "unix:/var/run/openvswitch/db.sock"},
	} {
		cfg, _, _, err := ParseArgs(args)
		if err != nil {
			t.Fatal(err)
		}
		if cfg.OVSDB != "unix:/var/run/openvswitch/db.sock" {
			t.Errorf("%v: OVSDB = %q", args, cfg.OVSDB)
		}
		if _, err := New(cfg, dummy.New(), &bytes.Buffer{}); err != nil {
			t.Errorf("%v: %v", args, err)
		}
	}
}

func TestConfigFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c.json")
	body := `{"datapath":"dummy","bridges":[{"name":"br0","ports":["p1","p2:internal"],"fail_mode":"secure"}],
		"max_idle":"2s","governor":true}`
	if err := writeFile(path, body); err != nil {
		t.Fatal(err)
	}
	cfg, _, _, err := ParseArgs([]string{"--config", path, "--handlers", "3"})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Datapath != "dummy" || cfg.MaxIdle != 2*time.Second || !cfg.Governor || cfg.Handlers != 3 ||
		len(cfg.Bridges) != 1 || cfg.Bridges[0].FailMode != "secure" || len(cfg.Bridges[0].Ports) != 2 {
		t.Errorf("parsed %+v", cfg)
	}
	if err := writeFile(path, `{"bridgez":[]}`); err != nil {
		t.Fatal(err)
	}
	if _, _, _, err := ParseArgs([]string{"--config", path}); err == nil {
		t.Errorf("unknown field accepted")
	}
}

func writeFile(path, s string) error {
	return os.WriteFile(path, []byte(s), 0o644)
}
