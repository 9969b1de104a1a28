package run

import (
	"fmt"
	"slices"
	"strings"

	"github.com/glmbench/glmbench/reports/schema"
)

// otherModelWarning is the warning for a phase whose streams named another
// model than the one asked for (other_model), a note where all named the
// one same model, "" when none did: the
// figures are that model's. Each name is said with its count, most first,
// at most maxNamed. Where every completed request named the one same model
// it may be the name the server serves it under (an Azure deployment, a
// LiteLLM alias) as well as a fallback for all; where only some did, a proxy
// answered those from another model (OpenRouter's fallbacks, named only in
// the body's model).
func otherModelWarning(r *schema.PhaseResult, recs []schema.Record, asked string) string {
	if r.OtherModel == 0 {
		return ""
	}
	counts := map[string]int{}
	for i := range recs {
		if recs[i].Completed() && recs[i].ModelAnswered != "" {
			counts[recs[i].ModelAnswered]++
		}
	}
	names := make([]string, 0, len(counts))
	for n := range counts {
		names = append(names, n)
	}
	slices.SortFunc(names, func(a, b string) int {
		if d := counts[b] - counts[a]; d != 0 {
			return d
		}
		return strings.Compare(a, b)
	})
	said := make([]string, 0, min(len(names), maxNamed))
	for _, n := range names[:min(len(names), maxNamed)] {
		said = append(said, fmt.Sprintf("%q ×%d", n, counts[n]))
	}
	if len(names) > maxNamed {
		said = append(said, fmt.Sprintf("%d more", len(names)-maxNamed))
	}
	kind, why := "warning", "a proxy answered them from another model (OpenRouter names its fallback only there), so the phase mixes models"
	if len(names) == 1 && r.OtherModel == r.Completed {
		// What some servers answer on every run: a note.
		kind, why = "note", "the name the server serves it under (an Azure deployment, a LiteLLM alias before 1.81.7, a llama-server whose --alias is not the model asked), or a fallback for all of them"
	}
	return fmt.Sprintf("glmbench: %s: phase %s: %d of %d completed requests were answered as another model than %q asked (%s): %s",
		kind, r.Phase, r.OtherModel, r.Completed, asked, strings.Join(said, ", "), why)
}

// maxNamed is how many other models a warning names.
const maxNamed = 4
