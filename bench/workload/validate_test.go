package workload

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/glmbench/glmbench/internal/badinput"
)

// phase wraps one phase's YAML mapping lines into a file.
func phase(lines ...string) string {
	return "phases:\n  - " + strings.Join(lines, "\n    ") + "\n"
}

func TestParseRefusesEachBadSpecInOneLineNamingFileAndField(t *testing.T) {
	t.Parallel()
	fixed := []string{"name: a", "kind: fixed", "requests: 4", "input_tokens: 8", "output_tokens: 4"}
	with := func(extra ...string) string { return phase(append(append([]string{}, fixed...), extra...)...) }
	sp := func(extra ...string) string {
		return phase(append([]string{"name: chat", "kind: shared-prefix", "requests: 8", "groups: 2", "prefix_tokens: 64",
			"question_tokens: 8", "output_tokens: 4"}, extra...)...)
	}
	random := func(extra ...string) string {
		return phase(append([]string{"name: r", "kind: random", "requests: 4"}, extra...)...)
	}
	cases := []struct{ name, src, want string }{
		{"an empty file", "", `work.yaml: no phases`},
		{"an empty list", "phases: []", `work.yaml: no phases`},
		{"a misspelt top-level key", "phase: []", `work.yaml: unknown field "phase"`},
		{"a misspelt phase key", with("reqests: 3"), `work.yaml: phase "a": unknown field "reqests"`},
		{"a misspelt arrival key", with("arrival: {kind: poisson, rat: 3}"), `work.yaml: phase "a": unknown field "rat"`},
		{"a wrong type", with("groups: many"), `work.yaml: phase "a": groups: want an integer, got string`},
		{"broken YAML", "phases: [\n  {name: a", "work.yaml: "},
		{"a bad name", phase("name: Chat", "kind: fixed"), `phase "Chat": name "Chat": want lower-case`},
		{"a missing name", phase("kind: fixed"), `phase "": name ""`},
		{"a repeated name", with() + strings.TrimPrefix(with(), "phases:\n"), `phase "a": name used twice`},
		{"an unknown kind", phase("name: a", "kind: chat"), `kind "chat": want one of fixed, random, dataset, shared-prefix, multi-turn, trace`},
		{"groups on a chat phase", phase("name: chat", "kind: fixed", "groups: 2"), `work.yaml: phase "chat": groups applies to shared-prefix phases only`},
		{"a path on a fixed phase", with("path: x.json"), `phase "a": path applies to dataset and trace phases only`},
		{"think_time off multi-turn", with("think_time: 1s"), `think_time applies to multi-turn phases only`},
		{"requests on multi-turn", phase("name: m", "kind: multi-turn", "requests: 3"), `requests applies to fixed, random, dataset, shared-prefix and trace phases only`},
		{"no requests", phase("name: a", "kind: fixed", "input_tokens: 8", "output_tokens: 4"), `phase "a": requests: required`},
		{"too many requests", with()[:0] + phase("name: a", "kind: fixed", "requests: 1000000", "input_tokens: 8", "output_tokens: 4"), `requests 1000000: want 1 to 999999`},
		{"no input_tokens", phase("name: a", "kind: fixed", "requests: 4", "output_tokens: 4"), `input_tokens: required`},
		{"too many tokens", phase("name: a", "kind: fixed", "requests: 4", "input_tokens: 10000001", "output_tokens: 4"), `input_tokens 10000001: want 1 to 10000000`},
		{"negative tokens", phase("name: a", "kind: fixed", "requests: 4", "input_tokens: 8", "output_tokens: -1"), `output_tokens -1: want 1 to 10000000`},
		{"a negative seed", with("seed: -1"), `seed: want 0 or more`},
		{"more groups than requests", sp()[:0] + phase("name: chat", "kind: shared-prefix", "requests: 2", "groups: 3", "prefix_tokens: 64", "question_tokens: 8", "output_tokens: 4"), `groups 3: more than requests 2`},
		{"no prefix_tokens", phase("name: chat", "kind: shared-prefix", "requests: 2", "groups: 1", "question_tokens: 8", "output_tokens: 4"), `prefix_tokens: required`},
		{"sessions × turns too many", phase("name: m", "kind: multi-turn", "sessions: 1000", "turns: 1000", "user_tokens: 8", "output_tokens: 4"), `sessions × turns: 1000000 requests, over 999999`},
		{"a last turn too long", phase("name: m", "kind: multi-turn", "sessions: 1", "turns: 1000", "user_tokens: 9000000", "output_tokens: 4"), `turn 1000's prompt would be`},
		{"a negative think time", phase("name: m", "kind: multi-turn", "sessions: 1", "turns: 2", "user_tokens: 8", "output_tokens: 4", "think_time: -1s"), `think_time -1s: want 0 or more`},
		{"a bad duration", phase("name: m", "kind: multi-turn", "sessions: 1", "turns: 2", "user_tokens: 8", "output_tokens: 4", "think_time: soon"), `duration "soon": want 500ms`},
		{"random without range_ratio", random("input_tokens: 8", "output_tokens: 4"), `range_ratio: required with input_tokens`},
		{"random with both forms", random("input_tokens: 8", "range_ratio: 0.5", "input: {dist: uniform, min: 1, max: 8}", "output_tokens: 4"), `input_tokens and input: give one`},
		{"random with neither", random("input: {dist: uniform, min: 1, max: 8}"), `output_tokens: required (or output: {dist: ...})`},
		{"range_ratio over 1", random("input_tokens: 8", "output_tokens: 4", "range_ratio: 1.5"), `range_ratio 1.5: want 0 to 1`},
		{"range_ratio under 0", random("input_tokens: 8", "output_tokens: 4", "range_ratio: -0.1"), `range_ratio -0.1: want 0 to 1`},
		{"range_ratio with two dists", random("input: {dist: uniform, min: 1, max: 8}", "output: {dist: uniform, min: 1, max: 8}", "range_ratio: 0.5"), `range_ratio applies to input_tokens and output_tokens, not to distributions`},
		{"range_ratio off random", with("range_ratio: 0.5"), `range_ratio applies to random phases only`},
		{"an unknown dist", random("input: {dist: zipf, min: 1, max: 8}", "output_tokens: 4", "range_ratio: 0"), `phase "r": input: dist "zipf": want uniform, normal or lognormal`},
		{"min over max", random("input: {dist: uniform, min: 9, max: 8}", "output_tokens: 4", "range_ratio: 0"), `input: min 9 over max 8`},
		{"min 0", random("input: {dist: uniform, min: 0, max: 8}", "output_tokens: 4", "range_ratio: 0"), `input: min 0, max 8: want 1 ≤ min ≤ max ≤ 10000000`},
		{"a uniform with a mean", random("input: {dist: uniform, mean: 4, min: 1, max: 8}", "output_tokens: 4", "range_ratio: 0"), `uniform takes min and max only`},
		{"a normal without stddev", random("input: {dist: normal, mean: 4, min: 1, max: 8}", "output_tokens: 4", "range_ratio: 0"), `normal stddev 0: want over 0`},
		{"a lognormal without mean", random("input: {dist: lognormal, stddev: 4, min: 1, max: 8}", "output_tokens: 4", "range_ratio: 0"), `lognormal mean 0: want over 0`},
		{"bounds that hold no mass", random("output: {dist: normal, mean: 10, stddev: 1, min: 100, max: 200}", "input_tokens: 4", "range_ratio: 0"), `output: normal mean 10 stddev 1 puts 0% of its mass in [100, 200], under 1%: widen the bounds`},
		{"lognormal bounds that hold no mass", random("output: {dist: lognormal, mean: 1000, stddev: 10, min: 1, max: 900}", "input_tokens: 4", "range_ratio: 0"), `lognormal mean 1000 stddev 10 puts`},
		{"a dataset without path", phase("name: d", "kind: dataset"), `phase "d": path: required`},
		{"a dataset of unknown format", phase("name: d", "kind: dataset", "path: x.csv"), `path "x.csv": format: required`},
		{"a dataset with a bad format", phase("name: d", "kind: dataset", "path: x.csv", "format: csv"), `format "csv": want sharegpt, jsonl, text or parquet`},
		{"an unknown embedded sample", phase("name: d", "kind: dataset", "path: embedded:alpaca", "format: jsonl"), `no such embedded sample`},
		{"a dataset with input_tokens", phase("name: d", "kind: dataset", "path: x.json", "input_tokens: 3"), `input_tokens applies to fixed and random phases only`},
		{"a trace with a bad format", phase("name: t", "kind: trace", "path: t.jsonl", "format: csv"), `format "csv": a trace is jsonl`},
		{"a trace with a bad unit", phase("name: t", "kind: trace", "path: t.jsonl", "time_unit: us"), `time_unit "us": want ms or s`},
		{"a negative time scale", phase("name: t", "kind: trace", "path: t.jsonl", "time_scale: -1"), `time_scale -1: want a number over 0`},
		{"a trace with output_tokens", phase("name: t", "kind: trace", "path: t.jsonl", "output_tokens: 3"), `output_tokens applies to fixed, random, dataset, shared-prefix and multi-turn phases only`},
		{"an unknown arrival", with("arrival: {kind: storm}"), `arrival: kind "storm": want burst, poisson, gamma, ramp, constant or trace`},
		{"poisson without rate", with("arrival: {kind: poisson}"), `phase "a": arrival: rate 0: want a number over 0`},
		{"poisson with a negative rate", with("arrival: {kind: poisson, rate: -2}"), `arrival: rate -2: want a number over 0`},
		{"poisson with burstiness", with("arrival: {kind: poisson, rate: 2, burstiness: 3}"), `arrival: burstiness does not apply to poisson arrivals`},
		{"burst with a rate", with("arrival: {rate: 2}"), `arrival: rate does not apply to burst arrivals`},
		{"gamma without burstiness", with("arrival: {kind: gamma, rate: 2}"), `arrival: burstiness 0: want a number over 0`},
		{"an infinite rate", with("arrival: {kind: constant, rate: .inf}"), `work.yaml: unsupported value: +Inf`},
		{"a ramp to 0", with("arrival: {kind: ramp, from: 2}"), `arrival: to 0: want a number over 0`},
		{"a ramp from below 0", with("arrival: {kind: ramp, from: -1, to: 2}"), `arrival: from -1: want 0 or more`},
		{"trace arrivals off a trace", with("arrival: {kind: trace}"), `arrival: trace applies to trace phases only`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse("work.yaml", []byte(c.src), "")
			if err == nil {
				t.Fatalf("accepted:\n%s", c.src)
			}
			if !badinput.Is(err) || !strings.Contains(err.Error(), c.want) || !strings.HasPrefix(err.Error(), "work.yaml: ") || strings.Contains(err.Error(), "\n") {
				t.Fatalf("got %q (bad input %v), want one line starting work.yaml: containing %q", err, badinput.Is(err), c.want)
			}
		})
	}
}

func TestParseFillsDefaultsAndResolvesPaths(t *testing.T) {
	t.Parallel()
	src := `phases:
  - {name: chat, kind: shared-prefix, requests: 8, groups: 2, prefix_tokens: 64, question_tokens: 8, output_tokens: 4}
  - {name: d, kind: dataset, path: data/set.jsonl}
  - {name: e, kind: dataset, path: embedded:sharegpt}
  - {name: abs, kind: dataset, path: /srv/x.txt}
  - {name: t, kind: trace, path: t.jsonl, time_unit: s}
  - {name: m, kind: multi-turn, sessions: 2, turns: 3, user_tokens: 8, output_tokens: 4, think_time: 1.5}
  - {name: m2, kind: multi-turn, sessions: 2, turns: 3, user_tokens: 8, output_tokens: 4, think_time: 250ms}
`
	f, err := Parse("w.yaml", []byte(src), "/home/u/work")
	if err != nil {
		t.Fatal(err)
	}
	want := []struct{ path, arrival string }{
		{"", Burst}, {"/home/u/work/data/set.jsonl", Burst}, {"embedded:sharegpt", Burst}, {"/srv/x.txt", Burst},
		{"/home/u/work/t.jsonl", OwnTimes}, {"", Burst}, {"", Burst},
	}
	for i, w := range want {
		if p := f.Phases[i]; p.Path != w.path || p.Arrival.Kind != w.arrival {
			t.Errorf("phase %s: path %q arrival %q, want %q %q", p.Name, p.Path, p.Arrival.Kind, w.path, w.arrival)
		}
	}
	if d := f.Phases[5].ThinkTime; d.Std() != 1500*time.Millisecond || d.String() != "1.5s" {
		t.Errorf("think_time 1.5 (seconds) read as %v", d)
	}
	if d := f.Phases[6].ThinkTime; d.Std() != 250*time.Millisecond {
		t.Errorf("think_time 250ms read as %v", d)
	}
	if f.Source != "w.yaml" {
		t.Errorf("Source %q", f.Source)
	}
}

func TestLoadReadsJSONTooAndNamesAMissingFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "w.json")
	os.WriteFile(path, []byte(`{"phases": [{"name": "d", "kind": "dataset", "path": "p.txt", "requests": 2}]}`), 0o644)
	f, err := Load(path)
	if err != nil || f.Phases[0].Path != filepath.Join(dir, "p.txt") {
		t.Fatalf("Load: %v %+v", err, f)
	}
	_, err = Load(filepath.Join(dir, "none.yaml"))
	if !badinput.Is(err) || !strings.Contains(err.Error(), "none.yaml: no such file") {
		t.Fatalf("missing file: %v", err)
	}
}
