package run

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/glmbench/glmbench/cmd/cmdtest"
	"github.com/glmbench/glmbench/engine/enginetest"
	"github.com/glmbench/glmbench/reports"
)

// A run against the engine scrapes its /metrics: the phase's server block
// counts the phase's own requests and tokens exactly, report.md sets it
// beside the client's figures, and metrics.jsonl and the plots are written.
func TestARunScrapesTheEnginesMetricsIntoItsServerBlock(t *testing.T) {
	t.Parallel()
	e := enginetest.Start(t)
	dir := t.TempDir()
	in, stderr := runSaying(t, dir, "--endpoint", e.BaseURL(), "--phase", "p=4/32/8", "--metrics-interval", "100ms")
	if !strings.Contains(stderr, "scraping http://127.0.0.1:") {
		t.Errorf("stderr does not say it scrapes:\n%s", stderr)
	}
	ph := in.Report.Phases[0]
	srv := ph.Server
	if srv == nil || srv.Source != "glmbench" {
		t.Fatalf("server block %+v", srv)
	}
	prompt, gen := 0, 0
	for _, r := range in.Records {
		prompt += r.Prompt
		gen += r.N
	}
	if srv.Requests == nil || *srv.Requests != 4 || srv.PromptTokens == nil || *srv.PromptTokens != float64(prompt) || srv.GenerationTokens == nil || *srv.GenerationTokens != float64(gen) {
		t.Errorf("server requests %v, prompt %v, generation %v; want 4, %d, %d", showF(srv.Requests), showF(srv.PromptTokens), showF(srv.GenerationTokens), prompt, gen)
	}
	if len(in.Samples) < 2 {
		t.Errorf("metrics.jsonl holds %d samples; want a before and an after at least", len(in.Samples))
	}
	md := cmdtest.ReadFile(t, dir, reports.ReportMD)
	if !strings.Contains(md, "## Server side") {
		t.Errorf("report.md has no server table")
	}
	if _, err := os.Stat(filepath.Join(dir, "p-server.png")); err != nil {
		t.Errorf("no server plot: %v", err)
	}
}

func TestNoMetricsAndABadMetricsURL(t *testing.T) {
	t.Parallel()
	e := enginetest.Start(t)
	in := runOK(t, t.TempDir(), "--endpoint", e.BaseURL(), "--phase", "p=1/32/2", "--no-metrics")
	if in.Report.Phases[0].Server != nil || in.Samples != nil {
		t.Errorf("--no-metrics: server block %+v, %d samples", in.Report.Phases[0].Server, len(in.Samples))
	}
	// A --metrics-url that answers nothing is bad input, before any load:
	// the user asked for it.
	url, hits := cmdtest.CountingEndpoint(t)
	code, stderr := execute(t, context.Background(), "--endpoint", url, "--out", t.TempDir(), "--phase", "p=1/32/2", "--metrics-url", "http://127.0.0.1:1/metrics")
	if code != 2 || !strings.Contains(stderr, "--metrics-url") {
		t.Fatalf("exit %d, stderr %q: want 2 naming --metrics-url", code, stderr)
	}
	if n := hits.Load(); n > 2 {
		t.Errorf("%d requests reached the endpoint before the refusal; only its model list may", n)
	}
	url, hits = cmdtest.CountingEndpoint(t)
	code, stderr = execute(t, context.Background(), "--endpoint", url, "--metrics-interval", "-1s")
	cmdtest.WantRefused(t, code, stderr, hits, "--metrics-interval")
}
