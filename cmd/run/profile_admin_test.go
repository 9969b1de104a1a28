package run

import (
	"context"
	"strings"
	"testing"

	"github.com/glmbench/glmbench/cmd/cmdtest"
	"github.com/glmbench/glmbench/cmd/cmdutil"
	"github.com/glmbench/glmbench/endpoints/endpointstest"
	"github.com/glmbench/glmbench/reports"
)

// SGLang started with --api-key and --admin-api-key takes only the admin key
// on its profiler routes (python/sglang/srt/utils/auth.py: ADMIN_OPTIONAL with
// both keys set), and only the API key on the others. The truths: without
// --admin-api-key-env the start is refused 401 and the run exits 2 naming the
// flag before any load; with it, the profiler starts and stops, every load
// other request carried the API key, and neither key reaches stderr or the report.
func TestProfileOnSGLangWithAnAdminKeySendsItThereAlone(t *testing.T) {
	t.Parallel()
	const key, admin = "sk-api-key-0123456789abcdef", "sk-admin-key-fedcba9876543210"
	p := endpointstest.Start(t, endpointstest.SGLang, endpointstest.Options{APIKey: key, AdminAPIKey: admin})
	env := map[string]string{"OPENAI_API_KEY": key, "SGLANG_ADMIN": admin}
	args := []string{"--endpoint", p.BaseURL(), "--phase", "p=4/32/4", "--no-metrics", "--profile"}

	f, _, errOut := cmdutil.TestFactory(context.Background(), env)
	err := cmdtest.Execute(f, NewCmdRun, append(args, "--out", t.TempDir())...)
	stderr := errOut.String()
	if cmdutil.ExitCode(err) != 2 || !strings.Contains(stderr, "HTTP 401") || !strings.Contains(stderr, "--admin-api-key-env") {
		t.Fatalf("without the admin key: exit %d, want 2 naming --admin-api-key-env\n%s", cmdutil.ExitCode(err), stderr)
	}
	if calls := p.ProfileCalls(); len(calls) != 0 {
		t.Fatalf("the refused start was answered as a profile call: %+v", calls)
	}
	before, healthBefore := len(p.AuthHeaders()), p.Requests("GET /health")

	dir := t.TempDir()
	f, _, errOut = cmdutil.TestFactory(context.Background(), env)
	err = cmdtest.Execute(f, NewCmdRun, append(args, "--admin-api-key-env", "SGLANG_ADMIN", "--out", dir)...)
	stderr = errOut.String()
	if cmdutil.ExitCode(err) != 0 {
		t.Fatalf("with the admin key: exit %d\n%s", cmdutil.ExitCode(err), stderr)
	}
	calls := p.ProfileCalls()
	if len(calls) != 2 || calls[0].Route != "POST /start_profile" || calls[1].Route != "POST /stop_profile" {
		t.Fatalf("profile calls %+v, want one start and one stop", calls)
	}
	// Every request of the two runs: the second's start and stop with the
	// admin key, /health with none (glmbench never sends it the key), every
	// other (models, probes, load) with the API key.
	sent := map[string]int{}
	for _, a := range p.AuthHeaders()[before:] {
		sent[a]++
	}
	health := p.Requests("GET /health") - healthBefore
	if sent["Bearer "+admin] != 2 || sent[""] != health || sent["Bearer "+key] < profileLoad || len(sent) > 3 {
		t.Errorf("the second run's Authorization values (by count, keys hidden): admin %d, API %d, none %d (GET /health %d), %d distinct; want admin 2 (start, stop), none on /health alone, the API key on the rest",
			sent["Bearer "+admin], sent["Bearer "+key], sent[""], health, len(sent))
	}
	report := cmdtest.ReadFile(t, dir, reports.ReportJSON)
	for _, s := range []string{key, admin, key[:12], admin[:12]} {
		if strings.Contains(stderr, s) || strings.Contains(report, s) {
			t.Errorf("%q reached stderr or report.json", s)
		}
	}
}

// --admin-api-key-env is refused before anything is sent where it could do
// nothing or send nothing: without --profile, on the built-in engine, and
// naming an empty variable.
func TestAdminKeyEnvIsRefusedWhereItCannotServe(t *testing.T) {
	t.Parallel()
	p := endpointstest.Start(t, endpointstest.SGLang, endpointstest.Options{})
	for _, tc := range []struct {
		name string
		env  map[string]string
		args []string
		want string
	}{
		{"without --profile", map[string]string{"A": "sk-admin-0123456789"}, []string{"--endpoint", p.BaseURL(), "--admin-api-key-env", "A"}, "it goes with --profile"},
		{"built-in engine", map[string]string{"A": "sk-admin-0123456789"}, []string{"--profile", "--admin-api-key-env", "A"}, "the built-in engine takes no key"},
		{"empty variable", map[string]string{}, []string{"--endpoint", p.BaseURL(), "--profile", "--admin-api-key-env", "A"}, "environment variable A (--admin-api-key-env, the admin key) is empty or unset"},
	} {
		f, _, errOut := cmdutil.TestFactory(context.Background(), tc.env)
		err := cmdtest.Execute(f, NewCmdRun, append(tc.args, "--phase", "p=1/32/4", "--no-metrics", "--out", t.TempDir())...)
		if cmdutil.ExitCode(err) != 2 || !strings.Contains(errOut.String(), tc.want) {
			t.Errorf("%s: exit %d, want 2 saying %q\n%s", tc.name, cmdutil.ExitCode(err), tc.want, errOut.String())
		}
	}
	if n := p.Generations(); n != 0 {
		t.Errorf("%d generation requests were sent, want none", n)
	}
}
