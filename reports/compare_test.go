package reports

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/glmbench/glmbench/bench"
	"github.com/glmbench/glmbench/reports/schema"
)

// golden compares got with testdata/name, rewriting it under -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("output differs from %s (run with -update if the change is meant):\n%s", path, got)
	}
}

func render(t *testing.T, ins []*Input, format string) []byte {
	t.Helper()
	c, err := Compare(ins)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := WriteComparison(&buf, c, format); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestComparisonOfTwoReportsMatchesGolden(t *testing.T) {
	t.Parallel()
	ins := []*Input{
		run{label: "sglang", seed: 1, jitter: 0.02, specs: []bench.Spec{single, decodeMd}}.input("sglang/report.json"),
		run{label: "vllm", seed: 2, jitter: 0.02, speed: 0.9, specs: []bench.Spec{single, decodeMd},
			fail: []schema.Class{schema.RateLimited, schema.RateLimited, schema.Stalled}}.input("vllm/report.json"),
	}
	md := render(t, ins, FormatMarkdown)
	golden(t, "compare2.md.golden", md)
	for _, want := range []string{"| **decode_medium**<br>64/256/64 |", "rate_limited 2 · stalled 1", "completed 61/64", "(-1"} {
		if !strings.Contains(string(md), want) {
			t.Errorf("Markdown lacks %q", want)
		}
	}
}

// threeInputs are two runs of one label, a second label with evals and
// checks, and a legacy file: the merging, eval and conformance rows.
func threeInputs(t *testing.T) []*Input {
	t.Helper()
	a1 := run{label: "main", seed: 1, jitter: 0.02, specs: []bench.Spec{single, decodeMd}}.input("runs/main-1/report.json")
	a2 := run{label: "main", seed: 3, jitter: 0.02, specs: []bench.Spec{single, decodeMd}}.input("runs/main-2/report.json")
	a2.Report.Evals = []schema.EvalResult{{Name: "ppl", Status: "ok", Method: "echo", N: 40, Metrics: map[string]float64{"ppl": 2.923, "nll_per_token": 1.0727}}}
	a2.Report.Conformance = []schema.CheckResult{{ID: "stream", Status: "pass"}, {ID: "usage", Status: "pass"}, {ID: "logprobs", Status: "skip"}}
	b := run{label: "pr-123", seed: 2, jitter: 0.02, speed: 1.05, specs: []bench.Spec{single, decodeMd},
		fail: []schema.Class{schema.QueueFull}}.input("runs/pr/report.json")
	b.Report.Evals = []schema.EvalResult{
		{Name: "ppl", Status: "unsupported", Failure: &schema.EvalFailure{Kind: "echo_server_error", HTTPStatus: 500}},
		{Name: "mmlu", Status: "ok", N: 570, Metrics: map[string]float64{"acc": 0.7123, "acc_stem": 0.61}},
	}
	b.Report.Conformance = []schema.CheckResult{{ID: "stream", Status: "pass"}, {ID: "usage", Status: "fail", Detail: "no usage"}}
	legacy, err := ParseLegacy("old/h200_legacy.json", []byte(legacyFile))
	if err != nil {
		t.Fatal(err)
	}
	return []*Input{a1, b, a2, {Path: "old/h200_legacy.json", Report: legacy, Legacy: true}}
}

func TestComparisonOfThreeReportsMatchesGolden(t *testing.T) {
	t.Parallel()
	ins := threeInputs(t)
	md := render(t, ins, FormatMarkdown)
	golden(t, "compare3.md.golden", md)
	golden(t, "compare3.txt.golden", render(t, ins, FormatText))
	for _, want := range []string{
		"|   | main (2 runs) | pr-123 | h200_legacy |",
		"| **eval ppl** | ppl 2.923 (n 40) | unsupported: echo_server_error (HTTP 500) | — |",
		"| **conformance** | 2 pass · 0 fail · 1 skip | 1 pass · 1 fail · 0 skip<br>failed: usage | — |",
		"completed 128/128", "rate_limited 30 · queue_full 2", "older harness (imported)",
	} {
		if !strings.Contains(string(md), want) {
			t.Errorf("Markdown lacks %q", want)
		}
	}
}

func TestMergingARunAveragesFiguresAndSumsCounts(t *testing.T) {
	t.Parallel()
	ins := threeInputs(t)
	c, err := Compare(ins)
	if err != nil {
		t.Fatal(err)
	}
	if got := len(c.Columns); got != 3 {
		t.Fatalf("%d columns, want main, pr-123, h200_legacy", got)
	}
	cell := c.Phases[1].Cells[0]
	want := (FindPhase(ins[0].Report, "decode_medium").OutTput + FindPhase(ins[2].Report, "decode_medium").OutTput) / 2
	if cell.Runs != 2 || cell.Asked != 128 || cell.OutTput != want || cell.OutTputChange != nil {
		t.Fatalf("merged cell %+v, want 2 runs, 128 asked, out_tput %v", cell, want)
	}
	if ch := c.Phases[1].Cells[1].OutTputChange; ch == nil || *ch < 3 || *ch > 7 {
		t.Fatalf("a 5%% faster build shows a change of %v", ch)
	}
	var back Comparison
	if err := json.Unmarshal(render(t, ins, FormatJSON), &back); err != nil || back.Schema != CompareSchema {
		t.Fatalf("JSON does not read back: %v", err)
	}
}

func TestMergingPhasesOfDifferentShapesIsBadInput(t *testing.T) {
	t.Parallel()
	other := decodeMd
	other.In = 512
	ins := []*Input{
		run{label: "x", seed: 1, specs: []bench.Spec{decodeMd}}.input("a"),
		run{label: "x", seed: 2, specs: []bench.Spec{other}}.input("b"),
	}
	_, err := Compare(ins)
	if err == nil || !strings.Contains(err.Error(), "64/256/64 in a but 64/512/64 in b") || !isBadInput(err) {
		t.Fatalf("got %v", err)
	}
}

func TestUnknownFormatIsBadInput(t *testing.T) {
	t.Parallel()
	err := WriteComparison(&bytes.Buffer{}, &Comparison{}, "html")
	if !isBadInput(err) {
		t.Fatalf("got %v", err)
	}
}

// withEval is a report of label with one eval scored by method.
func withEval(label, seed string, name, method string, metrics map[string]float64) *Input {
	in := run{label: label, seed: uint64(len(seed)), specs: []bench.Spec{single}}.input(label + "-" + seed)
	in.Report.Evals = []schema.EvalResult{{Name: name, Status: "ok", Method: method, N: 16, Metrics: metrics}}
	return in
}

func TestAnEvalByAnotherMethodIsMarkedNotComparable(t *testing.T) {
	t.Parallel()
	acc := func(v float64) map[string]float64 { return map[string]float64{"acc": v} }
	ins := []*Input{
		withEval("vllm", "a", "mmlu", "echo", acc(0.62)),
		withEval("llamacpp", "a", "mmlu", "chat-greedy", acc(0.55)),
		withEval("sglang", "a", "mmlu", "echo", acc(0.61)),
		// Two runs of one label by different methods: their mean is no figure.
		withEval("hosted", "a", "mmlu", "chat-top-logprobs", acc(0.5)),
		withEval("hosted", "bb", "mmlu", "chat-greedy", acc(0.4)),
	}
	c, err := Compare(ins)
	if err != nil {
		t.Fatal(err)
	}
	cells := c.Evals[0].Cells
	for i, want := range []struct{ method, note string }{
		{"echo", ""},
		{"chat-greedy", "by chat-greedy, not echo as vllm: not comparable"},
		{"echo", ""},
		{"chat-top-logprobs + chat-greedy", "runs by different methods (chat-top-logprobs + chat-greedy): their mean is not comparable"},
	} {
		if cells[i].Method != want.method || cells[i].MethodNote != want.note {
			t.Errorf("column %s: method %q note %q, want %q and %q", c.Columns[i].Label, cells[i].Method, cells[i].MethodNote, want.method, want.note)
		}
	}
	md := string(render(t, ins, FormatMarkdown))
	for _, want := range []string{
		"acc 0.55 (n 16)<br>⚠ by chat-greedy, not echo as vllm: not comparable",
		"| **eval mmlu** | acc 0.62 (n 16) |",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("Markdown lacks %q:\n%s", want, md)
		}
	}
	// The same method everywhere: no mark.
	same := []*Input{withEval("a", "a", "ppl", "echo", map[string]float64{"ppl": 3}), withEval("b", "a", "ppl", "echo", map[string]float64{"ppl": 3.1})}
	if md := string(render(t, same, FormatMarkdown)); strings.Contains(md, "⚠") {
		t.Errorf("one method, yet marked:\n%s", md)
	}
}
