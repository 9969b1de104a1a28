package target_test

import (
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/glmbench/glmbench/cmd/cmdtest"
	"github.com/glmbench/glmbench/cmd/cmdutil"
	"github.com/glmbench/glmbench/cmd/evalcompare"
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
	all := append([]command(nil), commands...)
	all = append(all, command{name: "eval compare", real: func(f *cmdutil.Factory) *cobra.Command { return evalcompare.NewCmdCompare(f, nil) }})
	for _, c := range all {
		args := func(extra ...string) []string {
			a := append(append([]string{}, c.args...), "--endpoint", srv.URL+"/v1", "--model", "m", "--out", t.TempDir())
			return append(a, extra...)
		}
		err, stderr := execReal(t, c.real, args()...)
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
			err, _ := execReal(t, c.real, args(tc.flags...)...)
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
