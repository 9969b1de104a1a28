package phasewarn

import (
	"strings"
	"testing"

	"github.com/glmbench/glmbench/reports/schema"
)

func TestWarnsOfAProxysRetriesAndFallbacksAndOnlyOfThem(t *testing.T) {
	t.Parallel()
	if w := Proxy("phase p", &schema.PhaseResult{Phase: "p", Completed: 8}); len(w) != 0 {
		t.Errorf("a phase no proxy retried: %q; want no warning", w)
	}
	w := Proxy("phase p", &schema.PhaseResult{Phase: "p", Completed: 8, ProxyRetried: 3})
	if len(w) != 1 || !strings.HasPrefix(w[0], "glmbench: warning: phase p: 3 of 8 completed requests were retried inside the proxy (x-litellm-attempted-retries") ||
		!strings.Contains(w[0], "num_retries to 0") {
		t.Errorf("3 of 8 retried: %q", w)
	}
	// A fallback is the louder warning, and comes first.
	w = Proxy("phase p", &schema.PhaseResult{Phase: "p", Completed: 8, ProxyRetried: 3, ProxyFallback: 2})
	if len(w) != 2 || !strings.HasPrefix(w[0], "glmbench: warning: phase p: 2 of 8 completed requests were answered by a FALLBACK inside the proxy") ||
		!strings.Contains(w[0], "another model or provider than the one asked for") || !strings.Contains(w[1], "3 of 8 completed requests were retried") {
		t.Errorf("2 fallbacks, 3 retried of 8: %q", w)
	}
}

// Every answer named by the one same other model is what an Azure
// deployment, an older LiteLLM alias or a llama-server under its own name
// answers on every run: it is said as a note, not a warning, which stays
// for a phase that mixes models (a proxy's fallbacks for some). The
// truths: 4 of 4 completed as "gpt-4o-2024-08-06" for "my-deployment" is
// a note; 2 of 4 is a warning.
func TestOneNameForEveryAnswerIsANoteAndAMixAWarning(t *testing.T) {
	all := []schema.Record{{ModelAnswered: "gpt-4o-2024-08-06"}, {ModelAnswered: "gpt-4o-2024-08-06"}, {ModelAnswered: "gpt-4o-2024-08-06"}, {ModelAnswered: "gpt-4o-2024-08-06"}}
	got := OtherModel("phase p", &schema.PhaseResult{Phase: "p", Completed: 4, OtherModel: 4}, all, "my-deployment")
	if !strings.HasPrefix(got, "glmbench: note: phase p: 4 of 4 completed requests were answered as") {
		t.Errorf("every answer as one other model: %s\nwant a note", got)
	}
	some := []schema.Record{{ModelAnswered: "b"}, {}, {ModelAnswered: "b"}, {}}
	got = OtherModel("phase p", &schema.PhaseResult{Phase: "p", Completed: 4, OtherModel: 2}, some, "a")
	if !strings.HasPrefix(got, "glmbench: warning: phase p: 2 of 4 completed requests were answered as") {
		t.Errorf("some answers as another model: %s\nwant a warning", got)
	}
}

// Where only some answers named other models, the warning says the phase
// mixes models, naming each with its count, most first. The truth: 5
// completed records, 2 as model a, 1 as b, 2 as asked; a failed one naming
// c is not counted.
func TestTheWarningNamesAMixOfModelsByCount(t *testing.T) {
	recs := []schema.Record{
		{ModelAnswered: "b"}, {ModelAnswered: "a"}, {}, {ModelAnswered: "a"}, {},
		{ModelAnswered: "c", Class: schema.HTTP5xx},
	}
	r := &schema.PhaseResult{Phase: "p", Completed: 5, OtherModel: 3}
	got := OtherModel("phase p", r, recs, "m")
	want := `glmbench: warning: phase p: 3 of 5 completed requests were answered as another model than "m" asked ("a" ×2, "b" ×1): a proxy answered them from another model`
	if !strings.HasPrefix(got, want) {
		t.Errorf("got  %s\nwant %s…", got, want)
	}
	if OtherModel("phase p", &schema.PhaseResult{Completed: 5}, recs, "m") != "" {
		t.Error("a phase with other_model 0 got a warning")
	}
}

// A request's n below its max_tokens at finish_reason "length" is a cap of
// the server's own only where n is the server's count (usage): counted from
// content events it is fewer than the tokens wherever a chunk carries
// several (SGLang's --stream-interval, vLLM's stream_interval, speculative
// decoding's accepted drafts), and the server honoured max_tokens. The
// truth: of four completed records at max_tokens 64 ending at length, the
// one with usage 40 is cut early, the one with usage 64 is not, and the two
// counted from events (40 and 64) say nothing: cutEarly is 1.
func TestCutEarlyCountsOnlyTheServersOwnTokenCounts(t *testing.T) {
	t.Parallel()
	r := &schema.PhaseResult{OutputLen: 64}
	recs := []schema.Record{
		{MaxTokens: 64, Finish: "length", N: 40, NSource: schema.NFromUsage},
		{MaxTokens: 64, Finish: "length", N: 64, NSource: schema.NFromUsage},
		{MaxTokens: 64, Finish: "length", N: 40, NSource: schema.NFromEvents},
		{MaxTokens: 64, Finish: "length", N: 64, NSource: schema.NFromEvents},
	}
	if n := CutEarly(r, recs); n != 1 {
		t.Errorf("CutEarly = %d; want 1", n)
	}
}
