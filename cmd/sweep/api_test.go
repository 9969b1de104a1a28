package sweep

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/glmbench/glmbench/cmd/cmdtest"
	"github.com/glmbench/glmbench/endpoints/endpointstest"
	"github.com/glmbench/glmbench/reports"
)

// A sweep with --api completions sends its probes and its points on
// /v1/completions (SGLang's fake counts requests by route), and the report
// records the route.
func TestASweepOnCompletionsSendsEveryRequestThereAndSaysSo(t *testing.T) {
	t.Parallel()
	p := endpointstest.Start(t, endpointstest.SGLang, endpointstest.Options{})
	dir := filepath.Join(t.TempDir(), "out")
	code, _, stderr := execute(t, "--endpoint", p.BaseURL(), "--model", p.Opts.Model, "--shape", "32/4", "--concurrency", "2",
		"--warmup", "0s", "--duration", "300ms", "--slice", "300ms", "--api", "completions", "--no-metrics", "--out", dir)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	in, err := reports.Load(filepath.Join(dir, reports.ReportJSON))
	if err != nil {
		t.Fatal(err)
	}
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
