package run

import (
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/glmbench/glmbench/bench"
	"github.com/glmbench/glmbench/cmd/cmdutil"
	"github.com/glmbench/glmbench/reports/schema"
)

// startProgress shows the phase in flight on stderr: a live bar redrawn five
// times a second on a terminal, else a plain line every `every`. The returned
// func stops it and clears the bar.
func startProgress(io *cmdutil.IOStreams, p *bench.Progress, every time.Duration) func() {
	tick := every
	if io.ErrTTY {
		tick = 200 * time.Millisecond
	}
	if tick <= 0 {
		return func() {}
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(tick)
		defer t.Stop()
		var lastEv int64
		last := time.Now()
		for {
			select {
			case <-done:
				if io.ErrTTY {
					fmt.Fprint(io.ErrOut, "\r\x1b[K")
				}
				return
			case now := <-t.C:
				ev := p.Events.Load()
				rate := float64(ev-lastEv) / now.Sub(last).Seconds()
				lastEv, last = ev, now
				line := progressLine(p, rate, io.ErrTTY)
				if io.ErrTTY {
					fmt.Fprintf(io.ErrOut, "\r\x1b[K%s", line)
				} else {
					fmt.Fprintln(io.ErrOut, line)
				}
			}
		}
	}()
	return func() {
		close(done)
		wg.Wait()
	}
}

func progressLine(p *bench.Progress, eventRate float64, bar bool) string {
	spec, start := p.Phase()
	done := p.Done.Load()
	var b strings.Builder
	fmt.Fprintf(&b, "%s ", spec.Name)
	if bar {
		const width = 24
		fill := 0
		if spec.N > 0 {
			fill = int(done) * width / spec.N
		}
		b.WriteString("[" + strings.Repeat("=", fill) + strings.Repeat(" ", width-fill) + "] ")
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
	if r.Errors > 0 {
		var parts []string
		for c, n := range r.ByClass {
			parts = append(parts, fmt.Sprintf("%s %d", c, n))
		}
		sort.Strings(parts)
		s += ", errors: " + strings.Join(parts, ", ")
	}
	if r.Cancelled > 0 || r.NotSent > 0 {
		s += fmt.Sprintf(", cancelled %d, not sent %d", r.Cancelled, r.NotSent)
	}
	return s
}
