package agent

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/glmbench/glmbench/bench"
	"github.com/glmbench/glmbench/endpoints"
	"github.com/glmbench/glmbench/reports/schema"
)

// hungAgent answers ping and prepare like an agent, then takes a start and
// never writes a line (a host stopped or partitioned mid-phase).
func hungAgent(t *testing.T) *Conn {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case RoutePing:
			json.NewEncoder(w).Encode(Pong{Name: "hung", Now: time.Now().UnixNano(), Proto: Proto})
		case RoutePrepare:
			json.NewEncoder(w).Encode(Ready{Name: "hung"})
		case RouteStart:
			w.WriteHeader(http.StatusOK)
			w.(http.Flusher).Flush()
			<-r.Context().Done()
		}
	}))
	t.Cleanup(srv.Close)
	conns, err := Dial(context.Background(), []string{strings.TrimPrefix(srv.URL, "http://")}, "")
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

// rawPost sends body to the agent at base and returns the status and body.
func rawPost(t *testing.T, base, route string, body any) (int, string) {
	t.Helper()
	b, _ := json.Marshal(body)
	resp, err := http.Post(base+route, "application/json", strings.NewReader(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var sb strings.Builder
	buf := make([]byte, 4096)
	for {
		k, err := resp.Body.Read(buf)
		sb.Write(buf[:k])
		if err != nil || resp.StatusCode == http.StatusOK && strings.Contains(sb.String(), `"end"`) {
			break
		}
	}
	return resp.StatusCode, sb.String()
}

// wholePrepare is the prepare of plan over o for an agent that runs all
// of it (one shard of one), as a coordinator of one agent sends it.
func wholePrepare(o *bench.Options, plan bench.Plan) Prepare {
	return Prepare{
		BaseURL: o.Endpoint.BaseURL, Model: o.Endpoint.Model, Shape: o.Shape, Spec: plan.Spec,
		Chars: plan.Cal.Chars, PromptTokens: plan.Cal.PromptTokens, Nonce: o.Nonce, Seed: o.Seed,
		Limits: o.Limits, ConnectTimeout: o.ConnectTimeout, Shard: bench.Shard{Count: 1},
	}
}

// The truth: with two coordinators at one agent, the first one's start
// after the second one's prepare is refused (409), not run with the
// second one's plan; the second one's start runs its own.
func TestAStartOfAnotherCoordinatorsPrepareIsRefused(t *testing.T) {
	o, plan := simRun(t, 2, time.Millisecond)
	srvs, _ := agents(t, nil, 0)
	base := srvs[0].URL
	p := wholePrepare(o, plan)
	var first, second Ready
	for _, r := range []*Ready{&first, &second} {
		code, body := rawPost(t, base, RoutePrepare, p)
		if code != http.StatusOK || json.Unmarshal([]byte(body), r) != nil || r.Token == "" {
			t.Fatalf("prepare: %d %s, want 200 and a token", code, body)
		}
	}
	if first.Token == second.Token {
		t.Fatalf("two prepares gave one token %q", first.Token)
	}
	if code, body := rawPost(t, base, RouteStart, Start{At: time.Now().UnixNano(), Token: first.Token}); code != http.StatusConflict {
		t.Fatalf("start with the replaced prepare's token: %d %s, want 409", code, body)
	}
	// A coordinator of an older version sends no token: told so.
	if code, body := rawPost(t, base, RouteStart, Start{At: time.Now().UnixNano()}); code != http.StatusConflict || !strings.Contains(body, "version") {
		t.Fatalf("start without a token: %d %s, want 409 naming the version", code, body)
	}
	if code, body := rawPost(t, base, RouteStart, Start{At: time.Now().UnixNano(), Token: second.Token}); code != http.StatusOK || !strings.Contains(body, `"end"`) {
		t.Fatalf("start with the live prepare's token: %d %s, want 200 and an end line", code, body)
	}
}

// The truth: Dial refuses one agent given under two addresses (a
// dual-stack headless Service lists a pod's IPv4 and IPv6 addresses: it
// would be prepared twice and its second start refused), and an agent of
// another protocol version.
func TestDialRefusesOneAgentTwiceAndAnotherProtocol(t *testing.T) {
	srvs, conns := agents(t, nil, 0)
	port := srvs[0].URL[strings.LastIndexByte(srvs[0].URL, ':')+1:]
	_, err := Dial(context.Background(), []string{conns[0].Addr, "localhost:" + port}, "")
	if err == nil || !strings.Contains(err.Error(), "same agent") {
		t.Fatalf("Dial of one agent twice: %v, want it refused as the same agent", err)
	}
	old := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		json.NewEncoder(w).Encode(map[string]any{"name": "old", "now_unix_nano": time.Now().UnixNano()})
	}))
	t.Cleanup(old.Close)
	_, err = Dial(context.Background(), []string{strings.TrimPrefix(old.URL, "http://")}, "")
	if err == nil || !strings.Contains(err.Error(), "protocol") {
		t.Fatalf("Dial of an agent without a protocol version: %v, want it refused", err)
	}
}

// The truth: hostile plans get a 400 at once, not an agent busy for
// hours or out of memory: a non-JSON prepare, a phase of 2^40 requests, a
// filler of 2^40 bytes, a body over 1 MiB; and a start an hour or a year
// from the agent's clock, or with no time.
func TestHostilePreparesAndStartsAreRefused(t *testing.T) {
	srvs, _ := agents(t, nil, 0)
	base := srvs[0].URL
	ok := Prepare{BaseURL: "http://127.0.0.1:1/v1", Model: "m", Spec: bench.Spec{Name: "p", N: 2}, Shard: bench.Shard{Count: 1}, ConnectTimeout: time.Second, RequestRate: 1}
	huge := ok
	huge.Spec.N = 1 << 40
	long := ok
	long.Chars = 1 << 40
	big := ok
	big.Nonce = strings.Repeat("x", 2<<20)
	for name, body := range map[string]any{"not JSON": "{{{", "2^40 requests": huge, "2^40 chars": long, "a 2 MiB body": big} {
		done := make(chan int, 1)
		go func() { code, _ := rawPost(t, base, RoutePrepare, body); done <- code }()
		select {
		case code := <-done:
			if code != http.StatusBadRequest {
				t.Errorf("prepare with %s: %d, want 400", name, code)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("prepare with %s: no answer in 10 s", name)
		}
	}
	if code, body := rawPost(t, base, RoutePrepare, ok); code != http.StatusOK {
		t.Fatalf("a sound prepare: %d %s", code, body)
	}
	for name, at := range map[string]int64{"an hour ahead": time.Now().Add(time.Hour).UnixNano(), "a year ago": time.Now().AddDate(-1, 0, 0).UnixNano(), "no time": 0} {
		if code, body := rawPost(t, base, RouteStart, Start{At: at}); code != http.StatusBadRequest {
			t.Errorf("start %s: %d %s, want 400", name, code, body)
		}
	}
}

// The truth: a coordinator that vanishes mid-phase (its start connection
// drops) cancels the agent's phase, and the agent is ready for the next
// coordinator: its prepare and start run a phase to its end.
func TestAnAgentWhoseCoordinatorVanishesIsReadyForTheNext(t *testing.T) {
	o, plan := simRun(t, 4, 30*time.Millisecond)
	srvs, _ := agents(t, nil, 0)
	base := srvs[0].URL
	p := wholePrepare(o, plan)
	var ready Ready
	code, body := rawPost(t, base, RoutePrepare, p)
	if code != http.StatusOK || json.Unmarshal([]byte(body), &ready) != nil {
		t.Fatalf("prepare: %d %s", code, body)
	}
	ctx, cancel := context.WithCancel(context.Background())
	b, _ := json.Marshal(Start{At: time.Now().UnixNano(), Token: ready.Token})
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, base+RouteStart, strings.NewReader(string(b)))
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("start: %v", err)
	}
	time.Sleep(300 * time.Millisecond) // mid-phase: 32 tokens × 30 ms a request
	cancel()
	resp.Body.Close()
	deadline := time.Now().Add(20 * time.Second)
	for {
		code, body = rawPost(t, base, RoutePrepare, p)
		if code == http.StatusOK {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("prepare after the coordinator vanished: %d %s for 20 s", code, body)
		}
		time.Sleep(50 * time.Millisecond)
	}
	json.Unmarshal([]byte(body), &ready)
	if code, body := rawPost(t, base, RouteStart, Start{At: time.Now().UnixNano(), Token: ready.Token}); code != http.StatusOK || !strings.Contains(body, `"status":"complete"`) {
		t.Fatalf("the next start: %d %s, want a complete phase", code, body)
	}
}

// The truth: an endpoint URL with credentials (a token as its user name,
// or a password) is refused for agents, since the plan carries the base
// URL to each of them; the error does not quote the credentials.
func TestCredentialsInTheEndpointURLDoNotTravel(t *testing.T) {
	for _, raw := range []string{"https://sk-url-token-77@api.example.com/v1", "https://user:pw-url-secret-88@api.example.com/v1"} {
		ep, err := endpoints.Resolve(endpoints.Flags{Endpoint: raw, Model: "m"}, func(string) string { return "" })
		if err != nil {
			t.Fatal(err)
		}
		err = CheckOptions(&bench.Options{Endpoint: ep})
		if err == nil || strings.Contains(err.Error(), "77") || strings.Contains(err.Error(), "88") {
			t.Errorf("CheckOptions with %s: %v, want a refusal without the credentials", endpoints.RedactURL(raw), err)
		}
	}
}

// The truth: an agent whose clock is an hour behind runs its phase like
// any other (the wait for its start is measured on the coordinator's
// clock, not as the distance to a time on the agent's).
func TestAnAgentAnHourBehindIsNotLost(t *testing.T) {
	oldI, oldH := IdleTimeout, Heartbeat
	IdleTimeout, Heartbeat = time.Second, 100*time.Millisecond
	t.Cleanup(func() { IdleTimeout, Heartbeat = oldI, oldH })
	o, plan := simRun(t, 4, time.Millisecond)
	_, conns := agents(t, nil, -time.Hour, 0)
	r := RunPhase(context.Background(), o, plan, conns).Result
	if r.Status != schema.StatusComplete || r.Completed != 4 {
		t.Fatalf("status %s, %d completed (lost %q, %q); want complete, 4", r.Status, r.Completed, r.Agents[0].Lost, r.Agents[1].Lost)
	}
	if off := r.Agents[0].OffsetMs; off > -3599000 || off < -3601000 {
		t.Errorf("offset %v ms, want about -3,600,000", off)
	}
}

// The truth: Server.Cancel (an agent stopped by SIGTERM) ends its running
// phase as interrupted, and the coordinator gets its records and end line:
// the phase is interrupted with every request accounted for, not lost.
func TestAnAgentCancelledLocallyStreamsItsRecordsBack(t *testing.T) {
	o, plan := simRun(t, 6, 20*time.Millisecond)
	o.RequestRate = 10
	s := NewServer(ServerOptions{Name: "a", Getenv: func(string) string { return "" }})
	srv := httptest.NewServer(s.Handler())
	t.Cleanup(srv.Close)
	conns, err := Dial(context.Background(), []string{strings.TrimPrefix(srv.URL, "http://")}, "")
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		time.Sleep(StartLead + 400*time.Millisecond)
		s.Cancel()
	}()
	run := RunPhase(context.Background(), o, plan, conns)
	if r := run.Result; r.Status != schema.StatusInterrupted || len(run.Records) != 6 || r.Agents[0].Lost != "" {
		t.Fatalf("status %s, %d records, lost %q; want interrupted, 6, not lost", r.Status, len(run.Records), r.Agents[0].Lost)
	}
}

// The truth: --max-concurrency 2 across 3 agents runs on 2 of them, one
// in flight each, every request complete; not on 3 with shares 1, 1 and 0,
// the last one's 0 meaning no bound at all.
func TestMaxConcurrencyUnderTheAgentsCountBoundsEveryAgent(t *testing.T) {
	o, plan := simRun(t, 6, time.Millisecond)
	o.MaxConcurrency = 2
	_, conns := agents(t, nil, 0, 0, 0)
	run := RunPhase(context.Background(), o, plan, conns)
	r := run.Result
	if r.Status != schema.StatusComplete || r.Completed != 6 || len(r.Agents) != 2 {
		t.Fatalf("status %s, %d completed, %d agents; want complete, 6, 2", r.Status, r.Completed, len(r.Agents))
	}
	for _, a := range r.Agents {
		if a.MaxConcurrency != 1 {
			t.Errorf("agent %s: max concurrency %d, want 1", a.Name, a.MaxConcurrency)
		}
	}
}

// The truth: an agent whose prepare takes longer than PrepareTimeout but
// within it plus the run's connect timeout (dialing a burst's connections
// to a slow endpoint) is waited for, not lost.
func TestAPrepareSlowerThanItsTimeoutButWithinTheConnectTimeoutIsWaitedFor(t *testing.T) {
	old := PrepareTimeout
	PrepareTimeout = 200 * time.Millisecond
	t.Cleanup(func() { PrepareTimeout = old })
	o, plan := simRun(t, 2, time.Millisecond)
	o.ConnectTimeout = 5 * time.Second
	s := NewServer(ServerOptions{Name: "slow", Getenv: func(string) string { return "" }})
	h := s.Handler()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == RoutePrepare {
			time.Sleep(time.Second)
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	conns, err := Dial(context.Background(), []string{strings.TrimPrefix(srv.URL, "http://")}, "")
	if err != nil {
		t.Fatal(err)
	}
	if r := RunPhase(context.Background(), o, plan, conns).Result; r.Status != schema.StatusComplete || r.Completed != 2 {
		t.Fatalf("status %s, %d completed (lost %q); want complete, 2", r.Status, r.Completed, r.Agents[0].Lost)
	}
}

// The truth: Ctrl-C while the agents are being prepared interrupts the
// phase, every request not sent; no agent is counted lost for it, and
// the phase is not called degraded.
func TestAnInterruptDuringPrepareIsNotADegradedPhase(t *testing.T) {
	o, plan := simRun(t, 4, time.Millisecond)
	_, conns := agents(t, nil, 0, 0)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	run := RunPhase(ctx, o, plan, conns)
	r := run.Result
	if r.Status != schema.StatusInterrupted || r.NotSent != 4 || Lost(r) != nil {
		t.Fatalf("status %s, %d not sent, lost %v; want interrupted, 4, none", r.Status, r.NotSent, Lost(r))
	}
}
