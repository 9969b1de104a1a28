package bench

import (
	"context"
	"math"
	"testing"

	"github.com/glmbench/glmbench/endpoints/endpointstest"
	"github.com/glmbench/glmbench/reports/schema"
)

// The truth: the schedule is partitioned, not re-drawn. Two shards of 2
// each send the requests i with i mod 2 equal to their index, so together
// they record every index of the phase once; and each send is planned at
// the unsharded schedule's offset arrivalOffsets(n, rate, seed)[i], which a
// record gives as send_offset − send_lag.
func TestTwoShardsCoverEveryIndexOnceOnTheWholeSchedule(t *testing.T) {
	t.Parallel()
	srv := endpointstest.New(nil)
	defer srv.Close()
	const n, rate, seed = 24, 100.0, 7
	want := arrivalOffsets(n, rate, seed)
	for _, tc := range []struct {
		name string
		rate float64
	}{{"poisson arrivals", rate}, {"a burst", 0}} {
		seen := map[int]int{}
		for k := range 2 {
			o := testOptions(t, srv, "cafe0a0"+string(rune('0'+k)))
			o.RequestRate, o.Seed = tc.rate, seed
			o.Shard = &Shard{Index: k, Count: 2}
			run := RunPhase(context.Background(), o, plan(n, 16, 2))
			if len(run.Records) != n/2 || run.Result.BatchSize != n/2 || run.Result.Completed != n/2 {
				t.Fatalf("%s: shard %d: %d records, batch %d, completed %d; want %d each", tc.name, k, len(run.Records), run.Result.BatchSize, run.Result.Completed, n/2)
			}
			for _, rec := range run.Records {
				if rec.I%2 != k {
					t.Errorf("%s: shard %d recorded request %d, not its own", tc.name, k, rec.I)
				}
				seen[rec.I]++
				planned := rec.SendOffset - rec.SendLag
				wantAt := 0.0
				if tc.rate > 0 {
					wantAt = want[rec.I].Seconds()
				}
				if math.Abs(planned-wantAt) > 1e-6 {
					t.Errorf("%s: request %d planned at %.6fs, the schedule says %.6fs", tc.name, rec.I, planned, wantAt)
				}
			}
		}
		for i := range n {
			if seen[i] != 1 {
				t.Errorf("%s: request %d recorded %d times, want once", tc.name, i, seen[i])
			}
		}
	}
}

// The truth: under a shard's share c of --max-concurrency, no more than c
// of its requests are ever in flight, and all its n/2 still complete.
func TestAShardKeepsToItsShareOfMaxConcurrency(t *testing.T) {
	t.Parallel()
	o := fakeOptions(t, "cafe0a10")
	o.Shard = &Shard{Index: 1, Count: 2}
	o.MaxConcurrency = 3
	run := RunPhase(context.Background(), o, plan(20, 16, 4))
	if run.Result.Completed != 10 {
		t.Fatalf("completed %d, want the shard's 10", run.Result.Completed)
	}
	for _, rec := range run.Records {
		if rec.TEnd == nil || rec.Cancelled != "" || rec.NotSent || rec.Class != schema.Class("") {
			t.Fatalf("request %d did not complete: %+v", rec.I, rec)
		}
	}
	// Counted a hair after each send: an end and a start at one instant
	// are a slot handed on.
	if n, at := peakInFlight(run.Records, 1e-4); n > 3 {
		t.Fatalf("%d requests in flight at %.4fs, the share is 3", n, at)
	}
}
