package gate

import (
	"context"
	"encoding/xml"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/glmbench/glmbench/cmd/cmdtest"
	"github.com/glmbench/glmbench/cmd/cmdutil"
	"github.com/glmbench/glmbench/reports"
	"github.com/glmbench/glmbench/reports/gate"
	"github.com/glmbench/glmbench/reports/schema"
)

func fp(v float64) *float64 { return &v }

// writeReport puts a report with the phases single and decode_medium into
// a folder named label; decode_medium has outTput.
func writeReport(t *testing.T, label string, outTput float64, batch int) string {
	t.Helper()
	phase := func(name string, n int, out float64) schema.PhaseResult {
		return schema.PhaseResult{Phase: name, BatchSize: n, InputLen: 256, OutputLen: 256, Completed: n, WallSec: 1,
			TTFTMed: fp(0.05), TTFTP99: fp(0.08), TPOTMed: fp(0.01), OutTput: out, InTput: fp(out),
			ErrorKinds: map[string]int{}, ByClass: map[schema.Class]int{}, Status: schema.StatusComplete}
	}
	r := &schema.Report{Schema: schema.ReportSchema, Label: label,
		Phases: []schema.PhaseResult{phase("single", 1, 100), phase("decode_medium", batch, outTput)}}
	dir := filepath.Join(t.TempDir(), label)
	if err := reports.WriteDir(dir, r, nil); err != nil {
		t.Fatal(err)
	}
	os.Remove(filepath.Join(dir, reports.RecordsJSONL))
	return dir
}

func execute(t *testing.T, env map[string]string, args ...string) (out, errOut string, code int) {
	f, o, e := cmdutil.TestFactory(context.Background(), env)
	err := cmdtest.Execute(f, NewCmdGate, args...)
	return o.String(), e.String(), cmdutil.ExitCode(err)
}

func TestFlagsParseIntoOptions(t *testing.T) {
	t.Parallel()
	got := cmdtest.MustParse(t, NewCmdGate, "--baseline", "b1,b2", "--baseline", "b3", "--current", "c1", "--threshold", "a.b > 1, or not",
		"--threshold", "*.c < +5%", "--threshold-file", "g.yaml", "--junit", "j.xml")
	if strings.Join(got.Baseline, " ") != "b1 b2 b3" || strings.Join(got.Current, " ") != "c1" ||
		len(got.Thresholds) != 2 || got.Thresholds[0] != "a.b > 1, or not" || got.ThresholdFile != "g.yaml" || got.JUnit != "j.xml" {
		t.Fatalf("%+v", got)
	}
}

func TestGateExitsByWhatItFound(t *testing.T) {
	t.Parallel()
	base := writeReport(t, "main", 1000, 512)
	same := writeReport(t, "pr-same", 990, 512)
	slow := writeReport(t, "pr-slow", 900, 512)
	other := writeReport(t, "pr-other", 1000, 64)
	yaml := filepath.Join(t.TempDir(), "gate.yaml")
	os.WriteFile(yaml, []byte("thresholds:\n  decode_medium.out_tput: '> -5%'\n  '*.error_rate': '<= 0.01'\n"), 0o644)
	badYAML := filepath.Join(t.TempDir(), "bad.yaml")
	os.WriteFile(badYAML, []byte("- decode_medium.out_tput >> 5\n"), 0o644)
	for _, tc := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"the same build passes the defaults", []string{"--baseline", base, "--current", same}, 0, "✓ decode_medium.out_tput > -5%: 990 tok/s vs baseline 1000 tok/s (-1.0%)"},
		{"a 10% slower build crosses a default", []string{"--baseline", base, "--current", slow}, 99, "✗ decode_medium.out_tput > -5%: 900 tok/s vs baseline 1000 tok/s (-10.0%)"},
		{"a looser threshold lets it pass", []string{"--baseline", base, "--current", slow, "--threshold", "decode_medium.out_tput > -15%"}, 0, "✓ decode_medium.out_tput > -15%"},
		{"a threshold file is read", []string{"--baseline", base, "--current", slow, "--threshold-file", yaml}, 99, "✓ single.error_rate <= 0.01"},
		{"phases of different shapes are bad input", []string{"--baseline", base, "--current", other}, 2, "phases of different shapes are not compared"},
		{"a bad threshold is bad input", []string{"--baseline", base, "--current", same, "--threshold", "decode_medium.out_tput => 5"}, 2, "bad threshold"},
		{"a bad threshold file is bad input", []string{"--baseline", base, "--current", same, "--threshold-file", badYAML}, 2, "bad.yaml"},
		{"a missing threshold file is bad input", []string{"--baseline", base, "--current", same, "--threshold-file", badYAML + ".nope"}, 2, "--threshold-file"},
		{"no baseline is bad input", []string{"--current", same}, 2, "--baseline is required"},
		{"no current is bad input", []string{"--baseline", base}, 2, "--current is required"},
		{"a missing report is bad input", []string{"--baseline", base, "--current", base + "-nope"}, 2, "no such file or folder"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			out, errOut, code := execute(t, nil, tc.args...)
			if code != tc.code || !strings.Contains(out+errOut, tc.want) {
				t.Fatalf("exit %d (want %d); stdout:\n%s\nstderr:\n%s\nwant %q", code, tc.code, out, errOut, tc.want)
			}
		})
	}
}

func TestGateWritesTheStepSummaryAndJUnit(t *testing.T) {
	t.Parallel()
	base, slow := writeReport(t, "main", 1000, 512), writeReport(t, "pr", 900, 512)
	dir := t.TempDir()
	summary := filepath.Join(dir, "summary.md")
	os.WriteFile(summary, []byte("earlier step\n"), 0o644)
	junit := filepath.Join(dir, "gate.xml")
	_, errOut, code := execute(t, map[string]string{"GITHUB_STEP_SUMMARY": summary},
		"--baseline", base, "--current", slow, "--junit", junit)
	if code != 99 || !strings.Contains(errOut, "gate: 1 of 6 checks crossed: decode_medium.out_tput > -5%") {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
	md, _ := os.ReadFile(summary)
	if !strings.HasPrefix(string(md), "earlier step\n## glmbench gate: ✗ 1 of 6 checks crossed") ||
		!strings.Contains(string(md), "| ✗ | `decode_medium.out_tput > -5%` | 1000 tok/s | 900 tok/s | -10.0% |") {
		t.Fatalf("step summary:\n%s", md)
	}
	b, err := os.ReadFile(junit)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Suite struct {
			Name     string `xml:"name,attr"`
			Failures int    `xml:"failures,attr"`
			Cases    []struct {
				Name string `xml:"name,attr"`
			} `xml:"testcase"`
		} `xml:"testsuite"`
	}
	if err := xml.Unmarshal(b, &doc); err != nil || doc.Suite.Name != "glmbench gate" || doc.Suite.Failures != 1 || len(doc.Suite.Cases) != 6 {
		t.Fatalf("%v: %+v", err, doc)
	}
}

func TestAnUnwritableJUnitFileExitsOneOverNinetyNine(t *testing.T) {
	t.Parallel()
	base, slow := writeReport(t, "main", 1000, 512), writeReport(t, "pr", 900, 512)
	_, errOut, code := execute(t, nil, "--baseline", base, "--current", slow, "--junit", filepath.Join(t.TempDir(), "no", "such", "dir.xml"))
	if code != cmdutil.ExitFailed || !strings.Contains(errOut, "writing --junit") {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
}

func TestRunBaselineCanRefuseAShapeBeforeSendingLoad(t *testing.T) {
	t.Parallel()
	f, out, _ := cmdutil.TestFactory(context.Background(), nil)
	p, err := gate.Prepare(gate.Spec{Baseline: []string{writeReport(t, "main", 1000, 512)}}, f.IO.ErrOut)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.RequireShape("decode_medium", 512, 256, 256); err != nil {
		t.Fatal(err)
	}
	if err := p.RequireShape("decode_medium", 64, 256, 256); cmdutil.ExitCode(err) != 2 {
		t.Fatalf("got %v", err)
	}
	if err := p.RequireShape("custom", 1, 2, 3); err != nil {
		t.Fatalf("a phase the baseline lacks: %v", err)
	}
	// What run has in memory is gated without writing it first.
	cur := cmdtest.Load(t, writeReport(t, "pr", 1000, 512))
	if err := Decide(f, p, "", []*schema.Report{cur.Report}); err != nil || !strings.Contains(out.String(), "✓ single.out_tput > -5%") {
		t.Fatalf("%v\n%s", err, out)
	}
}
