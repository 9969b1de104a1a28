package evals

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/glmbench/glmbench/endpoints"
	"github.com/glmbench/glmbench/endpoints/endpointstest"
	"github.com/glmbench/glmbench/reports/summary"
)

// vllmLogprobs400 is vLLM's refusal of more top logprobs than
// --max-logprobs allows (sampling_params.py, VLLMValidationError's
// parameter suffix of current builds), as its OpenAI server answers it.
func vllmLogprobs400(asked, most int) string {
	b, _ := json.Marshal(map[string]any{"error": map[string]any{"object": "error", "type": "BadRequestError", "param": "logprobs", "code": 400,
		"message": "Requested sample logprobs of " + itoa(asked) + ", which is greater than max allowed: " + itoa(most) +
			" (parameter=logprobs, value=" + itoa(asked) + ")"}})
	return string(b)
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

// A chat-only gateway in front of vLLM started with --max-logprobs 5
// refuses chat's top_logprobs 20; MMLU asks again with 5, stays on
// chat-top-logprobs, and scores every question by the model's letter
// (mmluModelMetrics), saying the cap in the result's detail. Every chat
// request after the one refused asks 5 at once.
func TestMMLUAsksTheTopLogprobsVLLMStatesAsItsMaximum(t *testing.T) {
	t.Parallel()
	set := SampleMMLU()
	letter := mmluModel(set)
	f := newFakeLM(t, func(f *fakeLM) {
		chatOnlyLike(f)
		f.top = chatLetterTop(letter, map[string]float64{"The": -1.5})
	})
	var mu sync.Mutex
	asked := map[int]int{}
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var req struct {
			TopLogprobs *int `json:"top_logprobs"`
		}
		_ = json.Unmarshal(body, &req)
		if r.URL.Path == "/v1/chat/completions" && req.TopLogprobs != nil {
			mu.Lock()
			asked[*req.TopLogprobs]++
			mu.Unlock()
			if *req.TopLogprobs > 5 {
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusBadRequest)
				io.WriteString(w, vllmLogprobs400(*req.TopLogprobs, 5))
				return
			}
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		f.serve(w, r)
	}))
	defer front.Close()
	res := runEval("mmlu", Config{Endpoint: &endpoints.Endpoint{BaseURL: front.URL + "/v1", Model: "fake"}, Concurrency: 4}, set)
	if res.Status != StatusOK || res.Method != MethodChatTopLogprobs || res.N != 16 || KindOf(res.Failure) != CompletionsMissing {
		t.Fatalf("%+v %+v, want ok by %s", res, res.Failure, MethodChatTopLogprobs)
	}
	sameMetrics(t, res.Metrics, mmluModelMetrics)
	if !strings.Contains(res.Failure.Detail, "chat-top-logprobs asked the top 5 logprobs, the server's stated maximum, having been refused 20") {
		t.Errorf("detail %q does not say the cap", res.Failure.Detail)
	}
	if asked[20] != 1 || asked[5] != 16 {
		t.Errorf("top_logprobs asked %v; want 20 once, then 5 for each of the 16 questions", asked)
	}
}

// Only a 400 or 422 naming the top logprobs' field with a stated maximum
// below what was asked is asked again, and only when that maximum holds
// A–D (at least 4): below, the refusal stands and MMLU moves on to
// chat-greedy as before.
func TestACapBelowFourLettersIsNotAskedAgain(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		msg         string
		asked, want int
	}{
		{vllmLogprobs400(20, 5), 20, 5},
		{vllmLogprobs400(20, 3), 20, 0},
		{vllmLogprobs400(5, 4), 4, 0},
		{`{"error": "Input validation error: ` + "`top_n_tokens`" + ` must be >= 0 and <= 5. Given: 20", "error_type": "validation"}`, 20, 5},
		{`{"error": {"message": "Invalid 'top_logprobs': integer above maximum value. Expected a value <= 8, but got 20 instead.", "type": "invalid_request_error"}}`, 20, 8},
		{`{"error": {"message": "max_tokens must be <= 5"}}`, 20, 0},
	} {
		_, n := topLogprobsCap("/chat/completions", map[string]any{"top_logprobs": tc.asked}, &endpoints.Response{Status: 400, Body: []byte(tc.msg)})
		if n != tc.want {
			t.Errorf("%s: cap %d, want %d", tc.msg, n, tc.want)
		}
	}
}

// Hugging Face TGI caps top_n_tokens at 5 (--max-top-n-tokens) and has no
// logprobs on /v1/completions: MMLU is scored by chat-top-logprobs asking
// the top 5, each question answered by the letter the personality's model
// puts first, which its greedy chat answer of one token says.
func TestMMLUAgainstTGIIsScoredByTheTopFiveChatLogprobs(t *testing.T) {
	t.Parallel()
	p := endpointstest.Start(t, endpointstest.TGI, endpointstest.Options{})
	ep := &endpoints.Endpoint{BaseURL: p.BaseURL(), Model: p.Opts.Model}
	set := SampleMMLU()
	res, items := runEvalItems("mmlu", Config{Endpoint: ep, Concurrency: 4, Limit: 2}, set)
	if res.Status != StatusOK || res.Method != MethodChatTopLogprobs || res.Failure == nil ||
		!strings.Contains(res.Failure.Detail, "chat-top-logprobs asked the top 5 logprobs") {
		t.Fatalf("%+v %+v, want ok by %s asking the top 5", res, res.Failure, MethodChatTopLogprobs)
	}
	r := NewRunner(Config{Endpoint: ep})
	defer r.Close()
	right, n := 0, 0
	for _, sub := range set.Subjects {
		for k, q := range sub.Test[:2] {
			req := chatRequest(ep.Model, MMLUPrompt(sub.Name, sub.Shots, q), map[string]any{"max_tokens": 1, "temperature": 0})
			_, c, f := r.sender(0).chat(context.Background(), req)
			if f != nil {
				t.Fatal(f)
			}
			got := AnswerLetter(c.content())
			if got < 0 {
				t.Fatalf("%s/%d: greedy answer %q names no letter", sub.Name, k, c.content())
			}
			if items[n].ID != sub.Name+"/"+itoa(k) {
				t.Fatalf("item %d is %s", n, items[n].ID)
			}
			n++
			if got == q.Answer {
				right++
			}
		}
	}
	if want := float64(right) / float64(n); res.Metrics["acc"] != want || res.N != n {
		t.Errorf("acc %v of %d, want %v of %d", res.Metrics["acc"], res.N, want, n)
	}
}

// Whatever the answer, a cap to ask again with is one the message states,
// at least four and below what was asked; anything else asks nothing again.
func FuzzTopLogprobsCap(f *testing.F) {
	f.Add(400, 20, vllmLogprobs400(20, 5))
	f.Add(422, 20, `{"error": "Input validation error: `+"`top_n_tokens`"+` must be >= 0 and <= 5. Given: 20"}`)
	f.Add(400, 5, `{"error": {"message": "logprobs <= 99999999999999999999"}}`)
	f.Add(400, 20, `{"error": "top_logprobs <= \u0038"}`)
	f.Fuzz(func(t *testing.T, status, asked int, body string) {
		field, n := topLogprobsCap("/chat/completions", map[string]any{"top_logprobs": asked}, &endpoints.Response{Status: status, Body: []byte(body)})
		if field != "top_logprobs" {
			t.Fatalf("field %q", field)
		}
		if n != 0 && (n < minTopLogprobs || n >= asked || (status != 400 && status != 422) || !strings.Contains(summary.ErrorMessage([]byte(body)), itoa(n))) {
			t.Fatalf("cap %d for HTTP %d asking %d: %s", n, status, asked, body)
		}
	})
}

// LMDeploy's chat logprobs put the sampled token in the entry's own token
// and logprob and only the other candidates in top_logprobs
// (api_server.py _create_chat_completion_logprobs); OpenAI's list holds
// the sampled token too. Top has it either way, at its own logprob.
func TestTopHoldsTheSampledTokenWhereTheServersListLeavesItOut(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ name, entry string }{
		{"LMDeploy", `{"token":"B","logprob":-0.1,"top_logprobs":[{"token":"A","logprob":-2.5},{"token":"C","logprob":-3}]}`},
		{"OpenAI", `{"token":"B","logprob":-0.1,"top_logprobs":[{"token":"B","logprob":-0.1},{"token":"A","logprob":-2.5},{"token":"C","logprob":-3}]}`},
	} {
		var e ChatTokenLogprob
		if err := json.Unmarshal([]byte(tc.entry), &e); err != nil {
			t.Fatal(err)
		}
		top := e.Top()
		if len(top) != 3 || top["B"] != -0.1 || top["A"] != -2.5 || top["C"] != -3 {
			t.Errorf("%s: %v; want B -0.1, A -2.5, C -3", tc.name, top)
		}
	}
}

// A question LMDeploy gives up on (a prompt past --session-len with
// max_tokens: a 200 of finish_reason "error", the engine's error text as
// content) is a bad_response failure naming it, not an answer scored
// wrong.
func TestAnAnswerTheServerGaveUpOnIsABadResponseNotAWrongAnswer(t *testing.T) {
	t.Parallel()
	p := endpointstest.Start(t, endpointstest.LMDeploy, endpointstest.Options{Context: 8})
	res := runEval("triviaqa", Config{Endpoint: &endpoints.Endpoint{BaseURL: p.BaseURL(), Model: p.Opts.Model}, Concurrency: 2, Limit: 2}, SampleTriviaQA())
	if res.Failure == nil || res.Failure.Kind != string(BadResponse) || res.Failure.Detail != `the server gave up on the answer (finish_reason "error"): internal error happened, status code ResponseType.INPUT_LENGTH_ERROR` {
		t.Fatalf("%+v %+v; want a bad_response saying the server gave up", res, res.Failure)
	}
}
