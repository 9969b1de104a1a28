package endpoints_test

import (
	"context"
	"encoding/json"
	"net/http"
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
