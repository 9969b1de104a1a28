package serverside

import (
	"testing"

	"github.com/glmbench/glmbench/reports/schema"
)

// sgl-router writes sgl_router_retries_total only from its first retry:
// a phase whose before-scrape has no such series and whose after-scrape
// counts 3 made 3 retries. A server that never writes it has no retries
// figure (omitted from the JSON), and one whose count goes down restarted.
func TestRetriesCountZeroInAScrapeWithoutTheSeries(t *testing.T) {
	sample := func(tm float64, when string, v map[string]float64) schema.MetricsSample {
		return schema.MetricsSample{T: tm, When: when, Source: "sglang-router", Values: v}
	}
	cases := []struct {
		name    string
		samples []schema.MetricsSample
		want    *float64
	}{
		{"the first retry came after the first scrape", []schema.MetricsSample{
			sample(0, "before", map[string]float64{schema.SrvRequests: 5}),
			sample(1, "during", map[string]float64{schema.SrvRequests: 7, schema.SrvRetries: 1}),
			sample(2, "after", map[string]float64{schema.SrvRequests: 9, schema.SrvRetries: 3}),
		}, ptr(3)},
		{"retries before the phase are not its own", []schema.MetricsSample{
			sample(0, "before", map[string]float64{schema.SrvRetries: 4}),
			sample(2, "after", map[string]float64{schema.SrvRetries: 6}),
		}, ptr(2)},
		{"a server that never retried has no figure", []schema.MetricsSample{
			sample(0, "before", map[string]float64{schema.SrvRequests: 5}),
			sample(2, "after", map[string]float64{schema.SrvRequests: 9}),
		}, nil},
		{"a count that went down is a restart", []schema.MetricsSample{
			sample(0, "before", map[string]float64{schema.SrvRetries: 4}),
			sample(2, "after", map[string]float64{}),
		}, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := Stats(tc.samples).Retries
			if (got == nil) != (tc.want == nil) || got != nil && *got != *tc.want {
				t.Errorf("retries %v; want %v", show(got), show(tc.want))
			}
		})
	}
}
