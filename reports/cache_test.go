package reports

import (
	"bytes"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/glmbench/glmbench/reports/schema"
	"github.com/glmbench/glmbench/reports/summary"
)

// sharedPrefixRecords are a shared-prefix phase "chat" of 2 groups of 4
// requests against a server with a prefix cache: the first of each group
// misses (cached 0, TTFT 0.4 s), the other three hit their group's 960
// cached tokens (TTFT 0.1 s). Every prompt is 1024 tokens of a 1020-token
// target; the workload expects 960 cached tokens after a group's first.
// Truths: reported 8 of 8, Σprompt 8192, Σcached 6·960 = 5760, hit rate
// 5760/8192, expected 5760/8192, hits 6, misses 2, drift +4 on every request.
func sharedPrefixRecords(cached bool) []schema.Record {
	var recs []schema.Record
	for g := 1; g <= 2; g++ {
		for k := range 4 {
			i := len(recs)
			ttft, c, exp := 0.4, 0, 0
			if k > 0 {
				ttft, c, exp = 0.1, 960, 960
			}
			rec := schema.Record{Phase: "chat", I: i, SendOffset: 0.01 * float64(i), TFirst: ptrF(ttft), TLast: ptrF(ttft + 0.15),
				TEnd: ptrF(ttft + 0.16), Events: []float64{ttft, ttft + 0.05, ttft + 0.1, ttft + 0.15}, N: 4,
				NSource: schema.NFromUsage, Prompt: 1024, Finish: "length", TargetPrompt: ptrInt(1020),
				ExpectedCached: ptrInt(exp), Group: g}
			if cached {
				rec.CachedTokens = ptrInt(c)
			}
			recs = append(recs, rec)
		}
	}
	return recs
}

// workloadReport is a report of one fixed phase "single" against a server
// that reports no cached tokens and the shared-prefix phase "chat", each
// summarised from its records as run does.
func workloadReport(cached bool) (*schema.Report, []schema.Record) {
	at := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	fixed := []schema.Record{{Phase: "single", I: 0, TFirst: ptrF(0.05), TLast: ptrF(0.35), TEnd: ptrF(0.36),
		Events: []float64{0.05, 0.15, 0.25, 0.35}, N: 4, NSource: schema.NFromUsage, Prompt: 256, Finish: "length"}}
	chat := sharedPrefixRecords(cached)
	ph := summary.Phase("chat", 1020, 4, chat, schema.StatusComplete)
	ph.Workload = "shared-prefix"
	rep := &schema.Report{
		Schema: schema.ReportSchema, Tool: schema.Tool{Name: "glmbench", Version: "test"}, Label: "engine",
		StartedAt: at, FinishedAt: at.Add(time.Minute), Nonce: "0a1b2c3d",
		Options:  schema.Options{Arrival: "burst"},
		Endpoint: schema.Endpoint{BaseURL: "http://127.0.0.1:30000/v1", Model: "glm-5"},
		Phases:   []schema.PhaseResult{summary.Phase("single", 256, 4, fixed, schema.StatusComplete), ph},
	}
	return rep, append(fixed, chat...)
}

func TestARecomputedWorkloadPhaseKeepsItsKindAndRemakesItsCacheAndDrift(t *testing.T) {
	t.Parallel()
	rep, recs := workloadReport(true)
	// Spoil the stored cache and drift: only the records should count.
	rep.Phases[1].Cache = &schema.CacheStats{Reported: 1, HitRate: ptrF(0.99)}
	rep.Phases[1].PromptDrift = nil
	dir := filepath.Join(t.TempDir(), "engine")
	in := writeLoad(t, dir, rep, recs, nil)
	if len(in.Recomputed) != 2 || len(in.Warnings) != 0 {
		t.Fatalf("recomputed %v, warnings %q", in.Recomputed, in.Warnings)
	}
	ph := in.Report.Phases[1]
	if ph.Workload != "shared-prefix" {
		t.Fatalf("workload %q after recomputing, want shared-prefix", ph.Workload)
	}
	c := ph.Cache
	if c == nil || c.Reported != 8 || c.PromptTokens != 8192 || c.CachedTokens == nil || *c.CachedTokens != 5760 ||
		c.Hits != 6 || c.Misses != 2 || c.HitRate == nil || math.Abs(*c.HitRate-5760.0/8192) > 1e-12 ||
		c.ExpectedHitRate == nil || math.Abs(*c.ExpectedHitRate-5760.0/8192) > 1e-12 {
		t.Fatalf("cache %+v", c)
	}
	if c.TTFTMedHit == nil || *c.TTFTMedHit != 0.1 || c.TTFTMedMiss == nil || *c.TTFTMedMiss != 0.4 {
		t.Fatalf("ttft hit %v miss %v, want 0.1 and 0.4", c.TTFTMedHit, c.TTFTMedMiss)
	}
	if d := ph.PromptDrift; d == nil || d.N != 8 || d.P50 != 4 || d.P99 != 4 || d.AbsP99 != 4 || d.Tolerance != 10 {
		t.Fatalf("drift %+v, want 8 requests all +4, tolerance 10", d)
	}
	if fixed := in.Report.Phases[0]; fixed.Workload != "" || fixed.Cache == nil || fixed.Cache.HitRate != nil || fixed.Cache.Note != summary.NoCachedTokens {
		t.Fatalf("fixed phase: workload %q cache %+v", fixed.Workload, fixed.Cache)
	}
}

// readBack is a report written and read as report.json, to check it keeps
// the cache block as JSON.
func readBack(t *testing.T, rep *schema.Report) *schema.Report {
	t.Helper()
	var buf bytes.Buffer
	if err := WriteJSON(&buf, rep); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), ReportJSON)
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := ReadReport(path)
	if err != nil {
		t.Fatal(err)
	}
	return got
}

func TestReportJSONSaysNullNotZeroForAServerThatReportsNoCachedTokens(t *testing.T) {
	t.Parallel()
	rep, _ := workloadReport(false)
	var buf bytes.Buffer
	if err := WriteJSON(&buf, rep); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"cached_tokens": null`, `"hit_rate": null`, `"note": "the server reports no cached tokens"`, `"workload": "shared-prefix"`} {
		if !bytes.Contains(buf.Bytes(), []byte(want)) {
			t.Errorf("report.json lacks %s", want)
		}
	}
	back := readBack(t, rep)
	if c := back.Phases[1].Cache; c == nil || c.HitRate != nil || c.ExpectedHitRate == nil {
		t.Fatalf("read back: %+v", c)
	}
}

func TestReportsShowThePrefixCacheAndTheDrift(t *testing.T) {
	t.Parallel()
	rep, _ := workloadReport(true)
	md := markdown(t, rep)
	golden(t, "workload.md.golden", []byte(md))
	term := compact(t, rep, "")
	golden(t, "workload.txt.golden", []byte(term))
	// 5760/8192 = 70.3%; hits 6, misses 2; TTFT 0.1 s on hits, 0.4 s on misses.
	for _, want := range []string{
		"| chat   | shared-prefix | 70.3%        | 70.3%    | 5760/8192         | 6/2         | 0.100        | 0.400         |",
		"| single | —             | not reported |",
		"| chat  | 8        | +4  | +4  | 4       | 10        | within ",
		"- **hit** = a reporting request with at least 10% of its prompt tokens cached",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("report.md lacks %q", want)
		}
	}
	for _, want := range []string{"chat    shared-prefix         70.3%     70.3%      5760/8192          6/2     0.100      0.400",
		"chat: p50 +4, p99 +4, |p99| 4 within the tolerance of 10 (8 requests)"} {
		if !strings.Contains(term, want) {
			t.Errorf("terminal summary lacks %q:\n%s", want, term)
		}
	}
}

func TestAServerThatReportsNoCachedTokensIsNotReportedNeverZeroPercent(t *testing.T) {
	t.Parallel()
	rep, _ := workloadReport(false)
	md := markdown(t, rep)
	term := compact(t, rep, "")
	for name, out := range map[string]string{"report.md": md, "terminal": term} {
		if strings.Contains(out, "0.0%") {
			t.Errorf("%s shows 0.0%% for a server that reported nothing:\n%s", name, out)
		}
		// The expectation is the workload's: shown whatever the server says.
		if !strings.Contains(out, "not reported") || !strings.Contains(out, "70.3%") {
			t.Errorf("%s lacks \"not reported\" beside the expected 70.3%%:\n%s", name, out)
		}
	}
	if !strings.Contains(md, "the server reports no cached tokens") {
		t.Error("report.md lacks the note")
	}
	// Fixed phases alone against such a server: the terminal says so in one
	// line, report.md in its table.
	fixed, _ := workloadReport(false)
	fixed.Phases = fixed.Phases[:1]
	term = compact(t, fixed, "")
	if !strings.Contains(term, "Prefix cache: the server reports no cached tokens.") || strings.Contains(term, "hits/misses") {
		t.Errorf("terminal summary of a silent server:\n%s", term)
	}
	md = markdown(t, fixed)
	if !strings.Contains(md, "| single | —        | not reported |") || strings.Contains(md, "Prompt length drift") {
		t.Errorf("report.md of fixed phases against a silent server:\n%s", md)
	}
}

func TestAPartialReportIsNoted(t *testing.T) {
	t.Parallel()
	rep, recs := workloadReport(true)
	chat := recs[1:]
	chat[0].CachedTokens, chat[5].CachedTokens = nil, nil
	rep.Phases[1] = summary.Phase("chat", 1020, 4, chat, schema.StatusComplete)
	term := compact(t, rep, "")
	if !strings.Contains(term, "chat: 6 of 8 requests reported cached tokens") {
		t.Errorf("terminal summary lacks the partial note:\n%s", term)
	}
}

func TestTheComparisonSetsHitRatesBesideTheExpectedOnes(t *testing.T) {
	t.Parallel()
	withCache := func(path string, hit float64) *Input {
		rep, _ := workloadReport(true)
		rep.Label = "radix"
		*rep.Phases[1].Cache.HitRate = hit
		return &Input{Path: path, Report: rep}
	}
	silent, _ := workloadReport(false)
	silent.Label = "no-cache"
	// Two runs of radix at 0.6 and 0.8: the mean is 70.0%.
	ins := []*Input{withCache("a", 0.6), withCache("b", 0.8), {Path: "c", Report: silent}}
	c, err := Compare(ins)
	if err != nil {
		t.Fatal(err)
	}
	row := c.Phases[1]
	if row.Phase != "chat" {
		t.Fatalf("row %q", row.Phase)
	}
	radix, none := row.Cells[0].Cache, row.Cells[1].Cache
	if radix == nil || radix.HitRate == nil || math.Abs(*radix.HitRate-0.7) > 1e-12 || radix.Reported != 2 || radix.Runs != 2 ||
		radix.ExpectedHitRate == nil || math.Abs(*radix.ExpectedHitRate-5760.0/8192) > 1e-12 || radix.Workload != "shared-prefix" {
		t.Fatalf("radix cache %+v", radix)
	}
	if none == nil || none.HitRate != nil || none.Reported != 0 || none.ExpectedHitRate == nil {
		t.Fatalf("no-cache cache %+v", none)
	}
	// The fixed phase against servers that say nothing has no cache line.
	if c.Phases[0].Cells[1].Cache != nil {
		t.Fatalf("fixed phase of a silent server: %+v", c.Phases[0].Cells[1].Cache)
	}
	for _, format := range []string{FormatMarkdown, FormatText} {
		out := string(render(t, ins, format))
		for _, want := range []string{"cache hit 70.0% · expected 70.3% (shared-prefix)", "cache hit not reported · expected 70.3% (shared-prefix)"} {
			if !strings.Contains(out, want) {
				t.Errorf("%s comparison lacks %q:\n%s", format, want, out)
			}
		}
		if strings.Contains(out, "cache hit 0.0%") {
			t.Errorf("%s comparison shows 0%% for a server that said nothing", format)
		}
	}
	// One run of a label reports, the other does not: the line says so.
	mixed := []*Input{withCache("a", 0.6), {Path: "d", Report: func() *schema.Report { r, _ := workloadReport(false); r.Label = "radix"; return r }()}}
	if out := string(render(t, mixed, FormatText)); !strings.Contains(out, "cache hit 60.0% · expected 70.3% (reported in 1 of 2 runs)") {
		t.Errorf("mixed runs:\n%s", out)
	}
}

func TestBlockMetricsAreReadFromAPhaseAndFromASweepPoint(t *testing.T) {
	t.Parallel()
	rep, _ := workloadReport(true)
	chat := &rep.Phases[1]
	for name, want := range map[string]float64{
		"cache.hit_rate": 5760.0 / 8192, "cache.expected_hit_rate": 5760.0 / 8192, "cache.ttft_med_hit": 0.1,
		"cache.ttft_med_miss": 0.4, "cache.hits": 6, "prompt_drift.abs_p99": 4, "prompt_drift.tolerance": 10,
	} {
		if v := PhaseValue(chat, name); v == nil || math.Abs(*v-want) > 1e-12 {
			t.Errorf("%s = %v, want %v", name, v, want)
		}
	}
	// The fixed phase's server said nothing, and it has no targets: no values.
	for _, name := range []string{"cache.hit_rate", "cache.cached_tokens", "prompt_drift.abs_p99"} {
		if v := PhaseValue(&rep.Phases[0], name); v != nil {
			t.Errorf("single's %s = %v, want none", name, *v)
		}
	}
	rep.Sweeps = []schema.SweepResult{{Name: "sw", Points: []schema.SweepPoint{{Point: 1, Load: 8, PhaseResult: *chat}}}}
	if !IsSweepMetric("cache.hit_rate@8") {
		t.Fatal("cache.hit_rate@8 is not a sweep metric")
	}
	if v := SweepValue(rep, "sw", "cache.ttft_med_miss@8"); v == nil || *v != 0.4 {
		t.Fatalf("sw cache.ttft_med_miss@8 = %v, want 0.4", v)
	}
}

func TestTheCacheTablesFitWhateverAReportHolds(t *testing.T) {
	t.Parallel()
	rep, _ := workloadReport(true)
	long := strings.Repeat("very-long-phase-name-", 8)
	rep.Phases[1].Phase = long
	rep.Phases[1].Workload = "a workload\nkind no glmbench writes, " + strings.Repeat("x", 200)
	rep.Phases[1].Cache.Note = "a note\nof many lines " + strings.Repeat("y", 300)
	rep.Phases[1].Cache.CachedTokens = nil // a report.json written by hand
	// compact checks every line against CompactWidth.
	out := compact(t, rep, "")
	if strings.Contains(out, "\nkind no glmbench") || strings.Contains(out, "\nof many lines") {
		t.Fatalf("a report's text broke a line:\n%s", out)
	}
	if md := markdown(t, rep); !strings.Contains(md, "| 70.3%        |") {
		t.Fatalf("report.md:\n%s", md)
	}
}
