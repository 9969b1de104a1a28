package endpoints_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/glmbench/glmbench/endpoints"
	"github.com/glmbench/glmbench/endpoints/endpointstest"
)

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
