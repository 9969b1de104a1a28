package slo

import (
	"math"

	"github.com/glmbench/glmbench/reports/schema"
	"github.com/glmbench/glmbench/reports/summary"
)

// Window is a sweep point's timeline, in seconds from the point's start
// (which records' send_offset counts from): the warm-up ends and the
// measured window begins at Warmup; the window lasts Duration; Slice cuts it.
type Window struct {
	Warmup, Duration, Slice float64
}

// Point computes sweep point number n at load from all its records (warm-up,
// measured and cool-down, told apart by Record.Window): every run metric over
// the requests that started in the window, with wall_sec the window's length,
// goodput and attainment under set, the window objectives, and the slices.
// The point is good when its attainment reaches target and every window
// objective holds. The client counts as saturated when the p99 of the
// measured requests' send lags passes schema.SaturationLag: one late send in
// thousands is a pause of the machine, a late send in every hundred is a
// client that cannot keep up. status is how the point ended (schema.StatusComplete
// or StatusInterrupted).
func Point(n int, load float64, spec schema.PhaseResult, records []schema.Record, w Window, set Set, target float64, status string) schema.SweepPoint {
	var measured []schema.Record
	var lags []float64
	maxLag := 0.0
	for i := range records {
		rec := &records[i]
		if !rec.NotSent {
			maxLag = math.Max(maxLag, rec.SendLag)
		}
		if rec.Window == schema.WindowMeasured {
			measured = append(measured, *rec)
			lags = append(lags, rec.SendLag)
		}
	}
	ph := summary.Phase(spec.Phase, spec.InputLen, spec.OutputLen, measured, status)
	p := schema.SweepPoint{Point: n, Load: load, Started: len(measured)}
	if lag := summary.Percentile(lags, 99); lag != nil {
		p.SendLagP99 = *lag
		p.Saturated = *lag > schema.SaturationLag.Seconds()
	}
	// Throughput is the window's: what its requests carried per second of
	// it. (summary.Phase's wall_sec runs to the last request's end, past
	// the window.)
	var inTok, outTok, prompted, done int
	var perUser []float64
	for i := range measured {
		rec := &measured[i]
		if rec.Cancelled == schema.CancelDrain {
			p.Unfinished++
		}
		if !rec.Completed() {
			continue
		}
		done++
		inTok += rec.Prompt
		if rec.Prompt > 0 {
			prompted++
		}
		outTok += rec.N
		if v, ok := rec.TPOT(); ok && v > 0 {
			perUser = append(perUser, 1/v)
		}
	}
	ph.WallSec = w.Duration
	ph.MaxSendLag = maxLag
	if w.Duration > 0 {
		ph.OutTput = float64(outTok) / w.Duration
		p.RequestsPerSec = float64(ph.Completed) / w.Duration
	}
	ph.InTput = summary.InTput(inTok, prompted, done, w.Duration)
	p.OutTputPerUser = summary.Percentile(perUser, 50)
	set.Apply(&ph, measured, w.Duration)
	p.WindowSLOs, _ = set.WindowHeld(&ph)
	p.Good = p.WindowSLOs && ph.SLOAttainment != nil && *ph.SLOAttainment >= target
	p.PhaseResult = ph
	p.Slices = cut(spec, records, w)
	return p
}

// cut cuts the window into parts of w.Slice seconds (the last may be
// shorter): in each, the output tokens streamed per second by every request
// of the point (each content event weighs n / events of its request), and
// the TTFT and TPOT percentiles of the measured requests that started in it.
func cut(spec schema.PhaseResult, records []schema.Record, w Window) []schema.SweepSlice {
	if w.Slice <= 0 || w.Duration <= 0 {
		return nil
	}
	k := int(math.Ceil(w.Duration/w.Slice - 1e-9))
	out := make([]schema.SweepSlice, k)
	started := make([][]schema.Record, k)
	tokens := make([]float64, k)
	at := func(t float64) int {
		if t < w.Warmup || t >= w.Warmup+w.Duration {
			return -1
		}
		return min(k-1, int((t-w.Warmup)/w.Slice))
	}
	for i := range records {
		rec := &records[i]
		if rec.NotSent {
			continue
		}
		if rec.Window == schema.WindowMeasured {
			// The window is the tag the sweep gave the request as it
			// started; its t0 (the first header write, after any dial)
			// can fall just past the window's end.
			s := max(0, min(k-1, int((rec.SendOffset-w.Warmup)/w.Slice)))
			started[s] = append(started[s], *rec)
		}
		weight := 1.0
		if rec.Completed() && len(rec.Events) > 0 {
			weight = float64(rec.N) / float64(len(rec.Events))
		}
		for _, e := range rec.Events {
			if s := at(rec.SendOffset + e); s >= 0 {
				tokens[s] += weight
			}
		}
	}
	for s := range out {
		lo := w.Warmup + float64(s)*w.Slice
		hi := math.Min(lo+w.Slice, w.Warmup+w.Duration)
		ph := summary.Phase(spec.Phase, spec.InputLen, spec.OutputLen, started[s], schema.StatusComplete)
		out[s] = schema.SweepSlice{
			StartSec: lo - w.Warmup, EndSec: hi - w.Warmup, Started: len(started[s]),
			OutTput: tokens[s] / (hi - lo),
			TTFTMed: ph.TTFTMed, TTFTP99: ph.TTFTP99, TPOTMed: ph.TPOTMed, TPOTP99: ph.TPOTP99,
		}
	}
	return out
}

// Capacity is the largest load among the good points, with its figures and
// the smallest bad load above it; nil when no point was good. Only judged
// points count.
func Capacity(points []schema.SweepPoint) *schema.SweepCapacity {
	var best *schema.SweepPoint
	for i := range points {
		if p := &points[i]; judged(p) && p.Good && (best == nil || p.Load > best.Load) {
			best = p
		}
	}
	if best == nil {
		return nil
	}
	c := &schema.SweepCapacity{Point: best.Point, Load: best.Load, OutTput: best.OutTput, OutTputPerUser: best.OutTputPerUser}
	if best.Goodput != nil {
		c.Goodput = *best.Goodput
	}
	for i := range points {
		if p := &points[i]; judged(p) && !p.Good && p.Load > best.Load && (c.Above == nil || p.Load < *c.Above) {
			c.Above = &p.Load
		}
	}
	return c
}

// judged says whether p's verdict tells what the endpoint carries, as the
// search takes it: not for a point that Ctrl-C cut short (its requests cut
// off are misses of the user's making), nor for one whose client saturated
// (the client may have set the pace).
func judged(p *schema.SweepPoint) bool {
	return p.Status != schema.StatusInterrupted && !p.Saturated
}
