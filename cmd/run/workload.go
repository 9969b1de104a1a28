package run

import (
	"context"
	"fmt"

	"github.com/glmbench/glmbench/bench"
	"github.com/glmbench/glmbench/bench/workload"
	"github.com/glmbench/glmbench/cmd/target"
	"github.com/glmbench/glmbench/internal/badinput"
)

// workloadGiven says whether the run's phases come from --workload or
// --dataset rather than --phases and --phase.
func (o *Options) workloadGiven() bool { return o.Workload != "" || o.Dataset != "" }

// loadWorkload reads --workload and --dataset (workload.Open) and expands
// every phase with --seed: every data set and trace is read, and refused
// with its file:line, before anything is sent.
func (o *Options) loadWorkload() ([]bench.WorkPhase, error) {
	if o.PhasesGiven || len(o.Custom) > 0 {
		return nil, badinput.Errorf("--workload and --dataset replace --phases and --phase: give one or the other")
	}
	if o.RequestRate > 0 {
		return nil, badinput.Errorf("--request-rate does not apply to --workload or --dataset: each phase's arrival sets when its requests are sent")
	}
	f, err := workload.Open(o.Workload, o.Dataset)
	if err != nil {
		return nil, err
	}
	var phases []bench.WorkPhase
	for _, ph := range f.Phases {
		for _, b := range bench.Builtin {
			if ph.Name == b.Name || ph.Name == "all" {
				return nil, badinput.Errorf("workload %s: phase %q has a built-in phase's name; pick another", f.Source, ph.Name)
			}
		}
		reqs, warns, err := ph.ExpandWarn(o.Seed)
		if err != nil {
			return nil, err
		}
		for _, w := range warns {
			fmt.Fprintf(o.F.IO.ErrOut, "glmbench: warning: phase %s: %s\n", ph.Name, w)
		}
		phases = append(phases, bench.WorkPhase{Phase: ph, Reqs: reqs})
	}
	o.workloadSource = f.Source
	return phases, nil
}

// workSpecs are the workload's phases as the report and the gate name
// their shapes: requests, and the nominal input and output lengths.
func workSpecs(phases []bench.WorkPhase) []bench.Spec {
	specs := make([]bench.Spec, len(phases))
	for i, wp := range phases {
		in, out := bench.Nominal(wp.Phase, wp.Reqs)
		specs[i] = bench.Spec{Name: wp.Phase.Name, N: len(wp.Reqs), In: in, Out: out}
	}
	return specs
}

// workJobs calibrates the workload on the endpoint and returns its
// phases, ready to run.
func (o *Options) workJobs(ctx context.Context, bo *bench.Options, phases []bench.WorkPhase) ([]job, error) {
	plans, err := target.CalibrateWorkload(ctx, o.F.IO.ErrOut, bo, phases, fmt.Sprintf("workload %s (%d phase(s))", o.workloadSource, len(phases)))
	if err != nil {
		return nil, err
	}
	return phaseJobs(bo, plans, bench.RunWorkPhase), nil
}
