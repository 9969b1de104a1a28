package root

// End-to-end runs of the CLI against the trtllm personality: NVIDIA
// TensorRT-LLM's trtllm-serve as endpoints/endpointstest/trtllm.go has it
// (docs/SERVERS.md).

import (
	"strings"
	"testing"

	"github.com/glmbench/glmbench/endpoints/endpointstest"
)

// trtllm-serve states no context anywhere glmbench asks, so calibration
// finds its limits: a phase whose prompt is past --max_num_tokens, or
// leaves max_seq_len no room, is refused before the load in a line that
// quotes the server's own sentence. The second is refused by the worker
// after a stream's 200 (the connection dropped, nothing said); the probe
// asks once whole, and that answer says why.
func TestRunAgainstTRTLLMRefusesAPhasePastItsLimitsInItsWords(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, phase string
		opts        endpointstest.Options
		want        []string
	}{
		{"IN past max_num_tokens", "long=2/3000/16", endpointstest.Options{Context: 16384, TRTLLM: endpointstest.TRTLLMOptions{MaxNumTokens: 2048}},
			[]string{"phase long", "HTTP 400", "should not exceed max_num_tokens (2048)"}},
		{"IN leaving max_seq_len no room", "full=2/2100/16", endpointstest.Options{Context: 2048},
			[]string{"phase full", "HTTP 400", "must be greater than 0", "max_seq_len (2048)"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p := endpointstest.Start(t, endpointstest.TRTLLM, tc.opts)
			runRefused(t, p.BaseURL(), []string{"--phase", tc.phase}, tc.want...)
			wantOnlyProbes(t, p.BodyFields())
		})
	}
}

// A phase whose IN+OUT passes max_seq_len runs, since trtllm-serve cuts
// max_tokens to what the prompt leaves with only a logged warning: every
// answer ends at finish_reason length with max_seq_len minus its prompt
// tokens, and run says in a warning that the server cut them, not the
// model.
func TestRunAgainstTRTLLMSaysWhenTheServerCutMaxTokens(t *testing.T) {
	t.Parallel()
	p := endpointstest.Start(t, endpointstest.TRTLLM, endpointstest.Options{Context: 2048})
	_, recs, stderr := runReport(t, p.BaseURL(), "--phase", "over=2/1900/400")
	for _, r := range recs {
		if r.Finish != "length" || r.N != 2048-r.Prompt {
			t.Errorf("record %d: %d tokens after %d prompt tokens, finish %q; want %d, length", r.I, r.N, r.Prompt, r.Finish, 2048-r.Prompt)
		}
	}
	if !strings.Contains(stderr, "glmbench: warning: phase over: 2 of 2 completed requests ended at finish_reason length before their max_tokens: the server cut max_tokens") {
		t.Errorf("no warning that the server cut max_tokens; stderr:\n%s", stderr)
	}
}

// trtllm-serve's request models forbid unknown fields: an --extra-body
// field outside them (a typo, or another server's extension) is refused
// by the first calibration probe, and run says in one line, before any
// load, which --extra-body field it was, in either build's error shape.
func TestRunAgainstTRTLLMNamesARefusedExtraBodyField(t *testing.T) {
	t.Parallel()
	for _, before := range []bool{false, true} {
		p := endpointstest.Start(t, endpointstest.TRTLLM, endpointstest.Options{TRTLLM: endpointstest.TRTLLMOptions{Before2026: before}})
		runRefused(t, p.BaseURL(), []string{"--phase", "small=2/64/8", "--extra-body", `{"guided_json": {"type": "object"}}`}, "HTTP 400", "'extra_forbidden', 'loc': ('body', 'guided_json')", "--extra-body adds guided_json")
	}
}

// conform against trtllm-serve passes the streams, usage, limits and
// sampling checks glmbench's run relies on, and fails its documented
// deviations only: echo without prompt logprobs, errors of validation as
// {"error": "<pydantic's list>"} (a string, no object), a max_tokens past
// the context cut and answered 200, and the model field ignored.
func TestConformAgainstTRTLLMFailsItsDocumentedDeviationsOnly(t *testing.T) {
	t.Parallel()
	p := endpointstest.Start(t, endpointstest.TRTLLM, endpointstest.Options{})
	code, got, stderr := checks(t, p.BaseURL())
	if code != 1 {
		t.Fatalf("exit %d, want 1; stderr:\n%s", code, stderr)
	}
	fails := map[string]bool{"completions-echo": true, "bad-request": true, "context-overflow": true, "unknown-model": true}
	for id, c := range got {
		if (c.Status == "fail") != fails[id] {
			t.Errorf("%s: %s (%s); want fail %v", id, c.Status, c.Detail, fails[id])
		}
	}
	for _, id := range []string{"chat", "stream", "stream-usage", "max-tokens", "stop", "seed", "logprobs", "n", "go-openai", "disconnect", "concurrent-streams"} {
		if got[id].Status != "pass" {
			t.Errorf("%s: %+v; want pass", id, got[id])
		}
	}
	if c := got["bad-request"]; !strings.Contains(c.Detail, "json_invalid") {
		t.Errorf("bad-request: %s; want pydantic's json_invalid quoted", c.Detail)
	}
	if c := got["completions-echo"]; !strings.Contains(c.Detail, "only the generation was scored") {
		t.Errorf("completions-echo: %s; want the missing prompt logprobs named", c.Detail)
	}
	// The 2025 builds refuse n > 1 on the PyTorch backend, in their flat
	// ErrorResponse: n fails there, quoting it.
	q := endpointstest.Start(t, endpointstest.TRTLLM, endpointstest.Options{TRTLLM: endpointstest.TRTLLMOptions{Before2026: true}})
	_, old, _ := checks(t, q.BaseURL(), "--only", "n")
	if c := old["n"]; c.Status != "fail" || !strings.Contains(c.Detail, "Multiple response is not supported in PyTorch workflow") {
		t.Errorf("n before 2026: %+v; want a fail quoting the refusal", c)
	}
}

// eval against trtllm-serve: echo gives no prompt logprobs, so ppl is
// unsupported and says so; long-ppl is scored from the completions
// route's generated-token logprobs (ignore_eos accepted: "generate", not
// its -until-eos fallback), MMLU by
// top_logprobs there, TriviaQA by generation. No eval request carries a
// field its request models forbid.
func TestEvalAgainstTRTLLMScoresWhatItsLogprobsAllow(t *testing.T) {
	t.Parallel()
	p := endpointstest.Start(t, endpointstest.TRTLLM, endpointstest.Options{})
	_, got, _ := evalsOf(t, p.BaseURL())
	if e := got["ppl"]; e.Status != "unsupported" || e.Failure == nil || e.Failure.Kind != "echo_ignored" {
		t.Errorf("ppl: %+v; want unsupported, echo_ignored", e)
	}
	wantScoredBy(t, got, "long-ppl", "generate")
	wantScoredBy(t, got, "mmlu", "top_logprobs")
	wantScoredBy(t, got, "triviaqa", "generate")
	for _, e := range got {
		if f := e.Failure; f != nil && strings.Contains(f.Body, "extra_forbidden") {
			t.Errorf("%s: a request was refused for a field: %s", e.Name, f.Body)
		}
	}
}

// trtllm-serve's /metrics answers JSON iteration statistics: run scrapes
// nothing there and its one line says why, naming where the server keeps
// its Prometheus series; the run itself completes.
func TestRunAgainstTRTLLMSaysItsMetricsAreJSON(t *testing.T) {
	t.Parallel()
	p := endpointstest.Start(t, endpointstest.TRTLLM, endpointstest.Options{})
	rep, _, stderr := runReport(t, p.BaseURL(), "--phase", "small=2/64/8")
	if !strings.Contains(stderr, "glmbench: no server metrics at "+p.URL+"/metrics (metrics: a JSON body, not a Prometheus exposition (trtllm-serve's /metrics is its iteration statistics as JSON; it serves Prometheus text at /prometheus/metrics") {
		t.Errorf("stderr does not say the metrics are JSON:\n%s", stderr)
	}
	if rep.Phases[0].Server != nil {
		t.Errorf("a server block from a JSON /metrics: %+v", rep.Phases[0].Server)
	}
}

// With return_perf_metrics trtllm-serve serves its MetricsCollector's
// series at /prometheus/metrics: run, finding JSON at /metrics, scrapes
// there, and the phase's server block is trtllm's own count.
func TestRunAgainstTRTLLMScrapesItsPrometheusMetrics(t *testing.T) {
	t.Parallel()
	p := endpointstest.Start(t, endpointstest.TRTLLM, endpointstest.Options{TRTLLM: endpointstest.TRTLLMOptions{PerfMetrics: true}})
	rep, _, stderr := runReport(t, p.BaseURL(), "--phase", "small=4/64/8")
	if !strings.Contains(stderr, "glmbench: scraping "+p.URL+"/prometheus/metrics (trtllm series)") {
		t.Errorf("stderr does not say it scrapes /prometheus/metrics:\n%s", stderr)
	}
	ph := rep.Phases[0]
	sv := ph.Server
	if sv == nil || sv.Source != "trtllm" || sv.Requests == nil || sv.GenerationTokens == nil {
		t.Fatalf("server block %+v; want trtllm's", sv)
	}
	// The phase's 4 requests of 8 tokens each; and maybe the shape probe
	// too: the client hangs it up after its first token, and the fake, as
	// a server that has not yet seen the hang-up, may finish and count it
	// after the phase's first scrape (1 run in 20 here).
	if n := *sv.Requests; (n != float64(ph.Completed) && n != float64(ph.Completed+1)) || *sv.GenerationTokens != 8*n {
		t.Errorf("server block: %g requests, %g generated tokens; want trtllm's count of the phase's %d requests (and perhaps the shape probe), 8 tokens each", n, *sv.GenerationTokens, ph.Completed)
	}
}
