package agent

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/glmbench/glmbench/cmd/cmdtest"
	"github.com/glmbench/glmbench/cmd/cmdutil"
)

// An agent's --ca-cert that holds no certificate is bad input in one line,
// said before the agent listens (it never says it is listening).
func TestAnAgentsCACertWithoutACertificateExitsTwoBeforeItListens(t *testing.T) {
	t.Parallel()
	bad := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(bad, []byte("-----BEGIN RSA PRIVATE KEY-----\nAAAA\n-----END RSA PRIVATE KEY-----\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	f, _, errOut := cmdutil.TestFactory(context.Background(), nil)
	err := cmdtest.Execute(f, NewCmdAgent, "--listen", "127.0.0.1:0", "--ca-cert", bad)
	if code := cmdutil.ExitCode(err); code != cmdutil.ExitBadInput || strings.Count(errOut.String(), "\n") != 1 || !strings.Contains(errOut.String(), "--ca-cert "+bad+": holds no certificate, only RSA PRIVATE KEY") {
		t.Fatalf("exit %d, stderr %q: want exit 2 in one line naming the file and what it holds", code, errOut.String())
	}
}

// An agent's --client-cert without --client-key is bad input in one line,
// said before the agent listens.
func TestAnAgentsClientCertWithoutItsKeyExitsTwoBeforeItListens(t *testing.T) {
	t.Parallel()
	f, _, errOut := cmdutil.TestFactory(context.Background(), nil)
	err := cmdtest.Execute(f, NewCmdAgent, "--listen", "127.0.0.1:0", "--client-cert", filepath.Join(t.TempDir(), "client.pem"))
	if code := cmdutil.ExitCode(err); code != cmdutil.ExitBadInput || strings.Count(errOut.String(), "\n") != 1 || !strings.Contains(errOut.String(), "--client-cert and --client-key: give both") {
		t.Fatalf("exit %d, stderr %q: want exit 2 in one line saying to give both", code, errOut.String())
	}
}
