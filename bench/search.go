package bench

import (
	"context"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/glmbench/glmbench/reports/schema"
	"github.com/glmbench/glmbench/reports/serverside"
	"github.com/glmbench/glmbench/reports/slo"
)

// Search picks a sweep's loads. Given a list it measures each in turn; in
// auto mode it doubles the load from Start until a point is bad, then
// bisects between the largest good load and the smallest bad one until they
// lie within Resolution of each other (for a concurrency, also until they
// are neighbours), never measuring more than MaxPoints. A first point that
// is bad halves the load until one is good; a halving that would pass below
// MinLoad measures MinLoad itself, and a bad MinLoad ends the search: no
// load met the SLOs.
type Search struct {
	// Integer loads (concurrencies) are whole numbers ≥ 1.
	Integer bool
	List    []float64
	Start   float64
	// MinLoad is the lowest load auto mode measures: for a rate, the one
	// whose window expects one request (1 / duration in seconds; below
	// it a window measures nothing). A concurrency's floor is 1 whatever
	// MinLoad says; 0 leaves a rate without one.
	MinLoad float64
	// Resolution is the bracket's relative width that ends bisection.
	Resolution float64
	MaxPoints  int

	measured int
	lo, hi   float64 // largest good, smallest bad (0: none yet)
	stop     string
}

// Next gives the next load to measure, or false with the reason the search
// ended (a schema.Stop* value).
func (s *Search) Next() (float64, bool) {
	if s.stop != "" {
		return 0, false
	}
	if s.List == nil && s.lo > 0 && s.hi > 0 && (s.hi-s.lo <= s.Resolution*s.lo || s.Integer && s.hi-s.lo <= 1) {
		return s.end(schema.StopBracketed)
	}
	if s.MaxPoints > 0 && s.measured >= s.MaxPoints {
		return s.end(schema.StopMaxPoints)
	}
	if s.List != nil {
		if s.measured >= len(s.List) {
			return s.end(schema.StopList)
		}
		return s.List[s.measured], true
	}
	var next float64
	switch {
	case s.measured == 0:
		next = s.Start
	case s.hi == 0: // no bad point yet
		next = s.lo * 2
	case s.lo == 0: // no good point yet
		next = s.hi / 2
		if s.Integer {
			next = math.Floor(next)
		}
		if floor := s.floor(); next < floor {
			if s.hi <= floor {
				return s.end(schema.StopNoneGood)
			}
			next = floor
		}
	default:
		next = (s.lo + s.hi) / 2
		if s.Integer {
			next = math.Floor(next)
		}
	}
	return next, true
}

// floor is the lowest load auto mode measures.
func (s *Search) floor() float64 {
	if s.Integer {
		return 1
	}
	return s.MinLoad
}

func (s *Search) end(stop string) (float64, bool) {
	s.stop = stop
	return 0, false
}

// Stopped ends the search for a reason of the caller's (a saturated client,
// an interrupt).
func (s *Search) Stopped(stop string) { s.stop = stop }

// Stop is why the search ended ("" while it goes on).
func (s *Search) Stop() string { return s.stop }

// Record takes the verdict on a measured load.
func (s *Search) Record(load float64, good bool) {
	s.measured++
	switch {
	case good && load > s.lo:
		s.lo = load
	case !good && (s.hi == 0 || load < s.hi):
		s.hi = load
	}
}

// SweepOptions configure a sweep of one shape.
type SweepOptions struct {
	// Mode is schema.SweepConcurrency or schema.SweepRate.
	Mode     string
	Search   *Search
	Timeline Timeline
	Slice    time.Duration
	SLOs     slo.Set
	// Attainment is the share of a point's requests that must meet every
	// per-request SLO for the point to be good.
	Attainment float64
	// OnPoint is called after each point, with the result so far, every
	// point's records and the metrics scraped so far.
	OnPoint func(res *schema.SweepResult, records []schema.Record, samples []schema.MetricsSample)
}

// Sweep measures the loads Search picks, one steady-state point each, and
// returns the sweep's result, every point's records and their totals. A point whose client
// lagged its sends past SaturationLag ends the search (higher loads would
// measure the client); so does ctx's end.
func Sweep(ctx context.Context, o *Options, plan Plan, so SweepOptions) SweepRun {
	res := schema.SweepResult{
		Name: plan.Spec.Name, InputLen: plan.Spec.In, OutputLen: plan.Spec.Out, Mode: so.Mode,
		Search: "auto", SLOs: so.SLOs.Strings(), Attainment: so.Attainment,
		WarmupSec: so.Timeline.Warmup.Seconds(), DurationSec: so.Timeline.Duration.Seconds(),
		DrainSec: so.Timeline.Drain.Seconds(), SliceSec: so.Slice.Seconds(),
	}
	if so.Search.List != nil {
		res.Search = "list"
	}
	w := slo.Window{Warmup: res.WarmupSec, Duration: res.DurationSec, Slice: res.SliceSec}
	spec := schema.PhaseResult{Phase: plan.Spec.Name, InputLen: plan.Spec.In, OutputLen: plan.Spec.Out}
	var all []schema.Record
	var samples []schema.MetricsSample
	var totals Totals
	for n := 1; ; n++ {
		if ctx.Err() != nil {
			// Cancelled between points: none begins to measure nothing.
			so.Search.Stopped(schema.StopInterrupted)
		}
		v, ok := so.Search.Next()
		if !ok {
			break
		}
		load := Load{Concurrency: int(v)}
		if so.Mode == schema.SweepRate {
			load = Load{Rate: v}
		}
		run := RunPoint(ctx, o, plan, n, load, so.Timeline)
		status := schema.StatusComplete
		if run.Interrupted {
			status = schema.StatusInterrupted
		}
		p := slo.Point(n, v, spec, run.Records, w, so.SLOs, so.Attainment, status)
		if so.Mode == schema.SweepRate {
			p.RequestRate = v
		} else {
			p.Concurrency = int(v)
		}
		if plan.Work != nil {
			p.Workload = plan.Work.Phase.Kind
		} else if plan.Cal.PromptTokens >= 0 {
			p.CalibratedInputLen = ptr(plan.Cal.PromptTokens)
		}
		p.Server = serverside.Stats(run.Samples)
		res.Points = append(res.Points, p)
		all = append(all, run.Records...)
		samples = append(samples, run.Samples...)
		totals.Add(&PhaseRun{Result: p.PhaseResult, CPUSeconds: run.CPUSeconds})
		switch {
		case run.Interrupted:
			so.Search.Stopped(schema.StopInterrupted)
		case p.Saturated:
			so.Search.Stopped(schema.StopSaturated)
		default:
			so.Search.Record(v, p.Good)
		}
		res.Capacity = slo.Capacity(res.Points)
		if so.OnPoint != nil {
			so.OnPoint(&res, all, samples)
		}
	}
	res.Stop = so.Search.Stop()
	res.Note = stopNote(&res)
	return SweepRun{Result: res, Records: all, Samples: samples, Totals: totals}
}

// SweepRun is what a sweep produced: its result, every point's records, and
// the points added up as a run's phases are (the report's client section:
// CPU seconds summed, the largest send lag; how the requests ended).
type SweepRun struct {
	Result  schema.SweepResult
	Records []schema.Record
	// Samples are every point's scrapes of the endpoint's metrics.
	Samples []schema.MetricsSample
	Totals  Totals
}

// stopNote says in words why the search ended and what the capacity means.
func stopNote(r *schema.SweepResult) string {
	unit := "concurrency"
	if r.Mode == schema.SweepRate {
		unit = "request rate"
	}
	switch r.Stop {
	case schema.StopSaturated:
		return "stopped early: the p99 of the client's send lags passed " + SaturationLag.String() + ", so a higher load would measure glmbench, not the endpoint"
	case schema.StopNoneGood:
		return "no load met the SLOs, not even the lowest"
	case schema.StopInterrupted:
		return "interrupted: the points measured before Ctrl-C are kept"
	case schema.StopMaxPoints:
		if r.Capacity != nil && r.Capacity.Above == nil {
			return fmt.Sprintf("every load up to %s %g met the SLOs; the capacity is at least that (raise --max-points to search further)", unit, r.Capacity.Load)
		}
		return "stopped at --max-points before the bracket was narrow"
	}
	if r.Capacity == nil && slices.ContainsFunc(r.Points, func(p schema.SweepPoint) bool { return !p.Good }) {
		return "no measured load met the SLOs"
	}
	return ""
}
