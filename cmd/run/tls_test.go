package run

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/glmbench/glmbench/cmd/cmdtest"
	"github.com/glmbench/glmbench/cmd/cmdutil"
	"github.com/glmbench/glmbench/endpoints/endpointstest"
)

// vLLM's fake behind TLS with httptest's certificate (for 127.0.0.1,
// signed by a CA no system pool holds): without a flag the run exits 2 in
// one line naming the unknown authority and both fixes, and no request is
// sent; with --ca-cert that CA it runs every request to completion and
// scrapes /metrics over the same TLS; with --insecure too, saying so once
// on stderr, and the report records how the certificate was verified.
func TestARunAgainstAPrivateCAsEndpointNeedsItsCAOrInsecure(t *testing.T) {
	t.Parallel()
	p, srv, _ := endpointstest.StartTLS(t, endpointstest.VLLM, endpointstest.Options{}, nil)
	base := srv.URL + "/v1"
	code, stderr := execute(t, context.Background(), "--endpoint", base, "--phase", "p=3/40/6", "--out", t.TempDir())
	if code != cmdutil.ExitBadInput || strings.Count(stderr, "\n") != 1 {
		t.Fatalf("exit %d, stderr %q: want exit 2 in one line", code, stderr)
	}
	for _, want := range []string{"x509: certificate signed by unknown authority", "--ca-cert FILE (or SSL_CERT_FILE)", "--insecure", base} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr %q lacks %q", stderr, want)
		}
	}
	if n := p.TotalRequests(); n != 0 {
		t.Errorf("%d requests reached the server before the refusal", n)
	}

	ca := endpointstest.WritePEM(t, srv.Certificate())
	for _, tc := range []struct {
		flags    []string
		insecure bool
		caCert   string
	}{{[]string{"--ca-cert", ca}, false, ca}, {[]string{"--insecure"}, true, ""}} {
		dir := t.TempDir()
		args := append([]string{"--endpoint", base, "--phase", "p=3/40/6", "--out", dir}, tc.flags...)
		code, stderr := execute(t, context.Background(), args...)
		if code != 0 {
			t.Fatalf("%v: exit %d\n%s", tc.flags, code, stderr)
		}
		in := cmdtest.Load(t, dir)
		if len(in.Records) != 3 {
			t.Errorf("%v: %d records, want 3", tc.flags, len(in.Records))
		}
		for _, r := range in.Records {
			if !r.Completed() {
				t.Errorf("%v: request %d did not complete: %+v", tc.flags, r.I, r)
			}
		}
		if ep := in.Report.Endpoint; ep.Insecure != tc.insecure || ep.CACert != tc.caCert {
			t.Errorf("%v: report endpoint insecure %v, ca_cert %q; want %v, %q", tc.flags, ep.Insecure, ep.CACert, tc.insecure, tc.caCert)
		}
		if want := "scraping " + srv.URL + "/metrics"; !strings.Contains(stderr, want) {
			t.Errorf("%v: stderr lacks %q: the scrape did not verify as the requests do\n%s", tc.flags, want, stderr)
		}
		if n, want := strings.Count(stderr, "NOT verified"), map[bool]int{true: 1, false: 0}[tc.insecure]; n != want {
			t.Errorf("%v: stderr says %d times that the server is not verified, want %d\n%s", tc.flags, n, want, stderr)
		}
	}
}

// A --ca-cert file that holds no certificate is bad input in one line,
// said before anything is dialled: the server accepts no connection.
func TestACACertWithoutACertificateExitsTwoBeforeAnyDial(t *testing.T) {
	t.Parallel()
	_, srv, conns := endpointstest.StartTLS(t, endpointstest.VLLM, endpointstest.Options{}, nil)
	bad := cmdtest.WriteFile(t, "ca.pem", "# the CA goes here\n")
	code, stderr := execute(t, context.Background(), "--endpoint", srv.URL+"/v1", "--ca-cert", bad, "--phase", "p=3/40/6", "--out", t.TempDir())
	if code != cmdutil.ExitBadInput || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, "--ca-cert "+bad+": holds no PEM certificate") {
		t.Fatalf("exit %d, stderr %q: want exit 2 in one line naming the file", code, stderr)
	}
	if n := conns.Load(); n != 0 {
		t.Errorf("the server accepted %d connections", n)
	}
}

// A certificate signed by the CA given but for another address is refused
// with x509's host-name reason, exit 2 in one line, before any load.
func TestACertificateForAnotherHostExitsTwoNamingTheHost(t *testing.T) {
	t.Parallel()
	ca := endpointstest.NewCA(t)
	leaf := ca.Leaf(time.Now().Add(24*time.Hour), "10.9.8.7", "gw.internal")
	p, srv, _ := endpointstest.StartTLS(t, endpointstest.VLLM, endpointstest.Options{}, &leaf)
	code, stderr := execute(t, context.Background(), "--endpoint", srv.URL+"/v1", "--ca-cert", endpointstest.WritePEM(t, ca.Cert), "--phase", "p=3/40/6", "--out", t.TempDir())
	if code != cmdutil.ExitBadInput || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, "x509: certificate is valid for 10.9.8.7, not 127.0.0.1") || !strings.Contains(stderr, "--insecure") {
		t.Fatalf("exit %d, stderr %q: want exit 2 in one line naming the host the certificate is for and --insecure", code, stderr)
	}
	if n := p.TotalRequests(); n != 0 {
		t.Errorf("%d requests reached the server", n)
	}
}

// An endpoints file's ca_cert (relative to the file) and insecure work as
// the flags do: a run of each entry completes, the report records the CA
// file's resolved path or insecure, and insecure: true is said on stderr
// naming the file.
func TestAnEndpointsFilesCACertAndInsecureWorkAsTheFlags(t *testing.T) {
	t.Parallel()
	p, srv, _ := endpointstest.StartTLS(t, endpointstest.VLLM, endpointstest.Options{}, nil)
	dir := t.TempDir()
	b, _ := os.ReadFile(endpointstest.WritePEM(t, srv.Certificate()))
	if err := os.WriteFile(filepath.Join(dir, "gw-ca.pem"), b, 0o600); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "endpoints.yaml")
	yaml := "endpoints:\n- {name: gw, base_url: \"" + srv.URL + "/v1\", ca_cert: gw-ca.pem}\n- {name: lab, base_url: \"" + srv.URL + "/v1\", insecure: true}\n"
	if err := os.WriteFile(file, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name     string
		insecure bool
		caCert   string
	}{{"gw", false, filepath.Join(dir, "gw-ca.pem")}, {"lab", true, ""}} {
		out := t.TempDir()
		code, stderr := execute(t, context.Background(), "--endpoints", file, "--name", tc.name, "--phase", "p=2/40/4", "--no-metrics", "--out", out)
		if code != 0 {
			t.Fatalf("%s: exit %d\n%s", tc.name, code, stderr)
		}
		in := cmdtest.Load(t, out)
		if ep := in.Report.Endpoint; ep.Insecure != tc.insecure || ep.CACert != tc.caCert || in.Report.Phases[0].Completed != 2 {
			t.Errorf("%s: insecure %v, ca_cert %q, %d completed; want %v, %q, 2", tc.name, ep.Insecure, ep.CACert, in.Report.Phases[0].Completed, tc.insecure, tc.caCert)
		}
		if said := strings.Contains(stderr, "insecure: true in "+file+": "+srv.URL+"/v1's TLS certificate is NOT verified"); said != tc.insecure {
			t.Errorf("%s: the warning naming the file said %v, want %v:\n%s", tc.name, said, tc.insecure, stderr)
		}
	}
	if n := p.Requests("POST /v1/chat/completions"); n < 4 {
		t.Errorf("%d chat requests reached the server, want at least the 4 of the two runs", n)
	}
}
