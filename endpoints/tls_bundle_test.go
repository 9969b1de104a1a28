package endpoints_test

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/glmbench/glmbench/endpoints"
	"github.com/glmbench/glmbench/endpoints/endpointstest"
	"github.com/glmbench/glmbench/internal/badinput"
)

// writeFile writes b to name in a temporary folder and returns its path.
func writeFile(t *testing.T, name string, b []byte) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// A CA bundle as real machines hold it verifies: one saved on Windows
// (CRLF line ends, a UTF-8 byte-order mark first), and one holding only
// the intermediate CA that signed the server's certificate (Go takes any
// certificate of the pool as an anchor, self-signed or not), whether the
// server sends its intermediate beside its leaf or not. A bundle of the
// root alone, with a server that does not send the intermediate, does not
// verify (the chain cannot be built), and the refusal names the issuer of
// the leaf: the certificate to add.
func TestABundleWithCRLFABOMOrAnIntermediateOnlyVerifies(t *testing.T) {
	t.Parallel()
	root := endpointstest.NewCA(t)
	inter := root.Intermediate()
	day := time.Now().Add(24 * time.Hour)
	direct := root.Leaf(day, "127.0.0.1")
	viaInter := inter.Leaf(day, "127.0.0.1")
	withChain := viaInter
	withChain.Certificate = append([][]byte{}, viaInter.Certificate[0], inter.Cert.Raw)
	rootPEM, err := os.ReadFile(endpointstest.WritePEM(t, root.Cert))
	if err != nil {
		t.Fatal(err)
	}
	crlf := strings.ReplaceAll(string(rootPEM), "\n", "\r\n")
	interOnly := endpointstest.WritePEM(t, inter.Cert)
	for _, tc := range []struct {
		name   string
		srv    func() string
		caCert string
		ok     bool
	}{
		{"CRLF line ends", func() string { return tlsServer(t, &direct).URL }, writeFile(t, "crlf.pem", []byte(crlf)), true},
		{"a byte-order mark and CRLF", func() string { return tlsServer(t, &direct).URL }, writeFile(t, "bom.pem", []byte("\ufeff"+crlf)), true},
		{"the intermediate only, the server sending its leaf only", func() string { return tlsServer(t, &viaInter).URL }, interOnly, true},
		{"the intermediate only, the server sending its chain", func() string { return tlsServer(t, &withChain).URL }, interOnly, true},
		{"the root only, the server sending its chain", func() string { return tlsServer(t, &withChain).URL }, writeFile(t, "root.pem", rootPEM), true},
		{"the root only, the server sending its leaf only", func() string { return tlsServer(t, &viaInter).URL }, writeFile(t, "root.pem", rootPEM), false},
	} {
		srv := tlsServer(t, nil)
		srv.URL = tc.srv()
		ep, ids, err := listModels(t, srv, endpoints.Flags{CACert: tc.caCert})
		switch _, isTLS := ep.TLSFailure(err); {
		case tc.ok && (err != nil || len(ids) != 1):
			t.Errorf("%s: models %v, err %v; want the one model", tc.name, ids, err)
		case !tc.ok && !isTLS:
			t.Errorf("%s: err %v, want a certificate refused", tc.name, err)
		case !tc.ok:
			// The refusal names the CA to give: the intermediate that
			// signed the leaf, which the server did not send.
			if msg, _ := ep.TLSFailure(err); !strings.Contains(msg, "), issued by CN=glmbench test intermediate CA: ") {
				t.Errorf("%s: %q does not name the issuer", tc.name, msg)
			}
		}
	}
}

// --ca-cert of a DER certificate (what a Windows export or a browser's
// download gives), or of a PEM PKCS#7 bundle (.p7b), is bad input saying
// what it is and how to make PEM certificates of it; a folder of CA files is said to be SSL_CERT_DIR's, not --ca-cert's. Both
// in one line naming the flag and the path.
func TestADERFileOrAFolderGivenAsCACertIsSaidSo(t *testing.T) {
	t.Parallel()
	ca := endpointstest.NewCA(t)
	der := writeFile(t, "ca.der", ca.Cert.Raw)
	dir := t.TempDir()
	p7b := writeFile(t, "chain.p7b", []byte("-----BEGIN PKCS7-----\nMAsGCSqGSIb3DQEHAg==\n-----END PKCS7-----\n"))
	for _, tc := range []struct {
		path string
		want []string
	}{
		{der, []string{"a DER certificate, not PEM", "openssl x509 -inform DER -in " + der + " -out ca.pem"}},
		{dir, []string{"a folder", "SSL_CERT_DIR=" + dir}},
		{p7b, []string{"only PKCS7", "openssl pkcs7 -print_certs -in " + p7b + " -out ca.pem"}},
	} {
		_, err := endpoints.Resolve(endpoints.Flags{Endpoint: "https://127.0.0.1:1/v1", CACert: tc.path}, func(string) string { return "" })
		badInputLine(t, tc.path, err, append([]string{"--ca-cert", tc.path}, tc.want...)...)
	}
}

// An endpoints file's ca_cert of ~/… is under the home folder, as a shell
// would have it, not a folder named ~ beside the file (YAML expands
// nothing); a plain relative path stays the file's folder's.
func TestAnEndpointsFilesCACertUnderTildeIsInTheHomeFolder(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	ca := endpointstest.NewCA(t)
	b, err := os.ReadFile(endpointstest.WritePEM(t, ca.Cert))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(home, "certs"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(home, "certs", "ca.pem"), b, 0o600); err != nil {
		t.Fatal(err)
	}
	file := writeFile(t, "endpoints.yaml", []byte("endpoints:\n- {name: gw, base_url: \"https://gw.internal/v1\", ca_cert: ~/certs/ca.pem}\n"))
	ep, err := endpoints.Resolve(endpoints.Flags{File: file, Name: "gw"}, func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(home, "certs", "ca.pem"); ep.Trust.CACert != want {
		t.Errorf("ca_cert ~/certs/ca.pem read as %s, want %s", ep.Trust.CACert, want)
	}
}

// A --ca-cert or --client-cert that never ends (/dev/zero) is refused as
// too large for a PEM file, not read forever; one given as a pipe (a
// shell's <(…), a secret store's output) is read as a file is.
func TestACACertThatNeverEndsIsRefusedAndAPipeIsRead(t *testing.T) {
	t.Parallel()
	if _, err := os.Stat("/dev/zero"); err != nil {
		t.Skip("no /dev/zero here")
	}
	for _, f := range []endpoints.Flags{{CACert: "/dev/zero"}, {ClientCert: "/dev/zero", ClientKey: "/dev/zero"}} {
		f.Endpoint = "https://127.0.0.1:1/v1"
		_, err := endpoints.Resolve(f, func(string) string { return "" })
		if err == nil || !badinput.Is(err) || !strings.Contains(err.Error(), "/dev/zero: over 16 MiB, not a PEM file of certificates") {
			t.Errorf("%+v: %v, want bad input saying the file is over 16 MiB", f, err)
		}
	}
	ca := endpointstest.NewCA(t)
	b, err := os.ReadFile(endpointstest.WritePEM(t, ca.Cert))
	if err != nil {
		t.Fatal(err)
	}
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	go func() { w.Write(b); w.Close() }()
	fifo := "/dev/fd/" + strconv.Itoa(int(r.Fd()))
	if _, err := os.Stat(fifo); err != nil {
		t.Skipf("no %s here", fifo)
	}
	ep, err := endpoints.Resolve(endpoints.Flags{Endpoint: "https://127.0.0.1:1/v1", CACert: fifo}, func(string) string { return "" })
	if err != nil || ep.Trust.CACert != fifo {
		t.Errorf("a pipe: %v, want its CA read", err)
	}
}
