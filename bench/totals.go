package bench

import (
	"fmt"
	"strings"

	"github.com/glmbench/glmbench/reports/schema"
)

// Totals adds up a run's phases: the client's account of its own load (the
// report's client section) and how the requests of all phases ended.
type Totals struct {
	// Client is the CPU seconds summed over the phases, the largest send
	// lag of any, and whether that lag exceeded SaturationLag.
	Client schema.Client
	// Requests by how they ended, over all phases (Batch: all of them).
	Batch, Completed, Errors, Cancelled, NotSent int
}

// Add counts one phase's run.
func (t *Totals) Add(run *PhaseRun) {
	t.Client.CPUSeconds += run.CPUSeconds
	t.Client.MaxSendLag = max(t.Client.MaxSendLag, run.Result.MaxSendLag)
	t.Client.Saturated = t.Client.MaxSendLag > SaturationLag.Seconds()
	r := &run.Result
	t.Batch += r.BatchSize
	t.Completed += r.Completed
	t.Errors += r.Errors
	t.Cancelled += r.Cancelled
	t.NotSent += r.NotSent
}

// NoneCompleted says why a run in which no request completed has no
// figures: every request failed, or the phase cap cut off what had not
// failed.
func (t *Totals) NoneCompleted() string {
	if t.Errors == t.Batch {
		return "every request failed (see the failures in the report)"
	}
	var parts []string
	if t.Errors > 0 {
		parts = append(parts, fmt.Sprintf("%d failed", t.Errors))
	}
	if t.Cancelled > 0 {
		parts = append(parts, fmt.Sprintf("%d cancelled at the phase cap", t.Cancelled))
	}
	if t.NotSent > 0 {
		parts = append(parts, fmt.Sprintf("%d not sent before the cap", t.NotSent))
	}
	return fmt.Sprintf("none of the %d requests completed: %s (see the report)", t.Batch, strings.Join(parts, ", "))
}
