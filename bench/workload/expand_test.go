package workload

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// mustPhase parses a one-phase file and returns its phase.
func mustPhase(t *testing.T, src, dir string) *Phase {
	t.Helper()
	f, err := Parse("w.yaml", []byte(src), dir)
	if err != nil {
		t.Fatal(err)
	}
	return &f.Phases[0]
}

func TestSharedPrefixDealsRequestsToGroupsInTurn(t *testing.T) {
	t.Parallel()
	p := mustPhase(t, `phases: [{name: chat, kind: shared-prefix, requests: 10, groups: 4, prefix_tokens: 512, question_tokens: 32, output_tokens: 8}]`, "")
	reqs, err := p.Expand(1)
	if err != nil || len(reqs) != 10 {
		t.Fatalf("%d requests, %v", len(reqs), err)
	}
	for i, r := range reqs {
		if r.I != i || r.Group != i%4+1 || r.Input != 544 || r.PrefixTokens != 512 || r.Output != 8 || r.At != 0 || r.Session != 0 {
			t.Errorf("request %d: %+v, want group %d, input 544 = 512+32, prefix 512, out 8, at 0", i, r, i%4+1)
		}
	}
}

func TestMultiTurnSendsTheHistoryEachTurn(t *testing.T) {
	t.Parallel()
	p := mustPhase(t, `phases: [{name: m, kind: multi-turn, sessions: 3, turns: 4, user_tokens: 48, output_tokens: 12, think_time: 100ms, arrival: {kind: constant, rate: 2}}]`, "")
	reqs, err := p.Expand(1)
	if err != nil || len(reqs) != 12 {
		t.Fatalf("%d requests, %v", len(reqs), err)
	}
	for _, r := range reqs {
		s, k := r.Session, r.Turn
		// Turn k sends k−1 user messages and answers, then a new one:
		// (k−1)·(48+12) + 48.
		wantIn := (k-1)*60 + 48
		wantThink := 100 * time.Millisecond
		if k == 1 {
			wantThink = 0
		}
		// Sessions start at the constant 2/s times: 0, 0.5 s, 1 s.
		wantAt := time.Duration(s-1) * 500 * time.Millisecond
		if r.I != (s-1)*4+k-1 || r.Input != wantIn || r.UserTokens != 48 || r.Output != 12 || r.Think != wantThink || r.At != wantAt {
			t.Errorf("session %d turn %d: %+v, want I %d, input %d, think %v, at %v", s, k, r, (s-1)*4+k-1, wantIn, wantThink, wantAt)
		}
	}
	if reqs[0].Session != 1 || reqs[0].Turn != 1 || reqs[11].Session != 3 || reqs[11].Turn != 4 {
		t.Error("want session-major order")
	}
}

func TestTraceReplaysScaledTimestampsOrTheGivenArrivals(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "t.jsonl"), []byte(
		`{"timestamp": 1000, "input_length": 10, "output_length": 2, "hash_ids": [1]}`+"\n\n"+
			`{"timestamp": 1500, "input_length": 20, "output_length": 3}`+"\n"+
			`{"timestamp": 4000, "input_length": 30, "output_length": 4}`+"\n"), 0o644)
	p := mustPhase(t, `phases: [{name: t, kind: trace, path: t.jsonl, time_scale: 0.5}]`, dir)
	reqs, err := p.Expand(1)
	if err != nil || len(reqs) != 3 {
		t.Fatalf("%d requests, %v", len(reqs), err)
	}
	// Offsets from the first, halved: 0, 250 ms, 1.5 s; lines 1, 3, 4.
	want := []Request{{I: 0, At: 0, Input: 10, Output: 2, Line: 1}, {I: 1, At: 250 * time.Millisecond, Input: 20, Output: 3, Line: 3},
		{I: 2, At: 1500 * time.Millisecond, Input: 30, Output: 4, Line: 4}}
	for i := range want {
		if !equalReq(reqs[i], want[i]) {
			t.Errorf("request %d: %+v, want %+v", i, reqs[i], want[i])
		}
	}
	p = mustPhase(t, `phases: [{name: t, kind: trace, path: t.jsonl, requests: 2, time_unit: s, arrival: {kind: constant, rate: 10}}]`, dir)
	reqs, err = p.Expand(1)
	if err != nil || len(reqs) != 2 || reqs[1].At != 100*time.Millisecond || reqs[1].Input != 20 {
		t.Fatalf("trace with constant arrivals: %+v, %v", reqs, err)
	}
	p = mustPhase(t, `phases: [{name: t, kind: trace, path: t.jsonl, requests: 4}]`, dir)
	if _, err := p.Expand(1); err == nil || !strings.Contains(err.Error(), `t.jsonl: 3 requests, phase "t" asks for 4`) {
		t.Errorf("a short trace: %v", err)
	}
	p = mustPhase(t, `phases: [{name: t, kind: trace, path: t.jsonl, time_unit: s}]`, dir)
	if reqs, _ := p.Expand(1); reqs[2].At != 3000*time.Second {
		t.Errorf("time_unit s: last at %v, want 3000s", reqs[2].At)
	}
}

func equalReq(a, b Request) bool {
	return a.I == b.I && a.At == b.At && a.Input == b.Input && a.Output == b.Output && a.Line == b.Line && a.Messages == nil
}

func TestDatasetFromTheEmbeddedShareGPT(t *testing.T) {
	t.Parallel()
	p := mustPhase(t, `phases: [{name: d, kind: dataset, path: "embedded:sharegpt"}]`, "")
	reqs, warns, err := p.ExpandWarn(1)
	if err != nil {
		t.Fatal(err)
	}
	// 42 conversations: one with no human turn, one empty, one whose
	// human turn is empty; the other 39 all have answers.
	if len(reqs) != 39 || len(warns) != 1 || !strings.Contains(warns[0], "skipped 3 unusable conversations (1 with an empty human turn, 2 with no human turn)") {
		t.Fatalf("%d requests, warnings %q", len(reqs), warns)
	}
	// gb-003, on line 10: a system turn before the question.
	const skyAnswer = "Air molecules scatter short blue wavelengths of sunlight far more than long red ones, so blue light reaches your eyes from every direction of the sky."
	third := reqs[2]
	if len(third.Messages) != 2 || third.Messages[0].Role != "system" || third.Messages[1].Content != "Why is the sky blue?" || third.Output != 0 || third.AnswerChars != len(skyAnswer) || third.Line != 10 {
		t.Errorf("gb-003: %+v", third)
	}
	p = mustPhase(t, `phases: [{name: d, kind: dataset, path: "embedded:sharegpt", requests: 5, output_tokens: 16}]`, "")
	reqs, _ = p.Expand(1)
	if len(reqs) != 5 || reqs[4].Output != 16 || !strings.HasPrefix(reqs[4].Messages[0].Content, "I have a CSV file") {
		t.Errorf("first 5 with output 16: %+v", reqs)
	}
	p = mustPhase(t, `phases: [{name: d, kind: dataset, path: "embedded:sharegpt", requests: 40}]`, "")
	if _, err := p.Expand(1); err == nil || !strings.Contains(err.Error(), `embedded:sharegpt: 39 usable items, phase "d" asks for 40`) {
		t.Errorf("asking for more than there are: %v", err)
	}
}

func TestDatasetOutputComesFromMaxTokensThenOutputTokens(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "d.jsonl"), []byte(`{"prompt": "a", "max_tokens": 7}`+"\n"+`{"messages": [{"role": "user", "content": "b"}]}`+"\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "p.txt"), []byte("one\n\n  \ntwo\n"), 0o644)
	p := mustPhase(t, `phases: [{name: d, kind: dataset, path: d.jsonl, output_tokens: 9, arrival: {kind: constant, rate: 1}}]`, dir)
	reqs, err := p.Expand(1)
	if err != nil || reqs[0].Output != 7 || reqs[1].Output != 9 || reqs[1].Line != 2 || reqs[1].At != time.Second {
		t.Fatalf("%+v %v", reqs, err)
	}
	p = mustPhase(t, `phases: [{name: d, kind: dataset, path: d.jsonl}]`, dir)
	if _, err := p.Expand(1); err == nil || !strings.Contains(err.Error(), `d.jsonl:2: no max_tokens, and phase "d" has no output_tokens`) {
		t.Errorf("no output length: %v", err)
	}
	p = mustPhase(t, `phases: [{name: d, kind: dataset, path: p.txt, output_tokens: 4}]`, dir)
	reqs, err = p.Expand(1)
	if err != nil || len(reqs) != 2 || reqs[1].Messages[0].Content != "two" || reqs[1].Line != 4 {
		t.Fatalf("text: %+v %v", reqs, err)
	}
	p = mustPhase(t, `phases: [{name: d, kind: dataset, path: none.txt, output_tokens: 4}]`, dir)
	if _, err := p.Expand(1); err == nil || !strings.Contains(err.Error(), "none.txt: no such file") {
		t.Errorf("missing data set: %v", err)
	}
}

func TestEmbeddedExamplesLoadExpandAndDescribe(t *testing.T) {
	t.Parallel()
	names := Names()
	want := []string{"fixed", "multi-turn", "random", "shared-prefix", "sharegpt", "trace"}
	if strings.Join(names, " ") != strings.Join(want, " ") {
		t.Fatalf("Names() = %v, want %v", names, want)
	}
	kinds := map[string]bool{}
	for _, n := range names {
		f, ok := Named(n)
		if !ok || f.Source != "embedded "+n {
			t.Fatalf("Named(%q): %v %+v", n, ok, f)
		}
		for i := range f.Phases {
			p := &f.Phases[i]
			kinds[p.Kind] = true
			reqs, err := p.Expand(1)
			if err != nil || len(reqs) == 0 || len(reqs) > 64 {
				t.Errorf("%s: %d requests, %v", n, len(reqs), err)
			}
			for _, r := range reqs {
				if r.Input > 1100 || (r.Output != 0 && (r.Output < 4 || r.Output > 32)) {
					t.Errorf("%s: request %d: input %d, output %d: too big for a quick example", n, r.I, r.Input, r.Output)
				}
			}
			if d := p.Describe(); !strings.HasPrefix(d, p.Kind+": ") || strings.Contains(d, "\n") {
				t.Errorf("%s: Describe %q", n, d)
			}
		}
	}
	if len(kinds) != len(Kinds) {
		t.Errorf("the examples cover kinds %v, want all of %v", kinds, Kinds)
	}
	if _, ok := Named("nope"); ok {
		t.Error(`Named("nope") found something`)
	}
	for _, tc := range []struct{ name, want string }{
		{"shared-prefix", "shared-prefix: 32 requests, 4 groups, 512+32 tokens, out 8, poisson 8/s"},
		{"multi-turn", "multi-turn: 8 sessions × 4 turns, user 96 tokens, out 16, think 100ms, poisson 4/s"},
		{"random", "random: 24 requests, in 256..1024, out lognormal 16±6 in [8, 32], gamma 4/s burstiness 0.5"},
		{"trace", "trace: 30 requests from embedded:trace, time ×0.5, trace times"},
	} {
		f, _ := Named(tc.name)
		if d := f.Phases[0].Describe(); d != tc.want {
			t.Errorf("Describe: %q", d)
		}
	}
}

func TestExpandChecksAPhaseBuiltInCode(t *testing.T) {
	t.Parallel()
	bad := &Phase{Name: "x", Kind: SharedPrefix, Requests: 4, PrefixTokens: 8, QuestionTokens: 2, OutputTokens: 1}
	if _, err := bad.Expand(1); err == nil || !strings.Contains(err.Error(), `phase "x": groups: required`) {
		t.Errorf("no groups: %v, want bad input rather than a division by zero", err)
	}
	if d := (&Phase{Name: "r", Kind: Random, Requests: 2, InputTokens: 8, OutputTokens: 4}).Describe(); d != "random: 2 requests, in 8, out 4, burst" {
		t.Errorf("Describe of a random phase without range_ratio: %q", d)
	}
	ok := &Phase{Name: "t", Kind: Trace, Path: "embedded:trace", Requests: 2}
	reqs, err := ok.Expand(1)
	if err != nil || ok.Arrival.Kind != OwnTimes || reqs[1].At != 750*time.Millisecond {
		t.Errorf("a trace phase built in code: %+v, %v (want the trace's own times, second at 750ms)", reqs, err)
	}
}

func TestEmptyDataSetsAndTracesAreRefused(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "empty.txt"), []byte("\n \n"), 0o644)
	os.WriteFile(filepath.Join(dir, "empty.jsonl"), nil, 0o644)
	os.WriteFile(filepath.Join(dir, "none.json"), []byte(`[{"conversations": []}]`), 0o644)
	for _, c := range []struct{ spec, want string }{
		{`{name: d, kind: dataset, path: empty.txt, output_tokens: 4}`, "empty.txt: no usable items"},
		{`{name: d, kind: dataset, path: none.json}`, "none.json: no usable items: skipped 1 unusable conversations (1 with no human turn)"},
		{`{name: t, kind: trace, path: empty.jsonl}`, "empty.jsonl: no requests"},
	} {
		p := mustPhase(t, "phases: ["+c.spec+"]", dir)
		if _, err := p.Expand(1); err == nil || !strings.HasSuffix(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.spec, err, c.want)
		}
	}
}
