package gate

import (
	"strings"
	"testing"

	"github.com/glmbench/glmbench/internal/badinput"
	"github.com/glmbench/glmbench/reports/schema"
	"github.com/glmbench/glmbench/reports/threshold"
)

// sweepReport is a report of one sweep whose points at loads 16, 32 and 64
// have those goodputs, and whose capacity is 32 (nil capacity when none).
func sweepReport(label string, goodput [3]float64, capacity *float64, slos ...string) *schema.Report {
	s := schema.SweepResult{Name: "sweep", InputLen: 256, OutputLen: 128, Mode: schema.SweepConcurrency, SLOs: slos, Attainment: 0.99}
	for i, load := range []float64{16, 32, 64} {
		g := goodput[i]
		p := schema.SweepPoint{Point: i + 1, Load: load, Started: 100}
		p.Goodput, p.OutTput = &g, g*128
		s.Points = append(s.Points, p)
	}
	if capacity != nil {
		s.Capacity = &schema.SweepCapacity{Load: *capacity, OutTput: 1000, Goodput: goodput[1]}
	}
	return &schema.Report{Label: label, Sweeps: []schema.SweepResult{s}}
}

func TestTheGateBoundsASweepsCapacityAndItsPoints(t *testing.T) {
	t.Parallel()
	base := sweepReport("main", [3]float64{10, 20, 15}, f(32), "tpot < 50ms")
	cur := sweepReport("pr", [3]float64{10, 18, 15}, f(32), "tpot < 50ms")
	ths, err := threshold.ParseAll([]string{
		"sweep.capacity > -5%",      // 32 vs 32: 0%
		"sweep.goodput@32 > -5%",    // 18 vs 20: −10%
		"*.capacity_goodput > -15%", // 18 vs 20: −10%
		"sweep.started@64 >= 100",   // absolute, a point field
		"sweep.goodput@128 > 0",     // no point at 128: a failed line
	})
	if err != nil {
		t.Fatal(err)
	}
	res, err := Evaluate([]*schema.Report{base}, []*schema.Report{cur}, ths, Options{})
	if err != nil {
		t.Fatal(err)
	}
	want := []struct {
		expr    string
		passed  bool
		change  float64
		missing string
	}{
		{"sweep.capacity > -5%", true, 0, ""},
		{"sweep.goodput@32 > -5%", false, -10, ""},
		{"sweep.capacity_goodput > -15%", true, -10, ""},
		{"sweep.started@64 >= 100", true, 0, ""},
		{"sweep.goodput@128 > 0", false, 0, "current"},
	}
	if len(res.Lines) != len(want) {
		t.Fatalf("%d lines: %+v", len(res.Lines), res.Lines)
	}
	for i, w := range want {
		l := res.Lines[i]
		if l.Expr != w.expr || l.Passed != w.passed || l.Missing != w.missing || (l.Change != nil) && *l.Change != w.change {
			t.Errorf("line %d: %s passed %v change %v missing %q; want %+v", i, l.Expr, l.Passed, l.Change, l.Missing, w)
		}
	}

	// A current sweep that found no capacity (no load met its SLOs) fails
	// a bound on it.
	none := sweepReport("pr", [3]float64{0, 0, 0}, nil, "tpot < 50ms")
	res, err = Evaluate([]*schema.Report{base}, []*schema.Report{none}, ths[:1], Options{})
	if err != nil || res.Passed() || res.Lines[0].Missing != "current" {
		t.Fatalf("no capacity: %+v, %v", res, err)
	}
}

// Two sweeps held to different SLOs measure different things: comparing
// them is bad input, as a phase of another shape is.
func TestTheGateRefusesSweepsOfDifferentSLOs(t *testing.T) {
	t.Parallel()
	base := sweepReport("main", [3]float64{10, 20, 15}, f(32), "tpot < 50ms")
	cur := sweepReport("pr", [3]float64{10, 20, 15}, f(32), "tpot < 20ms")
	ths, _ := threshold.ParseAll([]string{"sweep.capacity > -5%"})
	_, err := Evaluate([]*schema.Report{base}, []*schema.Report{cur}, ths, Options{})
	if !badinput.Is(err) || !strings.Contains(err.Error(), "sweep sweep is 256/128 by concurrency, SLOs [tpot < 50ms]") || !strings.Contains(err.Error(), "SLOs [tpot < 20ms]") {
		t.Fatalf("err %v", err)
	}
}
