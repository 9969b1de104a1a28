package run

import (
	"context"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/glmbench/glmbench/bench/agent"
	"github.com/glmbench/glmbench/cmd/cmdtest"
	"github.com/glmbench/glmbench/cmd/cmdutil"
	"github.com/glmbench/glmbench/endpoints/endpointstest"
)

// The truth: the agent token goes over the wire, in plain HTTP, on every
// request to every agent, and the API key must not (each agent reads its
// own): an --agents-token-env whose value is the endpoint's API key (the
// one variable both hosts already have, reused) is bad input before any
// load, not the key sent to every agent, and the error quotes neither.
func TestAnAgentTokenThatIsTheAPIKeyIsRefused(t *testing.T) {
	t.Parallel()
	const key = "sk-0123456789abcdef0123456789abcdef"
	srv := httptest.NewServer(agent.NewServer(agent.ServerOptions{Name: "a0", Getenv: func(string) string { return key }, APIKeyEnv: "OPENAI_API_KEY", Token: key}).Handler())
	t.Cleanup(srv.Close)
	p := endpointstest.Start(t, endpointstest.VLLM, endpointstest.Options{APIKey: key})
	f, _, errOut := cmdutil.TestFactory(context.Background(), map[string]string{"OPENAI_API_KEY": key})
	err := cmdtest.Execute(f, NewCmdRun, "--endpoint", p.BaseURL(), "--model", p.Opts.Model, "--api-key-env", "OPENAI_API_KEY",
		"--phase", "p=4/32/4", "--agents", strings.TrimPrefix(srv.URL, "http://"), "--agents-token-env", "OPENAI_API_KEY", "--no-metrics", "--out", t.TempDir())
	stderr := errOut.String()
	if code := cmdutil.ExitCode(err); code != 2 || !strings.Contains(stderr, "--agents-token-env") || strings.Contains(stderr, key) {
		t.Fatalf("exit %d, stderr %q; want 2 naming --agents-token-env, quoting no key", code, stderr)
	}
	if n := p.Requests("POST /v1/chat/completions"); n != 0 {
		t.Errorf("%d generation requests reached the endpoint; want none", n)
	}
}
