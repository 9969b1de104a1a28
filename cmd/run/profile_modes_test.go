package run

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/glmbench/glmbench/endpoints/endpointstest"
)

// In every mode of load (--request-rate, --max-concurrency, a workload of
// two phases, one of them multi-turn) the start comes after every probe
// and before the first load request, and the stop after the last. The
// probes are counted by a run whose start is refused (vLLM without its
// profiler: exit 2 before any load): the same flags send the same probes.
func TestProfileWrapsTheLoadInEveryMode(t *testing.T) {
	t.Parallel()
	work := filepath.Join(t.TempDir(), "two.yaml")
	yaml := `phases:
  - {name: one, kind: fixed, requests: 3, input_tokens: 64, output_tokens: 4, arrival: {kind: constant, rate: 200}}
  - {name: two, kind: multi-turn, sessions: 2, turns: 2, user_tokens: 32, output_tokens: 4, think_time: 1ms, arrival: {kind: poisson, rate: 200}}
`
	if err := os.WriteFile(work, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		args []string
		load int
	}{
		{"request rate", []string{"--phase", "p=4/32/4", "--request-rate", "200"}, 4},
		{"max concurrency", []string{"--phase", "p=4/32/4", "--max-concurrency", "2"}, 4},
		{"two phases", []string{"--phase", "a=2/32/4", "--phase", "b=3/48/4"}, 5},
		{"workload", []string{"--workload", work}, 7},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			refused := endpointstest.Start(t, endpointstest.VLLM, endpointstest.Options{})
			args := append([]string{"--endpoint", refused.BaseURL(), "--no-metrics", "--profile", "--out", t.TempDir()}, tc.args...)
			if code, stderr := execute(t, context.Background(), args...); code != 2 {
				t.Fatalf("refused start: exit %d\n%s", code, stderr)
			}
			probes := refused.Generations()
			p := endpointstest.Start(t, endpointstest.VLLM, endpointstest.Options{VLLMProfiler: true})
			args = append([]string{"--endpoint", p.BaseURL(), "--no-metrics", "--profile", "--out", t.TempDir()}, tc.args...)
			if code, stderr := execute(t, context.Background(), args...); code != 0 {
				t.Fatalf("exit %d\n%s", code, stderr)
			}
			calls, gens := p.ProfileCalls(), p.Generations()
			if len(calls) != 2 || calls[0].Generations != probes || calls[1].Generations != gens || gens != probes+tc.load {
				t.Errorf("profile calls %+v of %d generation requests; want the start after the %d probes, the stop after %d load requests", calls, gens, probes, tc.load)
			}
		})
	}
}
