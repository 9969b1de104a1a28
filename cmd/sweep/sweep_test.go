package sweep

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/glmbench/glmbench/cmd/cmdtest"
	"github.com/glmbench/glmbench/cmd/cmdutil"
	"github.com/glmbench/glmbench/engine/enginetest"
	"github.com/glmbench/glmbench/engine/sched"
	"github.com/glmbench/glmbench/engine/sim"
	"github.com/glmbench/glmbench/reports"
)

func execute(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	f, out, errOut := cmdutil.TestFactory(context.Background(), nil)
	err := cmdtest.Execute(f, NewCmdSweep, args...)
	return cmdutil.ExitCode(err), out.String(), errOut.String()
}

// sweepOK runs `glmbench sweep ARGS --out DIR`, fails t unless it exits 0,
// and returns what it wrote.
func sweepOK(t *testing.T, dir string, args ...string) *reports.Input {
	t.Helper()
	if code, _, stderr := execute(t, append(args, "--out", dir)...); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	return cmdtest.Load(t, filepath.Join(dir, reports.ReportJSON))
}

// Bad flags exit 2 in one line, before any endpoint is opened: the endpoint
// named here does not exist, so reaching it would say so instead.
func TestBadFlagsExitTwoInOneLineBeforeAnyLoad(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--shape", "256"}, "--shape"},
		{[]string{"--shape", "0/128"}, "--shape"},
		{[]string{"--slo", "ttft 2s"}, "no operator"},
		{[]string{"--slo", "speed < 2s"}, "unknown metric"},
		{[]string{"--slo", "ttft < fast"}, "bad value"},
		{[]string{"--slo", "itl < 5ms"}, "itl has no per-request value"},
		{[]string{"--concurrency", "1,x"}, "--concurrency"},
		{[]string{"--concurrency", "2.5"}, "--concurrency"},
		{[]string{"--request-rate", "auto", "--concurrency", "1,2"}, "give one"},
		{[]string{"--attainment", "1.5"}, "--attainment"},
		{[]string{"--duration", "0s"}, "--duration"},
		{[]string{"--max-points", "0"}, "--max-points"},
		{[]string{"--start", "1.5"}, "--start"},
		{[]string{"--request-rate", "auto", "--start", "Inf"}, "--start"},
		{[]string{"--start", "2e6"}, "--start"},
		{[]string{"--stall-timeout", "-1s"}, "--stall-timeout"},
		{[]string{"--api", "bogus"}, "--api must be chat or completions"},
		// 2·10⁹ slices ran the process out of memory before any load.
		{[]string{"--slice", "1ns", "--duration", "2s"}, "--slice 1ns cuts the --duration 2s window into 2000000000 slices, more than 1000"},
	} {
		code, _, stderr := execute(t, append([]string{"--endpoint", "http://127.0.0.1:1/v1"}, tc.args...)...)
		if code != cmdutil.ExitBadInput || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, tc.want) || strings.Contains(stderr, "127.0.0.1:1") {
			t.Errorf("%v: exit %d, stderr %q; want exit 2 in one line naming %q, before the endpoint", tc.args, code, stderr, tc.want)
		}
	}
}

// A whole sweep against a simulated engine whose capacity is known: with
// mixed chunks, s = 4 ms and d = 500 µs per sequence, a TPOT under 14 ms
// holds up to c* = (14 − 4) / 0.5 = 20. The listed loads 8, 16 and 24 give
// capacity 16, bracketed by 24; the report, the records, the Markdown and
// the plots are written, and the capacity recomputed from requests.jsonl is
// the same. (c* lies midway between 16 and 24, each 2 ms from the SLO, and
// the steps are long enough that a loaded machine's jitter, which every
// request of a point shares, does not push 16 over it: with s = 2 ms and
// c* = 18 it did.)
func TestASweepWritesItsCapacityTableAndPlots(t *testing.T) {
	t.Parallel()
	cost := sim.CostModel{StepOverhead: 4 * time.Millisecond, DecodeSeq: 500 * time.Microsecond}
	e := enginetest.Start(t, enginetest.Sim(cost), enginetest.Sched(func(c *sched.Config) { c.EnableMixedChunk = true }))
	dir := filepath.Join(t.TempDir(), "out")
	code, stdout, stderr := execute(t, "--endpoint", e.BaseURL(), "--shape", "32/32", "--concurrency", "8,16,24",
		"--warmup", "300ms", "--duration", "1500ms", "--slice", "500ms", "--slo", "tpot < 14ms", "--out", dir)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	in := cmdtest.Load(t, filepath.Join(dir, reports.ReportJSON))
	if len(in.Report.Sweeps) != 1 || len(in.Recomputed) != 1 {
		t.Fatalf("sweeps %d, recomputed %v, warnings %v", len(in.Report.Sweeps), in.Recomputed, in.Warnings)
	}
	s := in.Report.Sweeps[0]
	if s.Capacity == nil || s.Capacity.Load != 16 || s.Capacity.Above == nil || *s.Capacity.Above != 24 {
		t.Fatalf("capacity %+v, want 16 bracketed by 24", s.Capacity)
	}
	if len(s.Points) != 3 || len(s.Points[0].Slices) != 3 {
		t.Fatalf("%d points, %d slices in the first", len(s.Points), len(s.Points[0].Slices))
	}
	md := cmdtest.ReadFile(t, dir, reports.ReportMD)
	for _, want := range []string{"## Sweep sweep: 32 in / 32 out, by concurrency", "**capacity: concurrency 16 (in [16, 24))", "### Slices", "**goodput** = met requests / window seconds"} {
		if !strings.Contains(md, want) {
			t.Errorf("report.md lacks %q", want)
		}
	}
	if !strings.Contains(stdout, "capacity concurrency 16") {
		t.Errorf("stdout lacks the capacity:\n%s", stdout)
	}
	for _, name := range []string{"sweep-sweep-pareto.png", "sweep-sweep-ttft-p99-load.svg", "sweep-sweep-attainment-load.png"} {
		if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
			t.Errorf("plot: %v", err)
		}
	}
}

// A report that cannot be written ends the sweep after the point that
// could not be written, with exit 1, rather than after every other load.
func TestASweepWhoseReportCannotBeWrittenStopsAtOnce(t *testing.T) {
	t.Parallel()
	e := enginetest.Start(t, enginetest.Sim(sim.CostModel{StepOverhead: time.Millisecond}))
	// The folder can be written (the check before any load passes), but
	// report.json cannot: a folder stands in its place.
	out := t.TempDir()
	if err := os.Mkdir(filepath.Join(out, reports.ReportJSON), 0o755); err != nil {
		t.Fatal(err)
	}
	code, _, stderr := execute(t, "--endpoint", e.BaseURL(), "--shape", "32/8", "--concurrency", "1,2,3,4,5,6",
		"--warmup", "0s", "--duration", "300ms", "--out", out)
	if code != cmdutil.ExitFailed || !strings.Contains(stderr, "writing the report to") {
		t.Fatalf("exit %d, stderr:\n%s\nwant exit 1 saying the report could not be written", code, stderr)
	}
	if n := strings.Count(stderr, "glmbench: point "); n != 1 {
		t.Errorf("%d points said; want the sweep to stop after the first, whose report could not be written:\n%s", n, stderr)
	}
}
