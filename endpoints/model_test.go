package endpoints

import (
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

// The names real servers answer under, each with its truth: a dated or
// tagged version of the model asked is the same model; a sibling, another
// family, or a proxy's fallback is not.
func TestSameModelTellsVersionsFromOtherModels(t *testing.T) {
	for _, tc := range []struct {
		asked, answered string
		same            bool
	}{
		{"glm-5", "glm-5", true},
		{"gpt-4o", "gpt-4o-2024-08-06", true},                     // OpenAI's dated snapshot
		{"claude-sonnet-4-5", "claude-sonnet-4-5-20250929", true}, // Anthropic's alias
		{"claude-sonnet-4-5", "claude-sonnet-4-5@20250929", true}, // Vertex AI
		{"llama3.2", "llama3.2:latest", true},                     // Ollama's tag
		{"openai/gpt-4o", "openai/gpt-4o-2024-08-06", true},
		{"openai/gpt-4o", "gpt-4o", true}, // a provider's prefix dropped
		{"/models/GLM-5", "GLM-5", true},  // a vLLM model served from its path
		{"GLM-5", "glm-5", true},
		{"gpt-4o", "gpt-4o-mini", false},                        // a sibling, not a version
		{"openai/gpt-4o", "anthropic/claude-3.5-sonnet", false}, // OpenRouter's fallback
		{"my-deployment", "gpt-4o-2024-08-06", false},           // Azure: said as an alias
		{"glm-5", "glm-5-", false},
		{"glm-5", "glm-5:", false},
		{"glm-5", "glm-50", false},
		{"", "anything", true}, // nothing asked: nothing to compare
		{"glm-5", "", true},    // nothing named
	} {
		if got := SameModel(tc.asked, tc.answered); got != tc.same {
			t.Errorf("SameModel(%q, %q) = %v, want %v", tc.asked, tc.answered, got, tc.same)
		}
	}
}

// A hostile server's "model" is kept as a name a terminal and report.md
// can show: at most maxModelName bytes of it and a "…" where cut, valid
// UTF-8, no control character (a terminal escape's ESC, a newline),
// escapes decoded first; a raw control or non-UTF-8 byte makes the event
// malformed JSON, read as no chunk at all. The truths: each input's kept
// name, computed by hand.
func TestAHostileModelNameIsKeptShowable(t *testing.T) {
	huge := strings.Repeat("m", 1<<20)
	ep := &Endpoint{Model: "glm-5"}
	for _, tc := range []struct{ name, chunk, want string }{
		{"the one asked", `{"model":"glm-5"}`, "glm-5"},
		{"escaped ESC and newline", `{"model":"a\u001b[2J\nb"}`, "a?[2J b"},
		{"raw ESC", "{\"model\":\"a\x1b[31mb\"}", ""},
		{"not UTF-8", "{\"model\":\"a\xff\xfeb\"}", ""},
		{"a lone surrogate", `{"model":"a\ud800b"}`, "a\uFFFDb"},
		{"huge", `{"model":"` + huge + `"}`, strings.Repeat("m", maxModelName) + "…"},
	} {
		var c Chunk
		if err := ParseChunk([]byte(tc.chunk), &c); err != nil || tc.want == "" {
			if (err == nil) != (tc.want != "") {
				t.Errorf("%s: parsed with error %v, want one: %v", tc.name, err, tc.want == "")
			}
			continue
		}
		got := chunkModel(&c, ep)
		if len(got) > maxModelName+len("…") || !utf8.ValidString(got) || strings.IndexFunc(got, unicode.IsControl) >= 0 {
			t.Errorf("%s: kept %d bytes %q: not a showable name", tc.name, len(got), got[:min(len(got), 40)])
		}
		if got != tc.want {
			t.Errorf("%s: kept %q, want %q", tc.name, got[:min(len(got), 40)], tc.want[:min(len(tc.want), 40)])
		}
	}
}
