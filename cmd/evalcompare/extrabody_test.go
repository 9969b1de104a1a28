package evalcompare

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/glmbench/glmbench/cmd/cmdtest"
	"github.com/glmbench/glmbench/cmd/cmdutil"
	"github.com/glmbench/glmbench/endpoints/endpointstest"
	"github.com/glmbench/glmbench/evals/compare"
	"github.com/glmbench/glmbench/reports"
	"github.com/glmbench/glmbench/reports/schema"
)

// The truth: with --extra-body every request to the endpoint and every one
// to the reference carries the object's fields as given (compact), and
// the report's options record the object.
func TestCompareExtraBodyGoesToBothSidesAndTheReport(t *testing.T) {
	t.Parallel()
	a := endpointstest.Start(t, endpointstest.VLLM, endpointstest.Options{})
	b := endpointstest.Start(t, endpointstest.SGLang, endpointstest.Options{})
	dir := t.TempDir()
	code, _, stderr := execute(t, "--endpoint", a.BaseURL(), "--reference-endpoint", b.BaseURL(), "--reference-model", b.Opts.Model,
		"--extra-body", `{"top_k": 1, "min_p": 0}`, "--limit", "3", "--tokens", "4", "--out", dir)
	if code != 0 && code != cmdutil.ExitFailed {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	for side, p := range map[string]*endpointstest.Personality{"endpoint": a, "reference": b} {
		bodies := p.BodyFields()
		if len(bodies) < 3 {
			t.Fatalf("%s: %d generation requests for 3 prompts", side, len(bodies))
		}
		for i, f := range bodies {
			if string(f["top_k"]) != "1" || string(f["min_p"]) != "0" {
				t.Fatalf("%s request %d of %d: top_k %s, min_p %s", side, i, len(bodies), f["top_k"], f["min_p"])
			}
		}
	}
	in := cmdtest.Load(t, dir)
	if got := in.Report.Options.Extra(); got != `{"min_p":0,"top_k":1}` {
		t.Errorf("the report records %q", got)
	}
}

// A field compare writes itself is refused in one line, exit 2, before any
// request (the endpoints are closed ports: a request would have failed
// otherwise, with no verdict, exit 1).
func TestCompareRefusesAnOwnedExtraFieldBeforeAnyRequest(t *testing.T) {
	t.Parallel()
	code, _, stderr := execute(t, "--endpoint", "http://127.0.0.1:1/v1", "--model", "m", "--reference-endpoint", "http://127.0.0.1:1/v1",
		"--reference-model", "m", "--extra-body", `{"chat_template_kwargs": {"enable_thinking": true}}`, "--out", t.TempDir())
	const says = `--extra-body sets "chat_template_kwargs", which glmbench writes itself: the comparison sends {"enable_thinking": false}`
	if code != cmdutil.ExitBadInput || !strings.Contains(stderr, says) || strings.Count(strings.TrimSpace(stderr), "\n") != 0 {
		t.Fatalf("exit %d, stderr %q: want exit 2 in one line saying %q", code, stderr, says)
	}
}

// The truth: RequestFields names every field compare writes (so
// --extra-body sets none twice): the fields the fakes received from a
// whole comparison with no extra body, continuations and echoes, are all
// in it.
func TestRequestFieldsNameEveryFieldCompareWrites(t *testing.T) {
	t.Parallel()
	a := endpointstest.Start(t, endpointstest.VLLM, endpointstest.Options{})
	b := endpointstest.Start(t, endpointstest.OpenAI, endpointstest.Options{})
	execute(t, "--endpoint", a.BaseURL(), "--reference-endpoint", b.BaseURL(), "--reference-model", b.Opts.Model, "--tokens", "4", "--out", t.TempDir())
	seen := map[string]bool{}
	for _, p := range []*endpointstest.Personality{a, b} {
		for _, f := range p.BodyFields() {
			for k := range f {
				seen[k] = true
			}
		}
	}
	for k := range seen {
		if _, ok := compare.RequestFields[k]; !ok {
			t.Errorf("compare writes %s, which RequestFields does not name", k)
		}
	}
	for _, k := range []string{"echo", "chat_template_kwargs", "top_logprobs"} {
		if !seen[k] {
			t.Errorf("no request carried %s: the comparison did not send both kinds of request", k)
		}
	}
}

// A template kwarg other than the comparison's own enable_thinking is
// merged into its chat_template_kwargs, not refused: DeepSeek-V3.1's
// template reads "thinking", Seed-OSS's "thinking_budget", which a user
// could not pass at all. The truth: with --extra-body
// '{"chat_template_kwargs": {"thinking": false}, "top_k": 1}' every
// continuation to either side carries {"enable_thinking": false,
// "thinking": false}, every echo {"thinking": false} as given, each
// top_k 1, and the report records the object as given; enable_thinking
// itself (the test above), a chat_template_kwargs that is not an object,
// and the field in another letter case are refused in one line, exit 2.
func TestCompareMergesOtherTemplateKwargsIntoItsOwn(t *testing.T) {
	t.Parallel()
	a := endpointstest.Start(t, endpointstest.VLLM, endpointstest.Options{})
	b := endpointstest.Start(t, endpointstest.SGLang, endpointstest.Options{})
	dir := t.TempDir()
	doc := filepath.Join(t.TempDir(), "doc.txt")
	para := strings.Repeat("The river runs past the old mill and on into the town below. ", 3)
	if err := os.WriteFile(doc, []byte(para+"\n\n"+para+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, stderr := execute(t, "--endpoint", a.BaseURL(), "--reference-endpoint", b.BaseURL(), "--reference-model", b.Opts.Model,
		"--extra-body", `{"chat_template_kwargs": {"thinking": false}, "top_k": 1}`, "--dataset", doc, "--limit", "2", "--tokens", "4", "--out", dir)
	if code != 0 && code != cmdutil.ExitFailed {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	for side, p := range map[string]*endpointstest.Personality{"endpoint": a, "reference": b} {
		chats, echoes := 0, 0
		for i, f := range p.BodyFields() {
			want := `{"enable_thinking":false,"thinking":false}`
			if string(f["echo"]) == "true" {
				echoes++
				want = `{"thinking":false}`
			} else {
				chats++
			}
			if got := string(f["chat_template_kwargs"]); got != want || string(f["top_k"]) != "1" {
				t.Errorf("%s request %d: chat_template_kwargs %s, top_k %s; want %s and 1", side, i, got, f["top_k"], want)
			}
		}
		if chats < 2 || echoes < 1 {
			t.Errorf("%s: %d continuations, %d echoes", side, chats, echoes)
		}
	}
	in := cmdtest.Load(t, dir)
	if got := in.Report.Options.Extra(); got != `{"chat_template_kwargs":{"thinking":false},"top_k":1}` {
		t.Errorf("the report records %q", got)
	}
	for extra, says := range map[string]string{
		`{"chat_template_kwargs": "thinking"}`:                 `--extra-body: chat_template_kwargs must be a JSON object of template kwargs`,
		`{"Chat_Template_Kwargs": {"thinking": false}}`:        `--extra-body sets "Chat_Template_Kwargs", which glmbench writes itself as "chat_template_kwargs"`,
		`{"chat_template_kwargs": {"enable_thinking": false}}`: `--extra-body sets "chat_template_kwargs", which glmbench writes itself: the comparison sends {"enable_thinking": false}`,
		`{"n_predict": 64}`:                                    `--extra-body sets "n_predict", which glmbench writes itself: llama.cpp reads it before max_tokens`,
	} {
		code, _, stderr := execute(t, "--endpoint", "http://127.0.0.1:1/v1", "--model", "m", "--reference-endpoint", "http://127.0.0.1:1/v1",
			"--reference-model", "m", "--extra-body", extra, "--out", t.TempDir())
		if code != cmdutil.ExitBadInput || !strings.Contains(stderr, says) || strings.Count(strings.TrimSpace(stderr), "\n") != 0 {
			t.Errorf("%s: exit %d, stderr %q: want exit 2 in one line saying %q", extra, code, stderr, says)
		}
	}
}

// eval compare writes a whole report of its own (report.json, an emptied
// requests.jsonl, its evals.jsonl), so into a folder that holds a load, evals
// or conformance it threw them away. The truth: into a folder holding a
// run's report, compare is refused in one line, exit 2, before any request
// (both endpoints are fakes that count), and report.json is as it was, as
// it is where report.json does not read; into a folder holding only a
// comparison, it runs again.
func TestCompareIntoAFolderHoldingALoadExitsTwo(t *testing.T) {
	t.Parallel()
	a := endpointstest.Start(t, endpointstest.VLLM, endpointstest.Options{})
	b := endpointstest.Start(t, endpointstest.SGLang, endpointstest.Options{})
	dir := t.TempDir()
	old := &schema.Report{Schema: schema.ReportSchema, Label: a.Opts.Model, Nonce: "n",
		Phases: []schema.PhaseResult{{Phase: "single", BatchSize: 1}}}
	if err := reports.WriteDir(dir, old, nil); err != nil {
		t.Fatal(err)
	}
	before, _ := os.ReadFile(filepath.Join(dir, reports.ReportJSON))
	args := []string{"--endpoint", a.BaseURL(), "--model", a.Opts.Model, "--reference-endpoint", b.BaseURL(), "--reference-model", b.Opts.Model, "--limit", "1", "--tokens", "2", "--out", dir}
	code, _, stderr := execute(t, args...)
	if code != cmdutil.ExitBadInput || !strings.Contains(stderr, "holds a report of a load") || strings.Count(strings.TrimSpace(stderr), "\n") != 0 {
		t.Fatalf("exit %d, stderr %q: want exit 2 in one line", code, stderr)
	}
	if n := len(a.BodyFields()) + len(b.BodyFields()); n != 0 {
		t.Errorf("%d requests were sent", n)
	}
	if after, _ := os.ReadFile(filepath.Join(dir, reports.ReportJSON)); string(after) != string(before) {
		t.Errorf("report.json changed")
	}
	junk := t.TempDir()
	os.WriteFile(filepath.Join(junk, reports.ReportJSON), []byte("not json"), 0o644)
	args[len(args)-1] = junk
	if code, _, stderr := execute(t, args...); code != cmdutil.ExitBadInput || !strings.Contains(stderr, "cannot read") {
		t.Errorf("a report.json that does not read: exit %d, stderr %q: want exit 2, it kept", code, stderr)
	}
	if b, _ := os.ReadFile(filepath.Join(junk, reports.ReportJSON)); string(b) != "not json" {
		t.Errorf("the unreadable report.json was replaced")
	}
	again := t.TempDir()
	args[len(args)-1] = again
	for i := range 2 {
		if code, _, stderr := execute(t, args...); code != 0 && code != cmdutil.ExitFailed {
			t.Fatalf("comparison %d into its own folder: exit %d\n%s", i+1, code, stderr)
		}
	}
}
