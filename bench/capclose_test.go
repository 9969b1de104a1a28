package bench

import (
	"context"
	"io"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/glmbench/glmbench/endpoints/endpointstest"
)

// A request the phase cap cancels must leave the server: vLLM and SGLang
// abort a request when its client disconnects, and one left connected
// would go on generating through the next phase. The truth: every load
// request hangs until its client goes, before its answer or with the
// stream's headers sent; within a second of the capped phase returning, the
// server has seen each of them go.
func TestACappedRequestDisconnects(t *testing.T) {
	t.Parallel()
	for _, headers := range []bool{false, true} {
		testCappedDisconnect(t, headers)
	}
}

func testCappedDisconnect(t *testing.T, headers bool) {
	var open atomic.Int64
	srv := endpointstest.New(nil, func(s *endpointstest.Server) {
		s.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			open.Add(1)
			defer open.Add(-1)
			// A server reads the whole body before it answers (and Go's
			// notices a client gone only once it has).
			io.Copy(io.Discard, r.Body)
			if headers {
				w.Header().Set("Content-Type", "text/event-stream")
				w.WriteHeader(http.StatusOK)
				http.NewResponseController(w).Flush()
			}
			<-r.Context().Done()
		})
	})
	defer srv.Close()
	o := testOptions(t, srv, "cafe0c10")
	o.PhaseCap = 200 * time.Millisecond
	run := RunPhase(context.Background(), o, plan(2, 16, 4))
	if run.Result.Cancelled != 2 {
		t.Fatalf("headers sent %v: cancelled %d, want the 2 requests cut by the cap", headers, run.Result.Cancelled)
	}
	deadline := time.Now().Add(time.Second)
	for open.Load() > 0 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if n := open.Load(); n != 0 {
		t.Errorf("headers sent %v: %d capped requests still connected a second after the phase ended", headers, n)
	}
}
