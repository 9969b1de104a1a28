package run

import (
	"context"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/glmbench/glmbench/bench/workload"
	"github.com/glmbench/glmbench/cmd/cmdtest"
	"github.com/glmbench/glmbench/engine/enginetest"
	"github.com/glmbench/glmbench/reports"
	"github.com/glmbench/glmbench/reports/schema"
)

// show is an optional count as a message says it: the number, or "none".
func show(p *int) string {
	if p == nil {
		return "none"
	}
	return strconv.Itoa(*p)
}

// showF is an optional rate as a message says it.
func showF(p *float64) string {
	if p == nil {
		return "none"
	}
	return strconv.FormatFloat(*p, 'g', 4, 64)
}

const fixedYAML = `phases:
  - name: short
    kind: fixed
    requests: 2
    input_tokens: 32
    output_tokens: 2
`

// Every bad --workload or --dataset exits 2 with one line saying what is
// wrong, before any request reaches the endpoint, and leaves no report.
func TestBadWorkloadInputExitsTwoInOneLineBeforeAnyRequest(t *testing.T) {
	t.Parallel()
	fixed := cmdtest.WriteFile(t, "fixed.yaml", fixedYAML)
	misspelt := cmdtest.WriteFile(t, "misspelt.yaml", `phases:
  - name: chat
    kind: shared-prefix
    requests: 4
    groups: 2
    prefix_token: 256
    question_tokens: 16
    output_tokens: 2
`)
	broken := cmdtest.WriteFile(t, "broken.jsonl", `{"prompt": "one", "max_tokens": 2}
{"prompt": "two", "max_tokens": 2}
{"prompt": "three", "max_tokens": 
{"prompt": "four", "max_tokens": 2}
`)
	single := cmdtest.WriteFile(t, "single.yaml", `phases:
  - name: single
    kind: fixed
    requests: 1
    input_tokens: 32
    output_tokens: 2
`)
	missing := filepath.Join(t.TempDir(), "absent.yaml")
	for _, tc := range []struct {
		name string
		args []string
		want []string
	}{
		{"an unknown workload name", []string{"--workload", "sharegtp"},
			[]string{`--workload "sharegtp"`, strings.Join(workload.Names(), ", ")}},
		{"a missing file", []string{"--workload", missing}, []string{missing, "no such file"}},
		{"a misspelt key", []string{"--workload", misspelt}, []string{misspelt, `phase "chat"`, "prefix_token"}},
		{"a dataset's broken line 3", []string{"--dataset", broken}, []string{broken + ":3:"}},
		{"--workload with --phases", []string{"--workload", fixed, "--phases", "single"}, []string{"--phases"}},
		{"--workload with --phase", []string{"--workload", fixed, "--phase", "x=1/32/2"}, []string{"--phase"}},
		{"--workload with --request-rate", []string{"--workload", fixed, "--request-rate", "2"}, []string{"--request-rate"}},
		{"a phase named single", []string{"--workload", single}, []string{`phase "single"`, "built-in"}},
		{"--dataset with no dataset phase", []string{"--workload", fixed, "--dataset", broken},
			[]string{"--dataset", fixed, "no dataset phase"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			url, hits := cmdtest.CountingEndpoint(t)
			dir := t.TempDir()
			code, stderr := execute(t, context.Background(), append([]string{"--endpoint", url, "--model", "m", "--out", dir}, tc.args...)...)
			cmdtest.WantRefused(t, code, stderr, hits, tc.want...)
			noReport(t, dir)
		})
	}
}

// runOK runs `glmbench run ARGS --out DIR`, fails t unless it exits 0, and
// returns what it wrote.
func runOK(t *testing.T, dir string, args ...string) *reports.Input {
	t.Helper()
	in, _ := runSaying(t, dir, args...)
	return in
}

// runSaying is runOK that returns the run's stderr too.
func runSaying(t *testing.T, dir string, args ...string) (*reports.Input, string) {
	t.Helper()
	code, stderr := execute(t, context.Background(), append(args, "--out", dir)...)
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	return cmdtest.Load(t, filepath.Join(dir, reports.ReportJSON)), stderr
}

// runEngine runs `glmbench run ARGS --out DIR` against e, fails t unless it
// exits 0, and returns the report and records it wrote, and report.md.
func runEngine(t *testing.T, e *enginetest.Engine, args ...string) (*schema.Report, []schema.Record, string) {
	t.Helper()
	dir := t.TempDir()
	in := runOK(t, dir, append([]string{"--endpoint", e.BaseURL()}, args...)...)
	md := cmdtest.ReadFile(t, dir, reports.ReportMD)
	for _, r := range in.Records {
		if !r.Completed() {
			t.Fatalf("request %d did not complete: %+v", r.I, r)
		}
	}
	return in.Report, in.Records, md
}

// Two groups of three requests sharing a 256-token system prompt, sent one
// at a time, against the built-in engine (its radix cache on, pages of 64
// tokens): the first request of each group finds nothing of its prompt
// cached, every later one its group's system prompt, at least 192 of its
// 272 tokens. So 4 hits and 2 misses, and the records say which is which.
func TestRunSharedPrefixWorkloadReportsItsCache(t *testing.T) {
	t.Parallel()
	e := enginetest.Start(t)
	spec := cmdtest.WriteFile(t, "shared.yaml", `phases:
  - name: chat
    kind: shared-prefix
    requests: 6
    groups: 2
    prefix_tokens: 256
    question_tokens: 16
    output_tokens: 2
`)
	rep, records, md := runEngine(t, e, "--workload", spec, "--max-concurrency", "1")
	if len(rep.Phases) != 1 {
		t.Fatalf("%d phases, want 1", len(rep.Phases))
	}
	ph := rep.Phases[0]
	if ph.Phase != "chat" || ph.Workload != workload.SharedPrefix || ph.Completed != 6 {
		t.Fatalf("phase %q, workload %q, %d completed; want chat, shared-prefix, 6", ph.Phase, ph.Workload, ph.Completed)
	}
	if rep.Options.Workload != spec {
		t.Errorf("options.workload %q, want %q", rep.Options.Workload, spec)
	}
	c := ph.Cache
	if c == nil {
		t.Fatal("no cache block")
	}
	if c.HitRate == nil || c.ExpectedHitRate == nil || c.Hits != 4 || c.Misses != 2 {
		t.Fatalf("cache: hit_rate %s, expected_hit_rate %s, %d hits, %d misses; want both rates set, 4 hits and 2 misses",
			showF(c.HitRate), showF(c.ExpectedHitRate), c.Hits, c.Misses)
	}
	if len(records) != 6 {
		t.Fatalf("%d records, want 6", len(records))
	}
	seen := map[int]bool{}
	for _, r := range records {
		if r.Group != 1 && r.Group != 2 {
			t.Fatalf("request %d: group %d, want 1 or 2", r.I, r.Group)
		}
		if r.TargetPrompt == nil || *r.TargetPrompt != 272 || r.CachedTokens == nil || r.ExpectedCached == nil || r.MaxTokens != 2 {
			t.Fatalf("request %d: target %s, cached %s, expected %s, max_tokens %d; want 272, set, set, 2",
				r.I, show(r.TargetPrompt), show(r.CachedTokens), show(r.ExpectedCached), r.MaxTokens)
		}
		first := !seen[r.Group]
		seen[r.Group] = true
		switch {
		case first && (*r.ExpectedCached != 0 || *r.CachedTokens != 0):
			t.Errorf("request %d, the first of group %d: expected %d, cached %d; want 0 and 0", r.I, r.Group, *r.ExpectedCached, *r.CachedTokens)
		case !first && (*r.ExpectedCached <= 0 || *r.CachedTokens < 192):
			t.Errorf("request %d of group %d: expected %d, cached %d; want its system prompt, 192 or more cached", r.I, r.Group, *r.ExpectedCached, *r.CachedTokens)
		}
	}
	if !strings.Contains(md, "## Prefix cache") {
		t.Errorf("report.md has no Prefix cache table:\n%s", md)
	}
}

// --dataset alone is one dataset phase of all its items, each sent with
// the max_tokens its line gives; the items are sent as they are, so no
// record has a target prompt length.
func TestRunDatasetSendsEachItemWithItsOwnMaxTokens(t *testing.T) {
	t.Parallel()
	e := enginetest.Start(t)
	data := cmdtest.WriteFile(t, "items.jsonl", `{"prompt": "Name three rivers of Europe.", "max_tokens": 3}
{"prompt": "What is a prime number?", "max_tokens": 4}

{"messages": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Why is the sky blue?"}], "max_tokens": 5}
{"prompt": "Count to ten.", "max_tokens": 6}
{"prompt": "Say hello in French.", "max_tokens": 7}
`)
	rep, records, _ := runEngine(t, e, "--dataset", data)
	if len(rep.Phases) != 1 || rep.Phases[0].Workload != workload.Dataset || rep.Phases[0].Completed != 5 {
		t.Fatalf("phases %+v; want one dataset phase of 5 completed requests", rep.Phases)
	}
	if len(records) != 5 {
		t.Fatalf("%d records, want 5", len(records))
	}
	for _, r := range records {
		want := 3 + r.I
		if r.TargetPrompt != nil || r.MaxTokens != want || r.N != want {
			t.Errorf("request %d: target %s, max_tokens %d, %d tokens out; want no target, %d and %d", r.I, show(r.TargetPrompt), r.MaxTokens, r.N, want, want)
		}
	}
}

// The built-in trace example replays its first 30 requests, at their
// trace's lengths.
func TestRunBuiltinTraceCompletesItsRequests(t *testing.T) {
	t.Parallel()
	e := enginetest.Start(t)
	rep, records, _ := runEngine(t, e, "--workload", "trace")
	f, ok := workload.Named("trace")
	if !ok {
		t.Fatal("no built-in trace")
	}
	reqs, err := f.Phases[0].Expand(1)
	if err != nil {
		t.Fatal(err)
	}
	if len(reqs) != 30 || len(rep.Phases) != 1 || rep.Phases[0].Workload != workload.Trace || rep.Phases[0].Completed != 30 || len(records) != 30 {
		t.Fatalf("%d planned; phases %+v, %d records; want 30 completed", len(reqs), rep.Phases, len(records))
	}
	if rep.Options.Workload != "embedded trace" {
		t.Errorf("options.workload %q, want embedded trace", rep.Options.Workload)
	}
	for _, r := range records {
		if r.TargetPrompt == nil || *r.TargetPrompt != reqs[r.I].Input || r.MaxTokens != reqs[r.I].Output {
			t.Errorf("request %d: target %s, max_tokens %d; the trace says %d and %d", r.I, show(r.TargetPrompt), r.MaxTokens, reqs[r.I].Input, reqs[r.I].Output)
		}
	}
}

// Two sessions of three turns: each turn resends its session's history, so
// turn k expects cached the whole prompt of turn k−1, as the engine
// counted it.
func TestRunMultiTurnExpectsEachTurnsHistoryCached(t *testing.T) {
	t.Parallel()
	e := enginetest.Start(t)
	spec := cmdtest.WriteFile(t, "chat.yaml", `phases:
  - name: chat
    kind: multi-turn
    sessions: 2
    turns: 3
    user_tokens: 32
    output_tokens: 4
    think_time: 10ms
`)
	rep, records, _ := runEngine(t, e, "--workload", spec)
	if len(rep.Phases) != 1 || rep.Phases[0].Workload != workload.MultiTurn || len(records) != 6 {
		t.Fatalf("phases %+v, %d records; want one multi-turn phase of 6", rep.Phases, len(records))
	}
	prompt := map[[2]int]int{}
	for _, r := range records {
		if r.Session < 1 || r.Session > 2 || r.Turn < 1 || r.Turn > 3 || r.Prompt <= 0 {
			t.Fatalf("request %d: session %d, turn %d, prompt %d", r.I, r.Session, r.Turn, r.Prompt)
		}
		prompt[[2]int{r.Session, r.Turn}] = r.Prompt
	}
	if len(prompt) != 6 {
		t.Fatalf("sessions and turns %v; want 2 × 3", prompt)
	}
	for _, r := range records {
		want := 0
		if r.Turn > 1 {
			want = prompt[[2]int{r.Session, r.Turn - 1}]
		}
		if r.ExpectedCached == nil || *r.ExpectedCached != want {
			t.Errorf("session %d turn %d: expected_cached_tokens %s, want %d", r.Session, r.Turn, show(r.ExpectedCached), want)
		}
	}
}
