package bench

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/glmbench/glmbench/endpoints"
)

// Ollama's runner keeps a prompt of num_ctx tokens whole and cuts one past
// it (len(inputs) > numCtx), and IN is usage.prompt_tokens, chat template
// included, as Ollama's own count is: so IN = num_ctx runs, whatever OUT
// (the runner shifts its context for output), and IN = num_ctx+1 is
// refused before any load, naming where num_ctx was read.
func TestPromptFitHoldsINToOllamasNumCtxInclusive(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if r.URL.Path != "/api/ps" {
			w.WriteHeader(http.StatusNotFound)
			io.WriteString(w, `{"error":"404 page not found"}`)
			return
		}
		io.WriteString(w, `{"models":[{"name":"qwen2.5:7b","model":"qwen2.5:7b","details":{"format":"gguf"},"context_length":2048}]}`)
	}))
	defer srv.Close()
	ep, err := endpoints.Resolve(endpoints.Flags{Endpoint: srv.URL + "/v1", Model: "qwen2.5:7b"}, func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	tr := endpoints.NewTransport(endpoints.TransportOptions{Conns: 1})
	defer tr.Close()
	c := endpoints.NewClient(ep, tr)
	if err := promptFit(context.Background(), c, []Spec{{Name: "edge", N: 1, In: 2048, Out: 512}}); err != nil {
		t.Errorf("IN 2,048 on num_ctx 2,048: %v; want it run", err)
	}
	err = promptFit(context.Background(), c, []Spec{{Name: "edge", N: 1, In: 2048, Out: 16}, {Name: "past", N: 1, In: 2049, Out: 16}})
	if err == nil || !strings.Contains(err.Error(), "phase past: IN is 2,049 tokens, more than the endpoint's longest prompt of 2,048 tokens (context_length in GET /api/ps") {
		t.Errorf("IN 2,049 on num_ctx 2,048: %v; want phase past refused, naming /api/ps", err)
	}
}
