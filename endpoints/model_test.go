package endpoints

import "testing"

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
