package reports

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/glmbench/glmbench/internal/badinput"
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

// A comparison shows which column's load went to /completions (its prompts
// carry no chat template, so the same IN is other text): the column's
// endpoint says so, and a chat column's says nothing more.
func TestTheComparisonNamesACompletionsColumn(t *testing.T) {
	t.Parallel()
	chat, compl := sampleReport(), sampleReport()
	chat.Options.API, chat.Label = "chat", "chat-run"
	compl.Options.API, compl.Label = "completions", "base-run"
	c, err := Compare([]*Input{{Report: chat, Path: "a"}, {Report: compl, Path: "b"}})
	if err != nil {
		t.Fatal(err)
	}
	if c.Columns[0].API != "" || c.Columns[1].API != "completions" {
		t.Fatalf("columns' api %q and %q, want none and completions", c.Columns[0].API, c.Columns[1].API)
	}
	var md bytes.Buffer
	if err := WriteComparisonMarkdown(&md, c); err != nil {
		t.Fatal(err)
	}
	ep := chat.Endpoint.BaseURL
	if strings.Count(md.String(), ep+" (api completions)") != 1 || strings.Count(md.String(), "(api ") != 1 {
		t.Errorf("want exactly the completions column marked:\n%s", md.String())
	}
}

// Runs of one label are merged, so a chat run and a completions run under one
// label are refused (bad input naming both), while an eval-only report of
// that label, which sent no load, merges with either.
func TestOneLabelsRunsShareTheirAPI(t *testing.T) {
	t.Parallel()
	chat, compl, evalOnly := sampleReport(), sampleReport(), sampleReport()
	chat.Options.API, compl.Options.API = "", "completions" // "": written before the field, a chat run
	evalOnly.Phases = nil
	_, err := Compare([]*Input{{Report: chat, Path: "a"}, {Report: compl, Path: "b"}})
	if err == nil || !badinput.Is(err) || !strings.Contains(err.Error(), "the chat API in a but to the completions API in b") {
		t.Errorf("%v: want bad input naming both routes", err)
	}
	for _, ins := range [][]*Input{{{Report: compl, Path: "b"}, {Report: evalOnly, Path: "e"}}, {{Report: evalOnly, Path: "e"}, {Report: compl, Path: "b"}}} {
		c, err := Compare(ins)
		if err != nil || c.Columns[0].API != "completions" {
			t.Errorf("with an eval-only report: %v, api %q; want the completions column", err, c.Columns[0].API)
		}
	}
}
