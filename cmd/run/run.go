// Package run is `glmbench run`: the load phases against an endpoint.
package run

import (
	"context"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/glmbench/glmbench/bench"
	"github.com/glmbench/glmbench/bench/agent"
	"github.com/glmbench/glmbench/bench/workload"
	"github.com/glmbench/glmbench/cmd/cmdutil"
	gatecmd "github.com/glmbench/glmbench/cmd/gate"
	"github.com/glmbench/glmbench/cmd/target"
	"github.com/glmbench/glmbench/endpoints"
	"github.com/glmbench/glmbench/internal/badinput"
	"github.com/glmbench/glmbench/reports"
	"github.com/glmbench/glmbench/reports/gate"
	"github.com/glmbench/glmbench/reports/schema"
	"github.com/glmbench/glmbench/reports/slo"
)

// Options are run's parsed flags and injected state.
type Options struct {
	F *cmdutil.Factory
	// Common is the endpoint, --connect-timeout, --label and --out.
	target.Common

	Phases      string
	PhasesGiven bool
	Custom      []string

	RequestRate    float64
	MaxConcurrency int
	Seed           int64

	PhaseCap       time.Duration
	TTFTTimeout    time.Duration
	StallTimeout   time.Duration
	RequestTimeout time.Duration
	// ProbeTimeout limits each calibration probe (0: bench.ProbeLimit's
	// default, which grows with the prompt).
	ProbeTimeout time.Duration
	// Body is --api, --ignore-eos, --stream-usage, --max-completion-tokens.
	target.Body

	// Baseline, when set, gates this run against those reports after it
	// (glmbench gate's thresholds and exit code 99).
	Baseline      []string
	Thresholds    []string
	ThresholdFile string
	JUnit         string
	// ProgressEvery is how often plain progress lines are printed when
	// stderr is not a terminal.
	ProgressEvery time.Duration
	// Summary is what stdout gets when the run ends: SummaryFull,
	// SummaryCompact, or SummaryAuto ("" too): compact on a terminal.
	Summary string
	// SLOs add goodput and SLO attainment to every phase (slo's syntax).
	SLOs []string
	// Workload is --workload: a workload file, or a built-in example's
	// name; Dataset is --dataset, a data set for its dataset phases.
	Workload string
	Dataset  string

	// Metrics is --metrics-url, --no-metrics and --metrics-interval.
	Metrics target.MetricsFlags
	// Agents are the agents of a distributed run (--agents, --agents-dns).
	Agents AgentFlags
	// Profile is --profile: the server's own profiler runs around the
	// phases (POST /start_profile before the first, /stop_profile after
	// the last; profile.go).
	Profile bool
	// AdminKeyEnv is --admin-api-key-env: the variable holding the key
	// --profile's routes are sent in the API key's place (SGLang's
	// --admin-api-key); adminKey is its value, read by validate.
	AdminKeyEnv string
	adminKey    string
	// profileStartWait and profileStopWait bound the profiler's calls
	// after the connect timeout (0: profileStartTimeout,
	// profileStopTimeout); tests shorten them.
	profileStartWait, profileStopWait time.Duration

	slos           slo.Set
	workloadSource string
}

// job runs one phase of the run.
type job func(ctx context.Context) bench.PhaseRun

// The --summary values.
const (
	SummaryAuto    = "auto"
	SummaryFull    = "full"
	SummaryCompact = "compact"
)

// shared is the flags the endpoint commands share, over o's fields.
func (o *Options) shared() *target.Flags {
	return target.LoadFlags(&o.Common, &o.RequestTimeout, &o.StallTimeout)
}

// NewCmdRun binds run's flags. runF replaces the run function in tests.
func NewCmdRun(f *cmdutil.Factory, runF func(*Options) error) *cobra.Command {
	o := &Options{F: f, ProgressEvery: 10 * time.Second}
	cmd := &cobra.Command{
		Use:   "run",
		Short: "Run the load phases against an endpoint",
		Long: `Run sends the load phases to an OpenAI-compatible endpoint and measures them.

Phases (requests, input tokens, output tokens):
  single          1 request,    256 in /  256 out
  decode_medium 512 at once,    256 in /  256 out
  decode_long    16 at once,   8192 in /  256 out
  throughput_8k 929 at once,   8192 in / 1024 out

Before any load, each phase's IN+OUT is checked against the context the server
states (max_model_len in /v1/models, /server_info, llama.cpp's /props),
each phase's prompt is calibrated against the endpoint's own
usage.prompt_tokens (each probe within --probe-timeout; a server that
truncates long prompts exits 2 at once), and a request of the load's exact
shape is probed. Every request (the probes too) streams /chat/completions with
usage and ignore_eos; none is retried. With --api completions every request
streams /completions instead, its prompt the text itself with no chat template
(a base model's route, and the peer tools' default): a request of several
messages (a workload's system prompt, a session's earlier turns and answers)
becomes one prompt, their contents joined in order with a blank line, so what
requests share stays a prefix of each prompt and a prefix cache still serves it.
Each failed request gets one error class (rate_limited, queue_full, http_5xx,
http_4xx, redirect, connect, ttft_timeout, stalled, total_timeout, stream_error,
truncated, empty). The report is written even when every request failed, at
the phase cap, or on Ctrl-C (exit 130).

With --workload FILE (or a built-in example: fixed, random, sharegpt,
shared-prefix, multi-turn, trace) the phases come from a workload: mixed
lengths, data sets (--dataset PATH), shared system prompts, multi-turn
sessions and traces, each with its own arrival. Their lengths are mapped
onto the endpoint's own tokens by one calibration, and each phase reports
the prefix cache's hit rate beside the rate the workload was built for.

With --profile the server's own profiler runs around the measured phases, as
vllm bench serve --profile and SGLang's bench_serving.py --profile run it:
POST /start_profile at the server's root after calibration, before the first
phase's load, and POST /stop_profile after the last phase (on Ctrl-C too).
vLLM has the routes only when started with its profiler configured, SGLang
always; with the built-in engine a Go CPU profile of the glmbench process (the
engine and the client both: they share it) goes into --out. A start that fails
exits 2 before any load; a stop that fails is a warning. The report is written
before the stop, which waits up to 10 minutes (vLLM answers once its trace is
written); a Ctrl-C ends the wait.

When the run ends, stdout gets a summary (--summary): on a terminal (auto,
the default) or with compact, a plain-text table of the columns that matter,
only the error classes that occurred and where the report went; otherwise, or
with full, report.md's phase and failure tables in Markdown. report.md always
has everything.`,
		Example: `  glmbench run --phases all --endpoint http://127.0.0.1:30000/v1
  glmbench run --endpoint https://api.example.com/v1 --model glm-5 --phases single,decode_medium
  glmbench run --endpoints endpoints.yaml --name hosted --phase burst=64/1024/128 --max-concurrency 16
  glmbench run --endpoint http://127.0.0.1:30000/v1 --workload shared-prefix
  glmbench run --endpoint http://127.0.0.1:8000/v1 --dataset ShareGPT_V3_unfiltered_cleaned_split.json`,
		Args: cmdutil.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			o.PhasesGiven = cmd.Flags().Changed("phases")
			o.shared().Parsed()
			return cmdutil.Dispatch(cmd, o, runF, Run)
		},
	}
	fl := cmd.Flags()
	o.shared().AddFlags(cmd)
	fl.StringVar(&o.Phases, "phases", "all", "phases to run: all, or a comma list of single,decode_medium,decode_long,throughput_8k")
	fl.StringArrayVar(&o.Custom, "phase", nil, "add a custom phase NAME=N/IN/OUT (repeatable)")
	fl.Float64Var(&o.RequestRate, "request-rate", 0, "send requests as a Poisson process of R per second (0: all at once)")
	fl.IntVar(&o.MaxConcurrency, "max-concurrency", 0, "at most C requests in flight (0: no limit)")
	fl.Int64Var(&o.Seed, "seed", 1, "seed of the Poisson arrivals")
	fl.DurationVar(&o.PhaseCap, "phase-cap", 30*time.Minute, "end a phase after this long, cancelling requests in flight (0: no cap)")
	fl.DurationVar(&o.TTFTTimeout, "ttft-timeout", 10*time.Minute, "limit on the wait for the first content event (0: none)")
	fl.DurationVar(&o.ProbeTimeout, "probe-timeout", 0, "limit on each calibration probe (0: 1m plus 20ms per input token); the whole calibration gets five times it for each distinct input length")
	o.Body.AddFlags(fl)
	fl.StringSliceVar(&o.Baseline, "baseline", nil, "gate this run against these reports when it ends (as glmbench gate; exit 99 when a threshold is crossed)")
	fl.StringArrayVar(&o.Thresholds, "threshold", nil, "a gate threshold, e.g. 'decode_medium.out_tput > -5%' (repeatable; needs --baseline)")
	fl.StringVar(&o.ThresholdFile, "threshold-file", "", "YAML file of gate thresholds (needs --baseline)")
	fl.StringVar(&o.JUnit, "junit", "", "write the gate's JUnit XML to this file (needs --baseline)")
	fl.StringArrayVar(&o.SLOs, "slo", nil, "a service-level objective, e.g. 'ttft < 2s' or 'tpot < 50ms': adds goodput and attainment to each phase (repeatable)")
	o.Metrics.AddFlags(fl)
	o.Agents.AddFlags(fl)
	fl.StringVar(&o.Workload, "workload", "", "run a workload file's phases (YAML), or a built-in example: "+strings.Join(workload.Names(), ", "))
	fl.StringVar(&o.Dataset, "dataset", "", "a data set (ShareGPT JSON, JSONL, text, or parquet as the Hugging Face Hub serves it) for the workload's dataset phases; alone, one dataset phase of all its items")
	fl.StringVar(&o.AdminKeyEnv, "admin-api-key-env", "", "environment variable holding the key --profile sends on /start_profile and /stop_profile in the API key's place (SGLang started with --admin-api-key takes only that key there)")
	fl.BoolVar(&o.Profile, "profile", false, "run the server's own profiler around the phases: POST /start_profile after calibration, /stop_profile after the last phase (vLLM with its profiler configured, SGLang, the built-in engine: a CPU profile of the whole process, client included, in --out)")
	fl.StringVar(&o.Summary, "summary", SummaryAuto, "what stdout gets at the end: auto (compact on a terminal, else full), full (report.md's Markdown tables) or compact")
	return cmd
}

// validate checks the flags that need no endpoint, and reads the
// workload when one is given; it runs before anything is sent.
func (o *Options) validate() ([]bench.Spec, []bench.WorkPhase, error) {
	specs, work, err := o.phases()
	if err != nil {
		return nil, nil, err
	}
	if err := o.Body.Check(); err != nil {
		return nil, nil, err
	}
	// The order run always checked its limits in: phase cap, connect,
	// TTFT, stall, request.
	if o.PhaseCap < 0 {
		return nil, nil, badinput.Errorf("--phase-cap must not be negative")
	}
	if err := o.shared().Validate("connect-timeout"); err != nil {
		return nil, nil, err
	}
	if o.TTFTTimeout < 0 {
		return nil, nil, badinput.Errorf("--ttft-timeout must not be negative")
	}
	if err := o.shared().Validate("stall-timeout", "request-timeout"); err != nil {
		return nil, nil, err
	}
	if o.ProbeTimeout < 0 {
		return nil, nil, badinput.Errorf("--probe-timeout must not be negative")
	}
	if o.RequestRate < 0 || math.IsNaN(o.RequestRate) || math.IsInf(o.RequestRate, 0) {
		// pflag parses "NaN" and "Inf" as numbers; either reached the report
		// and failed its write, after the load.
		return nil, nil, badinput.Errorf("--request-rate must be a number of requests per second, 0 or more, not %v", o.RequestRate)
	}
	if o.MaxConcurrency < 0 {
		return nil, nil, badinput.Errorf("--max-concurrency must not be negative")
	}
	switch o.Summary {
	case "", SummaryAuto, SummaryFull, SummaryCompact:
	default:
		return nil, nil, badinput.Errorf("--summary must be auto, full or compact, not %q", o.Summary)
	}
	if err := o.Metrics.Validate(); err != nil {
		return nil, nil, err
	}
	if err := o.Agents.validate(o.F.Getenv); err != nil {
		return nil, nil, err
	}
	if err := o.readAdminKey(); err != nil {
		return nil, nil, err
	}
	if o.Agents.given() && o.workloadGiven() {
		return nil, nil, badinput.Errorf("--agents runs the fixed and --phase phases; workloads are not distributed yet")
	}
	if o.slos, err = slo.ParseAll(o.SLOs); err != nil {
		return nil, nil, err
	}
	if len(o.Baseline) == 0 && (len(o.Thresholds) > 0 || o.ThresholdFile != "" || o.JUnit != "") {
		return nil, nil, badinput.Errorf("--threshold, --threshold-file and --junit need --baseline (the reports to gate against)")
	}
	return specs, work, nil
}

// phases are the run's phases: --workload's (or --dataset's), expanded,
// or else the built-in and --phase ones.
func (o *Options) phases() ([]bench.Spec, []bench.WorkPhase, error) {
	if !o.workloadGiven() {
		specs, err := bench.Select(o.Phases, o.PhasesGiven, o.Custom)
		return specs, nil, err
	}
	work, err := o.loadWorkload()
	if err != nil {
		return nil, nil, err
	}
	return workSpecs(work), work, nil
}

// prepareGate reads the baseline and thresholds and checks that every phase
// to run has the baseline's shape, all before any load; nil without --baseline.
func (o *Options) prepareGate(specs []bench.Spec) (*gate.Plan, error) {
	if len(o.Baseline) == 0 {
		return nil, nil
	}
	// The endpoint resolved, not opened (no request): its key and header
	// values, hidden in the extra body as the report records it.
	var secrets *endpoints.Endpoint
	if o.Endpoint.Given() {
		secrets, _ = endpoints.Resolve(o.Endpoint, o.F.Getenv)
	}
	gp, err := gate.Prepare(gate.Spec{Baseline: o.Baseline, Thresholds: o.Thresholds, ThresholdFile: o.ThresholdFile},
		o.F.IO.ErrOut)
	if err != nil {
		return nil, err
	}
	for _, s := range specs {
		if err := gp.RequireShape(s.Name, s.N, s.In, s.Out); err != nil {
			return nil, err
		}
		if err := gp.RequireRequest(s.Name, o.APIName(), o.Extra(secrets)); err != nil {
			return nil, err
		}
	}
	return gp, nil
}

// Run is the run command's work: it checks the flags and the gate's
// baseline, opens the endpoint, calibrates every phase, runs them, writes
// the report after each, and maps how the run ended to an exit code.
func Run(ctx context.Context, o *Options) error {
	if ctx == nil {
		ctx = context.Background()
	}
	specs, work, err := o.validate()
	if err != nil {
		return err
	}
	gp, err := o.prepareGate(specs)
	if err != nil {
		return err
	}
	tg, err := o.shared().Open(ctx, o.F)
	if err != nil {
		return err
	}
	defer tg.Close()
	o.Body.HideSecrets(tg.Endpoint)
	bo := o.benchOptions(tg.Endpoint)
	var scraping string
	if bo.Metrics, scraping, err = o.Metrics.Open(ctx, tg.Endpoint); err != nil {
		return err
	}
	bo.MetricsInterval = o.Metrics.Interval
	if o.Agents.given() {
		if err := o.Agents.dial(ctx, bo, func(s string) { fmt.Fprintln(o.F.IO.ErrOut, s) }); err != nil {
			return err
		}
	}
	jobs, err := o.jobs(ctx, bo, specs, work)
	if err != nil {
		return err
	}
	if scraping != "" {
		fmt.Fprintln(o.F.IO.ErrOut, scraping)
	}
	rep := o.newReport(ctx, tg, specs, bo.Nonce)
	stopProfile, err := o.startProfile(ctx, tg, rep)
	if err != nil {
		return err
	}
	// Once: after the report is whole on disk, or on any way out.
	defer stopProfile()
	totals, records, err := o.runPhases(ctx, tg, bo, jobs, rep)
	if err != nil {
		return err
	}
	// The report is written before the stop, which may wait minutes on
	// the server's trace: a second Ctrl-C then loses nothing.
	rep.Interrupted = ctx.Err() != nil
	if err := tg.WriteReport(o.F, rep, records); err != nil {
		return err
	}
	stopProfile()
	tg.WriteServerPlots(o.F.IO.ErrOut)
	if err := o.writeSummary(rep, tg.Out); err != nil {
		return err
	}
	fmt.Fprintf(o.F.IO.ErrOut, "glmbench: report written to %s\n", tg.Out)
	switch {
	case rep.Interrupted:
		return cmdutil.Silent(cmdutil.ExitInterrupted)
	case totals.Completed == 0:
		return &cmdutil.ExitError{Code: cmdutil.ExitFailed, Err: errors.New(totals.NoneCompleted())}
	case gp != nil:
		return gatecmd.Decide(o.F, gp, o.JUnit, []*schema.Report{rep})
	}
	return nil
}

// jobs calibrates the run's phases on the endpoint: the workload's, or
// the fixed ones.
func (o *Options) jobs(ctx context.Context, bo *bench.Options, specs []bench.Spec, work []bench.WorkPhase) ([]job, error) {
	if work != nil {
		return o.workJobs(ctx, bo, work)
	}
	plans, err := target.Calibrate(ctx, o.F.IO.ErrOut, bo, specs, fmt.Sprintf("%d phase(s)", len(specs)))
	if err != nil {
		return nil, err
	}
	if o.Agents.given() {
		return phaseJobs(bo, plans, o.Agents.phase), nil
	}
	return phaseJobs(bo, plans, bench.RunPhase), nil
}

// phaseJobs are the calibrated plans as jobs, each running its plan with
// run (bench.RunPhase, bench.RunWorkPhase).
func phaseJobs[P any](bo *bench.Options, plans []P, run func(context.Context, *bench.Options, P) bench.PhaseRun) []job {
	jobs := make([]job, len(plans))
	for i, pl := range plans {
		jobs[i] = func(ctx context.Context) bench.PhaseRun { return run(ctx, bo, pl) }
	}
	return jobs
}

// benchOptions are the load's options for the endpoint ep, from the flags.
func (o *Options) benchOptions(ep *endpoints.Endpoint) *bench.Options {
	return &bench.Options{
		Endpoint: ep,
		Shape:    o.Body.Shape(ep.Model),
		Limits: endpoints.StreamLimits{
			TTFT: o.TTFTTimeout, Stall: o.StallTimeout, Total: o.RequestTimeout,
		},
		ConnectTimeout: o.ConnectTimeout,
		ProbeTimeout:   o.ProbeTimeout,
		PhaseCap:       o.PhaseCap,
		RequestRate:    o.RequestRate,
		MaxConcurrency: o.MaxConcurrency,
		Seed:           o.Seed,
		Nonce:          bench.NewNonce(),
		Progress:       &bench.Progress{},
		SLOs:           o.slos,
	}
}

// newReport is the report before any phase: the target, the run's options
// and what the server says of itself.
func (o *Options) newReport(ctx context.Context, tg *target.Target, specs []bench.Spec, nonce string) *schema.Report {
	rep := tg.Report(o.F)
	rep.Nonce = nonce
	rep.Options = schema.Options{
		Phases:         phaseList(specs),
		Timeouts:       timeouts(o),
		Arrival:        arrivalName(o),
		RequestRate:    o.RequestRate,
		MaxConcurrency: o.MaxConcurrency,
		Seed:           o.Seed,
		Percentiles:    schema.PercentileMethod,
		SLOs:           o.slos.Strings(),
		Workload:       o.workloadSource,
		Dataset:        o.Dataset,
	}
	o.Body.Record(&rep.Options, tg.Endpoint)
	rep.Endpoint.ServerInfo = tg.ServerInfo(ctx)
	return rep
}

// runPhases runs the plans in turn until ctx is cancelled, adding each
// phase to rep and writing the report after every phase, so a killed run
// keeps what it measured. It returns the totals and every phase's records.
func (o *Options) runPhases(ctx context.Context, tg *target.Target, bo *bench.Options, jobs []job, rep *schema.Report) (bench.Totals, []schema.Record, error) {
	var totals bench.Totals
	var records []schema.Record
	for _, run1 := range jobs {
		if ctx.Err() != nil {
			break
		}
		stop := startProgress(o.F.IO, bo.Progress, o.ProgressEvery)
		run := run1(ctx)
		stop()
		rep.Phases = append(rep.Phases, run.Result)
		records = append(records, run.Records...)
		tg.AddSamples(run.Samples)
		totals.Add(&run)
		rep.Client = totals.Client
		fmt.Fprintln(o.F.IO.ErrOut, phaseLine(&run.Result))
		for _, w := range phaseWarnings(&run.Result, run.Records, tg.Endpoint.Model, bo.Shape.IgnoreEOS) {
			fmt.Fprintln(o.F.IO.ErrOut, w)
		}
		if err := agent.Lost(run.Result); err != nil {
			fmt.Fprintf(o.F.IO.ErrOut, "glmbench: warning: phase %s degraded: %v\n", run.Result.Phase, err)
		}
		if err := tg.WriteReport(o.F, rep, records); err != nil {
			return totals, records, err
		}
	}
	return totals, records, nil
}

// writeSummary prints the run's end on stdout: WriteCompact on a terminal
// (or with --summary compact), where report.md's 16-column tables would
// wrap; else those tables, for a pipe or a file to keep.
func (o *Options) writeSummary(rep *schema.Report, dir string) error {
	io := o.F.IO
	if o.Summary == SummaryCompact || (o.Summary == SummaryAuto || o.Summary == "") && io.OutTTY() {
		return reports.WriteCompact(io.Out, rep, filepath.Join(dir, reports.ReportMD))
	}
	return reports.WriteSummary(io.Out, rep)
}

func phaseList(specs []bench.Spec) string {
	var names []string
	for _, s := range specs {
		names = append(names, s.String())
	}
	return strings.Join(names, ",")
}

func timeouts(o *Options) map[string]float64 {
	return map[string]float64{
		"connect": o.ConnectTimeout.Seconds(), "ttft": o.TTFTTimeout.Seconds(), "stall": o.StallTimeout.Seconds(),
		"request": o.RequestTimeout.Seconds(), "phase_cap": o.PhaseCap.Seconds(), "probe": o.ProbeTimeout.Seconds(),
	}
}

func arrivalName(o *Options) string {
	if o.workloadGiven() {
		return "workload"
	}
	if o.RequestRate > 0 {
		return "poisson"
	}
	return "burst"
}
