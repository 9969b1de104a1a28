package target

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/glmbench/glmbench/endpoints"
)

// A FastAPI server that mounts prometheus_client's ASGI app at /metrics
// answers the default URL with a 307 to /metrics/ (prometheus/client_python
// issue 1016): the scrape follows it within the origin, with the key, and
// the run scrapes; a redirect to another origin is not followed.
func TestTheDefaultMetricsURLFollowsARedirectWithinItsOrigin(t *testing.T) {
	t.Parallel()
	const key = "sk-metrics-key-0123"
	var auth string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/metrics":
			http.Redirect(w, r, "/metrics/", http.StatusTemporaryRedirect)
		case "/metrics/":
			auth = r.Header.Get("Authorization")
			w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
			w.Write([]byte("# TYPE vllm:num_requests_running gauge\nvllm:num_requests_running{engine=\"0\",model_name=\"m\"} 0.0\n"))
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	ep, err := endpoints.Resolve(endpoints.Flags{Endpoint: srv.URL + "/v1"}, func(string) string { return key })
	if err != nil {
		t.Fatal(err)
	}
	m := &MetricsFlags{}
	s, line, err := m.Open(context.Background(), ep)
	if err != nil || s == nil || !strings.Contains(line, "scraping") || !strings.Contains(line, "vllm") {
		t.Fatalf("scraper %v, line %q, err %v: want vllm's series scraped", s, line, err)
	}
	if !strings.Contains(auth, key) {
		t.Errorf("Authorization at /metrics/ %q, want the endpoint's key", auth)
	}
	if strings.Contains(line, key) {
		t.Errorf("line %q shows the key", line)
	}
}
