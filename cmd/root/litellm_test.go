package root

// End-to-end runs of glmbench through a LiteLLM proxy in front of vLLM: the
// gateway personality of endpoints/endpointstest with LiteLLMOptions.On, as
// LiteLLM's docs and sources describe the proxy (docs/SERVERS.md).

import (
	"strings"
	"testing"

	"github.com/glmbench/glmbench/endpoints/endpointstest"
	"github.com/glmbench/glmbench/reports/schema"
)

func liteLLM(t *testing.T, o endpointstest.Options) *endpointstest.Personality {
	t.Helper()
	o.LiteLLM.On = true
	return endpointstest.Start(t, endpointstest.Gateway, o)
}

// LiteLLM's /health, given a key it accepts, sends a real request to every
// model behind it. glmbench asks /health without the key: the proxy
// answers 401, which is no verdict, the run goes on, and no model is
// called for it.
func TestRunThroughLiteLLMNeverMakesItsHealthCallTheModels(t *testing.T) {
	t.Parallel()
	p := liteLLM(t, endpointstest.Options{APIKey: secretKey})
	rep, _, stderr := runReport(t, p.BaseURL(), "--phase", "x=4/64/8")
	if ph := rep.Phases[0]; ph.Completed != 4 || ph.Errors != 0 {
		t.Errorf("phase %+v", ph)
	}
	if calls, _ := p.LiteLLMCounts(); p.Requests("GET /health") == 0 || calls != 0 {
		t.Errorf("GET /health asked %d times, %d backend calls made by it; want asked, and none", p.Requests("GET /health"), calls)
	}
	if strings.Contains(stderr, "HTTP 401") {
		t.Errorf("the 401 of a keyless /health was reported:\n%s", stderr)
	}
}

// LiteLLM's own limiter (a key's rpm_limit) answers 429 "Max parallel request
// limit reached" with code "429" (a string) and retry-after: run counts
// each as rate_limited and keeps its Retry-After.
func TestRunThroughLiteLLMCountsItsOwnLimitersRefusalsAsRateLimited(t *testing.T) {
	t.Parallel()
	p := liteLLM(t, endpointstest.Options{RPM: 6, RetryAfter: "37"})
	rep, recs, _ := runReport(t, p.BaseURL(), "--phase", "x=8/64/8")
	ph := rep.Phases[0]
	limited := ph.ByClass[schema.RateLimited]
	if limited == 0 || ph.Completed == 0 || ph.Completed+limited != 8 || ph.Errors != limited {
		t.Fatalf("phase: %d completed, errors by class %v; want only rate_limited refusals", ph.Completed, ph.ByClass)
	}
	wantRateLimitedAs429(t, recs, "37")
}

// Through LiteLLM no route states vLLM's context (its /v1/models is its own
// model_list): a phase whose prompt is past it is refused by the first
// calibration probe, whose line quotes vLLM's refusal as the proxy passes
// it on, and the load is not sent.
func TestRunThroughLiteLLMRefusesAnOverlongPhaseAtItsFirstProbe(t *testing.T) {
	t.Parallel()
	p := liteLLM(t, endpointstest.Options{Context: 2048})
	runRefused(t, p.BaseURL(), []string{"--phase", "long=2/2100/16"}, "phase long", "refuses a prompt of about", "2,100", "litellm.BadRequestError", "maximum context length is 2048 tokens")
	wantOnlyProbes(t, p.BodyFields())
}

// conform through LiteLLM passes what vLLM behind it passes: its errors
// are OpenAI's shape with the status as a string code, and a model outside
// its model_list is a 400 naming it.
func TestConformThroughLiteLLMPassesWhatVLLMBehindItPasses(t *testing.T) {
	t.Parallel()
	p := liteLLM(t, endpointstest.Options{})
	code, got, stderr := checks(t, p.BaseURL())
	if code != 0 {
		t.Fatalf("exit %d, want 0; stderr:\n%s", code, stderr)
	}
	for id, c := range got {
		if c.Status == "fail" {
			t.Errorf("%s: fail (%s)", id, c.Detail)
		}
	}
	if c := got["unknown-model"]; c.Status != "pass" || !strings.Contains(c.Detail, "Invalid model name") {
		t.Errorf("unknown-model: %+v; want pass naming LiteLLM's refusal", c)
	}
}

// eval through LiteLLM takes vLLM's routes: /v1/completions with echo is
// proxied, so ppl and MMLU are scored from prompt logprobs.
func TestEvalThroughLiteLLMTakesVLLMsRoutes(t *testing.T) {
	t.Parallel()
	p := liteLLM(t, endpointstest.Options{})
	_, got, _ := evalsOf(t, p.BaseURL())
	wantScoredBy(t, got, "ppl", "echo-text")
	wantScoredBy(t, got, "mmlu", "echo")
	wantScoredBy(t, got, "triviaqa", "generate")
}
