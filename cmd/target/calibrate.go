package target

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/glmbench/glmbench/bench"
	"github.com/glmbench/glmbench/cmd/cmdutil"
)

// Calibrate runs bench.Prepare for the load commands (run, sweep), after
// saying on errOut what it calibrates (what) and printing its warnings. A
// Ctrl-C during it exits 130 with no report, as nothing was measured yet;
// its other errors are redacted of the endpoint's secrets.
func Calibrate(ctx context.Context, errOut io.Writer, bo *bench.Options, specs []bench.Spec, what string) ([]bench.Plan, error) {
	ep := bo.Endpoint
	fmt.Fprintf(errOut, "glmbench: %s, model %s: calibrating %s\n", ep, ep.Model, what)
	plans, warns, err := bench.Prepare(ctx, bo, specs)
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
