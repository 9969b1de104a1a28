package scrape

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/glmbench/glmbench/reports/schema"
)

const (
	ctText = "text/plain; version=0.0.4; charset=utf-8"
	ctOM   = "application/openmetrics-text; version=1.0.0; charset=utf-8"
)

// cum returns the running sums of xs: the cumulative bucket counts of a
// histogram whose per-bucket counts are xs.
func cum(xs ...float64) []float64 {
	out := make([]float64, len(xs))
	t := 0.0
	for i, x := range xs {
		t += x
		out[i] = t
	}
	return out
}

// The testdata files are exposition samples written for these tests from
// each server's documented format (names, types, labels and HELP lines of
// the sources in Table; values chosen here). Each maps to exactly the
// values written: counters and gauges summed over label sets (fractions
// averaged), histograms merged by bound across label sets, and nothing for
// the series the table does not read (SGLang's num_retracted_reqs gauge,
// vLLM's request_time_per_output_token_seconds and its deprecated
// time_per_output_token_seconds beside inter_token_latency_seconds).
var parseCases = []struct {
	name, file, contentType string
	source                  string
	values                  map[string]float64
	hists                   map[string]schema.Histogram
}{
	{"sglang sums two dp ranks' counts and averages their fractions", "sglang.prom", ctText, SGLang,
		map[string]float64{
			schema.SrvRunning: 21, schema.SrvQueued: 7, schema.SrvKVUsage: 0.5, schema.SrvCacheHitRate: 0.3,
			schema.SrvAcceptLength: 3, schema.SrvPreemptions: 7,
			schema.SrvPromptTokens: 123456, schema.SrvPrefixQueried: 123456, schema.SrvPrefixHit: 61728,
			schema.SrvGenerationTokens: 654321, schema.SrvRequests: 1000,
		},
		map[string]schema.Histogram{
			schema.SrvTTFT: {LE: []float64{0.1, 0.2, 0.4, 0.6, 0.8, 1, 2, 4, 6, 8, 10, 20, 40, 60, 80, 100, 200, 400},
				Counts: cum(120, 310, 260, 150, 80, 50, 25, 5, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0), Sum: 412.75, Count: 1000},
			schema.SrvITL: {LE: []float64{0.002, 0.004, 0.006, 0.008, 0.010, 0.015, 0.020, 0.025, 0.030, 0.035, 0.040, 0.060, 0.080, 0.100, 0.200, 0.400, 0.600, 0.800, 1, 2, 4, 6, 8},
				Counts: cum(0, 0, 0, 0, 1200, 98000, 301000, 172000, 52000, 17000, 8000, 3000, 800, 200, 100, 21, 0, 0, 0, 0, 0, 0, 0), Sum: 12790.5, Count: 653321},
			schema.SrvE2E: {LE: []float64{0.1, 0.2, 0.4, 0.6, 0.8, 1, 2, 4, 6, 8, 10, 20, 40, 60, 80, 100, 200, 400, 600, 1200, 1800, 2400},
				Counts: cum(0, 0, 0, 0, 0, 0, 10, 40, 150, 300, 280, 200, 20, 0, 0, 0, 0, 0, 0, 0, 0, 0), Sum: 8934.5, Count: 1000},
		}},
	{"vllm sums two engines, reads inter_token_latency over its deprecated twin", "vllm.prom", ctText, VLLM,
		map[string]float64{
			schema.SrvRunning: 14, schema.SrvQueued: 3, schema.SrvKVUsage: 0.4,
			schema.SrvPrefixQueried: 90000, schema.SrvPrefixHit: 30000, schema.SrvPreemptions: 5,
			schema.SrvPromptTokens: 90000, schema.SrvGenerationTokens: 220000, schema.SrvRequests: 802,
			schema.SrvSpecSteps: 18000, schema.SrvSpecDrafted: 54000, schema.SrvSpecAccepted: 36000,
		},
		map[string]schema.Histogram{
			schema.SrvTTFT: {LE: []float64{0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10, 20, 40, 80, 160, 640, 2560},
				Counts: cum(0, 0, 0, 4, 70, 150, 170, 195, 184, 22, 7, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0), Sum: 84.75, Count: 802},
			schema.SrvITL: {LE: []float64{0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1, 2.5, 5, 7.5, 10, 20, 40, 80},
				Counts: cum(1800, 112000, 88000, 12500, 3800, 880, 70, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0), Sum: 5940, Count: 219050},
			schema.SrvE2E: {LE: []float64{0.3, 0.5, 0.8, 1, 1.5, 2, 2.5, 5, 10, 15, 20, 30, 40, 50, 60, 120, 240, 480, 960, 1920, 7680},
				Counts: cum(0, 0, 0, 0, 0, 0, 3, 70, 370, 280, 77, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0), Sum: 7900.5, Count: 802},
		}},
	{"llama.cpp adds cached prompt tokens to evaluated ones", "llamacpp.prom", ctText, LlamaCpp,
		map[string]float64{
			schema.SrvRunning: 4, schema.SrvQueued: 2,
			schema.SrvPromptTokens: 10000, schema.SrvPrefixQueried: 10000, schema.SrvPrefixHit: 2000,
			schema.SrvGenerationTokens: 24000,
			schema.SrvSpecSteps:        1600, schema.SrvSpecDrafted: 6400, schema.SrvSpecAccepted: 4800,
		}, nil},
	{"an older llama.cpp build's kv_cache_usage_ratio is its KV usage", "llamacpp_old.prom", ctText, LlamaCpp,
		map[string]float64{
			schema.SrvRunning: 1, schema.SrvQueued: 0, schema.SrvKVUsage: 0.25,
			schema.SrvPromptTokens: 5000, schema.SrvPrefixQueried: 5000, schema.SrvGenerationTokens: 7000,
		}, nil},
	{"tgi's token counts are its per-request histograms' sums", "tgi.prom", "text/plain; charset=utf-8", TGI,
		map[string]float64{
			schema.SrvRunning: 5, schema.SrvQueued: 2, schema.SrvRequests: 42,
			schema.SrvPromptTokens: 8400, schema.SrvGenerationTokens: 10752,
		},
		map[string]schema.Histogram{
			schema.SrvITL: {LE: []float64{0.01, 0.015, 0.0225, 0.03375, 0.050625}, Counts: []float64{0, 6, 30, 41, 42}, Sum: 0.798, Count: 42},
			schema.SrvE2E: {LE: []float64{2.5, 3.75, 5.625, 8.4375}, Counts: []float64{0, 9, 33, 42}, Sum: 201.6, Count: 42},
		}},
	{"glmbench's engine as it writes today, retractions under its own name", "glmbench.prom", ctText, Glmbench,
		map[string]float64{
			schema.SrvRunning: 3, schema.SrvQueued: 1, schema.SrvKVUsage: 0.1875, schema.SrvPreemptions: 2,
			schema.SrvPromptTokens: 4096, schema.SrvPrefixQueried: 4096, schema.SrvGenerationTokens: 2048, schema.SrvRequests: 16,
		},
		map[string]schema.Histogram{
			schema.SrvTTFT: {LE: []float64{0.001, 0.0025, 0.005, 0.01, 0.025}, Counts: []float64{0, 2, 9, 15, 16}, Sum: 0.0712, Count: 16},
			schema.SrvITL:  {LE: []float64{0.0005, 0.001, 0.002}, Counts: []float64{100, 1500, 2032}, Sum: 1.6256, Count: 2032},
			schema.SrvE2E:  {LE: []float64{0.01, 0.05, 0.1, 0.2}, Counts: []float64{0, 0, 4, 16}, Sum: 2.08, Count: 16},
		}},
	{"sglang in OpenMetrics reads its counters by their _total samples", "sglang_openmetrics.txt", ctOM, SGLang,
		map[string]float64{
			schema.SrvRunning: 7, schema.SrvQueued: 0, schema.SrvKVUsage: 0.125,
			schema.SrvPromptTokens: 2048, schema.SrvPrefixQueried: 2048, schema.SrvGenerationTokens: 4096, schema.SrvRequests: 8,
		},
		map[string]schema.Histogram{
			schema.SrvTTFT: {LE: []float64{0.1, 0.2, 0.4}, Counts: []float64{2, 6, 8}, Sum: 1.25, Count: 8},
		}},
}

func TestParseMapsEachServersSampleToTheValuesWritten(t *testing.T) {
	for _, tc := range parseCases {
		t.Run(tc.name, func(t *testing.T) {
			body, err := os.ReadFile(filepath.Join("testdata", tc.file))
			if err != nil {
				t.Fatal(err)
			}
			s := Parse(body, tc.contentType)
			if s.Error != "" {
				t.Fatalf("error %q", s.Error)
			}
			if s.Source != tc.source {
				t.Errorf("source %q, want %q", s.Source, tc.source)
			}
			checkValues(t, s.Values, tc.values)
			checkHists(t, s.Hists, tc.hists)
			// The sample must encode as a line of metrics.jsonl: no NaN,
			// no +Inf bound.
			if _, err := json.Marshal(s); err != nil {
				t.Errorf("json: %v", err)
			}
		})
	}
}

func checkValues(t *testing.T, got, want map[string]float64) {
	t.Helper()
	for k, w := range want {
		g, ok := got[k]
		if !ok {
			t.Errorf("%s missing, want %v", k, w)
		} else if !near(g, w) {
			t.Errorf("%s = %v, want %v", k, g, w)
		}
	}
	for k, g := range got {
		if _, ok := want[k]; !ok {
			t.Errorf("%s = %v, not expected", k, g)
		}
	}
}

func checkHists(t *testing.T, got, want map[string]schema.Histogram) {
	t.Helper()
	for k, w := range want {
		g, ok := got[k]
		if !ok {
			t.Errorf("histogram %s missing", k)
			continue
		}
		if !nearAll(g.LE, w.LE) {
			t.Errorf("%s le %v, want %v", k, g.LE, w.LE)
		}
		if !nearAll(g.Counts, w.Counts) {
			t.Errorf("%s counts %v, want %v", k, g.Counts, w.Counts)
		}
		if !near(g.Sum, w.Sum) || !near(g.Count, w.Count) {
			t.Errorf("%s sum %v count %v, want %v %v", k, g.Sum, g.Count, w.Sum, w.Count)
		}
	}
	for k := range got {
		if _, ok := want[k]; !ok {
			t.Errorf("histogram %s not expected", k)
		}
	}
}

func near(a, b float64) bool { return math.Abs(a-b) <= 1e-9*math.Max(1, math.Abs(b)) }

func nearAll(a, b []float64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !near(a[i], b[i]) {
			return false
		}
	}
	return true
}

func TestParseFailuresAreErrorsNeverValues(t *testing.T) {
	cases := []struct {
		name, body, contentType, want string
	}{
		{"an HTML page is not an exposition", "<html><body>Not Found</body></html>", "text/html; charset=utf-8", "Content-Type"},
		{"JSON served as text does not parse", `{"error": "no metrics here"}`, "text/plain", "parse text"},
		{"an exposition of other series has none known", "# TYPE go_goroutines gauge\ngo_goroutines 12\n", ctText, "no known series"},
		{"a vllm: family the table does not read is named", "# TYPE vllm:cache_config_info gauge\nvllm:cache_config_info{block_size=\"16\"} 1\n", ctText, "vllm"},
		{"OpenMetrics without # EOF is cut off", "# TYPE sglang:num_running_reqs gauge\nsglang:num_running_reqs 1\n", ctOM, "EOF"},
		{"an OpenMetrics line too long for expfmt's grammar is refused", "sglang:num_running_reqs{a=\"" + strings.Repeat("x", 600) + "\"} 1\n# EOF\n", ctOM, "512 bytes"},
		{"OpenMetrics 2.0 is not read", "x 1\n", "application/openmetrics-text; version=2.0.0; charset=utf-8", "Content-Type"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := Parse([]byte(tc.body), tc.contentType)
			if s.Error == "" || !strings.Contains(s.Error, tc.want) {
				t.Errorf("error %q, want it to say %q", s.Error, tc.want)
			}
			if s.Values != nil || s.Hists != nil {
				t.Errorf("values %v hists %v beside an error", s.Values, s.Hists)
			}
		})
	}
}

func TestParseUnversionedTextAndNoContentTypeReadAsText(t *testing.T) {
	// An exposition without TYPE lines is untyped; its counters and gauges
	// read all the same.
	body := "sglang:num_running_reqs 2\nsglang:num_requests_total 9\n"
	for _, ct := range []string{"", "text/plain", "text/plain; charset=utf-8"} {
		s := Parse([]byte(body), ct)
		if s.Error != "" || s.Source != SGLang || s.Values[schema.SrvRunning] != 2 || s.Values[schema.SrvRequests] != 9 {
			t.Errorf("Content-Type %q: %+v", ct, s)
		}
	}
}

func TestHistogramsWithDifferentBoundsMergeIntoGrowingCounts(t *testing.T) {
	// Two label sets, bounds {1, 4} and {2, 4}: at 1 only the first has
	// counted (3); at 2 the first still 3 (its count at 1) plus 5; at 4
	// both whole (6 + 7).
	body := `# TYPE vllm:e2e_request_latency_seconds histogram
vllm:e2e_request_latency_seconds_bucket{engine="0",le="1"} 3
vllm:e2e_request_latency_seconds_bucket{engine="0",le="4"} 6
vllm:e2e_request_latency_seconds_bucket{engine="0",le="+Inf"} 6
vllm:e2e_request_latency_seconds_sum{engine="0"} 9
vllm:e2e_request_latency_seconds_count{engine="0"} 6
vllm:e2e_request_latency_seconds_bucket{engine="1",le="2"} 5
vllm:e2e_request_latency_seconds_bucket{engine="1",le="4"} 7
vllm:e2e_request_latency_seconds_bucket{engine="1",le="+Inf"} 8
vllm:e2e_request_latency_seconds_sum{engine="1"} 20
vllm:e2e_request_latency_seconds_count{engine="1"} 8
`
	s := Parse([]byte(body), ctText)
	want := schema.Histogram{LE: []float64{1, 2, 4}, Counts: []float64{3, 8, 13}, Sum: 29, Count: 14}
	checkHists(t, s.Hists, map[string]schema.Histogram{schema.SrvE2E: want})
}

func TestAServerWithoutTheNewNameIsReadByTheOld(t *testing.T) {
	// vLLM before 0.9.2 / 0.10: gpu_prefix_cache_* and gpu_cache_usage_perc.
	body := `# TYPE vllm:gpu_cache_usage_perc gauge
vllm:gpu_cache_usage_perc{model_name="m"} 0.75
# TYPE vllm:gpu_prefix_cache_queries_total counter
vllm:gpu_prefix_cache_queries_total{model_name="m"} 640
# TYPE vllm:gpu_prefix_cache_hits_total counter
vllm:gpu_prefix_cache_hits_total{model_name="m"} 160
# TYPE vllm:time_per_output_token_seconds histogram
vllm:time_per_output_token_seconds_bucket{model_name="m",le="0.05"} 10
vllm:time_per_output_token_seconds_bucket{model_name="m",le="+Inf"} 12
vllm:time_per_output_token_seconds_sum{model_name="m"} 0.6
vllm:time_per_output_token_seconds_count{model_name="m"} 12
`
	s := Parse([]byte(body), ctText)
	checkValues(t, s.Values, map[string]float64{schema.SrvKVUsage: 0.75, schema.SrvPrefixQueried: 640, schema.SrvPrefixHit: 160})
	checkHists(t, s.Hists, map[string]schema.Histogram{schema.SrvITL: {LE: []float64{0.05}, Counts: []float64{10}, Sum: 0.6, Count: 12}})
}

func TestKVUsageFromTokensWhereTheFractionIsAbsent(t *testing.T) {
	// 3000 of 12000 tokens in use is 0.25; without the pool's size the
	// token count says nothing about a fraction, and is left out.
	body := "# TYPE sglang:num_used_tokens gauge\nsglang:num_used_tokens 3000\n# TYPE sglang:max_total_num_tokens gauge\nsglang:max_total_num_tokens 12000\n"
	s := Parse([]byte(body), ctText)
	checkValues(t, s.Values, map[string]float64{schema.SrvKVUsage: 0.25})
	s = Parse([]byte("# TYPE sglang:num_used_tokens gauge\nsglang:num_used_tokens 3000\nsglang:num_running_reqs 1\n"), ctText)
	checkValues(t, s.Values, map[string]float64{schema.SrvRunning: 1})
}

func TestNonFiniteValuesAreLeftOut(t *testing.T) {
	body := "# TYPE sglang:token_usage gauge\nsglang:token_usage NaN\n# TYPE sglang:num_running_reqs gauge\nsglang:num_running_reqs 4\n# TYPE sglang:cache_hit_rate gauge\nsglang:cache_hit_rate +Inf\n"
	s := Parse([]byte(body), ctText)
	checkValues(t, s.Values, map[string]float64{schema.SrvRunning: 4})
	if _, err := json.Marshal(s); err != nil {
		t.Error(err)
	}
}

// FuzzScrapeParse checks that no body, in any of the formats Parse reads,
// panics or gives a sample that cannot be written as a JSON line.
func FuzzScrapeParse(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join("testdata", "*"))
	for _, file := range files {
		b, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		if len(b) > 4096 {
			b = b[:4096]
		}
		ct := ctText
		if strings.HasSuffix(file, "openmetrics.txt") {
			ct = ctOM
		}
		f.Add(b, ct)
	}
	f.Add([]byte("sglang:num_running_reqs{a=\"\\\"\"} 1e308\n"), "")
	f.Add([]byte("# TYPE vllm:e2e_request_latency_seconds histogram\nvllm:e2e_request_latency_seconds_bucket{le=\"NaN\"} 1\n"), ctText)
	f.Add([]byte{0xff, 0xfe, '\n'}, "application/vnd.google.protobuf; proto=io.prometheus.client.MetricFamily; encoding=delimited")
	f.Fuzz(func(t *testing.T, body []byte, contentType string) {
		if strings.Contains(strings.ToLower(contentType), "openmetrics") && len(body) > 2048 {
			// expfmt's OpenMetrics parser takes seconds on long lines
			// (omLineLimit); a short body finds its panics as well.
			return
		}
		s := Parse(body, contentType)
		if s.Error != "" && (s.Values != nil || s.Hists != nil) {
			t.Fatalf("values beside error %q", s.Error)
		}
		for _, h := range s.Hists {
			if len(h.LE) != len(h.Counts) {
				t.Fatalf("le %d counts %d", len(h.LE), len(h.Counts))
			}
		}
		if _, err := json.Marshal(s); err != nil {
			t.Fatalf("json: %v", err)
		}
	})
}
