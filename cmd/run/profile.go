package run

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/glmbench/glmbench/cmd/cmdutil"
	"github.com/glmbench/glmbench/cmd/target"
	"github.com/glmbench/glmbench/endpoints"
	"github.com/glmbench/glmbench/internal/badinput"
	"github.com/glmbench/glmbench/reports/schema"
)

// --profile runs the server's own profiler around the measured phases, as
// `vllm bench serve --profile` (vllm/benchmarks/serve.py) and SGLang's
// bench_serving.py --profile do: POST /start_profile at the server's root
// after the calibration probes, before the first phase's load, and POST
// /stop_profile after the last phase, so the trace holds the measured
// traffic and none of the calibration. With --agents the coordinator sends
// both (it calibrates against the same endpoint already).

// profileStartTimeout bounds the start, after the connect timeout: vLLM
// answers once every worker's profiler has started.
const profileStartTimeout = 30 * time.Second

// profileStopTimeout bounds the stop, which is sent even after Ctrl-C. vLLM
// and SGLang answer it once the trace is being written (vLLM's docs: a big
// trace can take minutes to flush); past this the server is left writing.
const profileStopTimeout = 30 * time.Second

// startProfile starts the server's profiler when --profile is given and
// records that in rep, saying on stderr where the trace goes. A start
// that fails is bad input, before any load. stop, never nil, stops the
// profiler once (a failure is a warning: the measurements stand).
func (o *Options) startProfile(ctx context.Context, tg *target.Target, rep *schema.Report) (stop func(), err error) {
	if !o.Profile {
		return func() {}, nil
	}
	errOut := o.F.IO.ErrOut
	builtin := tg.ProfileBuiltin(tg.Out)
	ep := tg.Endpoint
	tr := endpoints.NewTransport(endpoints.TransportOptions{Conns: 1, ConnectTimeout: o.ConnectTimeout, Trust: ep.Trust})
	c := endpoints.NewClient(ep, tr)
	stop = func() {
		defer tr.Close()
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), o.ConnectTimeout+profileStopTimeout)
		defer cancel()
		if _, err := c.StopProfile(sctx); err != nil {
			fmt.Fprintf(errOut, "glmbench: warning: --profile: stopping the server's profiler: %s (the measurements are kept)\n", ep.Redact(err.Error()))
		}
	}
	sctx, cancel := context.WithTimeout(ctx, o.ConnectTimeout+profileStartTimeout)
	defer cancel()
	ans, err := c.StartProfile(sctx)
	if err != nil {
		if errors.Is(context.Cause(ctx), cmdutil.ErrInterrupted) {
			// The start may have reached the server: stop it all the same.
			stop()
			return nil, &cmdutil.ExitError{Code: cmdutil.ExitInterrupted,
				Err: errors.New("interrupted while starting the server's profiler, before any load was sent: nothing was measured, so no report was written")}
		}
		tr.Close()
		return nil, badinput.Errorf("--profile: %s", ep.Redact(err.Error()))
	}
	rep.Options.Profile = true
	fmt.Fprintln(errOut, profileWhere(builtin, ans))
	return stop, nil
}

// profileWhere is the line that says where the server writes its trace.
func profileWhere(builtin bool, ans endpoints.ProfileAnswer) string {
	switch {
	case builtin && ans.File != "":
		return fmt.Sprintf("glmbench: --profile: the built-in engine writes a CPU profile of the phases to %s (go tool pprof %s)", ans.File, ans.File)
	case ans.File != "":
		return fmt.Sprintf("glmbench: --profile: the server's profiler started; it writes %s on its own machine", ans.File)
	}
	said := ""
	if ans.Message != "" {
		said = fmt.Sprintf(" (%q)", ans.Message)
	}
	return "glmbench: --profile: the server's profiler started" + said + "; it writes its trace on its own machine: vLLM to its " +
		"--profiler-config torch_profiler_dir (VLLM_TORCH_PROFILER_DIR before v0.13), SGLang to SGLANG_TORCH_PROFILER_DIR (default /tmp)"
}
