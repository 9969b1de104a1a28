package endpointstest

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
)

// The trtllm personality against trtllm-serve's source (trtllm.go names
// the files): what glmbench sends is accepted, an unknown field is
// refused in pydantic's words, and its routes, limits and streams are the
// server's.

// Every field glmbench's endpoints.ChatRequest and CompletionRequest write
// is a field of trtllm-serve's request models (max_tokens is chat's alias
// of max_completion_tokens), so a first run is answered; a field outside
// them is pydantic's extra_forbidden, a 400 {"error": "[...]"} that names
// it and quotes its value as Python's repr does.
func TestTRTLLMAcceptsGlmbenchsFieldsAndForbidsAnyOther(t *testing.T) {
	p := Start(t, TRTLLM, Options{})
	yes := true
	for _, tc := range []struct {
		name, path string
		body       map[string]any
	}{
		{"chat with max_tokens", "/chat/completions", chatBody(p.Opts.Model, "hi", 4, "stream", true, "stream_options", map[string]any{"include_usage": true}, "temperature", 0, "ignore_eos", yes)},
		{"chat with max_completion_tokens", "/chat/completions", map[string]any{"model": p.Opts.Model, "messages": []any{map[string]any{"role": "user", "content": "hi"}},
			"max_completion_tokens": 4, "stream": false, "temperature": 0, "ignore_eos": yes}},
		{"completions", "/completions", map[string]any{"model": p.Opts.Model, "prompt": "hi", "max_tokens": 4, "stream": true,
			"stream_options": map[string]any{"include_usage": true}, "temperature": 0, "ignore_eos": yes}},
	} {
		if r := post(t, p.BaseURL()+tc.path, tc.body); r.status != 200 {
			t.Errorf("%s: %d %s", tc.name, r.status, r.body)
		}
	}
	for _, path := range []string{"/chat/completions", "/completions"} {
		body := chatBody(p.Opts.Model, "hi", 4, "top_k_typo", 40, "return_tokens_as_token_ids", true)
		if path == "/completions" {
			delete(body, "messages")
			body["prompt"] = "hi"
		}
		r := post(t, p.BaseURL()+path, body)
		want := "[{'type': 'extra_forbidden', 'loc': ('body', 'return_tokens_as_token_ids'), 'msg': 'Extra inputs are not permitted', 'input': True}, " +
			"{'type': 'extra_forbidden', 'loc': ('body', 'top_k_typo'), 'msg': 'Extra inputs are not permitted', 'input': 40}]"
		if got, _ := r.json(t)["error"].(string); r.status != 400 || got != want {
			t.Errorf("%s: %d %s; want 400 {\"error\": %q}", path, r.status, r.body, want)
		}
	}
}

// Builds before 2026 answer the same refusal as an ErrorResponse whose
// message is pydantic's list (NVIDIA/TensorRT-LLM#9709, 1.2.0rc4), and
// refuse n > 1 on the PyTorch backend; later ones serve n.
func TestTRTLLMBefore2026RefusesInItsErrorResponseAndRefusesN(t *testing.T) {
	p := Start(t, TRTLLM, Options{TRTLLM: TRTLLMOptions{Before2026: true}})
	r := post(t, p.BaseURL()+"/chat/completions", chatBody(p.Opts.Model, "hi", 4, "guided_json", map[string]any{"type": "object"}))
	v := r.json(t)
	if r.status != 400 || v["object"] != "error" || v["type"] != "BadRequestError" ||
		v["message"] != "[{'type': 'extra_forbidden', 'loc': ('body', 'guided_json'), 'msg': 'Extra inputs are not permitted', 'input': {'type': 'object'}}]" {
		t.Errorf("extra field: %d %s", r.status, r.body)
	}
	r = post(t, p.BaseURL()+"/chat/completions", chatBody(p.Opts.Model, "hi", 4, "n", 2))
	if v := r.json(t); r.status != 400 || v["message"] != "Multiple response is not supported in PyTorch workflow" {
		t.Errorf("n 2: %d %s", r.status, r.body)
	}
	q := Start(t, TRTLLM, Options{})
	r = post(t, q.BaseURL()+"/chat/completions", chatBody(q.Opts.Model, "hi", 4, "n", 2))
	if cs, _ := r.json(t)["choices"].([]any); r.status != 200 || len(cs) != 2 {
		t.Errorf("n 2, 2026: %d %s", r.status, r.body)
	}
}

// stream_options on an answer that is not streamed is refused by a
// before-validator: one value_error naming the rule, on either route.
func TestTRTLLMRefusesStreamOptionsWithoutStream(t *testing.T) {
	p := Start(t, TRTLLM, Options{})
	r := post(t, p.BaseURL()+"/chat/completions", chatBody(p.Opts.Model, "hi", 4, "stream_options", map[string]any{"include_usage": true}))
	got, _ := r.json(t)["error"].(string)
	if r.status != 400 || !strings.HasPrefix(got, "[{'type': 'value_error', 'loc': ('body',), 'msg': 'Value error, stream_options can only be set if stream is true', 'input': {") {
		t.Errorf("chat: %d %s", r.status, r.body)
	}
	r = post(t, p.BaseURL()+"/completions", map[string]any{"model": p.Opts.Model, "prompt": "hi", "stream_options": map[string]any{"include_usage": true}})
	if got, _ := r.json(t)["error"].(string); r.status != 400 || !strings.Contains(got, "'Value error, Stream options can only be defined when stream is true.'") {
		t.Errorf("completions: %d %s", r.status, r.body)
	}
}

// GET /v1/models is one card owned by "tensorrt_llm" with no context
// length; /health is 200 with no body; /metrics is a JSON list (empty
// without iteration stats, one entry per GET with them), not Prometheus
// text; /prometheus/metrics is served only with return_perf_metrics, in
// the trtllm_ names; a route it lacks is FastAPI's 404.
func TestTRTLLMServesItsOwnRoutes(t *testing.T) {
	p := Start(t, TRTLLM, Options{})
	m := get(t, p.BaseURL()+"/models").json(t)
	card, _ := m["data"].([]any)[0].(map[string]any)
	if card["owned_by"] != "tensorrt_llm" || card["id"] != p.Opts.Model || card["max_model_len"] != nil {
		t.Errorf("/v1/models %v", m)
	}
	if r := get(t, p.URL+"/health"); r.status != 200 || len(r.body) != 0 {
		t.Errorf("/health %d %q", r.status, r.body)
	}
	if r := get(t, p.URL+"/metrics"); r.status != 200 || string(r.body) != "[]" || r.header.Get("Content-Type") != "application/json" {
		t.Errorf("/metrics %d %q %s", r.status, r.body, r.header.Get("Content-Type"))
	}
	for _, path := range []string{"/prometheus/metrics", "/tokenize", "/get_server_info", "/props", "/info"} {
		if r := get(t, p.URL+path); r.status != 404 || string(r.body) != `{"detail":"Not Found"}` {
			t.Errorf("%s %d %s", path, r.status, r.body)
		}
	}
	q := Start(t, TRTLLM, Options{TRTLLM: TRTLLMOptions{IterStats: true, PerfMetrics: true}})
	post(t, q.BaseURL()+"/chat/completions", chatBody(q.Opts.Model, "hi", 5))
	if r := get(t, q.URL+"/metrics"); r.status != 200 || !bytes.HasPrefix(r.body, []byte(`[{"cpuMemUsage"`)) || !bytes.Contains(r.body, []byte(`"numCompletedRequests":1`)) {
		t.Errorf("/metrics with iteration stats: %s", r.body)
	}
	if r := get(t, q.URL+"/prometheus/metrics"); r.status != 200 || !bytes.Contains(r.body, []byte("\ntrtllm_generation_tokens_total{engine_type=\"undefined\",model_name=\"undefined\"} 5\n")) {
		t.Errorf("/prometheus/metrics: %d %s", r.status, r.body)
	}
}

// A prompt past --max_num_tokens is refused by generate_async before any
// answer, a flat ErrorResponse 400 whether streamed or not; a prompt that
// leaves max_seq_len no room is refused by the worker: whole, the same
// 400; streamed, after the 200, by a dropped connection (the chunked body
// never ends). A max_tokens past what the prompt leaves is cut to it.
func TestTRTLLMHoldsPromptsToMaxNumTokensAndCutsOutputToMaxSeqLen(t *testing.T) {
	p := Start(t, TRTLLM, Options{Context: 4096, TRTLLM: TRTLLMOptions{MaxNumTokens: 2048}})
	long := filler(3000)
	for _, stream := range []bool{false, true} {
		r := post(t, p.BaseURL()+"/chat/completions", chatBody(p.Opts.Model, long, 4, "stream", stream))
		v := r.json(t)
		if r.status != 400 || v["object"] != "error" || v["type"] != "BadRequestError" || num(v["code"]) != 400 ||
			v["message"] != "The sum of prompt length (3007.0), query length (0) should not exceed max_num_tokens (2048)" {
			t.Errorf("stream %v: %d %s", stream, r.status, r.body)
		}
	}

	q := Start(t, TRTLLM, Options{Context: 2048, TRTLLM: TRTLLMOptions{MaxNumTokens: 8192}})
	r := post(t, q.BaseURL()+"/chat/completions", chatBody(q.Opts.Model, long, 4))
	if v := r.json(t); r.status != 400 || !strings.HasPrefix(v["message"].(string), "`default_max_tokens` (-959) must be greater than 0, `default_max_tokens` (-959) = max_seq_len (2048) - `splited_prompt_len` (3007)") {
		t.Errorf("whole: %d %s", r.status, r.body)
	}
	b, _ := json.Marshal(chatBody(q.Opts.Model, long, 4, "stream", true))
	resp, err := http.Post(q.BaseURL()+"/chat/completions", "application/json", bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || len(got) != 0 || !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("stream: %d, %q, read error %v; want 200, nothing, then an unexpected EOF", resp.StatusCode, got, err)
	}

	short := filler(1000)
	P := ChatPromptTokens([]string{short})
	r = post(t, q.BaseURL()+"/chat/completions", chatBody(q.Opts.Model, short, 4000))
	u, _ := r.json(t)["usage"].(map[string]any)
	if r.status != 200 || num(u["completion_tokens"]) != float64(2048-P) || choice0(r.json(t))["finish_reason"] != "length" {
		t.Errorf("max_tokens 4000 after %d prompt tokens: %d %s; want %d tokens, length", P, r.status, r.body, 2048-P)
	}
}

// A chat stream opens with {"role": "assistant"} on a line with a space
// before its blank line, each delta carries reasoning_content "", the
// finish reason rides on the last token's chunk, and usage comes in a
// chunk of its own with choices [] only where stream_options is given
// (include_usage defaulting to true); a completions chunk writes every
// field, "usage": null included. [DONE] ends both.
func TestTRTLLMStreamsInItsOwnShape(t *testing.T) {
	p := Start(t, TRTLLM, Options{})
	r := post(t, p.BaseURL()+"/chat/completions", chatBody(p.Opts.Model, "hi", 3, "stream", true, "stream_options", map[string]any{}))
	if !bytes.HasPrefix(r.body, []byte("data: {")) || !bytes.Contains(r.body, []byte(`"delta":{"role":"assistant"}`)) || !bytes.Contains(r.body, []byte("} \n\ndata: ")) {
		t.Errorf("role chunk: %.300s", r.body)
	}
	s := readStream(t, r.body)
	if !s.done || len(s.events) != 5 {
		t.Fatalf("%d events, done %v: %s", len(s.events), s.done, r.body)
	}
	last := choice0(s.events[3])
	if d, _ := last["delta"].(map[string]any); d["reasoning_content"] != "" || last["finish_reason"] != "length" {
		t.Errorf("last token chunk %v", s.events[3])
	}
	if _, ok := choice0(s.events[1])["finish_reason"]; ok {
		t.Errorf("a chunk before the last has a finish_reason key: %v", s.events[1])
	}
	if u, _ := s.events[4]["usage"].(map[string]any); len(s.events[4]["choices"].([]any)) != 0 || num(u["completion_tokens"]) != 3 {
		t.Errorf("usage chunk %v", s.events[4])
	}
	r = post(t, p.BaseURL()+"/chat/completions", chatBody(p.Opts.Model, "hi", 3, "stream", true))
	if s := readStream(t, r.body); len(s.events) != 4 || bytes.Contains(r.body, []byte(`"usage"`)) {
		t.Errorf("without stream_options: %s", r.body)
	}
	r = post(t, p.BaseURL()+"/completions", map[string]any{"model": p.Opts.Model, "prompt": "hi", "max_tokens": 2, "stream": true})
	s = readStream(t, r.body)
	if u, ok := s.events[0]["usage"]; len(s.events) != 2 || !ok || u != nil || !s.done {
		t.Errorf("completions stream: %s", r.body)
	}
}

// echo prepends the prompt's text to a completion, but its logprobs are
// the generated tokens' alone: there are no prompt logprobs to score.
func TestTRTLLMEchoesThePromptWithoutItsLogprobs(t *testing.T) {
	p := Start(t, TRTLLM, Options{})
	prompt := "The capital of France is"
	r := post(t, p.BaseURL()+"/completions", map[string]any{"model": p.Opts.Model, "prompt": prompt, "echo": true, "logprobs": 1, "max_tokens": 2, "temperature": 0})
	c := choice0(r.json(t))
	lp, _ := c["logprobs"].(map[string]any)
	text, _ := c["text"].(string)
	if r.status != 200 || !strings.HasPrefix(text, prompt) || len(text) == len(prompt) || len(lp["token_logprobs"].([]any)) != 2 {
		t.Errorf("%d %s", r.status, r.body)
	}
}
