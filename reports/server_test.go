package reports

import (
	"bytes"
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/glmbench/glmbench/bench"
	"github.com/glmbench/glmbench/reports/schema"
	"github.com/glmbench/glmbench/reports/serverside"
)

// scrapes are a server's view of ph, scraped before, twice during and
// after: it counted ph's completed requests and their tokens (from the
// client's throughputs), saw at most 64 running, 3 queued and half its KV
// cache in use, and put every TTFT in the bucket (0.04, 0.06], so its TTFT
// p50 is 0.05 s exactly; it has no e2e histogram. The hit rate and the
// accept length come from its counters: 1/4 and 1 + 300/100.
func scrapes(ph *schema.PhaseResult, source string) []schema.MetricsSample {
	n := float64(ph.Completed)
	prompt, gen := math.Round(*ph.InTput*ph.WallSec), math.Round(ph.OutTput*ph.WallSec)
	le := []float64{0.02, 0.04, 0.06, 0.08}
	vals := func(k float64, running, queued, kv float64) map[string]float64 {
		return map[string]float64{
			schema.SrvRequests: 1000 + k*n, schema.SrvPromptTokens: 5000 + k*prompt, schema.SrvGenerationTokens: 7000 + k*gen,
			schema.SrvPreemptions: 0, schema.SrvPrefixQueried: 100 + k*800, schema.SrvPrefixHit: 50 + k*200,
			schema.SrvSpecSteps: 10 + k*100, schema.SrvSpecAccepted: 20 + k*300,
			schema.SrvRunning: running, schema.SrvQueued: queued, schema.SrvKVUsage: kv,
		}
	}
	hist := func(k float64) map[string]schema.Histogram {
		return map[string]schema.Histogram{schema.SrvTTFT: {LE: append(le, math.Inf(1)),
			Counts: []float64{3, 3, 3 + k*n, 3 + k*n, 3 + k*n}, Count: 3 + k*n, Sum: 0.1 + k*n*0.05}}
	}
	return []schema.MetricsSample{
		{Phase: ph.Phase, T: 0, Unix: 1e9, When: "before", Source: source, Values: vals(0, 0, 0, 0), Hists: hist(0)},
		{Phase: ph.Phase, T: 0.2, Unix: 1e9 + 0.2, When: "during", Source: source, Values: vals(0.5, 64, 3, 0.5), Hists: hist(0.5)},
		{Phase: ph.Phase, T: 0.4, Unix: 1e9 + 0.4, When: "during", Source: source, Values: vals(0.75, 32, 1, 0.25), Hists: hist(0.75)},
		{Phase: ph.Phase, T: ph.WallSec, Unix: 1e9 + ph.WallSec, When: "after", Source: source, Values: vals(1, 0, 0, 0), Hists: hist(1)},
	}
}

// serverRun is a run whose decode_medium phase was scraped.
func serverRun(t *testing.T) (*schema.Report, []schema.Record, []schema.MetricsSample) {
	t.Helper()
	return serverBuild()
}

func serverBuild() (*schema.Report, []schema.Record, []schema.MetricsSample) {
	rep, recs := run{label: "main", seed: 1, jitter: 0.03, specs: []bench.Spec{single, decodeMd}}.build()
	ss := scrapes(&rep.Phases[1], "glmbench")
	rep.Phases[1].Server = serverside.Stats(ss)
	return rep, recs, ss
}

func TestMetricsJSONLRoundTripsItsScrapes(t *testing.T) {
	t.Parallel()
	_, _, ss := serverRun(t)
	ss = append(ss, schema.MetricsSample{Phase: "decode_medium", T: 9, When: "after", Error: "HTTP 503"})
	var buf bytes.Buffer
	if err := WriteMetrics(&buf, ss); err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(buf.String(), "\n"); n != len(ss) {
		t.Fatalf("%d lines for %d scrapes", n, len(ss))
	}
	// JSON has no +Inf: the bucket is kept as the count.
	if strings.Contains(buf.String(), "Inf") || !strings.Contains(buf.String(), `"le":[0.02,0.04,0.06,0.08]`) {
		t.Fatalf("histogram written as %s", strings.SplitN(buf.String(), "\n", 2)[0])
	}
	got, err := ReadMetrics(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, ss) {
		t.Fatalf("read back\n%+v\nwrote\n%+v", got, ss)
	}
}

func TestAValueThatIsNotANumberIsLeftOutNotWrittenAsZero(t *testing.T) {
	t.Parallel()
	ss := []schema.MetricsSample{{Phase: "p", Values: map[string]float64{schema.SrvCacheHitRate: math.NaN(), schema.SrvRunning: 2}}}
	var buf bytes.Buffer
	if err := WriteMetrics(&buf, ss); err != nil {
		t.Fatal(err)
	}
	got, err := ReadMetrics(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := got[0].Values[schema.SrvCacheHitRate]; ok || got[0].Values[schema.SrvRunning] != 2 {
		t.Fatalf("values read back %v", got[0].Values)
	}
	if !math.IsNaN(ss[0].Values[schema.SrvCacheHitRate]) {
		t.Fatal("the writer changed its caller's sample")
	}
}

func TestLoadRecomputesTheServerBlockFromMetricsJSONL(t *testing.T) {
	t.Parallel()
	rep, recs, ss := serverRun(t)
	want := *rep.Phases[1].Server
	// Spoil the stored block: only the scrapes should count.
	rep.Phases[1].Server = &schema.ServerStats{Source: "stale", Requests: fptr(1)}
	// The single phase keeps its stored block: metrics.jsonl has no scrape of it.
	rep.Phases[0].Server = &schema.ServerStats{Source: "kept", Requests: fptr(1)}
	ss = append(ss, schema.MetricsSample{Phase: "gone", T: 0})
	in := writeLoad(t, t.TempDir(), rep, recs, ss)
	got := in.Report.Phases[1].Server
	if got == nil || !reflect.DeepEqual(*got, want) {
		t.Fatalf("server block\n%+v\nwant\n%+v", got, want)
	}
	if *got.Requests != 64 || *got.TTFTP50 != 0.05 || *got.AcceptLength != 4 || *got.CacheHitRate != 0.25 {
		t.Fatalf("requests %v, ttft p50 %v, accept length %v, hit rate %v; want 64, 0.05, 4, 0.25",
			*got.Requests, *got.TTFTP50, *got.AcceptLength, *got.CacheHitRate)
	}
	if s := in.Report.Phases[0].Server; s == nil || s.Source != "kept" {
		t.Fatalf("single's stored block was not kept through the records' recompute: %+v", s)
	}
	if len(in.Recomputed) != 2 || len(in.Samples) != len(ss) {
		t.Fatalf("recomputed %v, %d samples", in.Recomputed, len(in.Samples))
	}
	if len(in.Warnings) != 1 || !strings.Contains(in.Warnings[0], "scrapes of phase gone, which the report does not have, are ignored") {
		t.Fatalf("warnings %q", in.Warnings)
	}
}

func TestLoadRecomputesASweepPointsServerBlock(t *testing.T) {
	t.Parallel()
	rep := &schema.Report{Schema: schema.ReportSchema, Label: "sw", Sweeps: []schema.SweepResult{{Name: "sweep",
		Points: []schema.SweepPoint{{Point: 1, PhaseResult: schema.PhaseResult{Phase: "sweep"}}, {Point: 2, PhaseResult: schema.PhaseResult{Phase: "sweep"}}}}}}
	ss := []schema.MetricsSample{
		{Phase: "sweep", Point: 2, T: 0, Values: map[string]float64{schema.SrvRequests: 10}},
		{Phase: "sweep", Point: 2, T: 1, Values: map[string]float64{schema.SrvRequests: 17}},
	}
	in := writeLoad(t, t.TempDir(), rep, nil, ss)
	pts := in.Report.Sweeps[0].Points
	if pts[0].Server != nil || pts[1].Server == nil || *pts[1].Server.Requests != 7 {
		t.Fatalf("point 1 %+v, point 2 %+v; want none and 7 requests", pts[0].Server, pts[1].Server)
	}
}

func TestLoadSaysWhichScrapeOfMetricsJSONLIsBad(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ name, data, want string }{
		{"not JSON", "{\"phase\":\"a\"}\n{\"phase\":\n", "metrics.jsonl: scrape 2"},
		{"bounds and counts disagree", `{"phase":"a","hists":{"ttft":{"le":[0.1,0.2],"counts":[1],"count":1}}}`,
			"metrics.jsonl: scrape 1: histogram has 2 bounds (le) but 1 counts"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			err := loadBeside(t, "x", MetricsJSONL, tc.data)
			if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") || !isBadInput(err) {
				t.Fatalf("got %v, want one line of bad input containing %q", err, tc.want)
			}
		})
	}
}

func markdown(t *testing.T, r *schema.Report) string {
	t.Helper()
	var buf bytes.Buffer
	if err := WriteMarkdown(&buf, r); err != nil {
		t.Fatal(err)
	}
	return buf.String()
}

// section is the text of md's section title, to the next "## ".
func section(md, title string) string {
	_, rest, ok := strings.Cut(md, "## "+title+"\n")
	if !ok {
		return ""
	}
	s, _, _ := strings.Cut(rest, "\n## ")
	return s
}

// row is the table row of md's section whose first cell is first, split
// into trimmed cells.
func row(md, first string) []string {
	for _, line := range strings.Split(md, "\n") {
		line = strings.TrimSuffix(strings.TrimPrefix(strings.TrimSpace(line), "|"), "|")
		cells := strings.Split(line, "|")
		if strings.TrimSpace(cells[0]) == first {
			for i := range cells {
				cells[i] = strings.TrimSpace(cells[i])
			}
			return cells
		}
	}
	return nil
}

func TestReportMDSetsTheServersFiguresBesideTheClients(t *testing.T) {
	t.Parallel()
	rep, _, _ := serverRun(t)
	ph := &rep.Phases[1]
	md := markdown(t, rep)
	s := section(md, "Server side")
	if s == "" {
		t.Fatalf("no server side section:\n%s", md)
	}
	if !strings.Contains(s, "client − server TTFT is the network plus the server's front end") {
		t.Errorf("the lead line does not say what the difference is:\n%s", s)
	}
	if row(s, "single") != nil {
		t.Error("a phase without a server block has a row")
	}
	cells := row(s, "decode_medium")
	head := row(s, "phase")
	if cells == nil || len(cells) != len(head) {
		t.Fatalf("row %q under %q", cells, head)
	}
	get := func(col string) string {
		for i, h := range head {
			if h == col {
				return cells[i]
			}
		}
		t.Fatalf("no column %q in %q", col, head)
		return ""
	}
	prompt, gen := math.Round(*ph.InTput*ph.WallSec), math.Round(ph.OutTput*ph.WallSec)
	for col, want := range map[string]string{
		"source":          "glmbench (4 scrapes)",
		"requests":        "64 / 64",
		"prompt tok":      num(prompt, 0) + " / " + num(prompt, 0),
		"gen tok":         num(gen, 0) + " / " + num(gen, 0),
		"TTFT p50 client": num(*ph.TTFTMed*1e3, 1),
		"TTFT p50 server": "50.0",
		"client − server": signedMs(*ph.TTFTMed - 0.05),
		// Every TTFT fell in (0.04, 0.06]: p99 is 0.04 + 0.99 × 0.02.
		"TTFT p99 server":  "59.8",
		"e2e p50 server":   NotExposed,
		"ITL p50 server":   NotExposed,
		"running max":      "64",
		"queued max":       "3",
		"KV max":           "50.0%",
		"cache hit server": "25.0%",
		// The synthetic records carry no cached tokens.
		"cache hit client": NotReported,
		"accept length":    "4.00",
	} {
		if got := get(col); got != want {
			t.Errorf("%s = %q, want %q", col, got, want)
		}
	}
	for _, f := range serverFormulas {
		if !strings.Contains(md, "- **"+f.Metric+"** = ") {
			t.Errorf("formulas lack %s", f.Metric)
		}
	}
	// Without a server block the report has no such section nor formulas.
	rep.Phases[1].Server = nil
	if md := markdown(t, rep); strings.Contains(md, "Server side") || strings.Contains(md, "accept length") {
		t.Error("a report without server blocks mentions the server side")
	}
}

func TestAFigureTheServerDoesNotExposeIsNotExposedNeverZero(t *testing.T) {
	t.Parallel()
	rep, _, _ := serverRun(t)
	rep.Phases[1].Server = serverside.Stats([]schema.MetricsSample{{T: 0, Source: "llamacpp"}, {T: 1, Source: "llamacpp"}})
	cells := row(section(markdown(t, rep), "Server side"), "decode_medium")
	if len(cells) < 20 {
		t.Fatalf("row %q", cells)
	}
	for i, c := range cells {
		switch i {
		case 0, 1, 5, 10, 12, 17, 19: // phase, source, the client's figures, note
			continue
		}
		if !strings.HasPrefix(c, NotExposed) && c != "—" {
			t.Errorf("cell %d is %q, want %q", i, c, NotExposed)
		}
	}
}

func TestTheTerminalGivesAServerLinePerPhase(t *testing.T) {
	t.Parallel()
	rep, _, _ := serverRun(t)
	rep.Phases = append(rep.Phases, rep.Phases[0])
	rep.Phases[2].Phase = "down"
	rep.Phases[2].Server = serverside.Stats([]schema.MetricsSample{{Error: "connection refused"}})
	ss := scrapes(&rep.Phases[1], "glmbench")
	ss = append(ss, schema.MetricsSample{T: 9, Error: "HTTP 503"})
	rep.Phases[1].Server = serverside.Stats(ss)
	got := compact(t, rep, "")
	_, sec, ok := strings.Cut(got, "Server side (its own metrics; TTFT p50 in ms, client − server = network + front end):\n")
	if !ok {
		t.Fatalf("no server lines:\n%s", got)
	}
	gap := signedMs(*rep.Phases[1].TTFTMed - 0.05)
	for _, want := range []string{
		"  decode_medium: glmbench: 64 req, TTFT 50.0 vs client " + opt(rep.Phases[1].TTFTMed, 1e3, 1) + " (" + gap + "), running ≤ 64, queued ≤ 3,",
		"      KV ≤ 50.0%, hit 25.0%, accept 4.00\n      1 of 5 scrapes failed (the first: HTTP 503)\n",
		"  down: —: no scrape of the metrics answered (1 failed; the first: connection refused)",
	} {
		if !strings.Contains(sec, want) {
			t.Errorf("server lines lack %q:\n%s", want, sec)
		}
	}
	if strings.Contains(sec, "single:") {
		t.Error("a phase without a server block has a line")
	}
}

func TestCompareSetsTheServersTTFTAndAcceptLengthPerEndpoint(t *testing.T) {
	t.Parallel()
	main, _, _ := serverRun(t)
	pr1, _, _ := serverRun(t)
	pr1.Label = "pr"
	pr1.Phases[1].Server.TTFTP50, pr1.Phases[1].Server.AcceptLength = fptr(0.07), fptr(3)
	pr2, _, _ := serverRun(t)
	pr2.Label = "pr"
	pr2.Phases[1].Server = nil
	bare, _, _ := serverRun(t)
	bare.Label = "bare"
	bare.Phases[1].Server = nil
	c, err := Compare([]*Input{{Path: "a", Report: main}, {Path: "b", Report: pr1}, {Path: "c", Report: pr2}, {Path: "d", Report: bare}})
	if err != nil {
		t.Fatal(err)
	}
	cells := c.Phases[1].Cells
	if s := cells[0].Server; s == nil || *s.TTFTP50 != 0.05 || *s.AcceptLength != 4 || s.Runs != 1 || s.Source != "glmbench" {
		t.Fatalf("main: %+v", s)
	}
	// pr's unscraped run is left out of the means, not counted as 0.
	if s := cells[1].Server; s == nil || *s.TTFTP50 != 0.07 || *s.AcceptLength != 3 || s.Runs != 1 {
		t.Fatalf("pr: %+v", s)
	}
	if cells[2].Server != nil || c.Phases[0].Cells[0].Server != nil {
		t.Fatal("a phase no run of which was scraped has a server cell")
	}
	var buf bytes.Buffer
	if err := WriteComparisonMarkdown(&buf, c); err != nil {
		t.Fatal(err)
	}
	md := buf.String()
	for _, want := range []string{
		"server TTFT p50 50.0 ms · accept 4.00 (glmbench)",
		"server TTFT p50 70.0 ms · accept 3.00 (glmbench) (scraped in 1 of 2 runs)",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("comparison lacks %q:\n%s", want, md)
		}
	}
	if n := strings.Count(md, "server TTFT p50"); n != 2 {
		t.Errorf("%d server lines, want 2 (bare was not scraped)", n)
	}
	none := cells[0].Server
	none.AcceptLength = nil
	if got := serverLine(none, 1); got != "server TTFT p50 50.0 ms · accept "+NotExposed+" (glmbench)" {
		t.Errorf("without speculative decoding: %q", got)
	}
}

// FuzzReadMetrics checks that any metrics.jsonl is read or refused with a
// one-line error, that the server block of what is read never panics, and
// that what is read writes back and reads again the same.
func FuzzReadMetrics(f *testing.F) {
	_, _, ss := serverBuild()
	var buf bytes.Buffer
	if err := WriteMetrics(&buf, ss); err != nil {
		f.Fatal(err)
	}
	f.Add(buf.Bytes())
	f.Add([]byte(`{"phase":"a","hists":{"ttft":{"le":[0.1,-3],"counts":[5,2],"count":1}}}` + "\n" + `{"phase":"a","t":-1,"values":{"requests":1e308}}`))
	f.Add([]byte(`{"phase":"a","error":"x"}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		got, err := ReadMetrics(bytes.NewReader(data))
		if err != nil {
			if strings.Contains(err.Error(), "\n") {
				t.Fatalf("error of several lines: %v", err)
			}
			return
		}
		_, groups := serverside.Group(got)
		for _, g := range groups {
			serverside.Stats(g)
		}
		var out bytes.Buffer
		if err := WriteMetrics(&out, got); err != nil {
			t.Fatalf("what was read does not write: %v", err)
		}
		again, err := ReadMetrics(&out)
		if err != nil || len(again) != len(got) {
			t.Fatalf("read again: %d scrapes, %v; want %d", len(again), err, len(got))
		}
	})
}
