package evals

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/glmbench/glmbench/endpoints"
	"github.com/glmbench/glmbench/endpoints/endpointstest"
	"github.com/glmbench/glmbench/engine/enginetest"
	"github.com/glmbench/glmbench/reports/schema"
)

// runAll runs every eval (as `eval all` does) on its embedded sample with
// cfg, two items each, and returns the results by name.
func runAll(t *testing.T, cfg Config) map[string]schema.EvalResult {
	t.Helper()
	cfg.Limit, cfg.GenTokens, cfg.Concurrency = 2, 8, 2
	r := NewRunner(cfg)
	defer r.Close()
	jobs := make([]Job, len(Evals))
	for i, e := range Evals {
		jobs[i] = Job{Eval: e, In: Input{Data: e.Sample()}}
	}
	out := map[string]schema.EvalResult{}
	for _, j := range jobs {
		res, _ := j.Eval.Run(context.Background(), r, j.In)
		out[res.Name] = res
	}
	return out
}

func mustExtra(t *testing.T, s string) json.RawMessage {
	t.Helper()
	extra, err := endpoints.ParseExtraBody("--extra-body", s, EvalFields)
	if err != nil {
		t.Fatal(err)
	}
	return extra
}

// The truth: every generation request any eval sends (the echo probe, the
// cross-checks, every route an eval falls back to) carries each field of
// the extra body exactly as ParseExtraBody gave it, on servers whose evals
// take different routes (vLLM echoes; llama.cpp answers echo with a 500
// and gives logprobs only on chat; the OpenAI API serves chat alone and
// refuses ignore_eos).
func TestEveryEvalRequestCarriesTheExtraBodyExactly(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		kind, extra string
		want        map[string]string
	}{
		{endpointstest.VLLM, `{"top_k": 20, "chat_template_kwargs": {"enable_thinking": false}}`,
			map[string]string{"top_k": `20`, "chat_template_kwargs": `{"enable_thinking":false}`}},
		{endpointstest.SGLang, `{"chat_template_kwargs": {"enable_thinking": false}}`,
			map[string]string{"chat_template_kwargs": `{"enable_thinking":false}`}},
		{endpointstest.LlamaCpp, `{"top_k": 1, "repeat_penalty": 1.0}`,
			map[string]string{"top_k": `1`, "repeat_penalty": `1.0`}},
		{endpointstest.OpenAI, `{"reasoning_effort": "low"}`,
			map[string]string{"reasoning_effort": `"low"`}},
	} {
		t.Run(tc.kind, func(t *testing.T) {
			t.Parallel()
			p := endpointstest.Start(t, tc.kind, endpointstest.Options{})
			runAll(t, Config{Endpoint: &endpoints.Endpoint{BaseURL: p.BaseURL(), Model: p.Opts.Model}, Extra: mustExtra(t, tc.extra)})
			bodies := p.BodyFields()
			if len(bodies) == 0 {
				t.Fatal("no generation request arrived")
			}
			for i, b := range bodies {
				for k, want := range tc.want {
					if got := string(b[k]); got != want {
						t.Fatalf("request %d of %d: %s = %s, want %s (fields %v)", i, len(bodies), k, got, want, fieldNames(b))
					}
				}
			}
		})
	}
}

// The truth: EvalFields names every field an eval writes into a
// generation request (so --extra-body can set none of them twice): the
// fields the fakes received from every eval, on every route, with no extra
// body, are all in it. The fakeLM routes add a thinking model's retries
// (no stop, ReasoningTokens) and the top_logprobs route.
func TestEvalFieldsNameEveryFieldTheEvalsWrite(t *testing.T) {
	t.Parallel()
	seen := map[string]bool{}
	var mu sync.Mutex
	note := func(fields []map[string]json.RawMessage) {
		mu.Lock()
		defer mu.Unlock()
		for _, b := range fields {
			for k := range b {
				seen[k] = true
			}
		}
	}
	for _, kind := range endpointstest.Names() {
		p := endpointstest.Start(t, kind, endpointstest.Options{})
		runAll(t, Config{Endpoint: &endpoints.Endpoint{BaseURL: p.BaseURL(), Model: p.Opts.Model}})
		note(p.BodyFields())
	}
	for _, bend := range []func(*fakeLM){
		func(f *fakeLM) { f.chat, f.llamaCpp = true, true },
		func(f *fakeLM) {
			f.chat, f.completionsStatus = true, http.StatusNotFound
			f.reasoning = func(string) string { return "Let me think about it first." }
		},
		func(f *fakeLM) {
			f.echoStatus, f.echoBody = http.StatusBadRequest, `{"error":{"message":"echo is not supported"}}`
		},
	} {
		f := newFakeLM(t, bend)
		rec := &fieldRecorder{next: f.srv.Config.Handler}
		f.srv.Config.Handler = rec
		runAll(t, Config{Endpoint: f.endpoint(), ReasoningTokens: 64})
		note(rec.fields())
	}
	for _, k := range []string{"messages", "prompt"} { // the fakes leave them out
		seen[k] = true
	}
	var missing []string
	for k := range seen {
		if _, ok := EvalFields[k]; !ok {
			missing = append(missing, k)
		}
	}
	sort.Strings(missing)
	if len(missing) > 0 {
		t.Fatalf("the evals write %v, which EvalFields does not name", missing)
	}
	// The recording saw the fields each route writes, not nothing.
	for _, k := range []string{"echo", "ignore_eos", "stop", "top_logprobs", "seed", "top_p"} {
		if !seen[k] {
			t.Errorf("no request carried %s: the fakes did not take every route", k)
		}
	}
}

// fieldRecorder records the top-level fields of each generation request
// to a fakeLM, as the personalities' BodyFields does, but its prompt and
// messages.
type fieldRecorder struct {
	next http.Handler
	mu   sync.Mutex
	seen []map[string]json.RawMessage
}

func (f *fieldRecorder) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodPost && (r.URL.Path == "/v1/completions" || r.URL.Path == "/v1/chat/completions") {
		b, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(b))
		var m map[string]json.RawMessage
		if json.Unmarshal(b, &m) == nil {
			delete(m, "prompt")
			delete(m, "messages")
			f.mu.Lock()
			f.seen = append(f.seen, m)
			f.mu.Unlock()
		}
	}
	f.next.ServeHTTP(w, r)
}

func (f *fieldRecorder) fields() []map[string]json.RawMessage {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]map[string]json.RawMessage(nil), f.seen...)
}

func fieldNames(m map[string]json.RawMessage) []string {
	var names []string
	for k := range m {
		names = append(names, k)
	}
	sort.Strings(names)
	return names
}

// The OpenAI API refuses a field it does not know with a 400
// "Unrecognized request argument supplied: top_k" (the fake answers so on
// chat, the only route it serves a chat model). The truth: each eval
// fails (failed, not unsupported: the endpoint would give the scores but
// for the extra body) with that 400, its detail naming the field as
// --extra-body's; MMLU tries no route after the first chat one that is
// refused so, since every route carries the field: its chat-greedy route
// is never asked, so chat requests number the echo probe's cross-check,
// chat-top-logprobs' one question and TriviaQA's and long-ppl's.
func TestAnExtraFieldTheEndpointRefusesIsNamedAsTheExtraBodys(t *testing.T) {
	t.Parallel()
	p := endpointstest.Start(t, endpointstest.OpenAI, endpointstest.Options{})
	res := runAll(t, Config{Endpoint: &endpoints.Endpoint{BaseURL: p.BaseURL(), Model: p.Opts.Model}, Extra: mustExtra(t, `{"top_k": 20}`)})
	const said = "the endpoint refuses a field: --extra-body adds top_k"
	for _, name := range Names() {
		r := res[name]
		if r.Status != StatusFailed || r.Failure == nil || !strings.Contains(r.Failure.Detail, said) {
			t.Errorf("%s: %s %+v, want failed saying %q", name, r.Status, r.Failure, said)
		}
	}
	for _, name := range []string{"mmlu", "triviaqa", "long-ppl"} {
		if f := res[name].Failure; f != nil && (f.HTTPStatus != http.StatusBadRequest || !strings.Contains(f.Body, "Unrecognized request argument supplied: top_k")) {
			t.Errorf("%s: %s %q, want the 400 refusing top_k", name, f.Short(), f.Body)
		}
		if f := res[name].Failure; f != nil && string(mustJSON(t, f.Request["top_k"])) != "20" {
			t.Errorf("%s: the failure's request %v does not show top_k 20", name, f.Request)
		}
	}
	// ppl's probe and its cross-check (1), mmlu's chat-top-logprobs (1),
	// triviaqa's chat-generate (1), long-ppl's with and without
	// ignore_eos (2).
	if got, want := p.Requests("POST /v1/chat/completions"), 5; got != want {
		t.Errorf("%d chat requests, want %d: a route after a refused extra field was tried", got, want)
	}
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// chatOnly fronts the reference engine with its /v1/completions answered
// 404, as a chat-only provider answers, so that MMLU and TriviaQA go to
// chat; it counts the chat answers whose message has reasoning_content.
type chatOnly struct {
	proxy *httputil.ReverseProxy
	mu    sync.Mutex
	// answers and reasoned count chat answers, and those with reasoning.
	answers, reasoned int
}

func (c *chatOnly) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == "/v1/completions" {
		http.Error(w, `{"error":{"message":"Not Found"}}`, http.StatusNotFound)
		return
	}
	c.proxy.ServeHTTP(w, r)
}

func (c *chatOnly) read(resp *http.Response) error {
	if resp.Request.URL.Path != "/v1/chat/completions" || resp.StatusCode != http.StatusOK {
		return nil
	}
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	resp.Body = io.NopCloser(bytes.NewReader(b))
	var ans chatCompletion
	if json.Unmarshal(b, &ans) == nil && len(ans.Choices) > 0 {
		c.mu.Lock()
		c.answers++
		if ans.reasoning() != "" {
			c.reasoned++
		}
		c.mu.Unlock()
	}
	return nil
}

// The built-in engine reads chat_template_kwargs.enable_thinking
// (engine/server/request.go): by default GLM's template ends the prompt
// with "<think>", so what the model generates is reasoning_content; with
// false it ends "<think></think>" and the text is content. The truth, on
// the engine behind a chat-only front: without the extra body every chat
// answer of MMLU and TriviaQA is reasoning, and TriviaQA's first question
// gets no answer within ReasoningTokens (failed, bad_response); with
// {"chat_template_kwargs": {"enable_thinking": false}} none is, and
// TriviaQA answers every question by chat-generate. (The nano model's
// weights are random: what it answers is no letter or alias to score.)
func TestTheExtraBodyTurnsTheEnginesThinkingOffForEveryChatAnswer(t *testing.T) {
	t.Parallel()
	e := enginetest.Start(t)
	target, err := url.Parse(strings.TrimSuffix(e.BaseURL(), "/v1"))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		extra string
	}{{"default", ""}, {"enable_thinking false", `{"chat_template_kwargs": {"enable_thinking": false}}`}} {
		t.Run(tc.name, func(t *testing.T) {
			c := &chatOnly{proxy: httputil.NewSingleHostReverseProxy(target)}
			c.proxy.ModifyResponse = c.read
			front := httptest.NewServer(c)
			defer front.Close()
			ep := &endpoints.Endpoint{BaseURL: front.URL + "/v1", Model: e.ModelName(), Builtin: true}
			cfg := Config{Endpoint: ep, Limit: 1, Concurrency: 2, ReasoningTokens: 16, Extra: mustExtra(t, tc.extra)}
			runEval("mmlu", cfg, SampleMMLU())
			trivia := runEval("triviaqa", cfg, SampleTriviaQA())
			c.mu.Lock()
			answers, reasoned := c.answers, c.reasoned
			c.mu.Unlock()
			if answers == 0 {
				t.Fatal("no chat answer")
			}
			if tc.extra == "" {
				if reasoned != answers || trivia.Status != StatusFailed || KindOf(trivia.Failure) != BadResponse {
					t.Fatalf("%d of %d chat answers reasoned, triviaqa %s %+v: want all reasoning, and no answer", reasoned, answers, trivia.Status, trivia.Failure)
				}
				return
			}
			if reasoned != 0 {
				t.Errorf("%d of %d chat answers reasoned with enable_thinking false", reasoned, answers)
			}
			if trivia.Status != StatusOK || trivia.Method != MethodChatGenerate || trivia.Metrics[NoAnswerMetric] != 0 {
				t.Errorf("triviaqa %s by %s %v %+v, want ok by %s, every question answered", trivia.Status, trivia.Method, trivia.Metrics, trivia.Failure, MethodChatGenerate)
			}
		})
	}
}

// An echo refused with a 400 naming a field of the extra body is the extra
// body's refusal, not the endpoint's of echo. The truth: the same 400
// ("Unrecognized request argument supplied: top_k") makes ppl unsupported
// (echo_rejected) without an extra body, and failed (http_error, the field
// named as --extra-body's) with {"top_k": 20}.
func TestAnEchoRefusedForAnExtraFieldIsNoEchoRejection(t *testing.T) {
	t.Parallel()
	f := newFakeLM(t, func(f *fakeLM) {
		f.echoStatus, f.echoBody = http.StatusBadRequest, `{"error":{"message":"Unrecognized request argument supplied: top_k","type":"invalid_request_error"}}`
	})
	plain := f.run("ppl", Config{}, SampleDocs())
	if plain.Status != StatusUnsupported || KindOf(plain.Failure) != EchoRejected {
		t.Fatalf("without an extra body: %s %+v, want unsupported, echo_rejected", plain.Status, plain.Failure)
	}
	res := f.run("ppl", Config{Extra: mustExtra(t, `{"top_k": 20}`)}, SampleDocs())
	if res.Status != StatusFailed || KindOf(res.Failure) != HTTPError || !strings.Contains(res.Failure.Detail, "the endpoint refuses a field: --extra-body adds top_k") {
		t.Fatalf("with top_k: %s %+v, want failed, http_error naming --extra-body's top_k", res.Status, res.Failure)
	}
}
