package conform

import (
	"strings"
	"testing"

	"github.com/glmbench/glmbench/endpoints/endpointstest"
)

// Ollama drops ignore_eos (its request struct has no such field), so a
// model that stops at its EOS ends a stream before max_tokens. max-tokens
// fails, naming that; the checks built on its streams (concurrent-streams,
// disconnect) are judged as for a server without ignore_eos, on what they
// check: before, concurrent-streams failed all 32 streams for the same
// dropped field ("max_tokens 4 with ignore_eos, but completion_tokens 3").
// The fake's model stops after 3 tokens unless ignore_eos is honoured.
func TestAgainstOllamaADroppedIgnoreEOSFailsMaxTokensAlone(t *testing.T) {
	t.Parallel()
	p := endpointstest.Start(t, endpointstest.Ollama, endpointstest.Options{EOSAfter: 3})
	res := run(t, testConfig(p.BaseURL(), p.Opts.Model))
	deviates := map[string]bool{"max-tokens": true, "n": true, "completions-echo": true, "prompt-token-ids": true, "context-overflow": true}
	for id, r := range res {
		if (r.Status == string(Fail)) != deviates[id] {
			t.Errorf("%s: %s %q", id, r.Status, r.Detail)
		}
	}
	if r := res["max-tokens"]; !strings.Contains(r.Detail, "does not honour ignore_eos") {
		t.Errorf("max-tokens: %q; want it to name ignore_eos not honoured", r.Detail)
	}
	if r := res["concurrent-streams"]; r.Status != string(Pass) || !strings.Contains(r.Detail, "without ignore_eos, which max-tokens found not honoured") {
		t.Errorf("concurrent-streams: %s %q; want a pass judged without ignore_eos", r.Status, r.Detail)
	}
}
