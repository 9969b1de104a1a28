package reports

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The report names the route the load went to: in report.json's options
// (always, "api" with no omitempty), in report.md's options line and in the
// compact summary's first line; a report.json written before the field
// existed reads as a chat run.
func TestTheReportSaysWhichAPITheLoadWentTo(t *testing.T) {
	t.Parallel()
	rep := sampleReport()
	rep.Options.API = "completions"
	var md, compact, js bytes.Buffer
	if err := WriteMarkdown(&md, rep); err != nil {
		t.Fatal(err)
	}
	if err := WriteCompact(&compact, rep, ""); err != nil {
		t.Fatal(err)
	}
	if err := WriteJSON(&js, rep); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(md.String(), "- api: completions (POST /completions, no chat template); arrival: burst") {
		t.Errorf("report.md does not name the completions route:\n%s", md.String())
	}
	if first, _, _ := strings.Cut(compact.String(), "\n"); first != "sglang-h200: model glm-5, api completions, 2 phases" {
		t.Errorf("compact summary's first line is %q", first)
	}
	if !strings.Contains(js.String(), `"api": "completions"`) {
		t.Errorf("report.json lacks the api option:\n%s", js.String())
	}

	// An old report: its options have no "api" at all.
	rep.Options.API = ""
	js.Reset()
	if err := WriteJSON(&js, rep); err != nil {
		t.Fatal(err)
	}
	old := strings.Replace(js.String(), `"api": "",`, "", 1)
	if old == js.String() {
		t.Fatalf(`an empty api must still be written ("api": ""), for the field to be removed here:\n%s`, js.String())
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, ReportJSON), []byte(old), 0o644); err != nil {
		t.Fatal(err)
	}
	in, err := Load(dir)
	if err != nil {
		t.Fatalf("a report without api does not load: %v", err)
	}
	md.Reset()
	if err := WriteMarkdown(&md, in.Report); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(md.String(), "- api: chat (POST /chat/completions); arrival") {
		t.Errorf("a report without api should read as chat:\n%s", md.String())
	}
}
