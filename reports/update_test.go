package reports

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/glmbench/glmbench/internal/badinput"
	"github.com/glmbench/glmbench/reports/schema"
)

// suite is a conformance suite's order of checks, as conform.IDs gives it.
var suite = []string{"models", "chat", "stream"}

func TestPutChecksReplacesTheSectionOrMergesIntoIt(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		some bool
		want string
	}{
		{false, "chat:pass stream:pass"},
		{true, "models:pass chat:pass stream:pass retired:pass"},
	} {
		rep := &schema.Report{Conformance: []schema.CheckResult{{ID: "stream", Status: "fail"}, {ID: "retired", Status: "pass"}, {ID: "models", Status: "pass"}}}
		PutChecks(rep, []schema.CheckResult{{ID: "chat", Status: "pass"}, {ID: "stream", Status: "pass"}}, tc.some, suite)
		var got []string
		for _, c := range rep.Conformance {
			got = append(got, c.ID+":"+c.Status)
		}
		if strings.Join(got, " ") != tc.want {
			t.Errorf("some %t: %v, want %s", tc.some, got, tc.want)
		}
	}
}

func TestMergeChecksReplacesByIDAndKeepsSuiteOrder(t *testing.T) {
	t.Parallel()
	rep := &schema.Report{Conformance: []schema.CheckResult{{ID: "stream", Status: "fail"}, {ID: "retired", Status: "pass"}, {ID: "models", Status: "pass"}}}
	MergeChecks(rep, []schema.CheckResult{{ID: "chat", Status: "pass"}, {ID: "stream", Status: "pass"}}, suite)
	var got []string
	for _, c := range rep.Conformance {
		got = append(got, c.ID+":"+c.Status)
	}
	if strings.Join(got, " ") != "models:pass chat:pass stream:pass retired:pass" {
		t.Fatalf("%v", got)
	}
}

func TestMergeEvalsReplacesByNameAndKeepsTheOthers(t *testing.T) {
	t.Parallel()
	rep := &schema.Report{Evals: []schema.EvalResult{{Name: "ppl", Status: "ok", N: 1}, {Name: "mmlu", Status: "failed"}}}
	MergeEvals(rep, []schema.EvalResult{{Name: "mmlu", Status: "ok", N: 3}, {Name: "triviaqa", Status: "ok", N: 2}})
	var got []string
	for _, e := range rep.Evals {
		got = append(got, e.Name+":"+e.Status)
	}
	// An eval run again takes its old place; a new one is added at the end.
	if strings.Join(got, " ") != "ppl:ok mmlu:ok triviaqa:ok" || rep.Evals[1].N != 3 {
		t.Fatalf("%v", rep.Evals)
	}
}

func TestCheckUpdateDirRefusesAnotherLabelOrAnUnreadableReportAsBadInput(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if err := CheckUpdateDir(dir, "a"); err != nil {
		t.Fatalf("an empty folder: %v", err)
	}
	if err := WriteDir(dir, &schema.Report{Schema: schema.ReportSchema, Label: "a"}, nil); err != nil {
		t.Fatal(err)
	}
	if err := CheckUpdateDir(dir, "a"); err != nil {
		t.Fatalf("a folder of the same label: %v", err)
	}
	if err := CheckUpdateDir(dir, "b"); !badinput.Is(err) || !strings.Contains(err.Error(), `"a"`) {
		t.Fatalf("another label: %v, want bad input naming it", err)
	}
	if err := os.WriteFile(filepath.Join(dir, ReportJSON), []byte("{"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := CheckUpdateDir(dir, "a"); !badinput.Is(err) {
		t.Fatalf("a report that is not JSON: %v, want bad input", err)
	}
}
