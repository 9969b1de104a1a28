package scrape

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/glmbench/glmbench/reports/schema"
)

// LMDeploy's --enable-metrics exposition (testdata, written for this test
// from lmdeploy/metrics/loggers.py's names, types and labels: model_name
// and engine, the DP rank) is read as LMDeploy's: its gauges and counters
// summed over engines, the KV usage fraction averaged, TTFT's buckets, and
// nothing of its backend_config info.
func TestParseReadsLMDeploysSeries(t *testing.T) {
	body, err := os.ReadFile(filepath.Join("testdata", "lmdeploy.prom"))
	if err != nil {
		t.Fatal(err)
	}
	s := Parse(body, ctText)
	if s.Error != "" || s.Source != LMDeploy {
		t.Fatalf("source %q, error %q; want %s", s.Source, s.Error, LMDeploy)
	}
	checkValues(t, s.Values, map[string]float64{schema.SrvRunning: 5, schema.SrvQueued: 1, schema.SrvKVUsage: 0.375,
		schema.SrvPromptTokens: 5120, schema.SrvGenerationTokens: 512})
	checkHists(t, s.Hists, map[string]schema.Histogram{schema.SrvTTFT: {LE: []float64{0.1, 0.5}, Counts: []float64{2, 4}, Sum: 0.9, Count: 4}})
}
