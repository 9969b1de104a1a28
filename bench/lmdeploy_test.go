package bench

import (
	"context"
	"testing"
	"time"

	"github.com/glmbench/glmbench/endpoints"
	"github.com/glmbench/glmbench/endpoints/endpointstest"
)

// LMDeploy refuses a prompt past --session-len with a 200 whose one chunk
// has finish_reason "error" and the engine's ResponseType.INPUT_LENGTH_ERROR
// as content (lmdeploy/serve/core/async_engine.py). Calibration toward a
// target past the session length ends as bad input (exit 2) naming
// --session-len, before any load; a target that fits calibrates.
func TestCalibrationPastLMDeploysSessionLenSaysSessionLen(t *testing.T) {
	t.Parallel()
	p := endpointstest.Start(t, endpointstest.LMDeploy, endpointstest.Options{Context: 512})
	ep := resolve(t, p.BaseURL(), p.Opts.Model)
	o := &Options{Endpoint: ep, Shape: Shape{Model: p.Opts.Model, IgnoreEOS: true},
		Limits: endpoints.StreamLimits{TTFT: 10 * time.Second, Stall: 10 * time.Second}, ConnectTimeout: 2 * time.Second}
	_, _, err := Prepare(context.Background(), o, []Spec{{Name: "long", N: 1, In: 2000, Out: 16}})
	wantBadInput(t, err, "phase long", "stream_error", "INPUT_LENGTH_ERROR", "--session-len")
	if _, _, err := Prepare(context.Background(), o, []Spec{{Name: "short", N: 1, In: 200, Out: 16}}); err != nil {
		t.Fatal(err)
	}
}
