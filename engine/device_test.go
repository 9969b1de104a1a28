package engine

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/glmbench/glmbench/engine/cudaexec"
	"github.com/glmbench/glmbench/engine/model"
)

// deviceTestPool is the KV pool of the engines these tests start, in
// tokens (enginetest.Pool, which this package's own tests cannot import).
const deviceTestPool = 1 << 16

// deviceOptions are a test engine's options on a free loopback port.
func deviceOptions(device string) Options {
	o := DefaultOptions()
	o.Host, o.Port, o.Device = "127.0.0.1", 0, device
	o.Sched.MaxTotalTokens = deviceTestPool
	return o
}

// startDevice starts an engine on device and stops it when the test ends.
// A panic in Start (a cudaexec stub not yet replaced) fails the test
// instead of the whole binary.
func startDevice(t *testing.T, o Options) *Engine {
	t.Helper()
	var e *Engine
	var err error
	func() {
		defer func() {
			if p := recover(); p != nil {
				err = fmt.Errorf("Start panicked: %v", p)
			}
		}()
		e, err = Start(o)
	}()
	if err != nil {
		t.Fatalf("device %s: %v", o.Device, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := e.Shutdown(ctx); err != nil {
			t.Errorf("shutdown on %s: %v", o.Device, err)
		}
	})
	return e
}

// gpu opens the GPU, or skips the test without one; with
// GLMBENCH_REQUIRE_CUDA=1 (the device machine's run) it fails instead.
func gpu(t *testing.T) {
	t.Helper()
	ops, err := cudaexec.OpenDevice(cudaexec.DeviceOptions{})
	if err != nil {
		if os.Getenv("GLMBENCH_REQUIRE_CUDA") == "1" {
			t.Fatalf("GLMBENCH_REQUIRE_CUDA=1 but no GPU opened: %v", err)
		}
		t.Skipf("no GPU: %v", err)
	}
	ops.Close()
}

// noGPU skips the test where a GPU opens: it checks a machine without one.
func noGPU(t *testing.T) error {
	t.Helper()
	ops, err := cudaexec.OpenDevice(cudaexec.DeviceOptions{})
	if err == nil {
		ops.Close()
		t.Skip("a GPU opened: this checks a machine without one")
	}
	return err
}

func TestDeviceCUDAWithoutAGPUFailsStartInOneLineBeforeListening(t *testing.T) {
	t.Parallel()
	noGPU(t)
	o := deviceOptions(DeviceCUDA)
	// Port -1 cannot be listened on: a Start that got past the device
	// would fail there, saying "listening on".
	o.Port = -1
	e, err := Start(o)
	if err == nil {
		e.Shutdown(context.Background())
		t.Fatal("device cuda started without a GPU")
	}
	if !errors.Is(err, cudaexec.ErrNoDevice) {
		t.Errorf("%v: does not wrap cudaexec.ErrNoDevice", err)
	}
	if msg := err.Error(); !strings.HasPrefix(msg, "device cuda: ") || strings.Contains(msg, "\n") || strings.Contains(msg, "listening") {
		t.Errorf("want one line naming the device, said before listening; got %q", msg)
	}
}

func TestDeviceAutoWithoutAGPUFallsBackToTheCPUAndSaysWhy(t *testing.T) {
	t.Parallel()
	why := noGPU(t)
	var logs bytes.Buffer
	o := deviceOptions(DeviceAuto)
	o.Logger = slog.New(slog.NewTextHandler(&logs, nil))
	e := startDevice(t, o)
	dev := e.Device()
	if dev.Kind != DeviceCPU || e.Model == nil || dev.Fallback == "" || !strings.Contains(why.Error(), dev.Fallback) {
		t.Errorf("device %+v (model %v), want the CPU model with OpenDevice's %q as the reason", dev, e.Model != nil, why)
	}
	if n := strings.Count(logs.String(), "device auto"); n != 1 {
		t.Errorf("%d log lines about the fallback, want 1:\n%s", n, logs.String())
	}
	if got := greedy(t, e, "Hello", 8, 0); len(got.tokens) != 8 {
		t.Errorf("auto on the CPU served %d tokens, want 8", len(got.tokens))
	}
}

func TestDeviceOtherThanCPUIsRefusedWithTheSimulatedExecutor(t *testing.T) {
	t.Parallel()
	for _, d := range []string{DeviceCUDA, DeviceAuto, DeviceCPUOps} {
		o := deviceOptions(d)
		o.Executor = "sim"
		e, err := Start(o)
		if err == nil {
			e.Shutdown(context.Background())
			t.Errorf("sim on %s started", d)
			continue
		}
		if want := "device " + d + ": the simulated executor runs no model"; !strings.HasPrefix(err.Error(), want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("sim on %s: %q, want one line starting %q", d, err, want)
		}
	}
	// The CPU, named or not, is the simulated executor's.
	for _, d := range []string{"", DeviceCPU} {
		o := deviceOptions(d)
		o.Executor = "sim"
		if e := startDevice(t, o); e.Device().Kind != DeviceCPU {
			t.Errorf("sim with device %q: %+v", d, e.Device())
		}
	}
}

func TestDeviceParseKnowsExactlyTheFourNames(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{"": "cpu", "cpu": "cpu", "cuda": "cuda", "auto": "auto", "cpu-ops": "cpu-ops"} {
		if got, err := ParseDevice(in); got != want || err != nil {
			t.Errorf("ParseDevice(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, in := range []string{"gpu", "CUDA", "cuda:0", "cpu_ops", " cpu"} {
		if _, err := ParseDevice(in); err == nil || err.Error() != fmt.Sprintf("device %q: want one of cpu, cuda, auto, cpu-ops", in) {
			t.Errorf("ParseDevice(%q): %v", in, err)
		}
		o := deviceOptions(in)
		if e, err := Start(o); err == nil {
			e.Shutdown(context.Background())
			t.Errorf("Start with device %q started", in)
		}
	}
}

func TestDeviceCUDAsDefaultPoolFitsEightGiBOfGPUMemory(t *testing.T) {
	t.Parallel()
	// tiny: 112 floats per token per layer, 4 layers, 1,792 bytes a token.
	cfg, _ := model.Preset("tiny")
	layers := cfg.NumHiddenLayers
	perToken := cfg.KVWidth() * 4 * layers
	for _, tc := range []struct {
		kind   string
		budget int
	}{{DeviceCPU, 4 << 30}, {DeviceCPUOps, 4 << 30}, {DeviceCUDA, 8 << 30}} {
		got := defaultPoolTokens(cfg, layers, 64, tc.kind)
		if got%64 != 0 || got*perToken > tc.budget || (got+64)*perToken <= tc.budget {
			t.Errorf("%s: %d tokens of %d bytes, want the most whole 64-token pages in %d bytes", tc.kind, got, perToken, tc.budget)
		}
	}
	// nano's tokens are small: the cap holds on the GPU too.
	nano, _ := model.Preset("nano")
	if got := defaultPoolTokens(nano, nano.NumHiddenLayers, 64, DeviceCUDA); got != kvDefaultMax/64*64 {
		t.Errorf("nano on cuda: %d tokens, want the cap %d", got, kvDefaultMax/64*64)
	}
}

// WILL PASS AT MERGE: needs cudaexec.NewHostOps and NewExecutor (stubs on
// this branch).
func TestDeviceCPUOpsServesTheCPUsGreedyTokensBitForBit(t *testing.T) {
	t.Parallel()
	// Plain decoding, and MTP speculation (the executor's Draft and its
	// MTP cache), each on both.
	for _, spec := range []string{"", "EAGLE"} {
		on := func(device string) Options {
			o := deviceOptions(device)
			o.Sched.SpeculativeAlgorithm = spec
			if spec != "" {
				o.Sched.EnableMixedChunk = false // as serve turns it off
			}
			return o
		}
		cpu := startDevice(t, on(DeviceCPU))
		ops := startDevice(t, on(DeviceCPUOps))
		if d := ops.Device(); d.Kind != DeviceCPUOps || ops.Model != nil {
			t.Fatalf("cpu-ops runs on %+v", d)
		}
		for _, prompt := range []string{"Hello", "The quick brown fox jumps over the lazy dog.", "[gMASK]<sop>1 2 3 4 5 6 7 8 9 10 11 12"} {
			want, got := greedy(t, cpu, prompt, 24, 2), greedy(t, ops, prompt, 24, 2)
			// The same kernels in the same order: the same tokens and the
			// same logprob bits, not merely close ones.
			if len(want.tokens) != 24 || fmt.Sprint(got.tokens) != fmt.Sprint(want.tokens) || fmt.Sprint(got.logprobs) != fmt.Sprint(want.logprobs) {
				t.Errorf("speculative %q, %q:\ncpu-ops %v %v\ncpu     %v %v", spec, prompt, got.tokens, got.logprobs, want.tokens, want.logprobs)
			}
		}
	}
}

// Needs a GPU: skips without one, fails with GLMBENCH_REQUIRE_CUDA=1.
func TestDeviceCUDAServesTheCPUsGreedyTokensWhereTheMarginIsNotTiny(t *testing.T) {
	t.Parallel()
	gpu(t)
	cpu := startDevice(t, deviceOptions(DeviceCPU))
	dev := startDevice(t, deviceOptions(DeviceCUDA))
	if d := dev.Device(); d.Kind != DeviceCUDA || !strings.HasPrefix(d.Name, "cuda") {
		t.Fatalf("cuda runs on %+v", d)
	}
	for _, prompt := range []string{"Hello", "The quick brown fox jumps over the lazy dog.", "[gMASK]<sop>1 2 3 4 5 6 7 8 9 10 11 12"} {
		want, got := greedy(t, cpu, prompt, 64, 2), greedy(t, dev, prompt, 64, 2)
		for i := range want.tokens {
			if i >= len(got.tokens) {
				t.Errorf("%q: cuda gave %d tokens, the CPU %d", prompt, len(got.tokens), len(want.tokens))
				break
			}
			// Within the 1e-4 the logits agree, a top-2 margin under 1e-3
			// may swap: from there on the two may rightly diverge.
			if want.margins[i] < 1e-3 {
				break
			}
			if got.tokens[i] != want.tokens[i] {
				t.Errorf("%q: token %d is %s on cuda, %s on the CPU (margin %.3g)", prompt, i, got.tokens[i], want.tokens[i], want.margins[i])
				break
			}
		}
	}
}

// completion is a greedy completion's tokens (as token_id:N), their
// logprobs and each position's margin between the top two logprobs.
type completion struct {
	tokens   []string
	logprobs []float64
	margins  []float64
}

// greedy asks e for n tokens of prompt at temperature 0, EOS ignored, with
// top logprobs (0: none).
func greedy(t *testing.T, e *Engine, prompt string, n, top int) completion {
	t.Helper()
	body := map[string]any{"model": e.ModelName(), "prompt": prompt, "max_tokens": n, "temperature": 0,
		"ignore_eos": true, "return_tokens_as_token_ids": true}
	if top > 0 {
		body["logprobs"] = top
	}
	lp, completionTokens := PostCompletion(t, e.BaseURL(), body)
	var c completion
	if lp == nil {
		c.tokens = make([]string, completionTokens)
		return c
	}
	c.tokens = lp.Tokens
	for i := range lp.Tokens {
		v := math.NaN()
		if i < len(lp.TokenLogprobs) && lp.TokenLogprobs[i] != nil {
			v = *lp.TokenLogprobs[i]
		}
		c.logprobs = append(c.logprobs, v)
		first, second := math.Inf(-1), math.Inf(-1)
		if i < len(lp.TopLogprobs) {
			for _, l := range lp.TopLogprobs[i] {
				if l > first {
					first, second = l, first
				} else if l > second {
					second = l
				}
			}
		}
		c.margins = append(c.margins, first-second)
	}
	return c
}
