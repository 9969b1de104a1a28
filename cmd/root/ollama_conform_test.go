package root

import (
	"strings"
	"testing"

	"github.com/glmbench/glmbench/endpoints/endpointstest"
)

// conform against Ollama fails where Ollama deviates (docs/SERVERS.md) and
// nowhere else: no echo (completions-echo), no token-id prompts, max_tokens
// past the context accepted (context shift) and n dropped; what run relies
// on passes.
func TestConformAgainstOllamaFailsOnlyWhereItDeviates(t *testing.T) {
	t.Parallel()
	p := endpointstest.Start(t, endpointstest.Ollama, endpointstest.Options{})
	code, got, stderr := checks(t, p.BaseURL())
	if code != 1 {
		t.Fatalf("exit %d, want 1 (Ollama deviates); stderr:\n%s", code, stderr)
	}
	deviates := map[string]bool{"completions-echo": true, "prompt-token-ids": true, "context-overflow": true, "n": true}
	for id, c := range got {
		if (c.Status == "fail") != deviates[id] {
			t.Errorf("%s: %s: %s", id, c.Status, c.Detail)
		}
	}
	for _, id := range []string{"stream", "stream-usage", "max-tokens", "concurrent-streams", "disconnect", "go-openai", "logprobs", "unknown-model", "bad-request"} {
		if got[id].Status != "pass" {
			t.Errorf("%s: %+v; want pass", id, got[id])
		}
	}
	if c := got["n"]; !strings.Contains(c.Detail, "ignored") {
		t.Errorf("n: %+v; want it named ignored", c)
	}
}
