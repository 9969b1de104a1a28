// Package serverside turns the scrapes of a server's metrics over a phase
// (schema.MetricsSample, one line of metrics.jsonl each) into the phase's
// server block (schema.ServerStats): counter deltas, gauge maxima and
// means, and the quantiles of the histograms' deltas. It is a pure function
// of the samples, shared by the load runner, which scrapes, and the report
// reader, which recomputes the block from metrics.jsonl.
package serverside

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/glmbench/glmbench/internal/text"
	"github.com/glmbench/glmbench/reports/schema"
)

// QuantileMethod names how Stats reads a quantile off a histogram.
const QuantileMethod = "histogram_quantile: linear interpolation within the bucket of the phase's bucket deltas " +
	"(the lowest bucket from 0), and the highest finite bound for a rank in the +Inf bucket, as Prometheus does"

// NoScrape is the note of a phase none of whose scrapes answered.
const NoScrape = "no scrape of the metrics answered"

// During is the When of a scrape taken while the phase ran.
const During = "during"

// Key names the phase (or sweep point) a sample belongs to.
type Key struct {
	Phase string
	Point int
}

// Group splits samples by phase and point, keeping each group's order and
// returning the keys in the order first met.
func Group(samples []schema.MetricsSample) (keys []Key, groups map[Key][]schema.MetricsSample) {
	groups = map[Key][]schema.MetricsSample{}
	for _, s := range samples {
		k := Key{s.Phase, s.Point}
		if _, ok := groups[k]; !ok {
			keys = append(keys, k)
		}
		groups[k] = append(groups[k], s)
	}
	return keys, groups
}

// Stats is a phase's server block from its scrapes, in the order of their
// T (seconds from the phase start; a stable sort, so equal T keep their
// order):
//
//   - counters (requests, prompt and generation tokens, preemptions): the
//     last answered scrape's value minus the first's, over the scrapes that
//     have the series; nil with fewer than two. A router's retries count 0
//     in a scrape without them (lazyDelta). A counter that went down
//     between two scrapes means the server restarted: every counter and
//     histogram figure is then nil, and the note says which went down;
//   - gauges (running, queued, KV usage): the maximum and mean over the
//     answered scrapes taken during the phase that have the series, or over
//     all answered ones that have it when none does (a phase shorter than
//     the scrape interval): the idle scrapes before and after would pull
//     the mean down;
//   - TTFT, ITL and e2e p50 and p99: from the histogram's bucket deltas
//     between the first and last answered scrapes (Quantile), nil when no
//     observation fell in the phase;
//   - cache hit rate: Δprefix_hit / Δprefix_queried where the server counts
//     them (nil when it looked nothing up), else the mean of its own gauge;
//   - accept length: 1 + Δspec_accepted / Δspec_steps where the server
//     counts them (vLLM's steps are its drafts; nil when no step ran), else
//     the mean of its own gauge over the scrapes where it is above 0 (SGLang
//     shows 0 without speculative decoding); nil without either.
//
// Stats is nil when there is no sample: nothing was scraped. When samples
// exist but none answered, it is a block with Scrapes 0, every figure nil,
// Failed their count and a Note saying so and why (the first error), so a
// report tells "not scraped" from "scraped and failed".
func Stats(samples []schema.MetricsSample) *schema.ServerStats {
	if len(samples) == 0 {
		return nil
	}
	st := &schema.ServerStats{}
	var ok []schema.MetricsSample
	firstErr := ""
	for _, s := range samples {
		if s.Error != "" {
			st.Failed++
			if firstErr == "" {
				firstErr = s.Error
			}
			continue
		}
		ok = append(ok, s)
	}
	st.Scrapes = len(ok)
	var notes []string
	if len(ok) == 0 {
		st.Note = fmt.Sprintf("%s (%d failed; the first: %s)", NoScrape, st.Failed, oneLine(firstErr))
		return st
	}
	if st.Failed > 0 {
		notes = append(notes, fmt.Sprintf("%d of %d scrapes failed (the first: %s)", st.Failed, len(samples), oneLine(firstErr)))
	}
	slices.SortStableFunc(ok, func(a, b schema.MetricsSample) int { return cmp.Compare(a.T, b.T) })
	st.Source = source(ok, &notes)

	reset := resetNote(ok)
	if reset != "" {
		notes = append(notes, reset)
	}
	delta := func(name string) *float64 {
		if reset != "" {
			return nil
		}
		return counterDelta(ok, name)
	}
	st.Requests = delta(schema.SrvRequests)
	st.PromptTokens = delta(schema.SrvPromptTokens)
	st.GenerationTokens = delta(schema.SrvGenerationTokens)
	st.Preemptions = delta(schema.SrvPreemptions)
	if reset == "" {
		st.Retries = lazyDelta(ok, schema.SrvRetries)
	}

	st.RunningMax, st.RunningMean = gauge(ok, schema.SrvRunning, false)
	st.QueuedMax, st.QueuedMean = gauge(ok, schema.SrvQueued, false)
	st.KVUsageMax, st.KVUsageMean = gauge(ok, schema.SrvKVUsage, false)

	if reset == "" {
		for _, h := range []struct {
			name     string
			p50, p99 **float64
		}{
			{schema.SrvTTFT, &st.TTFTP50, &st.TTFTP99},
			{schema.SrvITL, &st.ITLP50, &st.ITLP99},
			{schema.SrvE2E, &st.E2EP50, &st.E2EP99},
		} {
			d, note := histDelta(ok, h.name)
			if note != "" {
				notes = append(notes, note)
			}
			if d == nil {
				continue
			}
			*h.p50, *h.p99 = Quantile(0.5, *d), Quantile(0.99, *d)
			if *h.p50 != nil {
				st.QuantileMethod = QuantileMethod
			}
		}
	}

	queried, hit := delta(schema.SrvPrefixQueried), delta(schema.SrvPrefixHit)
	switch {
	case queried != nil && hit != nil:
		if *queried > 0 {
			st.CacheHitRate = ptr(*hit / *queried)
		}
	default:
		_, st.CacheHitRate = gauge(ok, schema.SrvCacheHitRate, false)
	}

	steps, accepted := delta(schema.SrvSpecSteps), delta(schema.SrvSpecAccepted)
	switch {
	case steps != nil && accepted != nil:
		if *steps > 0 {
			st.AcceptLength = ptr(1 + *accepted / *steps)
		}
	default:
		_, st.AcceptLength = gauge(ok, schema.SrvAcceptLength, true)
	}
	st.Note = strings.Join(notes, "; ")
	return st
}

// source is the samples' Source; should they name several, the last, and
// a note names them all.
func source(ok []schema.MetricsSample, notes *[]string) string {
	var seen []string
	for _, s := range ok {
		if s.Source != "" && !slices.Contains(seen, s.Source) {
			seen = append(seen, s.Source)
		}
	}
	if len(seen) == 0 {
		return ""
	}
	if len(seen) > 1 {
		*notes = append(*notes, "the scrapes read the series of several servers ("+strings.Join(seen, ", ")+")")
	}
	return seen[len(seen)-1]
}

// counters are the common names of the counters a reset is looked for in.
var counters = []string{
	schema.SrvRequests, schema.SrvPromptTokens, schema.SrvGenerationTokens, schema.SrvPreemptions,
	schema.SrvPrefixQueried, schema.SrvPrefixHit, schema.SrvSpecSteps, schema.SrvSpecDrafted, schema.SrvSpecAccepted,
	schema.SrvRetries,
}

// resetNote says which counter or histogram count first went down between
// two consecutive scrapes that have it, or "" when none did.
func resetNote(ok []schema.MetricsSample) string {
	for _, name := range counters {
		prev, prevT, have := 0.0, 0.0, false
		for _, s := range ok {
			v, found := value(s, name)
			if !found {
				continue
			}
			if have && v < prev {
				return fmt.Sprintf("counter %s went down from %g to %g between the scrapes at %.3g s and %.3g s: the server restarted, so no counter or histogram figure is given",
					name, prev, v, prevT, s.T)
			}
			prev, prevT, have = v, s.T, true
		}
	}
	for _, name := range []string{schema.SrvTTFT, schema.SrvITL, schema.SrvE2E} {
		prev, prevT, have := 0.0, 0.0, false
		for _, s := range ok {
			h, found := s.Hists[name]
			if !found {
				continue
			}
			if have && h.Count < prev {
				return fmt.Sprintf("histogram %s's count went down from %g to %g between the scrapes at %.3g s and %.3g s: the server restarted, so no counter or histogram figure is given",
					name, prev, h.Count, prevT, s.T)
			}
			prev, prevT, have = h.Count, s.T, true
		}
	}
	return ""
}

// value is s's finite value of name.
func value(s schema.MetricsSample, name string) (float64, bool) {
	v, ok := s.Values[name]
	if !ok || math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, false
	}
	return v, true
}

// counterDelta is the last value of name minus the first over the samples
// that have it; nil with fewer than two.
func counterDelta(ok []schema.MetricsSample, name string) *float64 {
	var first, last float64
	n := 0
	for _, s := range ok {
		if v, found := value(s, name); found {
			if n == 0 {
				first = v
			}
			last = v
			n++
		}
	}
	if n < 2 {
		return nil
	}
	return ptr(last - first)
}

// lazyDelta is counterDelta for a counter the server writes only once it
// has counted one (sgl-router's retries: the metrics crate exports a
// series from its first increment): an answered scrape without it counts
// 0, so a phase whose first retry came after its first scrape counts it.
// It is nil where no scrape has the series, with fewer than two scrapes,
// or where it went down between two scrapes (a restart).
func lazyDelta(ok []schema.MetricsSample, name string) *float64 {
	have, prev := false, 0.0
	for _, s := range ok {
		v, found := value(s, name)
		if v < prev {
			return nil
		}
		have, prev = have || found, v
	}
	if !have || len(ok) < 2 {
		return nil
	}
	first, _ := value(ok[0], name)
	return ptr(prev - first)
}

// gauge is the maximum and mean of name over the samples taken during the
// phase that have it, or over all that have it when none taken during it
// does; positive leaves out values of 0 or below. Both are nil when none
// has it.
func gauge(ss []schema.MetricsSample, name string, positive bool) (maxV, mean *float64) {
	for _, duringOnly := range []bool{true, false} {
		sum, top, n := 0.0, math.Inf(-1), 0
		for _, s := range ss {
			v, found := value(s, name)
			if !found || positive && v <= 0 || duringOnly && s.When != During {
				continue
			}
			sum += v
			top = max(top, v)
			n++
		}
		if n > 0 {
			return ptr(top), ptr(sum / float64(n))
		}
	}
	return nil, nil
}

// histDelta is the last scrape's histogram name minus the first's, bucket
// by bucket, over the samples that have it (nil with fewer than two), with
// a note when the two have different buckets (nil too).
func histDelta(ok []schema.MetricsSample, name string) (*schema.Histogram, string) {
	var first, last schema.Histogram
	n := 0
	for _, s := range ok {
		if h, found := s.Hists[name]; found {
			if n == 0 {
				first = h
			}
			last = h
			n++
		}
	}
	if n < 2 {
		return nil, ""
	}
	a, b := Normalize(first), Normalize(last)
	if !slices.Equal(a.LE, b.LE) {
		return nil, fmt.Sprintf("histogram %s changed its buckets during the phase, so it gives no quantile", name)
	}
	d := schema.Histogram{LE: b.LE, Counts: make([]float64, len(b.Counts)), Sum: b.Sum - a.Sum, Count: b.Count - a.Count}
	for i := range d.Counts {
		d.Counts[i] = b.Counts[i] - a.Counts[i]
	}
	return &d, ""
}

// Normalize returns h with its buckets in order of bound and a +Inf bucket
// last: where h has none (a histogram whose +Inf bucket is kept as its
// Count, as metrics.jsonl writes it), one of h.Count is added. A bucket
// whose count is missing counts 0.
func Normalize(h schema.Histogram) schema.Histogram {
	type bucket struct{ le, n float64 }
	bs := make([]bucket, len(h.LE))
	for i, le := range h.LE {
		if i < len(h.Counts) {
			bs[i] = bucket{le, h.Counts[i]}
		} else {
			bs[i] = bucket{le, 0}
		}
	}
	slices.SortStableFunc(bs, func(a, b bucket) int { return cmp.Compare(a.le, b.le) })
	if len(bs) == 0 || !math.IsInf(bs[len(bs)-1].le, 1) {
		bs = append(bs, bucket{math.Inf(1), h.Count})
	}
	out := schema.Histogram{LE: make([]float64, len(bs)), Counts: make([]float64, len(bs)), Sum: h.Sum, Count: h.Count}
	for i, b := range bs {
		out.LE[i], out.Counts[i] = b.le, b.n
	}
	return out
}

// Quantile is the q-quantile (0 ≤ q ≤ 1) of the observations h counts
// (cumulative counts per upper bound), as Prometheus's histogram_quantile
// reads it: the rank q × the +Inf bucket's count falls in the first bucket
// whose count reaches it, and the quantile is interpolated linearly between
// that bucket's lower bound (the previous bound, or 0 for the lowest bucket
// when its bound is above 0) and its upper bound. A rank in the +Inf bucket
// gives the highest finite bound. Counts that go down from a bound to the
// next (a torn read) are raised to the largest before them, as Prometheus
// does. Nil when h counts no observation or has no finite bound.
func Quantile(q float64, h schema.Histogram) *float64 {
	h = Normalize(h)
	n := len(h.LE)
	if n < 2 || math.IsNaN(q) || q < 0 || q > 1 {
		return nil
	}
	counts := slices.Clone(h.Counts)
	for i := 1; i < n; i++ {
		counts[i] = max(counts[i], counts[i-1])
	}
	total := counts[n-1]
	if total <= 0 {
		return nil
	}
	rank := q * total
	b := 0
	for b < n-1 && counts[b] < rank {
		b++
	}
	switch {
	case b == n-1:
		return ptr(h.LE[n-2])
	case b == 0 && h.LE[0] <= 0:
		return ptr(h.LE[0])
	}
	start, end, below := 0.0, h.LE[b], 0.0
	if b > 0 {
		start, below = h.LE[b-1], counts[b-1]
	}
	in := counts[b] - below
	if in <= 0 {
		return ptr(end)
	}
	// min: the rounding of start + (end − start) × 1 may pass end.
	return ptr(min(end, start+(end-start)*(rank-below)/in))
}

func ptr(v float64) *float64 { return &v }

// oneLine keeps an error's text on one line and at most 200 bytes, for a
// note.
func oneLine(s string) string { return text.Clip(text.OneLine(s), 200, "…") }
