package bench

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/glmbench/glmbench/bench/workload"
	"github.com/glmbench/glmbench/endpoints"
	"github.com/glmbench/glmbench/reports/schema"
)

// errDrain is the cause a sweep point's requests are cancelled with when
// the point ends: every measured request has ended, or the drain ran out.
var errDrain = errors.New("sweep point ended")

// Load is one sweep point's load: Concurrency requests kept in flight
// (closed loop: a new one as one ends), or, when Rate > 0, requests sent as
// a Poisson process of Rate per second.
type Load struct {
	Concurrency int
	Rate        float64
}

// Timeline is a sweep point's: a warm-up whose requests are not measured,
// the measured window, and at most Drain after it for the window's requests
// to end, while the load goes on so that they end under it.
type Timeline struct {
	Warmup, Duration, Drain time.Duration
}

// PointRun is what one sweep point produced.
type PointRun struct {
	// Start is the point's start, which records' send_offset counts from.
	Start   time.Time
	Records []schema.Record
	// CPUSeconds is the glmbench process's CPU time during the point.
	CPUSeconds float64
	// Interrupted is set when ctx was cancelled before the point ended.
	Interrupted bool
	// Samples are the scrapes of the endpoint's metrics around and during
	// the point, their T from Start; nil without Options.Metrics.
	Samples []schema.MetricsSample
}

// point is one sweep point in flight.
type point struct {
	n    int
	spec Spec
	tl   Timeline
	// body is request i's body, out its max_tokens; annotate adds what a
	// workload knows of it to its record (nil for a fixed shape).
	body     func(i int) []byte
	out      func(i int) int
	annotate func(rec *schema.Record, i int)
	lim      endpoints.StreamLimits
	api      endpoints.API // the route every request goes to (Shape.API)
	pool     *endpoints.Pool
	ctx      context.Context
	start    time.Time
	next     atomic.Int64
	live     atomic.Int64

	mu      sync.Mutex
	records []schema.Record
	closed  bool // the window has ended: no request started now is measured
	pending int  // measured requests not yet ended
	settled chan struct{}
	once    sync.Once
}

// RunPoint runs sweep point n (from 1) of plan at load over the timeline tl.
// Every request sent becomes a record carrying n and where it started
// (schema.WindowWarmup, WindowMeasured, WindowCooldown). When the window has
// ended and every measured request with it, or when the drain runs out, the
// requests still in flight are cancelled (schema.CancelDrain): a measured one
// among them is unfinished. Cancelling ctx ends the point early.
func RunPoint(ctx context.Context, o *Options, plan Plan, n int, load Load, tl Timeline) PointRun {
	spec := plan.Spec
	conns := load.Concurrency
	if load.Rate > 0 {
		conns = 64
	}
	pt := &point{
		n: n, spec: spec, tl: tl, settled: make(chan struct{}),
		pool: endpoints.NewPool(o.Endpoint, endpoints.TransportOptions{Conns: conns, ConnectTimeout: o.ConnectTimeout}),
	}
	defer pt.pool.Close()
	if w := plan.Work; w != nil {
		pt.body, pt.out, pt.annotate = w.cycle(o.Nonce, pointNonce(o.Nonce, n))
	} else {
		pt.body = newTemplate(o.Shape, pointNonce(o.Nonce, n), newFiller().Text(plan.Cal.Chars), spec.Out).body
		pt.out = func(int) int { return spec.Out }
	}
	pt.lim, pt.api = o.Limits, o.Shape.API
	if load.Rate <= 0 {
		warmCtx, cancelWarm := context.WithTimeout(ctx, o.ConnectTimeout+5*time.Second)
		pt.pool.Warm(warmCtx, conns)
		cancelWarm()
	}
	w := o.Watch(ctx, spec.Name, n)
	pctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	pt.ctx = pctx
	cpu0 := cpuSeconds()
	pt.start = time.Now()
	var wg sync.WaitGroup
	if load.Rate > 0 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			pt.poisson(&wg, load.Rate, o.Seed+int64(n))
		}()
	} else {
		for w := range load.Concurrency {
			wg.Add(1)
			go func() {
				defer wg.Done()
				pt.loop(pt.pool.Client(w), pt.start.Add(pt.tl.Warmup*time.Duration(w)/time.Duration(load.Concurrency)))
			}()
		}
	}
	pt.wait(ctx)
	cancel(errDrain)
	wg.Wait()
	return PointRun{Start: pt.start, Records: pt.records, CPUSeconds: cpuSeconds() - cpu0, Interrupted: ctx.Err() != nil,
		Samples: w.End(pt.start)}
}

// pointNonce starts every prompt of point n: the run's nonce (the one its
// report keeps) and the point's number, so no prompt of one point shares a
// prefix with another's, whatever the request counts. A run without a nonce
// draws one.
func pointNonce(run string, n int) string {
	if run == "" {
		run = NewNonce()
	}
	return run + "p" + strconv.Itoa(n)
}

// wait returns when the window has ended and every measured request with
// it, when the drain after the window runs out, or when ctx ends.
func (pt *point) wait(ctx context.Context) {
	end := pt.start.Add(pt.tl.Warmup + pt.tl.Duration)
	if !sleepCtx(ctx, time.Until(end)) {
		return
	}
	pt.mu.Lock()
	pt.closed = true
	if pt.pending == 0 {
		pt.once.Do(func() { close(pt.settled) })
	}
	pt.mu.Unlock()
	t := time.NewTimer(time.Until(end.Add(pt.tl.Drain)))
	defer t.Stop()
	select {
	case <-pt.settled:
	case <-t.C:
	case <-ctx.Done():
	}
}

// loop is one closed-loop user: it sends its first request at first (the
// users start spread evenly over the warm-up, so that by the window they
// are not in step: c users that all began together would start their
// requests in waves of c, and a window's count of starts would be a
// multiple of c), then a request as soon as its last one ended, until the
// point ends. The send lag is the time from that end (or from first) to the
// next request's t0.
func (pt *point) loop(c *endpoints.Client, first time.Time) {
	if !sleepCtx(pt.ctx, time.Until(first)) {
		return
	}
	planned := first
	var b refusalBackoff
	for pt.ctx.Err() == nil {
		res := pt.send(c, planned)
		planned = time.Now()
		if pause := b.after(res, planned); pause > 0 {
			planned = planned.Add(pause)
			if !sleepCtx(pt.ctx, pause) {
				return
			}
		}
	}
}

// The pauses of a closed-loop user the server refused (refusalBackoff).
const (
	firstRefusalPause = 100 * time.Millisecond
	maxDoubledPause   = 2 * time.Second
	maxRefusalPause   = 10 * time.Second
)

// refusalBackoff is what a real client does after a refusal (the OpenAI
// SDKs, LiteLLM, a browser): it waits before it asks again. A closed-loop
// user whose request failed before its first token (a 429, a 503, a
// connection refused) waits for the answer's Retry-After (at most
// maxRefusalPause) or, without one, 100 ms doubling each refusal in a row
// up to 2 s; any request that streamed content resets it. Without it a
// refused user sends again at once, and a server refusing in a millisecond
// gets thousands of requests a second from a handful of users: the sweep
// would measure its own flood, not the load it names.
type refusalBackoff struct{ last time.Duration }

// after says how long to wait after res, which ended at now.
func (b *refusalBackoff) after(res *endpoints.StreamResult, now time.Time) time.Duration {
	if res.Class == "" || len(res.Events) > 0 {
		b.last = 0
		return 0
	}
	b.last = min(max(2*b.last, firstRefusalPause), maxDoubledPause)
	if d, ok := endpoints.RetryAfter(res.RetryAfter, now); ok && d > 0 {
		return min(d, maxRefusalPause)
	}
	return b.last
}

// poisson sends requests at exponential gaps of mean 1/rate until the point
// ends, each on its own goroutine (wg counts them).
func (pt *point) poisson(wg *sync.WaitGroup, rate float64, seed int64) {
	gap := poissonGaps(rate, seed)
	at := pt.start
	for k := 0; ; k++ {
		if !sleepCtx(pt.ctx, time.Until(at)) {
			return
		}
		planned := at
		wg.Add(1)
		go func() {
			defer wg.Done()
			pt.send(pt.pool.Client(k), planned)
		}()
		at = at.Add(workload.Seconds(gap())) // saturating: a tiny rate's gap passes int64
	}
}

// send sends one request planned for planned, records it and returns
// what came back.
func (pt *point) send(c *endpoints.Client, planned time.Time) *endpoints.StreamResult {
	i := int(pt.next.Add(1)-1) % ProbeIndex
	lim, out := pt.lim, pt.out(i)
	lim.MaxTokens = out
	st := c.Prepare(pt.ctx, pt.api, pt.body(i), lim)
	res := &endpoints.StreamResult{Events: make([]time.Duration, 0, min(out+8, 1<<16))}
	window := pt.enter()
	st.Run(&pt.live, res)
	rec := record(pt.spec.Name, out, i, pt.start, planned, 0, res)
	rec.Point, rec.Window = pt.n, window
	if pt.annotate != nil {
		pt.annotate(&rec, i)
	}
	pt.mu.Lock()
	pt.records = append(pt.records, rec)
	if window == schema.WindowMeasured {
		pt.pending--
		if pt.closed && pt.pending == 0 {
			pt.once.Do(func() { close(pt.settled) })
		}
	}
	pt.mu.Unlock()
	return res
}

// enter says where in the timeline a request starting now falls, and counts
// a measured one as pending until it ends.
func (pt *point) enter() string {
	since := time.Since(pt.start)
	pt.mu.Lock()
	defer pt.mu.Unlock()
	switch {
	case since < pt.tl.Warmup:
		return schema.WindowWarmup
	case pt.closed || since >= pt.tl.Warmup+pt.tl.Duration:
		return schema.WindowCooldown
	}
	pt.pending++
	return schema.WindowMeasured
}
