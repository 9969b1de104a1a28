package server

import (
	"bytes"
	"fmt"
	"net/http"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

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
)

// Metrics collects the engine's Prometheus series. It implements
// sched.Observer, so it must exist before the scheduler: build it with
// NewMetrics, pass it to sched.New, then to New. Gauges (queue, running,
// KV use) are read from the scheduler's Stats at scrape time.
//
// The series live in this value alone, never in a global registry, and are
// written in the Prometheus text format (0.0.4) by this package: the
// client_golang module is required in go.mod, but its own dependencies
// are not in go.sum, so importing it would not build.
type Metrics struct {
	mu           sync.Mutex
	model        string
	ttft, itl    histogram
	e2e          histogram
	promptTokens uint64
	genTokens    uint64
	requests     uint64
	rejections   map[string]uint64
}

// NewMetrics returns empty metrics.
func NewMetrics() *Metrics {
	return &Metrics{
		ttft: newHistogram(ttftBuckets), itl: newHistogram(itlBuckets), e2e: newHistogram(e2eBuckets),
		rejections: map[string]uint64{},
	}
}

var _ sched.Observer = (*Metrics)(nil)

// FirstToken records a time to first token (from Submit to the first
// sampled token); the scheduler calls it.
func (m *Metrics) FirstToken(ttft time.Duration) {
	m.mu.Lock()
	m.ttft.observe(ttft.Seconds())
	m.mu.Unlock()
}

// InterToken records the gap between two tokens of a request.
func (m *Metrics) InterToken(gap time.Duration) {
	m.mu.Lock()
	m.itl.observe(gap.Seconds())
	m.mu.Unlock()
}

// Tokens records a finished request's prompt and generated tokens.
func (m *Metrics) Tokens(prompt, generated int) {
	m.mu.Lock()
	m.promptTokens += uint64(prompt)
	m.genTokens += uint64(generated)
	m.requests++
	m.mu.Unlock()
}

// Verified records a speculative verify step (exposed from issue 16's
// exposition on).
func (m *Metrics) Verified(drafted, accepted int) {}

func (m *Metrics) observeE2E(d time.Duration) {
	m.mu.Lock()
	m.e2e.observe(d.Seconds())
	m.mu.Unlock()
}

// rejected counts a request refused before generation, by reason
// (rate_limit, queue_full, unavailable).
func (m *Metrics) rejected(reason string) {
	m.mu.Lock()
	m.rejections[reason]++
	m.mu.Unlock()
}

func (m *Metrics) setModel(name string) {
	m.mu.Lock()
	m.model = name
	m.mu.Unlock()
}

// handleMetrics serves GET /metrics.
func (s *Server) handleMetrics(w http.ResponseWriter, r *http.Request) {
	var buf bytes.Buffer
	s.metrics.write(&buf, s.sched.Stats())
	w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
	w.Header().Set("Content-Length", strconv.Itoa(buf.Len()))
	w.WriteHeader(http.StatusOK)
	w.Write(buf.Bytes())
}

// write renders every series in the Prometheus text format.
func (m *Metrics) write(b *bytes.Buffer, st sched.Stats) {
	// Copy under the lock and format outside it: the scheduler's goroutine
	// takes the same lock to record a token, and must not wait on a scrape.
	m.mu.Lock()
	snap := Metrics{model: m.model, ttft: m.ttft.clone(), itl: m.itl.clone(), e2e: m.e2e.clone(),
		promptTokens: m.promptTokens, genTokens: m.genTokens, requests: m.requests, rejections: map[string]uint64{}}
	for k, v := range m.rejections {
		snap.rejections[k] = v
	}
	m.mu.Unlock()
	m = &snap
	lbl := `model_name="` + escapeLabel(m.model) + `"`
	// series writes a one-sample family of type typ.
	series := func(typ string) func(name, help string, v float64) {
		return func(name, help string, v float64) {
			full := metricPrefix + name
			fmt.Fprintf(b, "# HELP %s %s\n# TYPE %s %s\n%s{%s} %s\n", full, help, full, typ, full, lbl, num(v))
		}
	}
	gauge, counter := series("gauge"), series("counter")
	gauge("num_running_reqs", "The number of running requests.", float64(st.Running))
	gauge("num_queue_reqs", "The number of requests in the waiting queue.", float64(st.Waiting))
	gauge("num_used_tokens", "The number of KV cache tokens in use (prefix cache included).", float64(st.KVUsedTokens))
	gauge("max_total_num_tokens", "The KV cache pool's size in tokens.", float64(st.KVTotalTokens))
	gauge("token_usage", "The fraction of the KV cache pool in use.", st.TokenUsage())
	gauge("cached_tokens", "The number of tokens held by the prefix cache.", float64(st.CachedTokens))
	gauge("new_token_ratio", "The scheduler's estimate of future decode tokens per requested token.", st.NewTokenRatio)
	counter("num_retractions_total", "Requests retracted because decoding ran out of KV cache.", float64(st.Retractions))
	counter("prompt_tokens_total", "Prompt tokens of finished requests.", float64(m.promptTokens))
	counter("generation_tokens_total", "Generated tokens of finished requests.", float64(m.genTokens))
	counter("num_requests_total", "Finished requests.", float64(m.requests))

	fmt.Fprintf(b, "# HELP %snum_rejected_requests_total Requests refused before generation, by reason.\n# TYPE %snum_rejected_requests_total counter\n", metricPrefix, metricPrefix)
	reasons := []string{"queue_full", "rate_limit", "unavailable"}
	for r := range m.rejections {
		if !slices.Contains(reasons, r) {
			reasons = append(reasons, r)
		}
	}
	sort.Strings(reasons)
	for _, r := range reasons {
		fmt.Fprintf(b, "%snum_rejected_requests_total{%s,reason=\"%s\"} %d\n", metricPrefix, lbl, escapeLabel(r), m.rejections[r])
	}

	m.ttft.write(b, "time_to_first_token_seconds", "Time from arrival to the first generated token, seconds.", lbl)
	m.itl.write(b, "inter_token_latency_seconds", "Time between two generated tokens of a request, seconds.", lbl)
	m.e2e.write(b, "e2e_request_latency_seconds", "Time from arrival to the end of a successful response, seconds.", lbl)
}

// histogram is a Prometheus histogram: counts per bucket (not cumulative
// until written), their sum and count. Its owner locks it.
type histogram struct {
	bounds []float64
	counts []uint64
	sum    float64
	count  uint64
}

func newHistogram(bounds []float64) histogram {
	return histogram{bounds: bounds, counts: make([]uint64, len(bounds))}
}

func (h histogram) clone() histogram {
	h.counts = append([]uint64(nil), h.counts...)
	return h
}

func (h *histogram) observe(v float64) {
	i := sort.SearchFloat64s(h.bounds, v) // first bound ≥ v: Prometheus buckets are le
	if i < len(h.counts) {
		h.counts[i]++
	}
	h.sum += v
	h.count++
}

func (h *histogram) write(b *bytes.Buffer, name, help, lbl string) {
	full := metricPrefix + name
	fmt.Fprintf(b, "# HELP %s %s\n# TYPE %s histogram\n", full, help, full)
	var cum uint64
	for i, bound := range h.bounds {
		cum += h.counts[i]
		fmt.Fprintf(b, "%s_bucket{%s,le=\"%s\"} %d\n", full, lbl, num(bound), cum)
	}
	fmt.Fprintf(b, "%s_bucket{%s,le=\"+Inf\"} %d\n", full, lbl, h.count)
	fmt.Fprintf(b, "%s_sum{%s} %s\n", full, lbl, num(h.sum))
	fmt.Fprintf(b, "%s_count{%s} %d\n", full, lbl, h.count)
}

func num(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }

// escapeLabel escapes a label value as the text format asks.
func escapeLabel(s string) string {
	return strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`).Replace(s)
}
