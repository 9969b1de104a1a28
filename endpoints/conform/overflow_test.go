package conform

import (
	"fmt"
	"strings"
	"testing"

	"github.com/glmbench/glmbench/endpoints/endpointstest"
)

// Where /models states no context but the server does beside the API
// (llama.cpp's /props n_ctx per slot, Ollama's /api/ps, TGI's /info
// max_total_tokens), context-overflow sends the overlong prompt too, of the
// personality's context plus 64 words, and says how it was answered: by
// docs/SERVERS.md, llama.cpp (truncating, the default build) and Ollama
// accept it with 200, TGI refuses it with its own 422 body, not OpenAI's.
// Each verdict stays the fail it was for max_tokens past the context; each
// now names the prompt too.
func TestContextOverflowSendsAPromptPastTheContextTheServerStates(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		kind, source, answer string
	}{
		{endpointstest.LlamaCpp, "n_ctx per slot in GET /props", "answered 200"},
		{endpointstest.Ollama, "context_length in GET /api/ps; OLLAMA_CONTEXT_LENGTH sets it", "answered 200"},
		{endpointstest.TGI, "max_total_tokens in GET /info", "HTTP 422, but the error body has no \"error\" object"},
	} {
		t.Run(tc.kind, func(t *testing.T) {
			t.Parallel()
			p := endpointstest.Start(t, tc.kind, endpointstest.Options{})
			res := run(t, testConfig(p.BaseURL(), p.Opts.Model))["context-overflow"]
			n := p.Opts.Context
			want := fmt.Sprintf("a prompt of %d words (context %d, %s): %s", n+64, n, tc.source, tc.answer)
			if res.Status != string(Fail) || n <= 0 || !strings.Contains(res.Detail, want) {
				t.Errorf("%s %q; want a fail naming %q", res.Status, res.Detail, want)
			}
		})
	}
}

// A llama.cpp build that refuses a prompt past the slot's context (b7062 on)
// still accepts max_tokens past it: the check fails for that alone.
func TestContextOverflowOnARefusingLlamaCppFailsForMaxTokensAlone(t *testing.T) {
	t.Parallel()
	p := endpointstest.Start(t, endpointstest.LlamaCpp, endpointstest.Options{LlamaOverflow: endpointstest.LlamaReject})
	res := run(t, testConfig(p.BaseURL(), p.Opts.Model))["context-overflow"]
	if res.Status != string(Fail) || !strings.HasPrefix(res.Detail, "max_tokens 10000000: answered 200") || strings.Contains(res.Detail, "a prompt of") {
		t.Errorf("%s %q; want a fail for max_tokens alone", res.Status, res.Detail)
	}
}
