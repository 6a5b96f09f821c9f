package ofproto

import (
	"crypto/tls"
	"crypto/x509"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/govswitch/govswitch/datapath"
	"github.com/govswitch/govswitch/datapath/dummy"
	"github.com/govswitch/govswitch/internal/testpki"
	"github.com/govswitch/govswitch/ofproto/openflow"
)

// clientTLS is a peer's TLS configuration: its certificate (none if
// keyFile is "") and the CA it trusts.
func clientTLS(t *testing.T, keyFile, certFile, caFile string) *tls.Config {
	t.Helper()
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if keyFile != "" {
		c, err := tls.LoadX509KeyPair(certFile, keyFile)
		if err != nil {
			t.Fatal(err)
		}
		cfg.Certificates = []tls.Certificate{c}
	}
	pemb, err := os.ReadFile(caFile)
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(pemb)
	cfg.InsecureSkipVerify = true
	cfg.VerifyConnection = func(cs tls.ConnectionState) error { return verifyPeerChain(cs.PeerCertificates, roots) }
	return cfg
}

// TestConnTLSListener: a pssl: listener serves OpenFlow to a peer whose
// certificate chains to the CA, and refuses one without a certificate or
// with a certificate from another CA; a peer that trusts another CA
// refuses the switch. A refused handshake leaves the listener serving.
func TestConnTLSListener(t *testing.T) {
	pki := testpki.New(t, t.TempDir(), "switchca")
	other := testpki.New(t, t.TempDir(), "otherca")
	swKey, swCert := pki.Issue(t, "switch")
	ctlKey, ctlCert := pki.Issue(t, "controller")
	evilKey, evilCert := other.Issue(t, "intruder")
	s := newTestSwitch(t, 1, BridgeConfig{}, ConnConfig{NoMgmt: true, Listeners: []string{"pssl:0:127.0.0.1"},
		SSLPrivateKey: swKey, SSLCertificate: swCert, SSLCACert: pki.CAFile})
	addr := s.m.ListenerAddrs()[0].String()

	tests := []struct {
		name   string
		client *tls.Config
		ok     bool
		errHas string // in the client's handshake or first read error
	}{
		{name: "good certificate", client: clientTLS(t, ctlKey, ctlCert, pki.CAFile), ok: true},
		{name: "no client certificate", client: clientTLS(t, "", "", pki.CAFile)},
		{name: "certificate of another CA", client: clientTLS(t, evilKey, evilCert, pki.CAFile)},
		{name: "client trusts another CA", client: clientTLS(t, ctlKey, ctlCert, other.CAFile), errHas: "unknown authority"},
		{name: "good certificate again", client: clientTLS(t, ctlKey, ctlCert, pki.CAFile), ok: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			nc, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", addr, tc.client)
			if err == nil {
				// With TLS 1.3 the server's verdict on the client's
				// certificate arrives with the first read.
				cl := newClient(t, nc)
				_, err = cl.recvRaw(5 * time.Second)
				if err == nil && tc.ok {
					cl.v = openflow.Version13
					cl.send(&openflow.Hello{Envelope: openflow.Envelope{Version: 4}, Versions: openflow.VersionBitmap(4)})
					xid := cl.send(&openflow.FeaturesRequest{})
					fr, ok := cl.recv().(*openflow.FeaturesReply)
					if !ok || fr.Xid != xid {
						t.Fatalf("no features reply over TLS: %+v", fr)
					}
					return
				}
			}
			if tc.ok {
				t.Fatalf("refused: %v", err)
			}
			if err == nil {
				t.Fatal("the switch served a peer it must refuse")
			}
			if tc.errHas != "" && !strings.Contains(err.Error(), tc.errHas) {
				t.Errorf("error %q, want it to mention %q", err, tc.errHas)
			}
		})
	}
}

// TestConnTLSController: an ssl: controller is dialled over TLS and the
// session runs when the controller's certificate chains to our CA; a
// controller with a certificate from another CA is refused, with the
// reason in its status.
func TestConnTLSController(t *testing.T) {
	pki := testpki.New(t, t.TempDir(), "ca")
	other := testpki.New(t, t.TempDir(), "otherca")
	swKey, swCert := pki.Issue(t, "switch")
	tests := []struct {
		name    string
		pki     *testpki.PKI // signs the controller's certificate
		connect bool
	}{
		{name: "controller of our CA", pki: pki, connect: true},
		{name: "controller of another CA", pki: other},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ck, cc := tc.pki.Issue(t, "ctl")
			scfg := clientTLS(t, ck, cc, pki.CAFile)
			scfg.ClientAuth = tls.RequireAnyClientCert
			ln, err := tls.Listen("tcp", "127.0.0.1:0", scfg)
			if err != nil {
				t.Fatal(err)
			}
			defer ln.Close()
			s := newTestSwitch(t, 1, BridgeConfig{HasControllers: true}, ConnConfig{NoMgmt: true,
				Controllers:   []string{"ssl:" + ln.Addr().String()},
				SSLPrivateKey: swKey, SSLCertificate: swCert, SSLCACert: pki.CAFile, MaxBackoff: time.Second})
			accepted := make(chan net.Conn, 4)
			go func() {
				for {
					nc, err := ln.Accept()
					if err != nil {
						return
					}
					// Shake hands now: the switch's dial waits for it.
					go nc.(*tls.Conn).Handshake()
					accepted <- nc
				}
			}()
			if !tc.connect {
				waitFor(t, "a certificate error in the controller status", func() bool {
					return strings.Contains(s.m.Controllers()[0].LastError, "certificate")
				})
				if s.m.Controllers()[0].IsConnected {
					t.Fatal("connected to a controller of another CA")
				}
				return
			}
			var nc net.Conn
			select {
			case nc = <-accepted:
			case <-time.After(5 * time.Second):
				t.Fatal("the switch did not dial the controller")
			}
			cl := newClient(t, nc)
			cl.handshake(openflow.Version13, openflow.Version13)
			waitFor(t, "the controller connected", func() bool { return s.m.Controllers()[0].IsConnected })
		})
	}
}

// TestConnTLSConfig: ssl: and pssl: targets need all three files, and
// each must be usable; the error names what is wrong.
func TestConnTLSConfig(t *testing.T) {
	pki := testpki.New(t, t.TempDir(), "ca")
	key, cert := pki.Issue(t, "switch")
	_, otherCert := pki.Issue(t, "other")
	junk := filepath.Join(t.TempDir(), "junk.pem")
	os.WriteFile(junk, []byte("not pem"), 0o600)
	tests := []struct {
		name           string
		key, cert, ca  string
		target         string
		errHas         string // "" = no error
		controllerSide bool
	}{
		{name: "all three", key: key, cert: cert, ca: pki.CAFile, target: "pssl:0:127.0.0.1"},
		{name: "ssl controller", key: key, cert: cert, ca: pki.CAFile, target: "ssl:127.0.0.1:1", controllerSide: true},
		{name: "no key", cert: cert, ca: pki.CAFile, target: "pssl:0:127.0.0.1", errHas: "--private-key"},
		{name: "no certificate", key: key, ca: pki.CAFile, target: "ssl:127.0.0.1", controllerSide: true, errHas: "--certificate"},
		{name: "no CA", key: key, cert: cert, target: "pssl:0:127.0.0.1", errHas: "--ca-cert"},
		{name: "key of another certificate", key: key, cert: otherCert, ca: pki.CAFile, target: "pssl:0:127.0.0.1", errHas: "private key"},
		{name: "CA file without PEM", key: key, cert: cert, ca: junk, target: "pssl:0:127.0.0.1", errHas: "no PEM certificate"},
		{name: "missing CA file", key: key, cert: cert, ca: junk + ".none", target: "pssl:0:127.0.0.1", errHas: "no such file"},
		{name: "plain tcp needs no files", target: "ptcp:0:127.0.0.1"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := ConnConfig{NoMgmt: true, SSLPrivateKey: tc.key, SSLCertificate: tc.cert, SSLCACert: tc.ca}
			if tc.controllerSide {
				cfg.Controllers = []string{tc.target}
			} else {
				cfg.Listeners = []string{tc.target}
			}
			dp, err := dummy.New().Create("br0", datapath.Config{})
			if err != nil {
				t.Fatal(err)
			}
			defer dp.Close()
			b, err := NewBridge(BridgeConfig{Name: "br0"}, dp)
			if err != nil {
				t.Fatal(err)
			}
			_, err = NewConnManager(b, cfg)
			if tc.errHas == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.errHas) {
				t.Fatalf("error %v, want one mentioning %q", err, tc.errHas)
			}
		})
	}
}

// TestConnTLSTargets: ssl: and pssl: parse as tcp: and ptcp: do.
func TestConnTLSTargets(t *testing.T) {
	tests := []struct {
		name, target, addr string
		active, bad        bool
	}{
		{name: "ssl default port", target: "ssl:127.0.0.1", addr: "127.0.0.1:6653", active: true},
		{name: "ssl port", target: "ssl:10.0.0.1:6633", addr: "10.0.0.1:6633", active: true},
		{name: "ssl hostname", target: "ssl:example.com", active: true, bad: true},
		{name: "pssl empty", target: "pssl:", addr: ":6653"},
		{name: "pssl port ip", target: "pssl:6634:127.0.0.1", addr: "127.0.0.1:6634"},
		{name: "pssl bad port", target: "pssl:x", bad: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			parse := parsePassive
			if tc.active {
				parse = parseActive
			}
			n, a, err := parse(tc.target)
			if (err != nil) != tc.bad {
				t.Fatalf("err %v, want bad=%v", err, tc.bad)
			}
			if !tc.bad && (n != "tcp" || a != tc.addr) {
				t.Errorf("got %s %s, want tcp %s", n, a, tc.addr)
			}
			if !isTLSTarget(tc.target) {
				t.Errorf("%s is not seen as a TLS target", tc.target)
			}
		})
	}
}
