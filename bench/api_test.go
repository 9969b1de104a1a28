package bench

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/glmbench/glmbench/bench/workload"
	"github.com/glmbench/glmbench/endpoints"
	"github.com/glmbench/glmbench/endpoints/endpointstest"
	"github.com/glmbench/glmbench/reports/schema"
)

// completionsBody is a body as a completions server reads it: any messages
// key is kept apart, so that its presence shows.
type completionsBody struct {
	Model         string           `json:"model"`
	Prompt        *string          `json:"prompt"`
	Messages      *json.RawMessage `json:"messages"`
	MaxTokens     int              `json:"max_tokens"`
	Stream        bool             `json:"stream"`
	StreamOptions *struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options"`
	IgnoreEOS *bool `json:"ignore_eos"`
}

func readCompletionsBody(t *testing.T, b []byte) completionsBody {
	t.Helper()
	var req completionsBody
	if err := json.Unmarshal(b, &req); err != nil {
		t.Fatal(err)
	}
	if req.Prompt == nil || req.Messages != nil {
		t.Fatalf("a completions body has a prompt and no messages: %s", b)
	}
	return req
}

func TestACompletionsBodyIsTheChatBodyWithThePromptForTheMessages(t *testing.T) {
	t.Parallel()
	s := Shape{Model: "base", IgnoreEOS: true, API: endpoints.APICompletions}
	text := newFiller().Text(300)
	req := readCompletionsBody(t, s.chatBody(Prefix("0a1b2c3d", 7), text, 32, true))
	if *req.Prompt != Prefix("0a1b2c3d", 7)+text || req.Model != "base" || req.MaxTokens != 32 || !req.Stream ||
		req.StreamOptions == nil || !req.StreamOptions.IncludeUsage || req.IgnoreEOS == nil || !*req.IgnoreEOS {
		t.Fatalf("body %+v", req)
	}
	// The template patches the six index digits inside the prompt.
	tmpl := newTemplate(s, "0a1b2c3d", text, 32)
	for _, i := range []int{0, 5, 123456, 999998} {
		if got := *readCompletionsBody(t, tmpl.body(i)).Prompt; got != Prefix("0a1b2c3d", i)+text {
			t.Fatalf("body %d's prompt starts %q", i, got[:20])
		}
	}
	// Several messages are one transcript, joined by blank lines.
	msgs := []endpoints.Message{{Role: "system", Content: "sys"}, {Role: "user", Content: "q1"}, {Role: "assistant", Content: "a1"}, {Role: "user", Content: "q2"}}
	if got := *readCompletionsBody(t, s.messagesBody(msgs, 4, false)).Prompt; got != "sys\n\nq1\n\na1\n\nq2" {
		t.Fatalf("transcript %q", got)
	}
	// And chat stays chat.
	var chat endpoints.ChatRequest
	if err := json.Unmarshal(Shape{Model: "m"}.chatBody("p ", "x", 1, true), &chat); err != nil || len(chat.Messages) != 1 || chat.Messages[0].Content != "p x" {
		t.Fatalf("chat body %+v %v", chat, err)
	}
}

func TestEveryRequestOfACompletionsRunGoesToTheCompletionsRouteWithAPrompt(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var seen []endpointstest.Request
	srv := endpointstest.New(func(r endpointstest.Request) endpointstest.Behavior {
		mu.Lock()
		seen = append(seen, r)
		mu.Unlock()
		return endpointstest.Behavior{}
	})
	defer srv.Close()
	o := testOptions(t, srv, "c0a11e00")
	o.Shape.API = endpoints.APICompletions
	plans, warns, err := Prepare(context.Background(), o, []Spec{{Name: "x", N: 6, In: 200, Out: 9}})
	if err != nil || len(warns) > 0 {
		t.Fatal(err, warns)
	}
	run := RunPhase(context.Background(), o, plans[0])
	// Probes and load alike: every request the server saw.
	mu.Lock()
	defer mu.Unlock()
	load := 0
	for _, r := range seen {
		if r.Path != "/v1/completions" || !r.Prompt || r.Messages != 0 || r.Nonce == "" {
			t.Errorf("request %s-%d: %+v", r.Nonce, r.I, r)
		}
		if r.Nonce == o.Nonce {
			load++
		}
	}
	if load != 6 || len(seen) < 8 {
		t.Errorf("%d requests, %d of them the load's: want the probes and the 6 of the load", len(seen), load)
	}
	for _, r := range run.Records {
		if !r.Completed() || r.N != 9 || r.NSource != schema.NFromUsage {
			t.Errorf("request %d: %+v", r.I, r)
		}
	}
}

func TestACompletionsRunOnTheEngineLandsOnItsTargetsInTheRawTextsTokens(t *testing.T) {
	t.Parallel()
	o := workOptions(t)
	o.Shape.API = endpoints.APICompletions
	plans, warns, err := Prepare(context.Background(), o, []Spec{{Name: "x", N: 4, In: 300, Out: 12}})
	if err != nil || len(warns) > 0 {
		t.Fatal(err, warns)
	}
	cal := plans[0].Cal
	if abs(cal.PromptTokens-300) > Tolerance(300) {
		t.Fatalf("calibrated to %d tokens, target 300", cal.PromptTokens)
	}
	run := RunPhase(context.Background(), o, plans[0])
	tmpl := newTemplate(o.Shape, o.Nonce, newFiller().Text(cal.Chars), 12)
	for _, r := range run.Records {
		if !r.Completed() || r.N != 12 || r.NSource != schema.NFromUsage {
			t.Fatalf("request %d: %+v", r.I, r)
		}
		// No template: the engine counts the prompt's own tokens.
		if want := len(engineTokens(t, tmpl.body(plans[0].First+r.I))); r.Prompt != want || abs(r.Prompt-300) > Tolerance(300) {
			t.Errorf("request %d: %d prompt tokens; the raw text has %d, the target is 300", r.I, r.Prompt, want)
		}
	}
}

func TestSharedPrefixOnCompletionsSendsTheTranscriptAndTheRadixCacheStillServesTheSystemPrompt(t *testing.T) {
	t.Parallel()
	o := workOptions(t)
	o.Shape.API = endpoints.APICompletions
	o.MaxConcurrency = 1
	ph := workload.Phase{Name: "sp", Kind: workload.SharedPrefix, Groups: 2, PrefixTokens: 400, QuestionTokens: 40}
	plan, run := runWork(t, o, ph, sharedPrefixReqs(2, 4, 400, 40, 8)) // 8 output tokens: see TestSharedPrefixRequestsAfterTheFirstOfTheirGroupFindTheSystemPromptCached
	truth, _ := radixTruth(t, plan, 64)
	for i, r := range run.Records {
		msgs := plan.messages(i)
		if got := *readCompletionsBody(t, plan.body(i)).Prompt; len(msgs) != 2 || got != msgs[0].Content+"\n\n"+msgs[1].Content {
			t.Fatalf("request %d's prompt is not its system prompt and question joined", i)
		}
		if got := cachedOf(t, &r); got != truth[i] || i >= 2 && got < 6*64 {
			t.Errorf("request %d (group %d): %d cached tokens; the radix cache holds %d of its prompt", i, r.Group, got, truth[i])
		}
		if abs(r.Prompt-440) > Tolerance(440) {
			t.Errorf("request %d: %d prompt tokens, target 440", i, r.Prompt)
		}
	}
	if c := run.Result.Cache; c == nil || c.Hits != 6 || c.Misses != 2 {
		t.Errorf("cache %+v: want 6 hits and 2 misses (the first of each group)", c)
	}
}

func TestMultiTurnOnCompletionsSendsEachTurnAsTheLastTurnsPromptAndMore(t *testing.T) {
	t.Parallel()
	o := workOptions(t)
	o.Shape.API = endpoints.APICompletions
	o.MaxConcurrency = 1
	ph, reqs := multiTurn(2, 3, 40, 8)
	plan, run := runWork(t, o, ph, reqs)
	truth, _ := radixTruth(t, plan, 64)
	for i, r := range run.Records {
		prompt := *readCompletionsBody(t, plan.body(i)).Prompt
		if prompt != endpoints.Transcript(plan.messages(i)) || strings.Count(prompt, "\n\n") != 2*(r.Turn-1) {
			t.Errorf("session %d turn %d: the prompt is not its %d messages joined", r.Session, r.Turn, 2*r.Turn-1)
		}
		if got := cachedOf(t, &r); got != truth[i] {
			t.Errorf("session %d turn %d: %d cached tokens; the radix cache holds %d", r.Session, r.Turn, got, truth[i])
		}
		if d := r.Prompt - *r.TargetPrompt; abs(d) > Tolerance(*r.TargetPrompt) {
			t.Errorf("session %d turn %d: %d prompt tokens, target %d", r.Session, r.Turn, r.Prompt, *r.TargetPrompt)
		}
		if r.Turn > 1 && !strings.HasPrefix(prompt, *readCompletionsBody(t, plan.body(i-1)).Prompt+"\n\n") {
			t.Errorf("session %d turn %d's prompt does not start with turn %d's", r.Session, r.Turn, r.Turn-1)
		}
	}
}

func TestACompletionsRunAgainstOpenAIsChatModelStopsAtTheFirstProbeAsBadInput(t *testing.T) {
	t.Parallel()
	for _, name := range []string{endpointstest.OpenAI, endpointstest.Gateway} {
		p := endpointstest.Start(t, name, endpointstest.Options{})
		ep := resolve(t, p.BaseURL(), p.Opts.Model)
		o := &Options{Endpoint: ep, Shape: Shape{Model: ep.Model, API: endpoints.APICompletions}, ConnectTimeout: 2e9, Nonce: NewNonce()}
		_, _, err := Prepare(context.Background(), o, []Spec{{Name: "x", N: 2, In: 64, Out: 4}})
		wantBadInput(t, err, "HTTP 404", "--api chat")
		if strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: the error is not one line: %q", name, err)
		}
		if n := p.Requests("POST /v1/completions"); n != 1 || p.Requests("POST /v1/chat/completions") != 0 {
			t.Errorf("%s: %d completions requests; want the one probe, and no chat", name, n)
		}
	}
}

// On completions a prompt has no chat template: a multi-turn history over
// its turn's target, and a shared-prefix question over its own, are said
// in what the prompt holds instead (prefixes, the blank lines between the
// messages), never as a template's tokens. Turn 1's user message is the
// prefix alone (user_tokens is the endpoint's smallest prompt), so turn
// 2's history (that prefix, a blank line, the answer, a blank line, turn
// 2's prefix) passes the 2·user+1 tokens of its target.
func TestCompletionsWorkloadMessagesNameNoChatTemplate(t *testing.T) {
	t.Parallel()
	o := workOptions(t)
	o.Shape.API = endpoints.APICompletions
	user := len(engineTokens(t, o.Shape.chatBody(Prefix(NewNonce(), ProbeIndex), "", 1, true)))
	const answer = 1
	reqs := []workload.Request{
		{I: 0, Session: 1, Turn: 1, UserTokens: user, Output: answer, Input: user},
		{I: 1, Session: 1, Turn: 2, UserTokens: user, Output: answer, Input: 2*user + answer},
	}
	mt := workload.Phase{Name: "m", Kind: workload.MultiTurn, Sessions: 1, Turns: 2, UserTokens: user, OutputTokens: answer}
	_, _, err := PrepareWorkload(context.Background(), o, []WorkPhase{{Phase: mt, Reqs: reqs}})
	wantBadInput(t, err, "phase m: turn 2's history is", "blank lines between turns", "above a turn's prefix and blank lines")
	if strings.Contains(err.Error(), "template's") || strings.Contains(err.Error(), "chat template and") {
		t.Errorf("a completions history error names a chat template: %v", err)
	}

	sp := workload.Phase{Name: "s", Kind: workload.SharedPrefix, Requests: 2, Groups: 1, PrefixTokens: 4, QuestionTokens: 2, OutputTokens: 2}
	_, warns, err := PrepareWorkload(context.Background(), o, []WorkPhase{{Phase: sp, Reqs: []workload.Request{
		{I: 0, Group: 1, Input: 6, PrefixTokens: 4, Output: 2}, {I: 1, Group: 1, Input: 6, PrefixTokens: 4, Output: 2}}}})
	if err != nil || len(warns) != 1 || !strings.Contains(warns[0], "phase s: the system prompt with the question's prefix and the blank line before it alone make") {
		t.Errorf("shared-prefix on completions: warnings %q, err %v", warns, err)
	}
}

// vLLM serves /v1/completions, and answers a model name it does not serve
// with 404 on either route: the hint a completions 404 carries leaves the
// model name open as the cause, rather than saying the endpoint does not
// serve /completions.
func TestACompletions404ForAWrongModelNameDoesNotSayTheRouteIsMissing(t *testing.T) {
	t.Parallel()
	p := endpointstest.Start(t, endpointstest.VLLM, endpointstest.Options{})
	ep := resolve(t, p.BaseURL(), "no-such-model")
	o := &Options{Endpoint: ep, Shape: Shape{Model: ep.Model, API: endpoints.APICompletions}, ConnectTimeout: 2e9, Nonce: NewNonce()}
	_, _, err := Prepare(context.Background(), o, []Spec{{Name: "x", N: 2, In: 64, Out: 4}})
	wantBadInput(t, err, "HTTP 404", "does not exist", "if the model name is right", "--api chat")
	if strings.Contains(err.Error(), "does not serve") {
		t.Errorf("the hint says vLLM does not serve /completions: %v", err)
	}
}

// llama.cpp before January 2025 (PR 10974) answered /v1/completions in its native
// shape ({"content": …, "stop": …}, no choices, no usage): a completions
// run against one stops at its shape probe, in one line that says a
// completions stream's content is choices[].text and names that build.
func TestACompletionsStreamInLlamaCppsNativeShapeIsSaidAsSuch(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Stream bool `json:"stream"`
		}
		if json.NewDecoder(r.Body).Decode(&req) != nil || r.URL.Path != "/v1/completions" {
			http.Error(w, "bad", http.StatusBadRequest)
			return
		}
		if !req.Stream {
			io.WriteString(w, `{"content":"a","stop":true,"tokens_evaluated":12,"tokens_predicted":1}`)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, "data: {\"content\":\"a\",\"stop\":false}\n\ndata: {\"content\":\"\",\"stop\":true,\"tokens_evaluated\":12}\n\n")
	}))
	defer srv.Close()
	ep := resolve(t, srv.URL+"/v1", "m")
	o := &Options{Endpoint: ep, Shape: Shape{Model: "m", API: endpoints.APICompletions}, ConnectTimeout: 2e9, Nonce: NewNonce()}
	_, _, err := Prepare(context.Background(), o, []Spec{{Name: "x", N: 2, In: 64, Out: 4}})
	wantBadInput(t, err, "probe of the load's request shape", "200 with no content event", "choices[].text", "llama.cpp builds before January 2025", "--api chat")
	if strings.Contains(err.Error(), "\n") {
		t.Errorf("not one line: %q", err)
	}
}
