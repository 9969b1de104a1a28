package agent

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/glmbench/glmbench/bench"
	"github.com/glmbench/glmbench/endpoints"
	"github.com/glmbench/glmbench/internal/badinput"
	"github.com/glmbench/glmbench/internal/text"
	"github.com/glmbench/glmbench/reports/schema"
	"github.com/glmbench/glmbench/reports/serverside"
)

// Pings is how many pings measure an agent's clock offset; the one of
// least round trip gives it.
const Pings = 20

// StartLead is the least time between the start broadcast and the start:
// the slowest ping's round trip × 10 is added to it.
const StartLead = 200 * time.Millisecond

// PrepareTimeout bounds a prepare and the clock pings after it, beyond
// the run's connect timeout (the agent dials a burst's connections, each
// within it, before it answers).
var PrepareTimeout = 30 * time.Second

// Conn is the coordinator's link to one agent.
type Conn struct {
	// Addr is the agent's host:port, its name in the report.
	Addr   string
	base   string
	client *http.Client
	// token is sent with every request (Authorization: Bearer), where the
	// coordinator has one; hide holds it as the one secret to redact from
	// any text of an answer that is quoted (nil: none).
	token string
	hide  *endpoints.Endpoint
	// proto, instance and tokenRequired are what the agent's last pong
	// said.
	proto         int
	instance      string
	tokenRequired bool
}

// Dial checks that every agent answers a ping and returns a Conn to each,
// in order; token (the coordinator's --agents-token-env value, or "") goes
// with every request. An address that is malformed or does not answer, an
// agent that refuses the token, asks for one the coordinator does not
// have, or was started without one the coordinator has, gives a bad input
// error naming it, before any load.
func Dial(ctx context.Context, addrs []string, token string) ([]*Conn, error) {
	if len(addrs) == 0 {
		return nil, badinput.Errorf("no agents given")
	}
	conns := make([]*Conn, len(addrs))
	seen := map[string]string{}
	hide, err := tokenSecrets(token)
	if err != nil {
		return nil, err
	}
	for k, a := range addrs {
		a = strings.TrimSpace(a)
		if a == "" || strings.Contains(a, "/") {
			return nil, badinput.Errorf("agent %q: want host:port", a)
		}
		c := &Conn{Addr: a, base: "http://" + a, client: noRedirects, token: token, hide: hide}
		pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		_, _, err := c.ping(pctx)
		cancel()
		var refused *refusedError
		switch {
		case errors.As(err, &refused):
			return nil, badinput.Errorf("agent %s: %s", a, refused.msg)
		case err != nil:
			return nil, badinput.Errorf("agent %s is unreachable: %v", a, err)
		}
		if c.proto != Proto {
			return nil, badinput.Errorf("agent %s speaks agent protocol %d, this glmbench %d: run the same glmbench version on both", a, c.proto, Proto)
		}
		switch {
		case c.tokenRequired && token == "":
			return nil, badinput.Errorf("agent %s asks for a token (it was started with --token-env): give --agents-token-env the variable that holds it", a)
		case !c.tokenRequired && token != "":
			// It would take load from anyone: the coordinator's operator
			// asked for agents that do not.
			return nil, badinput.Errorf("agent %s takes no token (it was started without --token-env), so anyone who reaches it can use it: start it with --token-env, or run without --agents-token-env", a)
		}
		if c.instance != "" {
			if other, dup := seen[c.instance]; dup {
				return nil, badinput.Errorf("agents %s and %s are the same agent (one host's two addresses?): give each agent once", other, a)
			}
			seen[c.instance] = a
		}
		conns[k] = c
	}
	return conns, nil
}

// CheckOptions says whether a run's options can be distributed: extra
// headers given with their values (secrets the agents cannot read; a
// --header-env header travels as its variable's name) and credentials in
// the endpoint's URL (https://sk-…@host/v1, which the plan would carry to
// every agent) are refused.
func CheckOptions(o *bench.Options) error {
	if names := o.Endpoint.LiteralHeaderNames(); len(names) > 0 {
		return badinput.Errorf("extra headers given with their values (%s) are not supported with agents: give each as --header-env NAME=VAR, and each agent reads VAR from its own environment", strings.Join(names, ", "))
	}
	// The plan carries the base URL: credentials in it would travel.
	if u, err := url.Parse(o.Endpoint.BaseURL); err == nil && u.User != nil {
		return badinput.Errorf("credentials in the endpoint URL (%s) are not supported with agents: each agent reads only the API key from its own environment", endpoints.RedactURL(o.Endpoint.BaseURL))
	}
	return nil
}

// ping asks the agent its clock: it returns the agent's time and the
// round trip, measured on the coordinator's monotonic clock, with the
// midpoint of the round trip on the coordinator's clock.
func (c *Conn) ping(ctx context.Context) (offset, rtt time.Duration, err error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.base+RoutePing, nil)
	if err != nil {
		return 0, 0, err
	}
	c.authorize(req)
	t0 := time.Now()
	resp, err := c.client.Do(req)
	if err != nil {
		return 0, 0, err
	}
	defer resp.Body.Close()
	if err := c.answerError(RoutePing, resp); err != nil {
		return 0, 0, err
	}
	var p Pong
	err = json.NewDecoder(resp.Body).Decode(&p)
	t1 := time.Now()
	if err != nil {
		return 0, 0, fmt.Errorf("ping: %w", err)
	}
	c.proto, c.instance, c.tokenRequired = p.Proto, p.Instance, p.TokenRequired
	rtt = t1.Sub(t0)
	mid := t0.Add(rtt / 2)
	return time.Unix(0, p.Now).Sub(mid), rtt, nil
}

// measure pings the agent Pings times: the offset of its clock from the
// coordinator's (agent minus coordinator) from the least round trip, half
// that round trip the uncertainty, and the largest round trip seen.
func (c *Conn) measure(ctx context.Context) (offset, uncertainty, slowest time.Duration, err error) {
	best := time.Duration(-1)
	for range Pings {
		off, rtt, err := c.ping(ctx)
		if err != nil {
			return 0, 0, 0, err
		}
		if best < 0 || rtt < best {
			best, offset = rtt, off
		}
		slowest = max(slowest, rtt)
	}
	return offset, best / 2, slowest, nil
}

func (c *Conn) post(ctx context.Context, route string, body any) (*http.Response, error) {
	b, err := json.Marshal(body)
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.base+route, bytes.NewReader(b))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	c.authorize(req)
	resp, err := c.client.Do(req)
	if err != nil {
		return nil, err
	}
	if err := c.answerError(route, resp); err != nil {
		resp.Body.Close()
		return nil, err
	}
	return resp, nil
}

// authorize puts the coordinator's token on req, where it has one.
func (c *Conn) authorize(req *http.Request) {
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
}

// noRedirects is the coordinator's client: it never follows a redirect.
// Go's client forwards Authorization (the agents' token) to another port of
// the same host, and any other header to any host; an agent never
// redirects, so a 3xx is an answer, reported as one (answerError).
var noRedirects = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

// refusedError is an agent's 401: the token was wrong or missing. msg is
// the agent's one line (which never quotes the token).
type refusedError struct{ msg string }

func (e *refusedError) Error() string { return e.msg }

// answerError is nil for a 200 or 204, a *refusedError for a 401, else
// the route, the status and the start of the agent's text. The text is
// read far past what is quoted and has the token redacted before the cut:
// what answers at an agent's address (a proxy's error page, a debugging
// server) may write the request's Authorization header back, and the text
// goes to stderr or, as a lost agent's reason, into the report.
func (c *Conn) answerError(route string, resp *http.Response) error {
	if resp.StatusCode == http.StatusOK || resp.StatusCode == http.StatusNoContent {
		return nil
	}
	b, _ := io.ReadAll(io.LimitReader(resp.Body, answerWindow+6*int64(len(c.token))))
	msg := text.Shown(string(c.hide.RedactBytes(b)), 512)
	if resp.StatusCode == http.StatusUnauthorized {
		return &refusedError{msg: fmt.Sprintf("%s: %s", route, msg)}
	}
	return fmt.Errorf("%s: %s: %s", route, resp.Status, msg)
}

// Shares splits a --max-concurrency of c among n agents: c/n each, the
// remainder to the first ones; all 0 when c is 0 (no bound).
func Shares(c, n int) []int {
	out := make([]int, n)
	if c <= 0 {
		return out
	}
	for k := range out {
		out[k] = c / n
		if k < c%n {
			out[k]++
		}
	}
	return out
}

// agentRun is one agent's part of a phase as the coordinator saw it.
type agentRun struct {
	stats   schema.AgentStats
	offset  time.Duration
	records map[int]schema.Record
	// sent holds the send offsets of the requests the agent said it sent;
	// began when it said its phase began (zero: it did not).
	sent  map[int]float64
	began time.Time
	end   *End
	lost  string
	// token is the agent's Ready.Token, given back in the start.
	token string
}

// RunPhase runs one fixed phase across the agents: it prepares each with
// its shard of the plan, measures their clock offsets, starts them
// together at a time far enough ahead, collects their records and
// recomputes the phase from all of them with the single-host code
// (bench.Result). Under a --max-concurrency C below the agents' count,
// only the first C agents take part, one in flight each. Every index of
// the phase has exactly one record, each with its agent: an agent that was unreachable or died leaves those of
// its requests that did not come back as not sent, and the phase degraded
// (its AgentStats say why). Records' send offsets are on the common start,
// PhaseRun.Start, on the coordinator's clock. Cancelling ctx cancels every
// agent's phase; what they recorded still comes back. A workload phase
// (plan.Work) is not distributed yet: every agent is then lost.
func RunPhase(ctx context.Context, o *bench.Options, plan bench.Plan, conns []*Conn) bench.PhaseRun {
	// The endpoint's own metrics are the coordinator's to scrape, as on
	// one host: before the agents prepare, during, and after the merge.
	w := o.Watch(ctx, plan.Spec.Name, 0)
	run := runPhase(ctx, o, plan, conns)
	run.Samples = w.End(run.Start)
	run.Result.Server = serverside.Stats(run.Samples)
	return run
}

// runPhase is RunPhase without the scraping.
func runPhase(ctx context.Context, o *bench.Options, plan bench.Plan, conns []*Conn) bench.PhaseRun {
	spec := plan.Spec
	if o.MaxConcurrency > 0 && o.MaxConcurrency < len(conns) {
		// A share of 0 would be no bound at all: a --max-concurrency
		// under the agents' count runs on that many agents, one each.
		conns = conns[:o.MaxConcurrency]
	}
	n := len(conns)
	shares := Shares(o.MaxConcurrency, n)
	runs := make([]*agentRun, n)
	for k, c := range conns {
		ar := &agentRun{records: map[int]schema.Record{}, sent: map[int]float64{}}
		ar.stats = schema.AgentStats{Name: c.Addr, Index: k, Count: n, MaxConcurrency: shares[k]}
		ar.stats.Requests = (&bench.Shard{Index: k, Count: n}).Requests(spec.N)
		runs[k] = ar
	}
	if plan.Work != nil {
		for _, ar := range runs {
			ar.lost = "workload phases are not distributed yet"
		}
		return merge(o, plan, runs, time.Now(), ctx.Err() != nil)
	}

	// Prepare every agent and measure its clock, all at once.
	var wg sync.WaitGroup
	var slowest time.Duration
	var mu sync.Mutex
	for k, c := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			slow := runs[k].prepare(ctx, o, plan, c, Prepare{
				BaseURL: o.Endpoint.BaseURL, Model: o.Endpoint.Model, Shape: o.Shape, Spec: spec,
				Chars: plan.Cal.Chars, PromptTokens: plan.Cal.PromptTokens, First: plan.First,
				Nonce: o.Nonce, Seed: o.Seed, RequestRate: o.RequestRate, MaxConcurrency: shares[k],
				Limits: o.Limits, ConnectTimeout: o.ConnectTimeout, PhaseCap: o.PhaseCap,
				Shard: bench.Shard{Index: k, Count: n}, Insecure: o.Endpoint.Trust.Insecure,
				HeaderEnv: o.Endpoint.HeaderEnv(),
			})
			mu.Lock()
			slowest = max(slowest, slow)
			mu.Unlock()
		}()
	}
	wg.Wait()
	start := time.Now().Add(StartLead + 10*slowest)
	if ctx.Err() != nil {
		return merge(o, plan, runs, start, true)
	}

	// Cancelling ctx cancels the agents' phases; their streams go on.
	streamCtx, stopStreams := context.WithCancel(context.WithoutCancel(ctx))
	defer stopStreams()
	stopWatch := context.AfterFunc(ctx, func() { cancelAgents(conns, runs) })
	defer stopWatch()
	for k, c := range conns {
		ar := runs[k]
		if ar.lost != "" {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			ar.collect(streamCtx, c, start.Add(ar.offset), spec.N)
		}()
	}
	wg.Wait()
	return merge(o, plan, runs, start, ctx.Err() != nil)
}

// prepare sends an agent its phase and measures its clock; a failure marks
// the agent lost. It returns the slowest clock exchange it saw.
func (ar *agentRun) prepare(ctx context.Context, o *bench.Options, plan bench.Plan, c *Conn, p Prepare) (slow time.Duration) {
	// The agent opens a burst's connections before it answers, each
	// within the connect timeout: the wait allows for them.
	pctx, cancel := context.WithTimeout(ctx, PrepareTimeout+o.ConnectTimeout)
	defer cancel()
	// An interrupt (ctx) is no agent's failure: the phase is then
	// interrupted, not degraded.
	lose := func(why string, err error) time.Duration {
		if ctx.Err() == nil {
			ar.lost = why + err.Error()
		}
		return 0
	}
	resp, err := c.post(pctx, RoutePrepare, p)
	if err != nil {
		return lose("prepare: ", err)
	}
	var ready Ready
	err = json.NewDecoder(io.LimitReader(resp.Body, 1<<16)).Decode(&ready)
	resp.Body.Close()
	if err != nil {
		return lose("prepare: ", err)
	}
	ar.token = ready.Token
	off, unc, slow, err := c.measure(pctx)
	if err != nil {
		return lose("clock: ", err)
	}
	ar.offset = off
	ar.stats.OffsetMs, ar.stats.UncertaintyMs = ms(off), ms(unc)
	return slow
}

// cancelAgents asks every agent not lost to cancel its phase.
func cancelAgents(conns []*Conn, runs []*agentRun) {
	for k, c := range conns {
		if runs[k].lost == "" {
			cctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			if resp, err := c.post(cctx, RouteCancel, struct{}{}); err == nil {
				resp.Body.Close()
			}
			cancel()
		}
	}
}

// collect starts the agent at at (on its clock) and reads its records
// until the end line, or until the stream breaks (the agent lost).
func (ar *agentRun) collect(ctx context.Context, c *Conn, at time.Time, n int) {
	// A stream silent for IdleTimeout (not even a heartbeat) is an agent
	// lost: its request is cancelled, so that nothing waits on it forever.
	// (at is on the agent's clock; the wait until it, on this one.)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var silent atomic.Bool
	idle := time.AfterFunc(IdleTimeout+time.Until(at.Add(-ar.offset)), func() { silent.Store(true); cancel() })
	defer idle.Stop()
	lostAs := func(what string, err error) {
		if silent.Load() {
			ar.lost = fmt.Sprintf("%s: silent for %s", what, IdleTimeout)
			return
		}
		ar.lost = what + ": " + err.Error()
	}
	resp, err := c.post(ctx, RouteStart, Start{At: at.UnixNano(), Token: ar.token})
	if err != nil {
		lostAs("start", err)
		return
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 0, 64<<10), 64<<20)
	shard := &bench.Shard{Index: ar.stats.Index, Count: ar.stats.Count}
	for sc.Scan() {
		idle.Reset(IdleTimeout)
		var l Line
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			ar.lost = "a malformed line: " + err.Error()
			return
		}
		switch {
		case l.Began != 0:
			ar.began = time.Unix(0, l.Began)
		case l.Sent != nil:
			if shard.Owns(l.Sent.I) {
				ar.sent[l.Sent.I] = l.Sent.Offset
			}
		case l.Record != nil:
			rec := *l.Record
			// Only its own requests, once each: an agent's word on another's
			// would double an index.
			if rec.I < 0 || rec.I >= n || !shard.Owns(rec.I) {
				continue
			}
			if _, dup := ar.records[rec.I]; !dup {
				ar.records[rec.I] = rec
			}
		case l.End != nil:
			ar.end = l.End
			return
		}
	}
	err = sc.Err()
	if err == nil {
		err = io.ErrUnexpectedEOF
	}
	lostAs("died mid-phase", err)
}

// merge makes the phase from every agent's records: shifted onto the
// common start, missing ones not sent, recomputed as from one host.
func merge(o *bench.Options, plan bench.Plan, runs []*agentRun, start time.Time, interrupted bool) bench.PhaseRun {
	spec := plan.Spec
	var records []schema.Record
	var lost []string
	status := schema.StatusComplete
	var agents []schema.AgentStats
	for _, ar := range runs {
		skew := time.Duration(0)
		if ar.end != nil && ar.began.IsZero() {
			ar.began = time.Unix(0, ar.end.Began)
		}
		if !ar.began.IsZero() {
			skew = ar.began.Add(-ar.offset).Sub(start)
			ar.stats.StartSkewMs = ms(skew)
		}
		if ar.end != nil {
			switch ar.end.Status {
			case schema.StatusInterrupted:
				status = schema.StatusInterrupted
			case schema.StatusCapped:
				if status == schema.StatusComplete {
					status = schema.StatusCapped
				}
			}
		}
		maxLag := 0.0
		for _, rec := range ar.records {
			rec.Agent = ar.stats.Name
			rec.SendOffset += skew.Seconds()
			maxLag = max(maxLag, rec.SendLag)
			records = append(records, rec)
		}
		ar.stats.Records = len(ar.records)
		ar.stats.Saturated = maxLag > bench.SaturationLag.Seconds()
		shard := &bench.Shard{Index: ar.stats.Index, Count: ar.stats.Count}
		for i := range spec.N {
			if _, ok := ar.records[i]; ok || !shard.Owns(i) {
				continue
			}
			// A request its agent sent but never recorded was in flight
			// when the agent was lost: cancelled, as by an interrupt.
			rec := schema.Record{Phase: spec.Name, I: i, NotSent: true, Agent: ar.stats.Name}
			if off, ok := ar.sent[i]; ok {
				rec.NotSent, rec.Cancelled, rec.SendOffset = false, schema.CancelInterrupt, off+skew.Seconds()
			}
			records = append(records, rec)
		}
		if ar.lost != "" {
			ar.stats.Lost = ar.lost
			lost = append(lost, ar.stats.Name)
		}
		agents = append(agents, ar.stats)
	}
	slices.SortFunc(records, func(a, b schema.Record) int { return cmp.Compare(a.I, b.I) })
	if interrupted && status == schema.StatusComplete {
		status = schema.StatusInterrupted
	}
	if len(lost) > 0 {
		status = schema.StatusDegraded
	}
	r := bench.Result(o, plan, records, status)
	r.Agents = agents
	return bench.PhaseRun{Start: start, Result: r, Records: records}
}

// Lost names the agents a phase lost, for a warning line; nil when none.
func Lost(r schema.PhaseResult) error {
	var msgs []string
	for _, a := range r.Agents {
		if a.Lost != "" {
			msgs = append(msgs, fmt.Sprintf("agent %s: %s", a.Name, a.Lost))
		}
	}
	if len(msgs) == 0 {
		return nil
	}
	return errors.New("phase " + r.Phase + " degraded: " + strings.Join(msgs, "; "))
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
