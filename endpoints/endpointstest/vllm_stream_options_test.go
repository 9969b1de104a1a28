package endpointstest

import "testing"

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
