package agent

import (
	"bytes"
	"context"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"slices"
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
// requests on it, a decode step costing step plus 50 µs a sequence, the
// coordinator's key set to secret.
func simRun(t testing.TB, n int, step time.Duration) (*bench.Options, bench.Plan) {
	t.Helper()
	e := enginetest.Start(t, enginetest.Sim(sim.CostModel{StepOverhead: step, DecodeSeq: 50 * time.Microsecond}))
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

// wire keeps every request body and header block sent to the agents.
type wire struct {
	mu     sync.Mutex
	bodies [][]byte
}

func (w *wire) wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		var hdr bytes.Buffer
		r.Header.Write(&hdr)
		w.mu.Lock()
		w.bodies = append(w.bodies, b, hdr.Bytes())
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
	conns, err := Dial(context.Background(), addrs, "")
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
// of its place in the seeded schedule. No body or header sent to an agent
// holds the coordinator's API key.
func TestADistributedPhaseIsTheUnionOfItsAgents(t *testing.T) {
	o, plan := simRun(t, 60, 2*time.Millisecond)
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
			t.Fatalf("a request sent to an agent holds the API key: %s", b)
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

// The truth: an agent killed mid-phase (its server's connections cut)
// leaves a degraded phase naming it, in which every index still has one
// record: the killed agent's are the ones it streamed back before dying
// (fewer than it owned), cancelled for those it said it had sent, and
// not_sent for the rest; the other agent's all completed.
func TestAKilledAgentLeavesADegradedPhaseWithItsRequestsAccountedFor(t *testing.T) {
	// Requests of about 32 × 20 ms, one every 50 ms: at the kill the
	// agent has some back, some in flight, some not yet sent.
	o, plan := simRun(t, 40, 20*time.Millisecond)
	o.RequestRate = 20
	srvs, conns := agents(t, nil, 0, 0)
	go func() {
		time.Sleep(StartLead + 1500*time.Millisecond)
		srvs[1].CloseClientConnections()
	}()
	run := RunPhase(context.Background(), o, plan, conns)
	r := run.Result
	if r.Status != schema.StatusDegraded || len(run.Records) != 40 {
		t.Fatalf("status %s with %d records, want degraded with 40", r.Status, len(run.Records))
	}
	dead := r.Agents[1]
	if dead.Lost == "" || dead.Records == 0 || dead.Records >= dead.Requests || !strings.Contains(Lost(r).Error(), conns[1].Addr) {
		t.Fatalf("the killed agent: lost %q, %d records of %d requests; want a reason and some but not all back", dead.Lost, dead.Records, dead.Requests)
	}
	back, missing, cut := 0, 0, 0
	for i, rec := range run.Records {
		if rec.I != i || rec.Agent != conns[i%2].Addr {
			t.Fatalf("record %d: index %d from %q", i, rec.I, rec.Agent)
		}
		switch {
		case i%2 == 0 && !rec.Completed():
			t.Errorf("request %d of the live agent did not complete", i)
		case i%2 == 1 && rec.NotSent:
			missing++
		case i%2 == 1 && rec.Cancelled != "":
			if rec.Cancelled != schema.CancelInterrupt || rec.SendOffset <= 0 {
				t.Errorf("request %d, in flight on the killed agent: cancelled %q at %.3fs", i, rec.Cancelled, rec.SendOffset)
			}
			cut++
		case i%2 == 1:
			back++
		}
	}
	if cut == 0 {
		t.Errorf("no request of the killed agent was in flight at the kill")
	}
	if back != dead.Records || back+cut+missing != dead.Requests || r.NotSent != missing || r.Cancelled != cut {
		t.Errorf("killed agent: %d records back, %d cancelled, %d not sent, of %d; the phase counts %d cancelled, %d not sent", back, cut, missing, dead.Requests, r.Cancelled, r.NotSent)
	}
	t.Logf("killed agent: %d records back, %d cancelled in flight, %d not sent, of %d", back, cut, missing, dead.Requests)
}

// The truth: Dial names the agent that does not answer, and refuses an
// address that is not host:port.
func TestDialNamesTheUnreachableAgent(t *testing.T) {
	_, conns := agents(t, nil, 0)
	srv := httptest.NewServer(http.NotFoundHandler())
	dead := strings.TrimPrefix(srv.URL, "http://")
	srv.Close()
	_, err := Dial(context.Background(), []string{conns[0].Addr, dead}, "")
	if err == nil || !strings.Contains(err.Error(), dead) {
		t.Fatalf("Dial with a dead agent: %v, want an error naming %s", err, dead)
	}
	if _, err := Dial(context.Background(), []string{"http://x:1/"}, ""); err == nil {
		t.Fatal("Dial took a URL for host:port")
	}
}

// The truth: C split among N agents is C/N each, the remainder to the
// first ones, summing to C.
func TestSharesSplitMaxConcurrency(t *testing.T) {
	for _, tc := range []struct {
		c, n int
		want []int
	}{{7, 3, []int{3, 2, 2}}, {8, 4, []int{2, 2, 2, 2}}, {2, 3, []int{1, 1, 0}}, {0, 2, []int{0, 0}}} {
		if got := Shares(tc.c, tc.n); !slices.Equal(got, tc.want) {
			t.Errorf("Shares(%d, %d) = %v, want %v", tc.c, tc.n, got, tc.want)
		}
	}
}

// The truth: the agent reads the endpoint's key from its own
// environment, under the variable it was told, and refuses a plan when
// that variable is unset.
func TestTheAgentReadsTheKeyFromItsOwnEnvironment(t *testing.T) {
	s := NewServer(ServerOptions{APIKeyEnv: "AGENT_KEY", Getenv: func(k string) string {
		if k == "AGENT_KEY" {
			return "agent-own-key"
		}
		return ""
	}})
	pp, err := s.options(Prepare{BaseURL: "http://127.0.0.1:1/v1", Spec: bench.Spec{Name: "p", N: 2}, Shard: bench.Shard{Count: 1}})
	if err != nil || !pp.o.Endpoint.HasKey() {
		t.Fatalf("options: %v, key set %v", err, err == nil && pp.o.Endpoint.HasKey())
	}
	s = NewServer(ServerOptions{APIKeyEnv: "AGENT_KEY", Getenv: func(string) string { return "" }})
	if _, err := s.options(Prepare{BaseURL: "http://127.0.0.1:1/v1", Spec: bench.Spec{Name: "p", N: 2}, Shard: bench.Shard{Count: 1}}); err == nil || !strings.Contains(err.Error(), "AGENT_KEY") {
		t.Fatalf("an unset key variable: %v, want an error naming AGENT_KEY", err)
	}
}

// BenchmarkDistributedEvents measures the content events per second that
// 1, 2 and 4 agents on this machine draw from the simulated engine, one
// burst phase of 128 requests × 32 tokens per iteration.
func BenchmarkDistributedEvents(b *testing.B) {
	o, plan := simRun(b, 128, 2*time.Millisecond)
	for _, n := range []int{1, 2, 4} {
		b.Run(string(rune('0'+n))+"_agents", func(b *testing.B) {
			_, conns := agents(b, nil, make([]time.Duration, n)...)
			events, wall := 0, 0.0
			for b.Loop() {
				run := RunPhase(context.Background(), o, plan, conns)
				for _, rec := range run.Records {
					events += len(rec.Events)
				}
				wall += run.Result.WallSec
			}
			b.ReportMetric(float64(events)/wall, "events/s")
		})
	}
}

// The truth: cancelling the coordinator's ctx (Ctrl-C) mid-phase cancels
// every agent's phase, and what they recorded still comes back: the phase
// is interrupted, not degraded, with every index once, some completed and
// some not (cancelled or never sent).
func TestCtrlCInterruptsEveryAgentAndKeepsTheirRecords(t *testing.T) {
	o, plan := simRun(t, 40, 20*time.Millisecond)
	o.RequestRate = 20
	_, conns := agents(t, nil, 0, 0)
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(StartLead+1500*time.Millisecond, cancel)
	run := RunPhase(ctx, o, plan, conns)
	r := run.Result
	if r.Status != schema.StatusInterrupted || len(run.Records) != 40 {
		t.Fatalf("status %s with %d records, want interrupted with 40 (%v)", r.Status, len(run.Records), Lost(r))
	}
	for i, rec := range run.Records {
		if rec.I != i {
			t.Fatalf("record %d has index %d", i, rec.I)
		}
	}
	if r.Completed == 0 || r.Completed == 40 || r.Completed+r.Cancelled+r.NotSent+r.Errors != 40 {
		t.Errorf("completed %d, cancelled %d, not sent %d, errors %d: want some of the 40 completed, the rest cut", r.Completed, r.Cancelled, r.NotSent, r.Errors)
	}
	for _, a := range r.Agents {
		if a.Lost != "" || a.Records != a.Requests {
			t.Errorf("agent %s: lost %q, %d records of %d; want all back", a.Name, a.Lost, a.Records, a.Requests)
		}
	}
}

// The truth: a burst (no --request-rate) across two agents, their
// connections opened at prepare, sends all 32 at once: every request
// completes, and each is planned at its agent's start (send offset −
// lag = the agent's skew, within a microsecond).
func TestABurstAcrossAgentsSendsAllAtTheStart(t *testing.T) {
	o, plan := simRun(t, 32, 2*time.Millisecond)
	_, conns := agents(t, nil, 0, 100*time.Millisecond)
	run := RunPhase(context.Background(), o, plan, conns)
	if r := run.Result; r.Status != schema.StatusComplete || r.Completed != 32 {
		t.Fatalf("status %s, completed %d; want complete, 32 (%v)", r.Status, r.Completed, Lost(r))
	}
	for _, rec := range run.Records {
		skew := run.Result.Agents[rec.I%2].StartSkewMs / 1000
		if d := rec.SendOffset - rec.SendLag - skew; math.Abs(d) > 1e-6 {
			t.Errorf("request %d planned %.6fs after its agent's start, want 0", rec.I, d)
		}
	}
}
