package bench

import (
	"cmp"
	"context"
	"errors"
	"math"
	mrand "math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/glmbench/glmbench/bench/workload"
	"github.com/glmbench/glmbench/endpoints"
	"github.com/glmbench/glmbench/internal/badinput"
	"github.com/glmbench/glmbench/reports/schema"
	"github.com/glmbench/glmbench/reports/serverside"
	"github.com/glmbench/glmbench/reports/slo"
	"github.com/glmbench/glmbench/reports/summary"
)

// ErrPhaseCap is the cause a phase's requests are cancelled with when the
// phase outlived its cap.
var ErrPhaseCap = errors.New("phase cap reached")

// SaturationLag is the send lag beyond which the client itself may have
// shaped the figures (schema.SaturationLag).
const SaturationLag = schema.SaturationLag

// Options configure a run's phases.
type Options struct {
	Endpoint *endpoints.Endpoint
	Shape    Shape
	// Limits bound each request (TTFT, stall, total).
	Limits         endpoints.StreamLimits
	ConnectTimeout time.Duration
	// ProbeTimeout limits each calibration probe (0: ProbeLimit's default,
	// which grows with the phase's prompt).
	ProbeTimeout time.Duration
	// CalibrationBudget limits the whole calibration (0: five times the
	// probe limit, summed over the phases' distinct prompt lengths).
	CalibrationBudget time.Duration
	// PhaseCap ends a phase after this long, cancelling requests in flight (0: none).
	PhaseCap time.Duration
	// RequestRate, when > 0, sends requests as a Poisson process of this many
	// per second instead of all at once.
	RequestRate float64
	// MaxConcurrency, when > 0, bounds requests in flight.
	MaxConcurrency int
	// Seed drives the Poisson arrivals.
	Seed int64
	// Nonce starts every prompt; see NewNonce.
	Nonce string
	// Progress, when set, is updated live for a display to poll.
	Progress *Progress
	// SLOs, when set, add goodput and attainment to each phase.
	SLOs slo.Set
	// Metrics, when set, scrapes the endpoint's own metrics before each
	// phase (and sweep point), every MetricsInterval during it
	// (DefaultMetricsInterval when 0), and after it.
	Metrics         Scraper
	MetricsInterval time.Duration
	// Shard, when set, makes this process one agent of a distributed run:
	// of each phase's schedule (built whole, as every agent builds it) it
	// sends only the requests i with i mod Count == Index, and records only
	// those.
	Shard *Shard
	// StartAt, when not zero, is when the phase's clock starts: its set-up
	// (a burst's connections) is done first, then the phase sleeps to it on
	// the monotonic clock. An agent starts at the time its coordinator
	// broadcast.
	StartAt time.Time
	// OnRecord, when set, is called with each record as its request ends
	// (or is recorded as not sent), from the request's own goroutine: it
	// must be safe for concurrent use and must not keep rec.
	OnRecord func(rec *schema.Record)
	// OnStart, when set, is called with a fixed phase's start as its clock
	// starts, and OnSend with each request's index and send time as it is
	// sent, from the request's own goroutine (safe for concurrent use,
	// quick: it delays the send). An agent streams both, so that a
	// coordinator knows what an agent that dies had begun.
	OnStart func(start time.Time)
	OnSend  func(i int, at time.Time)
	// Pool, when set, is the connection pool the next phase sends on,
	// opened ahead (an agent's prepare warms a burst's connections before
	// it answers ready); the phase warms no more and closes it.
	Pool *endpoints.Pool
}

// Shard is one agent's part of a distributed run's schedule.
type Shard struct{ Index, Count int }

// Owns reports whether request i is the shard's; a nil shard owns all.
func (s *Shard) Owns(i int) bool { return s == nil || s.Count <= 1 || i%s.Count == s.Index }

// Requests is how many of a phase of n requests the shard owns.
func (s *Shard) Requests(n int) int {
	owned := 0
	for i := range n {
		if s.Owns(i) {
			owned++
		}
	}
	return owned
}

// Plan is a phase ready to run: its shape and its calibrated filler.
type Plan struct {
	Spec Spec
	Cal  Calibration
	// Work, when set, is the workload phase a sweep's points draw their
	// requests from, in turn, instead of Spec's one shape.
	Work *WorkPlan
	// First is the prompt number of the phase's request 0: the requests of
	// the phases before it, so that no request of a later phase (8,192
	// tokens) starts with an earlier one's whole prompt (256 tokens of the
	// same filler after the same prefix) and finds it cached.
	First int
}

// PhaseRun is what one phase produced.
type PhaseRun struct {
	// Start is the phase start that records' send_offset counts from.
	Start   time.Time
	Result  schema.PhaseResult
	Records []schema.Record
	// CPUSeconds is the glmbench process's CPU time during the phase.
	CPUSeconds float64
	// Samples are the scrapes of the endpoint's metrics around and during
	// the phase (Options.Metrics), their T from Start; nil without.
	Samples []schema.MetricsSample
}

// Prepare calibrates every phase's prompt and checks that the endpoint
// accepts a request of each phase's exact shape, all before any load is
// sent. Where the server states its context, each phase's IN+OUT is checked
// against it first. An endpoint that refuses a probe, truncates prompts,
// lets a probe outlive its limit or the calibration its budget gives a bad
// input error (badinput.Error; wrapping a *ProbeError for a refused or
// failed probe). Warnings (an endpoint without usage, a calibration out of
// tolerance) are returned beside the plans. When ctx is cancelled, its
// cause is returned.
func Prepare(ctx context.Context, o *Options, specs []Spec) ([]Plan, []string, error) {
	tr := endpoints.NewTransport(endpoints.TransportOptions{Conns: 2, ConnectTimeout: o.ConnectTimeout, Trust: o.Endpoint.Trust})
	defer tr.Close()
	client := endpoints.NewClient(o.Endpoint, tr)
	if err := preflight(ctx, o, client, specs); err != nil {
		return nil, nil, err
	}
	budget := o.CalibrationBudget
	if budget <= 0 {
		// Each distinct prompt length is calibrated once (a few probes),
		// and every phase sends one probe of its full shape.
		seen := map[int]bool{}
		for _, s := range specs {
			if !seen[s.In] {
				seen[s.In] = true
				budget += 5 * ProbeLimit(o.ProbeTimeout, s.In)
			}
		}
	}
	cctx, cancel := context.WithTimeoutCause(ctx, budget, errCalibrationBudget)
	defer cancel()
	// A probe has a time limit of its own, whatever the load's limits: a
	// server that never answers, or streams without end, must not hold the
	// run before it has measured anything.
	lim := endpoints.StreamLimits{MaxTokens: 1}
	p := &prober{client: client, shape: o.Shape, nonce: NewNonce(), fill: newFiller(), lim: lim}
	probes := 0
	spent := func(err error) error { return calibrationEnd(err, p.phase, budget, probes+p.probes) }
	cals := map[int]Calibration{}
	var plans []Plan
	first := 0
	var warns []string
	for _, s := range specs {
		p.phase = s.Name
		limit := ProbeLimit(o.ProbeTimeout, s.In)
		p.lim.Total, p.lim.Stall = limit, 0
		if o.Limits.Stall > 0 {
			p.lim.Stall = min(o.Limits.Stall, limit)
		}
		lim := p.lim
		cal, ok := cals[s.In]
		if !ok {
			var err error
			probes += p.probes
			p.probes = 0
			cal, err = p.calibrate(cctx, s.In)
			if err != nil {
				return nil, warns, spent(err)
			}
			cals[s.In] = cal
			if cal.Warning != "" {
				warns = append(warns, "phase "+s.Name+": "+cal.Warning)
			}
		}
		// The load's exact body (max_tokens and all), stopped at the first token.
		var res endpoints.StreamResult
		body := o.Shape.chatBody(Prefix(p.nonce, ProbeIndex), p.fill.Text(cal.Chars), s.Out, true)
		shape := lim
		shape.MaxTokens = s.Out
		client.StreamUntilFirst(cctx, o.Shape.API, body, shape, &res)
		if res.Cancelled != nil {
			return nil, warns, spent(res.Cancelled)
		}
		if res.Class != "" {
			return nil, warns, spent(p.fail("probe of the load's request shape", &res))
		}
		plans = append(plans, Plan{Spec: s, Cal: cal, First: first})
		first += s.N
	}
	return plans, warns, nil
}

// calibrationEnd is how a calibration ends early with err: a spent budget
// and a refused or failed probe are bad input, a cancelled ctx gives its
// cause.
func calibrationEnd(err error, phase string, budget time.Duration, probes int) error {
	var pe *ProbeError
	switch {
	case errors.Is(err, errCalibrationBudget):
		return badinput.Errorf("phase %s: calibration did not end within its budget of %s (%d probes sent; the budget is five times the probe limit for each prompt length: raise --probe-timeout for a slow server)", phase, budget, probes)
	case errors.As(err, &pe):
		return badinput.Wrap(err)
	}
	return err
}

// sleepCtx waits d, or until ctx ends; it reports whether d passed.
func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// RunPhase sends one phase's requests and waits for all of them to end. It
// never fails: every request, sent or not, becomes a record, and the result
// is computed from the records. Cancelling ctx (the user's Ctrl-C: any
// cause but ErrPhaseCap) ends the phase early with status interrupted.
//
// With o.Shard set, the phase builds its whole seeded schedule but sends
// only the requests the shard owns, each at its planned time (a burst's
// all at once), under o.MaxConcurrency as this shard's own share; its
// records, and the result computed from them, are the owned requests'
// only, each with its index in the whole phase.
func RunPhase(ctx context.Context, o *Options, plan Plan) PhaseRun {
	spec := plan.Spec
	owned := ownedIndices(o.Shard, spec.N)
	pool, conc := o.phasePool(len(owned))
	defer pool.Close()
	prog := o.progress()
	ph := newPhase(o, plan, pool, prog)
	ph.owned = owned
	ph.sem = slots(o.MaxConcurrency, len(owned))
	arrivals := arrivalOffsets(spec.N, o.RequestRate, o.Seed)
	prog.begin(spec)

	// For a burst, open the phase's connections first, so the burst is not
	// a queue of dials; this is set-up, before the phase's clock and cap
	// start. Requests spread over time (--request-rate) dial as they go: a
	// connection opened minutes before its first request may have been
	// closed by the server as idle (nginx, load balancers, Go's
	// ReadHeaderTimeout), and the transport never retries a fresh one, so
	// the client's own staleness would count as the endpoint's connect error.
	run, status := ph.run(ctx, o, o.RequestRate <= 0, conc, func() {
		if o.RequestRate <= 0 && ph.sem == nil {
			ph.burst()
		} else {
			ph.dispatch(arrivals)
		}
	})
	if o.Shard != nil {
		run.Records = ownedRecords(ph.records, owned)
		status = phaseStatus(ctx, ph.ctx, run.Records)
	}
	run.Result = Result(o, plan, run.Records, status)
	run.Result.Server = serverside.Stats(run.Samples)
	return run
}

// ownedIndices lists the requests of a phase of n that shard owns, in
// order.
func ownedIndices(shard *Shard, n int) []int {
	out := make([]int, 0, n)
	for i := range n {
		if shard.Owns(i) {
			out = append(out, i)
		}
	}
	return out
}

// ownedRecords keeps the records of the owned requests, in order.
func ownedRecords(records []schema.Record, owned []int) []schema.Record {
	out := make([]schema.Record, len(owned))
	for k, i := range owned {
		out[k] = records[i]
	}
	return out
}

// Result is a phase's result computed from its records, as RunPhase
// computes it: the metrics, the calibration and the arrival options, and
// the SLO figures. A distributed run's coordinator recomputes a phase from
// every agent's records with it, so its figures come from the single-host
// code path; RunWorkPhase adds what a workload knows.
func Result(o *Options, plan Plan, records []schema.Record, status string) schema.PhaseResult {
	spec := plan.Spec
	r := summary.Phase(spec.Name, spec.In, spec.Out, records, status)
	if plan.Cal.PromptTokens >= 0 {
		r.CalibratedInputLen = ptr(plan.Cal.PromptTokens)
	}
	r.Concurrency = o.MaxConcurrency
	r.RequestRate = o.RequestRate
	if len(o.SLOs) > 0 {
		o.SLOs.Apply(&r, records, r.WallSec)
	}
	return r
}

// phasePool is the connection pool of a phase that would keep up to n
// requests in flight (o.Pool when set), and how many connections it
// holds: n, or --max-concurrency when that is lower.
func (o *Options) phasePool(n int) (*endpoints.Pool, int) {
	conc := n
	if o.MaxConcurrency > 0 {
		conc = min(conc, o.MaxConcurrency)
	}
	if o.Pool != nil {
		return o.Pool, conc
	}
	return endpoints.NewPool(o.Endpoint, endpoints.TransportOptions{Conns: conc, ConnectTimeout: o.ConnectTimeout}), conc
}

// progress is the live view a phase reports to: o.Progress, or one that
// no one reads.
func (o *Options) progress() *Progress {
	if o.Progress == nil {
		return &Progress{}
	}
	return o.Progress
}

// run opens conc connections first when warm (a burst's: see RunPhase),
// then sends the phase's requests with send (burst, dispatch or sessions)
// under the phase cap and waits for all of them to end. It returns the
// records, with the CPU seconds the sending took, and the phase's status.
func (ph *phase) run(ctx context.Context, o *Options, warm bool, conc int, send func()) (PhaseRun, string) {
	if warm && o.Pool == nil {
		warmCtx, cancelWarm := context.WithTimeout(ctx, o.ConnectTimeout+5*time.Second)
		ph.pool.Warm(warmCtx, conc)
		cancelWarm()
	}
	if !o.StartAt.IsZero() {
		sleepCtx(ctx, time.Until(o.StartAt))
	}
	w := o.Watch(ctx, ph.spec.Name, 0)
	var cancel func()
	ph.ctx, cancel = phaseContext(ctx, o.PhaseCap)
	defer cancel()
	ph.onRecord, ph.onStart, ph.onSend = o.OnRecord, o.OnStart, o.OnSend
	cpu0 := cpuSeconds()
	send()
	ph.wg.Wait()
	run := PhaseRun{Start: ph.start, Records: ph.records, CPUSeconds: cpuSeconds() - cpu0}
	run.Samples = w.End(ph.start)
	return run, phaseStatus(ctx, ph.ctx, ph.records)
}

// phase is one phase in flight: what RunPhase's parts share.
type phase struct {
	spec Spec
	// ctx is the phase's own: cancelled by the caller's, or at the cap.
	ctx  context.Context
	pool *endpoints.Pool
	// body is request i's body; out its max_tokens.
	body func(i int) []byte
	out  func(i int) int
	// work is the workload plan the phase runs, nil for a fixed phase.
	work *WorkPlan
	// api is the route every request goes to (Shape.API).
	api endpoints.API
	lim endpoints.StreamLimits
	// evCap is each result's initial room for event times.
	evCap int
	prog  *Progress
	// sem, under --max-concurrency below the phase's N, holds a slot per
	// request in flight.
	sem     chan struct{}
	records []schema.Record
	wg      sync.WaitGroup
	// start is the phase's clock: records' send_offset counts from it.
	start time.Time
	// owned lists the requests the phase sends (a shard's); nil for all.
	owned []int
	// onRecord, onStart and onSend are Options'.
	onRecord func(*schema.Record)
	onStart  func(time.Time)
	onSend   func(int, time.Time)
}

// slots is the semaphore of a phase that sends n requests under a
// --max-concurrency of limit: nil (no bound) when limit is 0 or not below n.
func slots(limit, n int) chan struct{} {
	if limit > 0 && limit < n {
		return make(chan struct{}, limit)
	}
	return nil
}

// started calls onStart, if set, with the phase's start.
func (ph *phase) started() {
	if ph.onStart != nil {
		ph.onStart(ph.start)
	}
}

// indices lists the requests the phase sends: its shard's, or all.
func (ph *phase) indices() []int {
	if ph.owned != nil {
		return ph.owned
	}
	all := make([]int, ph.spec.N)
	for i := range all {
		all[i] = i
	}
	return all
}

// newPhase sets up the phase of plan: its prompts, each request's limits,
// and its records; ctx and start are set when it begins.
func newPhase(o *Options, plan Plan, pool *endpoints.Pool, prog *Progress) *phase {
	spec := plan.Spec
	tmpl := newTemplate(o.Shape, o.Nonce, newFiller().Text(plan.Cal.Chars), spec.Out)
	ph := &phase{
		spec:    spec,
		pool:    pool,
		body:    func(i int) []byte { return tmpl.body((plan.First + i) % ProbeIndex) },
		out:     func(int) int { return spec.Out },
		api:     o.Shape.API,
		evCap:   min(spec.Out+8, 1<<16),
		prog:    prog,
		records: make([]schema.Record, spec.N),
	}
	// A load request knows its max_tokens: a stream far past it is ended as
	// the endpoint's fault (endpoints.EventBound).
	ph.lim = o.Limits
	ph.lim.MaxTokens = spec.Out
	return ph
}

// phaseContext is the phase's context under ctx: ended at the cap (when
// one is set) with the cause ErrPhaseCap. The returned func releases it.
func phaseContext(ctx context.Context, phaseCap time.Duration) (context.Context, func()) {
	phaseCtx, cancel := context.WithCancelCause(ctx)
	if phaseCap <= 0 {
		return phaseCtx, func() { cancel(nil) }
	}
	capCtx, cancelCap := context.WithTimeoutCause(phaseCtx, phaseCap, ErrPhaseCap)
	return capCtx, func() {
		cancelCap()
		cancel(nil)
	}
}

// ready makes request i ready to send (body, context, result buffer), so
// that none of it counts as send lag; the returned func sends it.
func (ph *phase) ready(i int) func(planned time.Time, queued time.Duration) {
	lim, out := ph.lim, ph.out(i)
	lim.MaxTokens = out
	st := ph.pool.Client(i).Prepare(ph.ctx, ph.api, ph.body(i), lim)
	res := &endpoints.StreamResult{Events: make([]time.Duration, 0, min(out+8, ph.evCap))}
	return func(planned time.Time, queued time.Duration) {
		defer ph.wg.Done()
		ph.prog.Sent.Add(1)
		if ph.onSend != nil {
			ph.onSend(i, time.Now())
		}
		st.Run(&ph.prog.Events, res)
		ph.records[i] = record(ph.spec.Name, out, i, ph.start, planned, queued, res)
		if ph.work != nil {
			ph.work.annotate(ph.records, i)
		}
		ph.prog.end(&ph.records[i])
		if ph.onRecord != nil {
			ph.onRecord(&ph.records[i])
		}
	}
}

// burst makes every request ready, then releases all of them at once.
func (ph *phase) burst() {
	gate := make(chan struct{})
	idx := ph.indices()
	ph.wg.Add(len(idx))
	for _, i := range idx {
		send := ph.ready(i)
		go func() {
			<-gate
			send(ph.start, 0)
		}()
	}
	ph.start = time.Now()
	ph.started()
	close(gate)
}

// dispatch sends the requests in the order of their planned times
// (arrivalOffsets' and Expand's are in order; a workload phase built in code
// may not be, and sending in index order would hold an early request behind
// a late one), request i at arrivals[i] from the phase start, or when a slot
// frees under --max-concurrency, until the phase ends; the requests it had
// no time to send are recorded as not sent.
func (ph *phase) dispatch(arrivals []time.Duration) {
	order := slices.Clone(ph.indices())
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(arrivals[a], arrivals[b]) })
	ph.start = time.Now()
	ph.started()
	sent := 0
	for _, i := range order {
		send := ph.ready(i)
		planned, queued, ok := ph.await(ph.start.Add(arrivals[i]))
		if !ok {
			break
		}
		sent++
		ph.wg.Add(1)
		go func() {
			if ph.sem != nil {
				defer func() { <-ph.sem }()
			}
			send(planned, queued)
		}()
	}
	for _, i := range order[sent:] {
		ph.notSent(i)
	}
}

// notSent records request i as not sent, with what the workload, if any,
// knows of it.
func (ph *phase) notSent(i int) {
	ph.records[i] = schema.Record{Phase: ph.spec.Name, I: i, NotSent: true}
	if ph.work != nil {
		ph.work.annotate(ph.records, i)
	}
	ph.prog.end(&ph.records[i])
	if ph.onRecord != nil {
		ph.onRecord(&ph.records[i])
	}
}

// await waits until planned and then, under --max-concurrency, for a free
// slot. It returns when the send is planned for and how long it queued
// for its slot, or false when the phase ended first.
func (ph *phase) await(planned time.Time) (time.Time, time.Duration, bool) {
	if wait := time.Until(planned); wait > 0 {
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-ph.ctx.Done():
			t.Stop()
			return planned, 0, false
		}
	}
	if ph.ctx.Err() != nil {
		return planned, 0, false
	}
	if ph.sem == nil {
		return planned, 0, true
	}
	select {
	case ph.sem <- struct{}{}:
	case <-ph.ctx.Done():
		return planned, 0, false
	}
	// Waiting for a slot is client-side queueing, reported apart; the send
	// is planned for when the slot freed.
	var queued time.Duration
	if now := time.Now(); now.After(planned) {
		queued = now.Sub(planned)
		planned = now
	}
	return planned, queued, true
}

// phaseStatus is how a phase ended: capped when phaseCtx ended at the cap
// and cut a request off, interrupted when the caller's ctx was cancelled,
// else complete.
func phaseStatus(ctx, phaseCtx context.Context, records []schema.Record) string {
	status := schema.StatusComplete
	if phaseCtx.Err() != nil {
		if errors.Is(context.Cause(phaseCtx), ErrPhaseCap) {
			status = schema.StatusCapped
		} else if ctx.Err() != nil {
			status = schema.StatusInterrupted
		}
	}
	// A cap that fired after every request had ended cut nothing off.
	if status == schema.StatusCapped && !anyCut(records) {
		status = schema.StatusComplete
	}
	return status
}

func anyCut(records []schema.Record) bool {
	for i := range records {
		if records[i].NotSent || records[i].Cancelled != "" {
			return true
		}
	}
	return false
}

// record turns a stream's raw result into the phase's record of request i.
func record(name string, out, i int, start, planned time.Time, queued time.Duration, res *endpoints.StreamResult) schema.Record {
	rec := schema.Record{
		Phase:      name,
		I:          i,
		SendOffset: res.T0.Sub(start).Seconds(),
		SendLag:    math.Max(0, res.T0.Sub(planned).Seconds()),
		QueueWait:  queued.Seconds(),
		Prompt:     res.PromptTokens,
		Finish:     res.Finish,
		Class:      res.Class,
		Status:     res.Status,
		RetryAfter: res.RetryAfter,
		Detail:     res.Detail,
		// The endpoint's usage when sound, else a note; n then counts events.
		BadUsage:        res.BadUsage,
		MalformedEvents: res.Malformed,
	}
	if len(res.Events) > 0 {
		keep := res.Events
		if res.Class != "" {
			// No metric reads a failed request's gaps; its first events say
			// how it began, its detail how many came.
			keep = keep[:min(len(keep), keptFailedEvents(out))]
		}
		rec.Events = make([]float64, len(keep))
		for k, d := range keep {
			rec.Events[k] = d.Seconds()
		}
		rec.TFirst = ptr(rec.Events[0])
		rec.TLast = ptr(res.Events[len(res.Events)-1].Seconds())
	}
	rec.TEnd = ptr(res.End.Seconds())
	if res.CachedReported {
		rec.CachedTokens = ptr(res.CachedTokens)
	}
	rec.ReasoningEvents, rec.ToolCallEvents = res.ReasoningEvents, res.ToolCallEvents
	rec.ProxyRetries, rec.ProxyFallbacks = res.ProxyRetries, res.ProxyFallbacks
	rec.ModelAnswered = res.OtherModel
	if res.Usage {
		rec.N, rec.NSource = res.CompletionTokens, schema.NFromUsage
		rec.ReasoningTokens = res.ReasoningTokens
	} else {
		rec.N, rec.NSource = len(res.Events), schema.NFromEvents
	}
	if res.Class != "" {
		rec.Body = string(res.Body)
	}
	switch {
	case res.Cancelled == nil:
	case errors.Is(res.Cancelled, ErrPhaseCap):
		rec.Cancelled = schema.CancelCap
	case errors.Is(res.Cancelled, errDrain):
		rec.Cancelled = schema.CancelDrain
	default:
		rec.Cancelled = schema.CancelInterrupt
	}
	return rec
}

// keptFailedEvents is how many event times a failed request's record keeps:
// 2×OUT+32, all that a server honouring max_tokens (even one splitting
// each token in two) sends.
func keptFailedEvents(out int) int { return 2*out + 32 }

// arrivalOffsets returns when each request is planned, from the phase start:
// all at zero (burst), or a Poisson process of rate per second seeded by seed.
func arrivalOffsets(n int, rate float64, seed int64) []time.Duration {
	out := make([]time.Duration, n)
	if rate <= 0 {
		return out
	}
	gap := poissonGaps(rate, seed)
	var t float64
	for i := 1; i < n; i++ {
		t += gap()
		out[i] = workload.Seconds(t)
	}
	return out
}

// poissonGaps draws a Poisson process of rate per second seeded by seed:
// each call gives the seconds from one arrival to the next.
func poissonGaps(rate float64, seed int64) func() float64 {
	rng := mrand.New(mrand.NewPCG(uint64(seed), 0x9e3779b97f4a7c15))
	return func() float64 { return rng.ExpFloat64() / rate }
}

// Progress is a live view of the phase in flight, safe to read from another
// goroutine while the phase runs.
type Progress struct {
	mu    sync.Mutex
	spec  Spec
	start time.Time

	Sent      atomic.Int64
	Done      atomic.Int64
	Completed atomic.Int64
	Cancelled atomic.Int64
	// Events counts content events received so far.
	Events  atomic.Int64
	classes [16]atomic.Int64 // by index in schema.Classes
}

func (p *Progress) begin(s Spec) {
	p.mu.Lock()
	p.spec, p.start = s, time.Now()
	p.mu.Unlock()
	p.Sent.Store(0)
	p.Done.Store(0)
	p.Completed.Store(0)
	p.Cancelled.Store(0)
	p.Events.Store(0)
	for i := range p.classes {
		p.classes[i].Store(0)
	}
}

func (p *Progress) end(rec *schema.Record) {
	p.Done.Add(1)
	switch {
	case rec.Completed():
		p.Completed.Add(1)
	case rec.Class != "":
		for k, c := range schema.Classes {
			if c == rec.Class {
				p.classes[k].Add(1)
			}
		}
	default:
		p.Cancelled.Add(1)
	}
}

// Phase returns the phase in flight and when it started.
func (p *Progress) Phase() (Spec, time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.spec, p.start
}

// Errors returns the error count of each class seen so far.
func (p *Progress) Errors() map[schema.Class]int64 {
	out := map[schema.Class]int64{}
	for k, c := range schema.Classes {
		if n := p.classes[k].Load(); n > 0 {
			out[c] = n
		}
	}
	return out
}

func ptr[T any](v T) *T { return &v }

// Schedule is the seeded schedule of a fixed phase of n requests: when
// each is planned, from the phase start (all at zero for a burst, rate
// 0). Every agent of a distributed run builds the same one.
func Schedule(n int, rate float64, seed int64) []time.Duration {
	return arrivalOffsets(n, rate, seed)
}
