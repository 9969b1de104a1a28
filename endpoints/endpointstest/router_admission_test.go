package endpointstest

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"
)

// The truth: with FailEvery 2 every second attempt is a worker's 500,
// which sgl-router retries: of 4 requests the first succeeds at attempt 1
// and each later one fails its first attempt (2, 4, 6) and succeeds at the
// next, so 7 attempts, 3 retries, and the exporter's
// sgl_router_retries_total says the same 3.
func TestSGLangRouterRetriesAWorkersFaultAndCountsIt(t *testing.T) {
	p := Start(t, SGLangRouter, Options{Router: RouterOptions{FailEvery: 2, Backoff: time.Millisecond}})
	t0 := time.Now()
	for i := range 4 {
		if r := post(t, p.BaseURL()+"/chat/completions", chatBody(p.Opts.Model, fmt.Sprint("hi ", i), 4)); r.status != 200 {
			t.Fatalf("request %d: %d %s", i, r.status, r.body)
		}
	}
	attempts, retries := p.RouterCounts()
	if attempts != 7 || retries != 3 || p.RouterRetriesBetween(t0, time.Now()) != 3 {
		t.Errorf("%d attempts, %d retries (%d in the window); want 7 and 3", attempts, retries, p.RouterRetriesBetween(t0, time.Now()))
	}
	m := get(t, p.MetricsURL())
	if !strings.Contains(string(m.body), `sgl_router_retries_total{route="/v1/chat/completions"} 3`) {
		t.Errorf("the exporter does not count the 3 retries:\n%s", m.body)
	}
}

// The truth: a request that waits in the limiter's queue past QueueTimeout
// is answered 408: with no body by the older router, and by the newer
// gateway (Admission) with its error body, code admission_queue_timeout,
// in X-SMG-Error-Code too, and a Retry-After.
func TestSGLangRoutersQueueTimeoutAndTheNewerGatewaysBodies(t *testing.T) {
	for _, admission := range []bool{false, true} {
		t.Run(fmt.Sprint("admission ", admission), func(t *testing.T) {
			p := Start(t, SGLangRouter, Options{TTFT: time.Minute, Router: RouterOptions{Workers: 1, MaxConcurrent: 1, Queue: 1,
				QueueTimeout: 50 * time.Millisecond, Admission: admission}})
			defer hold(t, p, 1)()
			r := post(t, p.BaseURL()+"/chat/completions", chatBody(p.Opts.Model, "queued", 4))
			var body struct {
				Error struct{ Type, Code, Message string } `json:"error"`
			}
			if !admission {
				if r.status != 408 || len(r.body) != 0 {
					t.Errorf("%d %q; want 408 with no body", r.status, r.body)
				}
				return
			}
			if err := json.Unmarshal(r.body, &body); err != nil || r.status != 408 || body.Error.Code != "admission_queue_timeout" ||
				body.Error.Type != "Request Timeout" || r.header.Get("X-SMG-Error-Code") != "admission_queue_timeout" || r.header.Get("Retry-After") == "" {
				t.Errorf("%d %s %v; want 408 admission_queue_timeout", r.status, r.body, r.header)
			}
		})
	}
}
