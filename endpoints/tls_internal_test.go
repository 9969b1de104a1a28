package endpoints

import (
	"context"
	"crypto/x509"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/glmbench/glmbench/endpoints/endpointstest"
)

// --ca-cert adds to the system's roots, it does not replace them: the
// pool is exactly the system pool with the bundle's certificate added.
func TestACACertIsTrustedBesideTheSystemRoots(t *testing.T) {
	t.Parallel()
	ca := endpointstest.NewCA(t)
	trust, err := LoadTrust(endpointstest.WritePEM(t, ca.Cert), false, "--ca-cert")
	if err != nil {
		t.Fatal(err)
	}
	want, err := x509.SystemCertPool()
	if err != nil {
		t.Skipf("no system pool here: %v", err)
	}
	if want.Equal(trust.roots) {
		t.Fatal("the pool is the system's alone: the CA was not added")
	}
	want.AddCert(ca.Cert)
	if !want.Equal(trust.roots) {
		t.Error("the pool is not the system's plus the CA")
	}
}

// A pool's warmed connections are handshakes too: with the endpoint's CA
// trusted every one of them is opened, verified, ahead of use; without
// it none is (each would fail verification), so a pool never warms
// connections its requests could not use.
func TestWarmedTLSConnectionsVerifyWithTheEndpointsTrust(t *testing.T) {
	t.Parallel()
	srv, _ := endpointstest.TLSServer(http.NotFoundHandler(), nil)
	defer srv.Close()
	trust, err := LoadTrust(endpointstest.WritePEM(t, srv.Certificate()), false, "--ca-cert")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		trust Trust
		want  int
	}{{trust, 16}, {Trust{}, 0}, {Trust{Insecure: true}, 16}} {
		p := NewPool(&Endpoint{BaseURL: srv.URL + "/v1", Trust: tc.trust}, TransportOptions{Conns: 16, ConnectTimeout: 5 * time.Second})
		p.Warm(context.Background(), 16)
		warmed := 0
		for _, s := range p.shards {
			s.mu.Lock()
			for _, cs := range s.ready {
				warmed += len(cs)
			}
			s.mu.Unlock()
		}
		p.Close()
		if warmed != tc.want {
			t.Errorf("trust %+v: %d connections warmed, want %d", tc.trust, warmed, tc.want)
		}
	}
}

// connectProxy is an HTTP proxy that tunnels every CONNECT to addr,
// whatever host it names, and counts the tunnels.
func connectProxy(t *testing.T, addr string) (*url.URL, *atomic.Int64) {
	t.Helper()
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodConnect {
			http.Error(w, "CONNECT only", http.StatusMethodNotAllowed)
			return
		}
		up, err := net.Dial("tcp", addr)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		n.Add(1)
		w.WriteHeader(http.StatusOK)
		down, rw, err := http.NewResponseController(w).Hijack()
		if err != nil {
			up.Close()
			return
		}
		if rw.Reader.Buffered() > 0 {
			b, _ := rw.Reader.Peek(rw.Reader.Buffered())
			up.Write(b)
		}
		go func() { io.Copy(up, down); up.Close() }()
		io.Copy(down, up)
		down.Close()
	}))
	t.Cleanup(srv.Close)
	u, _ := url.Parse(srv.URL)
	return u, &n
}

// Behind an http proxy Go's transport makes the TLS handshake itself
// (after CONNECT), with TLSClientConfig: it verifies exactly as a direct
// handshake does. httptest's certificate holds example.com: reached by that
// name through the proxy, it is refused without its CA, answers with it or
// with Insecure, over HTTP/1.1; a certificate for another name is refused
// for its name; and an IP address the certificate holds (127.0.0.1), which
// no SNI carries, verifies as it does directly.
func TestAHandshakeBehindAProxyVerifiesAsADirectOne(t *testing.T) {
	t.Parallel()
	ca := endpointstest.NewCA(t)
	other := ca.Leaf(time.Now().Add(time.Hour), "other.example")
	proto := make(chan string, 16)
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { proto <- r.Proto })
	srv, _ := endpointstest.TLSServer(h, nil)
	defer srv.Close()
	otherSrv, _ := endpointstest.TLSServer(h, &other)
	defer otherSrv.Close()
	trustCA := func(c *x509.Certificate) Trust {
		tr, err := LoadTrust(endpointstest.WritePEM(t, c), false, "--ca-cert")
		if err != nil {
			t.Fatal(err)
		}
		return tr
	}
	for _, tc := range []struct {
		name   string
		srv    *httptest.Server
		host   string
		trust  Trust
		wantOK bool
		want   string
	}{
		{"its CA", srv, "example.com", trustCA(srv.Certificate()), true, ""},
		{"insecure", srv, "example.com", Trust{Insecure: true}, true, ""},
		{"the system's roots", srv, "example.com", Trust{}, false, "x509: certificate signed by unknown authority"},
		{"another name's certificate", otherSrv, "example.com", trustCA(ca.Cert), false, "x509: certificate is valid for other.example, not example.com"},
		{"an IP address", srv, "127.0.0.1", trustCA(srv.Certificate()), true, ""},
		{"an IP address, the system's roots", srv, "127.0.0.1", Trust{}, false, "x509: certificate signed by unknown authority"},
	} {
		proxy, tunnels := connectProxy(t, tc.srv.Listener.Addr().String())
		tr := NewTransport(TransportOptions{Conns: 1, ConnectTimeout: 5 * time.Second, Trust: tc.trust})
		tr.Proxy = http.ProxyURL(proxy)
		_, port, _ := net.SplitHostPort(tc.srv.Listener.Addr().String())
		resp, err := NewHTTPClient(tr).Get("https://" + net.JoinHostPort(tc.host, port) + "/v1/models")
		tr.Close()
		if tunnels.Load() == 0 {
			t.Errorf("%s: the request did not go through the proxy", tc.name)
		}
		if tc.wantOK {
			if err != nil {
				t.Errorf("%s: %v, want an answer", tc.name, err)
				continue
			}
			resp.Body.Close()
			if p := <-proto; p != "HTTP/1.1" {
				t.Errorf("%s: the request came as %s, want HTTP/1.1", tc.name, p)
			}
			continue
		}
		if err == nil {
			resp.Body.Close()
			t.Errorf("%s: answered, want refused", tc.name)
		} else if !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
		}
	}
}
