package run

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/glmbench/glmbench/bench"
	"github.com/glmbench/glmbench/cmd/cmdutil"
	"github.com/glmbench/glmbench/cmd/phasewarn"
	"github.com/glmbench/glmbench/reports/schema"
)

// startProgress shows the phase in flight on stderr, with the event rate
// since the last tick.
func startProgress(io *cmdutil.IOStreams, p *bench.Progress, every time.Duration) func() {
	var lastEv int64
	last := time.Now()
	return cmdutil.StartProgress(io, every, func(now time.Time, bar bool) string {
		ev := p.Events.Load()
		rate := float64(ev-lastEv) / now.Sub(last).Seconds()
		lastEv, last = ev, now
		return progressLine(p, rate, bar)
	})
}

func progressLine(p *bench.Progress, eventRate float64, bar bool) string {
	spec, start := p.Phase()
	done := p.Done.Load()
	var b strings.Builder
	fmt.Fprintf(&b, "%s ", spec.Name)
	if bar {
		b.WriteString(cmdutil.Bar(done, int64(spec.N)))
	}
	fmt.Fprintf(&b, "%d/%d done, %d in flight", done, spec.N, p.Sent.Load()-done)
	errs := p.Errors()
	if len(errs) > 0 {
		var parts []string
		for c, n := range errs {
			parts = append(parts, fmt.Sprintf("%s %d", c, n))
		}
		sort.Strings(parts)
		fmt.Fprintf(&b, ", errors: %s", strings.Join(parts, ", "))
	}
	fmt.Fprintf(&b, ", %.0f events/s, %s", eventRate, time.Since(start).Truncate(100*time.Millisecond))
	return b.String()
}

// phaseLine is the one line said when a phase ends.
func phaseLine(r *schema.PhaseResult) string {
	s := fmt.Sprintf("glmbench: %s %s: %d/%d completed in %.1fs, %.1f out tok/s", r.Phase, r.Status, r.Completed, r.BatchSize, r.WallSec, r.OutTput)
	if r.TTFTMed != nil {
		s += fmt.Sprintf(", TTFT med %.3fs", *r.TTFTMed)
	}
	if r.TPOTMed != nil {
		s += fmt.Sprintf(", TPOT med %.2fms", *r.TPOTMed*1e3)
	}
	if c := r.Cache; c != nil && r.Workload != "" {
		switch {
		case c.HitRate == nil:
			s += ", cache hits not reported"
		case c.ExpectedHitRate != nil:
			s += fmt.Sprintf(", cache hit rate %.1f%% (built for %.1f%%)", *c.HitRate*100, *c.ExpectedHitRate*100)
		default:
			s += fmt.Sprintf(", cache hit rate %.1f%%", *c.HitRate*100)
		}
	}
	if r.Errors > 0 {
		var parts []string
		for c, n := range r.ByClass {
			parts = append(parts, fmt.Sprintf("%s %d", c, n))
		}
		sort.Strings(parts)
		s += ", errors: " + strings.Join(parts, ", ")
	}
	if r.Short > 0 {
		s += fmt.Sprintf(", %d short of their max_tokens (short_output)", r.Short)
	}
	if r.Cancelled > 0 || r.NotSent > 0 {
		s += fmt.Sprintf(", cancelled %d, not sent %d", r.Cancelled, r.NotSent)
	}
	// What the endpoint sent that could not be used: a phase can be
	// complete and still say so.
	if r.MalformedEvents > 0 {
		s += fmt.Sprintf(", %d malformed data lines in %d requests", r.MalformedEvents, r.MalformedRequests)
	}
	if r.BadUsage > 0 {
		s += fmt.Sprintf(", usage unusable in %d (n counted from events)", r.BadUsage)
	}
	return s
}

// phaseWarnings are phasewarn.Lines for the phase r, as run says them.
func phaseWarnings(r *schema.PhaseResult, recs []schema.Record, model string, ignoreEOS bool) []string {
	return phasewarn.Lines(phaseSubject(r), r, recs, model, ignoreEOS)
}

// phaseSubject is what run's warnings are about: "phase NAME".
func phaseSubject(r *schema.PhaseResult) string { return "phase " + r.Phase }
