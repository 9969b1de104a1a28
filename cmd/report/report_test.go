package report

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/glmbench/glmbench/cmd/cmdtest"
	"github.com/glmbench/glmbench/cmd/cmdutil"
	"github.com/glmbench/glmbench/reports"
	"github.com/glmbench/glmbench/reports/schema"
)

func fp(v float64) *float64 { return &v }

// writeReport puts a one-phase report (with records when recs is set) in a
// folder named label.
func writeReport(t *testing.T, label string, outTput float64, withRecords bool) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), label)
	ph := schema.PhaseResult{Phase: "single", BatchSize: 1, InputLen: 8, OutputLen: 4, Completed: 1, WallSec: 1,
		TTFTMed: fp(0.05), TTFTP99: fp(0.05), TPOTMed: fp(0.01), OutTput: outTput, InTput: fp(8),
		ErrorKinds: map[string]int{}, ByClass: map[schema.Class]int{}, Status: schema.StatusComplete}
	r := &schema.Report{Schema: schema.ReportSchema, Label: label, Phases: []schema.PhaseResult{ph}}
	var recs []schema.Record
	if withRecords {
		recs = []schema.Record{{Phase: "single", TFirst: fp(0.05), TLast: fp(0.08), TEnd: fp(0.09),
			Events: []float64{0.05, 0.06, 0.07, 0.08}, N: 4, NSource: schema.NFromUsage, Prompt: 8}}
	}
	if err := reports.WriteDir(dir, r, recs); err != nil {
		t.Fatal(err)
	}
	if !withRecords {
		os.Remove(filepath.Join(dir, reports.RecordsJSONL))
	}
	return dir
}

func execute(t *testing.T, args ...string) (out, errOut string, code int) {
	f, o, e := cmdutil.TestFactory(context.Background(), nil)
	err := cmdtest.Execute(f, NewCmdReport, args...)
	return o.String(), e.String(), cmdutil.ExitCode(err)
}

func TestFlagsParseIntoOptions(t *testing.T) {
	t.Parallel()
	got := cmdtest.MustParse(t, NewCmdReport, "a.json", "b/", "--format", "text", "--plots", "p", "--out", "x.md")
	if strings.Join(got.Files, " ") != "a.json b/" || got.Format != "text" || got.Plots != "p" || got.Out != "x.md" {
		t.Fatalf("%+v", got)
	}
	got, err := cmdtest.Parse(NewCmdReport, "a.json")
	if err != nil || got.Format != "md" || got.Out != "" || got.Plots != "" {
		t.Fatalf("defaults: %+v, %v", got, err)
	}
}

func TestReportRendersTheComparisonInEachFormat(t *testing.T) {
	t.Parallel()
	a, b := writeReport(t, "a", 100, true), writeReport(t, "b", 90, false)
	for _, tc := range []struct{ name, format, want string }{
		{"Markdown by default", "", "| **single**<br>1/8/4 | out 44.4 · in 88.9 tok/s<br>"},
		{"text for a terminal", "text", "out 90.0 (+102.5%) · in 8.0 tok/s"},
		{"JSON for tools", "json", `"schema": "glmbench/compare/v1"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			args := []string{a, b}
			if tc.format != "" {
				args = append(args, "--format", tc.format)
			}
			out, errOut, code := execute(t, args...)
			if code != 0 || !strings.Contains(out, tc.want) {
				t.Fatalf("exit %d, stderr %q, stdout:\n%s", code, errOut, out)
			}
		})
	}
}

func TestReportWritesToAFileAndDrawsPlots(t *testing.T) {
	t.Parallel()
	a := writeReport(t, "a", 100, true)
	outFile := filepath.Join(t.TempDir(), "cmp.md")
	plots := filepath.Join(t.TempDir(), "plots")
	out, errOut, code := execute(t, a, "--out", outFile, "--plots", plots)
	if code != 0 || out != "" || !strings.Contains(errOut, "figures written to") {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	if b, err := os.ReadFile(outFile); err != nil || !strings.Contains(string(b), "# glmbench comparison: a") {
		t.Fatalf("%v: %s", err, b)
	}
	for _, name := range []string{"single-ttft-cdf.png", "single-ttft-cdf.svg", "single-out-tput-time.svg"} {
		if st, err := os.Stat(filepath.Join(plots, name)); err != nil || st.Size() == 0 {
			t.Fatalf("%s: %v", name, err)
		}
	}
}

func TestBadInputExitsTwoWithOneLine(t *testing.T) {
	t.Parallel()
	a := writeReport(t, "a", 100, false)
	bad := filepath.Join(t.TempDir(), "bad.json")
	os.WriteFile(bad, []byte("{\n  \"schema\": \"glmbench/report/v1\",\n  oops\n}"), 0o644)
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"no file", nil, "name at least one report"},
		{"a missing file", []string{filepath.Join(t.TempDir(), "nope.json")}, "no such file or folder"},
		{"malformed JSON names the line", []string{a, bad}, "bad.json:3:3: malformed JSON"},
		{"an unknown format", []string{a, "--format", "html"}, `unknown --format "html"`},
		{"plots without records", []string{a, "--plots", t.TempDir()}, "no records to plot"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, errOut, code := execute(t, tc.args...)
			if code != cmdutil.ExitBadInput || !strings.Contains(errOut, tc.want) || strings.Count(errOut, "\n") > 1 {
				t.Fatalf("exit %d, stderr %q, want 2 and %q", code, errOut, tc.want)
			}
		})
	}
}
