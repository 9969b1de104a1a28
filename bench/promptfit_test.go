package bench

import (
	"context"
	"strings"
	"testing"

	"github.com/glmbench/glmbench/endpoints"
	"github.com/glmbench/glmbench/endpoints/endpointstest"
)

// Ollama's runner keeps a prompt of num_ctx tokens whole and cuts one past
// it (len(inputs) > numCtx), and IN is usage.prompt_tokens, chat template
// included, as Ollama's own count is: so IN = num_ctx runs, whatever OUT
// (the runner shifts its context for output), and IN = num_ctx+1 is
// refused before any load, naming where num_ctx was read.
func TestPromptFitHoldsINToOllamasNumCtxInclusive(t *testing.T) {
	t.Parallel()
	p := endpointstest.Start(t, endpointstest.Ollama, endpointstest.Options{Model: "qwen2.5:7b", Context: 2048, Ollama: endpointstest.OllamaOptions{Loaded: true}})
	tr := endpoints.NewTransport(endpoints.TransportOptions{Conns: 1})
	defer tr.Close()
	c := endpoints.NewClient(resolve(t, p.BaseURL(), p.Opts.Model), tr)
	if err := promptFit(context.Background(), c, []Spec{{Name: "edge", N: 1, In: 2048, Out: 512}}); err != nil {
		t.Errorf("IN 2,048 on num_ctx 2,048: %v; want it run", err)
	}
	err := promptFit(context.Background(), c, []Spec{{Name: "edge", N: 1, In: 2048, Out: 16}, {Name: "past", N: 1, In: 2049, Out: 16}})
	if err == nil || !strings.Contains(err.Error(), "phase past: IN is 2,049 tokens, more than the endpoint's longest prompt of 2,048 tokens (context_length in GET /api/ps") {
		t.Errorf("IN 2,049 on num_ctx 2,048: %v; want phase past refused, naming /api/ps", err)
	}
}
