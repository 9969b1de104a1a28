package server

import (
	"bytes"
	"context"
	"math"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/glmbench/glmbench/engine/sched"
)

// scrape reads /metrics and parses it with expfmt's text parser, the
// scraper's own, failing on any parse error.
func (e *env) scrape() map[string]*dto.MetricFamily {
	e.t.Helper()
	resp := e.open(context.Background(), http.MethodGet, "/metrics", nil)
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		e.t.Fatalf("/metrics: status %d", resp.StatusCode)
	}
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/plain; version=0.0.4") {
		e.t.Fatalf("/metrics Content-Type %q, want the text format 0.0.4", ct)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		e.t.Fatalf("/metrics does not parse: %v", err)
	}
	return fams
}

// only returns the one metric of a family, checking its model_name label.
func only(t *testing.T, fams map[string]*dto.MetricFamily, name, modelName string) *dto.Metric {
	t.Helper()
	f := fams[name]
	if f == nil {
		t.Fatalf("no family %s", name)
	}
	if len(f.Metric) != 1 {
		t.Fatalf("%s has %d series, want 1", name, len(f.Metric))
	}
	m := f.Metric[0]
	if got := label(m, "model_name"); got != modelName {
		t.Errorf("%s model_name %q, want %q", name, got, modelName)
	}
	return m
}

func label(m *dto.Metric, name string) string {
	for _, l := range m.Label {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}

// value is a one-series gauge's or counter's value.
func value(t *testing.T, fams map[string]*dto.MetricFamily, name string) float64 {
	t.Helper()
	m := only(t, fams, name, "glmbench-nano")
	switch {
	case m.Gauge != nil:
		return m.Gauge.GetValue()
	case m.Counter != nil:
		return m.Counter.GetValue()
	}
	t.Fatalf("%s is neither a gauge nor a counter", name)
	return 0
}

// checkHistogram checks a histogram's shape as the text parser reads it:
// its bounds are want then +Inf, in increasing order, its counts cumulative
// and the +Inf bucket's its count; it returns the histogram.
func checkHistogram(t *testing.T, fams map[string]*dto.MetricFamily, name string, want []float64) *dto.Histogram {
	t.Helper()
	h := only(t, fams, name, "glmbench-nano").GetHistogram()
	if h == nil {
		t.Fatalf("%s is not a histogram", name)
	}
	var bounds []float64
	var prev uint64
	for i, b := range h.Bucket {
		bounds = append(bounds, b.GetUpperBound())
		if i > 0 && b.GetUpperBound() <= h.Bucket[i-1].GetUpperBound() {
			t.Errorf("%s: bucket le=%v follows le=%v", name, b.GetUpperBound(), h.Bucket[i-1].GetUpperBound())
		}
		if b.GetCumulativeCount() < prev {
			t.Errorf("%s: bucket le=%v counts %d, below the previous %d: not cumulative", name, b.GetUpperBound(), b.GetCumulativeCount(), prev)
		}
		prev = b.GetCumulativeCount()
	}
	if prev != h.GetSampleCount() {
		t.Errorf("%s: the +Inf bucket counts %d, the count is %d", name, prev, h.GetSampleCount())
	}
	if !slices.Equal(bounds, append(slices.Clone(want), math.Inf(1))) {
		t.Errorf("%s bounds %v, want %v", name, bounds, want)
	}
	return h
}

// completionUsage is a completion's usage with the cached prompt tokens.
type completionUsage struct {
	Usage struct {
		PromptTokens        int `json:"prompt_tokens"`
		CompletionTokens    int `json:"completion_tokens"`
		PromptTokensDetails struct {
			CachedTokens int `json:"cached_tokens"`
		} `json:"prompt_tokens_details"`
	} `json:"usage"`
}

// idleStats waits until the scheduler has nothing running or waiting and
// returns its Stats.
func (e *env) idleStats(t *testing.T) sched.Stats {
	t.Helper()
	waitFor(t, "an idle scheduler", func() bool { st := e.sched.Stats(); return st.Running == 0 && st.Waiting == 0 })
	return e.sched.Stats()
}

func TestMetricsCountEveryRequestExactly(t *testing.T) {
	e := newEnv(t, envConfig{})
	// Five requests of known output lengths; the last repeats the first's
	// prompt, so the prefix cache serves part of it.
	reqs := []struct {
		prompt string
		max    int
	}{
		{"the quick brown fox jumps over the lazy dog", 3},
		{"hello", 1},
		{"a somewhat longer prompt about the weather in the mountains", 5},
		{"x", 2},
		{"the quick brown fox jumps over the lazy dog", 4},
	}
	var prompt, gen, cached, itl int
	for _, r := range reqs {
		code, _, b := e.post("/v1/completions", map[string]any{
			"model": "glmbench-nano", "prompt": r.prompt, "max_tokens": r.max, "ignore_eos": true})
		if code != 200 {
			t.Fatalf("completion: %d %s", code, b)
		}
		u := decode[completionUsage](t, b).Usage
		if u.CompletionTokens != r.max {
			t.Fatalf("completion_tokens %d, want %d (ignore_eos)", u.CompletionTokens, r.max)
		}
		prompt += u.PromptTokens
		gen += u.CompletionTokens
		cached += u.PromptTokensDetails.CachedTokens
		itl += r.max - 1 // every token after the first has a gap
	}
	if cached == 0 {
		t.Fatal("the repeated prompt found nothing cached: the test cannot check the hit counter")
	}
	st := e.idleStats(t)
	fams := e.scrape()
	n := len(reqs)

	counters := []struct {
		name string
		want int
	}{
		{"glmbench:num_requests_total", n},
		{"glmbench:prompt_tokens_total", prompt},
		{"glmbench:generation_tokens_total", gen},
		{"glmbench:prefix_cache_queries_total", prompt}, // each prompt admitted once, none retracted
		{"glmbench:prefix_cache_hits_total", cached},
		{"glmbench:num_retracted_requests_total", 0},
		{"glmbench:spec_decode_num_drafts_total", 0},
	}
	for _, c := range counters {
		if got := value(t, fams, c.name); got != float64(c.want) {
			t.Errorf("%s = %v, want %d", c.name, got, c.want)
		}
	}
	if got, want := value(t, fams, "glmbench:cache_hit_rate"), float64(cached)/float64(prompt); got != want {
		t.Errorf("cache_hit_rate %v, want %d/%d = %v", got, cached, prompt, want)
	}

	ttft := checkHistogram(t, fams, "glmbench:time_to_first_token_seconds", ttftBuckets)
	if ttft.GetSampleCount() != uint64(n) {
		t.Errorf("TTFT count %d, want %d", ttft.GetSampleCount(), n)
	}
	if h := checkHistogram(t, fams, "glmbench:inter_token_latency_seconds", itlBuckets); h.GetSampleCount() != uint64(itl) {
		t.Errorf("ITL count %d, want %d", h.GetSampleCount(), itl)
	}
	// A non-streamed response's end to end time is recorded before its body is written.
	if h := checkHistogram(t, fams, "glmbench:e2e_request_latency_seconds", e2eBuckets); h.GetSampleCount() != uint64(n) {
		t.Errorf("e2e count %d, want %d", h.GetSampleCount(), n)
	}
	if h := checkHistogram(t, fams, "glmbench:spec_accept_length_per_step", acceptBuckets); h.GetSampleCount() != 0 {
		t.Errorf("accept length count %d without speculative decoding, want 0", h.GetSampleCount())
	}
	if after := e.sched.Stats(); after != st {
		t.Fatalf("Stats moved while idle: %+v then %+v", st, after)
	}
	gauges := []struct {
		name string
		want float64
	}{
		{"glmbench:num_running_reqs", float64(st.Running)},
		{"glmbench:num_queue_reqs", float64(st.Waiting)},
		{"glmbench:num_used_tokens", float64(st.KVUsedTokens)},
		{"glmbench:max_total_num_tokens", testPool},
		{"glmbench:token_usage", st.TokenUsage()},
		{"glmbench:cached_tokens", float64(st.CachedTokens)},
		{"glmbench:new_token_ratio", st.NewTokenRatio},
		{"glmbench:spec_accept_length", 0},
		{"glmbench:spec_accept_rate", 0},
	}
	for _, g := range gauges {
		if got := value(t, fams, g.name); got != g.want {
			t.Errorf("%s = %v, want %v (Stats)", g.name, got, g.want)
		}
	}
	if st.CachedTokens == 0 || st.KVUsedTokens == 0 {
		t.Errorf("Stats %+v: the prefix cache should hold the finished prompts", st)
	}

	// /get_server_info gives the same hit rate, and no accept length
	// without a verify step (SGLang omits it without speculative decoding).
	c, b := e.get("/get_server_info")
	info := decode[struct {
		States []map[string]any `json:"internal_states"`
	}](t, b)
	if c != 200 || len(info.States) != 1 {
		t.Fatalf("/get_server_info: %d %s", c, b)
	}
	if got := info.States[0]["cache_hit_rate"]; got != float64(cached)/float64(prompt) {
		t.Errorf("/get_server_info cache_hit_rate %v, want %v", got, float64(cached)/float64(prompt))
	}
	if got, ok := info.States[0]["avg_spec_accept_length"]; !ok || got != nil {
		t.Errorf("/get_server_info avg_spec_accept_length %v (present %v), want null", got, ok)
	}
}

func TestMetricsExpositionHasEveryFamilyWithItsType(t *testing.T) {
	e := newEnv(t, envConfig{})
	fams := e.scrape()
	want := map[string]dto.MetricType{
		"glmbench:num_running_reqs":                      dto.MetricType_GAUGE,
		"glmbench:num_queue_reqs":                        dto.MetricType_GAUGE,
		"glmbench:num_used_tokens":                       dto.MetricType_GAUGE,
		"glmbench:max_total_num_tokens":                  dto.MetricType_GAUGE,
		"glmbench:token_usage":                           dto.MetricType_GAUGE,
		"glmbench:cached_tokens":                         dto.MetricType_GAUGE,
		"glmbench:new_token_ratio":                       dto.MetricType_GAUGE,
		"glmbench:cache_hit_rate":                        dto.MetricType_GAUGE,
		"glmbench:spec_accept_length":                    dto.MetricType_GAUGE,
		"glmbench:spec_accept_rate":                      dto.MetricType_GAUGE,
		"glmbench:num_retracted_requests_total":          dto.MetricType_COUNTER,
		"glmbench:prefix_cache_queries_total":            dto.MetricType_COUNTER,
		"glmbench:prefix_cache_hits_total":               dto.MetricType_COUNTER,
		"glmbench:spec_decode_num_drafts_total":          dto.MetricType_COUNTER,
		"glmbench:spec_decode_num_draft_tokens_total":    dto.MetricType_COUNTER,
		"glmbench:spec_decode_num_accepted_tokens_total": dto.MetricType_COUNTER,
		"glmbench:prompt_tokens_total":                   dto.MetricType_COUNTER,
		"glmbench:generation_tokens_total":               dto.MetricType_COUNTER,
		"glmbench:num_requests_total":                    dto.MetricType_COUNTER,
		"glmbench:num_rejected_requests_total":           dto.MetricType_COUNTER,
		"glmbench:time_to_first_token_seconds":           dto.MetricType_HISTOGRAM,
		"glmbench:inter_token_latency_seconds":           dto.MetricType_HISTOGRAM,
		"glmbench:e2e_request_latency_seconds":           dto.MetricType_HISTOGRAM,
		"glmbench:spec_accept_length_per_step":           dto.MetricType_HISTOGRAM,
	}
	for name, typ := range want {
		f := fams[name]
		if f == nil {
			t.Errorf("/metrics lacks %s", name)
			continue
		}
		if f.GetType() != typ || f.GetHelp() == "" {
			t.Errorf("%s: type %v help %q, want %v with a help text", name, f.GetType(), f.GetHelp(), typ)
		}
		for _, m := range f.Metric {
			if label(m, "model_name") != "glmbench-nano" {
				t.Errorf("%s series %v lacks model_name=glmbench-nano", name, m.Label)
			}
		}
	}
	for name := range fams {
		if _, ok := want[name]; !ok {
			t.Errorf("/metrics has %s, which this test does not know (no process or Go collectors)", name)
		}
	}
	// Rejections show the three standing reasons from the start, at 0.
	var reasons []string
	for _, m := range fams["glmbench:num_rejected_requests_total"].Metric {
		reasons = append(reasons, label(m, "reason"))
		if m.Counter.GetValue() != 0 {
			t.Errorf("rejections %s = %v before any request, want 0", label(m, "reason"), m.Counter.GetValue())
		}
	}
	if !slices.Equal(reasons, rejectReasons) {
		t.Errorf("rejection reasons %v, want %v", reasons, rejectReasons)
	}
}

func TestTwoEnginesKeepSeparateMetrics(t *testing.T) {
	a := newEnv(t, envConfig{})
	b := newEnv(t, envConfig{opts: Options{ModelName: "other"}})
	for range 3 {
		a.complete(map[string]any{"prompt": "hi", "max_tokens": 2, "ignore_eos": true})
	}
	b.complete(map[string]any{"model": "other", "prompt": "hello there", "max_tokens": 1, "ignore_eos": true})
	b.metrics.Verified(3, 2)

	fa, fb := a.scrape(), b.scrape()
	if got := value(t, fa, "glmbench:num_requests_total"); got != 3 {
		t.Errorf("engine a counts %v requests, want its own 3", got)
	}
	if got := only(t, fb, "glmbench:num_requests_total", "other").Counter.GetValue(); got != 1 {
		t.Errorf("engine b counts %v requests, want its own 1", got)
	}
	if got := value(t, fa, "glmbench:generation_tokens_total"); got != 6 {
		t.Errorf("engine a counts %v generated tokens, want 6", got)
	}
	if got := only(t, fb, "glmbench:generation_tokens_total", "other").Counter.GetValue(); got != 1 {
		t.Errorf("engine b counts %v generated tokens, want 1", got)
	}
	if got := only(t, fa, "glmbench:spec_accept_length_per_step", "glmbench-nano").Histogram.GetSampleCount(); got != 0 {
		t.Errorf("engine a's accept-length histogram counts %d steps of engine b's", got)
	}
	if got := only(t, fb, "glmbench:spec_accept_length_per_step", "other").Histogram.GetSampleCount(); got != 1 {
		t.Errorf("engine b's accept-length histogram counts %d steps, want 1", got)
	}
	if a.metrics.Gatherer() == b.metrics.Gatherer() {
		t.Error("two engines share a registry")
	}
}

func TestVerifiedMovesTheAcceptLengthHistogram(t *testing.T) {
	m := NewMetrics()
	// Three steps of 4 drafts: 3, 0 and 4 accepted emit 4, 1 and 5 tokens.
	m.Verified(4, 3)
	m.Verified(4, 0)
	m.Verified(4, 4)
	fams, err := m.Gatherer().Gather()
	if err != nil {
		t.Fatal(err)
	}
	var h *dto.Histogram
	for _, f := range fams {
		if f.GetName() == "glmbench:spec_accept_length_per_step" {
			h = f.Metric[0].GetHistogram()
			if got := label(f.Metric[0], "model_name"); got != "glmbench" {
				t.Errorf("model_name %q before a server names the model, want glmbench", got)
			}
		}
	}
	if h == nil {
		t.Fatal("no accept-length histogram")
	}
	if h.GetSampleCount() != 3 || h.GetSampleSum() != 10 {
		t.Errorf("count %d sum %v, want 3 steps emitting 4+1+5 = 10 tokens", h.GetSampleCount(), h.GetSampleSum())
	}
	want := map[float64]uint64{1: 1, 2: 1, 3: 1, 4: 2, 5: 3, 16: 3}
	for _, b := range h.Bucket {
		if w, ok := want[b.GetUpperBound()]; ok && b.GetCumulativeCount() != w {
			t.Errorf("bucket le=%v counts %d, want %d", b.GetUpperBound(), b.GetCumulativeCount(), w)
		}
	}
}

func TestStatsSeriesFollowTheScheduler(t *testing.T) {
	m := NewMetrics()
	st := sched.Stats{
		Waiting: 2, Running: 5, KVUsedTokens: 300, KVTotalTokens: 1200, CachedTokens: 64, Retractions: 7,
		NewTokenRatio: 0.35, PrefixQueried: 400, PrefixHit: 100, SpecSteps: 8, SpecDrafted: 24, SpecAccepted: 12,
	}
	m.bind(func() sched.Stats { return st })
	fams, err := m.Gatherer().Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, f := range fams {
		if m := f.Metric[0]; m.Gauge != nil {
			got[f.GetName()] = m.Gauge.GetValue()
		} else if m.Counter != nil && f.GetName() != "glmbench:num_rejected_requests_total" {
			got[f.GetName()] = m.Counter.GetValue()
		}
	}
	want := map[string]float64{
		"glmbench:num_running_reqs":     5,
		"glmbench:num_queue_reqs":       2,
		"glmbench:num_used_tokens":      300,
		"glmbench:max_total_num_tokens": 1200,
		"glmbench:token_usage":          0.25,
		"glmbench:cached_tokens":        64,
		"glmbench:new_token_ratio":      0.35,
		"glmbench:cache_hit_rate":       0.25, // 100 of 400
		"glmbench:spec_accept_length":   2.5,  // 1 + 12/8
		"glmbench:spec_accept_rate":     0.5,  // 12 of 24
		// The scheduler's counters, as Stats has them.
		"glmbench:num_retracted_requests_total":          7,
		"glmbench:prefix_cache_queries_total":            400,
		"glmbench:prefix_cache_hits_total":               100,
		"glmbench:spec_decode_num_drafts_total":          8,
		"glmbench:spec_decode_num_draft_tokens_total":    24,
		"glmbench:spec_decode_num_accepted_tokens_total": 12,
		// The observer's, untouched here.
		"glmbench:prompt_tokens_total":     0,
		"glmbench:generation_tokens_total": 0,
		"glmbench:num_requests_total":      0,
	}
	for name, w := range want {
		if g, ok := got[name]; !ok || g != w {
			t.Errorf("%s = %v (present %v), want %v", name, g, ok, w)
		}
	}
	if len(got) != len(want) {
		t.Errorf("%d gauges and counters, want %d: %v", len(got), len(want), got)
	}
	// An idle scheduler with no lookups has a hit rate of 0, not NaN.
	st = sched.Stats{KVTotalTokens: 10}
	fams, _ = m.Gatherer().Gather()
	for _, f := range fams {
		if f.GetName() == "glmbench:cache_hit_rate" && f.Metric[0].Gauge.GetValue() != 0 {
			t.Errorf("cache_hit_rate %v with nothing looked up, want 0", f.Metric[0].Gauge.GetValue())
		}
	}
}

// stallWriter is a ResponseWriter whose first Write waits until release
// is closed: a scrape stalled while writing out.
type stallWriter struct {
	httptest.ResponseRecorder
	once    sync.Once
	writing chan struct{}
	release chan struct{}
}

func (w *stallWriter) Write(b []byte) (int, error) {
	w.once.Do(func() { close(w.writing) })
	<-w.release
	return w.ResponseRecorder.Write(b)
}

func TestAStalledScrapeDoesNotBlockTheScheduler(t *testing.T) {
	e := newEnv(t, envConfig{})
	w := &stallWriter{ResponseRecorder: *httptest.NewRecorder(), writing: make(chan struct{}), release: make(chan struct{})}
	scraped := make(chan struct{})
	go func() {
		defer close(scraped)
		e.srv.Handler().ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	}()
	<-w.writing
	// The scrape is stuck writing; a request (the scheduler records its
	// tokens) and a verify step must go through meanwhile.
	done := make(chan completionResult, 1)
	go func() {
		done <- e.complete(map[string]any{"prompt": "while scraping", "max_tokens": 3, "ignore_eos": true})
		e.metrics.Verified(2, 1)
	}()
	select {
	case r := <-done:
		if r.Usage.CompletionTokens != 3 {
			t.Errorf("completion_tokens %d, want 3", r.Usage.CompletionTokens)
		}
	case <-time.After(10 * time.Second):
		close(w.release)
		t.Fatal("a request waited on a stalled scrape")
	}
	close(w.release)
	<-scraped
	// The stalled scrape saw the state before the request; a new one sees it.
	if !bytes.Contains(w.Body.Bytes(), []byte(`glmbench:num_requests_total{model_name="glmbench-nano"} 0`)) {
		t.Errorf("the stalled scrape should show no finished request:\n%s", w.Body.Bytes())
	}
	fams := e.scrape()
	if got := value(t, fams, "glmbench:num_requests_total"); got != 1 {
		t.Errorf("num_requests_total %v after the request, want 1", got)
	}
	if got := only(t, fams, "glmbench:spec_accept_length_per_step", "glmbench-nano").Histogram.GetSampleSum(); got != 2 {
		t.Errorf("accept length sum %v, want 2 (1 accepted + 1)", got)
	}
}

func TestScrapesDuringLoadSeeCountersOnlyGrow(t *testing.T) {
	e := newEnv(t, envConfig{sched: sched.Config{MaxRunningRequests: 4}})
	const n, maxTokens = 8, 4
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			e.complete(map[string]any{"prompt": strings.Repeat("load ", i+1), "max_tokens": maxTokens, "ignore_eos": true})
		}()
	}
	loaded := make(chan struct{})
	go func() { wg.Wait(); close(loaded) }()
	names := []string{"glmbench:num_requests_total", "glmbench:generation_tokens_total", "glmbench:prefix_cache_queries_total"}
	last := map[string]float64{}
	for scrapes := 0; ; scrapes++ {
		fams := e.scrape()
		for _, name := range names {
			v := value(t, fams, name)
			if v < last[name] {
				t.Errorf("scrape %d: %s went down from %v to %v", scrapes, name, last[name], v)
			}
			last[name] = v
		}
		// The prompts are far below the chunk size, so none is chunked
		// and running requests stay within the cap.
		if g := value(t, fams, "glmbench:num_running_reqs"); g > 4 {
			t.Errorf("scrape %d: %v running, above max_running_requests 4", scrapes, g)
		}
		select {
		case <-loaded:
			fams := e.scrape()
			if got := value(t, fams, "glmbench:num_requests_total"); got != n {
				t.Errorf("num_requests_total %v after the load, want %d", got, n)
			}
			if got := value(t, fams, "glmbench:generation_tokens_total"); got != n*maxTokens {
				t.Errorf("generation_tokens_total %v after the load, want %d", got, n*maxTokens)
			}
			return
		default:
		}
	}
}
