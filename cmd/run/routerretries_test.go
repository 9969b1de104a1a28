package run

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/glmbench/glmbench/cmd/cmdtest"
	"github.com/glmbench/glmbench/endpoints/endpointstest"
	"github.com/glmbench/glmbench/reports"
	"github.com/glmbench/glmbench/reports/schema"
)

// unixTime is a sample's Unix seconds as a time.
func unixTime(u float64) time.Time {
	sec, frac := math.Modf(u)
	return time.Unix(int64(sec), int64(frac*1e9))
}

// Through sgl-router whose workers fail every third attempt with a 500
// (a status it retries), every request of the phase still completes: only
// the router's exporter says it retried. The truth: the phase's server
// block counts exactly the retries the fake router sent between the
// phase's before- and after-scrapes (more than none), run warns naming
// --disable-retries, and report.md says so in "What the proxy did".
func TestRunThroughSGLangRouterCountsItsHiddenRetries(t *testing.T) {
	t.Parallel()
	p := endpointstest.Start(t, endpointstest.SGLangRouter, endpointstest.Options{Router: endpointstest.RouterOptions{FailEvery: 3, Backoff: time.Millisecond}})
	dir := t.TempDir()
	in, stderr := runSaying(t, dir, "--endpoint", p.BaseURL(), "--model", p.Opts.Model, "--phase", "p=12/32/4",
		"--probe-timeout", "10s", "--metrics-url", p.MetricsURL(), "--metrics-interval", "100ms")
	ph := in.Report.Phases[0]
	if ph.Completed != 12 || ph.Errors != 0 {
		t.Fatalf("phase: %d completed, errors %v; want all 12 completed", ph.Completed, ph.ByClass)
	}
	var before, after float64
	for _, s := range in.Samples {
		switch {
		case s.Phase == "p" && s.When == "before" && before == 0:
			before = s.Unix
		case s.Phase == "p" && s.When == "after":
			after = s.Unix
		}
	}
	if before == 0 || after == 0 {
		t.Fatalf("no before and after scrapes in %d samples", len(in.Samples))
	}
	want := p.RouterRetriesBetween(unixTime(before), unixTime(after))
	if want == 0 {
		t.Fatal("the router retried nothing during the phase")
	}
	if srv := ph.Server; srv == nil || srv.Retries == nil || *srv.Retries != float64(want) {
		t.Fatalf("server block %+v; want retries %d", srv, want)
	}
	if !strings.Contains(stderr, "retried") || !strings.Contains(stderr, "--disable-retries") {
		t.Errorf("stderr does not warn of the router's retries:\n%s", stderr)
	}
	if md := cmdtest.ReadFile(t, dir, reports.ReportMD); !strings.Contains(md, "the router in front of the workers retried") {
		t.Errorf("report.md does not say the router retried")
	}
}

// The newer SGLang Model Gateway answers a request that waited in its
// admission queue past --queue-timeout-secs 408 with the error code
// admission_queue_timeout: load shed, as a 503. Its limiter here runs 1
// and queues 1 for 100 ms, and each worker holds a request 300 ms. The
// truth: of a burst of 4, 1 completes, the 1 queued times out (queue_full,
// status 408) and the 2 past the queue are refused 429 (rate_limited);
// the older router's bare 408 stays http_4xx.
func TestRunCountsTheGatewaysAdmissionQueueTimeoutAsQueueFull(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		admission bool
		class     schema.Class
	}{{true, schema.QueueFull}, {false, schema.HTTP4xx}} {
		p := endpointstest.Start(t, endpointstest.SGLangRouter, endpointstest.Options{TTFT: 300 * time.Millisecond,
			Router: endpointstest.RouterOptions{MaxConcurrent: 1, Queue: 1, QueueTimeout: 100 * time.Millisecond, Admission: tc.admission}})
		in := runOK(t, t.TempDir(), "--endpoint", p.BaseURL(), "--model", p.Opts.Model, "--phase", "burst=4/64/4",
			"--probe-timeout", "10s", "--no-metrics")
		ph := in.Report.Phases[0]
		if ph.Completed != 1 || ph.ByClass[tc.class] != 1 || ph.ByClass[schema.RateLimited] != 2 {
			t.Errorf("admission %v: %d completed, errors by class %v; want 1, 1 %s and 2 rate_limited", tc.admission, ph.Completed, ph.ByClass, tc.class)
		}
		for _, r := range in.Records {
			if r.Class == tc.class && r.Status != 408 {
				t.Errorf("admission %v: record %d: %s with status %d; want 408", tc.admission, r.I, r.Class, r.Status)
			}
		}
	}
}
