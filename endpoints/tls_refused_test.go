package endpoints_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/glmbench/glmbench/endpoints"
	"github.com/glmbench/glmbench/endpoints/endpointstest"
)

// A server that refuses the handshake itself is said as such, with what
// it most likely wants: one asking for a client certificate (mTLS, TLS 1.3
// and 1.2) is said to want one, which glmbench does not send; one that
// speaks only TLS 1.0 (an old appliance) is said to speak no version
// glmbench does. Each is one TLS failure, not "unreachable".
func TestAServerRefusingTheHandshakeIsSaidWithWhatItWants(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name       string
		clientAuth tls.ClientAuthType
		maxVersion uint16
		want       []string
	}{
		{"a client certificate, TLS 1.3", tls.RequireAnyClientCert, 0, []string{"refused the TLS handshake (remote error: tls: certificate required)", "a client certificate", "glmbench sends none"}},
		{"a client certificate, TLS 1.2", tls.RequireAnyClientCert, tls.VersionTLS12, []string{"refused the TLS handshake (remote error: tls: handshake failure)", "a client certificate"}},
		{"TLS 1.0 only", tls.NoClientCert, tls.VersionTLS10, []string{"refused the TLS handshake (remote error: tls: protocol version not supported)", "TLS 1.2 or 1.3"}},
	} {
		srv := modelsServerConfig(t, &tls.Config{ClientAuth: tc.clientAuth, MaxVersion: tc.maxVersion})
		ep, _, err := listModels(t, srv, endpoints.Flags{Insecure: true})
		saysTLSFailure(t, tc.name, ep, err, tc.want...)
	}
	// A real TLS 1.0 server (old OpenSSL) answers with its own version;
	// crypto/tls refuses it, and CheckTLS's bare error is said alike.
	ln := serveOnce(t, tls10Hello())
	ep, err := endpoints.Resolve(endpoints.Flags{Endpoint: "https://" + ln + "/v1"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	saysTLSFailure(t, "a TLS 1.0 ServerHello", ep, ep.CheckTLS(context.Background(), 5*time.Second), "an old version (tls: server selected unsupported protocol version 301)", "TLS 1.2 or 1.3")
}

// modelsServerConfig is a server of one model over TLS with cfg's
// settings (endpointstest.TLSServerConfig).
func modelsServerConfig(t *testing.T, cfg *tls.Config) *httptest.Server {
	t.Helper()
	srv, _ := endpointstest.TLSServerConfig(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"object":"list","data":[{"id":"m","object":"model","created":0,"owned_by":"x"}]}`))
	}), cfg)
	t.Cleanup(srv.Close)
	return srv
}

// saysTLSFailure checks that TLSFailure knows err and says each of want.
func saysTLSFailure(t *testing.T, name string, ep *endpoints.Endpoint, err error, want ...string) {
	t.Helper()
	msg, ok := ep.TLSFailure(err)
	if !ok {
		t.Errorf("%s: err %v is not said as a TLS failure", name, err)
		return
	}
	for _, w := range want {
		if !strings.Contains(msg, w) {
			t.Errorf("%s: %q lacks %q", name, msg, w)
		}
	}
}

// tls10Hello is a TLS 1.0 ServerHello record (ECDHE-RSA-AES128-GCM-SHA256,
// no session id, no extensions), what an old server answers any
// ClientHello with.
func tls10Hello() []byte {
	body := append([]byte{0x03, 0x01}, make([]byte, 32)...) // version, random
	body = append(body, 0x00, 0xc0, 0x2f, 0x00)             // session id, suite, compression
	msg := append([]byte{0x02, 0x00, 0x00, byte(len(body))}, body...)
	return append([]byte{0x16, 0x03, 0x01, 0x00, byte(len(msg))}, msg...)
}

// serveOnce listens on loopback and answers each connection's first read
// with answer; it returns the address.
func serveOnce(t *testing.T, answer []byte) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				buf := make([]byte, 4096)
				if _, err := c.Read(buf); err == nil {
					c.Write(answer)
					c.Read(buf)
				}
			}()
		}
	}()
	return ln.Addr().String()
}

// A server that takes the connection and never answers the handshake is
// said to have not answered it within the connect limit: not a refused
// certificate (TLSFailure does not know it), and not a bare "context
// deadline exceeded".
func TestAHandshakeNeverAnsweredIsSaidWithItsLimit(t *testing.T) {
	t.Parallel()
	ep, err := endpoints.Resolve(endpoints.Flags{Endpoint: "https://" + endpointstest.Silent(t) + "/v1"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	tr := endpoints.NewTransport(endpoints.TransportOptions{Conns: 1, ConnectTimeout: 300 * time.Millisecond, Trust: ep.Trust})
	defer tr.Close()
	_, err = endpoints.NewClient(ep, tr).ListModels(context.Background())
	if msg, ok := ep.TLSFailure(err); ok || err == nil {
		t.Fatalf("err %v said as a TLS failure %q", err, msg)
	}
	if want := "the TLS handshake got no answer within 300ms"; !strings.Contains(err.Error(), want) || !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("err %q: want it to say %q and be a deadline", err, want)
	}
	if err := ep.CheckTLS(context.Background(), 300*time.Millisecond); err == nil || !strings.Contains(err.Error(), "no answer within 300ms") {
		t.Errorf("CheckTLS: %v, want the handshake's limit said", err)
	}
}

// A certificate of another host that holds many names (a CDN's, a shared
// gateway's) is refused in a line that lists the first five and counts
// the rest, and still names the host dialled; one with few is x509's own.
func TestACertificateOfManyOtherNamesIsSaidInAShortLine(t *testing.T) {
	t.Parallel()
	ca := endpointstest.NewCA(t)
	var names []string
	for i := range 200 {
		names = append(names, fmt.Sprintf("tenant-%03d.gateway.example", i))
	}
	leaf := ca.Leaf(time.Now().Add(time.Hour), names...)
	srv := tlsServer(t, &leaf)
	srv.URL = strings.Replace(srv.URL, "127.0.0.1", "localhost", 1)
	ep, _, err := listModels(t, srv, endpoints.Flags{CACert: endpointstest.WritePEM(t, ca.Cert)})
	msg, ok := ep.TLSFailure(err)
	want := "x509: certificate is valid for tenant-000.gateway.example, tenant-001.gateway.example, tenant-002.gateway.example, tenant-003.gateway.example, tenant-004.gateway.example and 195 more, not localhost"
	if !ok || !strings.Contains(msg, want) || len(msg) > 400 {
		t.Errorf("%q (%d bytes): want under 400 bytes saying %q", msg, len(msg), want)
	}
}

// An https URL of a plain HTTP server is said with what came back: an
// HTTP answer to the handshake (the request's path) or a first record that
// is no TLS one (CheckTLS's bare handshake), never an empty "(tls:)".
func TestAPlainHTTPServerAtAnHTTPSURLIsSaidWithWhatItAnswered(t *testing.T) {
	t.Parallel()
	plain := httptest.NewServer(http.NotFoundHandler())
	defer plain.Close()
	ep, _, err := listModels(t, &httptest.Server{URL: "https://" + plain.Listener.Addr().String()}, endpoints.Flags{})
	saysTLSFailure(t, "a request", ep, err, "it does not speak TLS (it answered the handshake in plain HTTP): is its URL http://, not https://?")
	saysTLSFailure(t, "CheckTLS", ep, ep.CheckTLS(context.Background(), 5*time.Second), "it does not speak TLS (tls: first record does not look like a TLS handshake)")
}

// A machine with no system roots (a container image without
// ca-certificates) is said to lack them, with the fix, rather than as an
// endpoint's certificate that did not verify.
func TestNoSystemRootsIsSaidAsThisMachinesProblem(t *testing.T) {
	t.Parallel()
	ep, err := endpoints.Resolve(endpoints.Flags{Endpoint: "https://api.example.com/v1"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	err = fmt.Errorf("Get %q: %w", "https://api.example.com/v1/models", &tls.CertificateVerificationError{Err: x509.SystemRootsError{}})
	saysTLSFailure(t, "no roots", ep, err, "this machine has no system CA certificates (x509: failed to load system roots and no roots provided)", "install them (ca-certificates)", "SSL_CERT_FILE", "--ca-cert FILE")
}
