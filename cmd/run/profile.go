package run

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
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

// profileStopTimeout bounds the stop, after the connect timeout. vLLM
// answers /stop_profile only once every worker has written its trace,
// which takes minutes for a big one (vllm bench serve waits on it up to
// its 6 h request timeout); newer SGLang waits on its scheduler's export
// as well. A Ctrl-C during the stop, or a second one after an interrupted
// run, stops the waiting sooner; the server goes on writing either way.
const profileStopTimeout = 10 * time.Minute

// profileCleanupTimeout bounds the stop sent after a start whose answer
// never came (it may have started the profiler).
const profileCleanupTimeout = 30 * time.Second

// profiling is the server's profiler started by a run.
type profiling struct {
	o       *Options
	c       *endpoints.Client
	tr      *endpoints.Transport
	ep      *endpoints.Endpoint
	builtin bool
	once    sync.Once
}

// startProfile starts the server's profiler when --profile is given and
// records that in rep, saying on stderr where the trace goes. A start
// that fails is bad input, before any load; one whose answer never came
// (a timeout, a reset) may have started the profiler, so a stop follows
// it. stop, never nil, stops the profiler once, however often it is
// called; a failure is a warning: the measurements stand.
func (o *Options) startProfile(ctx context.Context, tg *target.Target, rep *schema.Report) (stop func(), err error) {
	if !o.Profile {
		return func() {}, nil
	}
	p := &profiling{o: o, ep: tg.Endpoint, builtin: tg.ProfileBuiltin(tg.Out)}
	if o.adminKey != "" {
		// A copy: the load's endpoint neither sends nor needs the admin key.
		p.ep = tg.Endpoint.At(tg.Endpoint.BaseURL)
		p.ep.SetAdminKey(o.adminKey)
	}
	p.tr = endpoints.NewTransport(endpoints.TransportOptions{Conns: 1, ConnectTimeout: o.ConnectTimeout, Trust: p.ep.Trust})
	p.c = endpoints.NewClient(p.ep, p.tr)
	wait := o.ConnectTimeout + orDefault(o.profileStartWait, profileStartTimeout)
	sctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	ans, err := p.c.StartProfile(sctx)
	if err != nil {
		note := ""
		if !answered(err) {
			// The start may have reached the server: stop it all the same,
			// quietly, as the start's error is what the run ends with.
			p.once.Do(func() { p.cleanup(ctx) })
			note = "POST /stop_profile was sent in case the profiler started"
			if sctx.Err() != nil {
				note = fmt.Sprintf("no answer within %s; %s", wait, note)
			}
			note = " (" + note + ")"
		}
		p.tr.Close()
		if errors.Is(context.Cause(ctx), cmdutil.ErrInterrupted) {
			return nil, &cmdutil.ExitError{Code: cmdutil.ExitInterrupted,
				Err: errors.New("interrupted while starting the server's profiler, before any load was sent: nothing was measured, so no report was written")}
		}
		return nil, badinput.Errorf("--profile: %s%s", p.ep.Redact(err.Error()), note)
	}
	rep.Options.Profile = true
	fmt.Fprintln(o.F.IO.ErrOut, profileWhere(p.builtin, ans))
	return func() { p.once.Do(func() { p.stop(ctx) }) }, nil
}

// readAdminKey checks --admin-api-key-env and reads its key: it goes with
// --profile and an endpoint (the built-in engine takes no key), and its
// variable must hold one.
func (o *Options) readAdminKey() error {
	if o.AdminKeyEnv == "" {
		return nil
	}
	switch {
	case !o.Profile:
		return badinput.Errorf("--admin-api-key-env is the key of --profile's routes; it goes with --profile")
	case !o.Endpoint.Given():
		return badinput.Errorf("--admin-api-key-env goes with --endpoint or --endpoints: the built-in engine takes no key")
	}
	o.adminKey = strings.TrimSpace(o.F.Getenv(o.AdminKeyEnv))
	if o.adminKey == "" {
		return badinput.Errorf("environment variable %s (--admin-api-key-env, the admin key) is empty or unset", endpoints.ShownVar(o.AdminKeyEnv))
	}
	return nil
}

// answered reports whether a profiler call's error is the server's answer
// (a status, a redirect, an unreadable body) rather than none at all.
func answered(err error) bool {
	_, ok := endpoints.Answered(err)
	return ok
}

// stop sends /stop_profile and says how it went. A run already
// interrupted waits on it all the same (a second Ctrl-C quits); else a
// Ctrl-C while waiting ends the wait.
func (p *profiling) stop(ctx context.Context) {
	defer p.tr.Close()
	errOut := p.o.F.IO.ErrOut
	base := ctx
	if ctx.Err() != nil {
		base = context.WithoutCancel(ctx)
	}
	wait := orDefault(p.o.profileStopWait, profileStopTimeout)
	sctx, cancel := context.WithTimeout(base, p.o.ConnectTimeout+wait)
	defer cancel()
	if !p.builtin {
		fmt.Fprintln(errOut, "glmbench: --profile: stopping the server's profiler (vLLM answers once its trace is written, which can take minutes; Ctrl-C ends the wait, not the writing)")
	}
	ans, err := p.c.StopProfile(sctx)
	switch {
	case err == nil:
		fmt.Fprintln(errOut, profileStopped(p.builtin, ans))
	case !answered(err) && errors.Is(context.Cause(sctx), cmdutil.ErrInterrupted):
		fmt.Fprintln(errOut, "glmbench: warning: --profile: interrupted while waiting for the server's profiler to stop; it may still be writing its trace (the measurements are kept)")
	case !answered(err) && sctx.Err() != nil:
		fmt.Fprintf(errOut, "glmbench: warning: --profile: the server did not answer POST /stop_profile within %s; it may still be writing its trace (the measurements are kept)\n",
			p.o.ConnectTimeout+wait)
	default:
		fmt.Fprintf(errOut, "glmbench: warning: --profile: stopping the server's profiler: %s (the measurements are kept)\n", p.ep.Redact(err.Error()))
	}
}

// cleanup is the quiet stop after a start that got no answer.
func (p *profiling) cleanup(ctx context.Context) {
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), p.o.ConnectTimeout+profileCleanupTimeout)
	defer cancel()
	p.c.StopProfile(sctx)
}

// orDefault is d, or def when d is 0.
func orDefault(d, def time.Duration) time.Duration {
	if d == 0 {
		return def
	}
	return d
}

// profileWhere is the line that says where the server writes its trace.
// The built-in engine's CPU profile is its process's: in `glmbench run`
// without --endpoint that process is the client's too, so its own load
// generation is in the profile beside the engine's work.
func profileWhere(builtin bool, ans endpoints.ProfileAnswer) string {
	switch {
	case builtin && ans.File != "":
		return fmt.Sprintf("glmbench: --profile: writing a CPU profile of this glmbench process during the phases to %s "+
			"(the built-in engine runs in it beside the client, so the client's own load generation is in it too; go tool pprof %s)", ans.File, ans.File)
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

// profileStopped is the line after a stop the server answered 2xx. vLLM
// answers once the trace is written; SGLang before its stop waited on the
// scheduler answered at once ("This will take some time."), the trace
// still being written, so the line quotes the server and claims no more.
func profileStopped(builtin bool, ans endpoints.ProfileAnswer) string {
	if builtin && ans.File != "" {
		return "glmbench: --profile: the CPU profile is written: " + ans.File
	}
	said := ""
	if ans.Message != "" {
		said = fmt.Sprintf(" (%q)", ans.Message)
	}
	return "glmbench: --profile: the server's profiler stopped" + said
}
