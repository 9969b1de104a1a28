package reports

import (
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/glmbench/glmbench/reports/schema"
)

// sweepFormulas define a sweep's figures, for reports to print beside them.
var sweepFormulas = []schema.Formula{
	{Metric: "window", Formula: "each point runs its load for --warmup, then the measured window of --duration; only requests whose t0 falls inside the window are measured, and the load goes on after it (at most --drain) until they have ended"},
	{Metric: "met", Formula: "a measured request that completed and met every per-request SLO (a request with n < 2 has no TPOT and meets a TPOT SLO, as in vLLM); a failed, cancelled or unfinished request is a miss"},
	{Metric: "goodput", Formula: "met requests / window seconds"},
	{Metric: "attainment", Formula: "met requests / requests started in the window"},
	{Metric: "out_tput", Formula: "Σ n of the window's completed requests / window seconds"},
	{Metric: "tok/s/user", Formula: "median over the window's completed requests of 1 / tpot"},
	{Metric: "good", Formula: "attainment ≥ the target and every window SLO (ttft_p99 < …) held"},
	{Metric: "capacity", Formula: "the largest measured load whose point was good; it lies between that load and the smallest bad load above it (an interrupted or client-saturated point counts as neither)"},
}

// sweepTables renders each sweep: its capacity, the points, the slices.
func (p *printer) sweepTables(r *schema.Report) {
	for i := range r.Sweeps {
		s := &r.Sweeps[i]
		p.f("\n## Sweep %s: %d in / %d out, by %s\n\n", s.Name, s.InputLen, s.OutputLen, s.Mode)
		slos := "none (a request meets them when it completes)"
		if len(s.SLOs) > 0 {
			slos = "`" + strings.Join(s.SLOs, "`, `") + "`"
		}
		p.f("- SLOs: %s; a point is good at attainment ≥ %s\n", slos, strconv.FormatFloat(s.Attainment, 'g', -1, 64))
		p.f("- each point: %gs warm-up, %gs window, at most %gs drain; slices of %gs\n", s.WarmupSec, s.DurationSec, s.DrainSec, s.SliceSec)
		p.f("- **capacity: %s**\n", capacityText(s))
		if s.Note != "" {
			p.f("- %s\n", s.Note)
		}
		p.f("\n")
		p.table([]string{"point", s.Mode, "started", "completed", "errors", "unfinished", "attainment", "goodput req/s",
			"out tok/s", "tok/s/user", "TTFT med", "TTFT p99", "TPOT med ms", "TPOT p99 ms", "good"},
			func(add func(...string)) {
				for _, pt := range s.Points {
					add(strconv.Itoa(pt.Point), LoadString(pt.Load), strconv.Itoa(pt.Started), strconv.Itoa(pt.Completed),
						strconv.Itoa(pt.Errors), strconv.Itoa(pt.Unfinished), opt(pt.SLOAttainment, 1, 3), opt(pt.Goodput, 1, 2),
						num(pt.OutTput, 1), opt(pt.OutTputPerUser, 1, 1), opt(pt.TTFTMed, 1, 3), opt(pt.TTFTP99, 1, 3),
						opt(pt.TPOTMed, 1e3, 2), opt(pt.TPOTP99, 1e3, 2), goodText(&pt))
				}
			})
		p.f("\n### Slices\n\nOutput tokens/s streamed in each slice by every request of the point, and the latencies of the requests that started in it.\n\n")
		p.table([]string{"point", s.Mode, "slice s", "started", "out tok/s", "TTFT med", "TTFT p99", "TPOT med ms", "TPOT p99 ms"},
			func(add func(...string)) {
				for _, pt := range s.Points {
					for _, sl := range pt.Slices {
						add(strconv.Itoa(pt.Point), LoadString(pt.Load), fmt.Sprintf("%g–%g", sl.StartSec, sl.EndSec), strconv.Itoa(sl.Started),
							num(sl.OutTput, 1), opt(sl.TTFTMed, 1, 3), opt(sl.TTFTP99, 1, 3), opt(sl.TPOTMed, 1e3, 2), opt(sl.TPOTP99, 1e3, 2))
					}
				}
			})
	}
}

func goodText(p *schema.SweepPoint) string {
	switch {
	case p.Saturated:
		return "client saturated"
	case p.Good:
		return "yes"
	case !p.WindowSLOs:
		return "no (window SLO)"
	}
	return "no"
}

// LoadString writes a load: a concurrency as a whole number, a rate with up
// to four significant digits.
func LoadString(v float64) string { return strconv.FormatFloat(v, 'g', 4, 64) }

// capacityText is a sweep's capacity in one phrase: the load, its figures
// and the bracket it lies in.
func capacityText(s *schema.SweepResult) string {
	c := s.Capacity
	if c == nil {
		return "none: no measured load met the SLOs"
	}
	unit := ""
	if s.Mode == schema.SweepRate {
		unit = " req/s"
	}
	bracket := "at least; no higher load was bad"
	if c.Above != nil {
		bracket = "in [" + LoadString(c.Load) + ", " + LoadString(*c.Above) + ")"
	}
	return fmt.Sprintf("%s %s%s (%s): %s out tok/s, goodput %s req/s, %s tok/s per user",
		s.Mode, LoadString(c.Load), unit, bracket, num(c.OutTput, 1), num(c.Goodput, 2), opt(c.OutTputPerUser, 1, 1))
}

// WriteSweepSummary writes r's sweeps for a terminal or a pipe: each
// sweep's capacity and points, as report.md has them (slices left out).
func WriteSweepSummary(w io.Writer, r *schema.Report) error {
	p := &printer{w: w}
	for i := range r.Sweeps {
		s := &r.Sweeps[i]
		p.f("Sweep %s (%d/%d, by %s): capacity %s\n", s.Name, s.InputLen, s.OutputLen, s.Mode, capacityText(s))
		if s.Note != "" {
			p.f("  %s\n", s.Note)
		}
		var rows [][]string
		for _, pt := range sortedPoints(s) {
			rows = append(rows, []string{LoadString(pt.Load), strconv.Itoa(pt.Started), strconv.Itoa(pt.Errors), strconv.Itoa(pt.Unfinished),
				opt(pt.SLOAttainment, 1, 3), opt(pt.Goodput, 1, 2), num(pt.OutTput, 1), opt(pt.OutTputPerUser, 1, 1),
				opt(pt.TTFTP99, 1, 3), opt(pt.TPOTP99, 1e3, 2), goodText(&pt)})
		}
		p.compactTable([]string{s.Mode, "started", "errors", "unfinished", "attainment", "goodput", "out tok/s", "tok/s/user", "TTFT p99", "TPOT p99 ms", "good"}, rows)
	}
	// The points a proxy retried or fell back in: their percentiles, and
	// so the capacity, hold the proxy's waits.
	p.sweepProxyLines(r)
	return p.err
}

// sloTable lists each phase's goodput and attainment under run --slo.
func (p *printer) sloTable(r *schema.Report) {
	if len(r.Options.SLOs) == 0 {
		return
	}
	p.f("\n### SLOs\n\n`%s`: a request meets them when it completed and met each; goodput = met / wall_sec, attainment = met / batch_size.\n\n",
		strings.Join(r.Options.SLOs, "`, `"))
	p.table([]string{"phase", "met", "attainment", "goodput req/s"}, func(add func(...string)) {
		for _, ph := range r.Phases {
			met := "—"
			if ph.SLOMet != nil {
				met = fmt.Sprintf("%d/%d", *ph.SLOMet, ph.BatchSize)
			}
			add(ph.Phase, met, opt(ph.SLOAttainment, 1, 3), opt(ph.Goodput, 1, 2))
		}
	})
}

// WriteSweepComparison sets the sweeps of reps side by side: for each sweep
// name, a capacity row per report (label), then every report's points. It
// writes nothing when no report has a sweep.
func WriteSweepComparison(w io.Writer, reps []*schema.Report) error {
	p := &printer{w: w}
	for _, name := range sweepNames(reps) {
		p.f("\n## Sweep %s\n\n", name)
		p.table([]string{"label", "shape", "SLOs", "capacity", "bracket", "out tok/s", "goodput req/s", "tok/s/user", "stop"}, func(add func(...string)) {
			for _, r := range reps {
				s := sweepOf(r, name)
				if s == nil {
					continue
				}
				capa, bracket, out, good, user := "none", "—", "—", "—", "—"
				if c := s.Capacity; c != nil {
					capa = s.Mode + " " + LoadString(c.Load)
					bracket = "≥ " + LoadString(c.Load)
					if c.Above != nil {
						bracket = "[" + LoadString(c.Load) + ", " + LoadString(*c.Above) + ")"
					}
					out, good, user = num(c.OutTput, 1), num(c.Goodput, 2), opt(c.OutTputPerUser, 1, 1)
				}
				add(r.Label, fmt.Sprintf("%d/%d", s.InputLen, s.OutputLen), strings.Join(s.SLOs, ", "), capa, bracket, out, good, user, s.Stop)
			}
		})
		p.f("\n")
		p.table([]string{"label", "load", "attainment", "goodput req/s", "out tok/s", "tok/s/user", "TTFT p99", "TPOT p99 ms", "good"}, func(add func(...string)) {
			for _, r := range reps {
				s := sweepOf(r, name)
				if s == nil {
					continue
				}
				for _, pt := range sortedPoints(s) {
					add(r.Label, LoadString(pt.Load), opt(pt.SLOAttainment, 1, 3), opt(pt.Goodput, 1, 2), num(pt.OutTput, 1),
						opt(pt.OutTputPerUser, 1, 1), opt(pt.TTFTP99, 1, 3), opt(pt.TPOTP99, 1e3, 2), goodText(&pt))
				}
			}
		})
	}
	return p.err
}
