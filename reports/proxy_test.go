package reports_test

import (
	"bytes"
	"io"
	"strings"
	"testing"

	"github.com/glmbench/glmbench/reports"
	"github.com/glmbench/glmbench/reports/schema"
	"github.com/glmbench/glmbench/reports/summary"
)

// proxyRecords are ten completed requests of OUT 4: the proxy retried
// requests 0, 4 and 8 twice and answered request 5 from a fallback; an
// eleventh failed after three retries (a failure, not a retried answer).
func proxyRecords() []schema.Record {
	var recs []schema.Record
	for i := range 10 {
		end := 0.5 + float64(i)/100
		rec := schema.Record{Phase: "p", I: i, N: 4, NSource: schema.NFromUsage, Prompt: 8,
			Events: []float64{0.1, 0.2, 0.3, 0.4}, TEnd: &end}
		rec.TFirst, rec.TLast = &rec.Events[0], &rec.Events[3]
		if i%4 == 0 {
			rec.ProxyRetries = 2
		}
		if i == 5 {
			rec.ProxyFallbacks = 1
		}
		recs = append(recs, rec)
	}
	end := 1.0
	return append(recs, schema.Record{Phase: "p", I: 10, Class: schema.HTTP5xx, Status: 500, TEnd: &end, ProxyRetries: 3})
}

func TestAPhaseCountsTheCompletedRequestsAProxyRetriedOrFellBackFor(t *testing.T) {
	t.Parallel()
	ph := summary.Phase("p", 8, 4, proxyRecords(), schema.StatusComplete)
	if ph.Completed != 10 || ph.ProxyRetried != 3 || ph.ProxyFallback != 1 {
		t.Fatalf("completed %d, proxy_retried %d, proxy_fallback %d; want 10, 3 (requests 0, 4, 8), 1 (request 5)", ph.Completed, ph.ProxyRetried, ph.ProxyFallback)
	}
	wantMD(t, reportMD(t, &schema.Report{Phases: []schema.PhaseResult{ph}}),
		"### What the proxy did",
		"- p: 3 of 10 completed requests were retried inside the proxy (proxy_retried)",
		"- p: 1 of 10 completed requests were answered by a fallback inside the proxy (proxy_fallback)",
		"- **proxy_retried** = ",
		"- **proxy_fallback** = ",
	)
}

func TestWithoutAProxyCountNothingAboutAProxyIsWritten(t *testing.T) {
	t.Parallel()
	recs := proxyRecords()
	for i := range recs {
		recs[i].ProxyRetries, recs[i].ProxyFallbacks = 0, 0
	}
	ph := summary.Phase("p", 8, 4, recs, schema.StatusComplete)
	rep := &schema.Report{Phases: []schema.PhaseResult{ph}}
	var js, jl bytes.Buffer
	if err := reports.WriteJSON(&js, rep); err != nil {
		t.Fatal(err)
	}
	if err := reports.WriteRecords(&jl, recs); err != nil {
		t.Fatal(err)
	}
	for name, out := range map[string]string{"report.md": reportMD(t, rep), "report.json": js.String(), "requests.jsonl": jl.String()} {
		if strings.Contains(strings.ToLower(out), "proxy") {
			t.Errorf("%s says something of a proxy no answer named:\n%s", name, out)
		}
	}
}

func TestARecordKeepsTheProxysCounts(t *testing.T) {
	t.Parallel()
	var jl bytes.Buffer
	if err := reports.WriteRecords(&jl, []schema.Record{{Phase: "p", ProxyRetries: 2, ProxyFallbacks: 1}}); err != nil {
		t.Fatal(err)
	}
	if s := jl.String(); !strings.Contains(s, `"proxy_retries":2`) || !strings.Contains(s, `"proxy_fallbacks":1`) {
		t.Errorf("requests.jsonl: %s; want proxy_retries 2 and proxy_fallbacks 1", s)
	}
}

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
	md := reportMD(t, r)
	wantMD(t, md,
		"### What the proxy did",
		"- sweep s at concurrency 16: 3 of 10 completed requests were retried inside the proxy (proxy_retried)",
		"- sweep s at concurrency 16: 1 of 10 completed requests were answered by a fallback inside the proxy (proxy_fallback)",
		"- **proxy_retried** = ",
		"- **proxy_fallback** = ",
	)
	if strings.Contains(md, "at concurrency 4:") {
		t.Errorf("report.md names the point the proxy did nothing at:\n%s", md)
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

// reportMD is report.md of rep.
func reportMD(t *testing.T, rep *schema.Report) string {
	t.Helper()
	return written(t, func(w io.Writer) error { return reports.WriteMarkdown(w, rep) })
}

// wantMD fails t for each of wants that report.md md lacks.
func wantMD(t *testing.T, md string, wants ...string) {
	t.Helper()
	for _, want := range wants {
		if !strings.Contains(md, want) {
			t.Errorf("report.md lacks %q:\n%s", want, md)
		}
	}
}
