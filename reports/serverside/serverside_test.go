package serverside

import (
	"math"
	"strconv"
	"strings"
	"testing"

	"github.com/glmbench/glmbench/reports/schema"
)

var inf = math.Inf(1)

// phase is a phase scraped before, twice during (one of which failed, one
// answered) and twice more, and after, by a server that exposes every
// series: the deltas below are known by construction.
func phase() []schema.MetricsSample {
	return []schema.MetricsSample{
		{T: 0, When: "before", Source: "glmbench", Values: map[string]float64{
			schema.SrvRequests: 100, schema.SrvPromptTokens: 1000, schema.SrvGenerationTokens: 500, schema.SrvPreemptions: 2,
			schema.SrvPrefixQueried: 0, schema.SrvPrefixHit: 0, schema.SrvSpecSteps: 10, schema.SrvSpecAccepted: 0,
			schema.SrvRunning: 0, schema.SrvQueued: 0, schema.SrvKVUsage: 0, schema.SrvCacheHitRate: 0.9, schema.SrvAcceptLength: 2,
		}, Hists: map[string]schema.Histogram{
			schema.SrvTTFT: {LE: []float64{0.1, 0.2, 0.4, inf}, Counts: []float64{5, 5, 5, 5}, Count: 5, Sum: 1},
			schema.SrvITL:  {LE: []float64{0.01, 0.02}, Counts: []float64{0, 0}, Count: 0},
		}},
		{T: 1, When: "during", Error: "HTTP 503: Service Unavailable"},
		{T: 2, When: "during", Source: "glmbench", Values: map[string]float64{
			schema.SrvRequests: 120, schema.SrvRunning: 5, schema.SrvQueued: 2, schema.SrvKVUsage: 0.25,
		}},
		{T: 4, When: "during", Source: "glmbench", Values: map[string]float64{
			schema.SrvRequests: 150, schema.SrvRunning: 7, schema.SrvQueued: 0, schema.SrvKVUsage: 0.75,
		}},
		{T: 5, When: "after", Source: "glmbench", Values: map[string]float64{
			schema.SrvRequests: 164, schema.SrvPromptTokens: 17384, schema.SrvGenerationTokens: 4596, schema.SrvPreemptions: 2,
			schema.SrvPrefixQueried: 1000, schema.SrvPrefixHit: 250, schema.SrvSpecSteps: 110, schema.SrvSpecAccepted: 250,
			schema.SrvRunning: 0, schema.SrvQueued: 0, schema.SrvKVUsage: 0, schema.SrvCacheHitRate: 0.9, schema.SrvAcceptLength: 2,
		}, Hists: map[string]schema.Histogram{
			// Per-bucket deltas 10/20/30/40: cumulative 10/30/60/100 above the 5 before.
			schema.SrvTTFT: {LE: []float64{0.1, 0.2, 0.4, inf}, Counts: []float64{15, 35, 65, 105}, Count: 105, Sum: 31},
			// No +Inf bound: the +Inf bucket is the count, as metrics.jsonl keeps it.
			schema.SrvITL: {LE: []float64{0.01, 0.02}, Counts: []float64{40, 100}, Count: 100},
		}},
	}
}

func near(got *float64, want float64) bool {
	return got != nil && math.Abs(*got-want) <= 1e-12*math.Max(1, math.Abs(want))
}

func show(v *float64) string {
	if v == nil {
		return "nil"
	}
	return strconv.FormatFloat(*v, 'g', -1, 64)
}

func TestStatsGivesTheDeltasGaugesAndQuantilesOfAHandBuiltPhase(t *testing.T) {
	t.Parallel()
	st := Stats(phase())
	if st.Source != "glmbench" || st.Scrapes != 4 || st.Failed != 1 {
		t.Fatalf("source %q, scrapes %d, failed %d; want glmbench, 4, 1", st.Source, st.Scrapes, st.Failed)
	}
	if !strings.Contains(st.Note, "1 of 5 scrapes failed (the first: HTTP 503: Service Unavailable)") {
		t.Errorf("note %q does not count the failed scrape", st.Note)
	}
	for _, c := range []struct {
		name string
		got  *float64
		want float64
	}{
		// Counters: last − first, exactly.
		{"requests", st.Requests, 64},
		{"prompt tokens", st.PromptTokens, 16384},
		{"generation tokens", st.GenerationTokens, 4096},
		{"preemptions (none: 0, not nil)", st.Preemptions, 0},
		// Gauges over the two answered scrapes during the phase.
		{"running max", st.RunningMax, 7},
		{"running mean", st.RunningMean, 6},
		{"queued max", st.QueuedMax, 2},
		{"queued mean", st.QueuedMean, 1},
		{"kv max", st.KVUsageMax, 0.75},
		{"kv mean", st.KVUsageMean, 0.5},
		// TTFT: rank 50 in (0.2, 0.4] holding 30 above 30; rank 99 in +Inf → 0.4.
		{"ttft p50", st.TTFTP50, 0.2 + (50.0-30)/(60-30)*0.2},
		{"ttft p99", st.TTFTP99, 0.4},
		// ITL: rank 50 in (0.01, 0.02] holding 60 above 40; rank 99 likewise.
		{"itl p50", st.ITLP50, 0.01 + (50.0-40)/60*0.01},
		{"itl p99", st.ITLP99, 0.01 + (99.0-40)/60*0.01},
		// The counters win over the server's own gauges.
		{"cache hit rate: 250/1000", st.CacheHitRate, 0.25},
		{"accept length: 1 + 250/100", st.AcceptLength, 3.5},
	} {
		if !near(c.got, c.want) {
			t.Errorf("%s = %s, want %g", c.name, show(c.got), c.want)
		}
	}
	if st.E2EP50 != nil || st.E2EP99 != nil {
		t.Errorf("e2e p50 %s p99 %s from a histogram the server does not expose", show(st.E2EP50), show(st.E2EP99))
	}
	if st.QuantileMethod != QuantileMethod {
		t.Errorf("quantile method %q", st.QuantileMethod)
	}
}

func TestStatsReadsScrapesInTheOrderOfTheirTime(t *testing.T) {
	t.Parallel()
	ss := phase()
	ss[0], ss[4] = ss[4], ss[0]
	if st := Stats(ss); !near(st.Requests, 64) || !near(st.TTFTP99, 0.4) {
		t.Fatalf("shuffled scrapes: requests %s, ttft p99 %s; want 64, 0.4", show(st.Requests), show(st.TTFTP99))
	}
}

func TestACounterThatWentDownIsARestartAndGivesNoDeltas(t *testing.T) {
	t.Parallel()
	ss := phase()
	ss[3].Values[schema.SrvRequests] = 3 // 120 at t=2, then 3: the server restarted
	st := Stats(ss)
	for name, v := range map[string]*float64{
		"requests": st.Requests, "prompt tokens": st.PromptTokens, "generation tokens": st.GenerationTokens,
		"preemptions": st.Preemptions, "ttft p50": st.TTFTP50, "itl p99": st.ITLP99,
	} {
		if v != nil {
			t.Errorf("%s = %s across a restart, want nil", name, show(v))
		}
	}
	if !strings.Contains(st.Note, "counter requests went down from 120 to 3 between the scrapes at 2 s and 4 s: the server restarted") {
		t.Errorf("note %q", st.Note)
	}
	// Gauges are readings, not deltas: a restart leaves them, and the hit
	// rate falls back to the server's own gauge.
	if !near(st.RunningMax, 7) || !near(st.CacheHitRate, 0.9) || !near(st.AcceptLength, 2) {
		t.Errorf("running max %s, cache hit rate %s, accept length %s; want 7, 0.9, 2", show(st.RunningMax), show(st.CacheHitRate), show(st.AcceptLength))
	}
	if st.QuantileMethod != "" {
		t.Errorf("quantile method %q with no quantile", st.QuantileMethod)
	}
}

func TestAHistogramWhoseCountWentDownIsARestart(t *testing.T) {
	t.Parallel()
	ss := phase()
	h := ss[4].Hists[schema.SrvITL]
	h.Count, h.Counts = 0, []float64{0, 0}
	ss[0].Hists[schema.SrvITL] = schema.Histogram{LE: []float64{0.01, 0.02}, Counts: []float64{3, 4}, Count: 4}
	ss[4].Hists[schema.SrvITL] = h
	st := Stats(ss)
	if st.Requests != nil || st.TTFTP50 != nil || !strings.Contains(st.Note, "histogram itl's count went down from 4 to 0") {
		t.Fatalf("requests %s, ttft p50 %s, note %q", show(st.Requests), show(st.TTFTP50), st.Note)
	}
}

func TestSeriesTheServerDoesNotExposeAreNil(t *testing.T) {
	t.Parallel()
	ss := []schema.MetricsSample{
		{T: 0, When: "before", Source: "llamacpp", Values: map[string]float64{schema.SrvRunning: 0, schema.SrvAcceptLength: 0}},
		{T: 1, When: "during", Source: "llamacpp", Values: map[string]float64{schema.SrvRunning: 3, schema.SrvAcceptLength: 0}},
		{T: 2, When: "after", Source: "llamacpp", Values: map[string]float64{schema.SrvRunning: 0, schema.SrvAcceptLength: 0}},
	}
	st := Stats(ss)
	if st.Source != "llamacpp" || st.Scrapes != 3 || st.Failed != 0 || st.Note != "" {
		t.Fatalf("%+v", st)
	}
	if !near(st.RunningMax, 3) || !near(st.RunningMean, 3) {
		t.Errorf("running max %s mean %s, want 3 and 3", show(st.RunningMax), show(st.RunningMean))
	}
	for name, v := range map[string]*float64{
		"requests": st.Requests, "prompt tokens": st.PromptTokens, "generation tokens": st.GenerationTokens, "preemptions": st.Preemptions,
		"ttft p50": st.TTFTP50, "ttft p99": st.TTFTP99, "itl p50": st.ITLP50, "itl p99": st.ITLP99, "e2e p50": st.E2EP50, "e2e p99": st.E2EP99,
		"queued max": st.QueuedMax, "queued mean": st.QueuedMean, "kv max": st.KVUsageMax, "kv mean": st.KVUsageMean,
		"cache hit rate": st.CacheHitRate,
		// SGLang shows an accept length of 0 without speculative decoding.
		"accept length (gauge 0)": st.AcceptLength,
	} {
		if v != nil {
			t.Errorf("%s = %s, want nil: the server does not expose it", name, show(v))
		}
	}
	if st.QuantileMethod != "" {
		t.Errorf("quantile method %q with no histogram", st.QuantileMethod)
	}
}

func TestAPhaseShorterThanTheIntervalTakesItsGaugesFromBeforeAndAfter(t *testing.T) {
	t.Parallel()
	ss := []schema.MetricsSample{
		{T: 0, When: "before", Values: map[string]float64{schema.SrvKVUsage: 0.1, schema.SrvAcceptLength: 2.5}},
		{T: 0.5, When: "after", Values: map[string]float64{schema.SrvKVUsage: 0.3, schema.SrvAcceptLength: 3.5}},
	}
	st := Stats(ss)
	if !near(st.KVUsageMax, 0.3) || !near(st.KVUsageMean, 0.2) || !near(st.AcceptLength, 3) {
		t.Fatalf("kv max %s mean %s, accept length %s; want 0.3, 0.2, 3", show(st.KVUsageMax), show(st.KVUsageMean), show(st.AcceptLength))
	}
}

func TestNoStepAndNoLookupGiveNoAcceptLengthAndNoHitRate(t *testing.T) {
	t.Parallel()
	vals := map[string]float64{schema.SrvSpecSteps: 7, schema.SrvSpecAccepted: 9, schema.SrvPrefixQueried: 40, schema.SrvPrefixHit: 4}
	ss := []schema.MetricsSample{{T: 0, Values: vals}, {T: 1, Values: vals}}
	st := Stats(ss)
	if st.AcceptLength != nil || st.CacheHitRate != nil {
		t.Fatalf("accept length %s, cache hit rate %s over a phase without a step or a lookup; want nil", show(st.AcceptLength), show(st.CacheHitRate))
	}
}

func TestOneAnsweredScrapeGivesNoDelta(t *testing.T) {
	t.Parallel()
	ss := []schema.MetricsSample{
		{T: 0, Error: "connection refused"},
		{T: 1, Values: map[string]float64{schema.SrvRequests: 10}},
	}
	if st := Stats(ss); st.Requests != nil || st.Scrapes != 1 || st.Failed != 1 {
		t.Fatalf("requests %s, scrapes %d, failed %d; want nil, 1, 1", show(st.Requests), st.Scrapes, st.Failed)
	}
}

func TestNothingScrapedIsNilAndNothingAnsweredSaysWhy(t *testing.T) {
	t.Parallel()
	if st := Stats(nil); st != nil {
		t.Fatalf("Stats(nil) = %+v, want nil", st)
	}
	st := Stats([]schema.MetricsSample{{T: 0, Error: "HTTP 404:\nnot found"}, {T: 1, Error: "timeout"}})
	if st == nil || st.Scrapes != 0 || st.Failed != 2 || st.Requests != nil || st.RunningMax != nil {
		t.Fatalf("%+v", st)
	}
	if want := NoScrape + " (2 failed; the first: HTTP 404: not found)"; st.Note != want {
		t.Fatalf("note %q, want %q", st.Note, want)
	}
}

func TestAHistogramThatChangedItsBucketsGivesNoQuantile(t *testing.T) {
	t.Parallel()
	ss := phase()
	h := ss[4].Hists[schema.SrvTTFT]
	h.LE = []float64{0.1, 0.3, 0.4, inf}
	ss[4].Hists[schema.SrvTTFT] = h
	st := Stats(ss)
	if st.TTFTP50 != nil || !strings.Contains(st.Note, "histogram ttft changed its buckets") || st.ITLP50 == nil {
		t.Fatalf("ttft p50 %s, itl p50 %s, note %q", show(st.TTFTP50), show(st.ITLP50), st.Note)
	}
}

func TestSeveralSourcesAreNamed(t *testing.T) {
	t.Parallel()
	st := Stats([]schema.MetricsSample{{T: 0, Source: "sglang"}, {T: 1, Source: "vllm"}})
	if st.Source != "vllm" || !strings.Contains(st.Note, "several servers (sglang, vllm)") {
		t.Fatalf("source %q, note %q", st.Source, st.Note)
	}
}

func TestQuantileInterpolatesLikePrometheus(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name   string
		q      float64
		le, n  []float64
		count  float64
		want   float64
		absent bool
	}{
		{name: "the median within its bucket", q: 0.5, le: []float64{0.1, 0.2, 0.4, inf}, n: []float64{10, 30, 60, 100}, want: 0.2 + 20.0/30*0.2},
		{name: "a rank in +Inf is the highest finite bound", q: 0.99, le: []float64{0.1, 0.2, 0.4, inf}, n: []float64{10, 30, 60, 100}, want: 0.4},
		{name: "the lowest bucket starts at 0", q: 0.5, le: []float64{1, 2, inf}, n: []float64{10, 10, 10}, want: 0.5},
		{name: "a rank on a bucket's count is its bound", q: 0.3, le: []float64{0.1, 0.2, 0.4, inf}, n: []float64{10, 30, 60, 100}, want: 0.2},
		{name: "q 0 is the lowest bucket's start", q: 0, le: []float64{1, 2, inf}, n: []float64{4, 8, 8}, want: 0},
		{name: "a lowest bound at or below 0 is returned as is", q: 0.25, le: []float64{-1, 0, inf}, n: []float64{10, 20, 20}, want: -1},
		{name: "counts that go down are raised to the largest before", q: 0.5, le: []float64{0.1, 0.2, inf}, n: []float64{10, 5, 20}, want: 0.1},
		{name: "the +Inf bucket from the count", q: 0.75, le: []float64{1, 2}, n: []float64{2, 2}, count: 4, want: 2},
		{name: "buckets out of order are sorted", q: 0.5, le: []float64{0.4, inf, 0.1, 0.2}, n: []float64{60, 100, 10, 30}, want: 0.2 + 20.0/30*0.2},
		{name: "no observation", q: 0.5, le: []float64{0.1, inf}, n: []float64{0, 0}, absent: true},
		{name: "no finite bound", q: 0.5, le: []float64{inf}, n: []float64{7}, count: 7, absent: true},
		{name: "q above 1", q: 1.5, le: []float64{0.1, inf}, n: []float64{1, 1}, absent: true},
	} {
		got := Quantile(c.q, schema.Histogram{LE: c.le, Counts: c.n, Count: c.count})
		if c.absent {
			if got != nil {
				t.Errorf("%s: %s, want nil", c.name, show(got))
			}
			continue
		}
		if !near(got, c.want) {
			t.Errorf("%s: %s, want %g", c.name, show(got), c.want)
		}
	}
}

func TestGroupSplitsByPhaseAndPointInOrder(t *testing.T) {
	t.Parallel()
	keys, groups := Group([]schema.MetricsSample{
		{Phase: "b", T: 0}, {Phase: "a", T: 0}, {Phase: "b", T: 1}, {Phase: "sw", Point: 2}, {Phase: "sw", Point: 1},
	})
	want := []Key{{"b", 0}, {"a", 0}, {"sw", 2}, {"sw", 1}}
	if len(keys) != len(want) {
		t.Fatalf("keys %v", keys)
	}
	for i := range want {
		if keys[i] != want[i] {
			t.Fatalf("keys %v, want %v", keys, want)
		}
	}
	if len(groups[Key{"b", 0}]) != 2 || groups[Key{"b", 0}][1].T != 1 {
		t.Fatalf("group b: %+v", groups[Key{"b", 0}])
	}
}

// FuzzQuantile checks, on any buckets, that a quantile is nil or lies
// between the lowest bucket's start and the highest finite bound, and that
// it never falls as q rises.
func FuzzQuantile(f *testing.F) {
	f.Add([]byte{1, 10, 2, 30, 4, 60}, byte(40))
	f.Add([]byte{0, 0}, byte(0))
	f.Add([]byte{200, 5, 100, 3}, byte(7))
	f.Fuzz(func(t *testing.T, data []byte, total byte) {
		var h schema.Histogram
		for i := 0; i+1 < len(data); i += 2 {
			h.LE = append(h.LE, float64(int8(data[i]))/10)
			h.Counts = append(h.Counts, float64(data[i+1]))
		}
		h.Count = float64(total)
		n := Normalize(h)
		lo, hi := math.Inf(1), math.Inf(-1)
		if len(n.LE) >= 2 {
			lo, hi = math.Min(0, n.LE[0]), n.LE[len(n.LE)-2]
		}
		prev := math.Inf(-1)
		for _, q := range []float64{0, 0.01, 0.25, 0.5, 0.9, 0.99, 1} {
			v := Quantile(q, h)
			if v == nil {
				continue
			}
			if *v < lo || *v > hi || math.IsNaN(*v) {
				t.Fatalf("q %g = %g outside [%g, %g] of %+v", q, *v, lo, hi, n)
			}
			if *v < prev {
				t.Fatalf("q %g = %g below the quantile of a lower q, %g, of %+v", q, *v, prev, n)
			}
			prev = *v
		}
	})
}
