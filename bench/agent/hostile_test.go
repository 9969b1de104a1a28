package agent

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/glmbench/glmbench/reports/schema"
)

// hungAgent answers ping and prepare like an agent, then takes a start and
// never writes a line (a host stopped or partitioned mid-phase).
func hungAgent(t *testing.T) *Conn {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case RoutePing:
			json.NewEncoder(w).Encode(Pong{Name: "hung", Now: time.Now().UnixNano()})
		case RoutePrepare:
			json.NewEncoder(w).Encode(Ready{Name: "hung"})
		case RouteStart:
			w.WriteHeader(http.StatusOK)
			w.(http.Flusher).Flush()
			<-r.Context().Done()
		}
	}))
	t.Cleanup(srv.Close)
	conns, err := Dial(context.Background(), []string{strings.TrimPrefix(srv.URL, "http://")})
	if err != nil {
		t.Fatal(err)
	}
	return conns[0]
}

// The truth: an agent that takes the start and then goes silent (no line,
// no heartbeat) is lost after IdleTimeout: the phase ends degraded with
// every request accounted for, and the live agent's all complete; nothing
// waits on it forever. (Before, the coordinator read its stream forever.)
func TestASilentAgentIsLostAndDoesNotHangThePhase(t *testing.T) {
	old := IdleTimeout
	IdleTimeout = 1500 * time.Millisecond
	t.Cleanup(func() { IdleTimeout = old })
	o, plan := simRun(t, 8, time.Millisecond)
	_, live := agents(t, nil, 0)
	conns := []*Conn{live[0], hungAgent(t)}
	done := make(chan struct{})
	var r schema.PhaseResult
	var n int
	go func() {
		defer close(done)
		run := RunPhase(context.Background(), o, plan, conns)
		r, n = run.Result, len(run.Records)
	}()
	select {
	case <-done:
	case <-time.After(time.Minute):
		t.Fatal("RunPhase still waits on a silent agent after a minute")
	}
	if r.Status != schema.StatusDegraded || n != 8 || r.Completed != 4 {
		t.Fatalf("status %s, %d records, %d completed; want degraded, 8, 4", r.Status, n, r.Completed)
	}
	if lost := r.Agents[1].Lost; !strings.Contains(lost, "silent") {
		t.Fatalf("the silent agent lost as %q, want it said silent", lost)
	}
}

// The truth: a live agent's stream, quiet while its requests run, carries
// heartbeats, so that a coordinator with a short IdleTimeout does not take
// it for lost.
func TestALiveAgentWithLongRequestsIsNotLost(t *testing.T) {
	oldI, oldH := IdleTimeout, Heartbeat
	IdleTimeout, Heartbeat = 600*time.Millisecond, 100*time.Millisecond
	t.Cleanup(func() { IdleTimeout, Heartbeat = oldI, oldH })
	// 32 tokens × 40 ms: each request takes over a second, no line meanwhile.
	o, plan := simRun(t, 2, 40*time.Millisecond)
	_, conns := agents(t, nil, 0)
	r := RunPhase(context.Background(), o, plan, conns).Result
	if r.Status != schema.StatusComplete || r.Completed != 2 {
		t.Fatalf("status %s, %d completed (lost %q); want complete, 2", r.Status, r.Completed, r.Agents[0].Lost)
	}
}
