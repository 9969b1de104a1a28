package endpoints

import (
	"sync/atomic"
	"testing"
	"time"
)

func TestEventTimesNeverFallBeforeT0(t *testing.T) {
	t.Parallel()
	t0 := time.Now()
	if got := eventTime(nil, t0); got.Before(t0) {
		t.Errorf("no stamps: %v before t0", t0.Sub(got))
	}
	var rx atomic.Int64
	rx.Store(t0.Add(-time.Hour).UnixNano()) // a wall-clock step: before t0
	if got := eventTime(&rx, t0); !got.Equal(t0) {
		t.Errorf("a stamp before t0 gives %v, want t0", got.Sub(t0))
	}
	time.Sleep(5 * time.Millisecond)
	rx.Store(time.Now().Add(-time.Millisecond).UnixNano()) // after t0, 1 ms ago
	if got := eventTime(&rx, t0); got.Before(t0) || time.Since(got) < time.Millisecond {
		t.Errorf("a stamp 1 ms ago gives %v after t0, %v ago", got.Sub(t0), time.Since(got))
	}
}
