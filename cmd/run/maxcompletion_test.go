package run

import (
	"context"
	"strings"
	"testing"

	"github.com/glmbench/glmbench/cmd/cmdutil"
	"github.com/glmbench/glmbench/endpoints/endpointstest"
	"github.com/glmbench/glmbench/reports/schema"
)

// OpenAI's reasoning models refuse max_tokens: the first probe stops the run
// naming --max-completion-tokens, and with it (and --ignore-eos=false, which
// OpenAI also refuses) the phase completes, every request capped by
// max_completion_tokens; the report records it.
func TestAReasoningModelIsRunWithMaxCompletionTokens(t *testing.T) {
	t.Parallel()
	p := endpointstest.Start(t, endpointstest.OpenAI, endpointstest.Options{ReasoningModel: true})
	args := []string{"--endpoint", p.BaseURL(), "--model", p.Opts.Model, "--phase", "p=3/40/6", "--ignore-eos=false", "--no-metrics"}
	code, stderr := execute(t, context.Background(), append(args, "--out", t.TempDir())...)
	if code != cmdutil.ExitBadInput || !strings.Contains(stderr, "max_completion_tokens") || !strings.Contains(stderr, "--max-completion-tokens sends the cap as max_completion_tokens") {
		t.Fatalf("exit %d, stderr %q: want exit 2 naming --max-completion-tokens", code, stderr)
	}
	in := runOK(t, t.TempDir(), append(args, "--max-completion-tokens")...)
	if !in.Report.Options.MaxCompletionTokens || len(in.Records) != 3 {
		t.Fatalf("max_completion_tokens %t, %d records", in.Report.Options.MaxCompletionTokens, len(in.Records))
	}
	for _, r := range in.Records {
		if !r.Completed() || r.N < 1 || r.N > 6 || r.NSource != schema.NFromUsage {
			t.Errorf("request %d: %+v; want completed within max_completion_tokens 6", r.I, r)
		}
	}
	code, stderr = execute(t, context.Background(), "--endpoint", "http://127.0.0.1:1/v1", "--phase", "p=1/8/2", "--api", "completions", "--max-completion-tokens")
	if code != cmdutil.ExitBadInput || !strings.Contains(stderr, "--max-completion-tokens is a chat field") {
		t.Errorf("with --api completions: exit %d, %q", code, stderr)
	}
}

// Agents send the run's shape: through two agents, a reasoning model's
// every request goes with max_completion_tokens (one with max_tokens would
// be refused) and without stream_options (OpenAI then streams no usage, so
// n is the count of events), and the report says both.
func TestAgentsSendMaxCompletionTokensAndNoStreamOptions(t *testing.T) {
	t.Parallel()
	p := endpointstest.Start(t, endpointstest.OpenAI, endpointstest.Options{ReasoningModel: true})
	in := runThroughAgents(t, p, "--ignore-eos=false", "--max-completion-tokens", "--stream-usage=false")
	agents := map[string]int{}
	for _, r := range in.Records {
		if !r.Completed() || r.NSource != schema.NFromEvents || r.N != len(r.Events) {
			t.Errorf("request %d: %+v; want completed, n counted from events", r.I, r)
		}
		agents[r.Agent]++
	}
	if o := in.Report.Options; len(agents) != 2 || len(in.Records) != 6 || !o.MaxCompletionTokens || !o.NoStreamUsage {
		t.Errorf("requests by agent %v, %d records, options %+v: want both agents, 6 records, both switches recorded", agents, len(in.Records), o)
	}
}
