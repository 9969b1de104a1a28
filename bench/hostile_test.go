package bench

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/glmbench/glmbench/endpoints"
	"github.com/glmbench/glmbench/endpoints/endpointstest"
	"github.com/glmbench/glmbench/reports/schema"
)

// TestARunawayStreamIsEndedAtItsBound: a server that ignores max_tokens
// and streams content forever (issue 12 saw 7.5 M timestamps kept per
// request, an 800 MB requests.jsonl) gets each load request ended at
// endpoints.AnswerBound(OUT) answer events, as the endpoint's fault, named
// in error_kinds; its record keeps the first 2×OUT+32 event times.
func TestARunawayStreamIsEndedAtItsBound(t *testing.T) {
	t.Parallel()
	block := []byte(strings.Repeat("data: {\"choices\":[{\"delta\":{\"content\":\"x\"}}]}\n\n", 64))
	srv := endpointstest.Endless(t, "", block)
	ep := resolve(t, srv.URL+"/v1", "m")
	o := &Options{Endpoint: ep, Shape: Shape{Model: "m"}, ConnectTimeout: 2 * time.Second, PhaseCap: 30 * time.Second, Nonce: "0a1b2c3d",
		Limits: endpoints.StreamLimits{TTFT: 10 * time.Second, Stall: 10 * time.Second}}
	run := RunPhase(context.Background(), o, plan(2, 8, 4))
	if run.Result.ByClass[schema.StreamError] != 2 || run.Result.Status != schema.StatusComplete {
		t.Fatalf("status %s, errors %v; want both requests stream_error", run.Result.Status, run.Result.ByClass)
	}
	for _, rec := range run.Records {
		if len(rec.Events) != 2*4+32 || rec.N != endpoints.AnswerBound(4) || rec.TLast == nil || *rec.TLast < rec.Events[len(rec.Events)-1] {
			t.Fatalf("record %d kept %d events, n %d; want 40 kept of %d", rec.I, len(rec.Events), rec.N, endpoints.AnswerBound(4))
		}
	}
	for k := range run.Result.ErrorKinds {
		if !strings.Contains(k, fmt.Sprintf("%d answer events for max_tokens 4", endpoints.AnswerBound(4)+1)) {
			t.Fatalf("error kind %q does not name the counts", k)
		}
	}
}
