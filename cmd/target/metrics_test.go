package target

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/glmbench/glmbench/endpoints"
	"github.com/glmbench/glmbench/endpoints/endpointstest"
	"github.com/glmbench/glmbench/internal/badinput"
)

// A FastAPI server that mounts prometheus_client's ASGI app at /metrics
// answers the default URL with a 307 to /metrics/ (prometheus/client_python
// issue 1016): the scrape follows it within the origin, with the key, and
// the run scrapes; a redirect to another origin is not followed.
func TestTheDefaultMetricsURLFollowsARedirectWithinItsOrigin(t *testing.T) {
	t.Parallel()
	const key = "sk-metrics-key-0123"
	srv, header := endpointstest.RedirectedMetrics(t, []byte("# TYPE vllm:num_requests_running gauge\nvllm:num_requests_running{engine=\"0\",model_name=\"m\"} 0.0\n"))
	ep, err := endpoints.Resolve(endpoints.Flags{Endpoint: srv.URL + "/v1"}, func(string) string { return key })
	if err != nil {
		t.Fatal(err)
	}
	m := &MetricsFlags{}
	s, line, err := m.Open(context.Background(), ep)
	if err != nil || s == nil || !strings.Contains(line, "scraping") || !strings.Contains(line, "vllm") {
		t.Fatalf("scraper %v, line %q, err %v: want vllm's series scraped", s, line, err)
	}
	if auth := header().Get("Authorization"); !strings.Contains(auth, key) {
		t.Errorf("Authorization at /metrics/ %q, want the endpoint's key", auth)
	}
	if strings.Contains(line, key) {
		t.Errorf("line %q shows the key", line)
	}
}

// An interval of a millisecond would scrape back to back, loading the
// server's front end and keeping a sample a millisecond all phase: refused
// before anything is sent; 0 is the default.
func TestAMetricsIntervalUnderATenthOfASecondIsBadInput(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		every time.Duration
		ok    bool
	}{{time.Millisecond, false}, {99 * time.Millisecond, false}, {-time.Second, false}, {0, true}, {100 * time.Millisecond, true}, {2 * time.Second, true}} {
		err := (&MetricsFlags{Interval: tc.every}).Validate()
		if (err == nil) != tc.ok || (err != nil && !badinput.Is(err)) {
			t.Errorf("--metrics-interval %s: err %v, want ok %v", tc.every, err, tc.ok)
		}
	}
}
