package root

// End-to-end runs of glmbench against the lmstudio personality of
// endpoints/endpointstest: LM Studio's server (`lms server start`) as its
// docs and issues describe it (docs/SERVERS.md).

import (
	"strings"
	"testing"

	"github.com/glmbench/glmbench/endpoints/endpointstest"
	"github.com/glmbench/glmbench/reports/schema"
)

// LM Studio states the context its model was loaded with only in GET
// /api/v1/models (loaded_instances[].config.context_length; /v1/models has
// no context field and max_context_length is the model's own maximum): the
// pre-flight reads it and refuses a phase whose IN+OUT is past it before any
// probe. A phase whose prompt alone is past it would otherwise be refused
// only by the first probe's 400.
func TestRunAgainstLMStudioRefusesAPhasePastTheLoadedContextBeforeAnyProbe(t *testing.T) {
	t.Parallel()
	p := endpointstest.Start(t, endpointstest.LMStudio, endpointstest.Options{Context: 2048, LMStudio: endpointstest.LMStudioOptions{MaxContext: 131072}})
	runRefused(t, p.BaseURL(), []string{"--phase", "long=2/2040/16"}, "phase long", "2,040+16", "2,048", "GET /api/v1/models")
	if n := p.Requests("POST /v1/chat/completions"); n != 0 {
		t.Errorf("%d chat requests reached the server; the stated context refuses the phase before any", n)
	}
}

// Where /api/v1/models is out of reach (a proxy passing /v1 alone), LM
// Studio 0.4 answers a streamed prompt past the loaded context with a 200
// whose one event is "event: error" (issue #2322): the first calibration
// probe fails with LM Studio's message, and the load is not sent.
func TestRunAgainstLMStudioBehindAProxySaysItsStreamedOverflow(t *testing.T) {
	t.Parallel()
	p := endpointstest.Start(t, endpointstest.LMStudio, endpointstest.Options{Context: 2048})
	base, log := v1Only(t, p)
	runRefused(t, base, []string{"--phase", "long=2/2100/16"}, "phase long", "calibration probe", "stream_error", "Input does not fit in context length", "only supports 2048 tokens")
	if probes, load := log.counts(); load != 0 || probes == 0 {
		t.Errorf("%d probes and %d load requests reached the server; want probes only", probes, load)
	}
}

// LM Studio's stream carries no usage, stream_options or not (issue #713),
// and it reads max_tokens alone of the caps: a run completes with n counted
// from the stream's events, each request asked max_tokens.
func TestRunAgainstLMStudioCountsOutputFromEventsOnEachRoute(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{nil, {"--api", "completions"}} {
		p := endpointstest.Start(t, endpointstest.LMStudio, endpointstest.Options{})
		dir := t.TempDir()
		code, _, stderr := executeBounded(t, append([]string{"run", "--endpoint", p.BaseURL(), "--phase", "x=4/64/8", "--out", dir}, args...)...)
		if code != 0 {
			t.Fatalf("%v: exit %d; stderr:\n%s", args, code, stderr)
		}
		rep, recs, _ := readReport(t, dir)
		if ph := rep.Phases[0]; ph.Completed != 4 || ph.Errors != 0 || ph.Short != 0 || ph.BadUsage != 0 {
			t.Errorf("%v: phase %+v", args, ph)
		}
		for _, r := range recs {
			if r.N != 8 || r.NSource != schema.NFromEvents {
				t.Errorf("%v: record %d: n %d from %q; want 8 from events", args, r.I, r.N, r.NSource)
			}
		}
		for i, f := range p.BodyFields() {
			if string(f["max_tokens"]) == "" {
				t.Errorf("%v: request %d sent no max_tokens, the one cap LM Studio reads: %v", args, i, f)
			}
		}
	}
}

// conform against LM Studio fails its documented deviations only: no usage
// in a stream (stream-usage, and so the checks that need it skip), a
// max_tokens past the context accepted (context-overflow: it generates
// until the context is full), and logprobs accepted but never answered
// (logprobs, completions-echo); its error object of 0.4 names no type
// ({"error": {"message"}}: error-type); before 0.4 its errors are
// {"error": "..."} (a string, no object: bad-request, unknown-model, and
// error-type skips). A tool call the fake's
// max_tokens cuts is a skip, as on llama.cpp.
func TestConformAgainstLMStudioFailsItsDocumentedDeviationsOnly(t *testing.T) {
	t.Parallel()
	for _, before04 := range []bool{false, true} {
		p := endpointstest.Start(t, endpointstest.LMStudio, endpointstest.Options{LMStudio: endpointstest.LMStudioOptions{Before04: before04}})
		code, got, stderr := checks(t, p.BaseURL())
		if code != 1 {
			t.Fatalf("before 0.4 %v: exit %d, want 1; stderr:\n%s", before04, code, stderr)
		}
		fails := map[string]bool{"stream-usage": true, "context-overflow": true, "logprobs": true, "completions-echo": true,
			"bad-request": before04, "unknown-model": before04, "error-type": !before04}
		for id, c := range got {
			if (c.Status == "fail") != fails[id] {
				t.Errorf("before 0.4 %v: %s: %s (%s); want fail %v", before04, id, c.Status, c.Detail, fails[id])
			}
		}
		for _, id := range []string{"chat", "usage", "stream", "stop", "seed", "n", "disconnect"} {
			if got[id].Status != "pass" {
				t.Errorf("before 0.4 %v: %s: %+v; want pass", before04, id, got[id])
			}
		}
		if c := got["bad-request"]; before04 && !strings.Contains(c.Detail, `no "error" object`) {
			t.Errorf("bad-request: %s; want the string error named", c.Detail)
		}
	}
}

// eval against LM Studio: it answers no logprobs on either route (and no
// echo), so ppl and long-ppl are unsupported, saying logprobs_missing, MMLU
// is scored by the chat answer's letter and TriviaQA by generation.
func TestEvalAgainstLMStudioScoresWhatNeedsNoLogprobs(t *testing.T) {
	t.Parallel()
	p := endpointstest.Start(t, endpointstest.LMStudio, endpointstest.Options{})
	_, got, stderr := evalsOf(t, p.BaseURL())
	wantScoredBy(t, got, "mmlu", "chat-greedy")
	wantScoredBy(t, got, "triviaqa", "generate")
	for _, name := range []string{"ppl", "long-ppl"} {
		if e := got[name]; e.Status != "unsupported" || e.Failure == nil || e.Failure.Kind != "logprobs_missing" {
			t.Errorf("%s: %+v; want unsupported, logprobs_missing", name, e)
		}
	}
	if t.Failed() {
		t.Log(stderr)
	}
}
