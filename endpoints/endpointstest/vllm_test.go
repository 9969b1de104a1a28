package endpointstest

import (
	"fmt"
	"strings"
	"testing"
)

func TestVLLMsPromptTokensCounterCountsTokensNotRequests(t *testing.T) {
	// Two requests of known prompt counts: vllm:prompt_tokens_total is
	// their sum, as vLLM's counter of prefill tokens is.
	p := Start(t, VLLM, Options{})
	for _, n := range []int{10, 30} {
		if r := post(t, p.BaseURL()+"/chat/completions", chatBody(p.Opts.Model, filler(n), 2)); r.status != 200 {
			t.Fatalf("status %d %s", r.status, r.body)
		}
	}
	sum := 0
	for _, n := range p.PromptTokens() {
		sum += n
	}
	if len(p.PromptTokens()) != 2 || sum <= 2 {
		t.Fatalf("prompt counts %v", p.PromptTokens())
	}
	r := get(t, p.URL+"/metrics")
	want := fmt.Sprintf("vllm:prompt_tokens_total{model_name=%q} %d\n", p.Opts.Model, sum)
	if !strings.Contains(string(r.body), want) {
		t.Fatalf("no %q in\n%s", want, r.body)
	}
}

func TestVLLMsRendererChecksThePromptBesideTheCapItWasAsked(t *testing.T) {
	// vLLM 0.18+ (vllm/renderers/params.py): the output budget is the cap
	// asked for (0 without one), the prompt must fit in L minus it, and a
	// cap past L is refused by the field that carried it.
	const L = 64
	p := Start(t, VLLM, Options{Context: L})
	for _, tc := range []struct {
		name   string
		body   map[string]any
		status int
		msg    string
	}{
		{"a prompt that fits beside its cap is served", chatBody(p.Opts.Model, filler(20), 30), 200, ""},
		{"without a cap, a prompt that fits the context is served", uncapped(chatBody(p.Opts.Model, filler(40), 1)), 200, ""},
		{"a prompt past L - M counts L - M + 1, at least", chatBody(p.Opts.Model, filler(40), 30), 400,
			"This model's maximum context length is 64 tokens. However, you requested 30 output tokens and your prompt contains at least 35 input tokens, for a total of at least 65 tokens. Please reduce the length of the input prompt or the number of requested output tokens. (parameter=input_tokens, value=35)"},
		{"without a cap the budget is 0", uncapped(chatBody(p.Opts.Model, filler(80), 1)), 400,
			"This model's maximum context length is 64 tokens. However, you requested 0 output tokens and your prompt contains at least 65 input tokens, for a total of at least 65 tokens. Please reduce the length of the input prompt or the number of requested output tokens. (parameter=input_tokens, value=65)"},
		{"a max_completion_tokens past L is named as such", completionCapped(chatBody(p.Opts.Model, "hi", 1), 65), 400,
			"max_completion_tokens=65 cannot be greater than max_model_len=max_total_tokens=64. Please request fewer output tokens. (parameter=max_completion_tokens, value=65)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := post(t, p.BaseURL()+"/chat/completions", tc.body)
			if r.status != tc.status {
				t.Fatalf("status %d, want %d: %s", r.status, tc.status, r.body)
			}
			if tc.status != 200 {
				if got := errMessage(t, r); got != tc.msg {
					t.Fatalf("message %q\nwant      %q", got, tc.msg)
				}
			}
		})
	}
}

// uncapped is body without max_tokens.
func uncapped(body map[string]any) map[string]any {
	delete(body, "max_tokens")
	return body
}

// completionCapped is body capped by max_completion_tokens n alone.
func completionCapped(body map[string]any, n int) map[string]any {
	delete(body, "max_tokens")
	body["max_completion_tokens"] = n
	return body
}

func TestVLLMRefusesStreamOptionsOnARequestThatDoesNotStream(t *testing.T) {
	// validate_stream_options reads both fields with Python's truth: only
	// a non-empty stream_options beside a stream that is not true is refused.
	p := Start(t, VLLM, Options{})
	for _, tc := range []struct {
		name   string
		extra  []any
		status int
	}{
		{"include_usage without stream", []any{"stream_options", map[string]any{"include_usage": true}}, 400},
		{"include_usage false is still a non-empty object", []any{"stream_options", map[string]any{"include_usage": false}, "stream", false}, 400},
		{"an empty object passes", []any{"stream_options", map[string]any{}}, 200},
		{"null passes", []any{"stream_options", nil}, 200},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := post(t, p.BaseURL()+"/chat/completions", chatBody(p.Opts.Model, "hi", 2, tc.extra...))
			if r.status != tc.status {
				t.Fatalf("status %d, want %d: %s", r.status, tc.status, r.body)
			}
			if tc.status == 400 && errMessage(t, r) != "Stream options can only be defined when `stream=True`. (parameter=stream_options)" {
				t.Fatalf("message %q", errMessage(t, r))
			}
		})
	}
	r := post(t, p.BaseURL()+"/chat/completions", chatBody(p.Opts.Model, "hi", 2, "stream", true, "stream_options", map[string]any{"include_usage": true}))
	if r.status != 200 {
		t.Fatalf("a stream with include_usage: %d %s", r.status, r.body)
	}
}
