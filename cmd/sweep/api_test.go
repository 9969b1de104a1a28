package sweep

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/glmbench/glmbench/bench"
	"github.com/glmbench/glmbench/cmd/cmdtest"
	"github.com/glmbench/glmbench/endpoints/endpointstest"
	"github.com/glmbench/glmbench/engine/enginetest"
	"github.com/glmbench/glmbench/engine/sim"
	"github.com/glmbench/glmbench/reports"
	"github.com/glmbench/glmbench/reports/schema"
)

// A sweep with --api completions sends its probes and its points on
// /v1/completions (SGLang's fake counts requests by route), and the report
// records the route.
func TestASweepOnCompletionsSendsEveryRequestThereAndSaysSo(t *testing.T) {
	t.Parallel()
	p := endpointstest.Start(t, endpointstest.SGLang, endpointstest.Options{})
	dir := filepath.Join(t.TempDir(), "out")
	in := sweepOK(t, dir, "--endpoint", p.BaseURL(), "--model", p.Opts.Model, "--shape", "32/4", "--concurrency", "2",
		"--warmup", "0s", "--duration", "300ms", "--slice", "300ms", "--api", "completions", "--no-metrics")
	if in.Report.Options.API != "completions" || len(in.Records) == 0 {
		t.Fatalf("api %q, %d records", in.Report.Options.API, len(in.Records))
	}
	for _, r := range in.Records {
		if r.Completed() && r.N != 4 {
			t.Errorf("request %d: n %d, want 4", r.I, r.N)
		}
	}
	if n := p.Requests("POST /v1/completions"); n <= len(in.Records) || p.Requests("POST /v1/chat/completions") != 0 {
		t.Errorf("%d completions and %d chat requests for %d records: want all on completions, probes included", n, p.Requests("POST /v1/chat/completions"), len(in.Records))
	}
	if md := cmdtest.ReadFile(t, dir, reports.ReportMD); !strings.Contains(md, "- api: completions (POST /completions") {
		t.Errorf("report.md does not name the route")
	}
}

// A sweep with --api completions on the built-in engine, end to end: its
// prompts are calibrated in the raw text's tokens (no chat template), so
// every record lands on the shape's 96 prompt tokens within tolerance and
// generates its 6 tokens, counted by usage, at both points.
func TestASweepOnCompletionsAgainstTheEngineLandsOnItsShape(t *testing.T) {
	t.Parallel()
	e := enginetest.Start(t, enginetest.Sim(sim.CostModel{StepOverhead: time.Millisecond}))
	dir := filepath.Join(t.TempDir(), "out")
	in := sweepOK(t, dir, "--endpoint", e.BaseURL(), "--shape", "96/6", "--concurrency", "1,2",
		"--warmup", "0s", "--duration", "300ms", "--api", "completions")
	if in.Report.Options.API != "completions" || len(in.Report.Sweeps) != 1 || len(in.Report.Sweeps[0].Points) != 2 {
		t.Fatalf("api %q, sweeps %+v", in.Report.Options.API, in.Report.Sweeps)
	}
	points := map[int]int{}
	for _, r := range in.Records {
		if !r.Completed() {
			continue
		}
		points[r.Point]++
		if r.N != 6 || r.NSource != schema.NFromUsage || r.Prompt < 96-bench.Tolerance(96) || r.Prompt > 96+bench.Tolerance(96) {
			t.Errorf("point %d request %d: n %d from %q, %d prompt tokens; want 6 from usage and 96±%d", r.Point, r.I, r.N, r.NSource, r.Prompt, bench.Tolerance(96))
		}
	}
	if points[1] == 0 || points[2] == 0 {
		t.Errorf("completed per point %v: want some at both", points)
	}
}
