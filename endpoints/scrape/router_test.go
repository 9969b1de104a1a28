package scrape

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/glmbench/glmbench/reports/schema"
)

// The routers' expositions (testdata, written for these tests from the
// names, types and labels of their sources: sgl-router's metrics.rs, the
// SGLang Model Gateway's smg_* layer, Dynamo's prometheus_names.rs) map to
// exactly the values written: the router's own view of the deployment
// (its in-flight and queued requests, its TTFT), summed over workers, its
// retries summed over routes (sgl_router_) or worker type and endpoint
// (smg_), and nothing of what the table does not read (worker health,
// requests counted with their errors, sgl-router's duration to the
// answer's start).
var routerCases = []struct {
	name, file, source string
	values             map[string]float64
	hists              map[string]schema.Histogram
}{
	{"dynamo's frontend: in flight and queued at the frontend, its token counters and latencies", "dynamo.prom", Dynamo,
		map[string]float64{schema.SrvRunning: 6, schema.SrvQueued: 2, schema.SrvGenerationTokens: 5200, schema.SrvPromptTokens: 20480},
		map[string]schema.Histogram{
			schema.SrvTTFT: {LE: []float64{0.05, 0.1, 0.5}, Counts: []float64{5, 30, 40}, Sum: 3.2, Count: 40},
			schema.SrvITL:  {LE: []float64{0.01, 0.02}, Counts: []float64{4000, 5080}, Sum: 45.72, Count: 5080},
			schema.SrvE2E:  {LE: []float64{1, 5}, Counts: []float64{10, 40}, Sum: 96, Count: 40},
		}},
	{"an older dynamo without output_tokens_total: generation tokens are the per-request histogram's sum", "dynamo_old.prom", Dynamo,
		map[string]float64{schema.SrvRunning: 3, schema.SrvGenerationTokens: 1024}, nil},
	{"sgl-router: running summed over its workers, requests its workers answered", "sglang_router.prom", SGLangRouter,
		map[string]float64{schema.SrvRunning: 12, schema.SrvRequests: 100, schema.SrvRetries: 12}, nil},
	{"the SGLang Model Gateway's smg_ names: active per worker summed, gRPC TTFT and duration", "smg.prom", SMG,
		map[string]float64{schema.SrvRunning: 10, schema.SrvRetries: 2},
		map[string]schema.Histogram{
			schema.SrvTTFT: {LE: []float64{0.1}, Counts: []float64{20}, Sum: 7.5, Count: 50},
			schema.SrvE2E:  {LE: []float64{1}, Counts: []float64{10}, Sum: 120, Count: 50},
		}},
}

func TestParseReadsTheRoutersSeriesAsTheirServers(t *testing.T) {
	for _, tc := range routerCases {
		t.Run(tc.name, func(t *testing.T) {
			body, err := os.ReadFile(filepath.Join("testdata", tc.file))
			if err != nil {
				t.Fatal(err)
			}
			s := Parse(body, ctText)
			if s.Error != "" || s.Source != tc.source {
				t.Fatalf("source %q, error %q; want %s", s.Source, s.Error, tc.source)
			}
			checkValues(t, s.Values, tc.values)
			checkHists(t, s.Hists, tc.hists)
		})
	}
}
