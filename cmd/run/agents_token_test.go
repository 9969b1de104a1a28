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

// The truth: a run through an agent started with a token completes every
// request when given the token (--agents-token-env), and without it exits
// 2 before any load: the endpoint sees no generation request at all (not
// even a probe, since the agents are dialled first). No output holds the
// token.
func TestARunGivesItsAgentsTheirToken(t *testing.T) {
	t.Parallel()
	const token = "tok-0123456789abcdef0123456789abcdef"
	srv := httptest.NewServer(agent.NewServer(agent.ServerOptions{Name: "a0", Getenv: func(string) string { return "" }, Token: token}).Handler())
	t.Cleanup(srv.Close)
	addr := strings.TrimPrefix(srv.URL, "http://")
	p := endpointstest.Start(t, endpointstest.VLLM, endpointstest.Options{})
	run := func(env map[string]string, extra ...string) (int, string) {
		f, _, errOut := cmdutil.TestFactory(context.Background(), env)
		args := append([]string{"--endpoint", p.BaseURL(), "--model", p.Opts.Model, "--phase", "p=6/32/4", "--agents", addr, "--no-metrics", "--out", t.TempDir()}, extra...)
		err := cmdtest.Execute(f, NewCmdRun, args...)
		return cmdutil.ExitCode(err), errOut.String()
	}
	code, stderr := run(nil)
	if code != 2 || !strings.Contains(stderr, "asks for a token") || !strings.Contains(stderr, "--agents-token-env") {
		t.Fatalf("without the token: exit %d, stderr %q; want 2 naming --agents-token-env", code, stderr)
	}
	if n := p.Requests("POST /v1/chat/completions"); n != 0 {
		t.Fatalf("%d generation requests reached the endpoint before the refusal; want none", n)
	}
	code, stderr = run(map[string]string{"AGENT_TOKEN": token}, "--agents-token-env", "AGENT_TOKEN")
	if code != 0 || strings.Contains(stderr, token) {
		t.Fatalf("with the token: exit %d (want 0), stderr holds the token %v:\n%s", code, strings.Contains(stderr, token), stderr)
	}
}

func TestBadAgentTokenFlagsExitTwo(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--agents-token-env", "AGENT_TOKEN"}, "goes with --agents"},
		{[]string{"--agents", "127.0.0.1:1", "--agents-token-env", "AGENT_TOKEN"}, "AGENT_TOKEN: the variable is unset or empty"},
	} {
		code, stderr := execute(t, context.Background(), append([]string{"--endpoint", "http://127.0.0.1:1/v1"}, c.args...)...)
		if code != 2 || !strings.Contains(stderr, c.want) {
			t.Errorf("%v: exit %d, stderr %q; want 2 saying %q", c.args, code, stderr, c.want)
		}
	}
}
