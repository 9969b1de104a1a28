package server

import (
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/glmbench/glmbench/engine/sched"
)

// metricPrefix stands where SGLang writes "sglang:".
const metricPrefix = "glmbench:"

// Bucket bounds in seconds: SGLang's, with finer low ends because a CPU
// toy model answers in milliseconds.
var (
	ttftBuckets = []float64{0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.2, 0.4, 0.6, 0.8, 1, 2, 4, 6, 8, 10, 20, 40, 60, 80, 100, 200, 400}
	itlBuckets  = []float64{0.0005, 0.001, 0.002, 0.004, 0.006, 0.008, 0.01, 0.015, 0.02, 0.025, 0.03, 0.035, 0.04, 0.06, 0.08, 0.1, 0.2, 0.4, 0.6, 0.8, 1, 2, 4, 6, 8}
	e2eBuckets  = []float64{0.01, 0.05, 0.1, 0.2, 0.4, 0.6, 0.8, 1, 2, 4, 6, 8, 10, 20, 40, 60, 80, 100, 200, 400, 800}
	// acceptBuckets bound a verify step's accept length in tokens (accepted
	// drafts + 1, an integer): 1 is a step whose first draft was rejected.
	acceptBuckets = prometheus.LinearBuckets(1, 1, 16)
)

// rejectReasons are the reasons a request is refused before generation
// that /metrics shows from the start, at 0 until one happens.
var rejectReasons = []string{"queue_full", "rate_limit", "unavailable"}

// Metrics holds the engine's Prometheus series, in a registry of its own
// (never the default registry, and no process or Go runtime collectors: the
// series are the engine's, as SGLang's /metrics are its scheduler's). It
// implements sched.Observer, so it must exist before the scheduler: build
// it with NewMetrics, pass it to sched.New, then to New.
//
// Series are named as SGLang's with glmbench: for sglang: (vLLM's names
// where SGLang has none), each with a model_name label as SGLang's.
// Histograms and the request counters are client_golang's, written by the
// scheduler's goroutine and the handlers; gauges and the scheduler's own
// counters are read from its Stats at scrape time by a Collector, so
// nothing polls. A scrape takes no lock the scheduler waits on: client_golang's
// metrics are lock-free to observe, and Stats is an atomic snapshot.
type Metrics struct {
	ttft, itl, e2e, accept prometheus.Histogram
	promptTokens           prometheus.Counter
	genTokens              prometheus.Counter
	requests               prometheus.Counter
	rejections             *prometheus.CounterVec

	// stats reads the scheduler's snapshot; nil until a server binds it.
	stats atomic.Pointer[func() sched.Stats]

	mu      sync.Mutex
	reg     *prometheus.Registry // holds every series above, labelled with the model's name
	handler http.Handler
}

// NewMetrics returns empty metrics, labelled model_name="glmbench" until a
// server names its model.
func NewMetrics() *Metrics {
	hist := func(name, help string, buckets []float64) prometheus.Histogram {
		return prometheus.NewHistogram(prometheus.HistogramOpts{Name: metricPrefix + name, Help: help, Buckets: buckets})
	}
	counter := func(name, help string) prometheus.Counter {
		return prometheus.NewCounter(prometheus.CounterOpts{Name: metricPrefix + name, Help: help})
	}
	m := &Metrics{
		ttft: hist("time_to_first_token_seconds", "Time from arrival to the first generated token, seconds.", ttftBuckets),
		itl:  hist("inter_token_latency_seconds", "Time between two generated tokens of a request, seconds.", itlBuckets),
		e2e:  hist("e2e_request_latency_seconds", "Time from arrival to the end of a successful response, seconds.", e2eBuckets),
		accept: hist("spec_accept_length_per_step",
			"Tokens one speculative verify step emitted for one request (accepted draft tokens + 1).", acceptBuckets),
		promptTokens: counter("prompt_tokens_total", "Prompt tokens of finished requests."),
		genTokens:    counter("generation_tokens_total", "Generated tokens of finished requests."),
		requests:     counter("num_requests_total", "Finished requests."),
		rejections: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: metricPrefix + "num_rejected_requests_total",
			Help: "Requests refused before generation, by reason.",
		}, []string{"reason"}),
	}
	for _, r := range rejectReasons {
		m.rejections.WithLabelValues(r)
	}
	m.setModel("glmbench")
	return m
}

var _ sched.Observer = (*Metrics)(nil)

// FirstToken records a time to first token (from Submit to the first
// sampled token); the scheduler calls it.
func (m *Metrics) FirstToken(ttft time.Duration) { m.ttft.Observe(ttft.Seconds()) }

// InterToken records the gap between two tokens of a request.
func (m *Metrics) InterToken(gap time.Duration) { m.itl.Observe(gap.Seconds()) }

// Tokens records a finished request's prompt and generated tokens.
func (m *Metrics) Tokens(prompt, generated int) {
	m.promptTokens.Add(float64(prompt))
	m.genTokens.Add(float64(generated))
	m.requests.Inc()
}

// Verified records one speculative verify step of one request: its accept
// length, accepted+1 tokens, goes to the per-step histogram. The drafted
// and accepted totals are the scheduler's own counters, read from Stats.
func (m *Metrics) Verified(drafted, accepted int) { m.accept.Observe(float64(accepted + 1)) }

func (m *Metrics) observeE2E(d time.Duration) { m.e2e.Observe(d.Seconds()) }

// rejected counts a request refused before generation, by reason
// (rate_limit, queue_full, unavailable, body_budget, parse_busy).
func (m *Metrics) rejected(reason string) { m.rejections.WithLabelValues(reason).Inc() }

// setModel labels every series with model_name=name: a fresh registry
// holds the same collectors, so what was observed before is kept.
func (m *Metrics) setModel(name string) {
	reg := prometheus.NewRegistry()
	prometheus.WrapRegistererWith(prometheus.Labels{"model_name": name}, reg).MustRegister(
		m.ttft, m.itl, m.e2e, m.accept, m.promptTokens, m.genTokens, m.requests, m.rejections, statsCollector{m})
	h := promhttp.HandlerFor(reg, promhttp.HandlerOpts{})
	m.mu.Lock()
	m.reg, m.handler = reg, h
	m.mu.Unlock()
}

// bind makes the scrape read the scheduler's Stats through stats.
func (m *Metrics) bind(stats func() sched.Stats) { m.stats.Store(&stats) }

// Gatherer returns the registry of the engine's series, for a caller that
// gathers them without HTTP (tests, a report of the engine's own view).
func (m *Metrics) Gatherer() prometheus.Gatherer {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.reg
}

// handleMetrics serves GET /metrics in the Prometheus text format (or
// whatever the scraper's Accept header negotiates with promhttp).
func (s *Server) handleMetrics(w http.ResponseWriter, r *http.Request) {
	s.metrics.bind(s.sched.Stats)
	s.metrics.mu.Lock()
	h := s.metrics.handler
	s.metrics.mu.Unlock()
	h.ServeHTTP(w, r)
}

// cacheHitRate is the prefix cache's hit rate since start: prompt tokens
// found cached over those looked up (SGLang's cache_hit_rate), 0 when none
// was looked up.
func cacheHitRate(st sched.Stats) float64 {
	if st.PrefixQueried == 0 {
		return 0
	}
	return float64(st.PrefixHit) / float64(st.PrefixQueried)
}

// acceptRate is the fraction of draft tokens accepted (SGLang's
// spec_accept_rate), 0 with none drafted.
func acceptRate(st sched.Stats) float64 {
	if st.SpecDrafted == 0 {
		return 0
	}
	return float64(st.SpecAccepted) / float64(st.SpecDrafted)
}

// statSeries is one series read from the scheduler's Stats at scrape time.
type statSeries struct {
	desc  *prometheus.Desc
	typ   prometheus.ValueType
	value func(sched.Stats) float64
}

// statSeriesTable lists the series read from Stats: SGLang's gauges by
// SGLang's names, and the scheduler's counters by vLLM's names where
// SGLang has none.
var statSeriesTable = func() []statSeries {
	gauge, counter := prometheus.GaugeValue, prometheus.CounterValue
	row := func(name, help string, typ prometheus.ValueType, v func(sched.Stats) float64) statSeries {
		return statSeries{prometheus.NewDesc(metricPrefix+name, help, nil, nil), typ, v}
	}
	return []statSeries{
		row("num_running_reqs", "The number of running requests (a request being prefilled in chunks included).", gauge,
			func(st sched.Stats) float64 { return float64(st.Running) }),
		row("num_queue_reqs", "The number of requests in the waiting queue.", gauge,
			func(st sched.Stats) float64 { return float64(st.Waiting) }),
		row("num_used_tokens", "The number of KV cache tokens in use (prefix cache included).", gauge,
			func(st sched.Stats) float64 { return float64(st.KVUsedTokens) }),
		row("max_total_num_tokens", "The KV cache pool's size in tokens.", gauge,
			func(st sched.Stats) float64 { return float64(st.KVTotalTokens) }),
		row("token_usage", "The fraction of the KV cache pool in use, 0..1.", gauge,
			func(st sched.Stats) float64 { return st.TokenUsage() }),
		row("cached_tokens", "The number of tokens held by the prefix cache (glmbench's own).", gauge,
			func(st sched.Stats) float64 { return float64(st.CachedTokens) }),
		row("new_token_ratio", "The scheduler's estimate of future decode tokens per requested token.", gauge,
			func(st sched.Stats) float64 { return st.NewTokenRatio }),
		row("cache_hit_rate", "The prefix cache hit rate since start: prompt tokens found cached over those looked up, 0..1.", gauge,
			cacheHitRate),
		row("spec_accept_length", "The mean tokens a speculative verify step emitted per request since start, 1 + accepted/steps (0 without speculative decoding).", gauge,
			func(st sched.Stats) float64 { return st.AcceptLength() }),
		row("spec_accept_rate", "The fraction of draft tokens accepted since start (0 without speculative decoding).", gauge,
			acceptRate),
		// SGLang's counter of retracted requests: one per retraction of a
		// request (its gauge num_retracted_reqs is per log interval).
		row("num_retracted_requests_total", "Requests retracted because decoding ran out of KV cache.", counter,
			func(st sched.Stats) float64 { return float64(st.Retractions) }),
		// vLLM's prefix cache counters, in tokens, counted at a request's
		// first admission (a retracted request is not counted again).
		row("prefix_cache_queries_total", "Prompt tokens looked up in the prefix cache.", counter,
			func(st sched.Stats) float64 { return float64(st.PrefixQueried) }),
		row("prefix_cache_hits_total", "Prompt tokens found in the prefix cache.", counter,
			func(st sched.Stats) float64 { return float64(st.PrefixHit) }),
		// vLLM's speculative decoding counters: a draft is one verify step
		// of one request.
		row("spec_decode_num_drafts_total", "Speculative verify steps, one per request per step.", counter,
			func(st sched.Stats) float64 { return float64(st.SpecSteps) }),
		row("spec_decode_num_draft_tokens_total", "Draft tokens proposed for verification.", counter,
			func(st sched.Stats) float64 { return float64(st.SpecDrafted) }),
		row("spec_decode_num_accepted_tokens_total", "Draft tokens the main model accepted.", counter,
			func(st sched.Stats) float64 { return float64(st.SpecAccepted) }),
	}
}()

// statsCollector is the Collector of statSeriesTable: each scrape reads one
// Stats snapshot, so its gauges agree with each other.
type statsCollector struct{ m *Metrics }

// Describe sends every series' description.
func (c statsCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, s := range statSeriesTable {
		ch <- s.desc
	}
}

// Collect sends every series' value from the bound scheduler's Stats, and
// nothing before a server binds one.
func (c statsCollector) Collect(ch chan<- prometheus.Metric) {
	src := c.m.stats.Load()
	if src == nil {
		return
	}
	st := (*src)()
	for _, s := range statSeriesTable {
		ch <- prometheus.MustNewConstMetric(s.desc, s.typ, s.value(st))
	}
}
