// Package testpki makes a certificate authority and certificates it signs,
// written as PEM files the way ovs-pki leaves them, for tests of ssl: and
// pssl: connections.
package testpki

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// PKI is a CA whose files live in Dir.
type PKI struct {
	Dir    string
	CAFile string // the CA certificate, PEM

	ca     *x509.Certificate
	key    *ecdsa.PrivateKey
	serial int64
}

// New makes a CA named name and writes its certificate to
// dir/NAME-cacert.pem. Failures end the test.
func New(tb testing.TB, dir, name string) *PKI {
	tb.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		tb.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		tb.Fatal(err)
	}
	ca, err := x509.ParseCertificate(der)
	if err != nil {
		tb.Fatal(err)
	}
	p := &PKI{Dir: dir, ca: ca, key: key, serial: 1}
	p.CAFile = p.write(tb, name+"-cacert.pem", "CERTIFICATE", der)
	return p
}

func (p *PKI) write(tb testing.TB, name, typ string, der []byte) string {
	tb.Helper()
	path := filepath.Join(p.Dir, name)
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
		tb.Fatal(err)
	}
	return path
}

// Issue signs a certificate for cn (with no extended key usage and no
// names, as ovs-pki's) and returns its key and certificate files.
func (p *PKI) Issue(tb testing.TB, cn string) (keyFile, certFile string) {
	tb.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		tb.Fatal(err)
	}
	p.serial++
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(p.serial), Subject: pkix.Name{CommonName: cn},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, p.ca, &key.PublicKey, p.key)
	if err != nil {
		tb.Fatal(err)
	}
	kder, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		tb.Fatal(err)
	}
	return p.write(tb, cn+"-privkey.pem", "PRIVATE KEY", kder), p.write(tb, cn+"-cert.pem", "CERTIFICATE", der)
}

// CA returns the CA's certificate, for a pool of roots.
func (p *PKI) CA() *x509.Certificate { return p.ca }
