package slo

import (
	"testing"

	"github.com/glmbench/glmbench/reports/schema"
)

// A request is measured by the window the sweep put it in when it started
// (Record.Window); its t0, the first header write, comes a little later
// (after a dial, on a loaded machine after milliseconds). One tagged
// measured whose t0 falls just past the window's end, or one untagged that
// falls just inside it, must count as the tag says in the slices too, so
// that the slices' started add up to the point's.
func TestSlicesCountTheRequestsThePointMeasures(t *testing.T) {
	t.Parallel()
	w := Window{Warmup: 1, Duration: 2, Slice: 1}
	done := func(window string, sendOffset float64) schema.Record {
		return schema.Record{Phase: "s", Window: window, SendOffset: sendOffset,
			TFirst: fp(0.1), TLast: fp(0.2), TEnd: fp(0.2), Events: []float64{0.1, 0.2}, N: 2}
	}
	records := []schema.Record{
		done(schema.WindowWarmup, 1.0001), // tagged warm-up, t0 just past it
		done(schema.WindowMeasured, 1.5),
		done(schema.WindowMeasured, 2.5),
		done(schema.WindowMeasured, 3.0002), // tagged measured, t0 just past the end
		done(schema.WindowCooldown, 3.1),
	}
	p := Point(1, 4, schema.PhaseResult{Phase: "s"}, records, w, nil, 0.99, schema.StatusComplete)
	sum := 0
	for _, s := range p.Slices {
		sum += s.Started
	}
	if p.Started != 3 || sum != p.Started {
		t.Fatalf("point started %d, slices started %d (%+v): want 3 in both", p.Started, sum, p.Slices)
	}
	if last := p.Slices[len(p.Slices)-1]; last.Started != 2 {
		t.Errorf("last slice started %d, want 2 (the request whose t0 fell just past the window is its)", last.Started)
	}
}

// The capacity and its bracket come from the points whose verdict the
// search took: an interrupted point (its requests cut off by Ctrl-C are
// misses) or one whose client saturated is not the bad load that bounds
// the bracket, nor a good load the capacity can be.
func TestCapacityCountsOnlyJudgedPoints(t *testing.T) {
	t.Parallel()
	pt := func(n int, load float64, good bool, status string, saturated bool) schema.SweepPoint {
		p := schema.SweepPoint{Point: n, Load: load, Good: good, Saturated: saturated}
		p.Status = status
		return p
	}
	ok, cut := schema.StatusComplete, schema.StatusInterrupted
	for _, tc := range []struct {
		name   string
		points []schema.SweepPoint
		load   float64
		above  float64 // 0: none
	}{
		{"a bracket of two judged points", []schema.SweepPoint{pt(1, 8, true, ok, false), pt(2, 16, false, ok, false)}, 8, 16},
		{"an interrupted bad point bounds nothing", []schema.SweepPoint{pt(1, 8, true, ok, false), pt(2, 16, false, cut, false)}, 8, 0},
		{"a saturated bad point bounds nothing", []schema.SweepPoint{pt(1, 8, true, ok, false), pt(2, 16, false, ok, true), pt(3, 32, false, ok, false)}, 8, 32},
		{"a saturated good point is no capacity", []schema.SweepPoint{pt(1, 8, true, ok, false), pt(2, 16, true, ok, true)}, 8, 0},
	} {
		c := Capacity(tc.points)
		switch {
		case c == nil:
			t.Errorf("%s: no capacity, want %g", tc.name, tc.load)
		case c.Load != tc.load || (tc.above == 0) != (c.Above == nil) || c.Above != nil && *c.Above != tc.above:
			t.Errorf("%s: capacity %g above %v, want %g above %g", tc.name, c.Load, c.Above, tc.load, tc.above)
		}
	}
}
