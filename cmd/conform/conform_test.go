package conform

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/glmbench/glmbench/cmd/cmdtest"
	"github.com/glmbench/glmbench/cmd/cmdutil"
	"github.com/glmbench/glmbench/endpoints/conform"
	"github.com/glmbench/glmbench/engine"
	"github.com/glmbench/glmbench/engine/enginetest"
	"github.com/glmbench/glmbench/reports"
	"github.com/glmbench/glmbench/reports/schema"
)

func parse(t *testing.T, args ...string) *Options {
	return cmdtest.MustParse(t, NewCmdConform, args...)
}

func TestFlagsParseIntoOptions(t *testing.T) {
	t.Parallel()
	o := parse(t, "--endpoint", "http://h/v1", "--only", "stream,n", "--only", "stop", "--probe-limits", "64",
		"--timeout", "5s", "--stall-timeout", "2s", "--label", "x", "--out", "d", "--api-key-env", "K")
	if o.Endpoint.Endpoint != "http://h/v1" || strings.Join(o.Only, " ") != "stream n stop" || o.ProbeLimits != 64 ||
		o.Timeout != 5*time.Second || o.StallTimeout != 2*time.Second || o.Label != "x" || o.Out != "d" || !o.Endpoint.APIKeyEnvSet {
		t.Fatalf("%+v", o)
	}
	def := parse(t)
	if len(def.Only) != 0 || def.ProbeLimits != 0 || def.Timeout != time.Minute || def.StallTimeout != 10*time.Second ||
		def.ConnectTimeout != 10*time.Second || def.Endpoint.APIKeyEnvSet {
		t.Fatalf("defaults: %+v", def)
	}
}

func TestHelpListsEveryCheck(t *testing.T) {
	t.Parallel()
	f, _, _ := cmdutil.TestFactory(context.Background(), nil)
	long := NewCmdConform(f, nil).Long
	for _, id := range []string{"models", "stream-usage", "completions-echo", "concurrent-streams", "queue-overflow"} {
		if !strings.Contains(long, "\n  "+id+" ") {
			t.Errorf("--help does not list %s", id)
		}
	}
}

// execute runs conform with args against a factory over buffers.
func execute(t *testing.T, args ...string) (stdout, stderr string, err error) {
	f, out, errOut := cmdutil.TestFactory(context.Background(), map[string]string{"OPENAI_API_KEY": "sk-cmd-conform-secret"})
	err = cmdtest.Execute(f, NewCmdConform, args...)
	return out.String(), errOut.String(), err
}

func TestBadInputExitsTwoBeforeAnyRequest(t *testing.T) {
	t.Parallel()
	var requests atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { requests.Add(1) }))
	defer srv.Close()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--only", "stream,nope"}, `no check "nope"`},
		{[]string{"--only", "queue-overflow"}, "needs --probe-limits"},
		{[]string{"--probe-limits", "1"}, "from 2 to 100000, got 1"},
		{[]string{"--probe-limits", "-4"}, "from 2 to 100000, got -4"},
		// A billion streams at once ran the process out of memory.
		{[]string{"--probe-limits", "1000000000"}, "from 2 to 100000, got 1000000000"},
		{[]string{"--timeout", "0s"}, "--timeout must be positive"},
		{[]string{"--stall-timeout", "-1s"}, "--stall-timeout must be positive"},
	} {
		out := filepath.Join(t.TempDir(), "out")
		_, _, err := execute(t, append([]string{"--endpoint", srv.URL + "/v1", "--model", "m", "--out", out}, tc.args...)...)
		if cmdutil.ExitCode(err) != cmdutil.ExitBadInput || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%v: %v, want exit 2 and one line saying %q", tc.args, err, tc.want)
		}
		if _, serr := os.Stat(out); serr == nil {
			t.Errorf("%v: a report was written", tc.args)
		}
	}
	if n := requests.Load(); n != 0 {
		t.Errorf("%d requests were sent for bad input", n)
	}
}

// startEngine runs a reference engine with a small KV pool (see
// engine/enginetest) and the given faults.
func startEngine(t *testing.T, faults ...string) *engine.Engine {
	t.Helper()
	return enginetest.Start(t, enginetest.Faults(faults...)).Engine
}

func readReport(t *testing.T, dir string) (*schema.Report, string) {
	t.Helper()
	rep, err := reports.ReadReport(filepath.Join(dir, reports.ReportJSON))
	if err != nil {
		t.Fatal(err)
	}
	md := cmdtest.ReadFile(t, dir, reports.ReportMD)
	return rep, md
}

func TestARunWritesOnlyItsSectionAndExitsByTheVerdict(t *testing.T) {
	t.Parallel()
	e := startEngine(t)
	dir := t.TempDir()
	// A run's report of the same label is already there: conform adds its
	// section and leaves the phases alone.
	run := &schema.Report{Schema: schema.ReportSchema, Label: e.ModelName(), Phases: []schema.PhaseResult{{Phase: "single", BatchSize: 1}}}
	if err := reports.WriteDir(dir, run, []schema.Record{{Phase: "single"}}); err != nil {
		t.Fatal(err)
	}
	stdout, stderr, err := execute(t, "--endpoint", e.BaseURL(), "--model", e.ModelName(), "--only", "usage", "--out", dir)
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	rep, md := readReport(t, dir)
	if len(rep.Phases) != 1 || len(rep.Conformance) != 2 || rep.Conformance[0].ID != "chat" || rep.Conformance[1].ID != "usage" ||
		rep.Conformance[1].Status != "pass" {
		t.Fatalf("phases %+v, conformance %+v", rep.Phases, rep.Conformance)
	}
	if !strings.Contains(md, "## Conformance") || !strings.Contains(md, "| usage") || !strings.Contains(stdout, "| usage") {
		t.Fatalf("report.md:\n%s\nstdout:\n%s", md, stdout)
	}
	if _, err := os.Stat(filepath.Join(dir, reports.RecordsJSONL)); err != nil {
		t.Errorf("the run's requests.jsonl is gone: %v", err)
	}

	// A failing check is exit 1, naming it; it joins the section in suite order.
	broken := startEngine(t, "drop-done")
	stdout, _, err = execute(t, "--endpoint", broken.BaseURL(), "--model", e.ModelName(), "--only", "stream", "--out", dir)
	if cmdutil.ExitCode(err) != cmdutil.ExitFailed || !strings.Contains(err.Error(), "1 of 1 conformance checks failed: stream") {
		t.Fatalf("%v", err)
	}
	if !strings.Contains(stdout, "| stream") || !strings.Contains(stdout, "[DONE]") {
		t.Fatalf("stdout:\n%s", stdout)
	}
	rep, _ = readReport(t, dir)
	var ids []string
	for _, c := range rep.Conformance {
		ids = append(ids, c.ID+":"+c.Status)
	}
	if strings.Join(ids, " ") != "chat:pass usage:pass stream:fail" {
		t.Fatalf("conformance after two runs: %v", ids)
	}
	if strings.Contains(stdout+stderr, "sk-cmd-conform-secret") {
		t.Fatal("the API key reached the output")
	}
}

func TestWithoutAnEndpointItChecksTheBuiltInEngine(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	_, stderr, err := execute(t, "--only", "models", "--out", dir)
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	rep, _ := readReport(t, dir)
	if rep.Label != "builtin" || !rep.Endpoint.Builtin || len(rep.Conformance) != 1 || rep.Conformance[0].Status != "pass" {
		t.Fatalf("label %q, endpoint %+v, conformance %+v", rep.Label, rep.Endpoint, rep.Conformance)
	}
}

func TestAFullRunReplacesTheSectionAndAnOnlyRunMergesIntoIt(t *testing.T) {
	t.Parallel()
	e := startEngine(t)
	dir := t.TempDir()
	// An earlier version's run left a check this one no longer has, and a
	// stale verdict of one it has.
	old := &schema.Report{Schema: schema.ReportSchema, Label: e.ModelName(),
		Conformance: []schema.CheckResult{{ID: "retired", Status: "pass"}, {ID: "models", Status: "fail", Detail: "stale"}}}
	if err := reports.WriteDir(dir, old, nil); err != nil {
		t.Fatal(err)
	}
	section := func() string {
		rep, _ := readReport(t, dir)
		var got []string
		for _, c := range rep.Conformance {
			got = append(got, c.ID+":"+c.Status)
		}
		return strings.Join(got, " ")
	}
	args := []string{"--endpoint", e.BaseURL(), "--model", e.ModelName(), "--out", dir}
	if _, stderr, err := execute(t, append(args, "--only", "models")...); err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	if got := section(); got != "models:pass retired:pass" {
		t.Fatalf("after a run with --only models: %s, want models replaced and retired kept", got)
	}
	if _, stderr, err := execute(t, args...); err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	rep, _ := readReport(t, dir)
	var ids []string
	for _, c := range rep.Conformance {
		ids = append(ids, c.ID)
	}
	if want := conform.IDs(); !slices.Equal(ids, want) {
		t.Fatalf("after a run of every check: %v, want exactly the suite's checks %v", ids, want)
	}
}
