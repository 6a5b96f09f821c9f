package ofproto

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/govswitch/govswitch/datapath"
	"github.com/govswitch/govswitch/datapath/dummy"
	"github.com/govswitch/govswitch/ofproto/openflow"
)

// testPKI is a CA and certificates it signed, written as PEM files in a
// temp dir, as ovs-pki would leave them.
type testPKI struct {
	dir    string
	caCert *x509.Certificate
	caKey  *ecdsa.PrivateKey
	caFile string
	serial int64
}

func newTestPKI(t *testing.T, name string) *testPKI {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	ca, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	p := &testPKI{dir: t.TempDir(), caCert: ca, caKey: key, serial: 1}
	p.caFile = p.write(t, name+"-cacert.pem", "CERTIFICATE", der)
	return p
}

func (p *testPKI) write(t *testing.T, name, typ string, der []byte) string {
	t.Helper()
	path := filepath.Join(p.dir, name)
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// issue signs a certificate for cn (with no extended key usage and no
// names, as ovs-pki's) and returns its key and certificate files.
func (p *testPKI) issue(t *testing.T, cn string) (keyFile, certFile string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	p.serial++
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(p.serial), Subject: pkix.Name{CommonName: cn},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, p.caCert, &key.PublicKey, p.caKey)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return p.write(t, cn+"-privkey.pem", "PRIVATE KEY", kder), p.write(t, cn+"-cert.pem", "CERTIFICATE", der)
}

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
	pki := newTestPKI(t, "switchca")
	other := newTestPKI(t, "otherca")
	swKey, swCert := pki.issue(t, "switch")
	ctlKey, ctlCert := pki.issue(t, "controller")
	evilKey, evilCert := other.issue(t, "intruder")
	s := newTestSwitch(t, 1, BridgeConfig{}, ConnConfig{NoMgmt: true, Listeners: []string{"pssl:0:127.0.0.1"},
		SSLPrivateKey: swKey, SSLCertificate: swCert, SSLCACert: pki.caFile})
	addr := s.m.ListenerAddrs()[0].String()

	tests := []struct {
		name   string
		client *tls.Config
		ok     bool
		errHas string // in the client's handshake or first read error
	}{
		{name: "good certificate", client: clientTLS(t, ctlKey, ctlCert, pki.caFile), ok: true},
		{name: "no client certificate", client: clientTLS(t, "", "", pki.caFile)},
		{name: "certificate of another CA", client: clientTLS(t, evilKey, evilCert, pki.caFile)},
		{name: "client trusts another CA", client: clientTLS(t, ctlKey, ctlCert, other.caFile), errHas: "unknown authority"},
		{name: "good certificate again", client: clientTLS(t, ctlKey, ctlCert, pki.caFile), ok: true},
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
	pki := newTestPKI(t, "ca")
	other := newTestPKI(t, "otherca")
	swKey, swCert := pki.issue(t, "switch")
	tests := []struct {
		name    string
		pki     *testPKI // signs the controller's certificate
		connect bool
	}{
		{name: "controller of our CA", pki: pki, connect: true},
		{name: "controller of another CA", pki: other},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ck, cc := tc.pki.issue(t, "ctl")
			scfg := clientTLS(t, ck, cc, pki.caFile)
			scfg.ClientAuth = tls.RequireAnyClientCert
			ln, err := tls.Listen("tcp", "127.0.0.1:0", scfg)
			if err != nil {
				t.Fatal(err)
			}
			defer ln.Close()
			s := newTestSwitch(t, 1, BridgeConfig{HasControllers: true}, ConnConfig{NoMgmt: true,
				Controllers:   []string{"ssl:" + ln.Addr().String()},
				SSLPrivateKey: swKey, SSLCertificate: swCert, SSLCACert: pki.caFile, MaxBackoff: time.Second})
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
	pki := newTestPKI(t, "ca")
	key, cert := pki.issue(t, "switch")
	_, otherCert := pki.issue(t, "other")
	junk := filepath.Join(t.TempDir(), "junk.pem")
	os.WriteFile(junk, []byte("not pem"), 0o600)
	tests := []struct {
		name           string
		key, cert, ca  string
		target         string
		errHas         string // "" = no error
		controllerSide bool
	}{
		{name: "all three", key: key, cert: cert, ca: pki.caFile, target: "pssl:0:127.0.0.1"},
		{name: "ssl controller", key: key, cert: cert, ca: pki.caFile, target: "ssl:127.0.0.1:1", controllerSide: true},
		{name: "no key", cert: cert, ca: pki.caFile, target: "pssl:0:127.0.0.1", errHas: "--ssl-private-key"},
		{name: "no certificate", key: key, ca: pki.caFile, target: "ssl:127.0.0.1", controllerSide: true, errHas: "--ssl-certificate"},
		{name: "no CA", key: key, cert: cert, target: "pssl:0:127.0.0.1", errHas: "--ssl-ca-cert"},
		{name: "key of another certificate", key: key, cert: otherCert, ca: pki.caFile, target: "pssl:0:127.0.0.1", errHas: "private key"},
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
