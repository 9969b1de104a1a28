// Package sweep is `glmbench sweep`: steady-state points of one request shape
// at rising load, and the capacity an endpoint carries within its SLOs.
package sweep

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/glmbench/glmbench/bench"
	"github.com/glmbench/glmbench/bench/workload"
	"github.com/glmbench/glmbench/cmd/cmdutil"
	"github.com/glmbench/glmbench/cmd/phasewarn"
	"github.com/glmbench/glmbench/cmd/target"
	"github.com/glmbench/glmbench/endpoints"
	"github.com/glmbench/glmbench/internal/badinput"
	"github.com/glmbench/glmbench/reports"
	"github.com/glmbench/glmbench/reports/schema"
	"github.com/glmbench/glmbench/reports/slo"
)

// Options are sweep's parsed flags and injected state.
type Options struct {
	F *cmdutil.Factory
	// Common is the endpoint, --connect-timeout, --label and --out.
	target.Common

	Shape       string
	Concurrency string
	RequestRate string
	Start       float64
	Duration    time.Duration
	Warmup      time.Duration
	// Drain is the longest wait after a window for its requests to end
	// (0: the window's duration).
	Drain      time.Duration
	Slice      time.Duration
	SLOs       []string
	Attainment float64
	MaxPoints  int
	Resolution float64
	Seed       int64

	TTFTTimeout    time.Duration
	StallTimeout   time.Duration
	RequestTimeout time.Duration
	ProbeTimeout   time.Duration
	// Body is --api, --ignore-eos, --stream-usage, --max-completion-tokens.
	target.Body

	// Workload and WorkloadPhase are --workload and --workload-phase: the
	// phase of a workload file (or built-in example) whose requests the
	// points send instead of --shape's one shape; Dataset is --dataset.
	Workload      string
	WorkloadPhase string
	Dataset       string
	// ShapeGiven says --shape was given, which --workload replaces.
	ShapeGiven bool
	// Metrics is --metrics-url, --no-metrics and --metrics-interval.
	Metrics target.MetricsFlags
}

// shared is the flags sweep shares with run, over o's fields: the same
// limits, since the drain ends a point as the TTFT and stall limits end a
// hung stream.
func (o *Options) shared() *target.Flags {
	return target.LoadFlags(&o.Common, &o.RequestTimeout, &o.StallTimeout)
}

// NewCmdSweep binds sweep's flags. runF replaces the run function in tests.
func NewCmdSweep(f *cmdutil.Factory, runF func(*Options) error) *cobra.Command {
	o := &Options{F: f}
	cmd := &cobra.Command{
		Use:   "sweep",
		Short: "Find how much load an endpoint carries within its SLOs",
		Long: `Sweep measures one request shape (--shape IN/OUT) at rising load, one
steady-state point per load, and reports the capacity: the largest measured
load at which the share of requests meeting every SLO reaches --attainment.

A point keeps --concurrency C requests in flight (closed loop: a new request as
one ends) or sends --request-rate R requests per second (Poisson). It runs the
load for --warmup, then for the measured window of --duration; only requests
whose t0 falls in the window are measured, and the load goes on after it (at
most --drain) until they have ended. A measured request still running then is
unfinished: a miss, as is every failed or cancelled one.

SLOs (--slo, repeatable) bound each request's own ttft, tpot or lat
('ttft < 2s', 'tpot < 50ms'), or a statistic over the window ('ttft_p99 < 2s',
'tpot_med <= 40ms'). goodput = met requests per second of window;
attainment = met / started.

With auto (the default), the load doubles from --start until a point is bad,
then bisects between the largest good and the smallest bad load until they
are neighbours or within --resolution, at most --max-points points; a client
whose p99 send lag passes 10 ms ends the search. Prompts are calibrated once
against the endpoint's own usage.prompt_tokens, as run does. Every request
streams /chat/completions, or with --api completions /completions (the prompt
sent as it is, with no chat template; a workload's messages joined with blank
lines), as run's do. The report (the sweeps section of report.json, report.md,
requests.jsonl with each record's point, and plots) is written after every
point.`,
		Example: `  glmbench sweep --shape 256/128 --slo 'tpot < 50ms' --slo 'ttft_p99 < 2s'
  glmbench sweep --endpoint http://127.0.0.1:30000/v1 --shape 1024/256 --concurrency 1,8,32,128
  glmbench sweep --endpoint http://127.0.0.1:8000/v1 --shape 512/128 --request-rate auto --slo 'lat < 10s'`,
		Args: cmdutil.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			o.shared().Parsed()
			o.ShapeGiven = cmd.Flags().Changed("shape")
			return cmdutil.Dispatch(cmd, o, runF, Run)
		},
	}
	fl := cmd.Flags()
	o.shared().AddFlags(cmd)
	fl.StringVar(&o.Shape, "shape", "256/128", "the request shape IN/OUT: prompt tokens and max_tokens")
	fl.StringVar(&o.Concurrency, "concurrency", "auto", "closed-loop concurrencies: auto, or a comma list such as 1,2,4,8")
	fl.StringVar(&o.RequestRate, "request-rate", "", "Poisson request rates per second instead of concurrencies: auto, or a comma list such as 0.5,1,2")
	fl.Float64Var(&o.Start, "start", 1, "the first load auto measures (a concurrency, or a rate per second)")
	fl.DurationVar(&o.Duration, "duration", 10*time.Second, "each point's measured window (a hosted endpoint wants 60s or more)")
	fl.DurationVar(&o.Warmup, "warmup", 2*time.Second, "each point's warm-up before the window; its requests are not measured")
	fl.DurationVar(&o.Drain, "drain", 0, "the longest wait after a window for its requests to end (0: the window's duration)")
	fl.DurationVar(&o.Slice, "slice", 10*time.Second, "the length of the time slices each window is cut into")
	fl.StringArrayVar(&o.SLOs, "slo", nil, "a service-level objective, e.g. 'ttft < 2s', 'tpot < 50ms', 'ttft_p99 < 2s' (repeatable)")
	fl.Float64Var(&o.Attainment, "attainment", 0.99, "the share of a point's requests that must meet every SLO for it to be good")
	fl.IntVar(&o.MaxPoints, "max-points", 12, "the most points auto measures")
	fl.Float64Var(&o.Resolution, "resolution", 0.05, "auto stops bisecting when the bracket is this narrow, relative to its lower end")
	fl.Int64Var(&o.Seed, "seed", 1, "seed of the Poisson arrivals")
	fl.DurationVar(&o.TTFTTimeout, "ttft-timeout", 10*time.Minute, "limit on the wait for the first content event (0: none)")
	fl.DurationVar(&o.ProbeTimeout, "probe-timeout", 0, "limit on each calibration probe (0: 1m plus 20ms per input token)")
	o.Body.AddFlags(fl)
	o.Metrics.AddFlags(fl)
	fl.StringVar(&o.Workload, "workload", "", "send a workload phase's requests, in turn, instead of --shape's: a workload file or a built-in example ("+strings.Join(workload.Names(), ", ")+"); its arrival is the sweep's")
	fl.StringVar(&o.WorkloadPhase, "workload-phase", "", "the --workload phase to sweep (needed when it has several)")
	fl.StringVar(&o.Dataset, "dataset", "", "a data set for the workload's dataset phase; alone, a dataset phase of all its items")
	return cmd
}

// plan is what the flags ask for, checked before anything is sent.
type plan struct {
	spec bench.Spec
	// work is the workload phase to sweep, when one is given.
	work   *bench.WorkPhase
	source string
	mode   string
	search *bench.Search
	slos   slo.Set
	tl     bench.Timeline
}

// validate checks every flag that needs no endpoint.
func (o *Options) validate() (*plan, error) {
	in, out, err := bench.ParseShape(o.Shape)
	if err != nil {
		return nil, err
	}
	if err := o.Body.Check(); err != nil {
		return nil, err
	}
	p := &plan{spec: bench.Spec{Name: "sweep", N: 1, In: in, Out: out}, mode: schema.SweepConcurrency}
	if o.Workload != "" || o.Dataset != "" {
		if o.ShapeGiven {
			return nil, badinput.Errorf("--shape and --workload are two sources of requests; give one")
		}
		if p.work, p.source, err = o.workPhase(); err != nil {
			return nil, err
		}
		in, out := bench.Nominal(p.work.Phase, p.work.Reqs)
		p.spec = bench.Spec{Name: p.work.Phase.Name, N: len(p.work.Reqs), In: in, Out: out}
	}
	loads, integer := o.Concurrency, true
	if o.RequestRate != "" {
		if o.Concurrency != "auto" {
			return nil, badinput.Errorf("--concurrency and --request-rate are two kinds of sweep; give one")
		}
		p.mode, loads, integer = schema.SweepRate, o.RequestRate, false
	}
	switch {
	case o.Duration < minDuration || o.Duration > maxSpan:
		// Under 100 ms a window holds no request of any real server; past
		// a day it is a typo (--duration 10000h), and a window's end
		// passed time.Duration's range.
		return nil, badinput.Errorf("--duration must be from %s to %s, not %s", minDuration, maxSpan, o.Duration)
	case o.Warmup < 0 || o.Warmup > maxSpan:
		return nil, badinput.Errorf("--warmup must be from 0s to %s, not %s", maxSpan, o.Warmup)
	case o.Drain < 0 || o.Drain > maxSpan:
		return nil, badinput.Errorf("--drain must be from 0s to %s, not %s", maxSpan, o.Drain)
	case o.Slice <= 0:
		return nil, badinput.Errorf("--slice must be positive")
	case sliceCount(o.Duration, o.Slice) > maxSlices:
		// Each slice is a row of every point in the report, with its own
		// percentiles: --slice 1ns cut a 2 s window into 2·10⁹ of them and
		// ran the process out of memory.
		return nil, badinput.Errorf("--slice %s cuts the --duration %s window into %d slices, more than %d: give a longer --slice", o.Slice, o.Duration, sliceCount(o.Duration, o.Slice), maxSlices)
	case !(o.Attainment > 0 && o.Attainment <= 1):
		return nil, badinput.Errorf("--attainment must be in (0, 1], not %g", o.Attainment)
	case o.MaxPoints < 1:
		return nil, badinput.Errorf("--max-points must be at least 1")
	case !(o.Resolution > 0 && o.Resolution < 1):
		return nil, badinput.Errorf("--resolution must be in (0, 1), not %g", o.Resolution)
	case !(o.Start > 0) || o.Start > maxLoad || integer && o.Start != float64(int(o.Start)):
		// > maxLoad also refuses +Inf, which ran the load and then failed
		// the report's write.
		return nil, badinput.Errorf("--start must be a positive load up to %g (a whole number for a concurrency), not %g", float64(maxLoad), o.Start)
	case o.TTFTTimeout < 0, o.ProbeTimeout < 0:
		return nil, badinput.Errorf("--ttft-timeout and --probe-timeout must not be negative")
	}
	if err := o.shared().Validate("connect-timeout", "stall-timeout", "request-timeout"); err != nil {
		return nil, err
	}
	if err := o.Metrics.Validate(); err != nil {
		return nil, err
	}
	// Auto's halving stops at the rate whose window expects one request,
	// the bound checkRates holds --start and the listed rates to.
	p.search = &bench.Search{Integer: integer, Start: o.Start, MinLoad: 1 / o.Duration.Seconds(), Resolution: o.Resolution, MaxPoints: o.MaxPoints}
	if loads != "auto" {
		list, err := parseLoads(loads, integer)
		if err != nil {
			return nil, err
		}
		p.search.List, p.search.MaxPoints = list, 0
	}
	if err := o.checkRates(p.search); err != nil {
		return nil, err
	}
	if p.slos, err = slo.ParseAll(o.SLOs); err != nil {
		return nil, err
	}
	drain := o.Drain
	if drain == 0 {
		drain = o.Duration
	}
	p.tl = bench.Timeline{Warmup: o.Warmup, Duration: o.Duration, Drain: drain}
	return p, nil
}

func parseLoads(s string, integer bool) ([]float64, error) {
	name := "--request-rate"
	if integer {
		name = "--concurrency"
	}
	var out []float64
	for _, f := range strings.Split(s, ",") {
		v, err := strconv.ParseFloat(strings.TrimSpace(f), 64)
		if err != nil || !(v > 0) || v > maxLoad || integer && v != float64(int(v)) {
			what := "positive numbers"
			if integer {
				what = "whole numbers from 1"
			}
			return nil, badinput.Errorf("%s %q: want auto or a comma list of %s, e.g. 1,2,4,8", name, s, what)
		}
		out = append(out, v)
	}
	return out, nil
}

// maxLoad bounds a load sweep measures: a concurrency or a rate per second.
const maxLoad = 1e6

// minDuration and maxSpan bound a point's window (--duration), and maxSpan
// its warm-up and drain.
const (
	minDuration = 100 * time.Millisecond
	maxSpan     = 24 * time.Hour
)

// checkRates refuses a rate sweep whose first point (auto: --start) or any
// listed point expects less than one request in its window: rate × duration
// is the Poisson mean count of measured starts, and a window with none
// measures nothing (every figure null, the point neither good nor bad).
func (o *Options) checkRates(s *bench.Search) error {
	if s.Integer {
		return nil
	}
	rates, flag := s.List, "--request-rate"
	if rates == nil {
		rates, flag = []float64{s.Start}, "--start"
	}
	for _, r := range rates {
		n := r * o.Duration.Seconds()
		if n >= 1 {
			continue
		}
		fix := "a higher rate" // even a day's window holds less than one
		if need := math.Ceil(1e3 / r); need <= float64(maxSpan/time.Millisecond) {
			fix = fmt.Sprintf("a --duration of at least %s or a higher rate", time.Duration(need)*time.Millisecond)
		}
		return badinput.Errorf("%s %g per second over --duration %s expects %.3g requests in a window, fewer than 1: give %s", flag, r, o.Duration, n, fix)
	}
	return nil
}

// maxSlices is the most slices --slice may cut a window into.
const maxSlices = 1000

// sliceCount is how many slices of slice the report cuts a window of d into,
// the last one short included (slo's cut); slice is positive.
func sliceCount(d, slice time.Duration) time.Duration {
	n := d / slice
	if d%slice != 0 {
		n++
	}
	return n
}

// Run is the sweep command's work: it checks the flags, opens the endpoint,
// calibrates the shape, measures the points and writes the report after
// each one.
func Run(ctx context.Context, o *Options) error {
	if ctx == nil {
		ctx = context.Background()
	}
	p, err := o.validate()
	if err != nil {
		return err
	}
	tg, err := o.shared().Open(ctx, o.F)
	if err != nil {
		return err
	}
	defer tg.Close()
	o.Body.HideSecrets(tg.Endpoint)
	bo := &bench.Options{
		Endpoint:       tg.Endpoint,
		Shape:          o.Body.Shape(tg.Endpoint.Model),
		Limits:         endpoints.StreamLimits{TTFT: o.TTFTTimeout, Stall: o.StallTimeout, Total: o.RequestTimeout},
		ConnectTimeout: o.ConnectTimeout,
		ProbeTimeout:   o.ProbeTimeout,
		Seed:           o.Seed,
		Nonce:          bench.NewNonce(),
	}
	errOut := o.F.IO.ErrOut
	var scraping string
	if bo.Metrics, scraping, err = o.Metrics.Open(ctx, tg.Endpoint); err != nil {
		return err
	}
	bo.MetricsInterval = o.Metrics.Interval
	plans, err := calibrate(ctx, errOut, bo, p)
	if err != nil {
		return err
	}
	if scraping != "" {
		fmt.Fprintln(errOut, scraping)
	}
	if len(p.slos) == 0 {
		fmt.Fprintf(errOut, "glmbench: no --slo: a request meets the SLOs when it completes\n")
	}
	rep := tg.Report(o.F)
	rep.Nonce = bo.Nonce
	rep.Options = o.reportOptions(p, tg.Endpoint)
	rep.Endpoint.ServerInfo = tg.ServerInfo(ctx)
	// A report that cannot be written ends the sweep, as it ends run: the
	// points after it would be measured for nothing.
	var writeErr error
	sampled := 0 // the samples handed to tg so far
	sctx, stop := context.WithCancel(ctx)
	defer stop()
	run := bench.Sweep(sctx, bo, plans[0], bench.SweepOptions{
		Mode: p.mode, Search: p.search, Timeline: p.tl, Slice: o.Slice, SLOs: p.slos, Attainment: o.Attainment,
		OnPoint: func(res *schema.SweepResult, records []schema.Record, samples []schema.MetricsSample) {
			if writeErr != nil {
				return // the point begun as the sweep was stopped
			}
			tg.AddSamples(samples[sampled:])
			sampled = len(samples)
			pt := &res.Points[len(res.Points)-1]
			fmt.Fprintln(errOut, pointLine(res, pt))
			for _, w := range pointWarnings(res, pt, records, tg.Endpoint.Model, bo.Shape.IgnoreEOS) {
				fmt.Fprintln(errOut, w)
			}
			rep.Sweeps = []schema.SweepResult{*res}
			if err := tg.WriteReport(o.F, rep, records); err != nil {
				writeErr = err
				stop()
			}
		},
	})
	if writeErr != nil {
		return writeErr
	}
	rep.Sweeps = []schema.SweepResult{run.Result}
	rep.Interrupted = run.Result.Stop == schema.StopInterrupted
	rep.Client = run.Totals.Client
	if err := tg.WriteReport(o.F, rep, run.Records); err != nil {
		return err
	}
	tg.WriteServerPlots(errOut)
	files, perr := reports.WriteSweepPlots(tg.Out, rep)
	if perr != nil {
		fmt.Fprintf(errOut, "glmbench: warning: plots: %v\n", perr)
	}
	if err := reports.WriteSweepSummary(o.F.IO.Out, rep); err != nil {
		return err
	}
	fmt.Fprintf(errOut, "glmbench: report written to %s (%d plots)\n", tg.Out, len(files))
	switch {
	case rep.Interrupted:
		return cmdutil.Silent(cmdutil.ExitInterrupted)
	case run.Totals.Completed == 0:
		return &cmdutil.ExitError{Code: cmdutil.ExitFailed, Err: errors.New("no request of the sweep completed")}
	}
	return nil
}

// calibrate plans the phase a sweep measures: the workload's phase
// (calibrated on the endpoint's filler curve), or the fixed shape.
func calibrate(ctx context.Context, errOut io.Writer, bo *bench.Options, p *plan) ([]bench.Plan, error) {
	if p.work == nil {
		return target.Calibrate(ctx, errOut, bo, []bench.Spec{p.spec}, fmt.Sprintf("%d/%d", p.spec.In, p.spec.Out))
	}
	wps, err := target.CalibrateWorkload(ctx, errOut, bo, []bench.WorkPhase{*p.work}, fmt.Sprintf("workload %s, phase %s", p.source, p.spec.Name))
	if err != nil {
		return nil, err
	}
	return []bench.Plan{{Spec: p.spec, Cal: bench.Calibration{PromptTokens: -1}, Work: wps[0]}}, nil
}

// reportOptions are the report's record of the sweep's options.
func (o *Options) reportOptions(p *plan, ep *endpoints.Endpoint) schema.Options {
	ro := schema.Options{
		Phases: p.spec.Name, Arrival: p.mode, Seed: o.Seed, Percentiles: schema.PercentileMethod,
		Timeouts: map[string]float64{"connect": o.ConnectTimeout.Seconds(), "ttft": o.TTFTTimeout.Seconds(),
			"stall": o.StallTimeout.Seconds(), "request": o.RequestTimeout.Seconds(), "probe": o.ProbeTimeout.Seconds()},
	}
	o.Body.Record(&ro, ep)
	ro.Workload, ro.Dataset = p.source, o.Dataset
	return ro
}

// workPhase reads --workload (or --dataset) and expands the phase to sweep:
// the only one, or --workload-phase. A multi-turn phase is refused: its
// sessions set their own pace, which a point's load would override.
func (o *Options) workPhase() (*bench.WorkPhase, string, error) {
	f, err := workload.Open(o.Workload, o.Dataset)
	if err != nil {
		return nil, "", err
	}
	var ph *workload.Phase
	for i := range f.Phases {
		if o.WorkloadPhase == "" && len(f.Phases) == 1 || f.Phases[i].Name == o.WorkloadPhase {
			ph = &f.Phases[i]
		}
	}
	switch {
	case ph == nil && o.WorkloadPhase == "":
		return nil, "", badinput.Errorf("workload %s has %d phases: name the one to sweep with --workload-phase", f.Source, len(f.Phases))
	case ph == nil:
		return nil, "", badinput.Errorf("--workload-phase %q: workload %s has no such phase", o.WorkloadPhase, f.Source)
	case ph.Kind == workload.MultiTurn:
		return nil, "", badinput.Errorf("workload %s, phase %s: a multi-turn phase's sessions set their own pace, so sweep cannot set its load; run it with glmbench run", f.Source, ph.Name)
	}
	reqs, warns, err := ph.ExpandWarn(o.Seed)
	if err != nil {
		return nil, "", err
	}
	for _, w := range warns {
		fmt.Fprintf(o.F.IO.ErrOut, "glmbench: warning: phase %s: %s\n", ph.Name, w)
	}
	return &bench.WorkPhase{Phase: *ph, Reqs: reqs}, f.Source, nil
}

// pointWarnings are what run warns of after a phase (phasewarn.Lines), for
// the point p of s: its PhaseResult is its window's measured requests, so
// the records are those of all (every point's) that p measured.
func pointWarnings(s *schema.SweepResult, p *schema.SweepPoint, all []schema.Record, model string, ignoreEOS bool) []string {
	var measured []schema.Record
	for i := range all {
		if all[i].Point == p.Point && all[i].Window == schema.WindowMeasured {
			measured = append(measured, all[i])
		}
	}
	subject := fmt.Sprintf("point %d, %s %s", p.Point, s.Mode, reports.LoadString(p.Load))
	return phasewarn.Lines(subject, &p.PhaseResult, measured, model, ignoreEOS)
}

// pointLine is the progress line after a point.
func pointLine(s *schema.SweepResult, p *schema.SweepPoint) string {
	att := "—"
	if p.SLOAttainment != nil {
		att = strconv.FormatFloat(*p.SLOAttainment, 'f', 3, 64)
	}
	verdict := "good"
	if !p.Good {
		verdict = "bad"
	}
	if p.Saturated {
		verdict = "client saturated"
	}
	return fmt.Sprintf("glmbench: point %d, %s %s: %d started, %d completed, %d errors, %d unfinished, attainment %s, %.1f out tok/s: %s",
		p.Point, s.Mode, reports.LoadString(p.Load), p.Started, p.Completed, p.Errors, p.Unfinished, att, p.OutTput, verdict)
}
