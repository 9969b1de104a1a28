package bench

import (
	"context"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/glmbench/glmbench/endpoints"
	"github.com/glmbench/glmbench/endpoints/endpointstest"
	"github.com/glmbench/glmbench/engine/enginetest"
	"github.com/glmbench/glmbench/engine/sched"
	"github.com/glmbench/glmbench/engine/sim"
	"github.com/glmbench/glmbench/reports/schema"
	"github.com/glmbench/glmbench/reports/slo"
)

// simOptions starts a simulated engine of that cost and calibrates a
// 32/32 shape on it. Mixed chunks put a new request's prefill in the
// running requests' decode batch, so with prefill_token and kv_read 0 every
// step of c sequences costs s + c·d, exactly.
func simOptions(t *testing.T, cost sim.CostModel) (*Options, Plan) {
	t.Helper()
	e := enginetest.Start(t, enginetest.Sim(cost), enginetest.Sched(func(c *sched.Config) { c.EnableMixedChunk = true }))
	ep := resolve(t, e.BaseURL(), e.ModelName())
	o := &Options{
		Endpoint: ep, Shape: Shape{Model: ep.Model, IgnoreEOS: true},
		Limits:         endpoints.StreamLimits{TTFT: 30 * time.Second, Stall: 30 * time.Second},
		ConnectTimeout: 2 * time.Second,
	}
	plans, _, err := Prepare(context.Background(), o, []Spec{{Name: "sweep", N: 1, In: 32, Out: 32}})
	if err != nil {
		t.Fatal(err)
	}
	return o, plans[0]
}

// sweepOn runs a sweep with short points: a 0.8 s warm-up (longer than a
// request, so the closed-loop users, started spread over it, are out of
// step by the window), a 1.5 s window.
func sweepOn(t *testing.T, o *Options, plan Plan, mode string, s *Search, slos ...string) schema.SweepResult {
	t.Helper()
	set, err := slo.ParseAll(slos)
	if err != nil {
		t.Fatal(err)
	}
	res := Sweep(context.Background(), o, plan, SweepOptions{
		Mode: mode, Search: s, SLOs: set, Attainment: 0.99, Slice: 500 * time.Millisecond,
		Timeline: Timeline{Warmup: 800 * time.Millisecond, Duration: 1500 * time.Millisecond, Drain: 3 * time.Second},
	}).Result
	for _, p := range res.Points {
		t.Logf("%s %g: started %d, completed %d, tpot med %s, good %v", mode, p.Load, p.Started, p.Completed, fmtMS(p.TPOTMed), p.Good)
	}
	return res
}

func fmtMS(v *float64) string {
	if v == nil {
		return "—"
	}
	return time.Duration(*v * float64(time.Second)).Round(10 * time.Microsecond).String()
}

// The truth: with step overhead s and cost d per decoding sequence (and no
// other cost), a step of c sequences takes s + c·d, so a request's TPOT at
// concurrency c is s + c·d and a TPOT objective T is met up to
// c* = (T − s)/d. The sweep's capacity must be within 10% of c* for each
// cost model.
func TestSweepFindsTheCapacityTheCostModelGives(t *testing.T) {
	t.Parallel()
	skipTimingUnderRace(t)
	for _, tc := range []struct {
		name  string
		cost  sim.CostModel
		tpot  time.Duration
		start float64
	}{
		{"s=2ms d=250us T=11ms", sim.CostModel{StepOverhead: 2 * time.Millisecond, DecodeSeq: 250 * time.Microsecond}, 11 * time.Millisecond, 1},
		{"s=4ms d=400us T=12ms", sim.CostModel{StepOverhead: 4 * time.Millisecond, DecodeSeq: 400 * time.Microsecond}, 12 * time.Millisecond, 4},
		{"s=3ms d=150us T=13ms", sim.CostModel{StepOverhead: 3 * time.Millisecond, DecodeSeq: 150 * time.Microsecond}, 13 * time.Millisecond, 8},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			o, plan := simOptions(t, tc.cost)
			res := sweepOn(t, o, plan, schema.SweepConcurrency,
				&Search{Integer: true, Start: tc.start, Resolution: 0.05, MaxPoints: 12}, "tpot < "+tc.tpot.String())
			want := float64(tc.tpot-tc.cost.StepOverhead) / float64(tc.cost.DecodeSeq)
			if res.Stop == schema.StopSaturated {
				// The sweep itself says its last point is no measurement: the
				// host was too busy for the client to keep its users' pace.
				t.Skipf("the sweep stopped because the client saturated: the host is too loaded for this check")
			}
			for _, p := range res.Points {
				// The check's truth holds only while the simulated engine keeps
				// its cost model's time: a point up to c*'s neighbourhood
				// whose median TPOT is over s + c·d by more than 10% (a host
				// so loaded that the engine's steps overrun) measures the
				// host, not the cost model. Points far past c* fail the
				// objective whatever the host does.
				model := (tc.cost.StepOverhead + time.Duration(p.Load)*tc.cost.DecodeSeq).Seconds()
				if p.Load <= 1.2*want && p.TPOTMed != nil && *p.TPOTMed > 1.10*model {
					t.Skipf("at concurrency %g the median TPOT was %s, over the cost model's %s by more than 10%%: the host is too loaded for this check", p.Load, fmtMS(p.TPOTMed), fmtMS(&model))
				}
				// Below 0.9·c* the cost model puts every request's TPOT a
				// tenth or more under T: a point there that missed the
				// objective had requests whose steps overran the model (the
				// tail of a loaded host), whatever its median says.
				if p.Load <= 0.9*want && !p.Good {
					t.Skipf("at concurrency %g, below 0.9·c* = %.1f, the point missed the objective (median TPOT %s, the cost model's %s): the host is too loaded for this check", p.Load, 0.9*want, fmtMS(p.TPOTMed), fmtMS(&model))
				}
			}
			if res.Capacity == nil {
				t.Fatalf("no capacity (stop %s); want about %.1f", res.Stop, want)
			}
			if got := res.Capacity.Load; math.Abs(got-want) > 0.10*want {
				t.Errorf("capacity %g, want c* = (T − s)/d = %.1f within 10%%", got, want)
			}
			if res.Stop != schema.StopBracketed || res.Capacity.Above == nil || *res.Capacity.Above > res.Capacity.Load*1.05+1 {
				t.Errorf("stop %s, bracket [%g, %v): want a bracket within the resolution", res.Stop, res.Capacity.Load, res.Capacity.Above)
			}
		})
	}
}

// Little's law: a load of λ requests/s that each take W seconds keeps λ·W
// in flight. A rate sweep and a closed-loop sweep held to the same median
// TPOT (a window objective, so the two differ only in how load arrives)
// must find the same capacity: the closed loop's requests per second at
// its capacity, within 15%.
func TestARateSweepAgreesWithTheClosedLoopByLittlesLaw(t *testing.T) {
	t.Parallel()
	skipTimingUnderRace(t)
	// Slow steps keep the rates low, so that the client (in this process,
	// beside the engine) never lags its Poisson sends on a busy machine.
	cost := sim.CostModel{StepOverhead: 4 * time.Millisecond, DecodeSeq: 500 * time.Microsecond}
	o, plan := simOptions(t, cost)
	closed := sweepOn(t, o, plan, schema.SweepConcurrency, &Search{Integer: true, Start: 16, Resolution: 0.05, MaxPoints: 12}, "tpot_med < 22ms")
	if closed.Capacity == nil {
		t.Fatalf("closed loop: no capacity (stop %s)", closed.Stop)
	}
	cp := closed.Points[closed.Capacity.Point-1]
	open := sweepOn(t, o, plan, schema.SweepRate, &Search{Start: 16, Resolution: 0.05, MaxPoints: 12}, "tpot_med < 22ms")
	if open.Capacity == nil {
		t.Fatalf("rate: no capacity (stop %s)", open.Stop)
	}
	if open.Stop == schema.StopSaturated {
		// The sweep itself says its last points are no measurement: the
		// host was too busy for the client to send its arrivals on time.
		t.Skipf("the rate sweep stopped at %.1f req/s because the client saturated: the host is too loaded for this check", open.Capacity.Load)
	}
	want := cp.RequestsPerSec
	if got := open.Capacity.Load; math.Abs(got-want) > 0.15*want {
		t.Errorf("rate capacity %.1f req/s (stop %s); the closed loop carried %.1f req/s at its capacity %g: want within 15%%", got, open.Stop, want, closed.Capacity.Load)
	}
}

// A rate so small that its Poisson gaps pass time.Duration's range (1e-300
// per second) sends one request at the window's start and no other: the
// gap converted as it was wrapped negative, every later arrival planned in
// the past, and the point flooded the endpoint (47,681 requests in a 2 s
// window on the built-in engine). The truth: the requests the fake got.
func TestATinyRateSendsNoFlood(t *testing.T) {
	t.Parallel()
	srv := endpointstest.New(nil)
	defer srv.Close()
	o := testOptions(t, srv, "cafe5e1d")
	run := Sweep(context.Background(), o, plan(1, 16, 8), SweepOptions{
		Mode: schema.SweepRate, Search: &Search{List: []float64{1e-300}}, Attainment: 0.99,
		SLOs:     mustSLOs(t, "lat < 10s"),
		Timeline: Timeline{Warmup: 100 * time.Millisecond, Duration: 500 * time.Millisecond, Drain: time.Second}, Slice: 500 * time.Millisecond,
	})
	if n := len(run.Records); n > 1 {
		t.Fatalf("the point sent %d requests at 1e-300 per second, want at most the one at its start", n)
	}
}

// Goodput counts failures as misses: a server that answers every fourth
// request (by its prompt index) with 429 meets no SLO with those, so the
// point's attainment is its completed share, about 3/4, and its goodput is
// the completed requests per second of window, whatever the SLOs allow.
func TestGoodputCountsARateLimitedShareAsMisses(t *testing.T) {
	t.Parallel()
	srv := endpointstest.New(func(r endpointstest.Request) endpointstest.Behavior {
		if r.I%4 == 3 {
			return endpointstest.Behavior{Fail: endpointstest.Status, Status: 429, Body: `{"error":{"message":"Rate limit reached","type":"requests"}}`, RetryAfter: "1"}
		}
		return endpointstest.Behavior{TTFT: 5 * time.Millisecond, Gap: 2 * time.Millisecond}
	})
	o := testOptions(t, srv, "cafe5eed")
	run := Sweep(context.Background(), o, plan(1, 16, 8), SweepOptions{
		Mode: schema.SweepConcurrency, Search: &Search{List: []float64{4}}, Attainment: 0.99,
		SLOs:     mustSLOs(t, "lat < 10s"),
		Timeline: Timeline{Warmup: 100 * time.Millisecond, Duration: time.Second, Drain: 2 * time.Second}, Slice: time.Second,
	})
	res, records := run.Result, run.Records
	p := res.Points[0]
	limited, completed, measured := 0, 0, 0
	for _, r := range records {
		if r.Window != schema.WindowMeasured {
			continue
		}
		measured++
		switch {
		case r.Class == schema.RateLimited:
			limited++
		case r.Completed():
			completed++
		}
	}
	if p.Started != measured || p.ByClass[schema.RateLimited] != limited || *p.SLOMet != completed || limited == 0 {
		t.Fatalf("point: started %d, 429s %d, met %d; records: measured %d, 429s %d, completed %d",
			p.Started, p.ByClass[schema.RateLimited], *p.SLOMet, measured, limited, completed)
	}
	if got, want := *p.Goodput, float64(completed)/1.0; got != want {
		t.Errorf("goodput %g, want completed / window = %g", got, want)
	}
	if got := *p.SLOAttainment; math.Abs(got-0.75) > 4.0/float64(measured) {
		t.Errorf("attainment %.3f, want about 3/4 (every fourth request is a 429)", got)
	}
	if p.Good || res.Capacity != nil {
		t.Errorf("a point with a quarter of its requests refused counts as good (attainment %.3f < 0.99)", *p.SLOAttainment)
	}
	// The totals add the point up as a run's phase: the client's own CPU
	// time (a second of requests costs some) and the requests' endings.
	if tot := run.Totals; tot.Client.CPUSeconds <= 0 || tot.Completed != p.Completed || tot.Errors != p.Errors {
		t.Errorf("totals %+v; want the client's CPU seconds and the point's %d completed, %d errors", tot, p.Completed, p.Errors)
	}
}

// A sweep whose context is cancelled before it begins measures no point.
func TestACancelledSweepBeginsNoPoint(t *testing.T) {
	t.Parallel()
	srv := endpointstest.New(func(r endpointstest.Request) endpointstest.Behavior { return endpointstest.Behavior{} })
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	run := Sweep(ctx, testOptions(t, srv, "cafe5ef1"), plan(1, 16, 8), SweepOptions{
		Mode: schema.SweepConcurrency, Search: &Search{List: []float64{1, 2}},
		Timeline: Timeline{Duration: time.Second, Drain: time.Second}, Slice: time.Second,
	})
	if len(run.Result.Points) != 0 || len(run.Records) != 0 || run.Result.Stop != schema.StopInterrupted {
		t.Fatalf("%d points, %d records, stop %q; want none, interrupted", len(run.Result.Points), len(run.Records), run.Result.Stop)
	}
}

// A measured request still running when the drain runs out is reported as
// unfinished, a miss, and its record is kept (cancelled: drain).
func TestRequestsRunningPastTheDrainAreUnfinishedMisses(t *testing.T) {
	t.Parallel()
	srv := endpointstest.New(func(r endpointstest.Request) endpointstest.Behavior {
		return endpointstest.Behavior{TTFT: 5 * time.Millisecond, Gap: 400 * time.Millisecond}
	})
	o := testOptions(t, srv, "cafe5eef")
	run := Sweep(context.Background(), o, plan(1, 16, 8), SweepOptions{
		Mode: schema.SweepConcurrency, Search: &Search{List: []float64{2}}, Attainment: 0.5,
		Timeline: Timeline{Warmup: 0, Duration: 500 * time.Millisecond, Drain: 300 * time.Millisecond}, Slice: time.Second,
	})
	res, records := run.Result, run.Records
	p := res.Points[0]
	drained := 0
	for _, r := range records {
		if r.Window == schema.WindowMeasured && r.Cancelled == schema.CancelDrain {
			drained++
		}
	}
	if p.Started != 2 || p.Unfinished != 2 || drained != 2 || *p.SLOAttainment != 0 || p.Good {
		t.Fatalf("started %d, unfinished %d, drained records %d, attainment %v, good %v: want the two requests of the window unfinished",
			p.Started, p.Unfinished, drained, *p.SLOAttainment, p.Good)
	}
}

// A point holds every run metric: its calibrated_input_len is the one the
// shape's calibration found, as a run's phase has it.
func TestASweepPointCarriesItsCalibration(t *testing.T) {
	t.Parallel()
	srv := endpointstest.New(func(r endpointstest.Request) endpointstest.Behavior {
		return endpointstest.Behavior{TTFT: 5 * time.Millisecond, Gap: 2 * time.Millisecond}
	})
	o := testOptions(t, srv, "cafe5ef0")
	pl := plan(1, 16, 8)
	pl.Cal.PromptTokens = 17
	res := Sweep(context.Background(), o, pl, SweepOptions{
		Mode: schema.SweepConcurrency, Search: &Search{List: []float64{1}}, Attainment: 0.5,
		Timeline: Timeline{Duration: 200 * time.Millisecond, Drain: time.Second}, Slice: time.Second,
	}).Result
	if got := res.Points[0].CalibratedInputLen; got == nil || *got != 17 {
		t.Fatalf("calibrated_input_len %v, want the calibration's 17", got)
	}
}

func skipTimingUnderRace(t *testing.T) {
	if raceOn {
		t.Skip("a capacity measured under the race detector measures the detector")
	}
}

func mustSLOs(t *testing.T, exprs ...string) slo.Set {
	t.Helper()
	set, err := slo.ParseAll(exprs)
	if err != nil {
		t.Fatal(err)
	}
	return set
}

// The search against an oracle whose answer is known: good up to 37.
func TestSearchBracketsAKnownCapacity(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		s      Search
		truth  float64
		stop   string
		lo, hi float64
	}{
		{"concurrency doubles then bisects to neighbours", Search{Integer: true, Start: 1, Resolution: 0.01, MaxPoints: 20}, 37, schema.StopBracketed, 37, 38},
		{"a rate stops within the resolution", Search{Start: 1, Resolution: 0.05, MaxPoints: 20}, 93.3, schema.StopBracketed, 0, 0},
		{"max points ends a search that never failed", Search{Integer: true, Start: 1, MaxPoints: 4, Resolution: 0.05}, 1e9, schema.StopMaxPoints, 8, 0},
		{"a bad first concurrency halves down to a good one", Search{Integer: true, Start: 64, Resolution: 0.05, MaxPoints: 20}, 5, schema.StopBracketed, 5, 6},
		{"concurrency 1 bad: none good", Search{Integer: true, Start: 4, Resolution: 0.05, MaxPoints: 20}, 0.5, schema.StopNoneGood, 0, 0},
		{"a list is measured as given", Search{Integer: true, List: []float64{1, 16, 4}}, 8, schema.StopList, 4, 16},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := tc.s
			var lo, hi float64
			loads := searchLoads(&s, func(v float64) bool { return v <= tc.truth })
			for _, v := range loads {
				good := v <= tc.truth
				if good && v > lo {
					lo = v
				}
				if !good && (hi == 0 || v < hi) {
					hi = v
				}
			}
			if s.Stop() != tc.stop {
				t.Fatalf("stop %s after %v, want %s", s.Stop(), loads, tc.stop)
			}
			if tc.lo != 0 && (lo != tc.lo || hi != tc.hi) {
				t.Fatalf("bracket [%g, %g) after %v, want [%g, %g)", lo, hi, loads, tc.lo, tc.hi)
			}
			if tc.lo == 0 && tc.stop == schema.StopBracketed && !(lo <= tc.truth && tc.truth < hi && hi-lo <= 0.05*lo) {
				t.Fatalf("bracket [%g, %g) after %v does not hold %g within 5%%", lo, hi, loads, tc.truth)
			}
		})
	}
}

// searchLoads runs s against an oracle that says which loads are good, and
// returns the loads s measured, in order.
func searchLoads(s *Search, good func(float64) bool) []float64 {
	var loads []float64
	for {
		v, ok := s.Next()
		if !ok {
			return loads
		}
		loads = append(loads, v)
		s.Record(v, good(v))
	}
}

// Every prompt of point n starts with the run's nonce and n: the report's
// nonce is in every request, and no two points share a prefix.
func TestEachPointsPromptsStartWithTheRunsNonceAndItsNumber(t *testing.T) {
	t.Parallel()
	srv := endpointstest.New(func(r endpointstest.Request) endpointstest.Behavior {
		return endpointstest.Behavior{Gap: time.Millisecond}
	})
	o := testOptions(t, srv, "cafe5ef2")
	Sweep(context.Background(), o, plan(1, 16, 4), SweepOptions{
		Mode: schema.SweepConcurrency, Search: &Search{List: []float64{1, 1}},
		Timeline: Timeline{Duration: 100 * time.Millisecond, Drain: time.Second}, Slice: time.Second,
	})
	if got := srv.Nonces(); !slices.Equal(got, []string{"cafe5ef2p1", "cafe5ef2p2"}) {
		t.Fatalf("nonces %v, want cafe5ef2p1 then cafe5ef2p2", got)
	}
}

// A rate search against a server that misses every SLO halves from --start
// down to the lowest rate whose window expects one request, measures that
// rate once, and ends with none_good: with a 10 s window the floor is
// 1/10 = 0.1 per second, so from 1 it measures 1, 0.5, 0.25, 0.125 and 0.1
// (0.0625 would expect 0.625 requests, a window measuring nothing). A
// halving that lands on the floor measures it once; a concurrency's floor
// stays 1.
func TestAnAllBadSearchEndsAtItsFloor(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		s     Search
		loads []float64
	}{
		{"a rate halves to 1/duration, then stops", Search{Start: 1, MinLoad: 1 / 10.0, Resolution: 0.05, MaxPoints: 12}, []float64{1, 0.5, 0.25, 0.125, 0.1}},
		{"a halving that lands on the floor measures it once", Search{Start: 0.4, MinLoad: 0.1, Resolution: 0.05, MaxPoints: 12}, []float64{0.4, 0.2, 0.1}},
		{"a start at the floor is the only point", Search{Start: 0.1, MinLoad: 0.1, Resolution: 0.05, MaxPoints: 12}, []float64{0.1}},
		{"a concurrency halves to 1 whatever MinLoad says", Search{Integer: true, Start: 12, MinLoad: 10, Resolution: 0.05, MaxPoints: 12}, []float64{12, 6, 3, 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := tc.s
			loads := searchLoads(&s, func(float64) bool { return false })
			if !slices.Equal(loads, tc.loads) || s.Stop() != schema.StopNoneGood {
				t.Fatalf("loads %v, stop %s; want %v, %s", loads, s.Stop(), tc.loads, schema.StopNoneGood)
			}
			floor := tc.s.MinLoad
			if tc.s.Integer {
				floor = 1
			}
			for _, v := range loads {
				if v < floor {
					t.Errorf("measured %g, below the floor %g", v, floor)
				}
			}
		})
	}
}
