package endpointstest

import (
	"strings"
	"testing"
	"time"
)

// These tests check the gateway personality as a LiteLLM proxy against what
// LiteLLM's docs and sources say (litellm.go names them).

func litellmOpts(o Options) Options {
	o.LiteLLM.On = true
	return o
}

func TestLiteLLMHealthTakesTheKeyAndCallsTheModelsItsProbesDoNot(t *testing.T) {
	p := Start(t, Gateway, litellmOpts(Options{APIKey: "sk-master-1234"}))
	if r := get(t, p.URL+"/health/liveliness"); r.status != 200 || string(r.body) != `"I'm alive!"` {
		t.Errorf("/health/liveliness: %d %s", r.status, r.body)
	}
	if v := get(t, p.URL+"/health/readiness").json(t); v["status"] != "connected" || v["litellm_version"] != litellmVersion {
		t.Errorf("/health/readiness: %v", v)
	}
	r := get(t, p.URL+"/health")
	e, _ := r.json(t)["error"].(map[string]any)
	if r.status != 401 || e["code"] != "401" {
		t.Errorf("/health without the key: %d %s; want 401, code \"401\"", r.status, r.body)
	}
	if calls, _ := p.LiteLLMCounts(); calls != 0 {
		t.Errorf("%d backend calls from /health without the key", calls)
	}
	r = do(t, "GET", p.URL+"/health", nil, "Authorization", "Bearer sk-master-1234")
	if calls, _ := p.LiteLLMCounts(); r.status != 200 || calls != 1 || num(r.json(t)["healthy_count"]) != 1 {
		t.Errorf("/health with the key: %d %s, %d backend calls; want 200 and one call per model", r.status, r.body, calls)
	}
}

func TestLiteLLMErrorsCarryTheStatusAsAStringCode(t *testing.T) {
	p := Start(t, Gateway, litellmOpts(Options{Context: 256}))
	for _, tc := range []struct {
		name   string
		body   map[string]any
		status int
		prefix string
	}{
		{"a prompt past vLLM's context", chatBody(p.Opts.Model, filler(300), 4), 400, "litellm.BadRequestError: Hosted_vllmException - This model's maximum context length is 256 tokens."},
		{"a model outside the model_list", chatBody("no-such-model", "hi", 4), 400, "Invalid model name passed in model=no-such-model."},
	} {
		r := post(t, p.BaseURL()+"/chat/completions", tc.body)
		e, _ := r.json(t)["error"].(map[string]any)
		msg, _ := e["message"].(string)
		if r.status != tc.status || e["code"] != "400" || !strings.HasPrefix(msg, tc.prefix) {
			t.Errorf("%s: %d %s; want %d, code \"400\", message %q...", tc.name, r.status, r.body, tc.status, tc.prefix)
		}
	}
	// The legacy route is proxied too (a chat-only gateway answers 404).
	if r := post(t, p.BaseURL()+"/completions", map[string]any{"model": p.Opts.Model, "prompt": "the cat", "max_tokens": 3}); r.status != 200 {
		t.Errorf("/v1/completions: %d %s", r.status, r.body)
	}
}

func TestLiteLLMsOwnLimiterAnswers429WithRetryAfter(t *testing.T) {
	p := Start(t, Gateway, litellmOpts(Options{RPM: 2, RetryAfter: "37"}))
	for i := range 3 {
		r := post(t, p.BaseURL()+"/chat/completions", chatBody(p.Opts.Model, "hi", 2))
		if i < 2 {
			if r.status != 200 {
				t.Fatalf("request %d within rpm_limit 2: %d %s", i, r.status, r.body)
			}
			continue
		}
		e, _ := r.json(t)["error"].(map[string]any)
		if msg, _ := e["message"].(string); r.status != 429 || e["code"] != "429" || !strings.HasPrefix(msg, "Max parallel request limit reached") || r.header.Get("Retry-After") != "37" {
			t.Errorf("request past rpm_limit 2: %d %s (retry-after %q)", r.status, r.body, r.header.Get("Retry-After"))
		}
	}
}

func TestLiteLLMSaysOnEachAnswerHowManyTimesItRetried(t *testing.T) {
	p := Start(t, Gateway, litellmOpts(Options{LiteLLM: LiteLLMOptions{Retries: 2, RetryEvery: 2, RetryDelay: time.Millisecond}}))
	for i, want := range []string{"2", "0", "2"} {
		body := chatBody(p.Opts.Model, "hi", 2)
		if i == 1 {
			body["stream"] = true
		}
		r := post(t, p.BaseURL()+"/chat/completions", body)
		if r.status != 200 || r.header.Get("x-litellm-attempted-retries") != want || r.header.Get("x-litellm-version") != litellmVersion {
			t.Errorf("request %d: %d, attempted retries %q; want %s", i, r.status, r.header.Get("x-litellm-attempted-retries"), want)
		}
	}
	// Three requests, two of them retried twice: 3 + 2×2 backend attempts.
	if _, attempts := p.LiteLLMCounts(); attempts != 7 {
		t.Errorf("%d backend attempts; want 7", attempts)
	}
}
