package endpointstest

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"math"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

// These tests check each personality against the documented behaviour of
// the server it stands for (docs/SERVERS.md names the sources), with plain
// net/http so they depend on no harness package.

type reply struct {
	status int
	header http.Header
	body   []byte
}

func (r reply) json(t *testing.T) map[string]any {
	t.Helper()
	var v map[string]any
	if err := json.Unmarshal(r.body, &v); err != nil {
		t.Fatalf("body is not a JSON object: %v: %s", err, r.body)
	}
	return v
}

func do(t *testing.T, method, url string, body any, header ...string) reply {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			t.Fatal(err)
		}
		if s, ok := body.(string); ok {
			b = []byte(s)
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, url, rd)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return reply{resp.StatusCode, resp.Header, b}
}

func post(t *testing.T, url string, body any, header ...string) reply {
	t.Helper()
	return do(t, http.MethodPost, url, body, header...)
}

func get(t *testing.T, url string) reply {
	t.Helper()
	return do(t, http.MethodGet, url, nil)
}

// stream is an SSE answer read apart: its data events, comments and whether
// it ended with [DONE] (and nothing after).
type stream struct {
	events   []map[string]any
	comments []string
	done     bool
}

func readStream(t *testing.T, b []byte) stream {
	t.Helper()
	var s stream
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(nil, 1<<24)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
		case strings.HasPrefix(line, ":"):
			s.comments = append(s.comments, line)
		case line == "data: [DONE]":
			if s.done {
				t.Fatal("two [DONE]")
			}
			s.done = true
		case strings.HasPrefix(line, "data: "):
			if s.done {
				t.Fatalf("data after [DONE]: %s", line)
			}
			var v map[string]any
			if err := json.Unmarshal([]byte(line[6:]), &v); err != nil {
				t.Fatalf("bad event %q: %v", line, err)
			}
			s.events = append(s.events, v)
		default:
			t.Fatalf("unexpected line %q", line)
		}
	}
	return s
}

func choice0(ev map[string]any) map[string]any {
	cs, _ := ev["choices"].([]any)
	if len(cs) == 0 {
		return nil
	}
	c, _ := cs[0].(map[string]any)
	return c
}

func chatBody(model, content string, maxTokens int, extra ...any) map[string]any {
	b := map[string]any{"model": model, "messages": []any{map[string]any{"role": "user", "content": content}}, "max_tokens": maxTokens}
	for i := 0; i+1 < len(extra); i += 2 {
		b[extra[i].(string)] = extra[i+1]
	}
	return b
}

func num(v any) float64 { f, _ := v.(float64); return f }

func errMessage(t *testing.T, r reply) string {
	t.Helper()
	v := r.json(t)
	if e, ok := v["error"].(map[string]any); ok {
		return e["message"].(string)
	}
	if m, ok := v["message"].(string); ok {
		return m
	}
	t.Fatalf("no error message in %s", r.body)
	return ""
}

func TestEachPersonalityListsItsModelAsItsServerDoes(t *testing.T) {
	for _, tc := range []struct {
		name, ownedBy string
		maxModelLen   bool
	}{
		{LlamaCpp, "llamacpp", false}, {VLLM, "vllm", true}, {SGLang, "sglang", true}, {OpenAI, "system", false}, {Gateway, "gateway", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := Start(t, tc.name, Options{Context: 8192})
			r := get(t, p.BaseURL()+"/models")
			if r.status != 200 {
				t.Fatalf("status %d", r.status)
			}
			v := r.json(t)
			if v["object"] != "list" {
				t.Errorf("object %v", v["object"])
			}
			d := v["data"].([]any)[0].(map[string]any)
			if d["id"] != p.Opts.Model || d["owned_by"] != tc.ownedBy {
				t.Errorf("card %v", d)
			}
			_, has := d["max_model_len"]
			if has != tc.maxModelLen || has && num(d["max_model_len"]) != 8192 {
				t.Errorf("max_model_len %v (present %v), want present %v = 8192", d["max_model_len"], has, tc.maxModelLen)
			}
			if tc.name == LlamaCpp {
				// meta.n_ctx_train is the model's, not the slot's: a pre-flight must read /props.
				meta := d["meta"].(map[string]any)
				if num(meta["n_ctx_train"]) == 8192 {
					t.Error("n_ctx_train should not be the slot context")
				}
				if _, ok := v["models"]; !ok {
					t.Error("no Ollama-style models[]")
				}
			}
		})
	}
}

func TestServersStateTheirContextWhereTheirSourcesSay(t *testing.T) {
	t.Run("llama.cpp /props gives the context per slot", func(t *testing.T) {
		p := Start(t, LlamaCpp, Options{Context: 4096, Slots: 16})
		v := get(t, p.URL+"/props").json(t)
		dgs := v["default_generation_settings"].(map[string]any)
		if num(dgs["n_ctx"]) != 4096 || num(v["total_slots"]) != 16 {
			t.Fatalf("props %v", v)
		}
	})
	t.Run("SGLang /get_server_info has context_length null without --context-length", func(t *testing.T) {
		p := Start(t, SGLang, Options{Context: 4096})
		v := get(t, p.URL+"/get_server_info").json(t)
		if c, ok := v["context_length"]; !ok || c != nil {
			t.Fatalf("context_length %v", c)
		}
	})
	t.Run("SGLang /get_server_info has context_length with --context-length, and the API key unredacted", func(t *testing.T) {
		p := Start(t, SGLang, Options{Context: 4096, SGLangContextArg: true, APIKey: "sk-sglang-secret"})
		r := do(t, http.MethodGet, p.URL+"/get_server_info", nil, "Authorization", "Bearer sk-sglang-secret")
		v := r.json(t)
		if num(v["context_length"]) != 4096 || v["api_key"] != "sk-sglang-secret" {
			t.Fatalf("server info %v", v)
		}
	})
	t.Run("SGLang answers both /server_info and its deprecated alias; a build without the aliases only the new name", func(t *testing.T) {
		for _, without := range []bool{false, true} {
			p := Start(t, SGLang, Options{Context: 4096, SGLangContextArg: true, SGLangWithoutAliases: without})
			if v := get(t, p.URL+"/server_info").json(t); num(v["context_length"]) != 4096 {
				t.Fatalf("without aliases %v: /server_info %v", without, v)
			}
			r := get(t, p.URL+"/get_server_info")
			if without && (r.status != 404 || string(r.body) != `{"detail":"Not Found"}`) || !without && (r.status != 200 || num(r.json(t)["context_length"]) != 4096) {
				t.Fatalf("without aliases %v: /get_server_info %d %s", without, r.status, r.body)
			}
		}
	})
	t.Run("vLLM and OpenAI have no such route", func(t *testing.T) {
		if r := get(t, Start(t, VLLM, Options{}).URL+"/get_server_info"); r.status != 404 || string(r.body) != `{"detail":"Not Found"}` {
			t.Fatalf("vLLM: %d %s", r.status, r.body)
		}
		if r := get(t, Start(t, OpenAI, Options{}).URL+"/props"); r.status != 404 || errMessage(t, r) != "Invalid URL (GET /props)" {
			t.Fatalf("OpenAI: %d %s", r.status, r.body)
		}
	})
	t.Run("llama.cpp answers an unknown route with its not_found_error JSON", func(t *testing.T) {
		r := get(t, Start(t, LlamaCpp, Options{}).URL+"/get_server_info")
		if r.status != 404 || string(r.body) != `{"error":{"code":404,"message":"File Not Found","type":"not_found_error"}}` {
			t.Fatalf("llama.cpp: %d %s", r.status, r.body)
		}
	})
}

func TestVLLMRefusesMoreTopLogprobsThanItsMaxInItsOwnWords(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts Options
		msg  string
	}{
		{"0.18+: VLLMValidationError's suffix", Options{}, "Requested sample logprobs of 21, which is greater than max allowed: 20 (parameter=logprobs, value=21)"},
		{"before 0.18", Options{VLLMBefore018: true}, "Requested sample logprobs of 21, which is greater than max allowed: 20"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := Start(t, VLLM, tc.opts)
			r := post(t, p.BaseURL()+"/chat/completions", chatBody(p.Opts.Model, "hi", 1, "logprobs", true, "top_logprobs", 21))
			if r.status != 400 || errMessage(t, r) != tc.msg {
				t.Fatalf("%d %s", r.status, r.body)
			}
		})
	}
}

func TestHealthAndMetricsAnswerAsEachServerDoes(t *testing.T) {
	for _, tc := range []struct {
		name           string
		opts           Options
		health         int
		healthBody     string
		metrics        int
		metricsContain string
	}{
		{LlamaCpp, Options{}, 200, `{"status":"ok"}`, 501, "Start it with `--metrics`"},
		{LlamaCpp, Options{Metrics: true}, 200, `{"status":"ok"}`, 200, "llamacpp:requests_processing"},
		{VLLM, Options{}, 200, "", 200, "vllm:num_requests_running"},
		{SGLang, Options{}, 200, "", 404, `{"detail":"Not Found"}`},
		{SGLang, Options{Metrics: true}, 200, "", 200, "sglang:num_running_reqs"},
		{OpenAI, Options{}, 404, "", 404, "Invalid URL (GET /metrics)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := Start(t, tc.name, tc.opts)
			h := get(t, p.URL+"/health")
			if h.status != tc.health || tc.health == 200 && string(h.body) != tc.healthBody {
				t.Errorf("health %d %q", h.status, h.body)
			}
			m := get(t, p.URL+"/metrics")
			if m.status != tc.metrics || !strings.Contains(string(m.body), tc.metricsContain) {
				t.Errorf("metrics %d %q", m.status, m.body)
			}
		})
	}
}

func TestStreamsHaveEachServersShape(t *testing.T) {
	for _, tc := range []struct {
		name        string
		opts        Options
		ignoreEOS   bool
		role        any // the role chunk's content: "" , nil (JSON null), or "none" for no role chunk
		usageOnFin  bool
		usageApart  bool
		withoutIncl bool // usage even without include_usage
	}{
		{"llama.cpp as issue 12 saw it", Options{}, true, "none", true, false, true},
		{"llama.cpp b6097", Options{LlamaRoleChunk: true}, true, nil, true, false, true},
		{"llama.cpp b6497+", Options{LlamaRoleChunk: true, LlamaUsageChunk: true}, true, nil, false, true, true},
		{VLLM, Options{}, true, "", false, true, false},
		{SGLang, Options{}, true, "", false, true, false},
		{OpenAI, Options{}, false, "", false, true, false},
		{Gateway, Options{}, true, "", false, true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			kind := tc.name
			if strings.HasPrefix(kind, "llama.cpp") {
				kind = LlamaCpp
			}
			p := Start(t, kind, tc.opts)
			for _, incl := range []bool{true, false} {
				body := chatBody(p.Opts.Model, "Tell me a story.", 7, "stream", true)
				if incl {
					body["stream_options"] = map[string]any{"include_usage": true}
				}
				if tc.ignoreEOS {
					body["ignore_eos"] = true
				}
				r := post(t, p.BaseURL()+"/chat/completions", body)
				if r.status != 200 || !strings.HasPrefix(r.header.Get("Content-Type"), "text/event-stream") {
					t.Fatalf("status %d %s", r.status, r.body)
				}
				s := readStream(t, r.body)
				if !s.done {
					t.Fatal("no [DONE]")
				}
				first := choice0(s.events[0])
				delta, _ := first["delta"].(map[string]any)
				_, hasRole := delta["role"]
				switch {
				case tc.role == "none" && hasRole, tc.role != "none" && !hasRole:
					t.Fatalf("first delta %v, want role chunk %v", delta, tc.role)
				case hasRole && delta["content"] != tc.role:
					t.Fatalf("role chunk content %#v, want %#v", delta["content"], tc.role)
				}
				content, finishes := 0, 0
				var finUsage, apartUsage map[string]any
				for _, ev := range s.events {
					c := choice0(ev)
					if c == nil {
						if cs := ev["choices"].([]any); len(cs) != 0 {
							t.Fatal("odd chunk")
						}
						apartUsage, _ = ev["usage"].(map[string]any)
						continue
					}
					if d, _ := c["delta"].(map[string]any); d["content"] != nil && d["content"] != "" {
						content++
					}
					if c["finish_reason"] != nil {
						finishes++
						if c["finish_reason"] != "length" {
							t.Errorf("finish_reason %v", c["finish_reason"])
						}
						finUsage, _ = ev["usage"].(map[string]any)
					}
				}
				if content != 7 || finishes != 1 {
					t.Errorf("%d content chunks, %d finishes; want 7 and 1", content, finishes)
				}
				want := incl || tc.withoutIncl
				if (finUsage != nil) != (want && tc.usageOnFin) || (apartUsage != nil) != (want && tc.usageApart) {
					t.Errorf("include_usage %v: usage on finish %v, apart %v", incl, finUsage, apartUsage)
				}
				if u := finUsage; u == nil {
					u = apartUsage
					if u != nil && (num(u["completion_tokens"]) != 7 || num(u["prompt_tokens"]) != float64(ChatPromptTokens([]string{"Tell me a story."}))) {
						t.Errorf("usage %v", u)
					}
				}
			}
		})
	}
}

func TestOpenAIRefusesIgnoreEOSAsAnUnrecognizedArgument(t *testing.T) {
	p := Start(t, OpenAI, Options{})
	r := post(t, p.BaseURL()+"/chat/completions", chatBody(p.Opts.Model, "hi", 4, "ignore_eos", true, "stream", true))
	want := `{"error":{"code":null,"message":"Unrecognized request argument supplied: ignore_eos","param":null,"type":"invalid_request_error"}}`
	if r.status != 400 || string(r.body) != want {
		t.Fatalf("%d %s", r.status, r.body)
	}
	r = post(t, p.BaseURL()+"/chat/completions", chatBody(p.Opts.Model, "hi", 4, "ignore_eos", true, "min_tokens", 2))
	if r.status != 400 || errMessage(t, r) != "Unrecognized request arguments supplied: ignore_eos, min_tokens" {
		t.Fatalf("%d %s", r.status, r.body)
	}
	for _, name := range []string{LlamaCpp, VLLM, SGLang, Gateway} {
		q := Start(t, name, Options{})
		if r := post(t, q.BaseURL()+"/chat/completions", chatBody(q.Opts.Model, "hi", 4, "ignore_eos", true)); r.status != 200 {
			t.Errorf("%s refuses ignore_eos: %d %s", name, r.status, r.body)
		}
	}
}

// filler is a user message of about n tokens.
func filler(n int) string { return strings.Repeat("abcd", n) }

func TestAnOverlongPromptIsAnsweredAsEachServerWordsIt(t *testing.T) {
	const L = 4096
	prompt := filler(5000) // 5000 + 7 template tokens
	P := ChatPromptTokens([]string{prompt})
	for _, tc := range []struct {
		name   string
		kind   string
		opts   Options
		status int
		msg    string
		extra  map[string]any
	}{
		{"llama.cpp truncating", LlamaCpp, Options{Slots: 16}, 200, "", nil},
		{"llama.cpp b7062", LlamaCpp, Options{LlamaOverflow: LlamaReject}, 400, "the request exceeds the available context size, try increasing it",
			map[string]any{"type": "exceed_context_size_error", "n_prompt_tokens": float64(P), "n_ctx": float64(L), "code": float64(400)}},
		{"llama.cpp 2026", LlamaCpp, Options{LlamaOverflow: LlamaRejectCounts}, 400, "request (5007 tokens) exceeds the available context size (4096 tokens), try increasing it",
			map[string]any{"type": "exceed_context_size_error"}},
		// 0.18+: the prompt is tokenized to at most 4096 - 4 + 1 = 4093
		// tokens, so the count is that bound, not the prompt's 5007.
		{"vLLM", VLLM, Options{}, 400, "This model's maximum context length is 4096 tokens. However, you requested 4 output tokens and your prompt contains at least 4093 input tokens, for a total of at least 4097 tokens. Please reduce the length of the input prompt or the number of requested output tokens. (parameter=input_tokens, value=4093)",
			map[string]any{"type": "BadRequestError", "code": float64(400), "param": "input_tokens"}},
		{"vLLM 0.10.1 to 0.17", VLLM, Options{VLLMBefore018: true}, 400, "This model's maximum context length is 4096 tokens. However, your request has 5007 input tokens. Please reduce the length of the input messages.",
			map[string]any{"type": "BadRequestError", "code": float64(400)}},
		{"vLLM before 0.10.1", VLLM, Options{VLLMFlatErrors: true}, 400, "This model's maximum context length is 4096 tokens. However, you requested 5007 tokens in the messages, Please reduce the length of the messages.", nil},
		{"SGLang", SGLang, Options{}, 400, "The input (5007 tokens) is longer than the model's context length (4096 tokens).", map[string]any{"object": "error"}},
		{"OpenAI", OpenAI, Options{}, 400, "This model's maximum context length is 4096 tokens. However, your messages resulted in 5007 tokens. Please reduce the length of the messages.",
			map[string]any{"code": "context_length_exceeded", "param": "messages", "type": "invalid_request_error"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.opts.Context = L
			p := Start(t, tc.kind, tc.opts)
			r := post(t, p.BaseURL()+"/chat/completions", chatBody(p.Opts.Model, prompt, 4))
			if r.status != tc.status {
				t.Fatalf("status %d %s", r.status, r.body)
			}
			if tc.status == 200 {
				// Keep 0 tokens, drop (5007−2048)/2048 = 1 block of 2048: 2959.
				u := r.json(t)["usage"].(map[string]any)
				if got := num(u["prompt_tokens"]); got != 2959 {
					t.Fatalf("prompt_tokens %v, want 2959", got)
				}
				return
			}
			if got := errMessage(t, r); got != tc.msg {
				t.Fatalf("message %q\nwant      %q", got, tc.msg)
			}
			v := r.json(t)
			e, ok := v["error"].(map[string]any)
			if !ok {
				e = v
			}
			for k, want := range tc.extra {
				if e[k] != want {
					t.Errorf("%s = %#v, want %#v", k, e[k], want)
				}
			}
		})
	}
}

func TestLlamaCppTruncationMakesTheCountStopGrowing(t *testing.T) {
	// The curve calibration sees on a truncating llama.cpp (issue 12, item
	// 1): the count climbs to just under the slot's context, then falls back
	// by a block of n_ctx/2 and never reaches it, however long the filler.
	p := Start(t, LlamaCpp, Options{Context: 4096, Slots: 16})
	best := 0
	for _, n := range []int{1000, 4000, 4088, 4089, 5000, 8000, 16000, 64000} {
		r := post(t, p.BaseURL()+"/chat/completions", chatBody(p.Opts.Model, filler(n), 1))
		got := int(num(r.json(t)["usage"].(map[string]any)["prompt_tokens"]))
		if got >= 4096 || got < min(n+7, 2048) {
			t.Fatalf("filler %d: prompt_tokens %d", n, got)
		}
		best = max(best, got)
	}
	if best != 4095 {
		t.Fatalf("largest count %d, want 4095", best)
	}
	if got := p.MaxPromptTokens(); got != 64007 {
		t.Fatalf("MaxPromptTokens %d, want the untruncated 64007", got)
	}
}

func TestAHugeMaxTokensIsAnsweredAsEachServerDoes(t *testing.T) {
	const huge = 9223372036854775807
	for _, tc := range []struct {
		name, kind string
		opts       Options
		status     int
		msg        string
		completion float64
	}{
		{"vLLM", VLLM, Options{}, 400, "max_tokens=9223372036854775807 cannot be greater than max_model_len=max_total_tokens=4096. Please request fewer output tokens. (parameter=max_tokens, value=9223372036854775807)", 0},
		{"vLLM 0.10.1 to 0.17", VLLM, Options{VLLMBefore018: true}, 400, "'max_tokens' or 'max_completion_tokens' is too large: 9223372036854775807. This model's maximum context length is 4096 tokens and your request has 8 input tokens (9223372036854775807 > 4096 - 8).", 0},
		{"SGLang", SGLang, Options{}, 400, "Requested token count exceeds the model's maximum context length of 4096 tokens. You requested a total of 9223372036854775815 tokens: 8 tokens from the input messages and 9223372036854775807 tokens for the completion. Please reduce the number of tokens in the input messages or the completion to fit within the limit.", 0},
		{"OpenAI", OpenAI, Options{}, 400, "max_tokens is too large: 9223372036854775807. This model supports at most 16384 completion tokens, whereas you provided 9223372036854775807.", 0},
		{"llama.cpp stops at the slot's end", LlamaCpp, Options{Context: 64, LlamaOverflow: LlamaRejectCounts}, 200, "", 64 - 8},
		{"llama.cpp with context shift accepts it (the fake stops after a slot)", LlamaCpp, Options{Context: 64}, 200, "", 64},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := Start(t, tc.kind, tc.opts)
			r := post(t, p.BaseURL()+"/chat/completions", chatBody(p.Opts.Model, "hi", huge))
			if r.status != tc.status {
				t.Fatalf("status %d %s", r.status, r.body)
			}
			if tc.status == 200 {
				u := r.json(t)["usage"].(map[string]any)
				if num(u["completion_tokens"]) != tc.completion {
					t.Fatalf("usage %v", u)
				}
				return
			}
			if got := errMessage(t, r); got != tc.msg {
				t.Fatalf("message %q\nwant      %q", got, tc.msg)
			}
		})
	}
}

func TestCompletionsEchoIsServedOnlyWhereTheServerServesIt(t *testing.T) {
	echo := func(model string, prompt any, lp int) map[string]any {
		return map[string]any{"model": model, "prompt": prompt, "echo": true, "logprobs": lp, "max_tokens": 1, "temperature": 0}
	}
	text := "The capital of France is Paris."
	t.Run("vLLM gives prompt logprobs, the first null", func(t *testing.T) {
		p := Start(t, VLLM, Options{})
		v := post(t, p.BaseURL()+"/completions", echo(p.Opts.Model, text, 1)).json(t)
		c := choice0(v)
		lp := c["logprobs"].(map[string]any)
		toks, lps, offs := lp["tokens"].([]any), lp["token_logprobs"].([]any), lp["text_offset"].([]any)
		pt := int(num(v["usage"].(map[string]any)["prompt_tokens"]))
		if pt != Tokens(text) || len(toks) != pt+1 || len(lps) != pt+1 || lps[0] != nil || !strings.HasPrefix(c["text"].(string), text) {
			t.Fatalf("echo %v, usage %d", lp, pt)
		}
		for i := 1; i < len(lps); i++ {
			if f := num(lps[i]); f >= 0 || f <= -9999 || num(offs[i]) <= num(offs[i-1]) {
				t.Fatalf("position %d: logprob %v offset %v", i, lps[i], offs[i])
			}
		}
		// return_tokens_as_token_ids names the ids, and the ids read back as the same prompt.
		req := echo(p.Opts.Model, text, 1)
		req["return_tokens_as_token_ids"] = true
		tv := post(t, p.BaseURL()+"/completions", req).json(t)
		first := choice0(tv)["logprobs"].(map[string]any)["tokens"].([]any)[0].(string)
		if !strings.HasPrefix(first, "token_id:") {
			t.Fatalf("token %q", first)
		}
		ids := post(t, p.URL+"/tokenize", map[string]any{"model": p.Opts.Model, "prompt": text}).json(t)
		if int(num(ids["count"])) != pt {
			t.Fatalf("/tokenize count %v, echo %d", ids["count"], pt)
		}
		again := post(t, p.BaseURL()+"/completions", echo(p.Opts.Model, ids["tokens"], 1)).json(t)
		if num(again["usage"].(map[string]any)["prompt_tokens"]) != float64(pt) || !strings.HasPrefix(choice0(again)["text"].(string), text) {
			t.Fatalf("ids echo %v", again)
		}
	})
	t.Run("SGLang reads logprobs 0 as none", func(t *testing.T) {
		p := Start(t, SGLang, Options{})
		if c := choice0(post(t, p.BaseURL()+"/completions", echo(p.Opts.Model, text, 0)).json(t)); c["logprobs"] != nil {
			t.Fatalf("logprobs %v", c["logprobs"])
		}
		if c := choice0(post(t, p.BaseURL()+"/completions", echo(p.Opts.Model, text, 1)).json(t)); c["logprobs"] == nil {
			t.Fatal("no logprobs with logprobs 1")
		}
		if r := post(t, p.URL+"/tokenize", map[string]any{"prompt": text}); r.status != 404 {
			t.Fatalf("/tokenize %d", r.status)
		}
	})
	t.Run("llama.cpp answers echo with 500 and gives no logprobs without it", func(t *testing.T) {
		p := Start(t, LlamaCpp, Options{})
		r := post(t, p.BaseURL()+"/completions", echo(p.Opts.Model, text, 1))
		if r.status != 500 || string(r.body) != `{"error":{"code":500,"message":"Only no echo is supported","type":"server_error"}}` {
			t.Fatalf("%d %s", r.status, r.body)
		}
		plain := echo(p.Opts.Model, text, 1)
		delete(plain, "echo")
		if c := choice0(post(t, p.BaseURL()+"/completions", plain).json(t)); c["logprobs"] != nil || c["text"] == "" {
			t.Fatalf("choice %v", c)
		}
	})
	t.Run("OpenAI chat models are not served on the legacy route", func(t *testing.T) {
		p := Start(t, OpenAI, Options{})
		r := post(t, p.BaseURL()+"/completions", echo(p.Opts.Model, text, 1))
		if r.status != 404 || !strings.HasPrefix(errMessage(t, r), "This is a chat model and not supported in the v1/completions endpoint.") {
			t.Fatalf("%d %s", r.status, r.body)
		}
	})
	t.Run("the gateway is chat only", func(t *testing.T) {
		p := Start(t, Gateway, Options{})
		if r := post(t, p.BaseURL()+"/completions", echo(p.Opts.Model, text, 1)); r.status != 404 {
			t.Fatalf("%d %s", r.status, r.body)
		}
	})
}

func TestChatLogprobsAreServedWithTheGreedyTokenOnTop(t *testing.T) {
	for _, name := range []string{LlamaCpp, VLLM, SGLang, OpenAI} {
		t.Run(name, func(t *testing.T) {
			p := Start(t, name, Options{})
			v := post(t, p.BaseURL()+"/chat/completions", chatBody(p.Opts.Model, "Answer:", 5, "temperature", 0, "logprobs", true, "top_logprobs", 5)).json(t)
			c := choice0(v)
			content := c["logprobs"].(map[string]any)["content"].([]any)
			if len(content) != 5 {
				t.Fatalf("%d entries", len(content))
			}
			var text string
			for _, e := range content {
				e := e.(map[string]any)
				top := e["top_logprobs"].([]any)
				best := top[0].(map[string]any)
				if len(top) != 5 || best["token"] != e["token"] || best["logprob"] != e["logprob"] {
					t.Fatalf("entry %v", e)
				}
				for i := 1; i < len(top); i++ {
					if num(top[i].(map[string]any)["logprob"]) > num(top[i-1].(map[string]any)["logprob"]) {
						t.Fatal("top_logprobs not ordered")
					}
				}
				text += e["token"].(string)
			}
			if text != c["message"].(map[string]any)["content"] {
				t.Fatalf("tokens %q, content %q", text, c["message"])
			}
		})
	}
	p := Start(t, OpenAI, Options{})
	r := post(t, p.BaseURL()+"/chat/completions", chatBody(p.Opts.Model, "x", 1, "logprobs", true, "top_logprobs", 25))
	if r.status != 400 || errMessage(t, r) != "Invalid 'top_logprobs': integer above maximum value. Expected a value <= 20, but got 25 instead." {
		t.Fatalf("%d %s", r.status, r.body)
	}
}

func TestSamplingIsDeterministicWhereItShouldBe(t *testing.T) {
	p := Start(t, VLLM, Options{})
	text := func(extra ...any) string {
		v := post(t, p.BaseURL()+"/chat/completions", chatBody(p.Opts.Model, "Once upon a time", 24, extra...)).json(t)
		return choice0(v)["message"].(map[string]any)["content"].(string)
	}
	if a, b := text("temperature", 0), text("temperature", 0); a != b || a == "" {
		t.Fatalf("temperature 0: %q then %q", a, b)
	}
	if a, b := text("temperature", 1, "seed", 7), text("temperature", 1, "seed", 7); a != b {
		t.Fatalf("seed 7: %q then %q", a, b)
	}
	greedy := text("temperature", 0)
	stop := strings.Fields(greedy)[3]
	v := post(t, p.BaseURL()+"/chat/completions", chatBody(p.Opts.Model, "Once upon a time", 24, "temperature", 0, "stop", " "+stop)).json(t)
	c := choice0(v)
	cut := c["message"].(map[string]any)["content"].(string)
	if c["finish_reason"] != "stop" || !strings.HasPrefix(greedy, cut) || strings.Contains(cut, " "+stop) || !strings.HasPrefix(greedy[len(cut):], " "+stop) {
		t.Fatalf("stop %q: %q (%v) from %q", stop, cut, c["finish_reason"], greedy)
	}
}

func TestModelNamesAndNAreCheckedWhereTheServerChecksThem(t *testing.T) {
	for _, tc := range []struct {
		name          string
		unknownStatus int
		nStatus       int
		nChoices      int
	}{
		{LlamaCpp, 200, 500, 0}, {VLLM, 404, 200, 2}, {SGLang, 200, 200, 2}, {OpenAI, 404, 200, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := Start(t, tc.name, Options{})
			if r := post(t, p.BaseURL()+"/chat/completions", chatBody("no-such-model", "hi", 2)); r.status != tc.unknownStatus {
				t.Errorf("unknown model: %d %s", r.status, r.body)
			}
			r := post(t, p.BaseURL()+"/chat/completions", chatBody(p.Opts.Model, "hi", 2, "n", 2))
			if r.status != tc.nStatus {
				t.Fatalf("n=2: %d %s", r.status, r.body)
			}
			if r.status == 500 && errMessage(t, r) != "Only one completion choice is allowed" {
				t.Errorf("n=2: %s", r.body)
			}
			if r.status == 200 && len(r.json(t)["choices"].([]any)) != tc.nChoices {
				t.Errorf("n=2: %s", r.body)
			}
		})
	}
}

func TestAuthIsCheckedAndCountedAsEachServerDoes(t *testing.T) {
	const key = "sk-test-0123456789abcdef"
	for _, tc := range []struct {
		name string
		body string
	}{
		{LlamaCpp, `{"error":{"code":401,"message":"Invalid API Key","type":"authentication_error"}}`},
		{VLLM, `{"error":"Unauthorized"}`},
		{OpenAI, `{"error":{"code":"invalid_api_key","message":"Incorrect API key provided: sk-******************cdef. You can find your API key at https://platform.openai.com/account/api-keys.","param":null,"type":"invalid_request_error"}}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := Start(t, tc.name, Options{APIKey: key})
			r := post(t, p.BaseURL()+"/chat/completions", chatBody(p.Opts.Model, "hi", 1), "Authorization", "Bearer sk-wrong-0123456789abcdef")
			if r.status != 401 || string(r.body) != tc.body {
				t.Fatalf("%d %s", r.status, r.body)
			}
			if r := post(t, p.BaseURL()+"/chat/completions", chatBody(p.Opts.Model, "hi", 1), "Authorization", "Bearer "+key); r.status != 200 {
				t.Fatalf("right key: %d %s", r.status, r.body)
			}
			got := p.AuthHeaders()
			if len(got) != 2 || got[1] != "Bearer "+key || p.Requests("POST /v1/chat/completions") != 2 {
				t.Fatalf("auth %q, requests %d", got, p.Requests("POST /v1/chat/completions"))
			}
		})
	}
	for _, name := range []string{LlamaCpp, VLLM} {
		p := Start(t, name, Options{APIKey: key})
		if r := get(t, p.URL+"/health"); r.status != 200 {
			t.Fatalf("%s /health is public: %d", name, r.status)
		}
	}
}

func TestEachServerLeavesItsOwnRoutesOpenUnderAnAPIKey(t *testing.T) {
	const key = "sk-test-0123456789abcdef"
	for _, tc := range []struct {
		name         string
		open, closed []string
	}{
		// llama.cpp's get_public_endpoints: /health, /models and their /v1 twins.
		{LlamaCpp, []string{"/health", "/v1/health", "/v1/models", "/models"}, []string{"/props", "/v1/chat/completions"}},
		// vLLM guards only /v1.
		{VLLM, []string{"/health", "/metrics"}, []string{"/v1/models"}},
		// SGLang lets /health* and /metrics* through.
		{SGLang, []string{"/health", "/metrics"}, []string{"/v1/models", "/get_server_info"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := Start(t, tc.name, Options{APIKey: key, Metrics: true})
			for _, path := range tc.open {
				if r := get(t, p.URL+path); r.status == 401 {
					t.Errorf("%s without a key: 401 %s, want it open", path, r.body)
				}
			}
			for _, path := range tc.closed {
				if r := get(t, p.URL+path); r.status != 401 {
					t.Errorf("%s without a key: %d %s, want 401", path, r.status, r.body)
				}
			}
		})
	}
}

func TestCountersRecordWhatArrived(t *testing.T) {
	p := Start(t, VLLM, Options{})
	big := filler(1000)
	post(t, p.BaseURL()+"/chat/completions", chatBody(p.Opts.Model, big, 1))
	get(t, p.BaseURL()+"/models")
	if p.LargestBody() < len(big) || p.TotalRequests() != 2 || p.Requests("GET /v1/models") != 1 {
		t.Fatalf("largest %d, total %d", p.LargestBody(), p.TotalRequests())
	}
	if got := p.PromptTokens(); len(got) != 1 || got[0] != ChatPromptTokens([]string{big}) {
		t.Fatalf("prompt tokens %v", got)
	}
}

func TestSGLangRefusesPastItsQueueWith503(t *testing.T) {
	p := Start(t, SGLang, Options{MaxRunning: 1, MaxQueued: 1, Gap: 10 * time.Millisecond})
	// Two long streams fill the running slot and the queue.
	var wg sync.WaitGroup
	b, _ := json.Marshal(chatBody(p.Opts.Model, "hi", 30, "stream", true))
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if resp, err := http.Post(p.BaseURL()+"/chat/completions", "application/json", bytes.NewReader(b)); err == nil {
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
		}()
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		p.mu.Lock()
		n := p.inflight
		p.mu.Unlock()
		if n == 2 || time.Now().After(deadline) {
			break
		}
		time.Sleep(time.Millisecond)
	}
	r := post(t, p.BaseURL()+"/chat/completions", chatBody(p.Opts.Model, "hi", 1))
	if r.status != 503 || string(r.body) != `{"code":503,"message":"The request queue is full.","object":"error","param":null,"type":"ServiceUnavailableError"}` {
		t.Fatalf("%d %s", r.status, r.body)
	}
	r = post(t, p.BaseURL()+"/chat/completions", chatBody(p.Opts.Model, "hi", 1, "stream", true))
	s := readStream(t, r.body)
	e, _ := s.events[0]["error"].(map[string]any)
	if r.status != 200 || len(s.events) != 1 || num(e["code"]) != 503 || e["message"] != "The request queue is full." || !s.done {
		t.Fatalf("%d %s", r.status, r.body)
	}
	wg.Wait()
}

func TestTheGatewayLimitsWith429AndHangs(t *testing.T) {
	t.Run("past its concurrency", func(t *testing.T) {
		p := Start(t, Gateway, Options{Concurrency: 1, RetryAfter: "7", HangEvery: 1, Hang: 300 * time.Millisecond})
		done := make(chan struct{})
		b, _ := json.Marshal(chatBody(p.Opts.Model, "hi", 1))
		go func() {
			defer close(done)
			if resp, err := http.Post(p.BaseURL()+"/chat/completions", "application/json", bytes.NewReader(b)); err == nil {
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
		}()
		for p.Requests("POST /v1/chat/completions") == 0 {
			time.Sleep(time.Millisecond)
		}
		time.Sleep(20 * time.Millisecond)
		r := post(t, p.BaseURL()+"/chat/completions", chatBody(p.Opts.Model, "hi", 1))
		if r.status != 429 || r.header.Get("Retry-After") != "7" || r.header.Get("x-ratelimit-remaining-requests") != "0" {
			t.Fatalf("%d %v %s", r.status, r.header, r.body)
		}
		e := r.json(t)["error"].(map[string]any)
		if e["type"] != "requests" || e["code"] != "rate_limit_exceeded" {
			t.Fatalf("error %v", e)
		}
		<-done
	})
	t.Run("past its requests per minute", func(t *testing.T) {
		p := Start(t, Gateway, Options{RPM: 2})
		for i, want := range []int{200, 200, 429} {
			if r := post(t, p.BaseURL()+"/chat/completions", chatBody(p.Opts.Model, "hi", 1)); r.status != want {
				t.Fatalf("request %d: %d", i, r.status)
			}
		}
	})
	t.Run("holding a stream with keep-alive comments", func(t *testing.T) {
		p := Start(t, Gateway, Options{HangEvery: 1, Hang: 120 * time.Millisecond, KeepAlive: 20 * time.Millisecond})
		r := post(t, p.BaseURL()+"/chat/completions", chatBody(p.Opts.Model, "hi", 2, "stream", true))
		s := readStream(t, r.body)
		if len(s.comments) < 2 || s.comments[0] != ": OPENROUTER PROCESSING" || !s.done {
			t.Fatalf("comments %q done %v", s.comments, s.done)
		}
		if !bytes.HasPrefix(r.body, []byte(": OPENROUTER PROCESSING")) {
			t.Fatal("comments should come before any event")
		}
	})
	t.Run("holding until the client leaves", func(t *testing.T) {
		p := Start(t, Gateway, Options{HangEvery: 1, Hang: time.Hour})
		c := &http.Client{Timeout: 100 * time.Millisecond}
		b, _ := json.Marshal(chatBody(p.Opts.Model, "hi", 1))
		start := time.Now()
		_, err := c.Post(p.BaseURL()+"/chat/completions", "application/json", bytes.NewReader(b))
		if err == nil || time.Since(start) > 10*time.Second {
			t.Fatalf("err %v after %s", err, time.Since(start))
		}
	})
}

func TestTheModelCountsTokensByItsRule(t *testing.T) {
	for _, tc := range []struct {
		text string
		want int
	}{{"", 0}, {"a", 1}, {"abcd", 1}, {"abcde", 2}, {"ééééé", 2}, {filler(100), 100}, {"the cat", 2}, {" x x", 2},
		{"a  \n b", 2}, {"a         b", 4}, {"end  ", 2}, {strings.Repeat(" x", 4160), 4160}} {
		if got := Tokens(tc.text); got != tc.want || len(Pieces(tc.text)) != tc.want || strings.Join(Pieces(tc.text), "") != tc.text {
			t.Errorf("Tokens(%q) = %d, want %d (pieces %q)", tc.text, got, tc.want, Pieces(tc.text))
		}
	}
	if got := ChatPromptTokens([]string{"abcd", "abcdefgh"}); got != 3+4+1+4+2 {
		t.Errorf("ChatPromptTokens = %d", got)
	}
	toks := generate("p", 50, 3, sampling{})
	for _, g := range toks {
		sum := 0.0
		for _, c := range g.Top {
			sum += math.Exp(c.Logprob)
		}
		if sum > 1 || g.Top[0].Token != g.Text {
			t.Fatalf("token %v", g)
		}
	}
}

func TestAStopStringEndsTheTextJustBeforeIt(t *testing.T) {
	toks := []genToken{{Text: " the"}, {Text: " cat"}, {Text: " sat"}, {Text: " on"}}
	for _, tc := range []struct {
		stop  string
		texts []string
	}{
		{"e c", []string{" th", ""}},           // spans two tokens: counted up to the one that completes it
		{" sat", []string{" the", " cat", ""}}, // a whole token
		{"dog", nil},                           // absent: no cut
	} {
		got, ok := stopAt(toks, []string{tc.stop})
		if !ok {
			if tc.texts != nil {
				t.Errorf("stop %q not found", tc.stop)
			}
			continue
		}
		var texts []string
		for _, g := range got {
			texts = append(texts, g.Text)
		}
		if strings.Join(texts, "|") != strings.Join(tc.texts, "|") {
			t.Errorf("stop %q: %q, want %q", tc.stop, texts, tc.texts)
		}
	}
}

func TestPersonalitiesListenOnLoopbackOnly(t *testing.T) {
	for _, name := range Names() {
		// Every base ends in /v1 but Z.ai's, /api/paas/v4 (docs.z.ai/api-reference/introduction).
		base := map[string]string{ZAI: "/api/paas/v4"}[name]
		if base == "" {
			base = "/v1"
		}
		if p := Start(t, name, Issue12LlamaCpp); !strings.HasPrefix(p.BaseURL(), "http://127.0.0.1:") || !strings.HasSuffix(p.BaseURL(), base) {
			t.Errorf("%s: %s", name, p.BaseURL())
		}
	}
}

func TestStartRefusesAnUnknownName(t *testing.T) {
	if _, err := NewPersonality("triton", Options{}); err == nil || !strings.Contains(err.Error(), "llama.cpp, vllm, sglang, openai, gateway") {
		t.Fatalf("err %v", err)
	}
}

func TestOpenAIChatWithoutMaxTokensRunsToTheModelsOutputCap(t *testing.T) {
	p := Start(t, OpenAI, Options{Context: 4096, MaxOutput: 40})
	body := chatBody(p.Opts.Model, "hi", 0)
	delete(body, "max_tokens")
	r := post(t, p.BaseURL()+"/chat/completions", body)
	u, _ := r.json(t)["usage"].(map[string]any)
	if r.status != 200 || num(u["completion_tokens"]) != 40 {
		t.Fatalf("%d %s", r.status, r.body)
	}
}
