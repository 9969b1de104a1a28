package reports

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/glmbench/glmbench/bench"
	"github.com/glmbench/glmbench/reports/schema"
	"github.com/glmbench/glmbench/reports/slo"
)

func TestLoadRecomputesPhasesFromTheRecordsBesideTheReport(t *testing.T) {
	t.Parallel()
	r := run{label: "main", seed: 1, jitter: 0.03, specs: []bench.Spec{single, decodeMd}, fail: []schema.Class{schema.Stalled}}
	dir := r.write(t)
	// Spoil the stored figures: only the records should count.
	rep, err := ReadReport(filepath.Join(dir, ReportJSON))
	if err != nil {
		t.Fatal(err)
	}
	want := rep.Phases[1]
	rep.Phases[1].OutTput, rep.Phases[1].TTFTP99, rep.Phases[1].ByClass = 1, nil, nil
	rep.Phases[1].CalibratedInputLen = ptrInt(255)
	var buf bytes.Buffer
	if err := WriteJSON(&buf, rep); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, ReportJSON), buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{dir, filepath.Join(dir, ReportJSON)} {
		in, err := Load(path)
		if err != nil {
			t.Fatal(err)
		}
		got := in.Report.Phases[1]
		if got.OutTput != want.OutTput || got.TTFTP99 == nil || *got.TTFTP99 != *want.TTFTP99 || got.ByClass[schema.Stalled] != 1 {
			t.Fatalf("%s: phase not recomputed: %+v", path, got)
		}
		if got.CalibratedInputLen == nil || *got.CalibratedInputLen != 255 {
			t.Fatal("what records cannot tell was lost")
		}
		if len(in.Recomputed) != 2 || len(in.Records) != 65 || len(in.Warnings) != 0 {
			t.Fatalf("%s: recomputed %v from %d records, warnings %v", path, in.Recomputed, len(in.Records), in.Warnings)
		}
	}
}

func ptrInt(v int) *int { return &v }

func TestLoadKeepsStoredFiguresWhenRecordsDoNotFit(t *testing.T) {
	t.Parallel()
	dir := run{label: "main", seed: 1, specs: []bench.Spec{single, decodeMd}}.write(t)
	rep, recs := run{label: "main", seed: 1, specs: []bench.Spec{single, decodeMd}}.build()
	recs = append(recs[:10], schema.Record{Phase: "other", I: 0})
	in := writeLoad(t, dir, rep, recs, nil)
	if len(in.Warnings) != 2 || !strings.Contains(in.Warnings[0], "phase decode_medium has 9 records but batch_size 64") ||
		!strings.Contains(in.Warnings[1], "records of phase other") || in.Report.Phases[1].OutTput != rep.Phases[1].OutTput {
		t.Fatalf("warnings %q", in.Warnings)
	}
}

func TestLoadSaysWhatIsWrongInOneLine(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write := func(name, data string) string {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	good := `{"schema": "glmbench/report/v1", "label": "x", "phases": []}`
	badRecs := write("badrecs/report.json", good)
	write("badrecs/requests.jsonl", "{\"phase\":\"a\"}\n{\"phase\":\n")
	for _, tc := range []struct{ name, path, want string }{
		{"a missing file", filepath.Join(dir, "nope.json"), "nope.json: no such file or folder"},
		{"a folder without a report", t.TempDir(), "folder holds no report.json"},
		{"an empty file", write("empty.json", " \n"), "empty.json: empty file"},
		{"not JSON at all", write("text.json", "hello"), "not a report"},
		{"a syntax error names line and column", write("syntax.json", "{\n  \"schema\": \"glmbench/report/v1\",\n  \"label\" \"x\"\n}"), "syntax.json:3:11: malformed JSON"},
		{"a wrong type names its place", write("type.json", "{\"schema\": \"glmbench/report/v1\",\n \"phases\": [{\"phase\": \"a\", \"completed\": \"many\"}]}"), "type.json:2:"},
		{"another schema", write("other.json", `{"schema": "someone/else/v2"}`), `schema "someone/else/v2"`},
		{"a phase without a name", write("noname.json", `{"schema": "glmbench/report/v1", "phases": [{}]}`), "phase 1 has no name"},
		{"malformed records name the record", badRecs, "requests.jsonl: record 2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := Load(tc.path)
			if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") || !isBadInput(err) {
				t.Fatalf("got %v, want one line of bad input containing %q", err, tc.want)
			}
		})
	}
}

func TestLoadAllSplitsCommaLists(t *testing.T) {
	t.Parallel()
	a := run{label: "a", seed: 1, specs: []bench.Spec{single}}.write(t)
	b := run{label: "b", seed: 2, specs: []bench.Spec{single}}.write(t)
	ins, err := LoadAll([]string{a + "," + b, " " + a + " ,"})
	if err != nil {
		t.Fatal(err)
	}
	if len(ins) != 3 || ins[1].Report.Label != "b" {
		t.Fatalf("%d inputs", len(ins))
	}
}

func FuzzDecodeReport(f *testing.F) {
	rep, _ := run{label: "a", seed: 1, specs: []bench.Spec{single}}.build()
	var buf bytes.Buffer
	if err := WriteJSON(&buf, rep); err != nil {
		f.Fatal(err)
	}
	f.Add(buf.Bytes())
	f.Add([]byte(legacyFile))
	f.Add([]byte(`{"schema":"glmbench/report/v1","phases":[{"phase":"a","batch_size":-1}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		r, _, err := decode("fuzz.json", data)
		if err != nil {
			if !isBadInput(err) || strings.Contains(err.Error(), "\n") {
				t.Fatalf("error not one line of bad input: %v", err)
			}
			return
		}
		// Whatever loads must compare against itself without panicking (and
		// gate against itself: FuzzGateDecodedReport in gate_test.go).
		if _, err := Compare([]*Input{{Path: "fuzz.json", Report: r}}); err != nil && !isBadInput(err) {
			t.Fatal(err)
		}
	})
}

// run --slo's figures are recomputed from the records under the report's
// own options.slos; objectives this version cannot read (a hand edit, a
// later version's metric) keep the stored figures, and say so, rather than
// silently dropping them.
func TestLoadRecomputesSLOFiguresOrKeepsThemWhenTheSLOsDoNotParse(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		slos    []string
		goodput float64 // stored: spoilt, so only a recomputation changes it
		warn    string
	}{
		{"readable objectives are applied to the records", []string{"lat < 1h"}, -1, ""},
		{"unreadable objectives keep the stored figures", []string{"speed < 1s"}, -1, "options.slos"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			rep, recs := run{label: "main", seed: 1, specs: []bench.Spec{single, decodeMd}}.build()
			rep.Options.SLOs = tc.slos
			met := 1
			for i := range rep.Phases {
				rep.Phases[i].SLOMet, rep.Phases[i].Goodput = &met, &tc.goodput
			}
			dir := filepath.Join(t.TempDir(), "main")
			in := writeLoad(t, dir, rep, recs, nil)
			ph := in.Report.Phases[1]
			if ph.Goodput == nil || ph.SLOMet == nil {
				t.Fatalf("SLO figures lost: goodput %v, met %v", ph.Goodput, ph.SLOMet)
			}
			if tc.warn == "" {
				if *ph.SLOMet != ph.Completed || *ph.Goodput == tc.goodput || len(in.Warnings) != 0 {
					t.Fatalf("met %d of %d completed, goodput %g, warnings %q: want recomputed", *ph.SLOMet, ph.Completed, *ph.Goodput, in.Warnings)
				}
				return
			}
			if *ph.SLOMet != met || *ph.Goodput != tc.goodput || len(in.Warnings) != 1 || !strings.Contains(in.Warnings[0], tc.warn) {
				t.Fatalf("met %d, goodput %g, warnings %q: want the stored figures and a warning naming %s", *ph.SLOMet, *ph.Goodput, in.Warnings, tc.warn)
			}
		})
	}
}

// A sweep's points and capacity are re-made from the records alone (each
// carries its point and window); what records cannot tell (the load, the
// calibration) is kept from the stored point.
func TestLoadRecomputesASweepFromItsRecords(t *testing.T) {
	t.Parallel()
	w := slo.Window{Warmup: 1, Duration: 2, Slice: 1}
	set, err := slo.ParseAll([]string{"lat < 0.5s"})
	if err != nil {
		t.Fatal(err)
	}
	spec := schema.PhaseResult{Phase: "sw", InputLen: 16, OutputLen: 2}
	var recs []schema.Record
	var points []schema.SweepPoint
	for n, lat := range []float64{0.1, 0.9} { // point 1 meets the SLO, point 2 does not
		var pr []schema.Record
		for k := range 8 {
			window := schema.WindowMeasured
			if k == 0 {
				window = schema.WindowWarmup
			}
			pr = append(pr, schema.Record{Phase: "sw", I: k, Point: n + 1, Window: window, SendOffset: 0.75 + 0.25*float64(k),
				TFirst: ptrF(lat / 2), TLast: ptrF(lat), TEnd: ptrF(lat), Events: []float64{lat / 2, lat}, N: 2, Prompt: 16})
		}
		p := slo.Point(n+1, float64(4*(n+1)), spec, pr, w, set, 0.99, schema.StatusComplete)
		p.Concurrency, p.CalibratedInputLen = 4*(n+1), ptrInt(16)
		points, recs = append(points, p), append(recs, pr...)
	}
	want := points
	rep, _ := run{label: "main", seed: 1}.build()
	rep.Sweeps = []schema.SweepResult{{Name: "sw", InputLen: 16, OutputLen: 2, Mode: schema.SweepConcurrency, SLOs: set.Strings(),
		Attainment: 0.99, WarmupSec: 1, DurationSec: 2, SliceSec: 1, Points: slices.Clone(points)}}
	// Spoil the stored figures: only the records should count.
	rep.Sweeps[0].Points[0].OutTput, rep.Sweeps[0].Points[0].Good, rep.Sweeps[0].Points[1].Slices = 1, false, nil
	dir := filepath.Join(t.TempDir(), "main")
	in := writeLoad(t, dir, rep, recs, nil)
	s := in.Report.Sweeps[0]
	if !slices.Contains(in.Recomputed, "sw") || len(in.Warnings) != 0 {
		t.Fatalf("recomputed %v, warnings %q", in.Recomputed, in.Warnings)
	}
	for i, p := range s.Points {
		if p.OutTput != want[i].OutTput || p.Good != want[i].Good || len(p.Slices) != 2 || p.Started != 7 ||
			p.Concurrency != want[i].Concurrency || p.CalibratedInputLen == nil || *p.CalibratedInputLen != 16 {
			t.Fatalf("point %d: out %g good %v, %d slices, started %d, concurrency %d, calibrated %v; want %+v",
				i+1, p.OutTput, p.Good, len(p.Slices), p.Started, p.Concurrency, p.CalibratedInputLen, want[i])
		}
	}
	if c := s.Capacity; c == nil || c.Load != 4 || c.Above == nil || *c.Above != 8 {
		t.Fatalf("capacity %+v, want 4 bracketed by 8", c)
	}
}

func ptrF(v float64) *float64 { return &v }
