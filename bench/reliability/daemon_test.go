// Package reliability holds the end-to-end reliability and security checks
// of govswitchd (issue 9) that need a whole daemon: its flags (--max-flows,
// --ssl-*), TLS interoperability with the real ovs-ofctl, and the driver
// of bench/reliability/run, which gathers every figure into
// bench/RELIABILITY.md.
package reliability

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/govswitch/govswitch/datapath/dummy"
	"github.com/govswitch/govswitch/internal/testpki"
	"github.com/govswitch/govswitch/internal/testutil"
	"github.com/govswitch/govswitch/ofproto/openflow"
	"github.com/govswitch/govswitch/vswitchd"
)

// ofConn is a minimal OpenFlow peer.
type ofConn struct {
	t   *testing.T
	nc  net.Conn
	fr  *openflow.Framer
	v   uint8
	xid uint32
}

func newOFConn(t *testing.T, nc net.Conn, v uint8) *ofConn {
	t.Helper()
	t.Cleanup(func() { nc.Close() })
	c := &ofConn{t: t, nc: nc, fr: openflow.NewFramer(0), v: v}
	c.send(&openflow.Hello{Envelope: openflow.Envelope{Version: v}, Versions: openflow.VersionBitmap(v)})
	if _, ok := c.recv().(*openflow.Hello); !ok {
		t.Fatal("first message is not a hello")
	}
	return c
}

func (c *ofConn) send(m openflow.Msg) uint32 {
	c.t.Helper()
	env := m.Env()
	if env.Version == 0 {
		env.Version = c.v
	}
	if env.Xid == 0 {
		c.xid++
		env.Xid = c.xid
	}
	b, err := m.Append(nil)
	if err != nil {
		c.t.Fatalf("encode %T: %v", m, err)
	}
	c.nc.SetWriteDeadline(time.Now().Add(5 * time.Second))
	if _, err := c.nc.Write(b); err != nil {
		c.t.Fatalf("write: %v", err)
	}
	return env.Xid
}

// recv returns the next message that is not an echo request (those are
// answered).
func (c *ofConn) recv() openflow.Msg {
	c.t.Helper()
	for {
		c.nc.SetReadDeadline(time.Now().Add(5 * time.Second))
		raw, err := c.fr.ReadMsg(c.nc)
		if err != nil {
			c.t.Fatalf("read: %v", err)
		}
		m, err := openflow.Decode(raw)
		if err != nil {
			c.t.Fatalf("decode: %v", err)
		}
		if e, ok := m.(*openflow.EchoRequest); ok {
			c.send(&openflow.EchoReply{Envelope: openflow.Envelope{Xid: e.Xid}, Data: e.Data})
			continue
		}
		return m
	}
}

// addFlow adds a drop flow at priority prio to table 0 and returns the
// error the switch answers before the barrier reply, or nil.
func (c *ofConn) addFlow(prio uint16) *openflow.ErrorMsg {
	c.t.Helper()
	c.send(&openflow.FlowMod{Command: openflow.FlowAdd, Priority: prio, BufferID: openflow.NoBuffer,
		OutPort: openflow.PortAny, OutGroup: openflow.GroupAny})
	xid := c.send(&openflow.BarrierRequest{})
	var em *openflow.ErrorMsg
	for {
		switch m := c.recv().(type) {
		case *openflow.ErrorMsg:
			em = m
		case *openflow.BarrierReply:
			if m.Xid == xid {
				return em
			}
		}
	}
}

func startDaemon(t *testing.T, extra ...string) (*vswitchd.Daemon, string) {
	t.Helper()
	rundir := t.TempDir()
	prov := dummy.New()
	if _, err := prov.AddNetdev("p1"); err != nil {
		t.Fatal(err)
	}
	args := append([]string{"--datapath", "dummy", "--rundir", rundir, "--pidfile", "-", "--handlers", "1",
		"--bridge", "br0", "--port", "p1"}, extra...)
	cfg, _, _, err := vswitchd.ParseArgs(args)
	if err != nil {
		t.Fatal(err)
	}
	d, err := vswitchd.New(cfg, prov, &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(d.Stop)
	return d, rundir
}

// TestMaxFlowsFlag: --max-flows N lets N OpenFlow flows in and refuses
// the next with OFPFMFC_TABLE_FULL (1.3) or OFPFMFC_ALL_TABLES_FULL (1.0);
// the connection stays up and a replacement of an existing flow (same
// match and priority) is still accepted.
func TestMaxFlowsFlag(t *testing.T) {
	tests := []struct {
		name      string
		v         uint8
		typ, code uint16
	}{
		{name: "OpenFlow 1.3", v: openflow.Version13, typ: openflow.Err13TypeFlowModFailed, code: openflow.FlowModFailed13TableFull},
		{name: "OpenFlow 1.0", v: openflow.Version10, typ: openflow.Err10TypeFlowModFail, code: openflow.FlowModFailed10AllTablesFull},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			// Secure: no default NORMAL flow (standalone has one, which counts).
			_, rundir := startDaemon(t, "--fail-mode", "secure", "--max-flows", "3")
			nc, err := net.Dial("unix", filepath.Join(rundir, "br0.mgmt"))
			if err != nil {
				t.Fatal(err)
			}
			c := newOFConn(t, nc, tc.v)
			for p := uint16(1); p <= 3; p++ {
				if em := c.addFlow(p); em != nil {
					t.Fatalf("flow %d of 3 refused: type %d code %d", p, em.Type, em.Code)
				}
			}
			em := c.addFlow(4)
			if em == nil {
				t.Fatal("a 4th flow was accepted with --max-flows 3")
			}
			if em.Type != tc.typ || em.Code != tc.code {
				t.Errorf("error type %d code %d, want %d/%d", em.Type, em.Code, tc.typ, tc.code)
			}
			if em := c.addFlow(2); em != nil {
				t.Errorf("replacing an existing flow refused: type %d code %d", em.Type, em.Code)
			}
		})
	}
}

// TestBadFlags: the new flags' mistakes are reported before anything
// starts.
func TestBadFlags(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want string
	}{
		{name: "max-flows not a number", args: []string{"--bridge", "br0", "--max-flows", "many"}, want: "non-negative number"},
		{name: "pssl without files", args: []string{"--bridge", "br0", "--listen", "pssl:6653"}, want: "needs --private-key, --certificate and --ca-cert"},
		{name: "ssl without CA", args: []string{"--ssl-private-key", "k", "--ssl-certificate", "c", "--bridge", "br0",
			"--controller", "ssl:127.0.0.1"}, want: "--ca-cert"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg, _, _, err := vswitchd.ParseArgs(tc.args)
			if err == nil {
				_, err = vswitchd.New(cfg, dummy.New(), &bytes.Buffer{})
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want %q", err, tc.want)
			}
		})
	}
}

// freePort returns a TCP port on 127.0.0.1 that was free a moment ago.
func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// TestSSLFlags: govswitchd --ssl-* with --listen pssl: serves a client
// whose certificate chains to the CA and refuses one from another CA; and
// the real ovs-ofctl (when installed) talks to it over ssl: with -p/-c/-C.
func TestSSLFlags(t *testing.T) {
	dir := t.TempDir()
	ca := testpki.New(t, dir, "ca")
	other := testpki.New(t, dir, "other")
	swKey, swCert := ca.Issue(t, "switch")
	ctlKey, ctlCert := ca.Issue(t, "controller")
	badKey, badCert := other.Issue(t, "intruder")
	port := freePort(t)
	startDaemon(t, "--ssl-private-key", swKey, "--ssl-certificate", swCert, "--ssl-ca-cert", ca.CAFile,
		"--listen", "pssl:"+strconv.Itoa(port)+":127.0.0.1")
	addr := "127.0.0.1:" + strconv.Itoa(port)

	roots := x509.NewCertPool()
	roots.AddCert(ca.CA())
	tests := []struct {
		name      string
		key, cert string
		ok        bool
	}{
		{name: "certificate of the CA", key: ctlKey, cert: ctlCert, ok: true},
		{name: "certificate of another CA", key: badKey, cert: badCert},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			kp, err := tls.LoadX509KeyPair(tc.cert, tc.key)
			if err != nil {
				t.Fatal(err)
			}
			cfg := &tls.Config{Certificates: []tls.Certificate{kp}, InsecureSkipVerify: true,
				VerifyConnection: func(cs tls.ConnectionState) error {
					_, err := cs.PeerCertificates[0].Verify(x509.VerifyOptions{Roots: roots,
						KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageAny}})
					return err
				}}
			nc, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", addr, cfg)
			if err != nil {
				t.Fatalf("TLS dial (the switch's certificate must verify either way): %v", err)
			}
			defer nc.Close()
			nc.SetDeadline(time.Now().Add(5 * time.Second))
			fr := openflow.NewFramer(0)
			raw, err := fr.ReadMsg(nc)
			if !tc.ok {
				if err == nil {
					t.Fatalf("the switch sent % x to a peer of another CA", raw)
				}
				return
			}
			if err != nil {
				t.Fatalf("no hello over TLS: %v", err)
			}
			if m, _ := openflow.Decode(raw); m == nil || raw[1] != 0 {
				t.Fatalf("first message % x is not a hello", raw)
			}
		})
	}

	ofctl, err := exec.LookPath("ovs-ofctl")
	if err != nil {
		t.Log("ovs-ofctl not installed; interop not checked")
		return
	}
	t.Run("ovs-ofctl ssl", func(t *testing.T) {
		out, err := exec.Command(ofctl, "-p", ctlKey, "-c", ctlCert, "-C", ca.CAFile, "-O", "OpenFlow13",
			"show", "ssl:"+addr).CombinedOutput()
		if err != nil || !strings.Contains(string(out), "OFPT_FEATURES_REPLY") {
			t.Fatalf("ovs-ofctl show over ssl: %v\n%s", err, out)
		}
		out, err = exec.Command(ofctl, "-p", badKey, "-c", badCert, "-C", other.CAFile, "-O", "OpenFlow13",
			"show", "ssl:"+addr).CombinedOutput()
		if err == nil {
			t.Fatalf("ovs-ofctl with another CA's certificate was served:\n%s", out)
		}
	})
}

// TestSSLControllerInterop: govswitchd --controller ssl: reaches the real
// ovs-testcontroller listening on pssl: with -p/-c/-C, and the
// controller's session with it gets as far as its features reply (the
// controller logs the switch's datapath id); with a certificate of
// another CA the controller refuses the switch.
func TestSSLControllerInterop(t *testing.T) {
	tc, err := exec.LookPath("ovs-testcontroller")
	if err != nil {
		t.Skip("ovs-testcontroller not installed")
	}
	dir := t.TempDir()
	ca := testpki.New(t, dir, "ca")
	other := testpki.New(t, dir, "other")
	ctlKey, ctlCert := ca.Issue(t, "controller")
	tests := []struct {
		name    string
		pki     *testpki.PKI // signs the switch's certificate
		connect bool
	}{
		{name: "switch of the CA", pki: ca, connect: true},
		{name: "switch of another CA", pki: other},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			swKey, swCert := tt.pki.Issue(t, "switch-"+strings.Fields(tt.name)[2])
			port := freePort(t)
			var log testutil.SyncBuffer
			cmd := exec.Command(tc, "-p", ctlKey, "-c", ctlCert, "-C", ca.CAFile, "-vconsole:info", "-vvconn:console:dbg",
				"--no-chdir", "pssl:"+strconv.Itoa(port)+":127.0.0.1")
			cmd.Env = append(os.Environ(), "OVS_RUNDIR="+dir)
			cmd.Stdout, cmd.Stderr = &log, &log
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
			time.Sleep(300 * time.Millisecond) // let it listen
			startDaemon(t, "--ssl-private-key", swKey, "--ssl-certificate", swCert, "--ssl-ca-cert", ca.CAFile,
				"--fail-mode", "secure", "--controller", "ssl:127.0.0.1:"+strconv.Itoa(port))
			const features = "received: OFPT_FEATURES_REPLY"
			deadline := time.Now().Add(3 * time.Second)
			for time.Now().Before(deadline) && !strings.Contains(log.String(), features) {
				time.Sleep(50 * time.Millisecond)
			}
			got := log.String()
			switch {
			case tt.connect && !strings.Contains(got, features):
				t.Fatalf("ovs-testcontroller got no features reply over ssl:\n%s", got)
			case !tt.connect && strings.Contains(got, "received:"):
				t.Fatalf("ovs-testcontroller talked OpenFlow with a switch of another CA:\n%s", got)
			case !tt.connect && !strings.Contains(got, "SSL_accept"):
				t.Fatalf("ovs-testcontroller logged no refused handshake:\n%s", got)
			}
		})
	}
}
