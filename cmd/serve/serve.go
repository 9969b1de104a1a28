// Package serve is `glmbench serve`: the reference engine as an
// OpenAI-compatible server.
package serve

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/glmbench/glmbench/cmd/cmdutil"
	"github.com/glmbench/glmbench/engine"
	"github.com/glmbench/glmbench/engine/cudaexec"
	"github.com/glmbench/glmbench/engine/model"
	"github.com/glmbench/glmbench/engine/server"
	"github.com/glmbench/glmbench/engine/sim"
	"github.com/glmbench/glmbench/internal/badinput"
)

// Options are serve's flags.
type Options struct {
	F            *cmdutil.Factory
	Engine       engine.Options
	ServerConfig string
	Faults       []string
	SimProfile   string
	TruthFile    string
	// ReadyFile, when set, gets the Ready line once the server accepts
	// requests ("-": stdout).
	ReadyFile string
	// ProfileDir, when set, turns on /start_profile and /stop_profile,
	// which write a Go CPU profile of the server there.
	ProfileDir string
	// flags are the parsed flags; those given on the command line win over
	// --server-config.
	flags *pflag.FlagSet
}

// NewCmdServe binds serve's flags. runF replaces the run function in tests.
func NewCmdServe(f *cmdutil.Factory, runF func(*Options) error) *cobra.Command {
	o := &Options{F: f, Engine: engine.DefaultOptions()}
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Serve the reference engine over the OpenAI API",
		Long: `Serve runs glmbench's reference engine — a GLM-5-architecture model (MLA, DSA
sparse attention, sigmoid-routed MoE, MTP) at toy scale on CPU kernels, or on
an NVIDIA GPU with --device cuda (see below) — behind
an SGLang-like scheduler and an OpenAI-compatible HTTP API:
POST /v1/chat/completions, POST /v1/completions, GET /v1/models, GET /health,
GET /server_info (and /get_server_info, its old name), GET /metrics.

Scheduler flags are named as SGLang's. --server-config reads an SGLang
server-args JSON (its /server_info output), applies the keys the engine
understands and lists the ones it ignores; flags given on the command line win.
Mixed chunks are on by default (SGLang's default is off): a CPU prefills about
a thousand times slower than a GPU, so pausing decode while prefills keep
coming would stall started streams for minutes.
--speculative-algorithm EAGLE (or NEXTN) turns on MTP speculative decoding as
SGLang's: each step the MTP layer drafts --speculative-num-steps tokens per
request (topk 1) and the model verifies them in one forward pass; at
temperature 0 the output is plain decoding's. It turns mixed chunks off, as
SGLang does. With --executor sim, --sim-accept-length fixes the accept length.
--weight-dtype rounds the weights at load to the values a deployment storing
them so would hold, then computes in float32 as ever: bf16 (round to nearest
even), fp8_e4m3 (OCP E4M3 with one scale per tensor, amax/448) or nvfp4
(E2M1 in blocks of 16 along a row, each with an E4M3 scale, and one fp32 scale
per tensor, as NVIDIA's ModelOpt). It rounds every Linear weight (attention,
indexer, MLPs, experts, MTP) and keeps embeddings, norms, biases, lm_head, the
router and the indexer's weights_proj in fp32, as ModelOpt and DeepSeek's FP8
checkpoints keep them in high precision. /server_info reports the
checkpoint (preset and seed, or path), weight_dtype and the tensors rounded.
--device picks what the model runs on: cpu (the default: engine/model on the
CPU kernels), cuda (the same forward pass as kernels on the first NVIDIA GPU,
through the CUDA driver and NVRTC loaded at start, no cgo; the weights and the
KV pool live in GPU memory, the default pool sized to 8 GiB of it; without a
CUDA driver or GPU it fails before listening), auto (cuda when a GPU opens,
else cpu, saying why) or cpu-ops (the GPU path's op list run on the CPU, bit
for bit the same tokens as cpu: a check of the GPU path where there is none).
On cuda, decode batches replay a CUDA graph captured per batch-size bucket, as
SGLang's (--disable-cuda-graph, --cuda-graph-max-bs).
The startup line names the device. --executor sim runs no model: only cpu.
SIGINT or SIGTERM shuts down gracefully: running streams end, new requests get 503.

--ready-file PATH writes one JSON line once the server accepts requests, for
scripts that start it on --port 0 (glmbench selftest reads it from stdout):
  {"base_url":"http://127.0.0.1:40113/v1","model":"glmbench-nano"}
PATH "-" is stdout; a file appears whole (written aside, then renamed) and is
removed when the server stops.

--profile-dir DIR serves POST (or GET) /start_profile and /stop_profile, the
routes SGLang has and vLLM has with its profiler configured: each start writes
a Go CPU profile of the server process to DIR/glmbench-<UTC time>.pprof, which
both answers name, until the stop (glmbench run --profile sends them). A
second start is 409, a stop with none running 400; without DIR both are 404.

--fault KIND[=VALUE] (repeatable) makes the server misbehave on purpose, to
test harnesses against the failures real endpoints show:
` + indent(server.FaultHelp) + `
`,
		Example: `  glmbench serve --port 30000 --model-preset nano
  glmbench serve --model-path ./tiny --max-running-requests 64 --chunked-prefill-size 2048
  glmbench serve --port 30001 --weight-dtype nvfp4
  glmbench serve --device cuda --model-preset gpu
  glmbench serve --server-config sglang_server_config.json --max-queued-requests 128`,
		Args: cmdutil.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			o.flags = cmd.Flags()
			return cmdutil.Dispatch(cmd, o, runF, Run)
		},
	}
	o.bindFlags(cmd.Flags())
	return cmd
}

// bindFlags binds serve's flags to o: the engine's, SGLang's scheduler
// flags, the simulated executor's and the server's own.
func (o *Options) bindFlags(fl *pflag.FlagSet) {
	e := &o.Engine
	s := &e.Sched
	fl.StringVar(&e.Host, "host", e.Host, "address to listen on")
	fl.IntVar(&e.Port, "port", e.Port, "port to listen on (0: a free one)")
	fl.StringVar(&e.Preset, "model-preset", e.Preset, "synthetic model preset: nano, tiny or gpu (about 480 M parameters, for --device cuda)")
	fl.StringVar(&e.ModelPath, "model-path", "", "checkpoint folder (config.json + model.safetensors) instead of a preset")
	fl.Uint64Var(&e.Seed, "seed", e.Seed, "seed of a preset's weights")
	fl.StringVar(&e.WeightDType, "weight-dtype", e.WeightDType, "round the weights at load as this format stores them: fp32, bf16, fp8_e4m3 or nvfp4 (see above)")
	fl.StringVar(&e.ServedModelName, "served-model-name", "", "model id the API lists (default: glmbench-<preset> or the model path)")
	fl.StringVar(&o.ServerConfig, "server-config", "", "SGLang server-args JSON to apply")
	fl.IntVar(&s.MaxRunningRequests, "max-running-requests", 0, "most requests in the running batch (0: min(2048, max-total-tokens/2))")
	fl.IntVar(&s.MaxQueuedRequests, "max-queued-requests", 0, "most waiting requests; beyond, 503 \"The request queue is full.\" (0: unbounded)")
	fl.IntVar(&s.ChunkedPrefillSize, "chunked-prefill-size", 0, "most prompt tokens of one request per prefill batch (-1: no chunking; 0: 4096)")
	fl.IntVar(&s.MaxPrefillTokens, "max-prefill-tokens", 0, "most new tokens in one prefill batch (0: 16384)")
	fl.IntVar(&s.PageSize, "page-size", s.PageSize, "tokens per KV page (64, as SGLang needs for DSA models)")
	fl.IntVar(&s.MaxTotalTokens, "max-total-tokens", 0, "KV pool size in tokens (0: sized to the model, up to 9.5 M)")
	fl.StringVar(&s.SchedulePolicy, "schedule-policy", "", "fcfs or lpm (default fcfs)")
	fl.BoolVar(&s.DisableRadixCache, "disable-radix-cache", false, "turn the prefix cache off")
	fl.IntVar(&s.StreamInterval, "stream-interval", 0, "tokens per stream event at most (0: 1)")
	fl.Float64Var(&s.ScheduleConservativeness, "schedule-conservativeness", 0, "scales the KV reserved for running requests (0: 1.0)")
	fl.IntVar(&s.ContextLength, "context-length", 0, "longest prompt + output (0: the model's max_position_embeddings)")
	fl.BoolVar(&s.EnableMixedChunk, "enable-mixed-chunk", s.EnableMixedChunk, "decode running requests in the same batch as a prefill (SGLang's default is off; on here, see --help)")
	fl.StringVar(&s.SpeculativeAlgorithm, "speculative-algorithm", "", "speculative decoding: EAGLE (or its alias NEXTN) drafts with the model's MTP layer (default off)")
	fl.IntVar(&s.SpeculativeNumSteps, "speculative-num-steps", 0, "tokens drafted per step (0: 3)")
	fl.IntVar(&s.SpeculativeEagleTopK, "speculative-eagle-topk", 0, "draft branching; only 1 is supported (0: 1)")
	fl.IntVar(&s.SpeculativeNumDraftTokens, "speculative-num-draft-tokens", 0, "tokens verified per step; with topk 1 always num-steps+1, as SGLang adjusts it")
	fl.IntVar(&e.RateLimitConcurrency, "rate-limit-concurrency", 0, "gateway: answer 429 beyond this many requests in flight (0: off)")
	fl.IntVar(&e.RateLimitRPM, "rate-limit-rpm", 0, "gateway: answer 429 beyond this many requests per minute (0: off)")
	fl.StringVar(&e.Device, "device", e.Device, engine.DeviceHelp)
	fl.BoolVar(&e.DisableCUDAGraph, "disable-cuda-graph", false, "--device cuda: launch every decode batch directly instead of replaying CUDA graphs (as SGLang's)")
	fl.IntVar(&e.CUDAGraphMaxBS, "cuda-graph-max-bs", 0, fmt.Sprintf("--device cuda: the largest decode batch that replays a CUDA graph, captured per batch-size bucket as SGLang's: 1, 2, 4, … 256, then every 128 (0: %d)", cudaexec.DefaultCUDAGraphMaxBS))
	fl.StringVar(&e.Executor, "executor", e.Executor, "model, or sim: the real scheduler and API over a step-time cost model with deterministic tokens")
	fl.StringVar(&o.SimProfile, "sim-profile", "", `sim cost model file, JSON of durations: {"step_overhead": "2ms", "prefill_token": "200ns", "decode_seq": "2us", "kv_read": "1ns"}`)
	fl.DurationVar(&e.SimCost.StepOverhead, "sim-step-overhead", e.SimCost.StepOverhead, "sim: time per batch")
	fl.DurationVar(&e.SimCost.PrefillToken, "sim-prefill-token", e.SimCost.PrefillToken, "sim: time per prompt token computed")
	fl.DurationVar(&e.SimCost.DecodeSeq, "sim-decode-seq", e.SimCost.DecodeSeq, "sim: time per sequence decoding a token")
	fl.DurationVar(&e.SimCost.KVRead, "sim-kv-read", e.SimCost.KVRead, "sim: time per cached token a batch reads")
	fl.Float64Var(&e.SimAcceptLength, "sim-accept-length", 0, "sim: mean tokens a speculative verify step emits per request, like SGLANG_SIMULATE_ACC_LEN (0: 1, no draft accepted)")
	fl.Int64Var(&e.MaxBodyBytes, "max-body-bytes", 0, "largest POST body, refused with 413 while it is read (0: 4 MiB, or 32 bytes per token of context if more)")
	fl.Int64Var(&e.MaxBufferedBytes, "max-buffered-bytes", 0, "bytes of all bodies being read at once; beyond, 503 (0: 256 MiB, or 4 bodies if more)")
	fl.DurationVar(&e.BodyTimeout, "body-timeout", 0, "time a POST body may take to arrive, else 408 (0: 30s; negative: none)")
	fl.IntVar(&e.MaxParsing, "max-parsing", 0, "bodies decoded and tokenized at once; others wait up to 10 s, then 503 (0: max(2, CPUs))")
	fl.DurationVar(&e.IdleTimeout, "idle-timeout", 0, "close keep-alive connections idle this long (0: 2m)")
	fl.StringVar(&o.TruthFile, "truth", "", "write every stream's arrival and event times to FILE (JSONL), the ground truth for glmbench selftest")
	fl.StringVar(&o.ReadyFile, "ready-file", "", `once serving, write {"base_url": …, "model": …} and a newline to PATH ("-": stdout), removed on exit`)
	fl.StringVar(&o.ProfileDir, "profile-dir", "", "serve POST (or GET) /start_profile and /stop_profile, as SGLang's, writing a Go CPU profile of the server to DIR/glmbench-<UTC time>.pprof (none: the routes answer 404, as vLLM's with its profiler off)")
	fl.StringArrayVar(&o.Faults, "fault", nil, "misbehave on purpose: "+server.FaultSynopsis+" (repeatable; see above)")
}

// Run serves until the context ends (Ctrl-C), then shuts down gracefully.
func Run(ctx context.Context, o *Options) error {
	if ctx == nil {
		ctx = context.Background()
	}
	io := o.F.IO
	if err := o.applyServerConfig(); err != nil {
		return err
	}
	if err := o.checkSpeculative(); err != nil {
		return err
	}
	if err := o.checkWeightDType(); err != nil {
		return err
	}
	if err := o.checkDevice(); err != nil {
		return err
	}
	if len(o.Faults) > 0 {
		o.Engine.Faults = &server.Faults{}
		for _, spec := range o.Faults {
			if err := server.ParseFault(spec, o.Engine.Faults); err != nil {
				return badinput.Errorf("%v", err)
			}
		}
	}
	if o.SimProfile != "" {
		cost, err := sim.ReadCost(o.SimProfile)
		if err != nil {
			return badinput.Errorf("--sim-profile: %v", err)
		}
		o.Engine.SimCost = cost
	}
	if o.TruthFile != "" {
		f, err := os.Create(o.TruthFile)
		if err != nil {
			return badinput.Errorf("--truth: %v", err)
		}
		defer f.Close()
		o.Engine.Truth = f
	}
	var ready *readyWriter
	if o.ReadyFile != "" {
		var err error
		if ready, err = openReady(o.ReadyFile, io.Out); err != nil {
			return badinput.Errorf("--ready-file: %v", err)
		}
		defer ready.discard()
	}
	o.Engine.Version = o.F.Version
	o.Engine.Logger = slog.New(slog.NewTextHandler(io.ErrOut, &slog.HandlerOptions{Level: slog.LevelWarn}))
	e, err := engine.Start(o.Engine)
	if err != nil {
		return badinput.Errorf("%v", err)
	}
	if o.ProfileDir != "" {
		e.Server.SetProfileDir(o.ProfileDir)
	}
	sc := e.Sched.Config()
	spec := ""
	if sc.Speculative() {
		spec = fmt.Sprintf(", speculative %s with %d draft tokens", sc.SpeculativeAlgorithm, sc.SpeculativeNumSteps)
	}
	if ck := e.Checkpoint(); ck.Rounded > 0 {
		spec += fmt.Sprintf(", weights %s (%d tensors rounded)", ck.WeightDType, ck.Rounded)
	}
	dev := e.Device()
	if dev.Fallback != "" {
		fmt.Fprintf(io.ErrOut, "glmbench: --device auto: no GPU opened (%s); the model runs on the CPU\n", dev.Fallback)
	}
	fmt.Fprintf(io.ErrOut, "glmbench: serving %s at %s (KV pool %d tokens, page %d, chunked prefill %d, max running %d%s, device %s)\n",
		e.ModelName(), e.BaseURL(), sc.MaxTotalTokens, sc.PageSize, sc.ChunkedPrefillSize, sc.MaxRunningRequests, spec, dev)
	if ready != nil {
		if err := ready.write(Ready{BaseURL: e.BaseURL(), Model: e.ModelName()}); err != nil {
			e.Shutdown(context.Background())
			return fmt.Errorf("--ready-file: %w", err)
		}
	}
	select {
	case <-ctx.Done():
	case err := <-waitErr(e):
		return err
	}
	fmt.Fprintln(io.ErrOut, "glmbench: shutting down")
	sctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	return e.Shutdown(sctx)
}

// checkSpeculative refuses bad speculative settings, from the flags or
// --server-config, before anything starts.
func (o *Options) checkSpeculative() error {
	note, err := o.Engine.Sched.CheckSpeculative()
	if err != nil {
		return badinput.Errorf("%v", err)
	}
	if note != "" {
		fmt.Fprintf(o.F.IO.ErrOut, "glmbench: %s\n", note)
	}
	if a := o.Engine.SimAcceptLength; a != 0 && !(a >= 1) {
		return badinput.Errorf("--sim-accept-length %v: want at least 1 (tokens per verify step)", a)
	}
	return nil
}

// checkWeightDType refuses an unknown --weight-dtype (from the flag or
// --server-config's weight_dtype), or one the simulated executor, which has
// no weights, cannot honour, before anything starts.
func (o *Options) checkWeightDType() error {
	d, err := model.ParseDType(o.Engine.WeightDType)
	if err != nil {
		return badinput.Errorf("--weight-dtype: %v", err)
	}
	if d != model.FP32 && o.Engine.Executor == "sim" {
		return badinput.Errorf("--weight-dtype %s: --executor sim has no weights to round", d)
	}
	return nil
}

// checkDevice refuses an unknown --device, or one the simulated executor,
// which runs no model, cannot honour, and a negative --cuda-graph-max-bs,
// before anything starts.
func (o *Options) checkDevice() error {
	d, err := engine.ParseDevice(o.Engine.Device)
	if err != nil {
		return badinput.Errorf("--device: %v", err)
	}
	if d != engine.DeviceCPU && o.Engine.Executor == "sim" {
		return badinput.Errorf("--device %s: --executor sim runs no model to put on a device (use --executor model, or --device cpu)", d)
	}
	if n := o.Engine.CUDAGraphMaxBS; n < 0 {
		return badinput.Errorf("--cuda-graph-max-bs %d: want a batch size, or 0 for %d", n, cudaexec.DefaultCUDAGraphMaxBS)
	}
	return nil
}

func indent(s string) string { return "  " + strings.ReplaceAll(s, "\n", "\n  ") }

func waitErr(e *engine.Engine) <-chan error {
	ch := make(chan error, 1)
	go func() { ch <- e.Wait() }()
	return ch
}

// applyServerConfig applies --server-config, if given, to o.Engine and
// names on stderr the keys it ignores. The flags given on the command line
// keep their values: they are set again after the file, so whichever
// settings the file can write (sched.Config's SGLang names, host, port,
// served_model_name), no list here has to follow them.
func (o *Options) applyServerConfig() error {
	if o.ServerConfig == "" {
		return nil
	}
	restore := snapshotChanged(o.flags)
	ignored, err := engine.ApplyServerConfig(o.ServerConfig, &o.Engine)
	if err != nil {
		return badinput.Errorf("--server-config: %v", err)
	}
	if err := restore(); err != nil {
		return err
	}
	if len(ignored) > 0 {
		fmt.Fprintf(o.F.IO.ErrOut, "glmbench: --server-config: ignored %d keys the engine does not use: %s\n", len(ignored), strings.Join(ignored, ", "))
	}
	return nil
}

// snapshotChanged records the values of the flags in fs given on the command
// line (none when fs is nil); restore sets them back into the variables they
// are bound to.
func snapshotChanged(fs *pflag.FlagSet) (restore func() error) {
	var undo []func() error
	if fs != nil {
		fs.Visit(func(f *pflag.Flag) {
			// A repeatable flag's Set appends; its whole list is put back.
			if sv, ok := f.Value.(pflag.SliceValue); ok {
				list := sv.GetSlice()
				undo = append(undo, func() error { return sv.Replace(list) })
				return
			}
			// Every scalar flag's String is a value its Set reads back
			// exactly (floats shortest round-trip, durations in full).
			v := f.Value.String()
			undo = append(undo, func() error { return f.Value.Set(v) })
		})
	}
	return func() error {
		for _, u := range undo {
			if err := u(); err != nil {
				return err
			}
		}
		return nil
	}
}
