package bench

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/glmbench/glmbench/endpoints"
	"github.com/glmbench/glmbench/endpoints/endpointstest"
	"github.com/glmbench/glmbench/reports/schema"
)

// The truth: one closed-loop user facing a server that refuses every
// request at once sends at t = 0, then after pauses of 100, 200, 400, 800
// ms (no Retry-After) or of 1 s each (Retry-After: 1), so a 1.2 s window
// holds at most 5 or 2 starts. Without the pause it held about 4,000 (the
// fake answers a 429 in well under a millisecond).
func TestAClosedLoopUserBacksOffAfterRefusals(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		retryAfter string
		most       int
	}{{"", 5}, {"1", 2}} {
		t.Run("Retry-After="+tc.retryAfter, func(t *testing.T) {
			t.Parallel()
			srv := endpointstest.New(func(endpointstest.Request) endpointstest.Behavior {
				return endpointstest.Behavior{Fail: endpointstest.Status, Status: 429, RetryAfter: tc.retryAfter,
					Body: `{"error":{"message":"Rate limit reached","type":"requests"}}`}
			})
			run := Sweep(context.Background(), testOptions(t, srv, "cafe5f00"), plan(1, 16, 8), SweepOptions{
				Mode: schema.SweepConcurrency, Search: &Search{List: []float64{1}}, Attainment: 0.99,
				Timeline: Timeline{Duration: 1200 * time.Millisecond, Drain: time.Second}, Slice: time.Second,
			})
			n := 0
			for _, r := range run.Records {
				if r.Cancelled != "" {
					continue // in flight when the point ended
				}
				if r.Class != schema.RateLimited {
					t.Fatalf("record class %q, want %s: the fake refuses every request", r.Class, schema.RateLimited)
				}
				n++
			}
			if n < 2 || n > tc.most {
				t.Errorf("%d requests in 1.2 s from one refused user, want 2 to %d", n, tc.most)
			}
		})
	}
}

// The truth: Retry-After is seconds (RFC 9110 §10.2.3; a fraction is read
// too) or an HTTP date; the doubling starts at 100 ms, stops at 2 s, and a
// request that streamed content resets it.
func TestRefusalBackoff(t *testing.T) {
	now := time.Date(2026, 12, 2, 15, 0, 0, 0, time.UTC)
	for v, want := range map[string]time.Duration{
		"2": 2 * time.Second, " 0.5 ": 500 * time.Millisecond, "0": 0,
		now.Add(3 * time.Second).Format(http.TimeFormat): 3 * time.Second,
		now.Add(-time.Minute).Format(http.TimeFormat):    0,
	} {
		if got, ok := endpoints.RetryAfter(v, now); !ok || got != want {
			t.Errorf("RetryAfter(%q) = %v, %v; want %v", v, got, ok, want)
		}
	}
	for _, v := range []string{"", "soon", "-1", "NaN"} {
		if got, ok := endpoints.RetryAfter(v, now); ok {
			t.Errorf("RetryAfter(%q) = %v, ok; want not ok", v, got)
		}
	}

	refused := &endpoints.StreamResult{Class: schema.RateLimited, Status: 429}
	var b refusalBackoff
	var got []time.Duration
	for range 7 {
		got = append(got, b.after(refused, now))
	}
	want := []time.Duration{100, 200, 400, 800, 1600, 2000, 2000}
	for i := range want {
		if got[i] != want[i]*time.Millisecond {
			t.Fatalf("pauses %v, want %v ms", got, want)
		}
	}
	if d := b.after(&endpoints.StreamResult{Class: schema.RateLimited, RetryAfter: "60"}, now); d != maxRefusalPause {
		t.Errorf("Retry-After: 60 gives a %v pause, want the cap %v", d, maxRefusalPause)
	}
	streamed := &endpoints.StreamResult{Class: schema.TotalTimeout, Events: []time.Duration{time.Millisecond}}
	if d := b.after(streamed, now); d != 0 {
		t.Errorf("a request that streamed then failed gives a %v pause, want none", d)
	}
	if d := b.after(refused, now); d != firstRefusalPause {
		t.Errorf("after content the next refusal pauses %v, want %v", d, firstRefusalPause)
	}
	if d := b.after(&endpoints.StreamResult{}, now); d != 0 {
		t.Errorf("a success gives a %v pause", d)
	}
}
