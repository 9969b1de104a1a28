package slo

import (
	"testing"

	"github.com/glmbench/glmbench/reports/schema"
)

func fp(v float64) *float64 { return &v }

func TestParseReadsDurationsAndStatistics(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ in, canon string }{
		{"ttft < 2s", "ttft < 2s"},
		{"tpot<=50ms", "tpot <= 50ms"},
		{" lat < 1.5 ", "lat < 1.5s"},
		{"ttft_p99 < 2s", "ttft_p99 < 2s"},
		{"tpot_p50 < 40ms", "tpot_med < 40ms"},
		{"itl_p99 <= 0.02", "itl_p99 <= 20ms"},
	} {
		s, err := Parse(tc.in)
		if err != nil {
			t.Fatalf("%q: %v", tc.in, err)
		}
		if got := s.String(); got != tc.canon {
			t.Errorf("%q reads as %q, want %q", tc.in, got, tc.canon)
		}
		if back, err := Parse(s.String()); err != nil || back.String() != tc.canon {
			t.Errorf("%q: the canonical form does not parse back: %v", tc.in, err)
		}
	}
	for _, bad := range []string{"ttft", "ttft ~ 2s", "ttft < ", "ttft < -1s", "ttft < 1e400", "ttft < 0x10", "speed < 1s", "ttft_p42 < 1s", "itl < 1ms"} {
		if _, err := Parse(bad); err == nil {
			t.Errorf("%q parsed", bad)
		}
	}
}

// Met: completed and within every per-request bound; failures, cut-offs and
// unsent requests are misses; a request with one token has no TPOT and
// meets a TPOT bound (vLLM's convention); window statistics are not
// per-request.
func TestMetCountsOnlyCompletedRequestsWithinTheirBounds(t *testing.T) {
	t.Parallel()
	set, err := ParseAll([]string{"ttft < 1s", "tpot < 10ms", "lat_p99 < 1ms"})
	if err != nil {
		t.Fatal(err)
	}
	ok := schema.Record{TFirst: fp(0.5), TLast: fp(0.5 + 0.009*9), TEnd: fp(0.6), N: 10}
	slowTPOT := ok
	slowTPOT.TLast = fp(0.5 + 0.011*9)
	oneToken := schema.Record{TFirst: fp(0.5), TLast: fp(0.5), TEnd: fp(0.5), N: 1}
	for _, tc := range []struct {
		name string
		rec  schema.Record
		want bool
	}{
		{"within both", ok, true},
		{"tpot 11 ms", slowTPOT, false},
		{"ttft 1 s", schema.Record{TFirst: fp(1), TLast: fp(1), TEnd: fp(1), N: 1}, false},
		{"one token: no tpot", oneToken, true},
		{"a 429", schema.Record{Class: schema.RateLimited}, false},
		{"cut off at the drain", schema.Record{TFirst: fp(0.1), Cancelled: schema.CancelDrain}, false},
		{"not sent", schema.Record{NotSent: true}, false},
	} {
		if got := set.Met(&tc.rec); got != tc.want {
			t.Errorf("%s: met %v, want %v", tc.name, got, tc.want)
		}
	}
	r := schema.PhaseResult{LatP99: fp(0.002)}
	if held, failed := set.WindowHeld(&r); held || len(failed) != 1 || failed[0] != "lat_p99 < 1ms" {
		t.Errorf("window: held %v, failed %v", held, failed)
	}
	set.Apply(&r, []schema.Record{ok, slowTPOT, {Class: schema.QueueFull}, oneToken}, 2)
	if *r.SLOMet != 2 || *r.Goodput != 1 || *r.SLOAttainment != 0.5 {
		t.Errorf("met %d, goodput %g, attainment %g; want 2, 2/2 s = 1, 2/4", *r.SLOMet, *r.Goodput, *r.SLOAttainment)
	}
}
