package endpointstest

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
)

// These tests check the ollama personality against what Ollama's sources
// say (ollama.go names them); each truth is the fake's deterministic model.

func TestOllamaAnswersItsRootAndNoReadinessRoute(t *testing.T) {
	p := Start(t, Ollama, Options{})
	if r := get(t, p.URL+"/"); r.status != 200 || string(r.body) != "Ollama is running" {
		t.Errorf("GET /: %d %q", r.status, r.body)
	}
	for _, path := range []string{"/health", "/metrics", "/props", "/get_server_info", "/v1/health"} {
		r := get(t, p.URL+path)
		if r.status != 404 || string(r.body) != "404 page not found" || !strings.HasPrefix(r.header.Get("Content-Type"), "text/plain") {
			t.Errorf("GET %s: %d %q (%s); want gin's text 404", path, r.status, r.body, r.header.Get("Content-Type"))
		}
	}
	if r := get(t, p.BaseURL()+"/chat/completions"); r.status != 405 || string(r.body) != "405 method not allowed" {
		t.Errorf("GET /v1/chat/completions: %d %q; want gin's 405", r.status, r.body)
	}
	if v := get(t, p.URL+"/api/version").json(t); v["version"] == "" {
		t.Errorf("version %v", v)
	}
}

func TestOllamaListsItsModelWithATagAndNoContext(t *testing.T) {
	p := Start(t, Ollama, Options{Context: 8192})
	v := get(t, p.BaseURL()+"/models").json(t)
	d := v["data"].([]any)[0].(map[string]any)
	if v["object"] != "list" || d["id"] != "llama3.2:latest" || d["owned_by"] != "library" || len(d) != 4 {
		t.Errorf("list %v; want the one card of id, object, created, owned_by library", v)
	}
	if r := get(t, p.BaseURL()+"/models/llama3.2"); r.status != 200 || r.json(t)["id"] != "llama3.2" {
		t.Errorf("GET /v1/models/llama3.2: %d %s", r.status, r.body)
	}
	hf := Start(t, Ollama, Options{Model: "hf.co/bartowski/Qwen2.5-7B-GGUF:Q4_K_M"})
	if d := get(t, hf.BaseURL()+"/models").json(t)["data"].([]any)[0].(map[string]any); d["owned_by"] != "bartowski" {
		t.Errorf("owned_by %v; want the name's namespace", d["owned_by"])
	}
}

func TestOllamaStatesTheContextOnlyForALoadedModel(t *testing.T) {
	p := Start(t, Ollama, Options{Context: 8192})
	if ms := get(t, p.URL+"/api/ps").json(t)["models"].([]any); len(ms) != 0 {
		t.Fatalf("/api/ps before any request lists %v", ms)
	}
	show := post(t, p.URL+"/api/show", map[string]any{"model": "llama3.2"}).json(t)
	if mi := show["model_info"].(map[string]any); num(mi["llama.context_length"]) != 131072 {
		t.Errorf("/api/show model_info %v; want the trained 131072, not num_ctx", mi)
	}
	if r := post(t, p.BaseURL()+"/chat/completions", chatBody("llama3.2", "hi", 2)); r.status != 200 {
		t.Fatalf("chat: %d %s", r.status, r.body)
	}
	ms := get(t, p.URL+"/api/ps").json(t)["models"].([]any)
	if len(ms) != 1 || num(ms[0].(map[string]any)["context_length"]) != 8192 || ms[0].(map[string]any)["name"] != "llama3.2:latest" {
		t.Errorf("/api/ps after a request: %v; want the model with context_length 8192", ms)
	}
	warm := Start(t, Ollama, Options{Context: 2048, Ollama: OllamaOptions{Loaded: true}})
	if ms := get(t, warm.URL+"/api/ps").json(t)["models"].([]any); len(ms) != 1 || num(ms[0].(map[string]any)["context_length"]) != 2048 {
		t.Errorf("a warm server's /api/ps: %v", ms)
	}
}

func TestOllamaStreamsARoleInEveryDeltaAndUsageOnlyWhenAsked(t *testing.T) {
	p := Start(t, Ollama, Options{})
	want := ChatPromptTokens([]string{"hello there"})
	for _, asked := range []bool{false, true} {
		evs := streamed(t, p.BaseURL()+"/chat/completions", withUsage(chatBody("llama3.2:latest", "hello there", 5, "stream", true), asked)).events
		if asked {
			evs = usageApart(t, evs, want, 5)
		}
		// 5 content chunks, then the finish chunk.
		if len(evs) != 6 {
			t.Fatalf("%d chunks before the usage, want 6: %v", len(evs), evs)
		}
		for i, ev := range evs {
			c := choice0(ev)
			d := c["delta"].(map[string]any)
			if _, has := ev["usage"]; has || d["role"] != "assistant" || ev["system_fingerprint"] != "fp_ollama" {
				t.Errorf("chunk %d: %v; want role assistant, fp_ollama, no usage", i, ev)
			}
			content, _ := d["content"].(string)
			if last := i == len(evs)-1; last != (content == "") || last != (c["finish_reason"] == "length") {
				t.Errorf("chunk %d: content %q finish %v; want content in every chunk but the finish chunk", i, content, c["finish_reason"])
			}
		}
	}
}

func TestOllamaCompletionsStreamCarriesZeroUsageOnEveryChunk(t *testing.T) {
	p := Start(t, Ollama, Options{})
	body := map[string]any{"model": "llama3.2", "prompt": "one two three", "max_tokens": 4, "stream": true, "stream_options": map[string]any{"include_usage": true}}
	evs := streamed(t, p.BaseURL()+"/completions", body).events
	if len(evs) != 6 {
		t.Fatalf("%d chunks, want 4 text chunks, the finish chunk, the usage chunk", len(evs))
	}
	for i, ev := range usageApart(t, evs, Tokens("one two three"), 4) {
		u := ev["usage"].(map[string]any)
		if num(u["prompt_tokens"]) != 0 || num(u["completion_tokens"]) != 0 || num(u["total_tokens"]) != 0 || ev["object"] != "text_completion" {
			t.Errorf("chunk %d: %v; want usage all 0", i, ev)
		}
	}
}

func TestOllamaReadsOnlyMaxTokensAndDropsWhatItDoesNotKnow(t *testing.T) {
	p := Start(t, Ollama, Options{Context: 512, EOSAfter: 3})
	P := ChatPromptTokens([]string{"hi"})
	usage := func(r reply) (completion float64, finish any) {
		t.Helper()
		if r.status != 200 {
			t.Fatalf("%d %s", r.status, r.body)
		}
		v := r.json(t)
		return num(v["usage"].(map[string]any)["completion_tokens"]), choice0(v)["finish_reason"]
	}
	// ignore_eos is no field of Ollama's: the model stops at its EOS (3).
	if n, fin := usage(post(t, p.BaseURL()+"/chat/completions", chatBody("llama3.2", "hi", 8, "ignore_eos", true))); n != 3 || fin != "stop" {
		t.Errorf("ignore_eos: %v tokens, finish %v; want 3, stop", n, fin)
	}
	noEOS := Start(t, Ollama, Options{Context: 512})
	if n, fin := usage(post(t, noEOS.BaseURL()+"/chat/completions", chatBody("llama3.2", "hi", 8, "top_k", 5, "chat_template_kwargs", map[string]any{"x": 1}))); n != 8 || fin != "length" {
		t.Errorf("max_tokens 8 with unknown fields: %v, %v", n, fin)
	}
	// max_completion_tokens is dropped: no cap, so until the context is full.
	b := map[string]any{"model": "llama3.2", "messages": []any{map[string]any{"role": "user", "content": "hi"}}, "max_completion_tokens": 8}
	if n, _ := usage(post(t, noEOS.BaseURL()+"/chat/completions", b)); n != float64(512-P) {
		t.Errorf("max_completion_tokens 8: %v tokens; want %d (uncapped)", n, 512-P)
	}
	// n is dropped: one choice.
	if v := post(t, noEOS.BaseURL()+"/chat/completions", chatBody("llama3.2", "hi", 2, "n", 3)).json(t); len(v["choices"].([]any)) != 1 {
		t.Errorf("n 3: %d choices", len(v["choices"].([]any)))
	}
	// No API key is checked.
	keyed := Start(t, Ollama, Options{APIKey: "sk-x"})
	if r := post(t, keyed.BaseURL()+"/chat/completions", chatBody("llama3.2", "hi", 2)); r.status != 200 {
		t.Errorf("no key: %d", r.status)
	}
}

func TestOllamaErrorsSayApiErrorForWhatTheHandlerAnswers(t *testing.T) {
	p := Start(t, Ollama, Options{})
	for _, tc := range []struct {
		name   string
		route  string
		body   any
		status int
		typ    string
		msg    string
	}{
		// ChatHandler and GenerateHandler look the model up before the
		// scheduler does (GetModel: os.ErrNotExist), so the scheduler's
		// "try pulling it first" is not what a client gets.
		{"a model not pulled", "/chat/completions", chatBody("mistral", "hi", 2), 404, "api_error", `model 'mistral' not found`},
		{"a model not pulled, by completions", "/completions", map[string]any{"model": "mistral", "prompt": "hi"}, 404, "api_error", `model 'mistral' not found`},
		{"no messages", "/chat/completions", map[string]any{"model": "llama3.2", "messages": []any{}}, 400, "invalid_request_error", "[] is too short - 'messages'"},
		{"no JSON", "/chat/completions", "{", 400, "invalid_request_error", "unexpected end of JSON input"},
		{"a prompt of token ids", "/completions", map[string]any{"model": "llama3.2", "prompt": []int{1, 2}}, 400, "invalid_request_error", "CompletionRequest.prompt of type string"},
	} {
		r := post(t, p.BaseURL()+tc.route, tc.body)
		e, _ := r.json(t)["error"].(map[string]any)
		if r.status != tc.status || e["type"] != tc.typ || !strings.Contains(e["message"].(string), tc.msg) || e["code"] != nil || e["param"] != nil {
			t.Errorf("%s: %d %s; want %d %s %q", tc.name, r.status, r.body, tc.status, tc.typ, tc.msg)
		}
	}
}

func TestOllamaTruncatesAnOverlongPromptAndCountsWhatItKept(t *testing.T) {
	for _, tc := range []struct {
		name  string
		whole bool
		want  func(L int) int
	}{
		{"2026 builds: num_keep and half the rest", false, func(L int) int { return 4 + (L-4)/2 }},
		{"the 2025 runner: num_ctx", true, func(L int) int { return L }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := Start(t, Ollama, Options{Context: 256, Ollama: OllamaOptions{WholeWindow: tc.whole}})
			for _, words := range []int{100, 300, 1000} {
				content := filler(words)
				P := ChatPromptTokens([]string{content})
				want := P
				if P > 256 {
					want = tc.want(256)
				}
				v := post(t, p.BaseURL()+"/chat/completions", chatBody("llama3.2", content, 2)).json(t)
				if got := num(v["usage"].(map[string]any)["prompt_tokens"]); got != float64(want) {
					t.Errorf("a prompt of %d tokens counted %v, want %d", P, got, want)
				}
			}
		})
	}
}

// An MLX model's /api/ps states num_ctx, but its runner cuts no prompt
// (issue #18125): a prompt past it is counted whole, and /api/ps names
// the format that says so.
func TestOllamaServesAnMLXModelsPromptPastItsStatedContextWhole(t *testing.T) {
	p := Start(t, Ollama, Options{Context: 256, Ollama: OllamaOptions{MLX: true}})
	content := filler(1000)
	P := ChatPromptTokens([]string{content})
	if P <= 256 {
		t.Fatalf("a prompt of %d tokens does not pass the context", P)
	}
	v := post(t, p.BaseURL()+"/chat/completions", chatBody("llama3.2", content, 2)).json(t)
	if got := num(v["usage"].(map[string]any)["prompt_tokens"]); got != float64(P) {
		t.Errorf("a prompt of %d tokens counted %v; want all of it", P, got)
	}
	m := get(t, p.URL+"/api/ps").json(t)["models"].([]any)[0].(map[string]any)
	if num(m["context_length"]) != 256 || m["details"].(map[string]any)["format"] != "safetensors" {
		t.Errorf("/api/ps %v; want context_length 256 and format safetensors", m)
	}
}

// A prompt within num_ctx is kept whole and max_tokens are generated past
// num_ctx: the runner shifts its context (llamarunner processBatch:
// ShiftCacheSlot when the cache is full and Shift, which routes.go sets
// unless a request says no; 2026 builds bound an open request at ten
// windows, llm/llama_server.go boundedNumPredict).
func TestOllamaGeneratesPastNumCtxByShiftingItsContext(t *testing.T) {
	p := Start(t, Ollama, Options{Context: 256})
	content := filler(150)
	P := ChatPromptTokens([]string{content})
	if P > 256 || P+200 <= 256 {
		t.Fatalf("a prompt of %d tokens and 200 more do not straddle num_ctx 256", P)
	}
	u := post(t, p.BaseURL()+"/chat/completions", chatBody("llama3.2", content, 200)).json(t)["usage"].(map[string]any)
	if num(u["prompt_tokens"]) != float64(P) || num(u["completion_tokens"]) != 200 {
		t.Errorf("usage %v; want the %d-token prompt whole and 200 generated", u, P)
	}
}

func TestOllamaAnswers503PastItsQueue(t *testing.T) {
	// A load that outlasts the test holds every request in the queue.
	p := Start(t, Ollama, Options{Ollama: OllamaOptions{NumParallel: 1, MaxQueue: 2, Load: time.Hour}})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	for range 3 {
		go func() {
			req, _ := http.NewRequestWithContext(ctx, http.MethodPost, p.BaseURL()+"/chat/completions", strings.NewReader(`{"model":"llama3.2","messages":[{"role":"user","content":"hi"}],"max_tokens":2}`))
			if resp, err := http.DefaultClient.Do(req); err == nil {
				resp.Body.Close()
			}
		}()
	}
	if !eventually(10*time.Second, func() bool { return inflight(p) == 3 }) {
		t.Fatalf("%d requests in flight, want 3", inflight(p))
	}
	r := post(t, p.BaseURL()+"/chat/completions", chatBody("llama3.2", "hi", 2))
	e, _ := r.json(t)["error"].(map[string]any)
	if r.status != 503 || e["type"] != "api_error" || e["message"] != "server busy, please try again.  maximum pending requests exceeded" {
		t.Errorf("the fourth request: %d %s", r.status, r.body)
	}
}

func TestOllamaStreamsAThinkingModelsReasoningApart(t *testing.T) {
	p := Start(t, Ollama, Options{Ollama: OllamaOptions{Thinking: 3}})
	evs := readStream(t, post(t, p.BaseURL()+"/chat/completions", chatBody("llama3.2", "why", 6, "stream", true)).body).events
	var reasoning, content int
	for _, ev := range evs {
		d := choice0(ev)["delta"].(map[string]any)
		if s, _ := d["reasoning"].(string); s != "" {
			reasoning++
			if d["content"] != "" {
				t.Errorf("a reasoning chunk with content: %v", d)
			}
		} else if s, _ := d["content"].(string); s != "" {
			content++
		}
	}
	if reasoning != 3 || content != 3 {
		t.Errorf("%d reasoning and %d content chunks, want 3 and 3", reasoning, content)
	}
	v := post(t, p.BaseURL()+"/chat/completions", chatBody("llama3.2", "why", 6)).json(t)
	msg := choice0(v)["message"].(map[string]any)
	if Tokens(msg["reasoning"].(string)) != 3 || num(v["usage"].(map[string]any)["completion_tokens"]) != 6 {
		t.Errorf("whole answer %v; want 3 tokens of reasoning within 6", v)
	}
}

func TestOllamaServesChatLogprobsButNotCompletions(t *testing.T) {
	p := Start(t, Ollama, Options{})
	v := post(t, p.BaseURL()+"/chat/completions", chatBody("llama3.2", "hi", 3, "logprobs", true, "top_logprobs", 2, "temperature", 0)).json(t)
	lp, _ := choice0(v)["logprobs"].(map[string]any)
	content, _ := lp["content"].([]any)
	if len(content) != 3 {
		t.Fatalf("chat logprobs %v; want 3 entries", lp)
	}
	for _, e := range content {
		e := e.(map[string]any)
		if top := e["top_logprobs"].([]any); len(top) != 2 || top[0].(map[string]any)["token"] != e["token"] {
			t.Errorf("entry %v; want 2 top logprobs, the greedy token first", e)
		}
	}
	c := post(t, p.BaseURL()+"/completions", map[string]any{"model": "llama3.2", "prompt": "hi", "max_tokens": 2, "logprobs": 2}).json(t)
	if _, has := choice0(c)["logprobs"]; has {
		t.Errorf("completions answered logprobs: %v", c)
	}
	old := Start(t, Ollama, Options{Ollama: OllamaOptions{NoLogprobs: true}})
	v = post(t, old.BaseURL()+"/chat/completions", chatBody("llama3.2", "hi", 3, "logprobs", true)).json(t)
	if _, has := choice0(v)["logprobs"]; has {
		t.Errorf("a build before logprobs answered them: %v", v)
	}
}

func TestOllamaDrawsAnswerIDsFromNineHundredNinetyNine(t *testing.T) {
	p := Start(t, Ollama, Options{})
	seen := map[string]int{}
	repeats := 0
	for i := range 100 {
		id, _ := post(t, p.BaseURL()+"/chat/completions", chatBody("llama3.2", "hi", 1)).json(t)["id"].(string)
		n, err := strconv.Atoi(strings.TrimPrefix(id, "chatcmpl-"))
		if !strings.HasPrefix(id, "chatcmpl-") || err != nil || n < 0 || n >= 999 {
			t.Fatalf("request %d: id %q; want chatcmpl- and 0 to 998", i, id)
		}
		if seen[id]++; seen[id] > 1 {
			repeats++
		}
	}
	// 100 draws of 999 repeat with probability 1 − e^(−100·99/2/999) ≈ 99%;
	// the fake's draw is fixed, and repeats.
	if repeats == 0 {
		t.Error("100 answers, no id repeated")
	}
}

func TestOllamaReportsCachedTokensWhereItsBuildDoes(t *testing.T) {
	p := Start(t, Ollama, Options{Ollama: OllamaOptions{CachedTokens: true}})
	cached := func(content string) (prompt, cached float64) {
		t.Helper()
		u := post(t, p.BaseURL()+"/chat/completions", chatBody("llama3.2", content, 1)).json(t)["usage"].(map[string]any)
		d, _ := u["prompt_tokens_details"].(map[string]any)
		return num(u["prompt_tokens"]), num(d["cached_tokens"])
	}
	shared := filler(10) + " "
	if P, c := cached(shared + "first"); c != 0 || P != float64(ChatPromptTokens([]string{shared + "first"})) {
		t.Errorf("a first prompt: %v cached of %v; want 0", c, P)
	}
	// The shared part is 10 pieces of "abcd" (filler) and then " first" or
	// " other": 10 tokens in common.
	if _, c := cached(shared + "other"); c != 10 {
		t.Errorf("a prompt sharing 10 tokens with the last: %v cached, want 10", c)
	}
	again := shared + "other"
	if P, c := cached(again); c != float64(len(Pieces(again))) || c >= P {
		t.Errorf("the same prompt again: %v cached of %v; want its %d pieces, below the whole", c, P, len(Pieces(again)))
	}
	plain := Start(t, Ollama, Options{})
	if u := post(t, plain.BaseURL()+"/chat/completions", chatBody("llama3.2", "hi", 1)).json(t)["usage"].(map[string]any); u["prompt_tokens_details"] != nil {
		t.Errorf("a build before PR #17943 sent %v", u)
	}
}
