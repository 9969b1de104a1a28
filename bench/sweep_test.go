package bench

import (
	"context"
	"testing"
	"time"

	"github.com/glmbench/glmbench/endpoints"
	"github.com/glmbench/glmbench/engine/enginetest"
	"github.com/glmbench/glmbench/engine/sim"
	"github.com/glmbench/glmbench/reports/schema"
	"github.com/glmbench/glmbench/reports/slo"
)

func simOptions(t *testing.T, cost sim.CostModel) (*Options, Plan) {
	t.Helper()
	e := enginetest.Start(t, enginetest.Sim(cost))
	ep, err := endpoints.Resolve(endpoints.Flags{Endpoint: e.BaseURL(), Model: e.ModelName()}, func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	o := &Options{
		Endpoint: ep, Shape: Shape{Model: ep.Model, IgnoreEOS: true},
		Limits:         endpoints.StreamLimits{TTFT: 30 * time.Second, Stall: 30 * time.Second},
		ConnectTimeout: 2 * time.Second,
	}
	plans, _, err := Prepare(context.Background(), o, []Spec{{Name: "sweep", N: 1, In: 32, Out: 128}})
	if err != nil {
		t.Fatal(err)
	}
	return o, plans[0]
}

func TestSweepFindsTheSimulatedEnginesCapacity(t *testing.T) {
	t.Parallel()
	cost := sim.CostModel{StepOverhead: 2 * time.Millisecond, DecodeSeq: 200 * time.Microsecond}
	o, plan := simOptions(t, cost)
	T := 10 * time.Millisecond
	set, err := slo.ParseAll([]string{"tpot < 10ms"})
	if err != nil {
		t.Fatal(err)
	}
	res, _ := Sweep(context.Background(), o, plan, SweepOptions{
		Mode:     schema.SweepConcurrency,
		Search:   &Search{Integer: true, Start: 1, Resolution: 0.05, MaxPoints: 12},
		Timeline: Timeline{Warmup: 500 * time.Millisecond, Duration: 2 * time.Second, Drain: 5 * time.Second},
		Slice:    time.Second, SLOs: set, Attainment: 0.99,
	})
	want := float64(T-cost.StepOverhead) / float64(cost.DecodeSeq)
	for _, p := range res.Points {
		t.Logf("c=%g started %d att %.3f tpot_med %.2fms p99 %.2fms good %v", p.Load, p.Started, *p.SLOAttainment, *p.TPOTMed*1e3, *p.TPOTP99*1e3, p.Good)
	}
	t.Logf("capacity %+v want %g stop %s", res.Capacity, want, res.Stop)
}
