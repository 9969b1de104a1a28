package sweep

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/glmbench/glmbench/bench/workload"
	"github.com/glmbench/glmbench/cmd/cmdtest"
	"github.com/glmbench/glmbench/engine/enginetest"
	"github.com/glmbench/glmbench/engine/sim"
)

// randomYAML is one random phase: 6 prompts of 48 to 64 tokens, answers of
// 2 to 5 tokens.
const randomYAML = `phases:
  - name: mixed
    kind: random
    requests: 6
    input_tokens: 64
    range_ratio: 0.75
    output: {dist: uniform, min: 2, max: 5}
`

// A --workload sweep refused for what the flags or the file say exits 2
// in one line, before any request reaches the endpoint.
func TestBadWorkloadSweepsExitTwoInOneLineBeforeAnyRequest(t *testing.T) {
	t.Parallel()
	random := cmdtest.WriteFile(t, "random.yaml", randomYAML)
	two := cmdtest.WriteFile(t, "two.yaml", randomYAML+`  - name: fixed
    kind: fixed
    requests: 2
    input_tokens: 32
    output_tokens: 2
`)
	for _, tc := range []struct {
		name string
		args []string
		want []string
	}{
		{"--workload with --shape", []string{"--workload", random, "--shape", "32/8"}, []string{"--shape", "--workload"}},
		{"a multi-turn phase", []string{"--workload", "multi-turn"}, []string{"embedded multi-turn", "multi-turn phase", "glmbench run"}},
		{"two phases, no --workload-phase", []string{"--workload", two}, []string{two, "2 phases", "--workload-phase"}},
		{"an unknown --workload-phase", []string{"--workload", two, "--workload-phase", "mixd"}, []string{`--workload-phase "mixd"`, two, "no such phase"}},
		{"an unknown workload name", []string{"--workload", "randm"}, []string{`"randm"`, strings.Join(workload.Names(), ", ")}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			url, hits := cmdtest.CountingEndpoint(t)
			dir := filepath.Join(t.TempDir(), "out")
			code, _, stderr := execute(t, append([]string{"--endpoint", url, "--model", "m", "--out", dir}, tc.args...)...)
			cmdtest.WantRefused(t, code, stderr, hits, tc.want...)
			if _, err := os.Stat(dir); !os.IsNotExist(err) {
				t.Errorf("the output folder exists (%v); want no report", err)
			}
		})
	}
}

// A sweep of a workload phase at concurrencies 1 and 2 measures two
// points of that phase's kind, and each record is the workload's request
// i mod 6 of its point (Expand with the default seed 1): its max_tokens and
// target prompt length are that request's.
func TestAWorkloadSweepSendsThePhasesRequestsAtEachPoint(t *testing.T) {
	t.Parallel()
	e := enginetest.Start(t, enginetest.Sim(sim.CostModel{StepOverhead: time.Millisecond}))
	spec := cmdtest.WriteFile(t, "random.yaml", randomYAML)
	f, err := workload.Load(spec)
	if err != nil {
		t.Fatal(err)
	}
	reqs, err := f.Phases[0].Expand(1)
	if err != nil {
		t.Fatal(err)
	}
	if len(reqs) != 6 || slices.IndexFunc(reqs, func(r workload.Request) bool { return r.Output != reqs[0].Output }) < 0 {
		t.Fatalf("the phase expands to %d requests, all of max_tokens %d; the test wants 6 that differ", len(reqs), reqs[0].Output)
	}
	dir := filepath.Join(t.TempDir(), "out")
	in := sweepOK(t, dir, "--endpoint", e.BaseURL(), "--workload", spec, "--concurrency", "1,2",
		"--duration", "1s", "--warmup", "200ms")
	if len(in.Report.Sweeps) != 1 {
		t.Fatalf("%d sweeps, want 1", len(in.Report.Sweeps))
	}
	s := in.Report.Sweeps[0]
	if s.Name != "mixed" || len(s.Points) != 2 {
		t.Fatalf("sweep %q with %d points; want mixed with 2", s.Name, len(s.Points))
	}
	for k, p := range s.Points {
		if p.Workload != workload.Random || p.Concurrency != k+1 || p.Completed == 0 {
			t.Errorf("point %d: workload %q, concurrency %d, %d completed; want random, %d, some", p.Point, p.Workload, p.Concurrency, p.Completed, k+1)
		}
	}
	if in.Report.Options.Workload != spec {
		t.Errorf("options.workload %q, want %q", in.Report.Options.Workload, spec)
	}
	points, cycled := map[int]int{}, 0
	for _, r := range in.Records {
		points[r.Point]++
		if r.I >= len(reqs) {
			cycled++
		}
		want := reqs[r.I%len(reqs)]
		if r.TargetPrompt == nil {
			t.Fatalf("point %d request %d: no target_prompt_tokens", r.Point, r.I)
		}
		if r.MaxTokens != want.Output || *r.TargetPrompt != want.Input {
			t.Fatalf("point %d request %d: max_tokens %d, target %d; the workload's request %d has %d and %d",
				r.Point, r.I, r.MaxTokens, *r.TargetPrompt, r.I%len(reqs), want.Output, want.Input)
		}
	}
	if len(points) != 2 || points[1] == 0 || points[2] == 0 {
		t.Errorf("records by point %v; want points 1 and 2 only", points)
	}
	if cycled == 0 {
		t.Errorf("no point sent more than the phase's %d requests; the test wants them drawn again, i mod %d", len(reqs), len(reqs))
	}
}
