package sweep

import (
	"slices"
	"strings"
	"testing"

	"github.com/glmbench/glmbench/cmd/cmdtest"
	"github.com/glmbench/glmbench/cmd/cmdutil"
	"github.com/glmbench/glmbench/reports/schema"
)

// The window, warm-up and drain are bounded (--duration 100ms to 24h,
// --warmup and --drain 0 to 24h), and a rate point must expect at least
// one request in its window (rate × duration ≥ 1, the Poisson mean): each
// refused with exit 2 in one line before the endpoint, which does not
// exist here, is opened.
func TestOutOfBoundsTimesAndEmptyRatePointsExitTwoBeforeAnyLoad(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--duration", "99ms"}, "--duration must be from 100ms to 24h0m0s, not 99ms"},
		{[]string{"--duration", "24h1s"}, "--duration must be from 100ms to 24h0m0s, not 24h0m1s"},
		{[]string{"--warmup", "-1s"}, "--warmup must be from 0s to 24h0m0s, not -1s"},
		{[]string{"--warmup", "25h"}, "--warmup must be from 0s to 24h0m0s, not 25h0m0s"},
		{[]string{"--drain", "-1ms"}, "--drain must be from 0s to 24h0m0s, not -1ms"},
		{[]string{"--drain", "1000h"}, "--drain must be from 0s to 24h0m0s, not 1000h0m0s"},
		// 0.05/s × 10 s = 0.5 requests: a window of 1/0.05 = 20 s holds one.
		{[]string{"--request-rate", "1,0.05"}, "--request-rate 0.05 per second over --duration 10s expects 0.5 requests in a window, fewer than 1: give a --duration of at least 20s or a higher rate"},
		{[]string{"--request-rate", "auto", "--start", "0.25", "--duration", "2s"}, "--start 0.25 per second over --duration 2s expects 0.5 requests in a window, fewer than 1: give a --duration of at least 4s or a higher rate"},
		// 1e-6/s: even a day's window (86,400 s) expects 0.0864.
		{[]string{"--request-rate", "0.000001", "--duration", "24h", "--slice", "1h"}, "expects 0.0864 requests in a window, fewer than 1: give a higher rate"},
	} {
		code, _, stderr := execute(t, append([]string{"--endpoint", "http://127.0.0.1:1/v1"}, tc.args...)...)
		if code != cmdutil.ExitBadInput || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, tc.want) || strings.Contains(stderr, "127.0.0.1:1") {
			t.Errorf("%v: exit %d, stderr %q; want exit 2 in one line saying %q, before the endpoint", tc.args, code, stderr, tc.want)
		}
	}
	// The bounds themselves are in: --duration 100ms with a rate of 10/s
	// expects exactly one request, and passes validation.
	o := cmdtest.MustParse(t, NewCmdSweep, "--request-rate", "10", "--duration", "100ms", "--warmup", "24h", "--drain", "0s")
	if _, err := o.validate(); err != nil {
		t.Errorf("--request-rate 10 --duration 100ms --warmup 24h --drain 0s: %v; want it valid", err)
	}
}

// An auto rate sweep whose every point is bad halves from --start only
// down to the rate whose --duration window expects one request: 1 / 10 s
// = 0.1 per second, measured once in place of 0.0625 (0.625 requests).
func TestAnAutoRateSweepHalvesNoLowerThanOneRequestPerWindow(t *testing.T) {
	t.Parallel()
	o := cmdtest.MustParse(t, NewCmdSweep, "--request-rate", "auto", "--start", "1", "--duration", "10s")
	p, err := o.validate()
	if err != nil {
		t.Fatal(err)
	}
	var loads []float64
	for {
		v, ok := p.search.Next()
		if !ok {
			break
		}
		loads = append(loads, v)
		p.search.Record(v, false)
	}
	if want := []float64{1, 0.5, 0.25, 0.125, 0.1}; !slices.Equal(loads, want) || p.search.Stop() != schema.StopNoneGood {
		t.Errorf("loads %v, stop %s; want %v, %s", loads, p.search.Stop(), want, schema.StopNoneGood)
	}
}
