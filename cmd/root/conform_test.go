package root

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/glmbench/glmbench/cmd/cmdtest"
	"github.com/glmbench/glmbench/engine"
	"github.com/glmbench/glmbench/engine/enginetest"
	"github.com/glmbench/glmbench/reports"
)

// startConformEngine runs a reference engine with a small KV pool (the
// built-in one reserves gigabytes, which another test of this package
// already does) and the given faults.
func startConformEngine(t *testing.T, faults ...string) *engine.Engine {
	t.Helper()
	return enginetest.Start(t, enginetest.Faults(faults...)).Engine
}

func TestConformExitsByItsVerdictAndKeepsSecretsOut(t *testing.T) {
	t.Parallel()
	conform := func(e *engine.Engine, out string, args ...string) (int, string, string) {
		t.Helper()
		return execute(t, context.Background(), append([]string{"conform", "--endpoint", e.BaseURL(), "--model", e.ModelName(),
			"--header", "X-Team=hidden-header-value", "--out", out}, args...)...)
	}
	good, broken := startConformEngine(t), startConformEngine(t, "echo=500")

	dir := t.TempDir()
	code, stdout, stderr := conform(good, dir, "--only", "completions-echo")
	if code != 0 || !strings.Contains(stdout, "| completions-echo | pass") {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	code, stdout, stderr = conform(broken, t.TempDir(), "--only", "completions-echo")
	if code != 1 || !strings.Contains(stdout, "echo_server_error") ||
		!strings.HasSuffix(stderr, "glmbench: 1 of 3 conformance checks failed: completions-echo\n") {
		t.Fatalf("exit %d, want 1\n%s\n%s", code, stdout, stderr)
	}
	report := cmdtest.ReadFile(t, dir, reports.ReportJSON)
	for _, secret := range []string{secretKey, "hidden-header-value"} {
		if strings.Contains(stdout+stderr+report, secret) {
			t.Errorf("a secret reached the output: %s", secret)
		}
	}

	for _, args := range [][]string{{"--probe-limits", "many"}, {"--only", "nope"}, {"extra-arg"}} {
		code, _, stderr := conform(good, filepath.Join(t.TempDir(), "x"), args...)
		if code != 2 || strings.Count(strings.TrimSpace(stderr), "\n") > 0 {
			t.Errorf("%v: exit %d, stderr %q; want 2 and one line", args, code, stderr)
		}
	}
}
