package run

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/glmbench/glmbench/cmd/cmdutil"
	"github.com/glmbench/glmbench/endpoints/endpointstest"
	"github.com/glmbench/glmbench/engine/enginetest"
	"github.com/glmbench/glmbench/reports/schema"
)

func TestAnAPIOtherThanChatOrCompletionsExitsTwoInOneLineBeforeTheEndpoint(t *testing.T) {
	t.Parallel()
	code, stderr := execute(t, context.Background(), "--endpoint", "http://127.0.0.1:1/v1", "--phase", "p=1/8/2", "--api", "bogus")
	if code != cmdutil.ExitBadInput || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, "--api must be chat or completions") || strings.Contains(stderr, "127.0.0.1:1") {
		t.Fatalf("exit %d, stderr %q; want exit 2 in one line, before the endpoint", code, stderr)
	}
	if o := parse(t); o.API != "chat" {
		t.Fatalf("--api defaults to %q, want chat", o.API)
	}
}

// Against the built-in engine, --api completions runs a phase whose every
// request generates its max_tokens (ignore_eos, counted by usage), and the
// report says the route in report.json and report.md.
func TestACompletionsRunOnTheBuiltInEngineRecordsItsAPI(t *testing.T) {
	t.Parallel()
	e := enginetest.Start(t)
	rep, records, md := runEngine(t, e, "--phase", "p=3/64/8", "--api", "completions")
	if rep.Options.API != "completions" {
		t.Errorf("options.api %q, want completions", rep.Options.API)
	}
	if len(records) != 3 {
		t.Fatalf("%d records, want 3", len(records))
	}
	for _, r := range records {
		if r.N != 8 || r.NSource != schema.NFromUsage {
			t.Errorf("request %d: n %d from %q; want 8 from usage", r.I, r.N, r.NSource)
		}
	}
	if !strings.Contains(md, "- api: completions (POST /completions, no chat template)") {
		t.Errorf("report.md does not name the route:\n%s", md)
	}
	chat, _, _ := runEngine(t, e, "--phase", "p=1/64/2")
	if chat.Options.API != "chat" {
		t.Errorf("a run without --api records %q, want chat", chat.Options.API)
	}
}

// A run through agents sends the agents' requests on the coordinator's
// route too: vLLM's fake counts every request by its route.
func TestAgentsSendOnTheRunsAPI(t *testing.T) {
	t.Parallel()
	p := endpointstest.Start(t, endpointstest.VLLM, endpointstest.Options{})
	in := runThroughAgents(t, p, "--api", "completions")
	agents := map[string]int{}
	for _, r := range in.Records {
		if !r.Completed() || r.N != 4 {
			t.Errorf("request %d: %+v", r.I, r)
		}
		agents[r.Agent]++
	}
	if len(agents) != 2 || in.Report.Options.API != "completions" {
		t.Errorf("requests by agent %v, api %q: want both agents, completions", agents, in.Report.Options.API)
	}
	// The probes (the coordinator's) and the 6 load requests (the agents'),
	// all on /v1/completions.
	if n := p.Requests("POST /v1/completions"); n < 6+2 || p.Requests("POST /v1/chat/completions") != 0 {
		t.Errorf("%d completions and %d chat requests: want every one on completions", n, p.Requests("POST /v1/chat/completions"))
	}
}

// OpenAI answers a chat model's /v1/completions with 404: the run stops at
// the first probe with exit 2, in one line that says what to do.
func TestACompletionsRunAgainstAChatOnlyModelExitsTwoAtTheFirstProbe(t *testing.T) {
	t.Parallel()
	p := endpointstest.Start(t, endpointstest.OpenAI, endpointstest.Options{})
	code, stderr := execute(t, context.Background(), "--endpoint", p.BaseURL(), "--model", p.Opts.Model, "--out", t.TempDir(),
		"--phase", "p=4/64/8", "--api", "completions", "--ignore-eos=false", "--no-metrics")
	lines := strings.Split(strings.TrimSuffix(stderr, "\n"), "\n")
	last := lines[len(lines)-1]
	if code != cmdutil.ExitBadInput || !strings.HasPrefix(last, "glmbench: phase p: ") || !strings.Contains(last, "HTTP 404") || !strings.Contains(last, "--api chat") {
		t.Fatalf("exit %d, stderr %q; want exit 2, the error in one line naming the 404 and --api chat", code, stderr)
	}
	if p.Requests("POST /v1/completions") != 1 || p.Requests("POST /v1/chat/completions") != 0 {
		t.Errorf("%d completions requests: want the one probe", p.Requests("POST /v1/completions"))
	}
}

// run --baseline with a baseline whose phase went to another API refuses
// before it opens the endpoint (nothing listens on port 1): a completions
// run gated against a chat run would compare different prompts. A
// baseline written before --api (no options.api) is a chat run.
func TestARunGatedAgainstABaselineOfAnotherAPIExitsTwoBeforeAnyLoad(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	baseline := func(name, api string) string {
		rep := schema.Report{Schema: schema.ReportSchema, Label: "main", Phases: []schema.PhaseResult{{Phase: "p", BatchSize: 1, InputLen: 8, OutputLen: 2}}}
		rep.Options.API = api
		b, err := json.Marshal(rep)
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	for _, tc := range []struct{ base, api, want string }{
		{baseline("chat.json", "chat"), "completions", "phase p's load goes to /completions here but went to /chat/completions in the baseline (label main)"},
		{baseline("old.json", ""), "completions", "went to /chat/completions in the baseline"},
		{baseline("compl.json", "completions"), "chat", "phase p's load goes to /chat/completions here but went to /completions in the baseline"},
	} {
		code, stderr := execute(t, context.Background(), "--endpoint", "http://127.0.0.1:1/v1", "--phase", "p=1/8/2", "--api", tc.api, "--baseline", tc.base)
		if code != cmdutil.ExitBadInput || !strings.Contains(stderr, tc.want) || strings.Contains(stderr, "127.0.0.1:1") {
			t.Errorf("--api %s against %s: exit %d, stderr %q; want exit 2 saying %q", tc.api, filepath.Base(tc.base), code, stderr, tc.want)
		}
	}
}
