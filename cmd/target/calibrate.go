package target

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/glmbench/glmbench/bench"
	"github.com/glmbench/glmbench/cmd/cmdutil"
	"github.com/glmbench/glmbench/internal/text"
)

// CalibrateWorkload is Calibrate for a workload's phases: it measures the
// endpoint's filler curve and builds every phase's requests on it.
func CalibrateWorkload(ctx context.Context, errOut io.Writer, bo *bench.Options, phases []bench.WorkPhase, what string) ([]*bench.WorkPlan, error) {
	return calibrate(ctx, errOut, bo, what, func() ([]*bench.WorkPlan, []string, error) { return bench.PrepareWorkload(ctx, bo, phases) })
}

// Calibrate runs bench.Prepare for the load commands (run, sweep), after
// saying on errOut what it calibrates (what) and the load to come
// (loadSize), and prints its warnings. A
// Ctrl-C during it exits 130 with no report, as nothing was measured yet;
// its other errors are redacted of the endpoint's secrets.
func Calibrate(ctx context.Context, errOut io.Writer, bo *bench.Options, specs []bench.Spec, what string) ([]bench.Plan, error) {
	if size := loadSize(specs); size != "" {
		what += " (" + size + ")"
	}
	return calibrate(ctx, errOut, bo, what, func() ([]bench.Plan, []string, error) { return bench.Prepare(ctx, bo, specs) })
}

func calibrate[P any](ctx context.Context, errOut io.Writer, bo *bench.Options, what string, prepare func() ([]P, []string, error)) ([]P, error) {
	ep := bo.Endpoint
	fmt.Fprintf(errOut, "glmbench: %s, model %s: calibrating %s\n", ep, ep.Model, what)
	plans, warns, err := prepare()
	for _, w := range warns {
		fmt.Fprintf(errOut, "glmbench: warning: %s\n", w)
	}
	if err != nil {
		if errors.Is(context.Cause(ctx), cmdutil.ErrInterrupted) {
			// Calibration sends no load: there is nothing to report.
			return nil, &cmdutil.ExitError{Code: cmdutil.ExitInterrupted,
				Err: errors.New("interrupted during calibration, before any load was sent: nothing was measured, so no report was written")}
		}
		return nil, redactErr(ep, err)
	}
	return plans, nil
}

// loadSize says, before any request (on calibrate's line), how much the
// phases will send: their requests and, at most, their prompt and output
// tokens, which a hosted API bills (the fixed phases are 1,458 requests,
// 7,872,768 prompt and 1,086,720 output tokens). "" for a single request
// (sweep's shape, whose load is its duration's).
func loadSize(specs []bench.Spec) string {
	var n, in, out int
	for _, s := range specs {
		n, in, out = n+s.N, in+s.N*s.In, out+s.N*s.Out
	}
	if n <= 1 {
		return ""
	}
	return fmt.Sprintf("then the load: %s requests, %s prompt tokens and at most %s output tokens", text.Thousands(n), text.Thousands(in), text.Thousands(out))
}
