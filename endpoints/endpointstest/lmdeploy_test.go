package endpointstest

import (
	"strings"
	"testing"
)

// The lmdeploy personality against LMDeploy's api_server source
// (lmdeploy.go names the files): a session-len overflow is a 200 whose
// finish_reason says it, never a 400.

// lmdeployPrompt is a prompt of about n words for the fake's tokenizer,
// and its usage.prompt_tokens as the server counts it.
func lmdeployPrompt(t *testing.T, p *Personality, n int) (string, int) {
	t.Helper()
	text := strings.TrimSpace(strings.Repeat("word ", n))
	r := post(t, p.BaseURL()+"/chat/completions", chatBody(p.Opts.Model, text, 1))
	u, _ := r.json(t)["usage"].(map[string]any)
	if r.status != 200 || num(u["prompt_tokens"]) == 0 {
		t.Fatalf("counting a prompt: %d %s", r.status, r.body)
	}
	return text, int(num(u["prompt_tokens"]))
}

// With --session-len L: max_tokens absent leaves L-P tokens, and none left
// is an empty answer, finish_reason "length" ("run out of tokens",
// InternLM/lmdeploy#2319); a max_tokens past L-P is cut to L-P-1
// (TurboMind's warning in #4147); a prompt of L tokens or more with
// max_tokens is a 200 of finish_reason "error", generate's error text its
// content.
func TestLMDeployAnswersASessionLenOverflowWithAFinishReasonNotA400(t *testing.T) {
	p := Start(t, LMDeploy, Options{Context: 64})
	text, P := lmdeployPrompt(t, p, 20)
	whole := func(body map[string]any) (map[string]any, map[string]any) {
		t.Helper()
		r := post(t, p.BaseURL()+"/chat/completions", body)
		if r.status != 200 {
			t.Fatalf("%d %s; LMDeploy answers 200", r.status, r.body)
		}
		v := r.json(t)
		u, _ := v["usage"].(map[string]any)
		return choice0(v), u
	}
	c, u := whole(chatBody(p.Opts.Model, text, 64-P+10))
	if c["finish_reason"] != "length" || int(num(u["completion_tokens"])) != 64-P-1 {
		t.Errorf("P+M past session_len: %v %v; want length after %d tokens (L-P-1)", c, u, 64-P-1)
	}
	body := chatBody(p.Opts.Model, text, 0)
	delete(body, "max_tokens")
	if c, u = whole(body); c["finish_reason"] != "length" || int(num(u["completion_tokens"])) != 64-P {
		t.Errorf("no max_tokens: %v %v; want length after %d tokens (L-P)", c, u, 64-P)
	}

	long, PL := lmdeployPrompt(t, Start(t, LMDeploy, Options{Context: 4096}), 80)
	if PL < 64 {
		t.Fatalf("the long prompt is only %d tokens", PL)
	}
	body = chatBody(p.Opts.Model, long, 0)
	delete(body, "max_tokens")
	c, u = whole(body)
	if m, _ := c["message"].(map[string]any); c["finish_reason"] != "length" || m["content"] != "" || num(u["completion_tokens"]) != 0 {
		t.Errorf("P past session_len, no max_tokens: %v %v; want an empty length answer", c, u)
	}
	c, u = whole(chatBody(p.Opts.Model, long, 4))
	if m, _ := c["message"].(map[string]any); c["finish_reason"] != "error" || m["content"] != lmdeployErrorText || num(u["completion_tokens"]) != 0 {
		t.Errorf("P past session_len, max_tokens 4: %v %v; want finish_reason error and %q", c, u, lmdeployErrorText)
	}
	r := post(t, p.BaseURL()+"/chat/completions", chatBody(p.Opts.Model, long, 4, "stream", true, "stream_options", map[string]any{"include_usage": true}))
	s := readStream(t, r.body)
	if r.status != 200 || !s.done || len(s.events) != 1 {
		t.Fatalf("stream: %d %s; want one chunk and [DONE]", r.status, r.body)
	}
	d, _ := choice0(s.events[0])["delta"].(map[string]any)
	if choice0(s.events[0])["finish_reason"] != "error" || d["content"] != lmdeployErrorText {
		t.Errorf("stream's chunk %v", s.events[0])
	}

	// 2024 builds: P+M past session_len is an empty "length" answer (#1589).
	q := Start(t, LMDeploy, Options{Context: 64, LMDeploy: LMDeployOptions{Before2026: true}})
	r = post(t, q.BaseURL()+"/chat/completions", chatBody(q.Opts.Model, text, 64-P+10))
	v := r.json(t)
	u, _ = v["usage"].(map[string]any)
	if choice0(v)["finish_reason"] != "length" || num(u["completion_tokens"]) != 0 {
		t.Errorf("Before2026: %s; want an empty length answer", r.body)
	}
}

// With include_usage every chunk carries the usage so far (the generator
// builds UsageInfo for each), the last the final count, after a chunk per
// token with role and content; without it no chunk has any.
func TestLMDeployStreamsUsageOnEveryChunkWhenAsked(t *testing.T) {
	p := Start(t, LMDeploy, Options{})
	r := post(t, p.BaseURL()+"/chat/completions", chatBody(p.Opts.Model, "hi", 3, "stream", true, "stream_options", map[string]any{"include_usage": true}))
	s := readStream(t, r.body)
	if len(s.events) != 4 || !s.done {
		t.Fatalf("%s; want 3 token chunks, a finish chunk, [DONE]", r.body)
	}
	for i, ev := range s.events {
		u, _ := ev["usage"].(map[string]any)
		d, _ := choice0(ev)["delta"].(map[string]any)
		if want := min(i+1, 3); int(num(u["completion_tokens"])) != want || d["role"] != "assistant" {
			t.Errorf("chunk %d: %v; want completion_tokens %d and role assistant", i, ev, want)
		}
	}
	if c := choice0(s.events[3]); c["finish_reason"] != "length" || c["delta"].(map[string]any)["content"] != "" {
		t.Errorf("last chunk %v", s.events[3])
	}
	r = post(t, p.BaseURL()+"/chat/completions", chatBody(p.Opts.Model, "hi", 3, "stream", true))
	for _, ev := range readStream(t, r.body).events {
		if ev["usage"] != nil {
			t.Errorf("usage without include_usage: %v", ev)
		}
	}
}

// /v1/models is one ModelCard, owned_by "lmdeploy", with no session length.
func TestLMDeployModelCardNamesNoContext(t *testing.T) {
	p := Start(t, LMDeploy, Options{Context: 32768})
	r := get(t, p.BaseURL()+"/models")
	data, _ := r.json(t)["data"].([]any)
	if len(data) != 1 {
		t.Fatalf("%s", r.body)
	}
	card := data[0].(map[string]any)
	if card["id"] != p.Opts.Model || card["owned_by"] != "lmdeploy" || card["root"] != p.Opts.Model {
		t.Errorf("card %v", card)
	}
	if strings.Contains(string(r.body), "32768") {
		t.Errorf("the card states the session length: %s", r.body)
	}
}

// Without --logprobs-mode a chat request asking logprobs is refused; with
// it, logprobs come only with top_logprobs too, and each entry's
// top_logprobs leaves out the sampled token, which is the entry's own.
func TestLMDeployLogprobsNeedTheModeAndTheirTopListOmitsTheSampledToken(t *testing.T) {
	p := Start(t, LMDeploy, Options{})
	r := post(t, p.BaseURL()+"/chat/completions", chatBody(p.Opts.Model, "hi", 2, "logprobs", true, "top_logprobs", 5))
	if r.status != 400 || r.json(t)["message"] != "Logprobs(True)/top_logprobs(5) requested " {
		t.Errorf("without --logprobs-mode: %d %s", r.status, r.body)
	}
	q := Start(t, LMDeploy, Options{LMDeploy: LMDeployOptions{LogprobsMode: "raw_logprobs"}})
	r = post(t, q.BaseURL()+"/chat/completions", chatBody(q.Opts.Model, "hi", 2, "logprobs", true))
	if c := choice0(r.json(t)); r.status != 200 || c["logprobs"] != nil {
		t.Errorf("logprobs without top_logprobs: %d %s; want none", r.status, r.body)
	}
	r = post(t, q.BaseURL()+"/chat/completions", chatBody(q.Opts.Model, "hi", 2, "logprobs", true, "top_logprobs", 5, "temperature", 0))
	lp, _ := choice0(r.json(t))["logprobs"].(map[string]any)
	content, _ := lp["content"].([]any)
	if len(content) != 2 {
		t.Fatalf("%s", r.body)
	}
	for _, e := range content {
		e := e.(map[string]any)
		for _, c := range e["top_logprobs"].([]any) {
			if c.(map[string]any)["token"] == e["token"] {
				t.Errorf("the sampled token %q is in its top_logprobs: %v", e["token"], e)
			}
		}
		if len(e["top_logprobs"].([]any)) == 0 {
			t.Errorf("no other candidates: %v", e)
		}
	}
}

// --enable-metrics serves PrometheusStatLogger's lmdeploy: series,
// labelled engine and model_name; without it there is no /metrics. An API
// key guards the /v1 routes (check_api_key's 401), not /health.
func TestLMDeployMetricsAndAPIKey(t *testing.T) {
	p := Start(t, LMDeploy, Options{Metrics: true, APIKey: "k"})
	post(t, p.BaseURL()+"/chat/completions", chatBody(p.Opts.Model, "hi", 3), "Authorization", "Bearer k")
	r := get(t, p.URL+"/metrics")
	for _, want := range []string{`lmdeploy:num_requests_running{engine="0",model_name="zai-org/GLM-4.5-Air"} 0.0`,
		`lmdeploy:generation_tokens_total{engine="0",model_name="zai-org/GLM-4.5-Air"} 3.0`} {
		if !strings.Contains(string(r.body), want) {
			t.Errorf("/metrics lacks %q: %s", want, r.body)
		}
	}
	if r := get(t, Start(t, LMDeploy, Options{}).URL+"/metrics"); r.status != 404 {
		t.Errorf("/metrics without --enable-metrics: %d", r.status)
	}
	if r := get(t, p.URL+"/health"); r.status != 200 {
		t.Errorf("/health with a key: %d", r.status)
	}
	r = post(t, p.BaseURL()+"/chat/completions", chatBody(p.Opts.Model, "hi", 3))
	if d, _ := r.json(t)["detail"].(map[string]any); r.status != 401 || d["error"].(map[string]any)["code"] != "invalid_api_key" {
		t.Errorf("no key: %d %s", r.status, r.body)
	}
}

// Without --tool-call-parser a request's tools are text to the template:
// the answer is content, its finish "stop". With one, the call streams as
// tool_calls deltas, its first naming the function, and the "stop" finish
// becomes "tool_calls" (completion_stream_generator).
func TestLMDeployCallsToolsOnlyWithAToolCallParser(t *testing.T) {
	tools := []any{map[string]any{"type": "function", "function": map[string]any{"name": "get_weather", "parameters": map[string]any{"type": "object"}}}}
	for _, parser := range []string{"", "glm45"} {
		p := Start(t, LMDeploy, Options{EOSAfter: 4, LMDeploy: LMDeployOptions{ToolCallParser: parser}})
		r := post(t, p.BaseURL()+"/chat/completions", chatBody(p.Opts.Model, "weather?", 8, "stream", true, "tools", tools, "tool_choice", "required"))
		s := readStream(t, r.body)
		if len(s.events) != 5 || !s.done {
			t.Fatalf("parser %q: %s; want 4 token chunks and a finish chunk", parser, r.body)
		}
		d, _ := choice0(s.events[0])["delta"].(map[string]any)
		calls, _ := d["tool_calls"].([]any)
		finish := choice0(s.events[4])["finish_reason"]
		switch {
		case parser == "" && (calls != nil || d["content"] == "" || finish != "stop"):
			t.Errorf("no parser: first delta %v, finish %v; want content and stop", d, finish)
		case parser != "" && (len(calls) != 1 || calls[0].(map[string]any)["function"].(map[string]any)["name"] != "get_weather" || finish != "tool_calls"):
			t.Errorf("parser: first delta %v, finish %v; want a call of get_weather and tool_calls", d, finish)
		}
	}
}
