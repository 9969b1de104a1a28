package root

// End-to-end runs of glmbench through the routers production deployments
// put in front of several workers: sgl-router (the SGLang Model Gateway)
// in front of SGLang, Dynamo's OpenAI frontend in front of vLLM, the
// sglang-router and dynamo personalities of endpoints/endpointstest
// (router.go; docs/SERVERS.md).

import (
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/glmbench/glmbench/endpoints/endpointstest"
	"github.com/glmbench/glmbench/reports/schema"
)

// Two SGLang workers, each taking 2 running and 2 queued requests, hold
// every request 200 ms: of a burst of 16, the 8 past both queues are
// refused by SGLang as a 200 whose one event is its 503, which the router
// passes on unretried. The truth: run counts exactly those as queue_full,
// the rest complete, and no record says a proxy retried it (the router
// says nothing of retries per request, and made none).
func TestRunThroughSGLangRouterCountsItsWorkersFullQueuesAsQueueFull(t *testing.T) {
	t.Parallel()
	p := endpointstest.Start(t, endpointstest.SGLangRouter, endpointstest.Options{MaxRunning: 2, MaxQueued: 2, TTFT: 200 * time.Millisecond})
	rep, recs, _ := runReport(t, p.BaseURL(), "--phase", "burst=16/64/4", "--probe-timeout", "10s")
	ph := rep.Phases[0]
	if ph.Completed != 8 || ph.ByClass[schema.QueueFull] != 8 || ph.Errors != 8 {
		t.Fatalf("phase: %d completed, errors by class %v; want 8 and 8 queue_full", ph.Completed, ph.ByClass)
	}
	for _, r := range recs {
		if r.ProxyRetries != 0 {
			t.Errorf("record %d: proxy_retries %d", r.I, r.ProxyRetries)
		}
	}
	if _, retries := p.RouterCounts(); retries != 0 {
		t.Errorf("the router retried %d attempts", retries)
	}
}

// sgl-router's own limiter (--max-concurrent-requests 2, --queue-size 1
// here) answers 429 with no body and no Retry-After past both. The truth:
// of a burst of 16 held 200 ms each, the 2 running and the 1 queued
// complete and the 13 others are rate_limited, with no Retry-After kept.
func TestRunThroughSGLangRouterCountsItsOwnLimitersRefusalsAsRateLimited(t *testing.T) {
	t.Parallel()
	p := endpointstest.Start(t, endpointstest.SGLangRouter, endpointstest.Options{TTFT: 200 * time.Millisecond,
		Router: endpointstest.RouterOptions{MaxConcurrent: 2, Queue: 1}})
	rep, recs, _ := runReport(t, p.BaseURL(), "--phase", "burst=16/64/4", "--probe-timeout", "10s")
	if ph := rep.Phases[0]; ph.Completed != 3 || ph.ByClass[schema.RateLimited] != 13 || ph.Errors != 13 {
		t.Fatalf("phase: %d completed, errors by class %v; want 3 and 13 rate_limited", ph.Completed, ph.ByClass)
	}
	wantRateLimitedAs429(t, recs, "")
}

// With both workers marked unhealthy sgl-router answers every generation
// its own plain-text 503, after retrying it to five attempts inside. The
// truth: run names that answer in one line before any load (the
// calibration probe is refused), and no request reached a worker.
func TestRunThroughSGLangRouterWithNoHealthyWorkerSaysSoBeforeTheLoad(t *testing.T) {
	t.Parallel()
	p := endpointstest.Start(t, endpointstest.SGLangRouter, endpointstest.Options{Router: endpointstest.RouterOptions{Unhealthy: 2, Backoff: time.Millisecond}})
	runRefused(t, p.BaseURL(), []string{"--model", p.Opts.Model, "--phase", "x=4/64/8"}, "phase x", "HTTP 503", "No available workers (all circuits open or unhealthy)")
	for _, wk := range p.Workers() {
		if n := wk.TotalRequests(); n != 0 {
			t.Errorf("a worker got %d requests", n)
		}
	}
}

// sgl-router's /health is 503 as soon as one worker is down, though it
// routes to the other. The truth: run --wait-ready does not wait on it
// (the router's /readiness says it is ready), the run completes on the
// healthy worker, and no warning calls the router not ready.
func TestRunThroughSGLangRouterWithOneWorkerDownDoesNotWaitForIt(t *testing.T) {
	t.Parallel()
	p := endpointstest.Start(t, endpointstest.SGLangRouter, endpointstest.Options{Router: endpointstest.RouterOptions{Unhealthy: 1}})
	rep, _, stderr := runReport(t, p.BaseURL(), "--phase", "x=4/64/8", "--wait-ready", "5s")
	if ph := rep.Phases[0]; ph.Completed != 4 || ph.Errors != 0 {
		t.Errorf("phase %+v", ph)
	}
	if strings.Contains(stderr, "not ready") || strings.Contains(stderr, "waiting for") {
		t.Errorf("stderr calls the router not ready:\n%s", stderr)
	}
	if n := p.Workers()[0].TotalRequests(); n != 0 {
		t.Errorf("the unhealthy worker got %d requests", n)
	}
}

// sgl-router's metrics are on its exporter's own port: its API port's
// /metrics is 404. The truth: by default run says there are no server
// metrics there, names the exporter's default port for the router its
// /health shows, and goes on; with --metrics-url at the exporter, the
// report's server block is the router's (source sglang-router) with the
// requests its workers answered.
func TestRunThroughSGLangRouterReadsItsMetricsAtItsExporter(t *testing.T) {
	t.Parallel()
	p := endpointstest.Start(t, endpointstest.SGLangRouter, endpointstest.Options{})
	dir := t.TempDir()
	code, _, stderr := executeBounded(t, "run", "--endpoint", p.BaseURL(), "--phase", "x=4/64/8", "--out", dir)
	if code != 0 || !strings.Contains(stderr, "no server metrics at "+p.URL+"/metrics (metrics: HTTP 404") {
		t.Fatalf("exit %d; stderr:\n%s", code, stderr)
	}
	if !strings.Contains(stderr, "sgl-router serves its metrics on its --prometheus-port (default 29000): --metrics-url http://127.0.0.1:29000/metrics") {
		t.Errorf("stderr does not say where sgl-router's metrics are:\n%s", stderr)
	}
	if srv := reportJSON(t, dir).Phases[0].Server; srv != nil {
		t.Errorf("a server block without metrics: %+v", srv)
	}
	rep, _, _ := runReport(t, p.BaseURL(), "--phase", "x=4/64/8", "--metrics-url", p.MetricsURL())
	srv := rep.Phases[0].Server
	if srv == nil || srv.Source != "sglang-router" || srv.Requests == nil || *srv.Requests != 4 || srv.RunningMax == nil {
		t.Fatalf("server block %+v; want sglang-router's, 4 requests", srv)
	}
}

// Dynamo refuses past its busy threshold with 529 "Service temporarily
// overloaded" (type "Overloaded"). The truth: run counts each as queue_full
// (load shed, as a 503 is), its kind naming Dynamo's words, and
// the server block is the frontend's (dynamo_frontend_* on its API port).
func TestRunThroughDynamoCountsItsOverloadAndReadsItsFrontendMetrics(t *testing.T) {
	t.Parallel()
	p := endpointstest.Start(t, endpointstest.Dynamo, endpointstest.Options{TTFT: 200 * time.Millisecond, Router: endpointstest.RouterOptions{Busy: 4}})
	rep, recs, _ := runReport(t, p.BaseURL(), "--phase", "burst=16/64/4", "--probe-timeout", "10s")
	ph := rep.Phases[0]
	if ph.Completed != 4 || ph.ByClass[schema.QueueFull] != 12 || ph.Errors != 12 {
		t.Fatalf("phase: %d completed, errors by class %v; want 4 and 12 queue_full", ph.Completed, ph.ByClass)
	}
	for _, r := range recs {
		if r.Class != "" && r.Status != 529 {
			t.Errorf("record %d: status %d", r.I, r.Status)
		}
	}
	if n := ph.ErrorKinds["HTTP 529: Service temporarily overloaded"]; n != 12 {
		t.Errorf("error kinds %v; want Dynamo's overload 12 times", ph.ErrorKinds)
	}
	if srv := ph.Server; srv == nil || srv.Source != "dynamo" || srv.RunningMax == nil || srv.TTFTP50 == nil {
		t.Errorf("server block %+v; want Dynamo's frontend's", srv)
	}
}

// Through Dynamo no route states vLLM's context: a phase past it is
// refused by the first calibration probe, whose line quotes vLLM's words
// as Dynamo passes a worker's 400 on, and the load is not sent; a model
// no worker serves is Dynamo's 404 "Model not found", said the same way.
func TestRunThroughDynamoRefusesAnOverlongPhaseAtItsFirstProbe(t *testing.T) {
	t.Parallel()
	p := endpointstest.Start(t, endpointstest.Dynamo, endpointstest.Options{Context: 2048})
	runRefused(t, p.BaseURL(), []string{"--phase", "long=2/2100/16"}, "phase long", "refuses a prompt of about", "2,100", "maximum context length is 2048 tokens")
	wantOnlyProbes(t, p.BodyFields())
	runRefused(t, p.BaseURL(), []string{"--model", "another/model", "--phase", "x=2/64/8"}, "phase x", "HTTP 404: Model not found")
}

// conform through sgl-router finds what it finds against SGLang behind
// it, but for the malformed body, which the router refuses itself in
// plain text; through Dynamo, its flat error shape. The truth: the same
// checks pass and fail as against SGLang, and against Dynamo exactly the
// three that read an error object fail, each naming the flat body.
func TestConformThroughTheRoutersFindsWhatIsBehindThemAndTheirOwnShapes(t *testing.T) {
	t.Parallel()
	status := func(kind string) (map[string]string, map[string]schema.CheckResult) {
		p := endpointstest.Start(t, kind, endpointstest.Options{})
		_, got, _ := checks(t, p.BaseURL())
		out := map[string]string{}
		for id, c := range got {
			out[id] = c.Status
		}
		return out, got
	}
	sg, _ := status(endpointstest.SGLang)
	rt, rtGot := status(endpointstest.SGLangRouter)
	for id, s := range sg {
		if rt[id] != s {
			t.Errorf("%s: %s through the router, %s against SGLang", id, rt[id], s)
		}
	}
	if d := rtGot["bad-request"].Detail; !strings.Contains(d, "Failed to parse the request body as JSON") {
		t.Errorf("bad-request through the router: %s", d)
	}
	dy, dyGot := status(endpointstest.Dynamo)
	var failed []string
	for id, s := range dy {
		if s == "fail" {
			failed = append(failed, id)
		}
	}
	sort.Strings(failed)
	if strings.Join(failed, ",") != "bad-request,context-overflow,unknown-model" {
		t.Errorf("dynamo fails %v", failed)
	}
	if d := dyGot["unknown-model"].Detail; !strings.Contains(d, `"message":"Model not found"`) {
		t.Errorf("unknown-model: %s", d)
	}
}
