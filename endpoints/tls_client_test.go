package endpoints_test

import (
	"context"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/glmbench/glmbench/endpoints"
	"github.com/glmbench/glmbench/endpoints/endpointstest"
)

// mtlsServer is a models server over httptest's certificate that asks for
// a client certificate signed by ca and verifies it.
func mtlsServer(t *testing.T, ca *endpointstest.CA) *httptest.Server {
	t.Helper()
	return modelsServerConfig(t, endpointstest.MTLS(ca))
}

// A server that asks for a client certificate answers once one its CA
// signed is given (--client-cert, --client-key; or an endpoints file's
// client_cert and client_key, from the file's folder), with verification
// on or off; without one it is refused naming both flags; with one of
// another CA it is refused naming the certificate sent.
func TestAServerAskingForAClientCertificateAnswersOnceOneIsGiven(t *testing.T) {
	t.Parallel()
	clientCA := endpointstest.NewCA(t)
	srv := mtlsServer(t, clientCA)
	cert, key := clientCA.ClientFiles()
	ca := endpointstest.WritePEM(t, srv.Certificate())
	for _, f := range []endpoints.Flags{{CACert: ca, ClientCert: cert, ClientKey: key}, {Insecure: true, ClientCert: cert, ClientKey: key}} {
		if _, ids, err := listModels(t, srv, f); err != nil || len(ids) != 1 {
			t.Errorf("%+v: models %v, err %v; want the one model", f, ids, err)
		}
	}
	ep, _, err := listModels(t, srv, endpoints.Flags{CACert: ca})
	saysTLSFailure(t, "no client certificate", ep, err, "it asks for a client certificate (mTLS), and glmbench sends none: give one with --client-cert FILE --client-key FILE")
	otherCert, otherKey := endpointstest.NewCA(t).ClientFiles()
	ep, _, err = listModels(t, srv, endpoints.Flags{CACert: ca, ClientCert: otherCert, ClientKey: otherKey})
	saysTLSFailure(t, "another CA's client certificate", ep, err, "it refused the client certificate "+otherCert)

	dir := t.TempDir()
	for _, p := range []string{cert, key} {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, filepath.Base(p)), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	file := filepath.Join(dir, "endpoints.yaml")
	yaml := "endpoints:\n- {name: gw, base_url: \"" + srv.URL + "/v1\", insecure: true, client_cert: client.pem, client_key: client-key.pem}\n"
	if err := os.WriteFile(file, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	ep, err = endpoints.Resolve(endpoints.Flags{File: file, Name: "gw"}, func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	if ep.Trust.ClientCert != filepath.Join(dir, "client.pem") || ep.Trust.ClientKey != filepath.Join(dir, "client-key.pem") {
		t.Errorf("the file's client certificate read as %s, %s; want both in %s", ep.Trust.ClientCert, ep.Trust.ClientKey, dir)
	}
	tr := endpoints.NewTransport(endpoints.TransportOptions{Conns: 1, ConnectTimeout: 5 * time.Second, Trust: ep.Trust})
	defer tr.Close()
	if ids, err := endpoints.NewClient(ep, tr).ListModels(context.Background()); err != nil || len(ids) != 1 {
		t.Errorf("the file's client certificate: models %v, err %v; want the one model", ids, err)
	}
}

// A client certificate without its key (or a key without it), a key that
// is not the certificate's, or a file that is not there is bad input in
// one line naming both flags, said before anything is dialled; no line
// quotes the key.
func TestAClientCertificateThatDoesNotLoadIsBadInput(t *testing.T) {
	t.Parallel()
	ca := endpointstest.NewCA(t)
	cert, key := ca.ClientFiles()
	_, otherKey := ca.ClientFiles()
	keyPEM, err := os.ReadFile(key)
	if err != nil {
		t.Fatal(err)
	}
	// What openssl pkcs8 -topk8 -v2 aes256 writes; its body need not
	// decrypt, since no passphrase is asked for.
	encrypted := filepath.Join(t.TempDir(), "encrypted-key.pem")
	if err := os.WriteFile(encrypted, []byte("-----BEGIN ENCRYPTED PRIVATE KEY-----\nMAsGCSqGSIb3DQEHAg==\n-----END ENCRYPTED PRIVATE KEY-----\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name      string
		cert, key string
		want      string
	}{
		{"no key", cert, "", "give both"},
		{"no certificate", "", key, "give both"},
		{"another's key", cert, otherKey, "private key does not match public key"},
		{"no file", filepath.Join(t.TempDir(), "none.pem"), key, "no such file"},
		{"an encrypted key", cert, encrypted, "the key " + encrypted + " is encrypted with a passphrase, which glmbench does not ask for: give it decrypted (openssl pkey -in " + encrypted},
	} {
		_, err := endpoints.Resolve(endpoints.Flags{Endpoint: "https://127.0.0.1:1/v1", ClientCert: tc.cert, ClientKey: tc.key}, func(string) string { return "" })
		if badInputLine(t, tc.name, err, "--client-cert and --client-key", tc.want) && strings.Contains(err.Error(), strings.Split(string(keyPEM), "\n")[1]) {
			t.Errorf("%s: %q quotes the key", tc.name, err)
		}
	}
}

// CheckTLS, the agents' check before they answer ready, finds a server
// that asks for a client certificate none was given for, though TLS 1.3
// ends the client's handshake before the server checks it: a TLS failure
// naming --client-cert. Given one, and against a server that asks for
// none, the check passes.
func TestCheckTLSFindsAMissingClientCertificate(t *testing.T) {
	t.Parallel()
	ca := endpointstest.NewCA(t)
	srv := mtlsServer(t, ca)
	cert, key := ca.ClientFiles()
	resolve := func(f endpoints.Flags) *endpoints.Endpoint {
		f.Endpoint, f.Insecure = srv.URL+"/v1", true
		ep, err := endpoints.Resolve(f, func(string) string { return "" })
		if err != nil {
			t.Fatal(err)
		}
		return ep
	}
	ep := resolve(endpoints.Flags{})
	saysTLSFailure(t, "no client certificate", ep, ep.CheckTLS(context.Background(), 5*time.Second), "remote error: tls: certificate required", "--client-cert FILE")
	if err := resolve(endpoints.Flags{ClientCert: cert, ClientKey: key}).CheckTLS(context.Background(), 5*time.Second); err != nil {
		t.Errorf("with the client certificate: %v", err)
	}
	plain := tlsServer(t, nil)
	ep, err := endpoints.Resolve(endpoints.Flags{Endpoint: plain.URL + "/v1", Insecure: true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := ep.CheckTLS(context.Background(), 5*time.Second); err != nil {
		t.Errorf("a server asking for no client certificate: %v", err)
	}
}
