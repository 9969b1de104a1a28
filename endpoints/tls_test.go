package endpoints_test

import (
	"context"
	"crypto/tls"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/glmbench/glmbench/endpoints"
	"github.com/glmbench/glmbench/endpoints/endpointstest"
	"github.com/glmbench/glmbench/internal/badinput"
)

// modelsServer answers GET /v1/models with one model over TLS (with cert,
// or httptest's own when nil) and records each request's protocol.
func modelsServer(t *testing.T, cert *tls.Certificate) (*httptest.Server, func() []string) {
	t.Helper()
	var mu sync.Mutex
	var protos []string
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		protos = append(protos, r.Proto)
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"object":"list","data":[{"id":"m","object":"model","created":0,"owned_by":"x"}]}`))
	})
	srv, _ := endpointstest.TLSServer(h, cert)
	t.Cleanup(srv.Close)
	return srv, func() []string { mu.Lock(); defer mu.Unlock(); return append([]string(nil), protos...) }
}

// listModels resolves f against srv's base URL and lists its models over a
// fresh transport.
func listModels(t *testing.T, srv *httptest.Server, f endpoints.Flags) (*endpoints.Endpoint, []string, error) {
	t.Helper()
	f.Endpoint = srv.URL + "/v1"
	ep, err := endpoints.Resolve(f, func(string) string { return "" })
	if err != nil {
		t.Fatalf("resolve: %v", err)
	}
	tr := endpoints.NewTransport(endpoints.TransportOptions{Conns: 1, ConnectTimeout: 5 * time.Second, Trust: ep.Trust})
	defer tr.Close()
	ids, err := endpoints.NewClient(ep, tr).ListModels(context.Background())
	return ep, ids, err
}

// httptest's TLS server signs its certificate for 127.0.0.1 with a CA no
// system pool holds: verified against the system's roots it is refused as
// of an unknown authority, with both fixes named; with that CA given
// (--ca-cert) or verification off (--insecure) it answers. Every request
// is HTTP/1.1 though the server offers HTTP/2: the handshake offers only
// HTTP/1.1 whatever the trust.
func TestAPrivateCAsEndpointAnswersOnlyOnceItsCAIsTrustedOrVerificationIsOff(t *testing.T) {
	t.Parallel()
	srv, protos := modelsServer(t, nil)
	ep, _, err := listModels(t, srv, endpoints.Flags{})
	msg, ok := ep.TLSFailure(err)
	if !ok {
		t.Fatalf("err %v: not said as a TLS failure", err)
	}
	for _, want := range []string{"not trusted (x509: certificate signed by unknown authority)", "--ca-cert FILE (or SSL_CERT_FILE)", "--insecure"} {
		if !strings.Contains(msg, want) {
			t.Errorf("message %q lacks %q", msg, want)
		}
	}
	if strings.Contains(msg, "\n") {
		t.Errorf("message %q is not one line", msg)
	}
	ca := endpointstest.WritePEM(t, srv.Certificate())
	for _, f := range []endpoints.Flags{{CACert: ca}, {Insecure: true}} {
		ep, ids, err := listModels(t, srv, f)
		if err != nil || len(ids) != 1 || ids[0] != "m" {
			t.Errorf("%+v: models %v, err %v; want [m]", f, ids, err)
		}
		if ep.Trust.CACert != f.CACert || ep.Trust.Insecure != f.Insecure {
			t.Errorf("%+v: the endpoint's trust is %+v", f, ep.Trust)
		}
	}
	got := protos()
	if len(got) != 2 {
		t.Fatalf("the server saw %d requests, want the 2 verified ones", len(got))
	}
	for _, p := range got {
		if p != "HTTP/1.1" {
			t.Errorf("a request came as %s, want HTTP/1.1", p)
		}
	}
}

// A certificate for another name, an expired one, and an https URL that
// a plain HTTP server answers are each said with x509's (or tls's) own
// reason and their own fix; a refused connection is no TLS failure.
func TestEachTLSFailureIsSaidWithItsOwnReasonAndFix(t *testing.T) {
	t.Parallel()
	ca := endpointstest.NewCA(t)
	caFile := endpointstest.WritePEM(t, ca.Cert)
	other := ca.Leaf(time.Now().Add(24*time.Hour), "other.example", "10.9.8.7")
	expired := ca.Leaf(time.Now().Add(-time.Hour), "127.0.0.1")
	plain := httptest.NewServer(http.NotFoundHandler())
	defer plain.Close()
	for _, tc := range []struct {
		name string
		srv  *httptest.Server
		want []string
	}{
		{"another host's", tlsServer(t, &other), []string{"for another host (x509: certificate is valid for 10.9.8.7, not 127.0.0.1)", "--insecure"}},
		{"expired", tlsServer(t, &expired), []string{"out of date (x509: certificate has expired or is not yet valid", "--insecure"}},
		{"plain HTTP", &httptest.Server{URL: "https://" + plain.Listener.Addr().String()}, []string{"does not speak TLS", "http://"}},
	} {
		ep, _, err := listModels(t, tc.srv, endpoints.Flags{CACert: caFile})
		msg, ok := ep.TLSFailure(err)
		if !ok {
			t.Errorf("%s: err %v is not said as a TLS failure", tc.name, err)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(msg, w) {
				t.Errorf("%s: message %q lacks %q", tc.name, msg, w)
			}
		}
	}
	closed := httptest.NewServer(http.NotFoundHandler())
	closed.Close()
	ep, _, err := listModels(t, &httptest.Server{URL: "https://" + closed.Listener.Addr().String()}, endpoints.Flags{})
	if msg, ok := ep.TLSFailure(err); ok || err == nil {
		t.Errorf("a refused connection (err %v) is said as a TLS failure: %q", err, msg)
	}
}

func tlsServer(t *testing.T, cert *tls.Certificate) *httptest.Server {
	srv, _ := modelsServer(t, cert)
	return srv
}

// --ca-cert of a file with no certificate, a key alone, a certificate block
// that does not parse, or no file at all is bad input in one line naming
// the file, said by Resolve (before anything is dialled).
func TestACACertThatHoldsNoCertificateIsBadInput(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	for _, tc := range []struct{ path, want string }{
		{write("empty.pem", "not PEM at all\n"), "holds no PEM certificate"},
		{write("key.pem", "-----BEGIN EC PRIVATE KEY-----\nAAAA\n-----END EC PRIVATE KEY-----\n"), "holds no certificate, only EC PRIVATE KEY"},
		{write("bad.pem", "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n"), "PEM block 1 is not a certificate"},
		{filepath.Join(dir, "missing.pem"), "no such file"},
	} {
		_, err := endpoints.Resolve(endpoints.Flags{Endpoint: "https://127.0.0.1:1/v1", CACert: tc.path}, func(string) string { return "" })
		badInputLine(t, tc.path, err, "--ca-cert", tc.path, tc.want)
	}
}

// An endpoints file's ca_cert is read relative to the file's folder; the
// flags' trust replaces the entry's whole (--insecure over ca_cert,
// --ca-cert over insecure: true, --insecure=false over insecure: true), as
// --api-key-env replaces api_key_env; both at once in one place is bad
// input. At keeps the trust.
func TestTheFlagsTrustReplacesTheEndpointsFiles(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ca := endpointstest.NewCA(t)
	pem := endpointstest.WritePEM(t, ca.Cert)
	b, _ := os.ReadFile(pem)
	if err := os.WriteFile(filepath.Join(dir, "ca.pem"), b, 0o600); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "endpoints.yaml")
	yaml := `endpoints:
- {name: private, base_url: "https://gw.internal/v1", ca_cert: ca.pem}
- {name: lab, base_url: "https://lab.internal/v1", insecure: true}
- {name: both, base_url: "https://x.internal/v1", ca_cert: ca.pem, insecure: true}
`
	if err := os.WriteFile(file, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	inDir := filepath.Join(dir, "ca.pem")
	for _, tc := range []struct {
		name string
		f    endpoints.Flags
		want endpoints.Trust
	}{
		{"the file's ca_cert, from its folder", endpoints.Flags{Name: "private"}, endpoints.Trust{CACert: inDir}},
		{"--insecure over ca_cert", endpoints.Flags{Name: "private", Insecure: true, InsecureSet: true}, endpoints.Trust{Insecure: true}},
		{"the file's insecure", endpoints.Flags{Name: "lab"}, endpoints.Trust{Insecure: true}},
		{"--ca-cert over insecure", endpoints.Flags{Name: "lab", CACert: pem}, endpoints.Trust{CACert: pem}},
		{"--insecure=false over insecure", endpoints.Flags{Name: "lab", InsecureSet: true}, endpoints.Trust{}},
	} {
		tc.f.File = file
		ep, err := endpoints.Resolve(tc.f, func(string) string { return "" })
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		if got := ep.At("https://elsewhere/").Trust; got.CACert != tc.want.CACert || got.Insecure != tc.want.Insecure {
			t.Errorf("%s: trust %+v, want %+v", tc.name, got, tc.want)
		}
	}
	for _, f := range []endpoints.Flags{{File: file, Name: "both"}, {Endpoint: "https://h/v1", CACert: pem, Insecure: true}} {
		_, err := endpoints.Resolve(f, func(string) string { return "" })
		if err == nil || !badinput.Is(err) || !strings.Contains(err.Error(), "give one") {
			t.Errorf("%+v: err %v, want bad input saying to give one", f, err)
		}
	}
}
