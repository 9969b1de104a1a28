package scrape

import (
	"context"
	"strings"
	"testing"

	"github.com/glmbench/glmbench/endpoints/endpointstest"
)

// trtllm-serve's /metrics is its iteration statistics as a JSON list, not
// an exposition: the scrape says it is JSON and where that server keeps
// its Prometheus text, so the one line run prints tells the user what to
// give --metrics-url, not only that a Content-Type was not read.
func TestAJSONMetricsBodyIsSaidToBeJSONWithWhereTRTLLMKeepsItsSeries(t *testing.T) {
	p := endpointstest.Start(t, endpointstest.TRTLLM, endpointstest.Options{})
	s := New(DefaultURL(p.BaseURL()), nil, nil).Scrape(context.Background())
	for _, want := range []string{"JSON", "not a Prometheus exposition", "trtllm-serve", "/prometheus/metrics", "return_perf_metrics"} {
		if !strings.Contains(s.Error, want) {
			t.Errorf("error %q does not say %q", s.Error, want)
		}
	}
	if s.Values != nil || s.Source != "" {
		t.Errorf("values %v from source %q beside the error", s.Values, s.Source)
	}
}
