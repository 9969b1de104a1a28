package agent

import (
	"context"
	"testing"
	"time"

	"github.com/glmbench/glmbench/bench"
	"github.com/glmbench/glmbench/bench/agent"
	"github.com/glmbench/glmbench/endpoints"
	"github.com/glmbench/glmbench/engine/enginetest"
	"github.com/glmbench/glmbench/engine/sim"
	"github.com/glmbench/glmbench/reports/schema"
)

// The truth: an agent stopped mid-phase (SIGTERM: its context ends) ends
// the phase as interrupted and streams its records back before it shuts
// down: the coordinator's phase is interrupted with every request
// accounted for and the agent not lost (before, the phase ran on through
// Shutdown, and one longer than its 5 s was cut off, its records lost).
func TestAnAgentStoppedMidPhaseHandsItsRecordsBack(t *testing.T) {
	e := enginetest.Start(t, enginetest.Sim(sim.CostModel{StepOverhead: 20 * time.Millisecond}))
	ep, err := endpoints.Resolve(endpoints.Flags{Endpoint: e.BaseURL(), Model: e.ModelName()}, func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	o := &bench.Options{
		Endpoint: ep, Shape: bench.Shape{Model: ep.Model, IgnoreEOS: true},
		Limits:         endpoints.StreamLimits{TTFT: 30 * time.Second, Stall: 30 * time.Second},
		ConnectTimeout: 2 * time.Second, PhaseCap: time.Minute, Seed: 3, Nonce: bench.NewNonce(), RequestRate: 10,
	}
	plans, _, err := bench.Prepare(context.Background(), o, []bench.Spec{{Name: "p", N: 6, In: 32, Out: 32}})
	if err != nil {
		t.Fatal(err)
	}

	a := startAgent(t, nil, "--listen", "127.0.0.1:0")
	conns, err := agent.Dial(context.Background(), []string{a.addr}, "")
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		time.Sleep(agent.StartLead + 400*time.Millisecond)
		a.stop()
	}()
	run := agent.RunPhase(context.Background(), o, plans[0], conns)
	if r := run.Result; r.Status != schema.StatusInterrupted || len(run.Records) != 6 || r.Agents[0].Lost != "" {
		t.Fatalf("status %s, %d records, lost %q; want interrupted, 6, not lost", r.Status, len(run.Records), r.Agents[0].Lost)
	}
	a.waitStopped(t)
}
