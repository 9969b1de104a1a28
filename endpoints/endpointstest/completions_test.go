package endpointstest

import "testing"

// A streamed /v1/completions answer as each server sends it: no role
// chunk, object "text_completion", the text in choices[0].text (a string,
// "" on the finish chunk), and usage where the server puts it: vLLM and
// SGLang in an include_usage chunk of its own with choices [], llama.cpp
// on the finish chunk with its timings, include_usage or not (every
// version: its completions stream never had a usage chunk apart).
func TestCompletionsStreamsHaveEachServersShape(t *testing.T) {
	for _, tc := range []struct {
		name        string
		kind        string
		opts        Options
		usageOnFin  bool
		withoutIncl bool
	}{
		{"llama.cpp", LlamaCpp, Options{}, true, true},
		{"llama.cpp b6497+", LlamaCpp, Options{LlamaRoleChunk: true, LlamaUsageChunk: true}, true, true},
		{"vllm", VLLM, Options{}, false, false},
		{"sglang", SGLang, Options{}, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := Start(t, tc.kind, tc.opts)
			for _, incl := range []bool{true, false} {
				s := streamed(t, p.BaseURL()+"/completions", withUsage(map[string]any{"model": p.Opts.Model, "prompt": "Once upon a time", "max_tokens": 7, "stream": true, "ignore_eos": true}, incl))
				text, finishes := 0, 0
				var finUsage, apartUsage map[string]any
				var fin map[string]any
				for _, ev := range s.events {
					if ev["object"] != "text_completion" {
						t.Fatalf("object %v", ev["object"])
					}
					c := choice0(ev)
					if c == nil {
						apartUsage, _ = ev["usage"].(map[string]any)
						continue
					}
					if _, ok := c["delta"]; ok {
						t.Fatalf("a completions chunk with a delta: %v", c)
					}
					s, ok := c["text"].(string)
					if !ok {
						t.Fatalf("text %#v is not a string", c["text"])
					}
					if s != "" {
						text++
					}
					if c["finish_reason"] != nil {
						finishes++
						fin = c
						finUsage, _ = ev["usage"].(map[string]any)
					}
				}
				if text != 7 || finishes != 1 || fin["finish_reason"] != "length" || fin["text"] != "" {
					t.Errorf("%d text chunks, %d finishes (%v); want 7 and one with text \"\" and length", text, finishes, fin)
				}
				want := incl || tc.withoutIncl
				if (finUsage != nil) != (want && tc.usageOnFin) || (apartUsage != nil) != (want && !tc.usageOnFin) {
					t.Errorf("include_usage %v: usage on finish %v, apart %v", incl, finUsage, apartUsage)
				}
				u := finUsage
				if u == nil {
					u = apartUsage
				}
				if want && (num(u["completion_tokens"]) != 7 || num(u["prompt_tokens"]) != float64(Tokens("Once upon a time"))) {
					t.Errorf("usage %v: want 7 completion tokens and the raw prompt's %d", u, Tokens("Once upon a time"))
				}
			}
		})
	}
}
