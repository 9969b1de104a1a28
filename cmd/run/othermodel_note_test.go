package run

import (
	"strings"
	"testing"

	"github.com/glmbench/glmbench/reports/schema"
)

// Every answer named by the one same other model is what an Azure
// deployment, an older LiteLLM alias or a llama-server under its own name
// answers on every run: it is said as a note, not a warning, which stays
// for a phase that mixes models (a proxy's fallbacks for some). The
// truths: 4 of 4 completed as "gpt-4o-2024-08-06" for "my-deployment" is
// a note; 2 of 4 is a warning.
func TestOneNameForEveryAnswerIsANoteAndAMixAWarning(t *testing.T) {
	all := []schema.Record{{ModelAnswered: "gpt-4o-2024-08-06"}, {ModelAnswered: "gpt-4o-2024-08-06"}, {ModelAnswered: "gpt-4o-2024-08-06"}, {ModelAnswered: "gpt-4o-2024-08-06"}}
	got := otherModelWarning(&schema.PhaseResult{Phase: "p", Completed: 4, OtherModel: 4}, all, "my-deployment")
	if !strings.HasPrefix(got, "glmbench: note: phase p: 4 of 4 completed requests were answered as") {
		t.Errorf("every answer as one other model: %s\nwant a note", got)
	}
	some := []schema.Record{{ModelAnswered: "b"}, {}, {ModelAnswered: "b"}, {}}
	got = otherModelWarning(&schema.PhaseResult{Phase: "p", Completed: 4, OtherModel: 2}, some, "a")
	if !strings.HasPrefix(got, "glmbench: warning: phase p: 2 of 4 completed requests were answered as") {
		t.Errorf("some answers as another model: %s\nwant a warning", got)
	}
}
