package endpoints_test

import (
	"context"
	"testing"

	"github.com/glmbench/glmbench/endpoints/endpointstest"
)

// Ollama states the context its requests get (num_ctx, from
// OLLAMA_CONTEXT_LENGTH, a Modelfile or its VRAM-based default) only in
// GET /api/ps, for a model that is loaded; /v1/models has no context and
// /api/show's model_info only the trained one. num_ctx bounds the prompt
// (one past it is cut), not prompt plus output: the runner shifts its
// context and generates on (Shift, on unless a request says no), so it is
// PromptLimit's, and ContextLength states none.
func TestContextLengthIsReadFromOllamasLoadedModels(t *testing.T) {
	t.Parallel()
	contextOf := func(t *testing.T, base, model string) (int, string) {
		t.Helper()
		c := modelClient(t, base, model)
		if total, source, err := c.ContextLength(context.Background()); err != nil || total != 0 {
			t.Errorf("ContextLength %d from %q (%v); want none: Ollama bounds no prompt plus output", total, source, err)
		}
		n, source := c.PromptLimit(context.Background())
		return n, source
	}
	t.Run("a loaded model's context_length, its name with or without the default tag", func(t *testing.T) {
		t.Parallel()
		p := endpointstest.Start(t, endpointstest.Ollama, endpointstest.Options{Context: 8192, Ollama: endpointstest.OllamaOptions{Loaded: true}})
		for _, model := range []string{"llama3.2", "llama3.2:latest", ""} {
			if n, source := contextOf(t, p.BaseURL(), model); n != 8192 || source != "context_length in GET /api/ps; OLLAMA_CONTEXT_LENGTH sets it" {
				t.Errorf("model %q: %d from %q; want 8192 from /api/ps", model, n, source)
			}
		}
	})
	t.Run("a model not loaded yet states none (the trained context is not it)", func(t *testing.T) {
		t.Parallel()
		p := endpointstest.Start(t, endpointstest.Ollama, endpointstest.Options{Context: 8192})
		if n, source := contextOf(t, p.BaseURL(), "llama3.2"); n != 0 {
			t.Errorf("%d from %q; want none", n, source)
		}
	})
	// An MLX model (format "safetensors", Ollama's MLX runner): /api/ps
	// states the scheduler's num_ctx (ollama/ollama PR #16918) while the
	// runner holds a prompt to the architecture's maximum and cuts none
	// (issue #18125): the number is no limit, so none is stated and a phase
	// past it is not refused.
	t.Run("an MLX model's context_length, which its runner does not enforce, states none", func(t *testing.T) {
		t.Parallel()
		p := endpointstest.Start(t, endpointstest.Ollama, endpointstest.Options{Context: 4096, Ollama: endpointstest.OllamaOptions{Loaded: true, MLX: true}})
		if n, source := contextOf(t, p.BaseURL(), "llama3.2"); n != 0 {
			t.Errorf("%d from %q; want none", n, source)
		}
	})
	// The runner's num_ctx is the one asked for, capped at the trained
	// context (llm/server.go NewLlamaServer); late-2025 builds' /api/ps
	// said the one asked for (runnerRef.Options), so OLLAMA_CONTEXT_LENGTH
	// 262144 on a model trained for 131072 read 262144. The trained context
	// from POST /api/show caps it.
	t.Run("a context_length past the trained context is capped at it", func(t *testing.T) {
		t.Parallel()
		p := endpointstest.Start(t, endpointstest.Ollama, endpointstest.Options{Context: 262144, Ollama: endpointstest.OllamaOptions{Loaded: true, PsRequested: true, TrainedContext: 131072}})
		if n, source := contextOf(t, p.BaseURL(), "llama3.2"); n != 131072 || source != "context_length in GET /api/ps, capped at the trained context in POST /api/show; OLLAMA_CONTEXT_LENGTH sets it" {
			t.Errorf("%d from %q; want 131072, the trained context", n, source)
		}
	})
	for _, tc := range []struct{ name, ps string }{
		{"an MLX model's soft size", `{"models":[{"name":"llama3.2:latest","model":"llama3.2:latest","size":1,"details":{"format":"safetensors"},"context_length":4096}]}`},
		{"another model loaded", `{"models":[{"name":"mistral:latest","model":"mistral:latest","size":1,"context_length":32768}]}`},
		{"a build whose /api/ps has no context_length", `{"models":[{"name":"llama3.2:latest","model":"llama3.2:latest","size":1,"size_vram":1}]}`},
	} {
		t.Run(tc.name+" states none", func(t *testing.T) {
			t.Parallel()
			srv := infoServer{map[string]string{"/api/ps": tc.ps, "/v1/models": `{"object":"list","data":[{"id":"llama3.2:latest","object":"model","created":1,"owned_by":"library"}]}`}, ginNotFound}
			if n, source := contextOf(t, srv.start(t)+"/v1", "llama3.2"); n != 0 {
				t.Errorf("%d from %q; want none", n, source)
			}
		})
	}
}
