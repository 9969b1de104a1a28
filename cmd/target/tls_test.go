package target_test

import (
	"strings"
	"testing"

	"github.com/glmbench/glmbench/cmd/cmdtest"
	"github.com/glmbench/glmbench/cmd/cmdutil"
	"github.com/glmbench/glmbench/endpoints/endpointstest"
)

// Every command of the shared flags (run, sweep, eval, conform, eval
// compare) says a private CA's certificate alike, since one place (the
// endpoint check of Flags.Open) classifies it: exit 2 naming x509's reason
// and both fixes, before any request reaches the server; each takes
// --ca-cert and --insecure, and refuses a --ca-cert with no certificate
// before any connection, and both flags at once.
func TestEveryEndpointCommandSaysAnUntrustedCertificateAlike(t *testing.T) {
	t.Parallel()
	p, srv, conns := endpointstest.StartTLS(t, endpointstest.VLLM, endpointstest.Options{}, nil)
	bad := cmdtest.WriteFile(t, "ca.pem", "no PEM here\n")
	for _, c := range endpointCommands {
		err, stderr := execReal(t, c.real, c.against(t, srv.URL+"/v1")...)
		msg := ""
		if err != nil {
			msg = err.Error()
		}
		if cmdutil.ExitCode(err) != cmdutil.ExitBadInput || strings.Contains(msg, "\n") ||
			!strings.Contains(msg, "x509: certificate signed by unknown authority") || !strings.Contains(msg, "--ca-cert FILE") || !strings.Contains(msg, "--insecure") {
			t.Errorf("%s: exit %d, %q (stderr %q): want exit 2 in one line naming the unknown authority and both fixes", c.name, cmdutil.ExitCode(err), msg, stderr)
		}
		before := conns.Load()
		for _, tc := range []struct {
			flags []string
			want  string
		}{
			{[]string{"--ca-cert", bad}, "--ca-cert " + bad + ": holds no PEM certificate"},
			{[]string{"--ca-cert", bad, "--insecure"}, "--ca-cert and --insecure: give one"},
		} {
			err, _ := execReal(t, c.real, c.against(t, srv.URL+"/v1", tc.flags...)...)
			if cmdutil.ExitCode(err) != cmdutil.ExitBadInput || err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("%s %v: %v, want exit 2 saying %q", c.name, tc.flags, err, tc.want)
			}
		}
		if n := conns.Load() - before; n != 0 {
			t.Errorf("%s: a refused --ca-cert still opened %d connections", c.name, n)
		}
	}
	if n := p.Requests("POST /v1/chat/completions") + p.Requests("POST /v1/completions"); n != 0 {
		t.Errorf("%d generation requests reached the server", n)
	}
}

// --insecure without an endpoint is bad input: the built-in engine serves
// plain HTTP on loopback, with nothing to verify.
func TestInsecureWithTheBuiltinEngineIsBadInput(t *testing.T) {
	t.Parallel()
	c := byName(t, "run")
	err, _ := execReal(t, c.real, "--insecure", "--out", t.TempDir())
	if cmdutil.ExitCode(err) != cmdutil.ExitBadInput || err == nil || !strings.Contains(err.Error(), "the built-in engine serves plain HTTP") {
		t.Errorf("%v: want exit 2 saying the built-in engine serves plain HTTP", err)
	}
}

// Every endpoint command takes --client-cert and --client-key: an endpoint
// that asks for a client certificate none was given for is refused with
// exit 2 in one line naming both flags, before any generation request;
// one flag without the other is bad input before any connection; and
// either with the built-in engine is bad input.
func TestEveryEndpointCommandTakesAClientCertificate(t *testing.T) {
	t.Parallel()
	clientCA := endpointstest.NewCA(t)
	p, srv, conns := endpointstest.StartTLSConfig(t, endpointstest.VLLM, endpointstest.Options{}, endpointstest.MTLS(clientCA))
	cert, _ := clientCA.ClientFiles()
	for _, c := range endpointCommands {
		err, stderr := execReal(t, c.real, c.against(t, srv.URL+"/v1", "--insecure")...)
		if cmdutil.ExitCode(err) != cmdutil.ExitBadInput || err == nil || strings.Contains(err.Error(), "\n") ||
			!strings.Contains(err.Error(), "tls: certificate required") || !strings.Contains(err.Error(), "--client-cert FILE --client-key FILE") {
			t.Errorf("%s: %v (stderr %q): want exit 2 in one line naming the refusal and both flags", c.name, err, stderr)
		}
		before := conns.Load()
		err, _ = execReal(t, c.real, c.against(t, srv.URL+"/v1", "--insecure", "--client-cert", cert)...)
		if cmdutil.ExitCode(err) != cmdutil.ExitBadInput || err == nil || !strings.Contains(err.Error(), "--client-cert and --client-key: give both") {
			t.Errorf("%s --client-cert alone: %v, want exit 2 saying to give both", c.name, err)
		}
		if n := conns.Load() - before; n != 0 {
			t.Errorf("%s: a --client-cert without its key still opened %d connections", c.name, n)
		}
	}
	if n := p.Requests("POST /v1/chat/completions") + p.Requests("POST /v1/completions"); n != 0 {
		t.Errorf("%d generation requests reached the server", n)
	}
	err, _ := execReal(t, byName(t, "run").real, "--client-cert", cert, "--client-key", cert, "--out", t.TempDir())
	if cmdutil.ExitCode(err) != cmdutil.ExitBadInput || err == nil || !strings.Contains(err.Error(), "the built-in engine serves plain HTTP") {
		t.Errorf("with the built-in engine: %v, want exit 2 saying it serves plain HTTP", err)
	}
}
