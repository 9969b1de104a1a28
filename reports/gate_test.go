package reports_test

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"io"
	"strings"
	"testing"

	"github.com/glmbench/glmbench/bench"
	"github.com/glmbench/glmbench/internal/badinput"
	"github.com/glmbench/glmbench/reports"
	"github.com/glmbench/glmbench/reports/gate"
	"github.com/glmbench/glmbench/reports/schema"
	"github.com/glmbench/glmbench/reports/threshold"
)

type run = reports.SynthRun

var (
	single   = reports.Single
	decodeMd = reports.DecodeMd
)

func isBadInput(err error) bool { return badinput.Is(err) }

func reportsOf(runs ...run) []*schema.Report {
	var out []*schema.Report
	for _, r := range runs {
		out = append(out, r.Report())
	}
	return out
}

// build is a synthetic build: n runs with their own seeds from first on.
func build(label string, first uint64, n int, speed float64) []run {
	var out []run
	for i := range n {
		out = append(out, run{Label: label, Seed: first + uint64(i), Jitter: 0.03, Speed: speed, Specs: []bench.Spec{single, decodeMd}})
	}
	return out
}

func mustParse(t *testing.T, exprs ...string) []threshold.Threshold {
	t.Helper()
	ths, err := threshold.ParseAll(exprs)
	if err != nil {
		t.Fatal(err)
	}
	return ths
}

func gateLines(t *testing.T, g *gate.Result) string {
	t.Helper()
	return written(t, func(w io.Writer) error { return gate.WriteLines(w, g) })
}

// written is what write writes; its error fails t.
func written(t *testing.T, write func(io.Writer) error) string {
	t.Helper()
	var buf bytes.Buffer
	if err := write(&buf); err != nil {
		t.Fatal(err)
	}
	return buf.String()
}

func TestTwoRunsOfTheSameBuildPassTheDefaults(t *testing.T) {
	t.Parallel()
	// Different seeds: every request's TTFT and TPOT move by up to ±3%.
	for seed := uint64(1); seed <= 20; seed++ {
		g, err := gate.Evaluate(reportsOf(build("main", seed, 1, 1)...), reportsOf(build("pr", seed+100, 1, 1)...), nil, gate.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if !g.Passed() || !g.Defaulted || len(g.Lines) != 6 {
			t.Fatalf("seed %d:\n%s", seed, gateLines(t, g))
		}
	}
}

func TestAnInjectedTenPercentThroughputDropFailsTheDefaults(t *testing.T) {
	t.Parallel()
	g, err := gate.Evaluate(reportsOf(build("main", 1, 1, 1)...), reportsOf(build("pr", 2, 1, 0.9)...), nil, gate.Options{})
	if err != nil {
		t.Fatal(err)
	}
	lines := gateLines(t, g)
	if g.Passed() || !strings.Contains(lines, "✗ decode_medium.out_tput > -5%: ") {
		t.Fatalf("a 10%% slower build passed:\n%s", lines)
	}
	for _, c := range g.Crossed() {
		if c.Metric == "out_tput" && c.Scope == "decode_medium" && (*c.Change > -8 || *c.Change < -12) {
			t.Fatalf("change %.2f%%, want about -10%%", *c.Change)
		}
	}
}

func TestWithThreeRunsNoiseAloneDoesNotFailButARealDropDoes(t *testing.T) {
	t.Parallel()
	ths := mustParse(t, "*.out_tput > -5%")
	base := reportsOf(build("main", 1, 3, 1)...)
	// One slow outlier run: the mean drops 6.7%, past the bound, but the
	// interval still holds no change at all.
	noisy := reportsOf(build("pr", 11, 3, 1)...)
	for i := range noisy[1].Phases {
		noisy[1].Phases[i].OutTput *= 0.8
	}
	g, err := gate.Evaluate(base, noisy, ths, gate.Options{})
	if err != nil {
		t.Fatal(err)
	}
	c := g.Lines[1]
	if !g.Passed() || c.CI == nil || *c.Change > -5 {
		t.Fatalf("noise failed the gate (or did not cross the point bound):\n%s", gateLines(t, g))
	}
	g, err = gate.Evaluate(base, reportsOf(build("pr", 21, 3, 0.9)...), ths, gate.Options{})
	if err != nil {
		t.Fatal(err)
	}
	lines := gateLines(t, g)
	if g.Passed() || !strings.Contains(lines, "95% CI") || !strings.Contains(lines, "means of 3 baseline runs vs 3 current runs") {
		t.Fatalf("a 10%% drop over three runs passed:\n%s", lines)
	}
	again, _ := gate.Evaluate(base, reportsOf(build("pr", 21, 3, 0.9)...), ths, gate.Options{})
	if gateLines(t, again) != lines {
		t.Fatal("the bootstrap is not deterministic")
	}
}

func TestThresholdsCheckWhatTheySay(t *testing.T) {
	t.Parallel()
	base := reportsOf(build("main", 1, 1, 1)...)
	base[0].Evals = []schema.EvalResult{{Name: "ppl", Status: "ok", Metrics: map[string]float64{"ppl": 3.0}}}
	cur := reportsOf(run{Label: "pr", Seed: 2, Jitter: 0.03, Specs: []bench.Spec{single, decodeMd},
		Fail: []schema.Class{schema.RateLimited}})
	cur[0].Evals = []schema.EvalResult{{Name: "ppl", Status: "ok", Metrics: map[string]float64{"ppl": 3.06}}}
	for _, tc := range []struct {
		name, expr string
		pass       []bool
	}{
		{"an absolute bound on one phase passes", "single.tpot_med < 0.015", []bool{true}},
		{"an absolute bound on one phase fails", "single.tpot_med < 0.005", []bool{false}},
		{"a wildcard covers every current phase", "*.error_rate <= 0.01", []bool{true, false}},
		{"an error class is a count", "decode_medium.rate_limited == 0", []bool{false}},
		{"a relative eval bound fails on a 2% rise", "ppl.ppl < +1%", []bool{false}},
		{"a relative eval bound passes within its tolerance", "ppl.ppl <= +2.5%", []bool{true}},
		{"a wildcard eval covers evals with the metric", "*.ppl < 3.1", []bool{true}},
		{"a phase missing on both sides is a failure", "decode_long.out_tput > -5%", []bool{false}},
		{"an eval missing in current is a failure", "mmlu.acc > -1%", []bool{false}},
		{"completed counts compare too", "decode_medium.completed >= 64", []bool{false}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			g, err := gate.Evaluate(base, cur, mustParse(t, tc.expr), gate.Options{})
			if err != nil {
				t.Fatal(err)
			}
			var got []bool
			for _, c := range g.Lines {
				got = append(got, c.Passed)
			}
			if len(got) != len(tc.pass) {
				t.Fatalf("%d checks, want %d:\n%s", len(got), len(tc.pass), gateLines(t, g))
			}
			for i := range got {
				if got[i] != tc.pass[i] {
					t.Fatalf("check %d passed=%v, want %v:\n%s", i, got[i], tc.pass[i], gateLines(t, g))
				}
			}
		})
	}
}

func TestAMissingMetricSaysWhichSideLacksIt(t *testing.T) {
	t.Parallel()
	base := reportsOf(build("main", 1, 1, 1)...)
	base[0].Evals = []schema.EvalResult{{Name: "ppl", Status: "ok", Metrics: map[string]float64{"ppl": 3.0}}}
	cur := reportsOf(build("pr", 2, 1, 1)...)
	cur[0].Evals = []schema.EvalResult{{Name: "ppl", Status: "unsupported", Failure: &schema.EvalFailure{Kind: "echo_server_error"}}}
	// Every request of single failed in current: its TTFT is null.
	cur[0].Phases[0].TTFTP99 = nil
	g, err := gate.Evaluate(base, cur, mustParse(t, "ppl.ppl < +1%", "single.ttft_p99 < +10%"), gate.Options{})
	if err != nil {
		t.Fatal(err)
	}
	lines := gateLines(t, g)
	for _, want := range []string{
		"✗ ppl.ppl < +1%: ppl missing in the current report (baseline 3)",
		"✗ single.ttft_p99 < +10%: ttft_p99 missing in the current report (baseline 0.0",
	} {
		if !strings.Contains(lines, want) {
			t.Errorf("lines lack %q:\n%s", want, lines)
		}
	}
}

func TestGateRefusesBadInput(t *testing.T) {
	t.Parallel()
	other := decodeMd
	other.N = 128
	base := reportsOf(build("main", 1, 1, 1)...)
	for _, tc := range []struct {
		name string
		cur  []*schema.Report
		ths  []string
		want string
	}{
		{"phases of different shapes are not compared", reportsOf(run{Label: "pr", Seed: 2, Specs: []bench.Spec{other}}), nil,
			"phase decode_medium is 64/256/64 (requests/input/output) in baseline 1 (label main) but 128/256/64 in current 1 (label pr)"},
		{"an unknown metric is refused", base, []string{"single.out_tputt > 1"}, `unknown metric "out_tputt"`},
		{"an empty current side is refused", nil, nil, "no current report"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := gate.Evaluate(base, tc.cur, mustParse(t, tc.ths...), gate.Options{})
			if err == nil || !strings.Contains(err.Error(), tc.want) || !isBadInput(err) {
				t.Fatalf("got %v, want bad input containing %q", err, tc.want)
			}
		})
	}
}

func TestGateMarkdownAndJUnitMatchGolden(t *testing.T) {
	t.Parallel()
	base := reportsOf(build("main", 1, 1, 1)...)
	cur := reportsOf(build("pr", 2, 1, 0.9)...)
	g, err := gate.Evaluate(base, cur, mustParse(t, "*.out_tput > -5%", "single.tpot_med < 0.015", "decode_medium.error_rate <= 0.01"), gate.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var md, ju bytes.Buffer
	if err := gate.WriteMarkdown(&md, g); err != nil {
		t.Fatal(err)
	}
	if err := gate.WriteJUnit(&ju, g); err != nil {
		t.Fatal(err)
	}
	reports.Golden(t, "gate.md.golden", md.Bytes())
	reports.Golden(t, "gate.junit.xml.golden", ju.Bytes())
	var doc struct {
		Suites []struct {
			Name     string `xml:"name,attr"`
			Tests    int    `xml:"tests,attr"`
			Failures int    `xml:"failures,attr"`
			Cases    []struct {
				Name    string `xml:"name,attr"`
				Failure *struct {
					Message string `xml:"message,attr"`
				} `xml:"failure"`
			} `xml:"testcase"`
		} `xml:"testsuite"`
	}
	if err := xml.Unmarshal(ju.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	s := doc.Suites[0]
	if s.Name != "glmbench gate" || s.Tests != 4 || s.Failures != 2 || s.Cases[1].Name != "decode_medium.out_tput > -5%" ||
		s.Cases[1].Failure == nil || !strings.Contains(s.Cases[1].Failure.Message, "vs baseline") {
		t.Fatalf("JUnit: %+v", s)
	}
}

func TestALegacyFileGatesLikeAReport(t *testing.T) {
	t.Parallel()
	legacy, err := reports.ParseLegacy("old/h200.json", []byte(reports.LegacyFile))
	if err != nil {
		t.Fatal(err)
	}
	cur := reportsOf(build("pr", 1, 1, 1)...)
	g, err := gate.Evaluate([]*schema.Report{legacy}, cur, nil, gate.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(g.Lines) != 6 || !g.Passed() {
		t.Fatalf("against a legacy baseline:\n%s", gateLines(t, g))
	}
	g, err = gate.Evaluate(cur, []*schema.Report{legacy}, mustParse(t, "decode_medium.rate_limited == 0", "decode_medium.stalled <= 6"), gate.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if lines := gateLines(t, g); g.Lines[0].Passed || !g.Lines[1].Passed || !strings.Contains(lines, "✗ decode_medium.rate_limited == 0: 30\n") {
		t.Fatalf("legacy classes as metrics:\n%s", lines)
	}
}

func TestAnEvalByAnotherMethodThanTheBaselinesFailsItsCheckAndSaysWhy(t *testing.T) {
	t.Parallel()
	side := func(label string, seed uint64, methods ...string) []*schema.Report {
		var out []*schema.Report
		for i, m := range methods {
			rep := reportsOf(run{Label: label, Seed: seed + uint64(i), Specs: []bench.Spec{single}})[0]
			rep.Evals = []schema.EvalResult{{Name: "mmlu", Status: "ok", Method: m, Metrics: map[string]float64{"acc": 0.6}}}
			out = append(out, rep)
		}
		return out
	}
	noThinking := func(rs []*schema.Report) []*schema.Report {
		for _, r := range rs {
			r.Options.ExtraBody = json.RawMessage(`{"chat_template_kwargs":{"enable_thinking":false}}`)
		}
		return rs
	}
	for _, tc := range []struct {
		name      string
		base, cur []*schema.Report
		expr      string
		pass      bool
		line      string
	}{
		{"an extra body is part of the method: without thinking is another measurement", side("main", 1, "chat-greedy"), noThinking(side("pr", 5, "chat-greedy")), "mmlu.acc > -1%", false,
			`not compared: baseline by chat-greedy, current by chat-greedy with --extra-body {"chat_template_kwargs":{"enable_thinking":false}}`},
		{"one extra body on both sides compares as ever", noThinking(side("main", 1, "echo")), noThinking(side("pr", 5, "echo")), "mmlu.acc > -1%", true,
			"✓ mmlu.acc > -1%: 0.6 vs baseline 0.6 (+0.0%)"},
		{"the same method compares as ever", side("main", 1, "echo"), side("pr", 5, "echo"), "mmlu.acc > -1%", true,
			"✓ mmlu.acc > -1%: 0.6 vs baseline 0.6 (+0.0%)"},
		{"an equal score by another method fails, not passes in silence", side("main", 1, "echo"), side("pr", 5, "chat-greedy"), "mmlu.acc > -1%", false,
			"✗ mmlu.acc > -1%: 0.6 vs baseline 0.6 (+0.0%; not compared: baseline by echo, current by chat-greedy)"},
		{"a report that states no method is not taken for echo", side("main", 1, ""), side("pr", 5, "echo"), "mmlu.acc > -1%", false,
			"not compared: baseline by no stated method, current by echo"},
		{"current runs that mix methods fail even an absolute bound", side("main", 1, "echo"), side("pr", 5, "echo", "chat-top-logprobs"), "mmlu.acc > 0.5", false,
			"not compared: the current runs mix methods echo, chat-top-logprobs"},
		{"an absolute bound needs no baseline method", side("main", 1, "echo"), side("pr", 5, "chat-greedy"), "mmlu.acc > 0.5", true,
			"✓ mmlu.acc > 0.5: 0.6"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			g, err := gate.Evaluate(tc.base, tc.cur, mustParse(t, tc.expr), gate.Options{})
			if err != nil {
				t.Fatal(err)
			}
			lines := gateLines(t, g)
			if len(g.Lines) != 1 || g.Lines[0].Passed != tc.pass || !strings.Contains(lines, tc.line) {
				t.Fatalf("passed=%v, want %v, with %q:\n%s", g.Lines[0].Passed, tc.pass, tc.line, lines)
			}
		})
	}
}

// FuzzGateDecodedReport: whatever loads must gate against itself without
// panicking (the gate's half of FuzzDecodeReport, from the same seeds).
func FuzzGateDecodedReport(f *testing.F) {
	var buf bytes.Buffer
	if err := reports.WriteJSON(&buf, run{Label: "a", Seed: 1, Specs: []bench.Spec{single}}.Report()); err != nil {
		f.Fatal(err)
	}
	f.Add(buf.Bytes())
	f.Add([]byte(reports.LegacyFile))
	f.Add([]byte(`{"schema":"glmbench/report/v1","phases":[{"phase":"a","batch_size":-1}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		r, _, err := reports.Decode("fuzz.json", data)
		if err != nil {
			return
		}
		if _, err := gate.Evaluate([]*schema.Report{r}, []*schema.Report{r}, nil, gate.Options{Resamples: 10}); err != nil && !isBadInput(err) {
			t.Fatal(err)
		}
	})
}

// The cache and drift metrics of workloadReport: hit rate and expected hit
// rate 5760/8192 ≈ 0.703, TTFT median 0.1 s on hits and 0.4 s on misses,
// |drift| p99 4 tokens.
func TestTheGateReadsCacheAndDriftMetrics(t *testing.T) {
	t.Parallel()
	base := []*schema.Report{reports.WorkloadReport(true)}
	same := []*schema.Report{reports.WorkloadReport(true)}
	worse := []*schema.Report{reports.WorkloadReport(true)}
	worse[0].Label = "pr"
	*worse[0].Phases[1].Cache.HitRate = 0.5 // −28.9%
	silent := []*schema.Report{reports.WorkloadReport(false)}
	for _, tc := range []struct {
		name string
		cur  []*schema.Report
		expr string
		pass bool
		line string
	}{
		{"an unchanged hit rate passes", same, "chat.cache.hit_rate > -5%", true, "✓ chat.cache.hit_rate > -5%"},
		{"a lower hit rate fails", worse, "chat.cache.hit_rate > -5%", false, "✗ chat.cache.hit_rate > -5%"},
		{"a server that reports no cached tokens is missing, not 0", silent, "chat.cache.hit_rate > -5%", false,
			"cache.hit_rate missing in the current report"},
		{"the expected hit rate is the workload's, reported or not", silent, "chat.cache.expected_hit_rate >= 0.7", true, "✓"},
		{"hits' TTFT median", same, "chat.cache.ttft_med_hit < 0.2", true, "✓"},
		{"misses' TTFT median", same, "chat.cache.ttft_med_miss < 0.2", false, "✗"},
		{"the size of the drift within its tolerance", same, "chat.prompt_drift.abs_p99 <= 4", true, "✓"},
		{"the size of the drift past a tighter bound", same, "chat.prompt_drift.abs_p99 < 4", false, "✗"},
		{"a phase without targets has no drift", same, "single.prompt_drift.abs_p99 < 4", false, "prompt_drift.abs_p99 missing in the current report"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			g, err := gate.Evaluate(base, tc.cur, mustParse(t, tc.expr), gate.Options{})
			if err != nil {
				t.Fatal(err)
			}
			lines := gateLines(t, g)
			if len(g.Lines) != 1 || g.Lines[0].Passed != tc.pass || !strings.Contains(lines, tc.line) {
				t.Fatalf("want one line, passed=%v, with %q:\n%s", tc.pass, tc.line, lines)
			}
		})
	}
	if !reports.IsPhaseMetric("cache.hit_rate") || reports.IsPhaseMetric("cache.nope") || reports.IsPhaseMetric("cache") {
		t.Fatal("IsPhaseMetric: cache.hit_rate is a metric, cache.nope and cache are not")
	}
}
