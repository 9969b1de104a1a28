package reports

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/glmbench/glmbench/internal/badinput"
	"github.com/glmbench/glmbench/reports/schema"
)

var update = flag.Bool("update", false, "rewrite golden files")

func f(v float64) *float64 { return &v }

func sampleReport() *schema.Report {
	at := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	return &schema.Report{
		Schema: schema.ReportSchema, Tool: schema.Tool{Name: "glmbench", Version: "test"}, Label: "sglang-h200",
		StartedAt: at, FinishedAt: at.Add(90 * time.Second), Nonce: "0a1b2c3d",
		Options: schema.Options{Phases: "single=1/256/256,decode_medium=512/256/256", IgnoreEOS: true, Arrival: "burst",
			Timeouts: map[string]float64{"connect": 10, "ttft": 600, "stall": 60, "request": 0, "phase_cap": 1800}},
		Endpoint: schema.Endpoint{BaseURL: "http://10.0.0.1:30000/v1", Model: "glm-5", Headers: []string{"X-Team"}},
		Client:   schema.Client{CPUSeconds: 3.5, MaxSendLag: 0.0042},
		Phases: []schema.PhaseResult{
			{
				Phase: "single", BatchSize: 1, InputLen: 256, OutputLen: 256, Completed: 1, WallSec: 2.5,
				LatMed: f(2.5), LatP99: f(2.5), TTFTMed: f(0.05), TTFTP99: f(0.05), TPOTMed: f(0.0096), TPOTP99: f(0.0096),
				ITLP99: f(0.011), InTput: f(102.4), OutTput: 102.4, TokensPerEvent: f(1), PromptTokensMean: f(256),
				ErrorKinds: map[string]int{}, ByClass: map[schema.Class]int{}, Status: schema.StatusComplete,
				MalformedEvents: 3, MalformedRequests: 1, BadUsage: 1,
			},
			{
				Phase: "decode_medium", BatchSize: 512, InputLen: 256, OutputLen: 256, Completed: 0, Errors: 500, WallSec: 61.5,
				InTput: f(0), OutTput: 0, ErrorRate: 500.0 / 512, Status: schema.StatusCapped, Cancelled: 12,
				ErrorKinds: map[string]int{"HTTP 429: Rate limit | reached": 400, "stalled: no bytes within the stall timeout": 100},
				ByClass:    map[schema.Class]int{schema.RateLimited: 400, schema.Stalled: 100},
			},
		},
	}
}

func TestMarkdownMatchesGolden(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	if err := WriteMarkdown(&buf, sampleReport()); err != nil {
		t.Fatal(err)
	}
	golden := filepath.Join("testdata", "report.md.golden")
	if *update {
		os.WriteFile(golden, buf.Bytes(), 0o644)
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if buf.String() != string(want) {
		t.Fatalf("Markdown differs from %s (run with -update if the change is meant):\n%s", golden, buf.String())
	}
	md := buf.String()
	for _, want := range []string{"| — ", "400 × `HTTP 429: Rate limit | reached`", "| stalled ", "saturated: no"} {
		if !strings.Contains(md, want) {
			t.Errorf("Markdown lacks %q", want)
		}
	}
}

func TestReportJSONKeepsNullsAndTheLegacyFieldsFirst(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	if err := WriteJSON(&buf, sampleReport()); err != nil {
		t.Fatal(err)
	}
	var raw struct {
		Phases []json.RawMessage `json:"phases"`
	}
	if err := json.Unmarshal(buf.Bytes(), &raw); err != nil {
		t.Fatal(err)
	}
	p := string(raw.Phases[1])
	if !strings.Contains(p, `"ttft_med": null`) || strings.Contains(p, "NaN") {
		t.Fatalf("empty metrics must be null: %s", p)
	}
	// The older harness's fifteen fields come first, in its order.
	legacy := []string{"phase", "batch_size", "input_len", "output_len", "completed", "errors", "wall_sec", "lat_med",
		"lat_p99", "ttft_med", "ttft_p99", "tpot_med", "in_tput", "out_tput", "error_kinds"}
	last := -1
	for _, k := range legacy {
		at := strings.Index(p, `"`+k+`"`)
		if at <= last {
			t.Fatalf("field %s out of order", k)
		}
		last = at
	}
}

func TestRecordsRoundTrip(t *testing.T) {
	t.Parallel()
	recs := []schema.Record{
		{Phase: "p", I: 0, SendOffset: 0.001, TFirst: f(0.05), TLast: f(0.2), TEnd: f(0.21), Events: []float64{0.05, 0.1, 0.2}, N: 3, NSource: schema.NFromUsage, Prompt: 256, Finish: "length", Status: 200},
		{Phase: "p", I: 1, Class: schema.RateLimited, Status: 429, RetryAfter: "3", Body: `{"error":"x"}`, TEnd: f(0.01)},
		{Phase: "p", I: 2, NotSent: true},
	}
	var buf bytes.Buffer
	if err := WriteRecords(&buf, recs); err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(buf.String(), "\n"); n != 3 {
		t.Fatalf("%d lines", n)
	}
	got, err := ReadRecords(&buf)
	if err != nil || !reflect.DeepEqual(got, recs) {
		t.Fatalf("round trip: %v\n%+v", err, got)
	}
	if _, err := ReadRecords(strings.NewReader("{\"phase\":\"p\"}\n{bad\n")); err == nil || !strings.Contains(err.Error(), "record 2") {
		t.Fatalf("malformed line not named: %v", err)
	}
}

func TestWriteDirWritesAllThreeFiles(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "nested", "out")
	if err := WriteDir(dir, sampleReport(), nil); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{ReportJSON, ReportMD, RecordsJSONL} {
		fi, err := os.Stat(filepath.Join(dir, name))
		if err != nil || fi.Mode().Perm() != 0o644 {
			t.Fatalf("%s: %v %v", name, err, fi)
		}
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 3 {
		t.Fatalf("temporary files left behind: %v", entries)
	}
}

// writtenRun writes sampleReport and one record into a fresh folder, as a run
// leaves it, and returns the folder and the report.
func writtenRun(t *testing.T) (dir string, run *schema.Report) {
	t.Helper()
	dir, run = t.TempDir(), sampleReport()
	if err := WriteDir(dir, run, []schema.Record{{Phase: "single", I: 0}}); err != nil {
		t.Fatal(err)
	}
	return dir, run
}

func TestUpdateDirReplacesOnlyItsSectionOfAReportOfTheSameLabel(t *testing.T) {
	t.Parallel()
	dir, run := writtenRun(t)
	evals := []schema.EvalResult{{Name: "ppl", Status: "ok", Metrics: map[string]float64{"ppl": 3.2}, N: 4}}
	fresh := &schema.Report{Schema: schema.ReportSchema, Label: run.Label}
	if _, err := UpdateDir(dir, fresh, func(r *schema.Report) { r.Evals = evals }); err != nil {
		t.Fatal(err)
	}
	got, err := ReadReport(filepath.Join(dir, ReportJSON))
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Phases) != 2 || len(got.Evals) != 1 || got.Evals[0].Metrics["ppl"] != 3.2 {
		t.Fatalf("phases %d evals %+v", len(got.Phases), got.Evals)
	}
	if _, err := os.Stat(filepath.Join(dir, RecordsJSONL)); err != nil {
		t.Fatal("requests.jsonl was lost")
	}
	// Another label starts a report of its own in a folder of its own.
	other := &schema.Report{Schema: schema.ReportSchema, Label: "other"}
	r, err := UpdateDir(t.TempDir(), other, func(r *schema.Report) { r.Evals = evals })
	if err != nil || len(r.Phases) != 0 || r.Label != "other" {
		t.Fatalf("%+v %v", r, err)
	}
}

func TestUpdateDirRefusesAFolderHoldingAnotherLabelsReport(t *testing.T) {
	t.Parallel()
	dir, run := writtenRun(t)
	other := &schema.Report{Schema: schema.ReportSchema, Label: "other"}
	changed := false
	r, err := UpdateDir(dir, other, func(*schema.Report) { changed = true })
	if r != nil || !badinput.Is(err) || changed {
		t.Fatalf("%+v %v: want a bad-input error and no change", r, err)
	}
	for _, want := range []string{dir, strconv.Quote(run.Label), `"other"`, "--out"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%v: want it to name %s", err, want)
		}
	}
	got, err := ReadReport(filepath.Join(dir, ReportJSON))
	if err != nil || got.Label != run.Label || len(got.Phases) != 2 {
		t.Fatalf("the run's report was changed: %+v %v", got, err)
	}
}

func TestReadReportKeepsOSErrorsAndRejectsOtherSchemas(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if _, err := ReadReport(filepath.Join(dir, ReportJSON)); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("a missing file: %v, want fs.ErrNotExist", err)
	}
	p := filepath.Join(dir, "r.json")
	if err := os.WriteFile(p, []byte(`{"schema": "something/else"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadReport(p); !badinput.Is(err) || !strings.Contains(err.Error(), "something/else") {
		t.Fatalf("another schema: %v, want a bad-input error naming it", err)
	}
}
