package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/glmbench/glmbench/bench/workload"
	"github.com/glmbench/glmbench/endpoints"
)

// newVLLMContext is a fake vLLM of a context of nCtx tokens that counts a
// chat as 12 template tokens and one per 4 bytes of its messages, and, as
// vLLM does (serving_engine's _validate_input), refuses with a 400 a
// request whose prompt plus max_tokens passes its context. refused counts
// the refusals.
func newVLLMContext(t *testing.T, nCtx int, refused *atomic.Int64) *httptest.Server {
	t.Helper()
	mux := http.NewServeMux()
	mux.HandleFunc("/v1/models", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, `{"object":"list","data":[{"id":"m","object":"model","owned_by":"vllm","max_model_len":%d}]}`, nCtx)
	})
	mux.HandleFunc("/v1/chat/completions", func(w http.ResponseWriter, r *http.Request) {
		var req endpoints.ChatRequest
		b, _ := io.ReadAll(r.Body)
		if json.Unmarshal(b, &req) != nil {
			w.WriteHeader(400)
			return
		}
		n := 12
		for _, m := range req.Messages {
			n += (len(m.Content) + 3) / 4
		}
		out := max(req.MaxTokens, 1)
		if n+out > nCtx {
			refused.Add(1)
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(400)
			fmt.Fprintf(w, `{"object":"error","message":"This model's maximum context length is %d tokens. However, you requested %d tokens (%d in the messages, %d in the completion). Please reduce the length of the messages or completion.","type":"BadRequestError","param":null,"code":400}`, nCtx, n+out, n, out)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		for range out {
			io.WriteString(w, `data: {"id":"c","object":"chat.completion.chunk","model":"m","choices":[{"index":0,"delta":{"content":"a"},"finish_reason":null}]}`+"\n\n")
		}
		fmt.Fprintf(w, `data: {"id":"c","object":"chat.completion.chunk","model":"m","choices":[{"index":0,"delta":{},"finish_reason":"length"}],"usage":{"prompt_tokens":%d,"completion_tokens":%d,"total_tokens":%d}}`+"\n\ndata: [DONE]\n\n", n, out, n+out)
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

// A data set's item whose prompt is short but whose max_tokens is long can
// pass the context where the item of the longest prompt fits: the shape
// probe must pick the item a server's context check refuses (prompt plus
// max_tokens), found before any load, not the one of the most bytes.
func TestTheShapeProbeFindsTheDataSetItemThatOverflowsTheContext(t *testing.T) {
	t.Parallel()
	var refused atomic.Int64
	srv := newVLLMContext(t, 4000, &refused)
	o := llamaOptions(t, &llamaServer{Server: srv})
	// Item 1: about 2,000 prompt tokens and 100 out, 2,100 in all (8,100
	// bytes and tokens together); item 2: about 1,000 and 3,100, 4,100
	// in all, past the context of 4,000 (7,100).
	line := func(words, maxTokens int) string {
		b, _ := json.Marshal(map[string]any{"prompt": strings.TrimSpace(strings.Repeat("abc ", words)), "max_tokens": maxTokens})
		return string(b) + "\n"
	}
	_, _, err := PrepareWorkload(context.Background(), o, []WorkPhase{jsonlPhase(t, line(2000, 100)+line(1000, 3100))})
	if err == nil || !strings.Contains(err.Error(), "maximum context length is 4000") {
		t.Fatalf("err = %v, want the server's refusal of item 2 (prompt and max_tokens past its context) before any load", err)
	}
	t.Log(err)
	if refused.Load() != 1 {
		t.Errorf("%d requests refused, want only the probe of item 2", refused.Load())
	}
}

// A workload's prompt target below what the endpoint's template and the
// run's prefix take alone is missed by every request that asks for it: a
// fixed phase and a multi-turn phase are refused before any load, as
// --phase refuses one (Prepare); sampled lengths (a random phase, a trace)
// below it, and a shared-prefix phase whose question_tokens the
// question's template and prefix pass, are sent at it, with a warning.
func TestAWorkloadTargetBelowTheSmallestPromptIsRefusedBeforeTheLoad(t *testing.T) {
	t.Parallel()
	o := workOptions(t)
	prep := func(ph workload.Phase, reqs []workload.Request) ([]string, error) {
		t.Helper()
		_, warns, err := PrepareWorkload(context.Background(), o, []WorkPhase{{Phase: ph, Reqs: reqs}})
		return warns, err
	}
	fixed := workload.Phase{Name: "f", Kind: workload.Fixed, Requests: 2, InputTokens: 4, OutputTokens: 2}
	_, err := prep(fixed, []workload.Request{{I: 0, Input: 4, Output: 2}, {I: 1, Input: 4, Output: 2}})
	wantBadInput(t, err, "phase f: an input of 4 tokens is below the endpoint's smallest prompt of")

	sp := workload.Phase{Name: "s", Kind: workload.SharedPrefix, Requests: 2, Groups: 1, PrefixTokens: 4, QuestionTokens: 2, OutputTokens: 2}
	warns, err := prep(sp, []workload.Request{{I: 0, Group: 1, Input: 6, PrefixTokens: 4, Output: 2}, {I: 1, Group: 1, Input: 6, PrefixTokens: 4, Output: 2}})
	if err != nil || len(warns) != 1 || !strings.Contains(warns[0], "phase s: the system prompt with the question's template and prefix alone make") || !strings.Contains(warns[0], "over the 6 of prefix_tokens + question_tokens") {
		t.Errorf("shared-prefix: warnings %q, err %v: want one saying every prompt is over its target", warns, err)
	}

	// Turn 1's user message of 4 tokens is below the template and the
	// prefix alone; every turn after it would miss its target as far.
	const user, answer, turns = 4, 1, 3
	var reqs []workload.Request
	for k := 1; k <= turns; k++ {
		reqs = append(reqs, workload.Request{I: k - 1, Session: 1, Turn: k, UserTokens: user, Output: answer, Input: (k-1)*(user+answer) + user})
	}
	mt := workload.Phase{Name: "m", Kind: workload.MultiTurn, Sessions: 1, Turns: turns, UserTokens: user, OutputTokens: answer}
	_, err = prep(mt, reqs)
	wantBadInput(t, err, "phase m: user_tokens 4 is below the endpoint's smallest prompt of")

	random := workload.Phase{Name: "r", Kind: workload.Random, Requests: 2}
	warns, err = prep(random, []workload.Request{{I: 0, Input: 3, Output: 2}, {I: 1, Input: 200, Output: 2}})
	if err != nil || len(warns) != 1 || !strings.Contains(warns[0], "phase r: 1 of 2 requests ask for fewer prompt tokens than the endpoint's smallest prompt") {
		t.Errorf("random: warnings %q, err %v: want one saying the short request is sent at the smallest prompt", warns, err)
	}
}
