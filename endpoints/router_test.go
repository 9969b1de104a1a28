package endpoints_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/glmbench/glmbench/endpoints"
	"github.com/glmbench/glmbench/endpoints/endpointstest"
	"github.com/glmbench/glmbench/reports/schema"
)

// routerClient is a client of p's API with its model.
func routerClient(t *testing.T, p *endpointstest.Personality) *endpoints.Client {
	t.Helper()
	ep, err := endpoints.Resolve(endpoints.Flags{Endpoint: p.BaseURL(), Model: p.Opts.Model}, func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	return endpoints.NewClient(ep, endpoints.NewTransport(endpoints.TransportOptions{}))
}

// sgl-router's /health is 503 "Unhealthy servers: [...]" as soon as one
// worker is down, while it routes to the others; its /readiness says
// whether one is up. The truth: with one of two workers down the router
// is ready (200); with both down it is not (503, its reason quoted).
func TestHealthThroughSGLangRouterIsItsReadinessWhenAWorkerIsDown(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		down   int
		status int
		msg    string
	}{{0, 200, ""}, {1, 200, ""}, {2, 503, "no healthy workers available"}} {
		p := endpointstest.Start(t, endpointstest.SGLangRouter, endpointstest.Options{Router: endpointstest.RouterOptions{Unhealthy: tc.down}})
		status, msg, err := routerClient(t, p).Health(t.Context())
		if err != nil || status != tc.status || !strings.Contains(msg, tc.msg) {
			t.Errorf("%d of 2 workers down: %d %q %v; want %d %q", tc.down, status, msg, err, tc.status, tc.msg)
		}
	}
}

// The truth: through sgl-router the context is the worker's max_model_len
// (its /v1/models is the first healthy worker's); through Dynamo, whose
// model list states none and which serves neither /get_server_info nor
// /props, it is not stated (0), not a guess.
func TestContextLengthThroughTheRouters(t *testing.T) {
	t.Parallel()
	r := endpointstest.Start(t, endpointstest.SGLangRouter, endpointstest.Options{Context: 8192})
	if n, src, err := routerClient(t, r).ContextLength(t.Context()); err != nil || n != 8192 || !strings.Contains(src, "max_model_len") {
		t.Errorf("sglang-router: %d from %q (%v); want 8192 from max_model_len", n, src, err)
	}
	d := endpointstest.Start(t, endpointstest.Dynamo, endpointstest.Options{Context: 8192})
	if n, src, err := routerClient(t, d).ContextLength(t.Context()); err != nil || n != 0 {
		t.Errorf("dynamo: %d from %q (%v); want not stated", n, src, err)
	}
	if d.Requests("GET /get_server_info") != 1 || d.Requests(http.MethodGet+" /props") != 1 {
		t.Errorf("dynamo was not asked the other routes")
	}
}

// sgl-router sets Content-Type: text/event-stream on every answer to a
// request that asked for a stream, a worker's JSON refusal too. The truth:
// SGLang's 400 for an overlong prompt, so relabeled, is still read as the
// 400 it is (http_4xx, SGLang's words in the body), not as a broken stream.
func TestAStreamsRefusalRelabeledAnEventStreamByTheRouterIsItsStatus(t *testing.T) {
	t.Parallel()
	p := endpointstest.Start(t, endpointstest.SGLangRouter, endpointstest.Options{Context: 64})
	body, _ := json.Marshal(map[string]any{"model": p.Opts.Model, "stream": true, "max_tokens": 4,
		"messages": []any{map[string]any{"role": "user", "content": strings.Repeat("word ", 200)}}})
	var res endpoints.StreamResult
	routerClient(t, p).StreamAPI(context.Background(), endpoints.APIChat, body, endpoints.StreamLimits{MaxTokens: 4, Total: 10 * time.Second}, nil, &res)
	if res.Status != 400 || res.Class != schema.HTTP4xx || !strings.Contains(string(res.Body), "is longer than the model's context length") {
		t.Errorf("status %d class %s body %q", res.Status, res.Class, res.Body)
	}
}

// A /health that says "Unhealthy servers: [...]" is settled by /readiness
// only where the router serves that route: sgl-router answers a route it
// lacks with its sink handler's bare 404 (server.rs sink_handler), and an
// older build or another proxy speaking its words may lack it. The truth:
// with /readiness a 404, Health keeps /health's own 503 and its words,
// not the 404, which look reads as no verdict and so stopped --wait-ready
// waiting on a router whose every worker is down.
func TestHealthKeepsItsOwn503WhereTheRouterHasNoReadiness(t *testing.T) {
	t.Parallel()
	const body = `Unhealthy servers: ["http://w0:30000", "http://w1:30000"]`
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/health" {
			http.Error(w, body, http.StatusServiceUnavailable)
			return
		}
		w.WriteHeader(http.StatusNotFound)
	}))
	defer srv.Close()
	ep, err := endpoints.Resolve(endpoints.Flags{Endpoint: srv.URL + "/v1", Model: "m"}, func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	status, msg, err := endpoints.NewClient(ep, endpoints.NewTransport(endpoints.TransportOptions{})).Health(t.Context())
	if err != nil || status != http.StatusServiceUnavailable || msg != body {
		t.Errorf("Health = %d %q %v; want 503 %q", status, msg, err, body)
	}
}

// Where /readiness confirms /health's 503, the message keeps both: which
// workers /health names as down, and why /readiness is not ready. The
// truth: with both of sgl-router's workers down, Health's message names
// each worker's URL and quotes "no healthy workers available".
func TestHealthNamesTheDownWorkersWhereTheRouterIsNotReady(t *testing.T) {
	t.Parallel()
	p := endpointstest.Start(t, endpointstest.SGLangRouter, endpointstest.Options{Router: endpointstest.RouterOptions{Unhealthy: 2}})
	status, msg, err := routerClient(t, p).Health(t.Context())
	if err != nil || status != http.StatusServiceUnavailable || !strings.Contains(msg, "no healthy workers available") {
		t.Fatalf("Health = %d %q %v; want 503 quoting /readiness", status, msg, err)
	}
	for _, wk := range p.Workers() {
		if !strings.Contains(msg, wk.URL) {
			t.Errorf("message %q does not name worker %s", msg, wk.URL)
		}
	}
}
