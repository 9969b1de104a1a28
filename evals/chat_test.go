package evals

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"math"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/glmbench/glmbench/endpoints"
	"github.com/glmbench/glmbench/engine/tokenizer"
	"github.com/glmbench/glmbench/reports/schema"
)

// The personalities of this file, each as a real server behaves:
//   - llamaCppLike: llama.cpp's server. Echo on /v1/completions is a 500
//     "Only no echo is supported", /v1/completions ignores logprobs (null),
//     chat gives choices[0].logprobs.content with top_logprobs.
//   - chatOnlyLike: a hosted provider that serves chat alone: /v1/completions
//     is OpenAI's 404 "Invalid URL", chat gives logprobs.
//   - chatOnlyNoLogprobs: the same, with "logprobs": null on chat whatever is asked.

func llamaCppLike(f *fakeLM) { f.llamaCpp, f.chat = true, true }

func chatOnlyLike(f *fakeLM) {
	f.completionsStatus, f.completionsBody, f.chat = 404, chatOnly404, true
}

func chatOnlyNoLogprobs(f *fakeLM) { chatOnlyLike(f); f.chatNoLogprobs = true }

func TestLongPPLTakesTheChatRouteWhereCompletionsLacksLogprobs(t *testing.T) {
	t.Parallel()
	gen := strings.Repeat("ab", 200) // 400 tokens
	mean := -(byteLP('a') + byteLP('b')) / 2
	for _, tc := range []struct {
		name        string
		personality func(f *fakeLM)
		completions int // /v1/completions requests sent: the first prompt only
	}{
		{"llama.cpp: /v1/completions answers with logprobs null", llamaCppLike, 1},
		{"a chat-only provider: /v1/completions is a 404", chatOnlyLike, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := newFakeLM(t, func(f *fakeLM) {
				tc.personality(f)
				f.generate = func(string) string { return gen }
			})
			res := f.run("long-ppl", Config{GenTokens: len(gen), Limit: 3, Concurrency: 2}, SampleDocs())
			if res.Status != StatusOK || res.Method != MethodChatLogprobs || res.N != 3 || res.Metrics["tokens"] != 1200 ||
				math.Abs(res.Metrics["ppl"]-math.Exp(mean)) > 1e-9 || math.Abs(res.Metrics["worst_seg"]-math.Exp(mean)) > 1e-9 {
				t.Fatalf("%+v, want ppl %v by %s", res, math.Exp(mean), MethodChatLogprobs)
			}
			if got := f.count("plain") + f.count("completions_refused"); got != 1 || f.count("chat") != 3 {
				t.Errorf("%d /v1/completions and %d chat requests, want 1 and 3 (the first prompt finds the route)", got, f.count("chat"))
			}
		})
	}
}

func TestLongPPLWithoutLogprobsOnAnyRouteIsUnsupported(t *testing.T) {
	t.Parallel()
	f := newFakeLM(t, chatOnlyNoLogprobs)
	res := f.run("long-ppl", Config{GenTokens: 8, Limit: 2}, SampleDocs())
	// The 404 says only that /v1/completions is absent; the chat answer
	// without logprobs says why there is no score.
	if res.Status != StatusUnsupported || res.Metrics != nil || res.Method != MethodChatLogprobs ||
		KindOf(res.Failure) != LogprobsMissing || !strings.Contains(res.Failure.Detail, "HTTP 404") {
		t.Fatalf("%+v", res)
	}
}

func TestAFallbackThatFailsSaysBothRoutes(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		status int
		want   string // status kind
	}{
		// A 429 is not "no logprobs here": the eval failed, and may pass later.
		{"chat answers 429: failed, by the 429", 429, "failed http_error"},
		// A 400 refusing the request's shape is the chat route lacking too.
		{"chat refuses the request: unsupported, by the first route's kind", 400, "unsupported logprobs_missing"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := newFakeLM(t, func(f *fakeLM) { llamaCppLike(f); f.chatStatus = tc.status })
			res := f.run("long-ppl", Config{GenTokens: 4, Limit: 1}, SampleDocs())
			if got := res.Status + " " + string(KindOf(res.Failure)); got != tc.want || !strings.Contains(res.Failure.Detail, "chat says no") ||
				!strings.Contains(res.Failure.Detail, "logprobs is null") {
				t.Fatalf("%s, want %s; detail %q", got, tc.want, res.Failure.Detail)
			}
		})
	}
}

func TestLongPPLStaysOnCompletionsOnA429(t *testing.T) {
	t.Parallel()
	// A 429 says "not now", not "no logprobs here": no other route is tried.
	f := newFakeLM(t, func(f *fakeLM) {
		f.chat = true
		f.completionsStatus, f.completionsBody = 429, `{"error":{"message":"slow down"}}`
	})
	res := f.run("long-ppl", Config{GenTokens: 2, Limit: 1}, SampleDocs())
	if res.Status != StatusFailed || res.Method != MethodGenerate || KindOf(res.Failure) != HTTPError || f.count("chat") != 0 {
		t.Fatalf("%+v, %d chat requests", res, f.count("chat"))
	}
}

func TestLongPPLOnTheBuiltinEngineByChatEqualsItsOwnForwardPass(t *testing.T) {
	t.Parallel()
	b := startBuiltin(t)
	p := newChatOnlyProxy(t, b.Endpoint.BaseURL)
	res := runEval("long-ppl", Config{Endpoint: p.endpoint(b.Endpoint.Model), GenTokens: 24, Limit: 2, Concurrency: 2}, SampleDocs())
	if res.Status != StatusOK || res.Method != MethodChatLogprobs || res.N != 2 || res.Metrics["tokens"] != 48 {
		t.Fatalf("%+v", res)
	}
	// The truth: each generated token's log-likelihood under the engine's
	// model, run alone on a fresh KV cache over the chat template's prompt
	// ids and the ids the engine sampled (named token_id:N by the proxy's
	// return_tokens_as_token_ids).
	answers := p.answers()
	if len(answers) != 2 {
		t.Fatalf("%d chat answers recorded, want 2", len(answers))
	}
	ll, n := 0.0, 0
	for _, a := range answers {
		ids, err := b.Engine.Tokenizer.ApplyChatTemplate(a.messages, nil, true) // thinking on: GLM-5's default
		if err != nil {
			t.Fatal(err)
		}
		if len(ids) != a.promptTokens {
			t.Fatalf("template gives %d prompt ids, the engine counted %d", len(ids), a.promptTokens)
		}
		ll += forwardLL(b.Engine, append(ids, a.ids...), len(ids))
		n += len(a.ids)
	}
	want := math.Exp(-ll / float64(n))
	t.Logf("chat-route ppl %v, forward-pass truth %v over %d tokens", res.Metrics["ppl"], want, n)
	if got := res.Metrics["ppl"]; math.Abs(got-want) > 1e-6*want {
		t.Errorf("chat-route ppl %v, the engine's own forward pass %v", got, want)
	}
}

func TestMMLUFallsBackThroughTheChatRoute(t *testing.T) {
	t.Parallel()
	set := SampleMMLU()
	letter := mmluModel(set)
	chatTop := chatLetterTop(letter, map[string]float64{"The": -1.5, "Answer": -2.5})
	for _, tc := range []struct {
		name        string
		personality func(f *fakeLM)
		method      string
		kind        Kind // the echo failure kept in the result
	}{
		{"llama.cpp: by the chat answer's top_logprobs", func(f *fakeLM) { llamaCppLike(f); f.top = chatTop }, MethodChatTopLogprobs, EchoServerError},
		{"a chat-only provider: by the chat answer's top_logprobs", func(f *fakeLM) { chatOnlyLike(f); f.top = chatTop }, MethodChatTopLogprobs, CompletionsMissing},
		{"a provider without logprobs: by the greedy answer's letter", func(f *fakeLM) {
			chatOnlyNoLogprobs(f)
			f.generate = func(prompt string) string {
				return "The answer is " + letter(strings.TrimSuffix(prompt, "\nAnswer:")) + ", because of the question."
			}
		}, MethodChatGreedy, CompletionsMissing},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := newFakeLM(t, tc.personality)
			res := f.run("mmlu", Config{Concurrency: 4}, set)
			if res.Status != StatusOK || res.Method != tc.method || res.N != 16 || KindOf(res.Failure) != tc.kind {
				t.Fatalf("%+v, want method %s keeping the %s", res, tc.method, tc.kind)
			}
			sameMetrics(t, res.Metrics, mmluModelMetrics)
		})
	}
}

func TestMMLUWithNoLetterInAnyGreedyAnswerHasNoScore(t *testing.T) {
	t.Parallel()
	f := newFakeLM(t, func(f *fakeLM) {
		chatOnlyNoLogprobs(f)
		f.generate = func(string) string { return "I would rather not say." }
	})
	res := f.run("mmlu", Config{Limit: 1}, SampleMMLU())
	if res.Status != StatusUnsupported || res.Metrics != nil || res.Method != MethodChatGreedy ||
		KindOf(res.Failure) != CompletionsMissing || !strings.Contains(res.Failure.Detail, "no answer letter in the greedy chat answer") {
		t.Fatalf("%+v", res)
	}
}

func TestAnswerLetterIsTheFirstLetterStandingAlone(t *testing.T) {
	t.Parallel()
	for s, want := range map[string]int{
		"B": 1, " C.": 2, "(D) 42": 3, "Answer: A": 0, "The answer is C, not B": 2,
		"Because Dogs bark, D": 3, "CD-ROM or B": 1, "B2 is not a letter, A is": 0,
		"none": -1, "": -1, "E": -1, "a b c d": -1,
	} {
		if got := AnswerLetter(s); got != want {
			t.Errorf("AnswerLetter(%q) = %d, want %d", s, got, want)
		}
	}
}

func TestPPLHasNoChatFallbackAndSaysSo(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name        string
		personality func(f *fakeLM)
		kind        Kind
	}{
		{"llama.cpp: echo is a 500", llamaCppLike, EchoServerError},
		{"a chat-only provider: /v1/completions is a 404", chatOnlyLike, CompletionsMissing},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := newFakeLM(t, tc.personality)
			res := f.run("ppl", Config{}, SampleDocs())
			if res.Status != StatusUnsupported || res.Metrics != nil || KindOf(res.Failure) != tc.kind ||
				!strings.Contains(res.Failure.Detail, "logprobs of generated tokens only") {
				t.Fatalf("%+v", res)
			}
		})
	}
}

func TestA404ToEchoIsCompletionsMissingOnlyWhereChatAnswers(t *testing.T) {
	t.Parallel()
	f := newFakeLM(t, chatOnlyLike)
	if _, fail := ProbeEcho(context.Background(), f.client(), "fake"); KindOf(fail) != CompletionsMissing || fail.HTTPStatus != 404 ||
		!strings.Contains(fail.Body, "Invalid URL") {
		t.Fatalf("chat answers: %+v", fail)
	}
	// No chat either: a wrong base URL or model, not a missing feature.
	g := newFakeLM(t, func(f *fakeLM) { f.completionsStatus, f.completionsBody = 404, chatOnly404 })
	if _, fail := ProbeEcho(context.Background(), g.client(), "fake"); KindOf(fail) != HTTPError || !strings.Contains(fail.Detail, "check the base URL") {
		t.Fatalf("no chat: %+v", fail)
	}
}

func TestTriviaQAAsksThroughChatOnAChatOnlyProvider(t *testing.T) {
	t.Parallel()
	set := SampleTriviaQA()
	answers, right := triviaAnswers(set.Items[TriviaShots:], 2)
	f := newFakeLM(t, func(f *fakeLM) { chatOnlyLike(f); f.generate = triviaModel(answers) })
	res := f.run("triviaqa", Config{Concurrency: 4}, set)
	n := len(set.Items) - TriviaShots
	if res.Status != StatusOK || res.Method != MethodChatGenerate || res.N != n || res.Metrics["exact_match"] != float64(right)/float64(n) {
		t.Fatalf("%+v, want %d of %d by %s", res, right, n, MethodChatGenerate)
	}
}

// chatOnlyProxy stands in front of the built-in engine as a chat-only
// provider: /v1/completions is OpenAI's 404, every other request goes to
// the engine, chat requests with return_tokens_as_token_ids added (which
// changes only how tokens are named), their answers recorded.
type chatOnlyProxy struct {
	srv *httptest.Server
	mu  sync.Mutex
	rec []chatRecord
}

// chatRecord is one chat answer the proxy passed on.
type chatRecord struct {
	messages     []tokenizer.Message
	promptTokens int
	ids          []int32 // the generated ids, from the logprobs' token_id:N
}

func newChatOnlyProxy(t *testing.T, base string) *chatOnlyProxy {
	t.Helper()
	p := &chatOnlyProxy{}
	p.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v1/completions" {
			w.WriteHeader(http.StatusNotFound)
			io.WriteString(w, chatOnly404)
			return
		}
		body, _ := io.ReadAll(r.Body)
		chat := r.URL.Path == "/v1/chat/completions"
		var req map[string]any
		if chat && json.Unmarshal(body, &req) == nil {
			req["return_tokens_as_token_ids"] = true
			body, _ = json.Marshal(req)
		}
		out, err := http.NewRequestWithContext(r.Context(), r.Method, strings.TrimSuffix(base, "/v1")+r.URL.Path, bytes.NewReader(body))
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		out.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(out)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		defer resp.Body.Close()
		ans, _ := io.ReadAll(resp.Body)
		if chat && resp.StatusCode == http.StatusOK {
			p.record(t, req, ans)
		}
		w.WriteHeader(resp.StatusCode)
		w.Write(ans)
	}))
	t.Cleanup(p.srv.Close)
	return p
}

func (p *chatOnlyProxy) endpoint(model string) *endpoints.Endpoint {
	return &endpoints.Endpoint{BaseURL: p.srv.URL + "/v1", Model: model}
}

func (p *chatOnlyProxy) record(t *testing.T, req map[string]any, ans []byte) {
	var a struct {
		Choices []struct {
			Logprobs *struct {
				Content []struct {
					Token string `json:"token"`
				} `json:"content"`
			} `json:"logprobs"`
		} `json:"choices"`
		Usage struct {
			PromptTokens int `json:"prompt_tokens"`
		} `json:"usage"`
	}
	if json.Unmarshal(ans, &a) != nil || len(a.Choices) == 0 || a.Choices[0].Logprobs == nil {
		return // a probe's answer: no logprobs asked
	}
	rec := chatRecord{promptTokens: a.Usage.PromptTokens}
	for _, m := range req["messages"].([]any) {
		m := m.(map[string]any)
		rec.messages = append(rec.messages, tokenizer.Message{Role: m["role"].(string), Content: m["content"].(string)})
	}
	for _, c := range a.Choices[0].Logprobs.Content {
		id, err := strconv.Atoi(strings.TrimPrefix(c.Token, "token_id:"))
		if err != nil {
			t.Errorf("token %q is not named by its id", c.Token)
			return
		}
		rec.ids = append(rec.ids, int32(id))
	}
	p.mu.Lock()
	p.rec = append(p.rec, rec)
	p.mu.Unlock()
}

func (p *chatOnlyProxy) answers() []chatRecord {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.rec
}

// chatLetterTop is the top_logprobs of a chat answer's first token: the
// bare letters ("B", no space: it starts the assistant turn) at -3, the one
// letter prefers for the prompt at -0.2, and others (other likely first
// tokens).
func chatLetterTop(letter func(string) string, others map[string]float64) func(prompt string) map[string]float64 {
	return func(prompt string) map[string]float64 {
		top := maps.Clone(others)
		for _, l := range Letters {
			top[l] = -3
		}
		top[letter(strings.TrimSuffix(prompt, "\nAnswer:"))] = -0.2
		return top
	}
}

// thinking makes the fake chat model a thinking model (as Qwen3 or R1 on
// vLLM or llama.cpp with a reasoning parser): its answer opens with 60 bytes
// of reasoning that start with the article "A" and name letters on their
// way, then "The answer is X." as content.
func thinking(letter func(string) string) func(f *fakeLM) {
	return func(f *fakeLM) {
		f.reasoning = func(string) string {
			return "A question with four options; B and D look wrong to me. So."
		}
		f.generate = func(prompt string) string {
			return "The answer is " + letter(strings.TrimSuffix(prompt, "\nAnswer:")) + "."
		}
	}
}

// MMLU on a thinking model reads the answer's content, never the
// reasoning's letters, whether the server splits the reasoning out into
// reasoning_content or leaves it in content as "<think>…</think>\n\nThe
// answer is X." (llama.cpp with --reasoning-format none, a pass-through
// gateway): there the answer after the block is read.
func TestMMLUOnAThinkingModelReadsTheAnswerNotTheReasoning(t *testing.T) {
	t.Parallel()
	set := SampleMMLU()
	letter := mmluModel(set)
	for _, tc := range []struct {
		name        string
		personality func(f *fakeLM)
		inContent   bool   // the reasoning left in content as <think>…</think>
		detail      string // in the failure kept, where set
	}{
		// The first token's top_logprobs are the reasoning's ("A"): not read.
		{"llama.cpp with chat logprobs", llamaCppLike, false, ""},
		{"a chat-only provider without logprobs", chatOnlyNoLogprobs, false, ""},
		// On llama.cpp the first token is "<think>", reasoning, so
		// chat-top-logprobs is not the route.
		{"llama.cpp with chat logprobs, the block left in content", llamaCppLike, true, "first token is reasoning"},
		{"a chat-only gateway without logprobs, the block left in content", chatOnlyNoLogprobs, true, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := newFakeLM(t, func(f *fakeLM) {
				tc.personality(f)
				thinking(letter)(f)
				if tc.inContent {
					gen := f.generate
					f.generate = func(p string) string { return "\n\n" + gen(p) }
					f.thinkInContent = true
				}
			})
			res := f.run("mmlu", Config{Concurrency: 4, ReasoningTokens: 256}, set)
			if res.Status != StatusOK || res.Method != MethodChatGreedy || res.N != 16 {
				t.Fatalf("%+v %+v, want ok by %s", res, res.Failure, MethodChatGreedy)
			}
			sameMetrics(t, res.Metrics, mmluModelMetrics)
			if tc.detail != "" && !strings.Contains(res.Failure.Detail, tc.detail) {
				t.Errorf("detail %q: chat-top-logprobs should have seen the reasoning", res.Failure.Detail)
			}
			// 16 tokens hold reasoning only: the first question is asked
			// again with room, every later one with room at once.
			if got := f.count("chat"); got > 16+3 {
				t.Errorf("%d chat requests for 16 questions", got)
			}
		})
	}
}

func TestMMLUOnAThinkingModelThatNeverAnswersHasNoScore(t *testing.T) {
	t.Parallel()
	f := newFakeLM(t, func(f *fakeLM) {
		llamaCppLike(f)
		f.reasoning = func(string) string { return "A long thought, B then C, " + strings.Repeat("hmm ", 100) }
		f.generate = func(string) string { return "A" }
	})
	res := f.run("mmlu", Config{Limit: 1, ReasoningTokens: 64}, SampleMMLU())
	if res.Status != StatusFailed || res.Metrics != nil || res.Method != MethodChatGreedy || KindOf(res.Failure) != BadResponse ||
		!strings.Contains(res.Failure.Detail, "reasoning only") || !strings.Contains(res.Failure.Detail, "max_tokens 64") {
		t.Fatalf("%+v %+v, want failed: reasoning only within 64 tokens", res, res.Failure)
	}
}

// The built-in engine is a thinking model (its chat template opens a
// thinking part unless chat_template_kwargs.enable_thinking is false, which
// MMLU never sends): its answers are reasoning_content first. Behind a
// chat-only proxy, MMLU may not score the reasoning's first token or its
// letters; the truth, asked of the engine directly, is that its greedy
// answer to the first question is reasoning only, so there is no score.
func TestMMLUOnTheBuiltinThinkingEngineScoresNoReasoning(t *testing.T) {
	t.Parallel()
	const budget = 48
	b := startBuiltin(t)
	set := SampleMMLU()
	req, _ := json.Marshal(chatRequest(b.Endpoint.Model, firstPrompt(set, 0), map[string]any{"max_tokens": budget, "temperature": 0}))
	resp, err := endpoints.NewClient(b.Endpoint, endpoints.NewTransport(endpoints.TransportOptions{})).Post(context.Background(), "/chat/completions", req)
	if err != nil || resp.Status != http.StatusOK {
		t.Fatalf("%v %+v", err, resp)
	}
	var truth chatCompletion
	if err := json.Unmarshal(resp.Body, &truth); err != nil || len(truth.Choices) == 0 {
		t.Fatalf("%v: %s", err, resp.Body)
	}
	if truth.reasoning() == "" || strings.TrimSpace(truth.content()) != "" {
		t.Fatalf("the engine's answer is not reasoning only (the premise of this test): %s", resp.Body)
	}

	p := newChatOnlyProxy(t, b.Endpoint.BaseURL)
	res := runEval("mmlu", Config{Endpoint: p.endpoint(b.Endpoint.Model), Limit: 1, Concurrency: 2, ReasoningTokens: budget}, set)
	if res.Status != StatusFailed || res.Metrics != nil || res.Method != MethodChatGreedy || KindOf(res.Failure) != BadResponse ||
		!strings.Contains(res.Failure.Detail, "reasoning only") || !strings.Contains(res.Failure.Detail, "chat-top-logprobs: logprobs_missing") {
		t.Fatalf("%+v %+v, want failed: reasoning only, after chat-top-logprobs saw reasoning", res, res.Failure)
	}
}

// A thinking model asked TriviaQA by chat: its reasoning holds newlines,
// so the "\n" stop ends it inside the reasoning; the answer is read from
// the content of an answer given room and no stop, never from the
// reasoning (which names a wrong answer first).
func TestTriviaQAOnAThinkingModelReadsTheAnswerNotTheReasoning(t *testing.T) {
	t.Parallel()
	set := SampleTriviaQA()
	answers, right := triviaAnswers(set.Items[TriviaShots:], 3)
	f := newFakeLM(t, func(f *fakeLM) {
		chatOnlyLike(f)
		f.generate = triviaModel(answers)
		f.reasoning = func(string) string { return "Maybe London.\nNo, let me think again.\n" }
	})
	res := f.run("triviaqa", Config{Concurrency: 4, ReasoningTokens: 512}, set)
	n := len(set.Items) - TriviaShots
	if res.Status != StatusOK || res.Method != MethodChatGenerate || res.N != n || res.Metrics["exact_match"] != float64(right)/float64(n) {
		t.Fatalf("%+v %+v, want %d of %d by %s", res, res.Failure, right, n, MethodChatGenerate)
	}
}

func TestChooseRouteTakesTheFirstRouteThatAnswersTheFirstItem(t *testing.T) {
	t.Parallel()
	lacks := func() *schema.EvalFailure { return newFailure(LogprobsMissing, 200, nil, nil, "no logprobs") }
	busy := newFailure(HTTPError, 429, nil, nil, "slow down")
	by := func(ans string, unanswered, f *schema.EvalFailure) asker[string] {
		return func(context.Context, int, string) (string, *schema.EvalFailure, *schema.EvalFailure) {
			return ans, unanswered, f
		}
	}
	for _, tc := range []struct {
		name        string
		lacked      *schema.EvalFailure
		routes      []route[string]
		method, ans string
		detail      string // the failure's, "" for none
		lackedAfter string // lacked's detail after, where lacked is given
	}{
		{"a lacking route is left for the next", nil,
			[]route[string]{{"a", by("", nil, lacks()), ""}, {"b", by("B", nil, nil), ""}}, "b", "B", "", ""},
		{"a failure that is not the route's lack stops there", nil,
			[]route[string]{{"a", by("", nil, busy), ""}, {"b", by("B", nil, nil), ""}}, "a", "", "slow down", ""},
		{"an unanswered first item is the route's failure", nil,
			[]route[string]{{"a", by("A", lacks(), nil), ""}, {"b", by("B", nil, nil), ""}}, "b", "B", "", ""},
		{"the last route's failure says the first's, by the route's name", nil,
			[]route[string]{{"a", by("", nil, lacks()), ""}, {"b", by("", nil, busy), "bee"}}, "b", "",
			"slow down; on the bee fallback, taken because of logprobs_missing: no logprobs", ""},
		{"the lacking routes after a given failure are said in its detail", newFailure(EchoRejected, 400, nil, nil, "no echo"),
			[]route[string]{{"a", by("", nil, lacks()), ""}, {"b", by("", nil, lacks()), ""}, {"c", by("C", nil, nil), ""}}, "c", "C", "",
			"no echo; a: logprobs_missing: no logprobs; b: logprobs_missing: no logprobs"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			rt, ans, f := chooseRoute(context.Background(), "prompt", tc.lacked, tc.routes...)
			detail := ""
			if f != nil {
				detail = f.Detail
			}
			if rt.method != tc.method || ans != tc.ans || detail != tc.detail {
				t.Fatalf("route %s, answer %q, detail %q; want %s, %q, %q", rt.method, ans, detail, tc.method, tc.ans, tc.detail)
			}
			if tc.lacked != nil && tc.lacked.Detail != tc.lackedAfter {
				t.Errorf("lacked's detail %q, want %q", tc.lacked.Detail, tc.lackedAfter)
			}
		})
	}
}

func TestAskEachAsksTheRestByTheRouteTheFirstItemChose(t *testing.T) {
	t.Parallel()
	lacks := newFailure(LogprobsMissing, 200, nil, nil, "no logprobs")
	busy := newFailure(HTTPError, 429, nil, nil, "slow down")
	// byItem answers item i with its number, and fails item failAt with f.
	byItem := func(failAt int, f *schema.EvalFailure) asker[int] {
		return func(_ context.Context, i int, _ string) (int, *schema.EvalFailure, *schema.EvalFailure) {
			if i == failAt {
				return 0, nil, f
			}
			return i, nil, nil
		}
	}
	const n = 5
	for _, tc := range []struct {
		name   string
		lacked bool
		routes []route[int]
		gotErr *schema.EvalFailure // got's failure on item 0
		method string
		kind   Kind
		detail string // the failure's, "" for none
	}{
		{"every item by the chosen route", false,
			[]route[int]{{"a", byItem(0, lacks), ""}, {"b", byItem(-1, nil), ""}}, nil, "b", "", ""},
		{"a later failure without a lacked failure is as it came", false,
			[]route[int]{{"a", byItem(3, busy), ""}}, nil, "a", HTTPError, "slow down"},
		{"a later failure is joined to the lacked failure", true,
			[]route[int]{{"a", byItem(3, busy), "ay"}}, nil, "a", HTTPError,
			"slow down; on the ay fallback, taken because of echo_rejected: no echo"},
		{"a later lack keeps the lacked failure", true,
			[]route[int]{{"a", byItem(3, lacks), ""}}, nil, "a", EchoRejected,
			"no echo; the a fallback failed too: logprobs_missing: no logprobs"},
		{"got's failure on the first item stops the rest", false,
			[]route[int]{{"a", byItem(-1, nil), ""}}, busy, "a", HTTPError, "slow down"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var lacked *schema.EvalFailure
			if tc.lacked {
				lacked = newFailure(EchoRejected, 400, nil, nil, "no echo")
			}
			r := NewRunner(Config{Endpoint: &endpoints.Endpoint{BaseURL: "http://127.0.0.1:1/v1"}, Concurrency: 2})
			defer r.Close()
			var mu sync.Mutex
			got := map[int]string{}
			rt, f := askEach(context.Background(), r, n, func(i int) string { return strconv.Itoa(i) }, lacked,
				func(_ context.Context, method string, i int, ans int, _ *schema.EvalFailure) *schema.EvalFailure {
					mu.Lock()
					defer mu.Unlock()
					got[i] = fmt.Sprintf("%s %d", method, ans)
					if i == 0 {
						return tc.gotErr
					}
					return nil
				}, tc.routes...)
			detail := ""
			if f != nil {
				detail = f.Detail
			}
			if rt.method != tc.method || KindOf(f) != tc.kind || detail != tc.detail {
				t.Fatalf("route %s, %s %q; want %s, %s %q", rt.method, KindOf(f), detail, tc.method, tc.kind, tc.detail)
			}
			if f == nil {
				for i := range n {
					if want := fmt.Sprintf("%s %d", tc.method, i); got[i] != want {
						t.Errorf("item %d got %q, want %q", i, got[i], want)
					}
				}
			}
			if tc.gotErr != nil && len(got) != 1 {
				t.Errorf("%d items reached got after the first failed: %v", len(got), got)
			}
		})
	}
}
