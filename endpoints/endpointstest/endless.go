package endpointstest

import (
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
)

// Endless starts a server that answers every request with a 200 event
// stream that never ends: head, then block again and again, each write
// flushed, as fast as the connection takes it, until the client hangs up.
// It is an endpoint that ignores max_tokens and never stops (a server bug,
// or a proxy looping), at the speed that hurts a reader most. The server
// closes as the test ends.
func Endless(t testing.TB, head string, block []byte) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		io.WriteString(w, head)
		w.(http.Flusher).Flush()
		for r.Context().Err() == nil {
			if _, err := w.Write(block); err != nil {
				return
			}
			w.(http.Flusher).Flush()
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}
