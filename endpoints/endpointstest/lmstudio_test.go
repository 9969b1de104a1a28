package endpointstest

import (
	"strconv"
	"strings"
	"testing"
)

// These tests check the lmstudio personality against what LM Studio's docs
// and issues say (lmstudio.go names them); each truth is the fake's
// deterministic model.

func TestLMStudioListsModelsWithoutContextOnV1AndTheLoadedContextOnAPIV1(t *testing.T) {
	p := Start(t, LMStudio, Options{Context: 4096, LMStudio: LMStudioOptions{JIT: true}})
	data := get(t, p.BaseURL()+"/models").json(t)["data"].([]any)
	if len(data) != 2 {
		t.Fatalf("/v1/models %v; want the loaded model and, with JIT, the downloaded one", data)
	}
	for _, d := range data {
		card := d.(map[string]any)
		if _, ok := card["max_model_len"]; ok || len(card) != 3 {
			t.Errorf("card %v; want id, object, owned_by and no context", card)
		}
	}
	v0 := get(t, p.URL+"/api/v0/models").json(t)["data"].([]any)[0].(map[string]any)
	if v0["state"] != "loaded" || num(v0["max_context_length"]) != 131072 {
		t.Errorf("/api/v0/models %v; want state loaded and the model's own 131072, not the loaded 4096", v0)
	}
	m := get(t, p.URL+"/api/v1/models").json(t)["models"].([]any)[0].(map[string]any)
	inst := m["loaded_instances"].([]any)[0].(map[string]any)
	if m["key"] != p.Opts.Model || num(inst["config"].(map[string]any)["context_length"]) != 4096 {
		t.Errorf("/api/v1/models %v; want the loaded instance's context_length 4096", m)
	}
	old := Start(t, LMStudio, Options{LMStudio: LMStudioOptions{Before04: true}})
	if r := get(t, old.URL+"/api/v1/models"); r.status != 404 {
		t.Errorf("/api/v1/models before 0.4.0: %d %s", r.status, r.body)
	}
}

func TestLMStudioHasNoHealthRouteAndNamesTheRouteItDoesNotServe(t *testing.T) {
	p := Start(t, LMStudio, Options{})
	want := "Unexpected endpoint or method. (GET /health)"
	r := get(t, p.URL+"/health")
	if v := r.json(t); r.status != 404 || v["message"] != want || v["error"].(map[string]any)["message"] != want {
		t.Errorf("/health: %d %s", r.status, r.body)
	}
	old := Start(t, LMStudio, Options{LMStudio: LMStudioOptions{Before04: true}})
	if r := get(t, old.URL+"/health"); r.status != 404 || r.json(t)["error"] != want {
		t.Errorf("/health before 0.4: %d %s; want the message as a string", r.status, r.body)
	}
}

func TestLMStudioStreamsNoUsageWhateverStreamOptionsAsk(t *testing.T) {
	p := Start(t, LMStudio, Options{})
	r := post(t, p.BaseURL()+"/chat/completions", chatBody(p.Opts.Model, "hi", 5, "stream", true,
		"stream_options", map[string]any{"include_usage": true}))
	s := readStream(t, r.body)
	content := 0
	for _, ev := range s.events {
		if _, ok := ev["usage"]; ok {
			t.Errorf("event with usage: %v", ev)
		}
		if c := choice0(ev); c != nil {
			if d, _ := c["delta"].(map[string]any); d["content"] != nil && d["content"] != "" {
				content++
			}
		}
	}
	if r.status != 200 || !s.done || content != 5 {
		t.Fatalf("%d, done %v, %d content events; want 5 of max_tokens 5", r.status, s.done, content)
	}
	// The whole answer does count its usage.
	w := post(t, p.BaseURL()+"/chat/completions", chatBody(p.Opts.Model, "hi", 5))
	if u := w.json(t)["usage"].(map[string]any); num(u["completion_tokens"]) != 5 || num(u["prompt_tokens"]) != float64(ChatPromptTokens([]string{"hi"})) {
		t.Errorf("usage %v", u)
	}
}

func TestLMStudioReadsMaxTokensNotMaxCompletionTokensNorIgnoreEOS(t *testing.T) {
	p := Start(t, LMStudio, Options{Context: 64, EOSAfter: 3})
	prompt := ChatPromptTokens([]string{"hi"})
	for _, tc := range []struct {
		name  string
		body  map[string]any
		want  int
		avoid string
	}{
		// max_completion_tokens alone is not read: until the context is full,
		// or here the model's end of sequence after 3.
		{"max_completion_tokens 10 alone", map[string]any{"max_completion_tokens": 10}, 3, ""},
		// ignore_eos is not read: the model still ends after 3.
		{"max_tokens 10 with ignore_eos", map[string]any{"max_tokens": 10, "ignore_eos": true}, 3, ""},
		{"max_tokens 2", map[string]any{"max_tokens": 2}, 2, ""},
	} {
		body := chatBody(p.Opts.Model, "hi", 0)
		delete(body, "max_tokens")
		for k, v := range tc.body {
			body[k] = v
		}
		u := post(t, p.BaseURL()+"/chat/completions", body).json(t)["usage"].(map[string]any)
		if num(u["completion_tokens"]) != float64(tc.want) || num(u["prompt_tokens"]) != float64(prompt) {
			t.Errorf("%s: usage %v; want %d completion tokens", tc.name, u, tc.want)
		}
	}
	long := Start(t, LMStudio, Options{Context: 64})
	body := chatBody(long.Opts.Model, "hi", 0)
	body["max_tokens"] = -1
	u := post(t, long.BaseURL()+"/chat/completions", body).json(t)["usage"].(map[string]any)
	if num(u["completion_tokens"]) != float64(64-prompt) {
		t.Errorf("max_tokens -1: %v; want the context's rest, %d", u, 64-prompt)
	}
}

func TestLMStudioRefusesAPromptPastTheLoadedContextInItsOwnWords(t *testing.T) {
	content := filler(300)
	P := strconv.Itoa(ChatPromptTokens([]string{content}))
	old := Start(t, LMStudio, Options{Context: 256, LMStudio: LMStudioOptions{Before04: true}})
	want := "Trying to keep the first " + P + " tokens when context the overflows. However, the model is loaded with context length of only 256 tokens"
	for _, stream := range []bool{false, true} {
		r := post(t, old.BaseURL()+"/chat/completions", chatBody(old.Opts.Model, content, 4, "stream", stream))
		if msg, _ := r.json(t)["error"].(string); r.status != 400 || !strings.HasPrefix(msg, want) {
			t.Errorf("before 0.4, stream %v: %d %s; want 400 {\"error\": %q...}", stream, r.status, r.body, want)
		}
	}
	p := Start(t, LMStudio, Options{Context: 256})
	want = "Input does not fit in context length. The input has " + P + " tokens, but the context length only supports 256 tokens."
	r := post(t, p.BaseURL()+"/chat/completions", chatBody(p.Opts.Model, content, 4))
	if v := r.json(t); r.status != 400 || v["message"] != want || v["error"].(map[string]any)["message"] != want {
		t.Errorf("0.4, whole: %d %s; want 400 with %q", r.status, r.body, want)
	}
	// Streamed, 0.4.21 answers 200 and one error event, no [DONE] (#2322).
	r = post(t, p.BaseURL()+"/chat/completions", chatBody(p.Opts.Model, content, 4, "stream", true))
	lines := strings.Split(strings.TrimSpace(string(r.body)), "\n")
	if r.status != 200 || !strings.HasPrefix(r.header.Get("Content-Type"), "text/event-stream") || len(lines) != 2 ||
		lines[0] != "event: error" || !strings.Contains(lines[1], `"message":"`+want+`"`) {
		t.Errorf("0.4, streamed: %d %q; want 200 with one error event", r.status, r.body)
	}
}

func TestLMStudioServesTheLoadedModelAndWithJITADownloadedOne(t *testing.T) {
	for _, jit := range []bool{false, true} {
		p := Start(t, LMStudio, Options{LMStudio: LMStudioOptions{JIT: jit}})
		if r := post(t, p.BaseURL()+"/chat/completions", chatBody(p.Opts.Model, "hi", 2)); r.status != 200 {
			t.Errorf("jit %v, loaded model: %d %s", jit, r.status, r.body)
		}
		r := post(t, p.BaseURL()+"/chat/completions", chatBody(JITModel, "hi", 2))
		if (r.status == 200) != jit {
			t.Errorf("jit %v, downloaded model: %d %s", jit, r.status, r.body)
		}
		if r := post(t, p.BaseURL()+"/chat/completions", chatBody("no-such-model", "hi", 2)); r.status != 404 {
			t.Errorf("jit %v, unknown model: %d %s", jit, r.status, r.body)
		}
	}
}

func TestLMStudioAcceptsLogprobsAndEchoButAnswersNeither(t *testing.T) {
	p := Start(t, LMStudio, Options{})
	c := post(t, p.BaseURL()+"/chat/completions", chatBody(p.Opts.Model, "hi", 3, "logprobs", true, "top_logprobs", 5))
	if c.status != 200 || choice0(c.json(t))["logprobs"] != nil {
		t.Errorf("chat with logprobs: %d %s; want 200 with logprobs null", c.status, c.body)
	}
	r := post(t, p.BaseURL()+"/completions", map[string]any{"model": p.Opts.Model, "prompt": "the cat sat", "max_tokens": 3, "logprobs": 1, "echo": true})
	ch := choice0(r.json(t))
	if r.status != 200 || ch["logprobs"] != nil || strings.HasPrefix(ch["text"].(string), "the cat sat") {
		t.Errorf("completions with echo and logprobs: %d %s; want 200, no logprobs, no echo", r.status, r.body)
	}
}
