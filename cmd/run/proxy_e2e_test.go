package run

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/glmbench/glmbench/cmd/cmdtest"
	"github.com/glmbench/glmbench/cmd/cmdutil"
	"github.com/glmbench/glmbench/endpoints/endpointstest"
	"github.com/glmbench/glmbench/reports"
)

// The truth: the fake LiteLLM retries every second backend request twice
// inside the proxy (x-litellm-attempted-retries: 2) and says so on the
// answer; the run's records keep exactly those counts, stderr says how
// many completed requests were retried, and report.md shows it.
func TestARunThroughARetryingLiteLLMProxySaysWhichRequestsItRetried(t *testing.T) {
	t.Parallel()
	// Every second backend request is retried twice inside the proxy; the
	// phase's six requests are six consecutive ones, so exactly three.
	p := endpointstest.Start(t, endpointstest.Gateway, endpointstest.Options{LiteLLM: endpointstest.LiteLLMOptions{
		On: true, Retries: 2, RetryEvery: 2, RetryDelay: time.Millisecond}})
	out := t.TempDir()
	f, _, errOut := cmdutil.TestFactory(context.Background(), nil)
	err := cmdtest.Execute(f, NewCmdRun, "--endpoint", p.BaseURL(), "--model", p.Opts.Model, "--phase", "p=6/32/4", "--no-metrics", "--out", out)
	if code := cmdutil.ExitCode(err); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	retried := 0
	for _, rec := range readRecords(t, out) {
		if rec.ProxyRetries != 0 && rec.ProxyRetries != 2 {
			t.Errorf("request %d: proxy_retries %d; the proxy retries 2 or 0 times", rec.I, rec.ProxyRetries)
		}
		if rec.ProxyRetries > 0 {
			retried++
		}
	}
	if retried != 3 {
		t.Errorf("%d records retried; want 3 of 6", retried)
	}
	if s := errOut.String(); !strings.Contains(s, "phase p: 3 of 6 completed requests were retried inside the proxy") {
		t.Errorf("stderr does not name the retried requests:\n%s", s)
	}
	if md := cmdtest.ReadFile(t, out, reports.ReportMD); !strings.Contains(md, "- p: 3 of 6 completed requests were retried inside the proxy (proxy_retried)") {
		t.Errorf("report.md does not show the retried requests:\n%s", md)
	}
}
