package target_test

import (
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/glmbench/glmbench/cmd/cmdutil"
	"github.com/glmbench/glmbench/cmd/evalcompare"
	"github.com/glmbench/glmbench/endpoints/endpointstest"
)

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
	all := append([]command(nil), commands...)
	all = append(all, command{name: "eval compare", real: func(f *cmdutil.Factory) *cobra.Command { return evalcompare.NewCmdCompare(f, nil) }})
	for _, c := range all {
		args := func(extra ...string) []string {
			a := append(append([]string{}, c.args...), "--endpoint", srv.URL+"/v1", "--model", "m", "--insecure", "--out", t.TempDir())
			return append(a, extra...)
		}
		err, stderr := execReal(t, c.real, args()...)
		if cmdutil.ExitCode(err) != cmdutil.ExitBadInput || err == nil || strings.Contains(err.Error(), "\n") ||
			!strings.Contains(err.Error(), "tls: certificate required") || !strings.Contains(err.Error(), "--client-cert FILE --client-key FILE") {
			t.Errorf("%s: %v (stderr %q): want exit 2 in one line naming the refusal and both flags", c.name, err, stderr)
		}
		before := conns.Load()
		err, _ = execReal(t, c.real, args("--client-cert", cert)...)
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
