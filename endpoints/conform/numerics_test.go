package conform

import (
	"strings"
	"testing"
)

// The reference engine is deterministic and batch-invariant by
// construction (every reduction in a fixed order, whatever the batch): the
// same request gives the same tokens and logprobs bit for bit, 8 times and
// inside a burst of 64.
func TestTheBuiltInEngineIsDeterministicAndBatchInvariant(t *testing.T) {
	t.Parallel()
	e := startEngine(t, nil)
	cfg := testConfig(e.BaseURL(), e.ModelName())
	cfg.Only = []string{"determinism", "batch-invariance"}
	res := run(t, cfg)
	for id, want := range map[string]string{
		"determinism":      "8 answers (3 in a row, then 5 at once) identical: 32 tokens each, with their logprobs and top-5 logprobs, bit for bit",
		"batch-invariance": "inside a burst of 64 different prompts at once: 32 tokens, with their logprobs and top-5 logprobs, identical bit for bit",
	} {
		if r := res[id]; r.Status != string(Pass) || !strings.Contains(r.Detail, want) {
			t.Errorf("%s: %s %q, want a pass saying %q", id, r.Status, r.Detail, want)
		}
	}
}
