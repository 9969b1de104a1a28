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
	"github.com/glmbench/glmbench/engine/enginetest"
	"github.com/glmbench/glmbench/engine/sim"
	"github.com/glmbench/glmbench/reports"
)

// startAgents serves an agent of each name on loopback for the test and
// returns their host:port addresses.
func startAgents(t *testing.T, names ...string) []string {
	t.Helper()
	var addrs []string
	for _, name := range names {
		srv := httptest.NewServer(agent.NewServer(agent.ServerOptions{Name: name, Getenv: func(string) string { return "" }}).Handler())
		t.Cleanup(srv.Close)
		addrs = append(addrs, strings.TrimPrefix(srv.URL, "http://"))
	}
	return addrs
}

// runThroughAgents runs a 6-request phase against p through two agents,
// with args added, fails t unless it exits 0, and returns what it wrote.
func runThroughAgents(t *testing.T, p *endpointstest.Personality, args ...string) *reports.Input {
	t.Helper()
	return runOK(t, t.TempDir(), append([]string{"--endpoint", p.BaseURL(), "--model", p.Opts.Model, "--phase", "p=6/32/4",
		"--agents", strings.Join(startAgents(t, "a0", "a1"), ","), "--no-metrics"}, args...)...)
}

// A run through two agents is one report: every request once, each with
// the agent that sent it, the agents' shares and offsets in the phase.
func TestARunThroughTwoAgentsIsOneReport(t *testing.T) {
	t.Parallel()
	e := enginetest.Start(t, enginetest.Sim(sim.DefaultCost))
	addrs := startAgents(t, "a0", "a1")
	dir := t.TempDir()
	in, stderr := runSaying(t, dir, "--endpoint", e.BaseURL(), "--phase", "p=10/32/4",
		"--agents", strings.Join(addrs, ","), "--max-concurrency", "4", "--metrics-interval", "100ms")
	if !strings.Contains(stderr, "coordinating 2 agents") {
		t.Errorf("stderr does not say it coordinates the agents:\n%s", stderr)
	}
	ph := in.Report.Phases[0]
	if ph.Completed != 10 || len(ph.Agents) != 2 {
		t.Fatalf("completed %d, %d agents; want 10 and 2", ph.Completed, len(ph.Agents))
	}
	seen := map[int]bool{}
	for _, r := range in.Records {
		want := addrs[r.I%2]
		if r.Agent != want || seen[r.I] {
			t.Errorf("record %d: agent %q (want %q), seen before %v", r.I, r.Agent, want, seen[r.I])
		}
		seen[r.I] = true
	}
	// The coordinator scrapes the endpoint as one host would: the server
	// counted the agents' requests, all ten.
	if srv := ph.Server; srv == nil || srv.Requests == nil || *srv.Requests != 10 {
		t.Errorf("server block %+v: want the endpoint's count of the 10 requests", srv)
	}
	if md := cmdtest.ReadFile(t, dir, reports.ReportMD); !strings.Contains(md, "## Agents") {
		t.Errorf("report.md has no agents table")
	}
	shares := ph.Agents[0].MaxConcurrency + ph.Agents[1].MaxConcurrency
	if len(seen) != 10 || shares != 4 {
		t.Errorf("%d distinct requests, max-concurrency shares %d: want 10 and 4", len(seen), shares)
	}
}

func TestBadAgentFlagsExitTwo(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--agents", "a:1", "--agents-dns", "x", "--agents-count", "2"}, "give one"},
		{[]string{"--agents-dns", "x"}, "--agents-count"},
		{[]string{"--agents-count", "3"}, "--agents-dns"},
		{[]string{"--agents", "127.0.0.1:1", "--workload", "fixed"}, "workloads are not distributed"},
	} {
		code, stderr := execute(t, context.Background(), append([]string{"--endpoint", "http://127.0.0.1:1/v1"}, c.args...)...)
		if code != 2 || !strings.Contains(stderr, c.want) {
			t.Errorf("%v: exit %d, stderr %q; want 2 saying %q", c.args, code, stderr, c.want)
		}
	}
}

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
