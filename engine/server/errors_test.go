package server

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/glmbench/glmbench/engine/sched"
)

func TestBadRequestsGetOpenAIErrorsAndTheServerKeepsServing(t *testing.T) {
	e := newEnv(t, envConfig{sched: sched.Config{ContextLength: 512}})
	user := []map[string]any{{"role": "user", "content": "hi"}}
	long := strings.Repeat("a", 600)
	const chat, cmpl = "/v1/chat/completions", "/v1/completions"
	tests := []struct {
		name   string
		method string
		path   string
		body   any
		status int
		param  string // the field the error names, when it should
		msg    string // a piece of the message
	}{
		{"malformed JSON", "POST", chat, `{"messages": [`, 400, "", "Malformed JSON"},
		{"an empty body", "POST", chat, ``, 400, "", "empty"},
		{"a body that is not an object", "POST", chat, `[1, 2]`, 400, "", "JSON object"},
		{"max_tokens of the wrong type", "POST", chat, map[string]any{"messages": user, "max_tokens": "ten"}, 400, "max_tokens", "max_tokens"},
		{"stream of the wrong type", "POST", chat, map[string]any{"messages": user, "stream": "yes"}, 400, "stream", "stream"},
		{"include_usage of the wrong type", "POST", chat, map[string]any{"messages": user, "stream": true, "stream_options": map[string]any{"include_usage": 1}}, 400, "stream_options.include_usage", "include_usage"},
		{"messages that are a string", "POST", chat, map[string]any{"messages": "hi"}, 400, "messages", "messages"},
		{"no messages", "POST", chat, map[string]any{"messages": []any{}}, 400, "messages", "messages"},
		{"an unknown role", "POST", chat, map[string]any{"messages": []map[string]any{{"role": "wizard", "content": "hi"}}}, 400, "messages[0].role", "wizard"},
		{"content that is a number", "POST", chat, map[string]any{"messages": []map[string]any{{"role": "user", "content": 5}}}, 400, "messages[0].content", "content"},
		{"an image part", "POST", chat, map[string]any{"messages": []map[string]any{{"role": "user", "content": []map[string]any{{"type": "image_url", "image_url": map[string]any{"url": "x"}}}}}}, 400, "messages[0].content[0]", "text parts"},
		{"temperature above 2", "POST", chat, map[string]any{"messages": user, "temperature": 2.5}, 400, "temperature", "temperature"},
		{"negative temperature", "POST", chat, map[string]any{"messages": user, "temperature": -0.1}, 400, "temperature", "temperature"},
		{"top_p of 0", "POST", chat, map[string]any{"messages": user, "top_p": 0}, 400, "top_p", "top_p"},
		{"top_k of -2", "POST", chat, map[string]any{"messages": user, "top_k": -2}, 400, "top_k", "top_k"},
		{"min_p above 1", "POST", chat, map[string]any{"messages": user, "min_p": 1.5}, 400, "min_p", "min_p"},
		{"negative max_tokens", "POST", chat, map[string]any{"messages": user, "max_tokens": -1}, 400, "max_tokens", "max_tokens"},
		{"max_tokens 0 in chat", "POST", chat, map[string]any{"messages": user, "max_tokens": 0}, 400, "max_tokens", "at least 1"},
		{"negative max_completion_tokens", "POST", chat, map[string]any{"messages": user, "max_completion_tokens": -5}, 400, "max_completion_tokens", "max_completion_tokens"},
		{"min_tokens above max_tokens", "POST", chat, map[string]any{"messages": user, "max_tokens": 2, "min_tokens": 5}, 400, "min_tokens", "min_tokens"},
		{"n of 2", "POST", chat, map[string]any{"messages": user, "n": 2}, 400, "n", "n > 1 is not supported"},
		{"five stop strings", "POST", chat, map[string]any{"messages": user, "stop": []string{"a", "b", "c", "d", "e"}}, 400, "stop", "at most 4"},
		{"an empty stop string", "POST", chat, map[string]any{"messages": user, "stop": []string{""}}, 400, "stop", "empty"},
		{"a stop that is a number", "POST", chat, map[string]any{"messages": user, "stop": 3}, 400, "stop", "stop"},
		{"top_logprobs above 20", "POST", chat, map[string]any{"messages": user, "logprobs": true, "top_logprobs": 21}, 400, "top_logprobs", "top_logprobs"},
		{"top_logprobs without logprobs", "POST", chat, map[string]any{"messages": user, "top_logprobs": 2}, 400, "top_logprobs", "logprobs"},
		{"an unknown tool_choice", "POST", chat, map[string]any{"messages": user, "tool_choice": "always"}, 400, "tool_choice", "tool_choice"},
		{"a tool without a name", "POST", chat, map[string]any{"messages": user, "tools": []map[string]any{{"type": "function", "function": map[string]any{}}}}, 400, "tools[0].function.name", "name"},
		{"a chat prompt longer than the context", "POST", chat, map[string]any{"messages": []map[string]any{{"role": "user", "content": long}}}, 400, "", "maximum context length"},
		{"max_tokens past the context", "POST", chat, map[string]any{"messages": user, "max_tokens": 600}, 400, "", "maximum context length"},
		{"an unknown model", "POST", chat, map[string]any{"model": "gpt-9", "messages": user}, 404, "", "The model `gpt-9` does not exist."},
		{"a completions prompt longer than the context", "POST", cmpl, map[string]any{"prompt": long}, 400, "", "maximum context length"},
		{"max_tokens 0 without echo", "POST", cmpl, map[string]any{"prompt": "hi", "max_tokens": 0}, 400, "max_tokens", "echo"},
		{"no prompt", "POST", cmpl, map[string]any{"max_tokens": 1}, 400, "prompt", "prompt"},
		{"an empty prompt", "POST", cmpl, map[string]any{"prompt": ""}, 400, "prompt", "empty"},
		{"an empty list prompt", "POST", cmpl, map[string]any{"prompt": []int{}}, 400, "prompt", "empty"},
		{"a prompt mixing ids and text", "POST", cmpl, map[string]any{"prompt": []any{1, "a"}}, 400, "prompt", "prompt"},
		{"a prompt id past the vocabulary", "POST", cmpl, map[string]any{"prompt": []int{1, 100000}}, 400, "prompt", "vocabulary"},
		{"a negative prompt id", "POST", cmpl, map[string]any{"prompt": []int{-1}}, 400, "prompt", "vocabulary"},
		{"a prompt that is an object", "POST", cmpl, map[string]any{"prompt": map[string]any{"a": 1}}, 400, "prompt", "prompt"},
		{"a batch of prompts", "POST", cmpl, map[string]any{"prompt": []string{"a", "b"}}, 400, "prompt", "batch"},
		{"logprobs above 20", "POST", cmpl, map[string]any{"prompt": "hi", "logprobs": 21}, 400, "logprobs", "logprobs"},
		{"logprobs that are a boolean", "POST", cmpl, map[string]any{"prompt": "hi", "logprobs": true}, 400, "logprobs", "logprobs"},
		{"best_of of 2", "POST", cmpl, map[string]any{"prompt": "hi", "best_of": 2}, 400, "best_of", "best_of"},
		{"n of 3 in completions", "POST", cmpl, map[string]any{"prompt": "hi", "n": 3}, 400, "n", "n > 1 is not supported"},
		{"an unknown route", "POST", "/v1/embeddings", map[string]any{"input": "hi"}, 404, "", "not found"},
		{"an unknown GET route", "GET", "/nope", nil, 404, "", "not found"},
		{"an unknown model by id", "GET", "/v1/models/gpt-9", nil, 404, "", "does not exist"},
		{"GET on a POST route", "GET", chat, nil, 405, "", "POST"},
		{"POST on a GET route", "POST", "/health", "{}", 405, "", "GET"},
		{"a body over 4 MiB", "POST", chat, bytes.Repeat([]byte(" "), DefaultMaxBodyBytes+1), 413, "", "larger than"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, h, b := e.do(context.Background(), tc.method, tc.path, tc.body)
			if code != tc.status {
				t.Fatalf("status %d, want %d: %s", code, tc.status, b)
			}
			if ct := h.Get("Content-Type"); ct != "application/json" {
				t.Errorf("Content-Type %q, want application/json", ct)
			}
			eb := decode[apiErrorBody](t, b)
			if eb.Error == nil || eb.Error.Code != tc.status || eb.Error.Type == "" || eb.Error.Message == "" {
				t.Fatalf("body %s: want {\"error\": {message, type, code: %d}}", b, tc.status)
			}
			if !strings.Contains(eb.Error.Message, tc.msg) {
				t.Errorf("message %q does not say %q", eb.Error.Message, tc.msg)
			}
			if tc.param != "" && (eb.Error.Param == nil || *eb.Error.Param != tc.param) {
				t.Errorf("param %v, want %q", eb.Error.Param, tc.param)
			}
			if tc.status == 405 && h.Get("Allow") == "" {
				t.Error("405 without an Allow header")
			}
			// Whatever came before, the next request is served.
			r := e.chat(chatBody("still there?", map[string]any{"max_tokens": 1}))
			if r.Usage.CompletionTokens != 1 {
				t.Errorf("the next request got %d tokens", r.Usage.CompletionTokens)
			}
		})
	}
}

func TestUnknownFieldsAndNullsAreIgnored(t *testing.T) {
	e := newEnv(t, envConfig{})
	body := chatBody("hi", map[string]any{"max_tokens": 2, "frequency_penalty": 0.5, "foo": map[string]any{"bar": 1},
		"temperature": nil, "stop": nil, "n": 1, "user": "u1", "stream_options": nil})
	if r := e.chat(body); r.Usage.CompletionTokens == 0 {
		t.Error("no tokens")
	}
	// The model field may be left out, as SGLang's default allows.
	delete(body, "model")
	e.chat(body)
}

func TestAPanickingHandlerAnswers500AndTheProcessLives(t *testing.T) {
	e := newEnv(t, envConfig{})
	h := e.srv.recoverer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { panic("boom") }))
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/", nil))
	eb := decode[apiErrorBody](t, rec.Body.Bytes())
	if rec.Code != 500 || eb.Error == nil || eb.Error.Code != 500 {
		t.Errorf("status %d body %s, want a 500 OpenAI error", rec.Code, rec.Body)
	}
	// A panic after the response began leaves the response alone.
	h = e.srv.recoverer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusAccepted)
		panic("late")
	}))
	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/", nil))
	if rec.Code != http.StatusAccepted || rec.Body.Len() != 0 {
		t.Errorf("status %d body %q after a late panic", rec.Code, rec.Body)
	}
}
