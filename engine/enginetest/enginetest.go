// Package enginetest starts glmbench's reference engine for one test, on a
// free loopback port, and stops it when the test ends: the real engine for
// tests that check a client, a check or a command against it, as
// endpoints/endpointstest is a fake one.
//
// It links the engine, so only tests import it: the harness's packages
// (endpoints, bench, evals, reports) never link the engine outside their
// tests (internal/layers).
package enginetest

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/glmbench/glmbench/engine"
	"github.com/glmbench/glmbench/engine/sched"
	"github.com/glmbench/glmbench/engine/server"
	"github.com/glmbench/glmbench/engine/sim"
)

// Pool is a test engine's KV pool, in tokens. The default pool is
// gigabytes of address space, which costs nothing fresh but seconds to zero
// when a test process reuses the memory of an engine it stopped.
const Pool = 1 << 16

// StopTimeout bounds a test engine's graceful shutdown.
const StopTimeout = 10 * time.Second

// Option changes the engine's options before it starts; an error fails the
// test.
type Option func(*engine.Options) error

// With applies tweak to the options; a nil tweak leaves them as they are.
func With(tweak func(*engine.Options)) Option {
	return func(o *engine.Options) error {
		if tweak != nil {
			tweak(o)
		}
		return nil
	}
}

// Preset serves the synthetic model of that name ("nano", "tiny").
func Preset(name string) Option {
	return func(o *engine.Options) error { o.Preset = name; return nil }
}

// WeightDType rounds the weights at load to that format ("fp32", "bf16",
// "fp8_e4m3", "nvfp4": glmbench serve --weight-dtype); an unknown name fails
// the test when the engine starts.
func WeightDType(name string) Option {
	return func(o *engine.Options) error { o.WeightDType = name; return nil }
}

// Sim runs the real scheduler and API over the simulated executor with
// that step-time cost (sim.DefaultCost: a fast engine).
func Sim(cost sim.CostModel) Option {
	return func(o *engine.Options) error { o.Executor, o.SimCost = "sim", cost; return nil }
}

// Sched applies tweak to the scheduler's settings (the SGLang server args).
func Sched(tweak func(*sched.Config)) Option {
	return func(o *engine.Options) error { tweak(&o.Sched); return nil }
}

// Faults makes the server misbehave as the --fault specs say ("echo=500",
// "drop-done"); none leaves it healthy.
func Faults(specs ...string) Option {
	return func(o *engine.Options) error {
		if len(specs) == 0 {
			return nil
		}
		o.Faults = &server.Faults{}
		for _, s := range specs {
			if err := server.ParseFault(s, o.Faults); err != nil {
				return err
			}
		}
		return nil
	}
}

// Engine is a reference engine running for one test. BaseURL and
// ModelName (of the embedded engine) are the endpoint to test against.
type Engine struct {
	*engine.Engine
	stop sync.Once
}

// Start runs an engine with `glmbench serve`'s defaults (engine.
// DefaultOptions), a Pool-token KV pool, on a free port of 127.0.0.1, and
// then opts in order. It fails the test if the engine does not start, and
// stops it when the test ends.
func Start(t testing.TB, opts ...Option) *Engine {
	t.Helper()
	o := engine.DefaultOptions()
	o.Host, o.Port = "127.0.0.1", 0
	o.Sched.MaxTotalTokens = Pool
	for _, opt := range opts {
		if err := opt(&o); err != nil {
			t.Fatal(err)
		}
	}
	e, err := engine.Start(o)
	if err != nil {
		t.Fatal(err)
	}
	te := &Engine{Engine: e}
	t.Cleanup(te.Stop)
	return te
}

// Stop shuts the engine down gracefully (within StopTimeout): new requests
// get 503, running streams end, then the listener closes. Only the first
// call does anything; Start registers one for the end of the test.
func (e *Engine) Stop() {
	e.stop.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), StopTimeout)
		defer cancel()
		e.Shutdown(ctx)
	})
}
