package reports_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/glmbench/glmbench/reports"
	"github.com/glmbench/glmbench/reports/schema"
	"github.com/glmbench/glmbench/reports/summary"
)

// A sweep point is where a proxy's retries hurt most (its TTFT and TPOT
// percentiles decide the capacity), so report.md says what the proxy did
// at each point it retried or fell back in, as for a phase, and defines
// the counts.
func TestReportMdSaysWhatTheProxyDidAtASweepPoint(t *testing.T) {
	t.Parallel()
	ph := summary.Phase("s", 8, 4, proxyRecords(), schema.StatusComplete)
	quiet := summary.Phase("s", 8, 4, proxyRecords()[:4], schema.StatusComplete)
	quiet.ProxyRetried, quiet.ProxyFallback = 0, 0
	r := &schema.Report{Sweeps: []schema.SweepResult{{Name: "s", InputLen: 8, OutputLen: 4, Mode: schema.SweepConcurrency,
		Points: []schema.SweepPoint{{Point: 1, Load: 4, PhaseResult: quiet}, {Point: 2, Load: 16, PhaseResult: ph}}}}}
	var md bytes.Buffer
	if err := reports.WriteMarkdown(&md, r); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"### What the proxy did",
		"- sweep s at concurrency 16: 3 of 10 completed requests were retried inside the proxy (proxy_retried)",
		"- sweep s at concurrency 16: 1 of 10 completed requests were answered by a fallback inside the proxy (proxy_fallback)",
		"- **proxy_retried** = ",
		"- **proxy_fallback** = ",
	} {
		if !strings.Contains(md.String(), want) {
			t.Errorf("report.md lacks %q:\n%s", want, md.String())
		}
	}
	if strings.Contains(md.String(), "at concurrency 4:") {
		t.Errorf("report.md names the point the proxy did nothing at:\n%s", md.String())
	}
}

// The truth: sweep's terminal summary names the same point as report.md,
// so a sweep through a retrying proxy does not print its capacity alone.
func TestTheSweepSummarySaysWhatTheProxyDid(t *testing.T) {
	t.Parallel()
	ph := summary.Phase("s", 8, 4, proxyRecords(), schema.StatusComplete)
	r := &schema.Report{Sweeps: []schema.SweepResult{{Name: "s", InputLen: 8, OutputLen: 4, Mode: schema.SweepConcurrency,
		Points: []schema.SweepPoint{{Point: 1, Load: 16, PhaseResult: ph}}}}}
	var out bytes.Buffer
	if err := reports.WriteSweepSummary(&out, r); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "sweep s at concurrency 16: 3 of 10 completed requests were retried inside the proxy") {
		t.Errorf("the sweep summary does not say what the proxy did:\n%s", out.String())
	}
}
