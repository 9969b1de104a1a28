package sched

import (
	"math"
	"strings"
	"testing"
)

// The truth: schedule_conservativeness scales the KV reserved for running
// requests, so only a positive finite number means anything. NaN passed a
// "<= 0" test (every comparison with NaN is false) and served; it is now
// refused, as are +Inf, 0 and negatives, while 0.3 and 1 are taken.
func TestScheduleConservativenessMustBeAPositiveNumber(t *testing.T) {
	for _, v := range []float64{math.NaN(), math.Inf(1), -1, 0} {
		c := Config{MaxTotalTokens: 1024, ScheduleConservativeness: v}
		c.Defaults()
		c.ScheduleConservativeness = v // Defaults fills 0 with 1.0
		if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "schedule_conservativeness") {
			t.Errorf("%v: err %v; want schedule_conservativeness refused", v, err)
		}
	}
	for _, v := range []float64{0.3, 1} {
		c := Config{MaxTotalTokens: 1024, ScheduleConservativeness: v}
		c.Defaults()
		if err := c.Validate(); err != nil {
			t.Errorf("%v: %v; want it taken", v, err)
		}
	}
}
