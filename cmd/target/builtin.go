package target

import (
	"context"
	"fmt"

	"github.com/glmbench/glmbench/endpoints"
	"github.com/glmbench/glmbench/engine"
)

// Builtin is glmbench's reference engine started in-process on a free
// loopback port: the endpoint every command uses when none is given. It
// lives here, where it is started, so that the harness's packages
// (endpoints, bench, evals, reports) never link the engine.
type Builtin struct {
	Engine   *engine.Engine
	Endpoint *endpoints.Endpoint
}

// StartBuiltin starts the engine (engine.DefaultOptions, with what opts
// sets) on a free port of 127.0.0.1 and returns it as an endpoint.
func StartBuiltin(opts engine.Options) (*Builtin, error) {
	opts.Host, opts.Port = "127.0.0.1", 0
	e, err := engine.Start(opts)
	if err != nil {
		return nil, fmt.Errorf("starting the built-in engine: %w", err)
	}
	return &Builtin{Engine: e, Endpoint: &endpoints.Endpoint{
		Name: "builtin", BaseURL: e.BaseURL(), Model: e.ModelName(), Builtin: true,
	}}, nil
}

// Stop shuts the engine down.
func (b *Builtin) Stop(ctx context.Context) error { return b.Engine.Shutdown(ctx) }

// ProfileBuiltin points the built-in engine's profiler routes
// (/start_profile, /stop_profile) at dir, the command's folder once it is
// named, so that run --profile leaves the CPU profile beside the report:
// the process's, which holds the client's load generation beside the
// engine; false when the target is no built-in engine.
func (t *Target) ProfileBuiltin(dir string) bool {
	if t.builtin == nil {
		return false
	}
	t.builtin.Engine.Server.SetProfileDir(dir)
	return true
}
