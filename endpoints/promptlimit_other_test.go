package endpoints_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
)

// PromptLimit is read on every server whose context is stated and fits
// (bench's preflight, then promptFit), so a server that is neither Ollama
// nor TGI but answers /api/ps and /info with a 200 of JSON must state no
// prompt limit: LM Studio answers every unknown route 200 with its
// "Unexpected endpoint or method" error (lmstudio-bug-tracker#618), and an
// Ollama behind the same root that has loaded another model does not bound
// this one's prompt.
func TestPromptLimitIsNoneWhereNoOllamaOrTGIStatesOne(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		answer func(path string) string
	}{
		{"LM Studio's 200 for every unknown route", func(path string) string {
			return fmt.Sprintf(`{"error":"Unexpected endpoint or method. (GET %s)"}`, path)
		}},
		{"an empty list of loaded models and an empty info", func(string) string { return `{"models":[]}` }},
		{"another model loaded, with its num_ctx", func(string) string {
			return `{"models":[{"name":"llama3.2:latest","model":"llama3.2:latest","details":{"format":"gguf"},"context_length":2048}]}`
		}},
		{"TGI's fields of the wrong type", func(string) string { return `{"max_total_tokens":"4096","max_input_tokens":"1024"}` }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				io.WriteString(w, tc.answer(r.URL.Path))
			}))
			defer srv.Close()
			if n, source := modelClient(t, srv.URL+"/v1", "qwen2.5:7b").PromptLimit(context.Background()); n != 0 || source != "" {
				t.Fatalf("PromptLimit %d from %q; want none", n, source)
			}
		})
	}
}
