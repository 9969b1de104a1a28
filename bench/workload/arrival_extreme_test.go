package workload

import (
	"math"
	"testing"
	"time"
)

// Every rate the workload's check takes (any finite number above 0) plans
// its sends in order from the phase's start: never a panic, never a time
// before the start (a send at once, flooding the endpoint), the times
// saturating at the longest duration where they pass it. The truths:
// gamma's rate·burstiness at 1e-300 and 1e-300, or at the least float64
// and 0.25, underflows to 0 (which gonum's Gamma refuses with a panic):
// at shape 0.25 every gap, some fraction of a second times 1/rate, is past
// the longest duration and saturates (at shape 1e-300 the draws are 0 in
// float64, the burst such a shape means, so only their order is checked);
// a ramp at 1e308 to
// 1e308 per second sends every request at 0 (its span 2n/(from+to)
// overflowed the sum and went NaN).
func TestArrivalsAtExtremeRatesStayInOrderFromTheStart(t *testing.T) {
	for _, tc := range []struct {
		a    Arrival
		last time.Duration // -1: not checked
	}{
		{Arrival{Kind: Gamma, Rate: 1e-300, Burstiness: 1e-300}, -1},
		{Arrival{Kind: Gamma, Rate: 1e-200, Burstiness: 1e-200}, -1},
		{Arrival{Kind: Gamma, Rate: 5e-324, Burstiness: 0.25}, math.MaxInt64},
		{Arrival{Kind: Ramp, From: 1e308, To: 1e308}, 0},
		{Arrival{Kind: Ramp, From: 1e308, To: math.MaxFloat64}, 0},
	} {
		var at []time.Duration
		func() {
			defer func() {
				if r := recover(); r != nil {
					t.Errorf("%s: panic %v", tc.a, r)
				}
			}()
			at = Arrivals(tc.a, 6, 1)
		}()
		if at == nil {
			continue
		}
		for i := 1; i < len(at); i++ {
			if at[i] < at[i-1] || at[i] < 0 {
				t.Errorf("%s: send %d at %v after %v", tc.a, i, at[i], at[i-1])
			}
		}
		if tc.last >= 0 && at[len(at)-1] != tc.last {
			t.Errorf("%s: last send at %v, want %v", tc.a, at[len(at)-1], tc.last)
		}
	}
}

// A NaN of seconds (no time at all) is never a time before the start:
// it saturates as the longest duration, a send that never comes, rather
// than converting to math.MinInt64, a send at once.
func TestSecondsOfNaNIsNotBeforeTheStart(t *testing.T) {
	if got := Seconds(math.NaN()); got != math.MaxInt64 {
		t.Errorf("Seconds(NaN) = %v, want %v", got, time.Duration(math.MaxInt64))
	}
}
