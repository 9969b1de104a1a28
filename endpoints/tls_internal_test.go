package endpoints

import (
	"context"
	"crypto/x509"
	"net/http"
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
