package run

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/glmbench/glmbench/bench"
	"github.com/glmbench/glmbench/cmd/cmdutil"
	"github.com/glmbench/glmbench/reports/schema"
)

func parse(t *testing.T, args ...string) *Options {
	t.Helper()
	f, _, _ := cmdutil.TestFactory(context.Background(), nil)
	var got *Options
	cmd := NewCmdRun(f, func(o *Options) error { got = o; return nil })
	cmd.SetArgs(args)
	if err := cmd.Execute(); err != nil {
		t.Fatalf("%v", err)
	}
	return got
}

func TestFlagsParseIntoOptions(t *testing.T) {
	t.Parallel()
	o := parse(t, "--endpoint", "http://h/v1", "--phase", "a=1/2/3", "--phase", "b=4/5/6", "--max-concurrency", "8",
		"--request-rate", "2.5", "--stall-timeout", "5s", "--ignore-eos=false", "--header", "X-A=1", "--header", "X-B=2", "--api-key-env", "K")
	if o.Endpoint.Endpoint != "http://h/v1" || strings.Join(o.Custom, " ") != "a=1/2/3 b=4/5/6" || o.MaxConcurrency != 8 ||
		o.RequestRate != 2.5 || o.StallTimeout != 5*time.Second || o.IgnoreEOS || len(o.Endpoint.Headers) != 2 ||
		!o.Endpoint.APIKeyEnvSet || o.PhasesGiven {
		t.Fatalf("%+v", o)
	}
	def := parse(t)
	if def.Phases != "all" || !def.IgnoreEOS || def.PhaseCap != 30*time.Minute || def.TTFTTimeout != 10*time.Minute ||
		def.StallTimeout != time.Minute || def.ConnectTimeout != 10*time.Second || def.RequestTimeout != 0 || def.Endpoint.APIKeyEnvSet {
		t.Fatalf("defaults: %+v", def)
	}
	if o := parse(t, "--phases", "single"); !o.PhasesGiven {
		t.Fatal("--phases not noticed")
	}
}

func TestProgressLineSaysWhereThePhaseIs(t *testing.T) {
	t.Parallel()
	p := &bench.Progress{}
	line := progressLine(p, 1234.4, false)
	if !strings.Contains(line, "0/0 done") || !strings.Contains(line, "1234 events/s") {
		t.Fatalf("%q", line)
	}
	r := &schema.PhaseResult{Phase: "x", Status: "complete", Completed: 3, BatchSize: 4, Errors: 1, ByClass: map[schema.Class]int{schema.Stalled: 1}}
	if got := phaseLine(r); !strings.Contains(got, "3/4 completed") || !strings.Contains(got, "stalled 1") {
		t.Fatalf("%q", got)
	}
}
