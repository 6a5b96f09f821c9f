package vswitchd

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/govswitch/govswitch/datapath"
	"github.com/govswitch/govswitch/datapath/dummy"
	"github.com/govswitch/govswitch/internal/testpki"
	"github.com/govswitch/govswitch/internal/testutil"
	"github.com/govswitch/govswitch/ofproto"
	"github.com/govswitch/govswitch/ovsdb/ovsdbtest"
)

// ovsdbSwitchUnderTest is a daemon on the in-memory datapath configured
// from a real ovsdb-server.
type ovsdbSwitchUnderTest struct {
	d    *Daemon
	srv  *ovsdbtest.Server
	prov *dummy.Provider
	dir  string
	log  *testutil.SyncBuffer
	tls  [3]string // -p, -c, -C for the daemon
}

func startOVSDBSwitch(t *testing.T, devices ...string) *ovsdbSwitchUnderTest {
	t.Helper()
	srv := ovsdbtest.Start(t)
	prov := dummy.New()
	for _, n := range devices {
		if _, err := prov.AddNetdev(n); err != nil {
			t.Fatal(err)
		}
	}
	s := &ovsdbSwitchUnderTest{srv: srv, prov: prov, dir: t.TempDir()}
	t.Cleanup(s.startDaemon(t))
	return s
}

// startDaemon runs a daemon on s's provider and database, and returns
// what stops it (and logs its log if the test failed).
func (s *ovsdbSwitchUnderTest) startDaemon(t *testing.T) (stop func()) {
	t.Helper()
	log := &testutil.SyncBuffer{}
	d, err := NewForOVSDB(Config{Datapath: "dummy", Rundir: s.dir, Pidfile: "-", Handlers: 2,
		SSLPrivateKey: s.tls[0], SSLCertificate: s.tls[1], SSLCACert: s.tls[2]}, s.prov, log)
	if err != nil {
		t.Fatal(err)
	}
	stopDaemon := runOVSDB(t, d, s.srv.Remote, 10*time.Second)
	s.d, s.log = d, log
	return func() {
		stopDaemon()
		if t.Failed() {
			t.Logf("daemon log:\n%s", log.String())
		}
	}
}

// runOVSDB runs d against the database at remote, and returns what stops
// it: cancel, then fail the test if RunOVSDB erred or took over wait to
// return.
func runOVSDB(t *testing.T, d *Daemon, remote string, wait time.Duration) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- d.RunOVSDB(ctx, remote) }()
	return func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("RunOVSDB: %v", err)
			}
		case <-time.After(wait):
			t.Errorf("RunOVSDB did not return after cancel")
		}
	}
}

// vsctl runs ovs-vsctl, failing the test when it hangs: every command
// must return within limit, which needs the daemon to write cur_cfg.
func (s *ovsdbSwitchUnderTest) vsctl(t *testing.T, args ...string) (string, error) {
	t.Helper()
	const limit = 5 * time.Second
	start := time.Now()
	out, err := s.srv.Vsctl(limit, args...)
	if el := time.Since(start); el >= limit || strings.Contains(out, "timed out") {
		t.Fatalf("ovs-vsctl %s did not return in %v: %s", strings.Join(args, " "), limit, out)
	}
	return out, err
}

func (s *ovsdbSwitchUnderTest) must(t *testing.T, args ...string) string {
	t.Helper()
	out, err := s.vsctl(t, args...)
	if err != nil {
		t.Fatalf("ovs-vsctl %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

func portNames(b *ofproto.Bridge) map[string]uint32 {
	out := map[string]uint32{}
	for _, p := range b.Ports.Snapshot().List() {
		out[p.Name] = p.OFPort
	}
	return out
}

// TestOVSDBPortsAndTraffic builds a bridge with ovs-vsctl alone and checks
// that the switch and the database follow every command, and that traffic
// follows the ports.
func TestOVSDBPortsAndTraffic(t *testing.T) {
	s := startOVSDBSwitch(t, "p1", "p2", "p3")
	s.must(t, "add-br", "br0")
	b := s.d.Bridge("br0")
	if b == nil {
		t.Fatal("add-br returned but the daemon has no br0")
	}
	if _, err := os.Stat(filepath.Join(s.dir, "br0.mgmt")); err != nil {
		t.Errorf("no OpenFlow mgmt socket for br0: %v", err)
	}
	s.must(t, "add-port", "br0", "p1")
	s.must(t, "add-port", "br0", "p2", "--", "set", "Interface", "p2", "ofport_request=10")

	b = s.d.Bridge("br0")
	want := map[string]uint32{"br0": 0xfffffffe, "p1": 1, "p2": 10}
	if got := portNames(b); !reflect.DeepEqual(got, want) {
		t.Fatalf("ports %v, want %v", got, want)
	}
	for _, c := range []struct{ iface, want string }{{"br0", "65534"}, {"p1", "1"}, {"p2", "10"}} {
		if got := s.must(t, "get", "Interface", c.iface, "ofport"); got != c.want {
			t.Errorf("Interface %s ofport = %s, want %s", c.iface, got, c.want)
		}
	}
	if got := s.must(t, "get", "Bridge", "br0", "datapath_id"); len(got) != 18 {
		t.Errorf("datapath_id = %s, want 16 hex digits in quotes", got)
	}

	p1, p2, p3 := s.prov.Netdev("p1"), s.prov.Netdev("p2"), s.prov.Netdev("p3")
	ab := tcpFrame(macA, macB, 40000, 80)
	p1.Send(ab)
	expectFrame(t, p2, ab)

	// A port whose device does not exist: ofport -1, the error on the row
	// and in ovs-vsctl's output, the rest untouched.
	out, _ := s.vsctl(t, "add-port", "br0", "nosuch0")
	if !strings.Contains(out, "Error detected while setting up 'nosuch0'") || !strings.Contains(out, "No such device") {
		t.Errorf("add-port of a missing device: ovs-vsctl said %q", out)
	}
	if got := s.must(t, "get", "Interface", "nosuch0", "ofport"); got != "-1" {
		t.Errorf("nosuch0 ofport = %s, want -1", got)
	}
	if show := s.must(t, "show"); !strings.Contains(show, `error: "could not open network device nosuch0 (No such device)"`) {
		t.Errorf("ovs-vsctl show lacks nosuch0's error:\n%s", show)
	}
	ofports := s.must(t, "--columns=name,ofport", "--format=csv", "--no-headings", "list", "Interface")
	for _, want := range []string{"br0,65534", "p1,1", "p2,10", "nosuch0,-1"} {
		if !strings.Contains(ofports, want) {
			t.Errorf("Interface ofports lack %q:\n%s", want, ofports)
		}
	}

	// del-port: the port leaves the bridge and the datapath, and its
	// traffic stops.
	s.must(t, "del-port", "br0", "p2")
	if _, ok := portNames(s.d.Bridge("br0"))["p2"]; ok {
		t.Error("p2 still on br0 after del-port")
	}
	s.must(t, "add-port", "br0", "p3")
	// The datapath flow that flooded to p2 was revalidated before
	// ovs-vsctl returned: it floods to p3 now.
	p1.Send(tcpFrame(macA, macB, 40001, 80))
	expectFrame(t, p3, tcpFrame(macA, macB, 40001, 80))
	expectNoFrame(t, p2)
	if err := p2.Send(ab); err == nil {
		t.Error("p2 still attached to a datapath after del-port")
	}

	// del-br of the last bridge destroys the shared datapath.
	s.must(t, "del-br", "br0")
	if s.d.Bridge("br0") != nil {
		t.Error("br0 still running after del-br")
	}
	if _, err := s.prov.Open("ovs-system", datapath.Config{}); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("ovs-system after del-br of the last bridge: Open = %v, want not exist", err)
	}
	if _, err := os.Stat(filepath.Join(s.dir, "br0.mgmt")); err == nil {
		t.Error("br0.mgmt left behind after del-br")
	}
}

// TestOVSDBFailModeAndController: set-fail-mode and set-controller reach
// the running bridge; ports keep their OpenFlow numbers across the
// reconfiguration.
func TestOVSDBFailModeAndController(t *testing.T) {
	s := startOVSDBSwitch(t, "p1", "p2")
	s.must(t, "add-br", "br0", "--", "add-port", "br0", "p1", "--", "add-port", "br0", "p2",
		"--", "set", "Interface", "p2", "ofport_request=7")
	p1, p2 := s.prov.Netdev("p1"), s.prov.Netdev("p2")
	frame := func(n uint16) []byte { return tcpFrame(macA, macB, 40000+n, 80) }
	p1.Send(frame(0))
	expectFrame(t, p2, frame(0))

	s.must(t, "set-fail-mode", "br0", "secure")
	b := s.d.Bridge("br0")
	if b == nil || b.Config.FailMode != ofproto.FailSecure {
		t.Fatalf("after set-fail-mode secure: bridge %v", b)
	}
	if got := portNames(b); got["p1"] != 1 || got["p2"] != 7 {
		t.Errorf("ports renumbered by the reconfiguration: %v", got)
	}
	if n := b.Tables.Len(); n != 0 {
		t.Errorf("secure bridge without controller has %d flows, want 0", n)
	}
	p1.Send(frame(1))
	expectNoFrame(t, p2)

	s.must(t, "del-fail-mode", "br0")
	p1.Send(frame(2))
	expectFrame(t, p2, frame(2))

	// A controller: the bridge dials it and says hello.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	s.must(t, "set-controller", "br0", "tcp:"+ln.Addr().String())
	ln.(*net.TCPListener).SetDeadline(time.Now().Add(5 * time.Second))
	c, err := ln.Accept()
	if err != nil {
		t.Fatalf("the bridge did not connect to its controller: %v", err)
	}
	c.SetDeadline(time.Now().Add(5 * time.Second))
	hdr := make([]byte, 8)
	if _, err := io.ReadFull(c, hdr); err != nil || hdr[1] != 0 /* OFPT_HELLO */ {
		t.Errorf("controller got %x, %v; want an OpenFlow hello", hdr, err)
	}
	c.Close()
	if !s.d.Bridge("br0").Config.HasControllers {
		t.Error("bridge does not know it has a controller")
	}
	s.must(t, "del-controller", "br0")
	if s.d.Bridge("br0").Config.HasControllers {
		t.Error("bridge still has a controller after del-controller")
	}

	// Controllers the switch cannot use cost themselves, not the bridge.
	for _, target := range []string{"ssl:127.0.0.1:6653", "tcp:not-an-address:x:y"} {
		s.must(t, "set-controller", "br0", target)
		if b := s.d.Bridge("br0"); b == nil {
			t.Fatalf("set-controller %s stopped the bridge", target)
		} else if got := portNames(b); got["p1"] != 1 || got["p2"] != 7 {
			t.Errorf("set-controller %s: ports %v", target, got)
		}
		if got := s.must(t, "get", "Interface", "p1", "ofport"); got != "1" {
			t.Errorf("set-controller %s: p1 ofport %s", target, got)
		}
	}
	for _, want := range []string{"|bridge|WARN|controller target needs -p/--private-key", "controllers not usable"} {
		if !strings.Contains(s.log.String(), want) {
			t.Errorf("log lacks %q:\n%s", want, s.log.String())
		}
	}
}

// TestOVSDBSSLController: with -p, -c and -C on the command line, an
// ssl: controller set with ovs-vsctl is connected to over TLS, each side
// checking the other's certificate against the CA.
func TestOVSDBSSLController(t *testing.T) {
	srv := ovsdbtest.Start(t)
	prov := dummy.New()
	prov.AddNetdev("p1")
	pki := testpki.New(t, t.TempDir(), "ca")
	key, cert := pki.Issue(t, "switch")
	s := &ovsdbSwitchUnderTest{srv: srv, prov: prov, dir: t.TempDir(), tls: [3]string{key, cert, pki.CAFile}}
	t.Cleanup(s.startDaemon(t))
	ckey, ccert := pki.Issue(t, "controller")
	pair, err := tls.LoadX509KeyPair(ccert, ckey)
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AddCert(pki.CA())
	ln, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{pair},
		ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: roots})
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	s.must(t, "add-br", "br0")
	s.must(t, "set-controller", "br0", "ssl:"+ln.Addr().String())
	type result struct {
		hdr []byte
		err error
	}
	got := make(chan result, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			got <- result{err: err}
			return
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(5 * time.Second))
		hdr := make([]byte, 8)
		_, err = io.ReadFull(c, hdr)
		got <- result{hdr, err}
	}()
	select {
	case r := <-got:
		if r.err != nil || r.hdr[1] != 0 /* OFPT_HELLO */ {
			t.Errorf("controller got %x, %v; want an OpenFlow hello over TLS", r.hdr, r.err)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("the bridge did not connect to its ssl: controller:\n%s", s.log.String())
	}
}

// TestOVSDBRestartKeepsOFPorts: a restarted daemon reattaches the
// datapath and gives its ports the OpenFlow numbers the database holds,
// without removing and re-adding them (traffic keeps flowing).
func TestOVSDBRestartKeepsOFPorts(t *testing.T) {
	srv := ovsdbtest.Start(t)
	prov := dummy.New()
	for _, n := range []string{"p1", "p2"} {
		if _, err := prov.AddNetdev(n); err != nil {
			t.Fatal(err)
		}
	}
	s := &ovsdbSwitchUnderTest{srv: srv, prov: prov, dir: t.TempDir()}
	stop := s.startDaemon(t)
	s.must(t, "add-br", "br0", "--", "add-port", "br0", "p1", "--", "add-port", "br0", "p2")
	// p1 becomes OpenFlow port 9 (datapath port 1); with the request
	// cleared only the database's ofport column remembers the 9.
	s.must(t, "set", "Interface", "p1", "ofport_request=9")
	s.must(t, "clear", "Interface", "p1", "ofport_request")
	before := portNames(s.d.Bridge("br0"))
	var dpPort uint32
	for _, p := range s.d.Bridge("br0").Ports.Snapshot().List() {
		if p.Name == "p1" {
			dpPort = p.DPPort
		}
	}
	if before["p1"] == dpPort {
		t.Fatalf("p1 is OpenFlow port %d and datapath port %d: the test needs them to differ", before["p1"], dpPort)
	}
	stop()

	t.Cleanup(s.startDaemon(t))
	s.must(t, "set", "Open_vSwitch", ".", "external_ids:poke=1") // a reconfiguration to wait for
	if after := portNames(s.d.Bridge("br0")); !reflect.DeepEqual(after, before) {
		t.Errorf("after restart ports %v, want %v", after, before)
	}
	if strings.Contains(s.log.String(), "deleted") {
		t.Errorf("the restart removed ports:\n%s", s.log.String())
	}
	if !strings.Contains(s.log.String(), "reattached=true") {
		t.Errorf("the restart did not reattach the datapath:\n%s", s.log.String())
	}
}

// TestOVSDBOtherConfig: the knobs reach bridges, bad values are logged and
// ignored.
func TestOVSDBOtherConfig(t *testing.T) {
	s := startOVSDBSwitch(t)
	s.must(t, "set", "Open_vSwitch", ".", "other_config:govswitch-governor=true", "other_config:max-idle=2500",
		"other_config:flow-limit=oops")
	s.must(t, "add-br", "br0", "--", "set", "Bridge", "br0", "other_config:mac-table-size=123",
		"other_config:mac-aging-time=17")
	b := s.d.Bridge("br0")
	if b == nil {
		t.Fatal("no br0")
	}
	cases := []struct {
		name      string
		got, want any
	}{
		{"governor on", b.Config.Upcall.Governor != nil, true},
		{"max-idle", b.Config.Upcall.MaxIdle, 2500 * time.Millisecond},
		{"flow-limit kept default", b.Config.Upcall.FlowLimit, ofproto.DefaultFlowLimit},
		{"mac-table-size", b.Config.MACTableSize, 123},
		{"mac-aging-time", b.Config.MACAging, 17 * time.Second},
	}
	for _, c := range cases {
		if c.got != c.want {
			t.Errorf("%s: got %v, want %v", c.name, c.got, c.want)
		}
	}
	if !strings.Contains(s.log.String(), `|bridge|WARN|Open_vSwitch other_config:flow-limit="oops"`) {
		t.Errorf("bad flow-limit not logged:\n%s", s.log.String())
	}
}

func TestSplitOVSDBArgs(t *testing.T) {
	cases := []struct {
		name    string
		args    []string
		remote  string
		rest    []string
		wantErr bool
	}{
		{"none", []string{"--datapath", "dummy"}, "", []string{"--datapath", "dummy"}, false},
		{"flag", []string{"--ovsdb", "unix:/x.sock", "--handlers", "2"}, "unix:/x.sock", []string{"--handlers", "2"}, false},
		{"flag=", []string{"--ovsdb=tcp:127.0.0.1:6640"}, "tcp:127.0.0.1:6640", nil, false},
		{"bare like ovs-vswitchd", []string{"unix:/var/run/openvswitch/db.sock", "--log-level", "debug"},
			"unix:/var/run/openvswitch/db.sock", []string{"--log-level", "debug"}, false},
		{"missing value", []string{"--ovsdb"}, "", nil, true},
		{"bad remote", []string{"--ovsdb", "/var/run/db.sock"}, "", nil, true},
	}
	for _, c := range cases {
		remote, rest, err := SplitOVSDBArgs(c.args)
		if (err != nil) != c.wantErr {
			t.Errorf("%s: err %v", c.name, err)
			continue
		}
		if c.wantErr {
			continue
		}
		if remote != c.remote || !reflect.DeepEqual(rest, c.rest) {
			t.Errorf("%s: got %q %q, want %q %q", c.name, remote, rest, c.remote, c.rest)
		}
	}
}

func TestNewForOVSDBRefusesBridges(t *testing.T) {
	_, err := NewForOVSDB(Config{Datapath: "dummy", Bridges: []BridgeSpec{{Name: "br0"}}}, dummy.New(), io.Discard)
	if err == nil {
		t.Error("NewForOVSDB accepted a flag-configured bridge")
	}
	if _, err := NewForOVSDB(Config{Datapath: "bogus"}, dummy.New(), io.Discard); err == nil {
		t.Error("NewForOVSDB accepted a bad datapath type")
	}
}

// The wiring cmd/govswitchd needs for `govswitchd --ovsdb REMOTE` (or a
// bare unix:PATH argument, as ovs-vswitchd takes): the database then
// owns the bridges.
func ExampleNewForOVSDB() {
	remote, rest, err := SplitOVSDBArgs(os.Args[1:])
	if err != nil {
		fmt.Fprintln(os.Stderr, "govswitchd:", err)
		os.Exit(1)
	}
	cfg, _, _, err := ParseArgs(rest)
	if err != nil {
		fmt.Fprintln(os.Stderr, "govswitchd:", err)
		os.Exit(1)
	}
	if remote == "" {
		return // flag-driven: New and Run, as before
	}
	d, err := NewForOVSDB(cfg, nil, nil)
	if err == nil {
		err = d.RunOVSDB(context.Background(), remote) // a signal.NotifyContext in main
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "govswitchd:", err)
		os.Exit(1)
	}
}

// TestRunOVSDBNoServer: a database that cannot be reached is an error at
// start, and the daemon is stopped again (its control socket removed).
func TestRunOVSDBNoServer(t *testing.T) {
	dir := t.TempDir()
	d, err := NewForOVSDB(Config{Datapath: "dummy", Rundir: dir, Pidfile: "-"}, dummy.New(), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err = d.RunOVSDB(ctx, "unix:"+filepath.Join(dir, "none.sock"))
	if err == nil || !strings.Contains(err.Error(), "is ovsdb-server running?") {
		t.Errorf("RunOVSDB without a server: %v", err)
	}
	if ctls, _ := filepath.Glob(filepath.Join(dir, "*.ctl")); len(ctls) != 0 {
		t.Errorf("control socket left behind: %v", ctls)
	}
}

// TestOVSDBOverSSL: DATABASE ssl:IP:PORT with -p, -c and -C reaches a
// real ovsdb-server's pssl: remote, each side checking the other's
// certificate, and the bridges come from it.
func TestOVSDBOverSSL(t *testing.T) {
	for _, bin := range []string{"ovsdb-server", "ovsdb-tool", "ovs-vsctl"} {
		if _, err := exec.LookPath(bin); err != nil {
			t.Skipf("%s not installed (Debian package openvswitch-switch)", bin)
		}
	}
	pki := testpki.New(t, t.TempDir(), "ca")
	skey, scert := pki.Issue(t, "ovsdb")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	dir := t.TempDir()
	db := filepath.Join(dir, "conf.db")
	if out, err := exec.Command("ovsdb-tool", "create", db, ovsdbtest.Schema).CombinedOutput(); err != nil {
		t.Fatalf("ovsdb-tool: %v\n%s", err, out)
	}
	sock := filepath.Join(dir, "db.sock")
	cmd := exec.Command("ovsdb-server", db, "--remote=punix:"+sock, fmt.Sprintf("--remote=pssl:%d:127.0.0.1", port),
		"--private-key="+skey, "--certificate="+scert, "--ca-cert="+pki.CAFile,
		"--unixctl="+filepath.Join(dir, "ctl"), "--no-chdir", "-vconsole:off", "--log-file="+filepath.Join(dir, "ovsdb-server.log"))
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	vsctl := func(args ...string) {
		t.Helper()
		full := append([]string{"--db=unix:" + sock, "--timeout=20"}, args...)
		if out, err := exec.Command("ovs-vsctl", full...).CombinedOutput(); err != nil {
			t.Fatalf("ovs-vsctl %v: %v\n%s", args, err, out)
		}
	}
	waitFor(t, func() bool {
		c, err := net.Dial("unix", sock)
		if err == nil {
			c.Close()
		}
		return err == nil
	})
	vsctl("--no-wait", "init")
	vsctl("--no-wait", "add-br", "br0")

	key, cert := pki.Issue(t, "switch")
	log := &testutil.SyncBuffer{}
	d, err := NewForOVSDB(Config{Datapath: "dummy", Rundir: t.TempDir(), Pidfile: "-", Handlers: 1,
		SSLPrivateKey: key, SSLCertificate: cert, SSLCACert: pki.CAFile}, dummy.New(), log)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- d.RunOVSDB(ctx, fmt.Sprintf("ssl:127.0.0.1:%d", port)) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("RunOVSDB: %v", err)
		}
	}()
	deadline := time.Now().Add(10 * time.Second)
	for d.Bridge("br0") == nil {
		if time.Now().After(deadline) {
			t.Fatalf("no bridge from the ssl: database:\n%s", log.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestOVSDBLACPCurrent: Interface lacp_current of a LACP bond's members
// follows LACP with no partner on the in-memory datapath (an active
// bond's members start expired, true; 3 s later, at the fast rate, they
// are defaulted, false), is empty for a port of no bond, and is cleared
// when the bond stops running LACP.
func TestOVSDBLACPCurrent(t *testing.T) {
	s := startOVSDBSwitch(t, "p1", "p2", "p3")
	s.must(t, "add-br", "br0")
	s.must(t, "add-bond", "br0", "bond0", "p1", "p2", "lacp=active", "bond_mode=balance-tcp", "other_config:lacp-time=fast")
	s.must(t, "add-port", "br0", "p3")
	wait := func(iface, want string) {
		t.Helper()
		var got string
		for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
			if got = strings.TrimSpace(s.must(t, "get", "Interface", iface, "lacp_current")); got == want {
				return
			}
		}
		t.Fatalf("Interface %s lacp_current %s, want %s", iface, got, want)
	}
	wait("p1", "false")
	wait("p2", "false")
	wait("p3", "[]")
	s.must(t, "set", "Port", "bond0", "lacp=off", "bond_mode=active-backup")
	wait("p1", "[]")
	wait("p2", "[]")
}
