package bench

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/glmbench/glmbench/endpoints"
	"github.com/glmbench/glmbench/reports/schema"
)

// TestARunawayStreamIsEndedAtTwiceMaxTokens: a server that ignores
// max_tokens and streams content forever (issue 12 saw 7.5 M timestamps
// kept per request) gets each load request ended at 2×OUT+32 events, as
// the endpoint's fault, named in error_kinds.
func TestARunawayStreamIsEndedAtTwiceMaxTokens(t *testing.T) {
	t.Parallel()
	block := []byte(strings.Repeat("data: {\"choices\":[{\"delta\":{\"content\":\"x\"}}]}\n\n", 64))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		for r.Context().Err() == nil {
			if _, err := w.Write(block); err != nil {
				return
			}
			w.(http.Flusher).Flush()
		}
	}))
	defer srv.Close()
	ep, err := endpoints.Resolve(endpoints.Flags{Endpoint: srv.URL + "/v1", Model: "m"}, func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	o := &Options{Endpoint: ep, Shape: Shape{Model: "m"}, ConnectTimeout: 2 * time.Second, PhaseCap: 30 * time.Second, Nonce: "0a1b2c3d",
		Limits: endpoints.StreamLimits{TTFT: 10 * time.Second, Stall: 10 * time.Second}}
	run := RunPhase(context.Background(), o, plan(2, 8, 4))
	if run.Result.ByClass[schema.StreamError] != 2 || run.Result.Status != schema.StatusComplete {
		t.Fatalf("status %s, errors %v; want both requests stream_error", run.Result.Status, run.Result.ByClass)
	}
	for _, rec := range run.Records {
		if len(rec.Events) != 2*4+32 {
			t.Fatalf("record %d kept %d events, want 40", rec.I, len(rec.Events))
		}
	}
	for k := range run.Result.ErrorKinds {
		if !strings.Contains(k, "41 content events for max_tokens 4") {
			t.Fatalf("error kind %q does not name the counts", k)
		}
	}
}
