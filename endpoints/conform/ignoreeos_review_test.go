package conform

import (
	"strings"
	"testing"
)

// Without usage in streams, max-tokens is a skip ("no chunk of the stream
// carries usage"): it found nothing about ignore_eos, and the stream with
// it ended, which is all the checks built on it need. They send ignore_eos
// as before, and none says max-tokens found it not honoured.
func TestAMaxTokensWithNoCountSaysNothingOfIgnoreEOS(t *testing.T) {
	t.Parallel()
	e := startEngine(t, withFaults(t, "no-usage"))
	res := run(t, testConfig(e.BaseURL(), e.ModelName()))
	if r := res["max-tokens"]; r.Status != string(Skip) || !strings.Contains(r.Detail, "no chunk of the stream carries usage") {
		t.Fatalf("max-tokens: %s %q, want the skip for no usage", r.Status, r.Detail)
	}
	for id, r := range res {
		if strings.Contains(r.Detail, "found not honoured") {
			t.Errorf("%s: %s %q: max-tokens found no such thing", id, r.Status, r.Detail)
		}
	}
	if r := res["disconnect"]; r.Status != string(Pass) || strings.Contains(r.Detail, "without ignore_eos") {
		t.Errorf("disconnect: %s %q, want a pass with ignore_eos sent", r.Status, r.Detail)
	}
}
