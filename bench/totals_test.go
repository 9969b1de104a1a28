package bench

import (
	"testing"

	"github.com/glmbench/glmbench/reports/schema"
)

func TestTotalsNameWhatEndedEachRequest(t *testing.T) {
	t.Parallel()
	var o Totals
	o.Add(&PhaseRun{Result: schema.PhaseResult{BatchSize: 10, Errors: 3, Cancelled: 5, NotSent: 2}})
	if got := o.NoneCompleted(); got != "none of the 10 requests completed: 3 failed, 5 cancelled at the phase cap, 2 not sent before the cap (see the report)" {
		t.Fatalf("%q", got)
	}
	o = Totals{}
	o.Add(&PhaseRun{Result: schema.PhaseResult{BatchSize: 2, Errors: 2}})
	o.Add(&PhaseRun{Result: schema.PhaseResult{BatchSize: 3, Errors: 3}})
	if got := o.NoneCompleted(); got != "every request failed (see the failures in the report)" {
		t.Fatalf("%q", got)
	}
}

func TestTotalsSumCPUAndKeepTheLargestSendLag(t *testing.T) {
	t.Parallel()
	lag := SaturationLag.Seconds()
	var o Totals
	o.Add(&PhaseRun{CPUSeconds: 1.5, Result: schema.PhaseResult{BatchSize: 4, Completed: 4, MaxSendLag: lag / 2}})
	if o.Client.Saturated {
		t.Fatalf("saturated at half the lag: %+v", o.Client)
	}
	// Exactly the threshold is not past it.
	o.Add(&PhaseRun{CPUSeconds: 0.25, Result: schema.PhaseResult{BatchSize: 2, Completed: 1, Errors: 1, MaxSendLag: lag}})
	if o.Client.Saturated {
		t.Fatalf("saturated at the lag itself: %+v", o.Client)
	}
	o.Add(&PhaseRun{CPUSeconds: 0.25, Result: schema.PhaseResult{BatchSize: 1, Completed: 1, MaxSendLag: 2 * lag}})
	// A later phase with less lag leaves the largest, and the verdict, as they were.
	o.Add(&PhaseRun{CPUSeconds: 1, Result: schema.PhaseResult{BatchSize: 1, Completed: 1}})
	want := schema.Client{CPUSeconds: 3, MaxSendLag: 2 * lag, Saturated: true}
	if o.Client != want {
		t.Fatalf("client %+v, want %+v", o.Client, want)
	}
	if o.Batch != 8 || o.Completed != 7 || o.Errors != 1 {
		t.Fatalf("totals %+v", o)
	}
}
