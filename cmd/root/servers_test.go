package root

// End-to-end tests of the CLI against the personalities of
// endpoints/endpointstest: fakes of llama.cpp, vLLM, SGLang, the OpenAI API
// and a hosted gateway that answer as docs/SERVERS.md says those servers
// do. Each test shows one of issue 12's "What was seen" items fixed where a
// personality (or, where none does it, a fake that behaves exactly as the
// issue describes) reproduces it. Every command runs under a context with a
// deadline, so a regression that hangs fails the test instead of holding it.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/glmbench/glmbench/bench"
	"github.com/glmbench/glmbench/cmd/cmdutil"
	"github.com/glmbench/glmbench/endpoints/endpointstest"
	"github.com/glmbench/glmbench/reports"
	"github.com/glmbench/glmbench/reports/schema"
)

// e2eBound is how long any one command of these tests may take before its
// context is cancelled (it then exits 130 and the test fails): a bound on
// a hang, not a measure of speed.
const e2eBound = 60 * time.Second

// executeBounded runs glmbench like execute, under a context that ends at
// e2eBound, and fails the test when the command was still running then.
func executeBounded(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), e2eBound)
	defer cancel()
	code, stdout, stderr = execute(t, ctx, args...)
	if ctx.Err() != nil {
		t.Fatalf("glmbench %s did not end within %v (exit %d): %s", args[0], e2eBound, code, stderr)
	}
	return code, stdout, stderr
}

// lastLine is the last non-empty line of s.
func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}

// wantExit2InOneLine fails unless the command exited 2 with a last line on
// stderr that names every one of want, and wrote no report (nothing was
// measured).
// runBurst runs the phase burst=16/64/4 (16 requests at once) against
// base, which must exit 0, and returns its report and records.
func runBurst(t *testing.T, base string) (*schema.Report, []schema.Record) {
	t.Helper()
	dir := t.TempDir()
	code, _, stderr := executeBounded(t, "run", "--endpoint", base, "--phase", "burst=16/64/4", "--probe-timeout", "10s", "--out", dir)
	if code != 0 {
		t.Fatalf("exit %d; stderr:\n%s", code, stderr)
	}
	rep, recs, _ := readReport(t, dir)
	return rep, recs
}

func wantExit2InOneLine(t *testing.T, code int, stderr, dir string, want ...string) {
	t.Helper()
	line := lastLine(stderr)
	if code != cmdutil.ExitBadInput || !strings.HasPrefix(line, "glmbench: ") {
		t.Fatalf("exit %d, want 2 with one line; stderr:\n%s", code, stderr)
	}
	for _, w := range want {
		if !strings.Contains(line, w) {
			t.Errorf("the line does not name %q: %s", w, line)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, reports.RecordsJSONL)); err == nil {
		t.Errorf("a bad-input exit wrote %s", reports.RecordsJSONL)
	}
}

// chatLog is what a front of a personality saw of the chat requests that
// went through it.
type chatLog struct {
	mu sync.Mutex
	// load counts chat requests whose prompt carries a load index (not
	// bench.ProbeIndex): requests of a phase's load, not probes.
	load, probes int
	// largest is the largest chat body that arrived, in bytes (past
	// maxProxied: maxProxied+1).
	largest int
}

var promptIndex = regexp.MustCompile(`^[0-9a-f]{8}-([0-9]{6}) `)

// note reads one chat body's first user message and counts it as a probe
// or a load request.
func (l *chatLog) note(body []byte) {
	var req struct {
		Messages []struct {
			Content string `json:"content"`
		} `json:"messages"`
	}
	if json.Unmarshal(body, &req) != nil || len(req.Messages) == 0 {
		return
	}
	m := promptIndex.FindStringSubmatch(req.Messages[len(req.Messages)-1].Content)
	if m == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if i, _ := strconv.Atoi(m[1]); i == bench.ProbeIndex {
		l.probes++
	} else {
		l.load++
	}
}

func (l *chatLog) counts() (probes, load int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.probes, l.load
}

func (l *chatLog) largestBody() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.largest
}

// maxProxied is the largest chat body v1Only forwards, in bytes.
const maxProxied = 16 << 20

// v1Only puts p behind a reverse proxy that forwards only /v1/... (as a
// deployment that publishes the OpenAI routes alone does, e.g. an nginx
// `location /v1/`): llama.cpp's /props, the only place it states its
// per-slot context, is then a 404. The proxy logs the chat requests.
func v1Only(t *testing.T, p *endpointstest.Personality) (base string, log *chatLog) {
	t.Helper()
	u, err := url.Parse(p.URL)
	if err != nil {
		t.Fatal(err)
	}
	rp := httputil.NewSingleHostReverseProxy(u)
	log = &chatLog{}
	px := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !strings.HasPrefix(r.URL.Path, "/v1/") {
			http.NotFound(w, r)
			return
		}
		if r.URL.Path == "/v1/chat/completions" {
			body, _ := io.ReadAll(io.LimitReader(r.Body, maxProxied+1))
			log.mu.Lock()
			log.largest = max(log.largest, len(body))
			log.mu.Unlock()
			if len(body) > maxProxied {
				// Far past anything a calibration should send: refused here,
				// so the test stays bounded in memory whatever the harness does.
				io.Copy(io.Discard, r.Body)
				http.Error(w, "body too large for the test proxy", http.StatusRequestEntityTooLarge)
				return
			}
			log.note(body)
			r.Body = io.NopCloser(bytes.NewReader(body))
			r.ContentLength = int64(len(body))
		}
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(px.Close)
	return px.URL + "/v1", log
}

var truncatesAt = regexp.MustCompile(`truncates prompts at about ([0-9,]+) tokens`)

// Item 1: llama.cpp with -c 65536 -np 16 truncates a prompt past its slot's
// 4,096 tokens and answers 200; the calibration of an 8,192-token phase
// used to grow the filler to millions of tokens.
func TestRunAgainstATruncatingLlamaCppExitsTwoBeforeAnyLoad(t *testing.T) {
	t.Parallel()
	t.Run("its /props states 4,096 per slot, so the pre-flight refuses 8,192+16 before any probe", func(t *testing.T) {
		t.Parallel()
		p := endpointstest.Start(t, endpointstest.LlamaCpp, endpointstest.Issue12LlamaCpp)
		dir := t.TempDir()
		code, _, stderr := executeBounded(t, "run", "--endpoint", p.BaseURL(), "--phase", "long=2/8192/16", "--out", dir)
		wantExit2InOneLine(t, code, stderr, dir, "long", "8,192+16", "4,096", "/props")
		if n := p.Requests("POST /v1/chat/completions"); n != 0 {
			t.Errorf("%d chat requests reached the server; the stated context refuses the phase before any", n)
		}
	})
	t.Run("behind a proxy that hides /props, calibration sees the count stop growing and names where", func(t *testing.T) {
		t.Parallel()
		p := endpointstest.Start(t, endpointstest.LlamaCpp, endpointstest.Issue12LlamaCpp)
		base, log := v1Only(t, p)
		dir := t.TempDir()
		code, _, stderr := executeBounded(t, "run", "--endpoint", base, "--phase", "long=2/8192/16", "--out", dir)
		wantExit2InOneLine(t, code, stderr, dir, "phase long", "8,192")
		m := truncatesAt.FindStringSubmatch(lastLine(stderr))
		if m == nil {
			t.Fatalf("the line does not say where the endpoint truncates: %s", lastLine(stderr))
		}
		// llama.cpp keeps a prompt under its slot's context by dropping
		// blocks of n_ctx/2, so the counts it answers lie in (2048, 4096].
		if at, _ := strconv.Atoi(strings.ReplaceAll(m[1], ",", "")); at <= 2048 || at > 4096 {
			t.Errorf("truncation named at %d tokens; the slot holds 4,096", at)
		}
		probes, load := log.counts()
		if load != 0 || probes == 0 {
			t.Errorf("%d probes and %d load requests reached the server; want probes only", probes, load)
		}
		// Twice the characters the measured ratio calls for, for 8,192
		// tokens, is well under 256 KB; before issue 12 the largest body was
		// 37 MB (the fake logged 256 MB).
		if b := log.largestBody(); b > 256<<10 {
			t.Errorf("the largest body sent was %d bytes", b)
		}
		if n := p.MaxPromptTokens(); n > 2*8192 {
			t.Errorf("a prompt of %d tokens was sent for a phase of 8,192", n)
		}
	})
}

// Item 1 on the other servers: each states its context in its own place
// (vLLM and SGLang max_model_len in /v1/models), or refuses an overlong
// prompt with 400 as newer llama.cpp builds do; either way run exits 2
// before any load, naming the numbers.
func TestRunChecksEachPhaseAgainstTheContextTheServerGives(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		kind string
		opts endpointstest.Options
	}{
		{"vLLM's max_model_len", endpointstest.VLLM, endpointstest.Options{Context: 2048}},
		{"vLLM's max_model_len, errors in the flat shape before v0.10.1", endpointstest.VLLM, endpointstest.Options{Context: 2048, VLLMFlatErrors: true}},
		{"SGLang's max_model_len, --context-length not given", endpointstest.SGLang, endpointstest.Options{Context: 2048}},
		{"SGLang's max_model_len and --context-length", endpointstest.SGLang, endpointstest.Options{Context: 2048, SGLangContextArg: true}},
	} {
		t.Run(tc.name+" refuses IN+OUT past it before any probe", func(t *testing.T) {
			t.Parallel()
			p := endpointstest.Start(t, tc.kind, tc.opts)
			dir := t.TempDir()
			code, _, stderr := executeBounded(t, "run", "--endpoint", p.BaseURL(), "--phase", "long=2/2040/16", "--out", dir)
			wantExit2InOneLine(t, code, stderr, dir, "phase long", "2,040+16", "2,048")
			if n := p.Requests("POST /v1/chat/completions"); n != 0 {
				t.Errorf("%d chat requests reached the server", n)
			}
		})
	}
	for _, tc := range []struct {
		name string
		ov   endpointstest.LlamaOverflow
	}{
		{"llama.cpp b7062 (400 exceed_context_size_error)", endpointstest.LlamaReject},
		{"llama.cpp 2026 (400 naming both counts)", endpointstest.LlamaRejectCounts},
	} {
		t.Run(tc.name+" behind a proxy that hides /props: the first 400 below the target ends calibration", func(t *testing.T) {
			t.Parallel()
			o := endpointstest.Issue12LlamaCpp
			o.LlamaOverflow = tc.ov
			p := endpointstest.Start(t, endpointstest.LlamaCpp, o)
			base, log := v1Only(t, p)
			dir := t.TempDir()
			code, _, stderr := executeBounded(t, "run", "--endpoint", base, "--phase", "long=2/8192/16", "--out", dir)
			wantExit2InOneLine(t, code, stderr, dir, "phase long", "8,192", "HTTP 400", "exceeds the available context size")
			if probes, load := log.counts(); load != 0 || probes == 0 {
				t.Errorf("%d probes and %d load requests reached the server; want probes only", probes, load)
			}
			if b := log.largestBody(); b > 256<<10 {
				t.Errorf("the largest body sent was %d bytes", b)
			}
		})
	}
}

// endlessContent answers every chat request with content events until the
// client leaves, and lists one model: the "server that streams content
// events forever in answer to a probe" of issue 12 (no personality streams
// without end, so this fake does exactly that and nothing else).
func endlessContent(t *testing.T) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v1/models" {
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"object":"list","data":[{"id":"endless","object":"model","owned_by":"x"}]}`)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		fl := w.(http.Flusher)
		for r.Context().Err() == nil {
			if _, err := io.WriteString(w, `data: {"choices":[{"index":0,"delta":{"content":" more"},"finish_reason":null}]}`+"\n\n"); err != nil {
				return
			}
			fl.Flush()
			time.Sleep(time.Millisecond)
		}
	}))
	t.Cleanup(srv.Close)
	return srv.URL + "/v1"
}

// Item 2: a probe that never ends (a silent hang, a hang with keep-alive
// comments, an endless stream of content) used to hold run until it was
// killed; each probe now has its own limit.
func TestRunEndsInSecondsWhenAProbeNeverEnds(t *testing.T) {
	t.Parallel()
	hanging := func(keepAlive time.Duration) string {
		// A gateway whose upstream queue holds every request (Hang) longer
		// than any test: only the probe's own limit can end it.
		return endpointstest.Start(t, endpointstest.Gateway, endpointstest.Options{HangEvery: 1, Hang: 10 * time.Minute, KeepAlive: keepAlive}).BaseURL()
	}
	for _, tc := range []struct {
		name     string
		endpoint string
		want     []string
	}{
		{"a gateway that holds the probe without a byte", hanging(0), []string{"calibration probe", "300ms"}},
		{"a gateway that holds the probe with keep-alive comments", hanging(20 * time.Millisecond), []string{"calibration probe", "300ms"}},
		{"a server that streams content past max_tokens 1 without end", endlessContent(t), []string{"calibration probe", "events for max_tokens 1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			// --ttft-timeout stays 10 min, the default that used to hold run.
			code, _, stderr := executeBounded(t, "run", "--endpoint", tc.endpoint, "--phase", "x=2/64/8", "--probe-timeout", "300ms", "--out", dir)
			wantExit2InOneLine(t, code, stderr, dir, tc.want...)
		})
	}
	t.Run("Ctrl-C during calibration exits 130 with one line saying nothing was measured", func(t *testing.T) {
		t.Parallel()
		p := endpointstest.Start(t, endpointstest.Gateway, endpointstest.Options{HangEvery: 1, Hang: 10 * time.Minute})
		ctx, cancel := context.WithCancelCause(context.Background())
		defer cancel(nil)
		go func() {
			// Interrupt once the first probe is held.
			deadline := time.Now().Add(e2eBound)
			for p.Requests("POST /v1/chat/completions") == 0 && time.Now().Before(deadline) {
				time.Sleep(5 * time.Millisecond)
			}
			time.Sleep(50 * time.Millisecond)
			cancel(cmdutil.ErrInterrupted)
		}()
		bound, stop := context.WithTimeout(ctx, e2eBound)
		defer stop()
		code, _, stderr := execute(t, bound, "run", "--endpoint", p.BaseURL(), "--phase", "x=2/64/8", "--probe-timeout", "1m", "--out", t.TempDir())
		if line := lastLine(stderr); code != cmdutil.ExitInterrupted || !strings.Contains(line, "calibration") || !strings.Contains(line, "nothing was measured") {
			t.Fatalf("exit %d, want 130 with a line about the calibration; stderr:\n%s", code, stderr)
		}
	})
}

// reportJSON reads report.json alone (conform and eval write no records).
func reportJSON(t *testing.T, dir string) *schema.Report {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, reports.ReportJSON))
	if err != nil {
		t.Fatalf("no report: %v", err)
	}
	var rep schema.Report
	if err := json.Unmarshal(b, &rep); err != nil {
		t.Fatal(err)
	}
	return &rep
}

// checks runs conform against base and returns its checks by id.
func checks(t *testing.T, base string, args ...string) (code int, byID map[string]schema.CheckResult, stderr string) {
	t.Helper()
	dir := t.TempDir()
	code, _, stderr = executeBounded(t, append([]string{"conform", "--endpoint", base, "--out", dir}, args...)...)
	rep := reportJSON(t, dir)
	byID = map[string]schema.CheckResult{}
	for _, c := range rep.Conformance {
		byID[c.ID] = c
	}
	return code, byID, stderr
}

// Item 3: llama.cpp's streams open without a role chunk and put usage on the
// finish chunk. stream fails for it, but the checks that say whether run's
// own request shape works there used to be skipped as "needs stream".
func TestConformAgainstLlamaCppRunsTheChecksBuiltOnStreams(t *testing.T) {
	t.Parallel()
	p := endpointstest.Start(t, endpointstest.LlamaCpp, endpointstest.Options{})
	code, got, stderr := checks(t, p.BaseURL())
	if code != 1 {
		t.Fatalf("exit %d, want 1 (llama.cpp deviates); stderr:\n%s", code, stderr)
	}
	if got["stream"].Status != "fail" || !strings.Contains(got["stream"].Detail, "role") {
		t.Errorf("stream: %+v; want a fail naming the missing role chunk", got["stream"])
	}
	if c := got["stream-usage"]; c.Status == "skip" || !strings.Contains(c.Detail, "finish chunk") {
		t.Errorf("stream-usage: %+v; want it run, naming usage on the finish chunk", c)
	}
	// These run on llama.cpp and pass there: run's own request shape works.
	for _, id := range []string{"max-tokens", "concurrent-streams", "disconnect", "go-openai"} {
		if got[id].Status != "pass" {
			t.Errorf("%s: %+v; want pass", id, got[id])
		}
	}
	// llama.cpp's real deviations (docs/SERVERS.md) fail, as they should.
	for _, id := range []string{"completions-echo", "bad-request", "unknown-model", "n", "context-overflow"} {
		if got[id].Status != "fail" {
			t.Errorf("%s: %+v; want fail (llama.cpp deviates here)", id, got[id])
		}
	}
}

// Newer llama.cpp builds open with a role chunk (b6097) and then send usage
// in a chunk of its own (b6497): stream passes for both, stream-usage only
// for the second, and its detail names where the older build put usage.
func TestConformTellsLlamaCppBuildsApart(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name        string
		opts        endpointstest.Options
		streamUsage string
		detail      string
	}{
		{"b6097: usage on the finish chunk", endpointstest.Options{LlamaRoleChunk: true}, "fail", "finish chunk"},
		{"b6497: usage in a last chunk with choices []", endpointstest.Options{LlamaRoleChunk: true, LlamaUsageChunk: true}, "pass", "choices []"},
		{"2026: that chunk only when include_usage asks", endpointstest.Options{LlamaRoleChunk: true, LlamaUsageAsked: true}, "pass", "choices []"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p := endpointstest.Start(t, endpointstest.LlamaCpp, tc.opts)
			_, got, _ := checks(t, p.BaseURL(), "--only", "stream-usage,go-openai")
			if got["stream"].Status != "pass" {
				t.Errorf("stream: %+v; want pass (a role chunk opens the stream)", got["stream"])
			}
			if c := got["stream-usage"]; c.Status != tc.streamUsage || !strings.Contains(c.Detail, tc.detail) {
				t.Errorf("stream-usage: %+v; want %s naming %q", c, tc.streamUsage, tc.detail)
			}
			if got["go-openai"].Status != "pass" {
				t.Errorf("go-openai: %+v; want pass", got["go-openai"])
			}
		})
	}
}

// evalsOf runs eval all against base and returns the evals by name.
func evalsOf(t *testing.T, base string) (code int, byName map[string]schema.EvalResult, stderr string) {
	t.Helper()
	dir := t.TempDir()
	code, _, stderr = executeBounded(t, "eval", "all", "--endpoint", base, "--limit", "2", "--out", dir)
	rep := reportJSON(t, dir)
	byName = map[string]schema.EvalResult{}
	for _, e := range rep.Evals {
		byName[e.Name] = e
	}
	return code, byName, stderr
}

// wantScoredBy fails t unless got[name] was scored ("ok") by method.
func wantScoredBy(t *testing.T, got map[string]schema.EvalResult, name, method string) {
	t.Helper()
	if e := got[name]; e.Status != "ok" || e.Method != method {
		t.Errorf("%s: %+v; want ok by %s", name, e, method)
	}
}

// Item 4: llama.cpp answers echo with 500 and gives no logprobs on
// /v1/completions, but serves logprobs/top_logprobs on chat.
func TestEvalsTakeTheChatRouteWhereCompletionsLacksWhatTheyNeed(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, kind string
		// check judges eval all's exit code and its evals by name.
		check func(t *testing.T, code int, got map[string]schema.EvalResult)
	}{
		{"llama.cpp: long-ppl is scored from chat logprobs, mmlu from chat top_logprobs, ppl says why it cannot", endpointstest.LlamaCpp,
			func(t *testing.T, _ int, got map[string]schema.EvalResult) {
				if e := got["long-ppl"]; e.Status != "ok" || e.Method != "chat-logprobs" || e.Metrics["ppl"] <= 1 || e.N != 2 {
					t.Errorf("long-ppl: %+v; want a score by chat-logprobs", e)
				}
				if e := got["ppl"]; e.Status != "unsupported" || e.Failure == nil || e.Failure.Kind != "echo_server_error" || e.Failure.HTTPStatus != 500 {
					t.Errorf("ppl: %+v; want unsupported, echo_server_error (llama.cpp: 500 Only no echo is supported)", e)
				}
				// After "Answer:" the fake model ranks the four letters first (as an
				// instruction-following model would), so MMLU is scored from the
				// first chat token's top_logprobs, the route llama.cpp serves, rather
				// than stopping at logprobs_missing.
				if e := got["mmlu"]; e.Status != "ok" || e.Method != "chat-top-logprobs" || e.N < 2 || e.Metrics["acc"] < 0 || e.Metrics["acc"] > 1 {
					t.Errorf("mmlu: %+v; want a score by chat-top-logprobs", e)
				}
				if e := got["triviaqa"]; e.Status != "ok" {
					t.Errorf("triviaqa: %+v", e)
				}
			}},
		{"a chat-only gateway: long-ppl from chat logprobs, triviaqa by chat", endpointstest.Gateway,
			func(t *testing.T, _ int, got map[string]schema.EvalResult) {
				wantScoredBy(t, got, "long-ppl", "chat-logprobs")
				wantScoredBy(t, got, "triviaqa", "chat-generate")
				if e := got["ppl"]; e.Status != "unsupported" || e.Failure == nil || e.Failure.HTTPStatus != 404 {
					t.Errorf("ppl: %+v; want unsupported after the gateway's 404", e)
				}
			}},
		// OpenAI's 400 names ignore_eos; long-ppl asks again without it and
		// scores what was generated (the fake model never stops early, so
		// each of the 2 prompts gives its 2,048 tokens), under a method of
		// its own so no report compares it with an ignore_eos score.
		{"the OpenAI API refuses ignore_eos: long-ppl generates without it and its method says so", endpointstest.OpenAI,
			func(t *testing.T, _ int, got map[string]schema.EvalResult) {
				if e := got["long-ppl"]; e.Status != "ok" || e.Method != "chat-logprobs-until-eos" || e.Failure != nil || e.Metrics["tokens"] != 4096 {
					t.Errorf("long-ppl: %+v %+v; want a score by chat-logprobs-until-eos over 4,096 tokens", e, e.Failure)
				}
				wantScoredBy(t, got, "mmlu", "chat-top-logprobs")
				wantScoredBy(t, got, "triviaqa", "chat-generate")
			}},
		{"vLLM: every eval is scored by the completions route, ppl and mmlu by echo", endpointstest.VLLM,
			func(t *testing.T, code int, got map[string]schema.EvalResult) {
				if code != 0 {
					t.Errorf("exit %d", code)
				}
				for name, method := range map[string]string{"ppl": "echo", "mmlu": "echo", "long-ppl": "generate", "triviaqa": "generate"} {
					wantScoredBy(t, got, name, method)
					if got[name].N == 0 {
						t.Errorf("%s: %+v; want items scored", name, got[name])
					}
				}
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p := endpointstest.Start(t, tc.kind, endpointstest.Options{})
			code, got, stderr := evalsOf(t, p.BaseURL())
			tc.check(t, code, got)
			if t.Failed() {
				t.Log(stderr)
			}
		})
	}
}

// pieces are the 8-byte substrings of s: none may reach any output, so not
// even a cut-off prefix of a secret leaks.
func pieces(s string) []string {
	var out []string
	for i := 0; i+8 <= len(s); i++ {
		out = append(out, s[i:i+8])
	}
	return out
}

// outputs is everything a command left: its stdout and stderr and every
// file under dir.
func outputs(t *testing.T, dir, stdout, stderr string) string {
	t.Helper()
	var b strings.Builder
	b.WriteString(stdout + stderr)
	filepath.Walk(dir, func(path string, info os.FileInfo, err error) error {
		if err == nil && !info.IsDir() {
			data, _ := os.ReadFile(path)
			b.Write(data)
		}
		return nil
	})
	return b.String()
}

func wantNoSecret(t *testing.T, all string, secrets ...string) {
	t.Helper()
	for _, s := range secrets {
		for _, piece := range pieces(s) {
			if strings.Contains(all, piece) {
				t.Errorf("a piece of a secret (%q of %q) reached the output", piece, s)
				break
			}
		}
	}
}

const headerSecret = "hidden-header-value-42"

// Item 7: secrets in what servers send back.
func TestNoSecretReachesAnyOutput(t *testing.T) {
	t.Parallel()
	t.Run("SGLang's /get_server_info, copied into the report, carries the api_key in clear", func(t *testing.T) {
		t.Parallel()
		p := endpointstest.Start(t, endpointstest.SGLang, endpointstest.Options{APIKey: secretKey})
		dir := t.TempDir()
		code, stdout, stderr := executeBounded(t, "run", "--endpoint", p.BaseURL(), "--header", "X-Team="+headerSecret,
			"--phase", "x=2/64/8", "--out", dir)
		if code != 0 {
			t.Fatalf("exit %d: %s", code, stderr)
		}
		rep, _, _ := readReport(t, dir)
		if rep.Endpoint.ServerInfo == nil {
			t.Fatal("no server_info: the test would show nothing")
		}
		wantNoSecret(t, outputs(t, dir, stdout, stderr), secretKey, headerSecret)

		// sweep copies the same server_info into its report.
		dir = t.TempDir()
		code, stdout, stderr = executeBounded(t, "sweep", "--endpoint", p.BaseURL(), "--header", "X-Team="+headerSecret,
			"--shape", "64/8", "--concurrency", "1", "--warmup", "0s", "--duration", "300ms", "--out", dir)
		if code != 0 {
			t.Fatalf("sweep: exit %d: %s", code, stderr)
		}
		if rep, _, _ = readReport(t, dir); rep.Endpoint.ServerInfo == nil || len(rep.Sweeps) != 1 {
			t.Fatalf("sweep: server_info %v, %d sweeps: the test would show nothing", rep.Endpoint.ServerInfo, len(rep.Sweeps))
		}
		wantNoSecret(t, outputs(t, dir, stdout, stderr), secretKey, headerSecret)
	})
	t.Run("OpenAI's 401 repeats a masked wrong key", func(t *testing.T) {
		t.Parallel()
		p := endpointstest.Start(t, endpointstest.OpenAI, endpointstest.Options{APIKey: "sk-proj-the-right-key-0000"})
		for _, args := range [][]string{
			{"run", "--phase", "x=2/64/8"},
			{"conform", "--model", "gpt-4o-mini", "--only", "chat,stream"},
		} {
			dir := t.TempDir()
			code, stdout, stderr := executeBounded(t, append(args, "--endpoint", p.BaseURL(), "--header", "X-Team="+headerSecret, "--out", dir)...)
			if code == 0 {
				t.Errorf("%s: exit 0 with a refused key", args[0])
			}
			wantNoSecret(t, outputs(t, dir, stdout, stderr), secretKey, headerSecret)
		}
	})
	t.Run("a server whose 500 body echoes the Authorization and header values across the 200-byte cut", func(t *testing.T) {
		t.Parallel()
		// The header value lies well inside the first 200 bytes, and the
		// key starts at byte 190, so a cut at 200 made before redaction
		// would keep a 10-byte prefix of it.
		head := `{"error":{"message":"upstream rejected X-Team: ` + headerSecret + ` with Authorization: Bearer `
		echo := head + strings.Repeat("x", 190-len(head)) + secretKey + `"}}`
		if strings.Index(echo, secretKey) != 190 {
			t.Fatal("the key is not where the test means it to be")
		}
		srv := endpointstest.New(func(r endpointstest.Request) endpointstest.Behavior {
			if r.I == bench.ProbeIndex || r.I%2 == 0 {
				return endpointstest.Behavior{}
			}
			return endpointstest.Behavior{Fail: endpointstest.Status, Status: 500, Body: echo}
		})
		t.Cleanup(srv.Close)
		dir := t.TempDir()
		code, stdout, stderr := executeBounded(t, "run", "--endpoint", srv.BaseURL(), "--model", "m", "--header", "X-Team="+headerSecret,
			"--phase", "x=4/40/4", "--out", dir)
		if code != 0 {
			t.Fatalf("exit %d: %s", code, stderr)
		}
		rep, _, _ := readReport(t, dir)
		if rep.Phases[0].ByClass[schema.HTTP5xx] != 2 {
			t.Fatalf("phase %+v: the echoing 500s were not recorded", rep.Phases[0])
		}
		wantNoSecret(t, outputs(t, dir, stdout, stderr), secretKey, headerSecret)

		// sweep records the same 500s in its points, its table and its plots.
		dir = t.TempDir()
		code, stdout, stderr = executeBounded(t, "sweep", "--endpoint", srv.BaseURL(), "--model", "m", "--header", "X-Team="+headerSecret,
			"--shape", "40/4", "--concurrency", "2", "--warmup", "0s", "--duration", "300ms", "--out", dir)
		if code != 0 {
			t.Fatalf("sweep: exit %d: %s", code, stderr)
		}
		if rep, _, _ = readReport(t, dir); len(rep.Sweeps) != 1 || rep.Sweeps[0].Points[0].ByClass[schema.HTTP5xx] == 0 {
			t.Fatalf("sweep %+v: the echoing 500s were not recorded", rep.Sweeps)
		}
		wantNoSecret(t, outputs(t, dir, stdout, stderr), secretKey, headerSecret)
	})
}

// Item 8: a 307 used to be followed with Authorization and custom headers
// to another origin. No personality redirects, so a front that moved its
// chat route with 307 to a personality stands in for one.
func TestRunFollowsNoRedirectAndSendsNoSecretElsewhere(t *testing.T) {
	t.Parallel()
	other := endpointstest.Start(t, endpointstest.VLLM, endpointstest.Options{})
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v1/models" {
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"object":"list","data":[{"id":"m","object":"model","owned_by":"x"}]}`)
			return
		}
		http.Redirect(w, r, other.URL+r.URL.Path, http.StatusTemporaryRedirect)
	}))
	t.Cleanup(front.Close)
	dir := t.TempDir()
	code, stdout, stderr := executeBounded(t, "run", "--endpoint", front.URL+"/v1", "--header", "X-Team="+headerSecret, "--phase", "x=2/64/8", "--out", dir)
	otherHost := strings.TrimPrefix(other.URL, "http://")
	wantExit2InOneLine(t, code, stderr, dir, otherHost)
	if n := other.TotalRequests(); n != 0 {
		withKey := 0
		for _, a := range other.AuthHeaders() {
			if a != "" {
				withKey++
			}
		}
		t.Errorf("%d requests reached the other origin, %d of them with an Authorization header", n, withKey)
	}
	wantNoSecret(t, outputs(t, dir, stdout, stderr), secretKey, headerSecret)
}

// Item 9 and the personalities' first runs: a small phase against each
// completes, n comes from usage, and the prompt is calibrated to within
// max(4, 1%) of IN as the server counts it.
func TestRunCompletesAgainstEveryPersonality(t *testing.T) {
	t.Parallel()
	type server struct {
		name, kind string
		opts       endpointstest.Options
	}
	var servers []server
	for _, kind := range endpointstest.Names() {
		servers = append(servers, server{kind, kind, endpointstest.Options{}})
	}
	servers = append(servers,
		server{"llama.cpp b6097 (a role chunk, usage on the finish chunk)", endpointstest.LlamaCpp, endpointstest.Options{LlamaRoleChunk: true}},
		server{"llama.cpp b6497 (usage in a chunk of its own)", endpointstest.LlamaCpp, endpointstest.Options{LlamaRoleChunk: true, LlamaUsageChunk: true}},
		server{"llama.cpp 2026 (usage only when asked)", endpointstest.LlamaCpp, endpointstest.Options{LlamaRoleChunk: true, LlamaUsageAsked: true}},
		server{"issue 12's llama.cpp, -c 65536 -np 16", endpointstest.LlamaCpp, endpointstest.Issue12LlamaCpp},
		server{"vLLM before v0.10.1", endpointstest.VLLM, endpointstest.Options{VLLMFlatErrors: true}},
	)
	for _, sv := range servers {
		t.Run(sv.name, func(t *testing.T) {
			t.Parallel()
			o := sv.opts
			o.APIKey = secretKey
			p := endpointstest.Start(t, sv.kind, o)
			args := []string{"run", "--endpoint", p.BaseURL(), "--phase", "small=4/64/8"}
			if sv.kind == endpointstest.OpenAI {
				// OpenAI refuses ignore_eos (400 Unrecognized request argument
				// supplied: ignore_eos): the default says so in one line
				// before any load, and --ignore-eos=false runs.
				dir := t.TempDir()
				code, _, stderr := executeBounded(t, append(args, "--out", dir)...)
				wantExit2InOneLine(t, code, stderr, dir, "ignore_eos", "HTTP 400")
				args = append(args, "--ignore-eos=false")
			}
			dir := t.TempDir()
			code, stdout, stderr := executeBounded(t, append(args, "--out", dir)...)
			if code != 0 {
				t.Fatalf("exit %d; stderr:\n%s", code, stderr)
			}
			rep, recs, _ := readReport(t, dir)
			ph := rep.Phases[0]
			if ph.Completed != 4 || ph.Errors != 0 || ph.Status != schema.StatusComplete || len(recs) != 4 {
				t.Fatalf("phase %+v, %d records", ph, len(recs))
			}
			if ph.CalibratedInputLen == nil || abs(*ph.CalibratedInputLen-64) > 4 {
				t.Errorf("calibrated to %v tokens, want 64±4", ph.CalibratedInputLen)
			}
			counted := map[int]bool{}
			for _, n := range p.PromptTokens() {
				counted[n] = true
			}
			source := schema.NFromUsage
			if sv.kind == endpointstest.LMStudio {
				// LM Studio's stream carries no usage (lmstudio.go): n is
				// the events' count and no prompt count is reported.
				source = schema.NFromEvents
			}
			for _, r := range recs {
				if r.N != 8 || r.NSource != source || r.BadUsage != "" || r.MalformedEvents != 0 {
					t.Errorf("record %d: n %d from %q, bad_usage %q, malformed %d; want 8 from %s", r.I, r.N, r.NSource, r.BadUsage, r.MalformedEvents, source)
				}
				if source == schema.NFromUsage && (abs(r.Prompt-64) > 4 || !counted[r.Prompt]) {
					t.Errorf("record %d: prompt_tokens %d; want 64±4 and the server's own count (%v)", r.I, r.Prompt, p.PromptTokens())
				}
			}
			// Every request carried the key as a bearer token but the
			// readiness check's GET /health, which is public everywhere and
			// gets none.
			keyless := 0
			for i, a := range p.AuthHeaders() {
				switch a {
				case "Bearer " + secretKey:
				case "":
					keyless++
				default:
					t.Errorf("request %d carried Authorization %q", i, a)
				}
			}
			if health := p.Requests("GET /health"); keyless != health {
				t.Errorf("%d requests without the key, %d to /health: want them the same", keyless, health)
			}
			wantNoSecret(t, outputs(t, dir, stdout, stderr), secretKey)
		})
	}
}

// vLLM answers as the OpenAI API does everywhere conform looks.
func TestConformAgainstVLLMFailsNothing(t *testing.T) {
	t.Parallel()
	p := endpointstest.Start(t, endpointstest.VLLM, endpointstest.Options{})
	code, got, stderr := checks(t, p.BaseURL())
	if code != 0 {
		t.Errorf("exit %d; stderr:\n%s", code, stderr)
	}
	for id, c := range got {
		if c.Status == "fail" {
			t.Errorf("%s failed against vLLM: %s", id, c.Detail)
		}
	}
	for _, id := range []string{"stream", "stream-usage", "max-tokens", "completions-echo", "echo-max-tokens-0", "context-overflow", "unknown-model"} {
		if got[id].Status != "pass" {
			t.Errorf("%s: %+v; want pass", id, got[id])
		}
	}
}

// A gateway past its limits answers 429 with Retry-After, and SGLang past
// --max-running-requests and --max-queued-requests answers 503: run counts
// each in its class and keeps the Retry-After.
func TestRunCountsAServersRefusalsInTheirClasses(t *testing.T) {
	t.Parallel()
	// Every request is held 200 ms before its first token, so the 16 of the
	// burst overlap and those past the limit are refused.
	slow := 200 * time.Millisecond
	for _, tc := range []struct {
		name  string
		kind  string
		opts  endpointstest.Options
		class schema.Class
		retry string
	}{
		{"a gateway limited to 4 concurrent requests", endpointstest.Gateway, endpointstest.Options{Concurrency: 4, RetryAfter: "7", TTFT: slow}, schema.RateLimited, "7"},
		{"SGLang with 2 running and 2 queued", endpointstest.SGLang, endpointstest.Options{MaxRunning: 2, MaxQueued: 2, TTFT: slow}, schema.QueueFull, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p := endpointstest.Start(t, tc.kind, tc.opts)
			dir := t.TempDir()
			code, _, stderr := executeBounded(t, "run", "--endpoint", p.BaseURL(), "--phase", "burst=16/64/4", "--probe-timeout", "10s", "--out", dir)
			if code != 0 {
				t.Fatalf("exit %d (some requests complete, so not 1); stderr:\n%s", code, stderr)
			}
			rep, recs, _ := readReport(t, dir)
			ph := rep.Phases[0]
			refused := ph.ByClass[tc.class]
			if refused == 0 || ph.Completed < 2 || ph.Completed+refused != 16 || ph.Errors != refused {
				t.Fatalf("phase: %d completed, errors by class %v; want only %s refusals", ph.Completed, ph.ByClass, tc.class)
			}
			for _, r := range recs {
				if r.Class == tc.class && r.RetryAfter != tc.retry {
					t.Errorf("record %d: retry_after %q, want %q", r.I, r.RetryAfter, tc.retry)
				}
			}
			if !strings.Contains(stderr, fmt.Sprintf("%d/16 completed", ph.Completed)) || strings.Contains(stderr, "every request failed") {
				t.Errorf("stderr does not say how the phase ended:\n%s", stderr)
			}
		})
	}
}

// Item 5: one request with max_tokens 2^63-1 (or max_completion_tokens, a
// stream, min_tokens past the context) used to overflow the engine's
// context check and crash it 2.5 s later. Each is now a 400, and the
// engine goes on serving a run.
func TestTheEngineRefusesOverflowingLimitsAndKeepsServing(t *testing.T) {
	t.Parallel()
	e := startConformEngine(t)
	for _, tc := range []struct{ route, body string }{
		{"/completions", `{"prompt":"hi","max_tokens":9223372036854775807,"ignore_eos":true}`},
		{"/completions", `{"prompt":"hi","max_tokens":9223372036854775807,"ignore_eos":true,"stream":true}`},
		{"/chat/completions", `{"messages":[{"role":"user","content":"hi"}],"max_completion_tokens":9223372036854775807,"ignore_eos":true}`},
		{"/chat/completions", `{"messages":[{"role":"user","content":"hi"}],"min_tokens":20000}`},
	} {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, e.BaseURL()+tc.route, strings.NewReader(tc.body))
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			cancel()
			t.Fatalf("%s: %v", tc.body, err)
		}
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		resp.Body.Close()
		cancel()
		if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(b), `"error"`) {
			t.Errorf("%s: HTTP %d %s; want 400 with an error object", tc.body, resp.StatusCode, b)
		}
	}
	dir := t.TempDir()
	code, _, stderr := executeBounded(t, "run", "--endpoint", e.BaseURL(), "--model", e.ModelName(), "--phase", "after=2/32/4", "--out", dir)
	if code != 0 {
		t.Fatalf("the engine no longer serves a run: exit %d: %s", code, stderr)
	}
	if rep, _, _ := readReport(t, dir); rep.Phases[0].Completed != 2 {
		t.Errorf("phase %+v", rep.Phases[0])
	}
}

// With --probe-limits, conform's burst finds the limits these servers
// document: the gateway's 429s, each with Retry-After, and SGLang's 503s
// past --max-running-requests and --max-queued-requests (where rate-limit
// is a skip: SGLang sends no 429). Each request is held 100 ms before its
// first token so the 64 of the burst overlap.
func TestConformFindsTheLimitsOfAGatewayAndOfSGLang(t *testing.T) {
	t.Parallel()
	held := 100 * time.Millisecond
	for _, tc := range []struct {
		name                string
		kind                string
		opts                endpointstest.Options
		rateLimit, overflow string
	}{
		{"a gateway limited to 8 concurrent requests", endpointstest.Gateway, endpointstest.Options{Concurrency: 8, TTFT: held}, "pass", "pass"},
		{"SGLang with 4 running and 4 queued", endpointstest.SGLang, endpointstest.Options{MaxRunning: 4, MaxQueued: 4, TTFT: held}, "skip", "pass"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p := endpointstest.Start(t, tc.kind, tc.opts)
			code, got, stderr := checks(t, p.BaseURL(), "--probe-limits", "64", "--only", "rate-limit,queue-overflow")
			if code != 0 {
				t.Errorf("exit %d; stderr:\n%s", code, stderr)
			}
			if got["rate-limit"].Status != tc.rateLimit || got["queue-overflow"].Status != tc.overflow {
				t.Errorf("rate-limit %+v, queue-overflow %+v; want %s and %s", got["rate-limit"], got["queue-overflow"], tc.rateLimit, tc.overflow)
			}
		})
	}
}

// Item 9's last line: a capped phase with no error used to print "every
// request failed". A server slower than the cap leaves every request
// cancelled at it, and the line says so.
func TestACappedPhaseSaysItsRequestsWereCancelledNotFailed(t *testing.T) {
	t.Parallel()
	p := endpointstest.Start(t, endpointstest.VLLM, endpointstest.Options{TTFT: 150 * time.Millisecond})
	dir := t.TempDir()
	code, _, stderr := executeBounded(t, "run", "--endpoint", p.BaseURL(), "--phase", "x=4/64/8", "--phase-cap", "30ms", "--out", dir)
	rep, recs, _ := readReport(t, dir)
	ph := rep.Phases[0]
	if code != 1 || ph.Status != schema.StatusCapped || ph.Cancelled != 4 || ph.Errors != 0 || len(recs) != 4 {
		t.Fatalf("exit %d, phase %+v", code, ph)
	}
	if line := lastLine(stderr); strings.Contains(line, "every request failed") || !strings.Contains(line, "4 cancelled at the phase cap") {
		t.Errorf("last line: %s", line)
	}
}

// A current llama.cpp answers /v1/completions' logprobs in the chat shape
// ({"content": [{token, logprob, top_logprobs}]}; server-task.cpp, 2026):
// long-ppl is then scored by generate, the completions route with no chat
// template, and MMLU by the generated token's top_logprobs, not by chat.
// The truth: the fakes share one deterministic model, so long-ppl's
// generations and their logprobs are vLLM's, and its ppl over the same
// tokens is vLLM's to the last bit.
func TestACurrentLlamaCppsCompletionLogprobsAreRead(t *testing.T) {
	t.Parallel()
	llama := endpointstest.Start(t, endpointstest.LlamaCpp, endpointstest.Options{LlamaCompletionLogprobs: true})
	_, got, stderr := evalsOf(t, llama.BaseURL())
	wantScoredBy(t, got, "long-ppl", "generate")
	wantScoredBy(t, got, "mmlu", "top_logprobs")
	vllm := endpointstest.Start(t, endpointstest.VLLM, endpointstest.Options{})
	_, ref, _ := evalsOf(t, vllm.BaseURL())
	if a, b := got["long-ppl"].Metrics, ref["long-ppl"].Metrics; a["ppl"] != b["ppl"] || a["tokens"] != b["tokens"] || a["tokens"] == 0 {
		t.Errorf("long-ppl on llama.cpp %v, on vLLM %v: want the same tokens and ppl", a, b)
	}
	if t.Failed() {
		t.Log(stderr)
	}
}

// A current llama.cpp serves n up to its slots (-np) and refuses more with
// a 400 naming -np: conform's n check passes on both (two choices, or a
// clean refusal), where an older build's 500 fails it.
func TestConformSeesACurrentLlamaCppServeN(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		slots  int
		status string
		detail string
	}{{2, "pass", ""}, {1, "pass", "-np"}} {
		p := endpointstest.Start(t, endpointstest.LlamaCpp, endpointstest.Options{LlamaNChoices: true, Slots: tc.slots})
		_, got, _ := checks(t, p.BaseURL(), "--only", "n")
		if c := got["n"]; c.Status != tc.status || !strings.Contains(c.Detail, tc.detail) {
			t.Errorf("-np %d: n: %+v; want %s naming %q", tc.slots, c, tc.status, tc.detail)
		}
	}
	old := endpointstest.Start(t, endpointstest.LlamaCpp, endpointstest.Options{Slots: 2})
	if _, got, _ := checks(t, old.BaseURL(), "--only", "n"); got["n"].Status != "fail" {
		t.Errorf("an older build's 500: n: %+v; want fail", got["n"])
	}
}
