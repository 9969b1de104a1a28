package endpointstest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"io"
	"log"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"
)

// CA is a private certificate authority made for one test, as an internal
// gateway's or a lab box's: no system pool holds it.
type CA struct {
	Cert *x509.Certificate
	key  *ecdsa.PrivateKey
	t    testing.TB
}

// NewCA makes a CA valid from an hour ago for a day.
func NewCA(t testing.TB) *CA {
	t.Helper()
	key := newKey(t)
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "glmbench test CA"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	c, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return &CA{Cert: c, key: key, t: t}
}

// Intermediate is a CA that ca signs, as a public CA's issuing CA: a
// leaf it signs chains to ca only through it.
func (ca *CA) Intermediate() *CA {
	ca.t.Helper()
	key := newKey(ca.t)
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(time.Now().UnixNano()),
		Subject:               pkix.Name{CommonName: "glmbench test intermediate CA"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.Cert, &key.PublicKey, ca.key)
	if err != nil {
		ca.t.Fatal(err)
	}
	c, err := x509.ParseCertificate(der)
	if err != nil {
		ca.t.Fatal(err)
	}
	return &CA{Cert: c, key: key, t: ca.t}
}

func newKey(t testing.TB) *ecdsa.PrivateKey {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return key
}

// Leaf is a server certificate the CA signs for hosts (IP addresses or DNS
// names), valid until notAfter (from a day before it, or an hour ago when
// that is earlier).
func (ca *CA) Leaf(notAfter time.Time, hosts ...string) tls.Certificate {
	ca.t.Helper()
	key := newKey(ca.t)
	notBefore := notAfter.Add(-24 * time.Hour)
	if hourAgo := time.Now().Add(-time.Hour); hourAgo.Before(notBefore) {
		notBefore = hourAgo
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()),
		Subject:      pkix.Name{CommonName: hosts[0]},
		NotBefore:    notBefore,
		NotAfter:     notAfter,
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	for _, h := range hosts {
		if ip := net.ParseIP(h); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else {
			tmpl.DNSNames = append(tmpl.DNSNames, h)
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.Cert, &key.PublicKey, ca.key)
	if err != nil {
		ca.t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

// ClientFiles writes a client certificate the CA signs (for mTLS: a
// server that asks for one and verifies it against the CA) and its key as
// PEM files in a temporary folder, and returns their paths: what
// --client-cert and --client-key are given.
func (ca *CA) ClientFiles() (certFile, keyFile string) {
	ca.t.Helper()
	key := newKey(ca.t)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()),
		Subject:      pkix.Name{CommonName: "glmbench test client"},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.Cert, &key.PublicKey, ca.key)
	if err != nil {
		ca.t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		ca.t.Fatal(err)
	}
	dir := ca.t.TempDir()
	certFile, keyFile = filepath.Join(dir, "client.pem"), filepath.Join(dir, "client-key.pem")
	for _, f := range []struct {
		path string
		b    *pem.Block
	}{{certFile, &pem.Block{Type: "CERTIFICATE", Bytes: der}}, {keyFile, &pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}}} {
		if err := os.WriteFile(f.path, pem.EncodeToMemory(f.b), 0o600); err != nil {
			ca.t.Fatal(err)
		}
	}
	return certFile, keyFile
}

// WritePEM writes certs as a PEM bundle in a temporary folder and returns
// its path: what --ca-cert is given.
func WritePEM(t testing.TB, certs ...*x509.Certificate) string {
	t.Helper()
	var b []byte
	for _, c := range certs {
		b = append(b, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: c.Raw})...)
	}
	path := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// TLSServer serves handler over TLS on loopback, HTTP/2 offered as well
// as HTTP/1.1 (a client that offers only HTTP/1.1 still gets it), with
// cert, or httptest's own certificate (for 127.0.0.1, ::1 and example.com,
// signed by its own CA: srv.Certificate()) when cert is nil. Conns counts
// the connections it accepted; the caller closes the server.
func TLSServer(handler http.Handler, cert *tls.Certificate) (srv *httptest.Server, conns *atomic.Int64) {
	var cfg *tls.Config
	if cert != nil {
		cfg = &tls.Config{Certificates: []tls.Certificate{*cert}}
	}
	return TLSServerConfig(handler, cfg)
}

// TLSServerConfig is TLSServer with cfg's settings (a client certificate
// asked for, a highest version), httptest's certificate when cfg has
// none; cfg nil is TLSServer's defaults.
func TLSServerConfig(handler http.Handler, cfg *tls.Config) (srv *httptest.Server, conns *atomic.Int64) {
	conns = new(atomic.Int64)
	srv = httptest.NewUnstartedServer(handler)
	srv.EnableHTTP2 = true
	// A refused certificate is what the tests are about: the server's
	// "TLS handshake error" lines would only be noise.
	srv.Config.ErrorLog = log.New(io.Discard, "", 0)
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.TLS = cfg
	srv.StartTLS()
	return srv, conns
}

// MTLS is a server configuration that asks for a client certificate and
// verifies it against ca (vLLM's --ssl-cert-reqs 2 --ssl-ca-certs, an
// mTLS gateway).
func MTLS(ca *CA) *tls.Config {
	pool := x509.NewCertPool()
	pool.AddCert(ca.Cert)
	return &tls.Config{ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: pool}
}

// StartTLS serves the personality name over TLS too (see TLSServer): its
// base URL is srv.URL + "/v1", and every route the personality serves,
// /metrics included, answers there. Both servers close when t ends.
func StartTLS(t testing.TB, name string, o Options, cert *tls.Certificate) (p *Personality, srv *httptest.Server, conns *atomic.Int64) {
	t.Helper()
	var cfg *tls.Config
	if cert != nil {
		cfg = &tls.Config{Certificates: []tls.Certificate{*cert}}
	}
	return StartTLSConfig(t, name, o, cfg)
}

// StartTLSConfig is StartTLS with cfg's settings (see TLSServerConfig).
func StartTLSConfig(t testing.TB, name string, o Options, cfg *tls.Config) (p *Personality, srv *httptest.Server, conns *atomic.Int64) {
	t.Helper()
	p = Start(t, name, o)
	srv, conns = TLSServerConfig(p.Config.Handler, cfg)
	t.Cleanup(srv.Close)
	return p, srv, conns
}
