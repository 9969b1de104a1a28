// Package engine is glmbench's reference engine as one thing to start: a
// GLM-5-architecture model (engine/model) on fast CPU kernels or on an
// NVIDIA GPU (engine/cudaexec, Options.Device), the SGLang-like scheduler
// (engine/sched) and the OpenAI-compatible HTTP API (engine/server).
// `glmbench serve` runs it as a server; every command run without
// --endpoint starts it in-process on a free loopback port.
package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/glmbench/glmbench/engine/cudaexec"
	"github.com/glmbench/glmbench/engine/model"
	"github.com/glmbench/glmbench/engine/sched"
	"github.com/glmbench/glmbench/engine/server"
	"github.com/glmbench/glmbench/engine/sim"
	"github.com/glmbench/glmbench/engine/tokenizer"
	"github.com/glmbench/glmbench/internal/boundedfile"
	"github.com/glmbench/glmbench/internal/rxstamp"
	"github.com/glmbench/glmbench/internal/text"
	"github.com/glmbench/glmbench/kernels"
)

// Options configure an engine.
type Options struct {
	// Preset names a synthetic model ("nano", "tiny"); ignored with ModelPath.
	Preset string
	// ModelPath is a checkpoint folder (config.json + model.safetensors).
	ModelPath string
	// Seed draws a preset's weights.
	Seed uint64
	// WeightDType is the format the weights are rounded to at load, then
	// computed in float32 (model.DType: fp32, bf16, fp8_e4m3, nvfp4; "":
	// fp32), for a preset and a checkpoint alike; /server_info reports it.
	WeightDType string
	// ServedModelName is the id /v1/models lists (default: the preset or folder name).
	ServedModelName string
	Host            string
	Port            int
	Sched           sched.Config
	// RateLimitConcurrency and RateLimitRPM put a 429 gateway in front (0: off).
	RateLimitConcurrency int
	RateLimitRPM         int
	Version              string
	Logger               *slog.Logger
	// Faults make the server misbehave on purpose (glmbench serve --fault).
	Faults *server.Faults
	// Executor is "model" (the default) or "sim": the real scheduler and API
	// over a step-time cost model (SimCost) with deterministic tokens.
	Executor string
	// Device is what the model runs on (DeviceNames): "cpu" ("": the
	// default), "cuda", "auto" or "cpu-ops". Only "cpu" goes with the
	// simulated executor.
	Device string
	// DisableCUDAGraph launches every decode batch directly on the GPU
	// (SGLang's --disable-cuda-graph); otherwise a decode batch of at most
	// CUDAGraphMaxBS sequences (SGLang's --cuda-graph-max-bs; 0:
	// cudaexec.DefaultCUDAGraphMaxBS) replays a CUDA graph of its
	// batch-size bucket. Both matter only when the model runs on a GPU.
	DisableCUDAGraph bool
	CUDAGraphMaxBS   int
	SimCost          sim.CostModel
	// SimAcceptLength fixes the simulated executor's speculative accept
	// length (sim.Executor.SetAcceptLength; 0: its default, 1), for
	// serving with Sched.SpeculativeAlgorithm set.
	SimAcceptLength float64
	// Truth, when set, receives every stream's arrival and event times (JSONL).
	Truth io.Writer
	// MaxBodyBytes, MaxBufferedBytes, BodyTimeout and MaxParsing bound what
	// requests can cost before they are refused (server.Options; 0: the
	// server's defaults).
	MaxBodyBytes     int64
	MaxBufferedBytes int64
	BodyTimeout      time.Duration
	MaxParsing       int
	// IdleTimeout closes a keep-alive connection idle this long (0:
	// DefaultIdleTimeout).
	IdleTimeout time.Duration
}

// HTTP timeouts of the engine's listener. The POST bodies' own deadline is
// server.Options.BodyTimeout, set by the handler; ReadTimeout (headers and
// BodyTimeout) backs it up for every other route. net/http clears the read
// deadline once a body is read, so neither cuts a long stream.
const (
	// DefaultIdleTimeout is longer than the 90 s after which Go's (and
	// glmbench's) client drops an idle connection, so the client closes
	// first and never sends on a connection the server is closing.
	DefaultIdleTimeout = 120 * time.Second
	// readHeaderTimeout bounds a request's headers (a slowloris client).
	readHeaderTimeout = 30 * time.Second
)

// DefaultOptions are `glmbench serve`'s defaults. Mixed chunks are on,
// unlike SGLang: a CPU prefills about a thousand times slower than a GPU,
// so with prefill first a burst like throughput_8k would pause every
// started stream for minutes, which a client rightly calls a hang.
//
// The KV page is 64 tokens, as SGLang requires for DSA models (its FlashMLA
// backends: "FlashMLA only supports a page_size of 64"); whole pages also
// keep a sequence's keys in long runs the indexer scans in one product.
func DefaultOptions() Options {
	o := Options{Preset: "nano", Seed: 1, WeightDType: "fp32", Host: "127.0.0.1", Port: 30000, Executor: "model", Device: DeviceCPU, SimCost: sim.DefaultCost}
	o.Sched.EnableMixedChunk = true
	o.Sched.PageSize = 64
	return o
}

// kvBudget bounds the default KV pool (virtual memory: pages are only
// touched when used) and kvDefaultMax caps it: enough for throughput_8k's
// 929 sequences of 8192 + 1024 tokens on nano. On a GPU the pool is
// allocated whole in device memory, which is real, so kvDeviceBudget bounds
// it there: 8 GiB, a small share of a data-centre GPU's 80 to 141 GiB that
// leaves the rest to the weights and activations.
const (
	kvBudget       = 4 << 30
	kvDeviceBudget = 8 << 30
	kvDefaultMax   = 9_500_000
	// simDefaultTokens is the simulated executor's pool: 4,096 streams of
	// 8K tokens and more.
	simDefaultTokens = 64 << 20
)

// The values of Options.Device.
const (
	// DeviceCPU runs engine/model on the CPU kernels (kernels.Default).
	DeviceCPU = "cpu"
	// DeviceCUDA runs the cudaexec executor on the first GPU
	// (cudaexec.OpenDevice); without a CUDA driver or device Start fails.
	DeviceCUDA = "cuda"
	// DeviceAuto is DeviceCUDA when a GPU opens, else DeviceCPU, and says
	// why (Device.Fallback).
	DeviceAuto = "auto"
	// DeviceCPUOps runs the cudaexec executor's op list over the host ops
	// (cudaexec.NewHostOps on the CPU kernels): the GPU path's
	// orchestration checked on the CPU, bit for bit the same as DeviceCPU.
	DeviceCPUOps = "cpu-ops"
)

// DeviceNames are Options.Device's values, in the order help lists them.
var DeviceNames = []string{DeviceCPU, DeviceCUDA, DeviceAuto, DeviceCPUOps}

// DeviceHelp is the --device flag's help, the same in serve and in the
// commands that start the built-in engine.
const DeviceHelp = "what the model runs on: cpu (CPU kernels), cuda (an NVIDIA GPU; fails without a CUDA driver), auto (cuda if a GPU opens, else cpu) or cpu-ops (the GPU path's op list on the CPU, a check of it)"

// ParseDevice checks an Options.Device value; "" is DeviceCPU.
func ParseDevice(s string) (string, error) {
	if s == "" {
		return DeviceCPU, nil
	}
	if !slices.Contains(DeviceNames, s) {
		return "", fmt.Errorf("device %q: want one of %s", s, strings.Join(DeviceNames, ", "))
	}
	return s, nil
}

// Device is what an engine's model runs on.
type Device struct {
	// Kind is DeviceCPU, DeviceCUDA or DeviceCPUOps: Options.Device, with
	// auto resolved.
	Kind string
	// Name says what runs the ops: the CPU kernels' name ("cpu-avx2"),
	// the Ops' Name ("cuda:0 NVIDIA H200 sm_90"), or "simulated" with the
	// simulated executor.
	Name string
	// Fallback, when Options.Device auto chose the CPU, says why: the
	// error that opening a GPU gave.
	Fallback string
}

// String is the kind and the name, e.g. "cuda (cuda:0 NVIDIA H200 sm_90)".
func (d Device) String() string { return d.Kind + " (" + d.Name + ")" }

// openDevice opens the GPU for DeviceCUDA and DeviceAuto; a variable so
// that a test can stand in for a machine with or without one.
var openDevice = func() (cudaexec.Ops, error) { return cudaexec.OpenDevice(cudaexec.DeviceOptions{}) }

// deviceError is a GPU that did not open, in one line, wrapping the cause
// (cudaexec.ErrNoDevice without a driver).
type deviceError struct{ err error }

func (e deviceError) Error() string {
	return "device cuda: " + text.OneLine(e.err.Error()) + " (device auto falls back to the CPU)"
}
func (e deviceError) Unwrap() error { return e.err }

// Engine is a running reference engine.
type Engine struct {
	// Model is the CPU model, nil with the simulated executor and with a
	// device executor (Device cuda or cpu-ops).
	Model     *model.Model
	Sched     *sched.Scheduler
	Server    *server.Server
	Tokenizer *tokenizer.Tokenizer
	name      string
	device    Device
	ln        net.Listener
	http      *http.Server
	served    chan error
	// exec is the device executor (nil on the CPU model), closed once the
	// scheduler has stopped; ran is closed then, and closeErr is what
	// Close said.
	exec     *cudaexec.Executor
	ran      chan struct{}
	closeErr error
}

// Start builds the model and serves it on opts.Host:opts.Port (port 0: a
// free one). It returns once the server accepts connections.
func Start(opts Options) (*Engine, error) {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	simulated, dtype, devKind, err := checkOptions(opts)
	if err != nil {
		return nil, err
	}
	// The GPU opens first, before the weights are made (seconds for a
	// large preset), so that a machine without one is told at once.
	dev, ops, err := chooseDevice(devKind, simulated, opts.Logger)
	if err != nil {
		return nil, err
	}
	// ops, and the executor over it, are closed on every failure below;
	// once Start succeeds the scheduler's goroutine closes them.
	var exec *cudaexec.Executor
	started := false
	defer func() {
		switch {
		case started:
		case exec != nil:
			exec.Close()
		case ops != nil:
			ops.Close()
		}
	}()
	cfg, w, name, err := loadModel(opts, !simulated)
	if err != nil {
		return nil, err
	}
	ckpt := server.Checkpoint{Preset: opts.Preset, Seed: opts.Seed, Path: opts.ModelPath, WeightDType: string(dtype),
		Device: dev.Kind, DeviceName: dev.Name}
	if opts.ModelPath != "" {
		ckpt.Preset, ckpt.Seed = "", 0
	} else if ckpt.Preset == "" {
		ckpt.Preset = "nano"
	}
	if w != nil {
		if ckpt.Rounded, err = w.Quantize(dtype); err != nil {
			return nil, err
		}
	}
	tok, err := tokenizer.New(cfg.VocabSize)
	if err != nil {
		return nil, fmt.Errorf("model vocabulary: %w", err)
	}
	sc, err := schedConfig(opts.Sched, cfg, simulated, dev.Kind)
	if err != nil {
		return nil, err
	}
	run, m, exec, err := newExecutor(opts, cfg, w, sc, ops, dev.Kind)
	if err != nil {
		return nil, err
	}
	if simulated {
		name = "glmbench-sim"
	}
	metrics := server.NewMetrics()
	s, err := sched.New(sc, run, tok.EOS(), tokenizer.MinVocabSize, metrics)
	if err != nil {
		return nil, err
	}
	if opts.ServedModelName != "" {
		name = opts.ServedModelName
	}
	e := &Engine{Model: m, Sched: s, Tokenizer: tok, name: name, device: dev, served: make(chan error, 1),
		exec: exec, ran: make(chan struct{})}
	var truth *server.Truth
	if opts.Truth != nil {
		truth = server.NewTruth(opts.Truth)
	}
	e.Server = server.New(server.Options{
		ModelName: name, ModelPath: modelPath(opts),
		RateLimitConcurrency: opts.RateLimitConcurrency, RateLimitRPM: opts.RateLimitRPM,
		Version: opts.Version, Logger: opts.Logger, Faults: opts.Faults, Truth: truth,
		MaxBodyBytes: opts.MaxBodyBytes, MaxBufferedBytes: opts.MaxBufferedBytes,
		BodyTimeout: opts.BodyTimeout, MaxParsing: opts.MaxParsing,
	}, s, tok, metrics)
	e.Server.SetCheckpoint(ckpt)
	if err := e.listen(opts, truth); err != nil {
		return nil, err
	}
	started = true
	go e.schedule()
	opts.Logger.Info("engine started", "model", name, "device", dev.String(), "kv_tokens", sc.MaxTotalTokens)
	go func() { e.served <- e.http.Serve(e.ln) }()
	return e, nil
}

// checkOptions checks the options Start reads first: the executor, the
// weight format and the device, and what the simulated executor refuses.
func checkOptions(opts Options) (simulated bool, dtype model.DType, devKind string, err error) {
	simulated = opts.Executor == "sim"
	if opts.Executor != "" && opts.Executor != "model" && !simulated {
		return false, "", "", fmt.Errorf("executor %q: want model or sim", opts.Executor)
	}
	if dtype, err = model.ParseDType(opts.WeightDType); err != nil {
		return false, "", "", err
	}
	if simulated && dtype != model.FP32 {
		return false, "", "", fmt.Errorf("weight dtype %s: the simulated executor has no weights to round (use executor model)", dtype)
	}
	if devKind, err = ParseDevice(opts.Device); err != nil {
		return false, "", "", err
	}
	if simulated && devKind != DeviceCPU {
		return false, "", "", fmt.Errorf("device %s: the simulated executor runs no model to put on a device (use executor model, or device cpu)", devKind)
	}
	return simulated, dtype, devKind, nil
}

// schedConfig completes the scheduler's configuration for cfg's model: the
// page size, the pool (sized for the device), the context length and
// SGLang's defaults. With speculation, which drafts with the MTP layer,
// the pool holds that layer's KV too.
func schedConfig(sc sched.Config, cfg *model.Config, simulated bool, devKind string) (sched.Config, error) {
	if sc.PageSize == 0 {
		sc.PageSize = 1
	}
	layers := cfg.NumHiddenLayers
	if sc.Speculative() {
		if cfg.NumNextNPredictLayers < 1 && !simulated {
			return sc, fmt.Errorf("speculative_algorithm %s: the model has no MTP layer (num_nextn_predict_layers 0)", sc.SpeculativeAlgorithm)
		}
		layers++
	}
	if sc.MaxTotalTokens == 0 {
		sc.MaxTotalTokens = defaultPoolTokens(cfg, layers, sc.PageSize, devKind)
		if simulated { // pages without values cost nothing
			sc.MaxTotalTokens = simDefaultTokens / sc.PageSize * sc.PageSize
		}
	}
	if sc.ContextLength <= 0 || sc.ContextLength > cfg.MaxPositionEmbeddings {
		sc.ContextLength = cfg.MaxPositionEmbeddings
	}
	sc.Defaults()
	if err := sc.Validate(); err != nil {
		return sc, err
	}
	return sc, nil
}

// newExecutor makes what runs the scheduler's batches: the simulated
// executor, the device executor over ops (the GPU, or the op list on the
// CPU), or the CPU model m.
func newExecutor(opts Options, cfg *model.Config, w *model.Weights, sc sched.Config, ops cudaexec.Ops, devKind string) (run sched.Executor, m *model.Model, exec *cudaexec.Executor, err error) {
	pages, spec := sc.MaxTotalTokens/sc.PageSize, sc.Speculative()
	switch {
	case opts.Executor == "sim":
		se := sim.New(opts.SimCost, pages, sc.PageSize, cfg.VocabSize)
		if opts.SimAcceptLength != 0 {
			if err := se.SetAcceptLength(opts.SimAcceptLength); err != nil {
				return nil, nil, nil, err
			}
		}
		return se, nil, nil, nil
	case ops != nil:
		// The device executor holds the weights and the KV values in the
		// Ops' memory, the MTP layer's too when speculation drafts with it.
		if exec, err = cudaexec.NewExecutor(cfg, w, ops, pages, sc.PageSize, spec); err != nil {
			return nil, nil, nil, fmt.Errorf("device %s: %w", devKind, err)
		}
		if !opts.DisableCUDAGraph {
			maxBS := opts.CUDAGraphMaxBS
			if maxBS <= 0 {
				maxBS = cudaexec.DefaultCUDAGraphMaxBS
			}
			exec.UseGraphs(maxBS) // off by itself where the Ops has no graphs (cpu-ops)
		}
		return exec, nil, exec, nil
	}
	kv := model.NewKVCacheNoMTP(cfg, pages, sc.PageSize)
	if spec {
		kv = model.NewKVCache(cfg, pages, sc.PageSize)
	}
	m = model.New(cfg, w, kernels.Default(), kv)
	return m, m, nil, nil
}

// listen opens the engine's listener on opts.Host:opts.Port and readies
// its HTTP server (with the truth's receive stamps when it records one).
func (e *Engine) listen(opts Options, truth *server.Truth) error {
	addr := net.JoinHostPort(opts.Host, strconv.Itoa(opts.Port))
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("listening on %s: %w", addr, err)
	}
	e.ln = ln
	idle := opts.IdleTimeout
	if idle <= 0 {
		idle = DefaultIdleTimeout
	}
	e.http = &http.Server{Handler: e.Server.Handler(), ReadHeaderTimeout: readHeaderTimeout, IdleTimeout: idle}
	if bt := e.Server.BodyTimeout(); bt > 0 {
		e.http.ReadTimeout = readHeaderTimeout + bt
	}
	if truth != nil {
		// The truth dates requests by the kernel's receive stamps.
		e.ln, e.http.ConnContext = rxstamp.Listener(e.ln), server.ConnContext
	}
	return nil
}

// defaultPoolTokens is the default KV pool, in tokens (whole pages of
// pageSize), for layers layers of cfg's cache on a device of that kind:
// the budget of memory it may take (the CPU's virtual kvBudget, the GPU's
// real kvDeviceBudget) over the float32 bytes a token takes, at most
// kvDefaultMax.
func defaultPoolTokens(cfg *model.Config, layers, pageSize int, kind string) int {
	budget := kvBudget
	if kind == DeviceCUDA {
		budget = kvDeviceBudget
	}
	perToken := cfg.KVWidth() * 4 * layers
	return min(budget/perToken, kvDefaultMax) / pageSize * pageSize
}

// chooseDevice opens what devKind names: nothing for the CPU model (and the
// simulated executor), the GPU for cuda (its failure, one line, is Start's)
// and auto (its failure is the CPU's fallback, logged), the host ops for
// cpu-ops.
func chooseDevice(devKind string, simulated bool, log *slog.Logger) (Device, cudaexec.Ops, error) {
	cpu := Device{Kind: DeviceCPU, Name: kernels.Default().Name()}
	if simulated {
		cpu.Name = "simulated"
	}
	switch devKind {
	case DeviceCUDA, DeviceAuto:
		ops, err := openDevice()
		if err == nil {
			return Device{Kind: DeviceCUDA, Name: ops.Name()}, ops, nil
		}
		if devKind == DeviceCUDA {
			return Device{}, nil, deviceError{err}
		}
		cpu.Fallback = text.OneLine(err.Error())
		log.Info("device auto: no GPU opened, the model runs on the CPU", "reason", cpu.Fallback)
		return cpu, nil, nil
	case DeviceCPUOps:
		ops := cudaexec.NewHostOps(kernels.Default())
		return Device{Kind: DeviceCPUOps, Name: ops.Name()}, ops, nil
	}
	return cpu, nil, nil
}

// schedule runs the scheduler until it stops, then closes the device
// executor. A GPU context is current per OS thread, so on cuda the
// scheduler keeps one thread for every forward pass.
func (e *Engine) schedule() {
	defer close(e.ran)
	if e.device.Kind == DeviceCUDA {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
	}
	e.Sched.Run()
	if e.exec != nil {
		e.closeErr = e.exec.Close()
	}
}

func modelPath(o Options) string {
	if o.ModelPath != "" {
		return o.ModelPath
	}
	return "preset:" + o.Preset
}

// loadModel reads the checkpoint or makes the preset (its weights only when
// weights is set: the simulated executor needs the config alone).
func loadModel(o Options, weights bool) (*model.Config, *model.Weights, string, error) {
	if o.ModelPath != "" {
		cfg, w, err := model.Load(o.ModelPath)
		if err != nil {
			return nil, nil, "", err
		}
		return cfg, w, o.ModelPath, nil
	}
	preset := o.Preset
	if preset == "" {
		preset = "nano"
	}
	cfg, err := model.Preset(preset)
	if err != nil {
		return nil, nil, "", err
	}
	var w *model.Weights
	if weights {
		w = model.Synth(cfg, o.Seed)
	}
	return cfg, w, "glmbench-" + preset, nil
}

// BaseURL is the API base, http://host:port/v1.
func (e *Engine) BaseURL() string { return "http://" + e.ln.Addr().String() + "/v1" }

// ModelName is the id the engine serves.
func (e *Engine) ModelName() string { return e.name }

// Checkpoint is the weights the engine serves: the preset and seed or the
// folder, the format they were rounded to and how many tensors were.
func (e *Engine) Checkpoint() server.Checkpoint { return e.Server.Checkpoint() }

// Device is what the engine's model runs on.
func (e *Engine) Device() Device { return e.device }

// Shutdown stops the engine gracefully: new requests get 503, running
// streams end, then the listener closes, and the device executor, if any,
// is closed once the scheduler has stopped (its error is Shutdown's).
func (e *Engine) Shutdown(ctx context.Context) error {
	err := e.Server.Shutdown(ctx)
	if herr := e.http.Shutdown(ctx); herr != nil && err == nil {
		err = herr
	}
	select {
	case <-e.ran:
		if err == nil {
			err = e.closeErr
		}
	case <-ctx.Done():
		if err == nil {
			err = ctx.Err()
		}
	}
	return err
}

// Wait returns when the HTTP server stops serving.
func (e *Engine) Wait() error {
	err := <-e.served
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}

// ApplyServerConfig reads an SGLang server-args JSON (the output of its
// /server_info) into opts: the keys the engine understands are applied,
// and the others are returned by name, sorted, for the caller to report.
func ApplyServerConfig(path string, opts *Options) (ignored []string, err error) {
	b, err := boundedfile.Read(path, maxServerConfigFile, "an SGLang server-args file")
	if err != nil {
		return nil, err
	}
	var args map[string]json.RawMessage
	if err := json.Unmarshal(b, &args); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	set := func(key string, dst any) error {
		raw := args[key]
		if string(raw) == "null" {
			return nil // unset in SGLang: keep the engine's default
		}
		if err := json.Unmarshal(raw, dst); err != nil {
			return fmt.Errorf("%s: %s: %w", path, key, err)
		}
		return nil
	}
	// The scheduler's settings by their SGLang names, and the server's own.
	known := opts.Sched.ServerArgs()
	known["host"], known["port"], known["served_model_name"] = &opts.Host, &opts.Port, &opts.ServedModelName
	// glmbench's own key, which /server_info reports: a server's info
	// fed back serves its weights as rounded.
	known["weight_dtype"] = &opts.WeightDType
	// SGLang's "device" (always "cuda" in its server info) is left out on
	// purpose: a CPU machine fed SGLang's settings still serves.
	for key := range args {
		dst, ok := known[key]
		if !ok {
			ignored = append(ignored, key)
			continue
		}
		if err := set(key, dst); err != nil {
			return nil, err
		}
	}
	slices.Sort(ignored)
	return ignored, nil
}

// maxServerConfigFile is the most bytes of an SGLang server-args file read: SGLang's /server_info answer is a few KiB, so /dev/zero or a wrong
// path is refused in one line instead of read whole until out of memory.
const maxServerConfigFile = 16 << 20
