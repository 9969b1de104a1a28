package root

// End-to-end runs of the CLI against the tgi personality: Hugging Face TGI's
// router as endpoints/endpointstest/tgi.go has it (docs/SERVERS.md).

import (
	"strings"
	"testing"
	"time"

	"github.com/glmbench/glmbench/endpoints/endpointstest"
	"github.com/glmbench/glmbench/reports/schema"
)

// TGI states its limits in GET /info, beside the API base: a phase past
// max_total_tokens is refused before anything is sent to generate, in a line
// that names both of TGI's numbers, and so is a phase within it whose prompt
// alone is past max_input_tokens (TGI would refuse its every request: "`inputs`
// must have less than 1024 tokens"). Behind a proxy that hides /info, the
// first calibration probe gets TGI's own refusal (a 200 stream whose one
// event is the validation error), and nothing more is sent.
func TestRunAgainstTGIRefusesAPhasePastItsLimitsBeforeLoad(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, phase string
		probes      bool
		want        []string
	}{
		{"IN+OUT past max_total_tokens", "long=2/2040/16", false,
			[]string{"phase long", "2,040+16", "2,048", "max_total_tokens in GET /info", "max_input_tokens 1024"}},
		{"IN past max_input_tokens, IN+OUT within max_total_tokens", "in=2/1500/16", false,
			[]string{"phase in", "IN is 1,500 tokens", "1,024", "max_input_tokens in GET /info"}},
		{"IN past max_input_tokens behind a proxy that hides /info", "in=2/1500/16", true,
			[]string{"phase in", "calibration probe", "`inputs` must have less than 1024 tokens"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p := endpointstest.Start(t, endpointstest.TGI, endpointstest.Options{Context: 2048, TGI: endpointstest.TGIOptions{MaxInput: 1024}})
			base := p.BaseURL()
			if tc.probes {
				base, _ = v1Only(t, p)
			}
			runRefused(t, base, []string{"--phase", tc.phase}, tc.want...)
			// Calibration probes ask for max_tokens 1; the load would ask 16.
			fields := p.BodyFields()
			if (len(fields) == 0) == tc.probes {
				t.Errorf("%d generation requests reached the server; want probes: %v", len(fields), tc.probes)
			}
			wantOnlyProbes(t, fields)
		})
	}
}

// TGI takes its --max-concurrent-requests permit inside the stream: a
// streamed request past it gets a 200 whose one event is {"error": "Model is
// overloaded", "error_type": "overloaded"}. run counts those as rate
// limited, as it counts the 429 a whole answer gets. Of the burst, 2
// complete, or 1 while the shape probe cut at its first token still holds
// its permit (the fake frees it once it sees the client gone, which a
// loaded machine can delay).
func TestRunCountsTGIsOverloadedStreamsAsRateLimited(t *testing.T) {
	t.Parallel()
	p := endpointstest.Start(t, endpointstest.TGI, endpointstest.Options{TTFT: 200 * time.Millisecond, TGI: endpointstest.TGIOptions{MaxConcurrent: 2}})
	rep, recs, _ := runReport(t, p.BaseURL(), "--phase", "burst=16/64/4", "--probe-timeout", "10s")
	ph := rep.Phases[0]
	limited := ph.ByClass[schema.RateLimited]
	if limited == 0 || ph.Completed < 1 || ph.Completed > 2 || ph.Completed+limited != 16 || ph.Errors != limited {
		t.Fatalf("phase: %d completed, errors by class %v; want only rate_limited refusals", ph.Completed, ph.ByClass)
	}
	// TGI's own count (tgi_request_success) is of the answers in full: at
	// least the phase's (a calibration probe the client left after its
	// first token may be counted inside the phase too).
	if sv := ph.Server; sv == nil || sv.Source != "tgi" || sv.Requests == nil || *sv.Requests < float64(ph.Completed) || sv.PromptTokens == nil {
		t.Errorf("server side %+v; want tgi's count of at least %d requests, and prompt tokens", sv, ph.Completed)
	}
	for _, r := range recs {
		if r.Class == schema.RateLimited && !strings.Contains(r.Detail, "overloaded") {
			t.Errorf("record %d: detail %q does not say overloaded", r.I, r.Detail)
		}
	}
}

// conform against TGI passes what TGI does as OpenAI does and fails its
// documented deviations: id "" on every answer (the chat check's; the
// concurrent-streams check passes, saying the ids repeat, since each
// stream still counts its own prompt),
// errors as {"error": "...", "error_type"} (a string, no object), axum's
// plain-text 400 for a body that is no JSON, n and the model field ignored,
// no logprobs on /v1/completions, a prompt of token ids refused (422), and
// finish_reason "stop_sequence" for a stop string (FinishReason::format
// maps only the EOS token to "stop").
func TestConformAgainstTGIFailsItsDocumentedDeviationsOnly(t *testing.T) {
	t.Parallel()
	p := endpointstest.Start(t, endpointstest.TGI, endpointstest.Options{})
	code, got, stderr := checks(t, p.BaseURL())
	if code != 1 {
		t.Fatalf("exit %d, want 1; stderr:\n%s", code, stderr)
	}
	fails := map[string]bool{"chat": true, "completions-echo": true, "prompt-token-ids": true, "bad-request": true,
		"context-overflow": true, "unknown-model": true, "n": true, "stop": true}
	for id, c := range got {
		if (c.Status == "fail") != fails[id] {
			t.Errorf("%s: %s (%s); want fail %v", id, c.Status, c.Detail, fails[id])
		}
	}
	for _, id := range []string{"stream", "stream-usage", "max-tokens", "seed", "logprobs", "go-openai", "disconnect"} {
		if got[id].Status != "pass" {
			t.Errorf("%s: %+v; want pass", id, got[id])
		}
	}
	if c := got["context-overflow"]; !strings.Contains(c.Detail, "HTTP 422") {
		t.Errorf("context-overflow: %s; want TGI's 422 named", c.Detail)
	}
	if c := got["stop"]; !strings.Contains(c.Detail, `"stop_sequence"`) {
		t.Errorf("stop: %s; want stop_sequence named", c.Detail)
	}
}

// eval against TGI: no logprobs on /v1/completions, so ppl is unsupported
// and long-ppl is scored from chat logprobs; MMLU's top_logprobs 20 is past
// TGI's --max-top-n-tokens (5), whose 422 states the cap, so MMLU asks the
// top 5 again and is scored by chat-top-logprobs, the cap said in its detail.
func TestEvalAgainstTGITakesTheChatRoutes(t *testing.T) {
	t.Parallel()
	p := endpointstest.Start(t, endpointstest.TGI, endpointstest.Options{})
	_, got, _ := evalsOf(t, p.BaseURL())
	if e := got["ppl"]; e.Status != "unsupported" {
		t.Errorf("ppl: %+v; want unsupported", e)
	}
	wantScoredBy(t, got, "long-ppl", "chat-logprobs")
	wantScoredBy(t, got, "mmlu", "chat-top-logprobs")
	wantScoredBy(t, got, "triviaqa", "generate")
	if f := got["mmlu"].Failure; f == nil || !strings.Contains(f.Detail, "chat-top-logprobs asked the top 5 logprobs") {
		t.Errorf("mmlu: %+v; want the top-5 cap in its detail", f)
	}
}
