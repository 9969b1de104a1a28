package gate

import "testing"

func f(v float64) *float64 { return &v }

func TestObservedValuesReadWell(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		c    Line
		want string
	}{
		{"an absolute check shows the value and unit",
			Line{Expr: "single.tpot_med < 0.015", Metric: "tpot_med", Current: f(0.0096), CurrentRuns: []float64{0.0096}, Passed: true},
			"✓ single.tpot_med < 0.015: 0.0096 s"},
		{"a relative check shows both sides and the change",
			Line{Expr: "x.out_tput > -5%", Metric: "out_tput", Current: f(1493.7), Baseline: f(1659.7), Change: f(-10.002), CurrentRuns: []float64{1}, BaselineRuns: []float64{1}},
			"✗ x.out_tput > -5%: 1493.7 tok/s vs baseline 1659.7 tok/s (-10.0%)"},
		{"large rates print whole",
			Line{Expr: "x.out_tput > 1", Metric: "out_tput", Current: f(123456.7), CurrentRuns: []float64{1}, Passed: true},
			"✓ x.out_tput > 1: 123457 tok/s"},
		{"a change from zero is infinite",
			Line{Expr: "x.error_rate < +10%", Metric: "error_rate", Current: f(0.01), Baseline: f(0), Change: f(relChange(0, 0.01)), CurrentRuns: []float64{1}, BaselineRuns: []float64{1}},
			"✗ x.error_rate < +10%: 0.01 vs baseline 0 (+∞%)"},
		{"an absolute check over runs shows the interval of the mean",
			Line{Expr: "x.ttft_p99 < 1", Metric: "ttft_p99", Current: f(0.5), CurrentRuns: []float64{0.4, 0.5, 0.6}, CI: &[2]float64{0.4, 0.6}, Passed: true},
			"✓ x.ttft_p99 < 1: 0.5 s (95% CI of the mean 0.4 to 0.6, mean of 3 runs)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if got := tc.c.Text(); got != tc.want {
				t.Fatalf("got  %q\nwant %q", got, tc.want)
			}
		})
	}
}
