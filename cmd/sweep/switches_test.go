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

// A sweep sends --extra-body's fields in every request, its probes' too,
// and records the object: vLLM's fake sees them in each body.
func TestASweepSendsAndRecordsTheExtraBody(t *testing.T) {
	t.Parallel()
	p := endpointstest.Start(t, endpointstest.VLLM, endpointstest.Options{})
	dir := filepath.Join(t.TempDir(), "out")
	in := sweepOK(t, dir, "--endpoint", p.BaseURL(), "--shape", "32/4", "--concurrency", "2",
		"--warmup", "0s", "--duration", "300ms", "--slice", "300ms", "--extra-body", `{"top_k": 20, "min_p": 0}`, "--no-metrics")
	if got := in.Report.Options.Extra(); got != `{"min_p":0,"top_k":20}` || len(in.Records) == 0 {
		t.Fatalf("extra body %s, %d records", got, len(in.Records))
	}
	bodies := p.BodyFields()
	if len(bodies) < len(in.Records) {
		t.Fatalf("%d bodies for %d records", len(bodies), len(in.Records))
	}
	for i, b := range bodies {
		if string(b["top_k"]) != "20" || string(b["min_p"]) != "0" {
			t.Errorf("request %d carried top_k %s, min_p %s", i, b["top_k"], b["min_p"])
		}
	}
}
