package ofproto

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"time"
)

// OpenFlow over TLS, with OVS's semantics for ssl: and pssl: targets:
//
//   - Both ends present a certificate: ours is SSLCertificate with
//     SSLPrivateKey, and the peer's must chain to a certificate of
//     SSLCACert. A listener refuses a peer that sends no certificate.
//   - Only the chain is checked, not host names or IP addresses in the
//     certificate (OVS's switch and controller certificates name a
//     datapath or a controller, not an address), and any extended key
//     usage is accepted, as OpenSSL's default verification does.
//   - TLS 1.2 is the oldest version accepted.
//
// The files are read once; a changed certificate takes a restart (OVS
// rereads them as they change; that is left out).

// tlsHandshakeTimeout bounds a controller's TLS handshake. Accepted
// connections shake hands lazily on their first read or write, which the
// hello timeout already bounds.
const tlsHandshakeTimeout = 10 * time.Second

// tlsConfigs holds the TLS configurations of a ConnManager's ssl: and
// pssl: targets. It is immutable once built.
type tlsConfigs struct {
	server, client *tls.Config
}

// isTLSTarget reports whether t is an ssl: or pssl: target.
func isTLSTarget(t string) bool {
	return strings.HasPrefix(t, "ssl:") || strings.HasPrefix(t, "pssl:")
}

func anyTLSTarget(lists ...[]string) bool {
	for _, l := range lists {
		for _, t := range l {
			if isTLSTarget(t) {
				return true
			}
		}
	}
	return false
}

// loadTLS reads the PEM private key, certificate (optionally followed by
// its intermediates) and CA certificates and builds the server and client
// configurations. Every file is required; an error names the one at
// fault.
func loadTLS(keyFile, certFile, caFile string) (*tlsConfigs, error) {
	switch {
	case keyFile == "":
		return nil, errors.New("ssl: and pssl: targets need a private key (-p/--private-key)")
	case certFile == "":
		return nil, errors.New("ssl: and pssl: targets need a certificate (-c/--certificate)")
	case caFile == "":
		return nil, errors.New("ssl: and pssl: targets need a CA certificate (-C/--ca-cert)")
	}
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return nil, fmt.Errorf("certificate %s with private key %s: %w", certFile, keyFile, err)
	}
	pem, err := os.ReadFile(caFile)
	if err != nil {
		return nil, fmt.Errorf("CA certificate: %w", err)
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("CA certificate %s: no PEM certificate in it", caFile)
	}
	verify := func(cs tls.ConnectionState) error { return verifyPeerChain(cs.PeerCertificates, roots) }
	server := &tls.Config{
		MinVersion:   tls.VersionTLS12,
		Certificates: []tls.Certificate{cert},
		// The chain is checked by VerifyConnection, without the client
		// auth key usage Go would otherwise insist on.
		ClientAuth:       tls.RequireAnyClientCert,
		VerifyConnection: verify,
	}
	client := &tls.Config{
		MinVersion:   tls.VersionTLS12,
		Certificates: []tls.Certificate{cert},
		// No host name check (see above); VerifyConnection checks the
		// chain, so the handshake still fails on an unknown CA.
		InsecureSkipVerify: true,
		VerifyConnection:   verify,
	}
	return &tlsConfigs{server: server, client: client}, nil
}

// ClientTLSConfig returns the client configuration an ssl: target uses,
// for other TLS clients of the daemon (an ssl: database): the peer's
// chain is checked against caFile, not its host name (certificates from
// ovs-pki name none).
func ClientTLSConfig(keyFile, certFile, caFile string) (*tls.Config, error) {
	tc, err := loadTLS(keyFile, certFile, caFile)
	if err != nil {
		return nil, err
	}
	return tc.client.Clone(), nil
}

// verifyPeerChain checks that certs (the peer's leaf first, then what it
// sent as intermediates) chain to roots.
func verifyPeerChain(certs []*x509.Certificate, roots *x509.CertPool) error {
	if len(certs) == 0 {
		return errors.New("peer sent no certificate")
	}
	inter := x509.NewCertPool()
	for _, c := range certs[1:] {
		inter.AddCert(c)
	}
	_, err := certs[0].Verify(x509.VerifyOptions{Roots: roots, Intermediates: inter,
		KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageAny}})
	if err != nil {
		return fmt.Errorf("peer certificate %q: %w", certs[0].Subject.CommonName, err)
	}
	return nil
}

// listener wraps ln so that accepted connections speak TLS as a server.
func (tc *tlsConfigs) listener(ln net.Listener) net.Listener {
	return tls.NewListener(ln, tc.server)
}

// contextDialer is what controllerLoop dials with: a *net.Dialer, or a
// *tls.Dialer whose DialContext returns after the handshake.
type contextDialer interface {
	DialContext(ctx context.Context, network, addr string) (net.Conn, error)
}

// dialer returns d for a tcp: or unix: target and a TLS client over d for
// an ssl: one.
func (m *ConnManager) dialer(target string, d *net.Dialer) contextDialer {
	if !isTLSTarget(target) || m.tls == nil {
		return d
	}
	d.Timeout += tlsHandshakeTimeout
	return &tls.Dialer{NetDialer: d, Config: m.tls.client}
}
