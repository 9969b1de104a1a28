package endpoints_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/glmbench/glmbench/endpoints"
)

// streamOf serves /v1/chat/completions with the SSE text events, each
// written and flushed, pause after the keep-alive comments.
func streamOf(t *testing.T, pause time.Duration, comments int, events ...string) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		rc := http.NewResponseController(w)
		for range comments {
			fmt.Fprint(w, ": keep-alive\n\n")
			rc.Flush()
		}
		time.Sleep(pause)
		for _, e := range events {
			fmt.Fprintf(w, "data: %s\n\n", e)
			rc.Flush()
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

func streamFrom(t *testing.T, srv *httptest.Server, maxTokens int) *endpoints.StreamResult {
	t.Helper()
	c := modelClient(t, srv.URL+"/v1", "m")
	body := fmt.Appendf(nil, `{"model":"m","messages":[{"role":"user","content":"x-000001 hi"}],"max_tokens":%d,"stream":true,"stream_options":{"include_usage":true},"ignore_eos":true}`, maxTokens)
	var res endpoints.StreamResult
	c.StreamAPI(context.Background(), endpoints.APIChat, body, endpoints.StreamLimits{TTFT: 10 * time.Second, Stall: 10 * time.Second, MaxTokens: maxTokens}, nil, &res)
	return &res
}

// DeepSeek's API holds a request it cannot serve yet instead of refusing
// it: a stream gets its 200 and SSE ": keep-alive" comments until inference
// starts (api-docs.deepseek.com/quick_start/rate_limit). They are bytes but
// no content event and no malformed event: the first token is the first
// content after them, and the request completes with the usage's count.
func TestDeepSeeksKeepAliveCommentsAreNoFirstToken(t *testing.T) {
	t.Parallel()
	const pause = 50 * time.Millisecond
	srv := streamOf(t, pause, 40,
		`{"id":"c","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"role":"assistant","content":""}}]}`,
		`{"id":"c","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"a"}}]}`,
		`{"id":"c","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":" b"},"finish_reason":"length"}]}`,
		`{"id":"c","object":"chat.completion.chunk","choices":[],"usage":{"prompt_tokens":9,"completion_tokens":2,"total_tokens":11,"prompt_cache_hit_tokens":0,"prompt_cache_miss_tokens":9}}`,
		`[DONE]`)
	res := streamFrom(t, srv, 2)
	if res.Class != "" || !res.Done || len(res.Events) != 2 || res.CompletionTokens != 2 || res.PromptTokens != 9 || res.Malformed != 0 {
		t.Fatalf("class %q done %v events %d usage %d/%d malformed %d: want a completed stream of 2 events, usage 9/2, none malformed", res.Class, res.Done, len(res.Events), res.PromptTokens, res.CompletionTokens, res.Malformed)
	}
	if ttft := res.Events[0]; ttft < pause {
		t.Errorf("first content event %v after t0, want after the comments' %v", ttft, pause)
	}
}

// Groq puts its own usage in x_groq.usage on the finish chunk, and with
// stream_options.include_usage also sends the OpenAI usage chunk
// (Portkey-AI/gateway#1072, #1338): the OpenAI one is the count.
func TestGroqsUsageChunkIsTheCount(t *testing.T) {
	t.Parallel()
	srv := streamOf(t, 0, 0,
		`{"id":"c","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}],"x_groq":{"id":"req_01"}}`,
		`{"id":"c","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"a"},"logprobs":null,"finish_reason":null}]}`,
		`{"id":"c","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":" b"},"logprobs":null,"finish_reason":null}]}`,
		`{"id":"c","object":"chat.completion.chunk","choices":[{"index":0,"delta":{},"logprobs":null,"finish_reason":"length"}],"x_groq":{"id":"req_01","usage":{"queue_time":0.01,"prompt_tokens":9,"prompt_time":0.001,"completion_tokens":2,"completion_time":0.002,"total_tokens":11,"total_time":0.003}}}`,
		`{"id":"c","object":"chat.completion.chunk","choices":[],"usage":{"queue_time":0.01,"prompt_tokens":9,"prompt_time":0.001,"completion_tokens":2,"completion_time":0.002,"total_tokens":11,"total_time":0.003}}`,
		`[DONE]`)
	res := streamFrom(t, srv, 2)
	if res.Class != "" || !res.Done || len(res.Events) != 2 || !res.Usage || res.CompletionTokens != 2 || res.PromptTokens != 9 || res.BadUsage != "" {
		t.Fatalf("class %q done %v events %d usage %v %d/%d (%q): want completed, 2 events, usage 9/2", res.Class, res.Done, len(res.Events), res.Usage, res.PromptTokens, res.CompletionTokens, res.BadUsage)
	}
}
