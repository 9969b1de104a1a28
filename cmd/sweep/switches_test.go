package sweep

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/glmbench/glmbench/cmd/cmdtest"
	"github.com/glmbench/glmbench/endpoints/endpointstest"
	"github.com/glmbench/glmbench/reports"
	"github.com/glmbench/glmbench/reports/schema"
)

// A sweep of a reasoning model with --max-completion-tokens and
// --stream-usage=false sends its cap as max_completion_tokens (OpenAI's
// fake refuses max_tokens) and no stream_options (so no usage streams: n
// is counted from events), and its report records both switches.
func TestASweepRecordsMaxCompletionTokensAndNoStreamUsage(t *testing.T) {
	t.Parallel()
	p := endpointstest.Start(t, endpointstest.OpenAI, endpointstest.Options{ReasoningModel: true})
	dir := filepath.Join(t.TempDir(), "out")
	in := sweepOK(t, dir, "--endpoint", p.BaseURL(), "--model", p.Opts.Model, "--shape", "32/4", "--concurrency", "2",
		"--warmup", "0s", "--duration", "300ms", "--slice", "300ms", "--ignore-eos=false", "--max-completion-tokens", "--stream-usage=false",
		"--no-metrics")
	if o := in.Report.Options; !o.MaxCompletionTokens || !o.NoStreamUsage || len(in.Records) == 0 {
		t.Fatalf("options %+v, %d records: want both switches recorded", o, len(in.Records))
	}
	for _, r := range in.Records {
		if r.Cancelled == "" && (!r.Completed() || r.NSource != schema.NFromEvents) {
			t.Errorf("request %d: %+v; want completed, n from events", r.I, r)
		}
	}
	if md := cmdtest.ReadFile(t, dir, reports.ReportMD); !strings.Contains(md, "no stream_options, max_completion_tokens") {
		t.Errorf("report.md does not name the switches")
	}
}
