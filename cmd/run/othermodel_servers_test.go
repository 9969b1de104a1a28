package run

import (
	"strings"
	"testing"

	"github.com/glmbench/glmbench/endpoints/endpointstest"
)

// No server glmbench knows, nor its own engine, is said to answer as
// another model than the one a run asks for: each personality answers in
// its streams what the server it stands for does, and the built-in engine
// its own name; a run picking the model itself (no --model) counts no
// other_model and warns of none.
func TestNoKnownServerAnswersAsAnotherModel(t *testing.T) {
	t.Parallel()
	for _, name := range append(endpointstest.Names(), "built-in engine") {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			args := []string{"--phase", "p=3/32/4", "--no-metrics"}
			if name != "built-in engine" {
				p := endpointstest.Start(t, name, endpointstest.Options{})
				args = append(args, "--endpoint", p.BaseURL())
				if name == endpointstest.OpenAI {
					args = append(args, "--ignore-eos=false") // OpenAI refuses the field
				}
			}
			in, stderr := runSaying(t, t.TempDir(), args...)
			ph := in.Report.Phases[0]
			if ph.Completed == 0 || ph.OtherModel != 0 || strings.Contains(stderr, "another model") {
				t.Errorf("completed %d, other_model %d; want some completed, none other\n%s", ph.Completed, ph.OtherModel, stderr)
			}
		})
	}
}
