package endpointstest

import (
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
)

// RedirectedMetrics starts a server that serves body, Prometheus text, as
// a FastAPI server that mounts prometheus_client's ASGI app at /metrics
// does (litellm, gpustack, Aphrodite; prometheus/client_python issue
// 1016): GET /metrics is a 307 to /metrics/, which answers body; any other
// path is a 404. header is the request header /metrics/ last received
// (nil before any). The server closes as the test ends.
func RedirectedMetrics(t testing.TB, body []byte) (srv *httptest.Server, header func() http.Header) {
	var mu sync.Mutex
	var got http.Header
	srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/metrics":
			http.Redirect(w, r, "/metrics/", http.StatusTemporaryRedirect)
		case "/metrics/":
			mu.Lock()
			got = r.Header.Clone()
			mu.Unlock()
			w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
			w.Write(body)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	return srv, func() http.Header {
		mu.Lock()
		defer mu.Unlock()
		return got
	}
}
