package root

// End-to-end runs of glmbench against the ollama personality of
// endpoints/endpointstest: `ollama serve` as its sources describe it
// (docs/SERVERS.md). Each test states what a first run against Ollama must
// get right.

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/glmbench/glmbench/endpoints/endpointstest"
	"github.com/glmbench/glmbench/reports/schema"
)

// A warm Ollama states the context its requests get only in GET /api/ps
// (context_length of the loaded model), and it bounds the prompt, not
// prompt plus output: the runner shifts its context and generates on. The
// pre-flight reads it there: a phase whose IN is past it is refused before
// any probe, naming both numbers and the route; one whose IN+OUT alone is
// past it runs to the end, as the real server serves it, every request
// with all its 16 tokens.
func TestRunAgainstAWarmOllamaRefusesAPromptPastItsContextBeforeAnyProbe(t *testing.T) {
	t.Parallel()
	p := endpointstest.Start(t, endpointstest.Ollama, endpointstest.Options{Context: 2048, Ollama: endpointstest.OllamaOptions{Loaded: true}})
	dir := t.TempDir()
	code, _, stderr := executeBounded(t, "run", "--endpoint", p.BaseURL(), "--phase", "long=2/2100/16", "--out", dir)
	wantExit2InOneLine(t, code, stderr, dir, "phase long", "2,100", "2,048", "/api/ps")
	if n := p.Requests("POST /v1/chat/completions"); n != 0 {
		t.Errorf("%d chat requests reached the server; the stated context refuses the phase before any", n)
	}
	dir = t.TempDir()
	code, _, stderr = executeBounded(t, "run", "--endpoint", p.BaseURL(), "--phase", "shift=2/2040/16", "--out", dir)
	if code != 0 {
		t.Fatalf("IN+OUT past num_ctx, IN within it: exit %d; stderr:\n%s", code, stderr)
	}
	rep, _, _ := readReport(t, dir)
	if ph := rep.Phases[0]; ph.Completed != 2 || ph.Short != 0 {
		t.Errorf("phase %+v; want 2 completed, none short", ph)
	}
}

// A cold Ollama (its model not loaded yet) states no context anywhere, and
// truncates a prompt past num_ctx (4,096 by default) instead of refusing
// it, counting what it kept: calibration sees the count stop following the
// filler and names about where, before any load.
func TestRunAgainstAColdOllamaFindsWhereItTruncates(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		whole bool
	}{{"2026 builds: the cut keeps half the window", false}, {"the 2025 runner: the cut keeps the window", true}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p := endpointstest.Start(t, endpointstest.Ollama, endpointstest.Options{Context: 2048, Ollama: endpointstest.OllamaOptions{WholeWindow: tc.whole}})
			base, log := v1Only(t, p)
			dir := t.TempDir()
			code, _, stderr := executeBounded(t, "run", "--endpoint", base, "--phase", "long=2/4000/16", "--out", dir)
			wantExit2InOneLine(t, code, stderr, dir, "phase long", "4,000")
			m := truncatesAt.FindStringSubmatch(lastLine(stderr))
			if m == nil {
				t.Fatalf("the line does not say where the endpoint truncates: %s", lastLine(stderr))
			}
			// Counts follow the prompt up to num_ctx, 2,048.
			if at, _ := strconv.Atoi(strings.ReplaceAll(m[1], ",", "")); at < 2048-20 || at > 2048 {
				t.Errorf("truncation named at %d tokens; num_ctx is 2,048", at)
			}
			if probes, load := log.counts(); load != 0 || probes == 0 {
				t.Errorf("%d probes and %d load requests reached the server; want probes only", probes, load)
			}
		})
	}
}

// Ollama and LM Studio drop ignore_eos (it is no field of their request
// structs): a model that stops at its EOS ends a request before OUT. The
// run still completes, n comes from usage (Ollama) or from the events (LM
// Studio's streams carry none), and the report counts every such request
// as short_output rather than taking max_tokens for the count; stderr
// counts them and warns that ignore_eos, which was sent, was dropped.
// With --ignore-eos=false an early stop is what was asked: no warning.
func TestRunAgainstServersDroppingIgnoreEOSCountsRequestsThatEndedAtEOS(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		nSource schema.NSource
	}{{endpointstest.Ollama, schema.NFromUsage}, {endpointstest.LMStudio, schema.NFromEvents}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p := endpointstest.Start(t, tc.name, endpointstest.Options{EOSAfter: 3})
			dir := t.TempDir()
			code, _, stderr := executeBounded(t, "run", "--endpoint", p.BaseURL(), "--phase", "x=4/64/8", "--out", dir)
			if code != 0 {
				t.Fatalf("exit %d; stderr:\n%s", code, stderr)
			}
			rep, recs, _ := readReport(t, dir)
			if ph := rep.Phases[0]; ph.Completed != 4 || ph.Short != 4 || ph.Errors != 0 {
				t.Errorf("phase %+v; want 4 completed, all 4 short", ph)
			}
			for _, r := range recs {
				if r.N != 3 || r.NSource != tc.nSource || r.Finish != "stop" {
					t.Errorf("record %d: n %d from %q, finish %q; want 3 from %s, stop", r.I, r.N, r.NSource, r.Finish, tc.nSource)
				}
			}
			for i, f := range p.BodyFields() {
				if string(f["ignore_eos"]) != "true" {
					t.Errorf("request %d: ignore_eos %s", i, f["ignore_eos"])
				}
			}
			if !strings.Contains(stderr, "4 short of their max_tokens (short_output)") || !strings.Contains(stderr, "phase x: 4 of 4 completed requests stopped (finish_reason stop) before their max_tokens though ignore_eos was sent") {
				t.Errorf("stderr does not say the requests stopped early though ignore_eos was sent:\n%s", stderr)
			}
			code, _, stderr = executeBounded(t, "run", "--endpoint", p.BaseURL(), "--phase", "x=4/64/8", "--out", t.TempDir(), "--ignore-eos=false")
			if code != 0 || strings.Contains(stderr, "though ignore_eos was sent") {
				t.Errorf("--ignore-eos=false: exit %d, stderr:\n%s\nwant 0 and no warning", code, stderr)
			}
		})
	}
}

// The other routes run against Ollama too: the completions API (whose
// stream writes usage {0, 0, 0} on every chunk before the real one), a
// thinking model (its reasoning streamed as delta.reasoning), and a model
// that loads on the first request. Each phase completes with n from usage.
func TestRunAgainstOllamaCompletesOnEachRoute(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		opts endpointstest.Options
		args []string
	}{
		{"the chat route", endpointstest.Options{}, nil},
		{"the completions route", endpointstest.Options{}, []string{"--api", "completions"}},
		{"a thinking model", endpointstest.Options{Ollama: endpointstest.OllamaOptions{Thinking: 3}}, nil},
		{"a model loaded by the first request", endpointstest.Options{Ollama: endpointstest.OllamaOptions{Load: 300 * time.Millisecond}}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p := endpointstest.Start(t, endpointstest.Ollama, tc.opts)
			dir := t.TempDir()
			code, _, stderr := executeBounded(t, append([]string{"run", "--endpoint", p.BaseURL(), "--phase", "x=4/64/8", "--out", dir}, tc.args...)...)
			if code != 0 {
				t.Fatalf("exit %d; stderr:\n%s", code, stderr)
			}
			rep, recs, _ := readReport(t, dir)
			if ph := rep.Phases[0]; ph.Completed != 4 || ph.Errors != 0 || ph.Short != 0 || ph.BadUsage != 0 {
				t.Errorf("phase %+v", ph)
			}
			for _, r := range recs {
				if r.N != 8 || r.NSource != schema.NFromUsage {
					t.Errorf("record %d: n %d from %q; want 8 from usage", r.I, r.N, r.NSource)
				}
			}
		})
	}
}

// Past OLLAMA_NUM_PARALLEL generating and OLLAMA_MAX_QUEUE waiting, Ollama
// answers 503 "server busy": run counts those as queue_full, and the
// requests within the limit complete: 1 + 2 of the burst, or 2 while the
// shape probe cut at its first token still holds its slot (the fake frees
// it once it sees the client gone, which a loaded machine can delay).
func TestRunCountsOllamasServerBusyAsQueueFull(t *testing.T) {
	t.Parallel()
	p := endpointstest.Start(t, endpointstest.Ollama, endpointstest.Options{TTFT: 200 * time.Millisecond, Ollama: endpointstest.OllamaOptions{NumParallel: 1, MaxQueue: 2}})
	rep, _ := runBurst(t, p.BaseURL())
	ph := rep.Phases[0]
	if refused := ph.ByClass[schema.QueueFull]; refused == 0 || ph.Completed < 2 || ph.Completed > 3 || ph.Completed+refused != 16 || ph.Errors != refused {
		t.Errorf("phase: %d completed, errors by class %v; want only queue_full refusals", ph.Completed, ph.ByClass)
	}
}

// Ollama has no echo (ppl has no route), answers chat logprobs (current
// builds) but none on /v1/completions: long-ppl is scored by chat
// logprobs and MMLU by the chat answer's top_logprobs; a build before
// logprobs leaves MMLU its greedy answer and long-ppl nothing. Each says so.
func TestEvalsAgainstOllamaTakeTheRoutesItServes(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name       string
		opts       endpointstest.Options
		longPPL    string // its method when scored, "" when unsupported
		mmlu       string
		unsupports []string
	}{
		{"a current build", endpointstest.Options{}, "chat-logprobs", "chat-top-logprobs", []string{"ppl"}},
		{"a build before logprobs", endpointstest.Options{Ollama: endpointstest.OllamaOptions{NoLogprobs: true}}, "", "chat-greedy", []string{"ppl", "long-ppl"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p := endpointstest.Start(t, endpointstest.Ollama, tc.opts)
			_, got, stderr := evalsOf(t, p.BaseURL())
			if tc.longPPL != "" {
				wantScoredBy(t, got, "long-ppl", tc.longPPL)
			}
			wantScoredBy(t, got, "mmlu", tc.mmlu)
			wantScoredBy(t, got, "triviaqa", "generate")
			for _, name := range tc.unsupports {
				if e := got[name]; e.Status != "unsupported" || e.Failure == nil || e.Failure.Kind != "logprobs_missing" {
					t.Errorf("%s: %+v; want unsupported, logprobs_missing", name, e)
				}
			}
			if t.Failed() {
				t.Log(stderr)
			}
		})
	}
}

// Ollama loads a model on its first request and sends nothing until it is
// loaded, which can take minutes for a large one: a first probe that runs
// past its limit says that a first request may be loading the model, and
// how to give it time.
func TestAProbeThatOutwaitsOllamasLoadSaysTheModelMayBeLoading(t *testing.T) {
	t.Parallel()
	p := endpointstest.Start(t, endpointstest.Ollama, endpointstest.Options{Ollama: endpointstest.OllamaOptions{Load: time.Minute}})
	dir := t.TempDir()
	code, _, stderr := executeBounded(t, "run", "--endpoint", p.BaseURL(), "--phase", "x=2/64/8", "--probe-timeout", "300ms", "--out", dir)
	wantExit2InOneLine(t, code, stderr, dir, "calibration probe", "300ms", "--probe-timeout", "loading its model")
}

// Builds with cached_tokens (ollama/ollama PR #17943) report what their
// slots' caches served: run's prefix-cache section reads it for a
// shared-prefix workload; an older build reports none, and run says so.
func TestRunReadsOllamasCachedTokensWhereItsBuildSendsThem(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		reported bool
	}{{"a build that reports cached_tokens", true}, {"an older build", false}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p := endpointstest.Start(t, endpointstest.Ollama, endpointstest.Options{Context: 8192, Ollama: endpointstest.OllamaOptions{NumParallel: 4, CachedTokens: tc.reported}})
			dir := t.TempDir()
			code, _, stderr := executeBounded(t, "run", "--endpoint", p.BaseURL(), "--workload", "shared-prefix", "--out", dir)
			if code != 0 {
				t.Fatalf("exit %d; stderr:\n%s", code, stderr)
			}
			rep, _, _ := readReport(t, dir)
			c := rep.Phases[0].Cache
			if c == nil {
				t.Fatalf("no cache block: %+v", rep.Phases[0])
			}
			if got := c.HitRate != nil && *c.HitRate > 0; got != tc.reported {
				t.Errorf("hit rate %v; want one above 0: %v", c.HitRate, tc.reported)
			}
		})
	}
}
