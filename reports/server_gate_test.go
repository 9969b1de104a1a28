package reports_test

import (
	"strings"
	"testing"

	"github.com/glmbench/glmbench/reports"
	"github.com/glmbench/glmbench/reports/gate"
	"github.com/glmbench/glmbench/reports/schema"
)

// The server block of reports.ServerReport: accept length 4, TTFT p50
// 0.05 s, 64 requests, running at most 64.
func TestTheGateReadsTheServerBlock(t *testing.T) {
	t.Parallel()
	f := func(v float64) **float64 { p := &v; return &p }
	var none *float64
	base := []*schema.Report{reports.ServerReport(t, "main", nil)}
	for _, tc := range []struct {
		name string
		cur  *schema.Report
		expr string
		pass bool
		line string
	}{
		{"an accept length 5% lower passes a 10% bound", reports.ServerReport(t, "pr", f(3.8)), "decode_medium.server.accept_length > -10%", true,
			"✓ decode_medium.server.accept_length > -10%"},
		{"an accept length 25% lower fails it", reports.ServerReport(t, "pr", f(3)), "decode_medium.server.accept_length > -10%", false,
			"✗ decode_medium.server.accept_length > -10%"},
		{"a server without speculative decoding has no accept length, not 0", reports.ServerReport(t, "pr", &none),
			"decode_medium.server.accept_length > -10%", false, "server.accept_length missing in the current report"},
		{"the server's TTFT p50 against a bound", reports.ServerReport(t, "pr", nil), "decode_medium.server.ttft_p50 < 0.06", true, "✓"},
		{"the server's request count", reports.ServerReport(t, "pr", nil), "decode_medium.server.requests == 64", true, "✓"},
		{"the peak of running requests", reports.ServerReport(t, "pr", nil), "decode_medium.server.running_max <= 32", false, "✗"},
		{"a phase that was not scraped has no server metric", reports.ServerReport(t, "pr", nil), "single.server.ttft_p50 < 1", false,
			"server.ttft_p50 missing in the current report"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			g, err := gate.Evaluate(base, []*schema.Report{tc.cur}, mustParse(t, tc.expr), gate.Options{})
			if err != nil {
				t.Fatal(err)
			}
			lines := gateLines(t, g)
			if len(g.Lines) != 1 || g.Lines[0].Passed != tc.pass || !strings.Contains(lines, tc.line) {
				t.Fatalf("want one line, passed=%v, with %q:\n%s", tc.pass, tc.line, lines)
			}
		})
	}
	for name, want := range map[string]bool{
		"server.accept_length": true, "server.ttft_p99": true, "server.kv_usage_mean": true, "server.scrapes": true,
		"server.failed": true, "server.source": false, "server.note": false, "server": false, "server.nope": false,
	} {
		if got := reports.IsPhaseMetric(name); got != want {
			t.Errorf("IsPhaseMetric(%q) = %v, want %v", name, got, want)
		}
	}
}
