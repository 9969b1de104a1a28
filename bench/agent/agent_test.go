package agent

import (
	"bytes"
	"context"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/glmbench/glmbench/bench"
	"github.com/glmbench/glmbench/endpoints"
	"github.com/glmbench/glmbench/engine/enginetest"
	"github.com/glmbench/glmbench/engine/sim"
	"github.com/glmbench/glmbench/reports/schema"
	"github.com/glmbench/glmbench/reports/summary"
)

const secret = "sk-coordinator-secret-4f2a"

// simRun starts a simulated engine and calibrates a 32/32 phase of n
// requests on it, the coordinator's key set to secret.
func simRun(t testing.TB, n int) (*bench.Options, bench.Plan) {
	t.Helper()
	e := enginetest.Start(t, enginetest.Sim(sim.CostModel{StepOverhead: 2 * time.Millisecond, DecodeSeq: 50 * time.Microsecond}))
	ep, err := endpoints.Resolve(endpoints.Flags{Endpoint: e.BaseURL(), Model: e.ModelName()}, func(string) string { return secret })
	if err != nil {
		t.Fatal(err)
	}
	o := &bench.Options{
		Endpoint: ep, Shape: bench.Shape{Model: ep.Model, IgnoreEOS: true},
		Limits:         endpoints.StreamLimits{TTFT: 30 * time.Second, Stall: 30 * time.Second},
		ConnectTimeout: 2 * time.Second, PhaseCap: time.Minute, Seed: 3, Nonce: bench.NewNonce(),
	}
	plans, _, err := bench.Prepare(context.Background(), o, []bench.Spec{{Name: "dist", N: n, In: 32, Out: 32}})
	if err != nil {
		t.Fatal(err)
	}
	return o, plans[0]
}

// wire keeps every request body sent to the agents.
type wire struct {
	mu     sync.Mutex
	bodies [][]byte
}

func (w *wire) wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		w.mu.Lock()
		w.bodies = append(w.bodies, b)
		w.mu.Unlock()
		r.Body = io.NopCloser(bytes.NewReader(b))
		h.ServeHTTP(rw, r)
	})
}

// agents starts one agent server per clock offset, each reading no key.
func agents(t testing.TB, w *wire, offsets ...time.Duration) ([]*httptest.Server, []*Conn) {
	t.Helper()
	var srvs []*httptest.Server
	var addrs []string
	for k, off := range offsets {
		s := NewServer(ServerOptions{
			Name: "agent-" + string(rune('a'+k)), Getenv: func(string) string { return "" },
			Now: func() time.Time { return time.Now().Add(off) },
		})
		h := s.Handler()
		if w != nil {
			h = w.wrap(h)
		}
		srv := httptest.NewServer(h)
		t.Cleanup(srv.Close)
		srvs = append(srvs, srv)
		addrs = append(addrs, strings.TrimPrefix(srv.URL, "http://"))
	}
	conns, err := Dial(context.Background(), addrs)
	if err != nil {
		t.Fatal(err)
	}
	return srvs, conns
}

// The truth: a distributed phase is the union of what its agents sent.
// Every index of the phase has one record, from the agent owning it
// (i mod 3), all completed; its token total is the sum of the records'
// n; its percentiles are summary.Phase's over the merged records; and
// under --max-concurrency 7 the shares are 3, 2, 2. With clocks off by
// +250 ms and −400 ms, the measured offsets are within 1 ms of those, and
// each request's send (shifted onto the common start) is within a few ms
// of its place in the seeded schedule. No body sent to an agent holds the
// coordinator's API key.
func TestADistributedPhaseIsTheUnionOfItsAgents(t *testing.T) {
	o, plan := simRun(t, 60)
	o.RequestRate, o.MaxConcurrency = 150, 7
	w := &wire{}
	offsets := []time.Duration{0, 250 * time.Millisecond, -400 * time.Millisecond}
	_, conns := agents(t, w, offsets...)
	run := RunPhase(context.Background(), o, plan, conns)
	r := run.Result
	if r.Status != schema.StatusComplete || r.Completed != 60 || len(run.Records) != 60 {
		t.Fatalf("status %s, completed %d, %d records; want complete, 60, 60 (%v)", r.Status, r.Completed, len(run.Records), Lost(r))
	}
	tokens := 0
	for i, rec := range run.Records {
		want := conns[i%3].Addr
		if rec.I != i || rec.Agent != want || !rec.Completed() {
			t.Fatalf("record %d: index %d, agent %q, completed %v; want %d from %s", i, rec.I, rec.Agent, rec.Completed(), i, want)
		}
		tokens += rec.N
	}
	if tokens != 60*32 {
		t.Errorf("the records' n sum to %d, want 60 requests × 32 tokens", tokens)
	}
	again := summary.Phase(plan.Spec.Name, plan.Spec.In, plan.Spec.Out, run.Records, r.Status)
	if !samePtr(again.TTFTMed, r.TTFTMed) || !samePtr(again.TTFTP99, r.TTFTP99) || !samePtr(again.LatP99, r.LatP99) || !samePtr(again.TPOTMed, r.TPOTMed) || again.WallSec != r.WallSec || again.OutTput != r.OutTput {
		t.Errorf("figures differ from those recomputed from the merged records: ttft med %v/%v p99 %v/%v, out_tput %v/%v", deref(r.TTFTMed), deref(again.TTFTMed), deref(r.TTFTP99), deref(again.TTFTP99), r.OutTput, again.OutTput)
	}
	wantShares := []int{3, 2, 2}
	for k, a := range r.Agents {
		if a.Requests != 20 || a.Records != 20 || a.MaxConcurrency != wantShares[k] || a.Lost != "" {
			t.Errorf("agent %d: requests %d records %d share %d lost %q; want 20, 20, %d, none", k, a.Requests, a.Records, a.MaxConcurrency, a.Lost, wantShares[k])
		}
		if got := a.OffsetMs - ms(offsets[k]); math.Abs(got) > 1 {
			t.Errorf("agent %d: offset measured %.3f ms, injected %.3f ms", k, a.OffsetMs, ms(offsets[k]))
		}
		t.Logf("agent %d: offset %.3f ms ± %.3f, start skew %.3f ms", k, a.OffsetMs, a.UncertaintyMs, a.StartSkewMs)
	}
	sched := bench.Schedule(60, o.RequestRate, o.Seed)
	for _, rec := range run.Records {
		// Planned on the agent's start, which the skew moved: the send
		// minus its lag and its wait for a slot of the agent's share is
		// the schedule's offset plus the agent's skew.
		planned := rec.SendOffset - rec.SendLag - rec.QueueWait
		skew := r.Agents[rec.I%3].StartSkewMs / 1000
		if d := planned - skew - sched[rec.I].Seconds(); math.Abs(d) > 0.001 {
			t.Errorf("request %d planned at %.4fs, the schedule (plus its agent's skew) says %.4fs", rec.I, planned-skew, sched[rec.I].Seconds())
		}
		if d := planned - sched[rec.I].Seconds(); math.Abs(d) > 0.005 {
			t.Errorf("request %d planned %.4fs off the common schedule", rec.I, d)
		}
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, b := range w.bodies {
		if bytes.Contains(b, []byte(secret)) {
			t.Fatalf("a body sent to an agent holds the API key: %s", b)
		}
	}
}

func samePtr(a, b *float64) bool { return (a == nil) == (b == nil) && (a == nil || *a == *b) }

func deref(p *float64) any {
	if p == nil {
		return nil
	}
	return *p
}

