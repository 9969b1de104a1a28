package eval

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/glmbench/glmbench/cmd/cmdutil"
	"github.com/glmbench/glmbench/endpoints/endpointstest"
	"github.com/glmbench/glmbench/reports"
	"github.com/glmbench/glmbench/reports/schema"
)

const thinkingOff = `{"chat_template_kwargs": {"enable_thinking": false}}`

// A bad or owned --extra-body is refused in one line, exit 2, before any
// request: the endpoint is a closed port, so a request would have ended
// otherwise (a transport failure, exit 1).
func TestABadOrOwnedExtraBodyExitsTwoBeforeAnyRequest(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ extra, says string }{
		{`{"temperature": 0.6}`, `--extra-body sets "temperature", which glmbench writes itself: the evals decode greedily at temperature 0`},
		{`{"stop": ["."], "top_k": 1}`, `--extra-body sets "stop", which glmbench writes itself: triviaqa stops its answer at a newline`},
		{`{"logprobs": true}`, `--extra-body sets "logprobs"`},
		// llama.cpp reads n_predict before max_tokens: it would replace an
		// echo's or an MMLU letter's 1-token cap there.
		{`{"n_predict": 512}`, `--extra-body sets "n_predict", which glmbench writes itself: llama.cpp reads it before max_tokens`},
		{`[1, 2]`, `--extra-body must be a JSON object`},
		{`{"top_k": 1} {}`, `--extra-body must be one JSON object`},
	} {
		code, _, errOut := run(t, "all", "--endpoint", "http://127.0.0.1:1/v1", "--model", "m", "--extra-body", tc.extra, "--out", t.TempDir())
		if code != cmdutil.ExitBadInput || !strings.Contains(errOut, tc.says) || strings.Count(strings.TrimSpace(errOut), "\n") != 0 {
			t.Errorf("--extra-body %s: exit %d, stderr %q; want exit 2 in one line saying %q", tc.extra, code, errOut, tc.says)
		}
	}
}

// The truth: with --extra-body, every generation request of `eval all`
// carries the object's field as given (compact), and report.json's
// options record the object; without it, no request carries the field.
func TestEvalExtraBodyGoesInEveryRequestAndTheReport(t *testing.T) {
	t.Parallel()
	p := endpointstest.Start(t, endpointstest.VLLM, endpointstest.Options{})
	dir := t.TempDir()
	code, _, errOut := run(t, "all", "--endpoint", p.BaseURL(), "--extra-body", thinkingOff, "--limit", "1", "--gen-tokens", "4", "--out", dir)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	bodies := p.BodyFields()
	if len(bodies) < 4 {
		t.Fatalf("%d generation requests", len(bodies))
	}
	for i, b := range bodies {
		if got := string(b["chat_template_kwargs"]); got != `{"enable_thinking":false}` {
			t.Fatalf("request %d of %d: chat_template_kwargs %s", i, len(bodies), got)
		}
	}
	if r := readReport(t, dir); r.Options.Extra() != `{"chat_template_kwargs":{"enable_thinking":false}}` || len(r.Evals) != 4 {
		t.Fatalf("options %+v, %d evals: want the extra body recorded", r.Options, len(r.Evals))
	}

	q := endpointstest.Start(t, endpointstest.VLLM, endpointstest.Options{})
	plain := t.TempDir()
	if code, _, errOut := run(t, "ppl", "--endpoint", q.BaseURL(), "--limit", "1", "--out", plain); code != 0 {
		t.Fatalf("without --extra-body: exit %d: %s", code, errOut)
	}
	for _, b := range q.BodyFields() {
		if _, ok := b["chat_template_kwargs"]; ok {
			t.Fatal("a request without --extra-body carried chat_template_kwargs")
		}
	}
	if r := readReport(t, plain); r.Options.Extra() != "" {
		t.Errorf("without --extra-body the report records %s", r.Options.Extra())
	}
}

// A report records one extra body for all its requests. The truth: into a
// folder whose ppl went without one, mmlu with --extra-body is refused
// (exit 2, naming ppl, no eval request sent), while ppl again with it
// replaces the only eval there and the report then records it; into a
// folder whose load went with it, an eval with the same one is taken.
func TestAnEvalIntoAReportOfAnotherExtraBodyExitsTwo(t *testing.T) {
	t.Parallel()
	p := endpointstest.Start(t, endpointstest.VLLM, endpointstest.Options{})
	dir := t.TempDir()
	old := &schema.Report{Schema: schema.ReportSchema, Label: p.Opts.Model, Phases: []schema.PhaseResult{},
		Evals: []schema.EvalResult{{Name: "ppl", Status: "ok", Metrics: map[string]float64{"ppl": 9}}}}
	if err := reports.WriteDir(dir, old, nil); err != nil {
		t.Fatal(err)
	}
	args := []string{"--endpoint", p.BaseURL(), "--model", p.Opts.Model, "--extra-body", thinkingOff, "--limit", "1", "--out", dir}
	code, _, errOut := run(t, append([]string{"mmlu"}, args...)...)
	if code != cmdutil.ExitBadInput || !strings.Contains(errOut, "whose ppl went with extra body none") || !strings.Contains(errOut, "--out") {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if n := len(p.BodyFields()); n != 0 {
		t.Fatalf("%d eval requests were sent", n)
	}
	if code, _, errOut := run(t, append([]string{"ppl"}, args...)...); code != 0 {
		t.Fatalf("ppl again: exit %d: %s", code, errOut)
	}
	if r := readReport(t, dir); r.Options.Extra() != `{"chat_template_kwargs":{"enable_thinking":false}}` || len(r.Evals) != 1 {
		t.Fatalf("%+v %+v", r.Options, r.Evals)
	}

	loaded := t.TempDir()
	run1 := &schema.Report{Schema: schema.ReportSchema, Label: p.Opts.Model, Nonce: "n", Phases: []schema.PhaseResult{{Phase: "single", BatchSize: 1}},
		Options: schema.Options{ExtraBody: []byte(`{"chat_template_kwargs":{"enable_thinking":false}}`)}}
	if err := reports.WriteDir(loaded, run1, nil); err != nil {
		t.Fatal(err)
	}
	if code, _, errOut := run(t, "ppl", "--endpoint", p.BaseURL(), "--model", p.Opts.Model, "--extra-body", thinkingOff, "--limit", "1", "--out", loaded); code != 0 {
		t.Fatalf("the load's own extra body: exit %d: %s", code, errOut)
	}
	code, _, errOut = run(t, "ppl", "--endpoint", p.BaseURL(), "--model", p.Opts.Model, "--limit", "1", "--out", loaded)
	if code != cmdutil.ExitBadInput || !strings.Contains(errOut, "--extra-body none") || !strings.Contains(errOut, "whose load went with extra body") {
		t.Fatalf("no extra body into the load's: exit %d: %s", code, errOut)
	}
}

// A key in the extra body reaches the endpoint and no output. The truth:
// OpenAI's fake refuses top_k, so every eval fails and its failure shows
// the request it sent; that request, report.json and stderr show the
// api_key field as "***" while every request carried the key itself.
func TestAFailedEvalsRequestShowsTheExtraBodyAsRecorded(t *testing.T) {
	t.Parallel()
	const key = "sk-eval-body-0123456789"
	p := endpointstest.Start(t, endpointstest.OpenAI, endpointstest.Options{})
	dir := t.TempDir()
	_, _, errOut := run(t, "triviaqa", "--endpoint", p.BaseURL(), "--model", p.Opts.Model, "--limit", "1",
		"--extra-body", `{"top_k": 20, "api_key": "`+key+`"}`, "--out", dir)
	bodies := p.BodyFields()
	if len(bodies) == 0 || strings.Contains(errOut, key) {
		t.Fatalf("%d requests; stderr %q", len(bodies), errOut)
	}
	for i, b := range bodies {
		if string(b["api_key"]) != `"`+key+`"` {
			t.Errorf("request %d carried api_key %s", i, b["api_key"])
		}
	}
	r := readReport(t, dir)
	if len(r.Evals) != 1 || r.Evals[0].Failure == nil || r.Evals[0].Failure.Request["api_key"] != "***" || r.Evals[0].Failure.Request["top_k"] != float64(20) {
		t.Fatalf("evals %+v: want triviaqa failed, its request's api_key shown as ***", r.Evals)
	}
	if b, err := os.ReadFile(filepath.Join(dir, reports.ReportJSON)); err != nil || strings.Contains(string(b), key) {
		t.Errorf("report.json holds the key (%v)", err)
	}
}

// eval compare's verdict is a section of the report too, made with the
// extra body the report records. The truth: into a folder whose report
// holds only an equivalence verdict made with thinking off, ppl without
// --extra-body is refused (exit 2, naming the comparison, no eval request
// sent), since writing none would misstate how the verdict was made;
// with the same --extra-body it is taken.
func TestAnEvalIntoAComparisonOfAnotherExtraBodyExitsTwo(t *testing.T) {
	t.Parallel()
	p := endpointstest.Start(t, endpointstest.VLLM, endpointstest.Options{})
	dir := t.TempDir()
	old := &schema.Report{Schema: schema.ReportSchema, Label: p.Opts.Model, Phases: []schema.PhaseResult{},
		Equivalence: &schema.Equivalence{Reference: "builtin"},
		Options:     schema.Options{ExtraBody: []byte(`{"chat_template_kwargs":{"enable_thinking":false}}`)}}
	if err := reports.WriteDir(dir, old, nil); err != nil {
		t.Fatal(err)
	}
	args := []string{"--endpoint", p.BaseURL(), "--model", p.Opts.Model, "--limit", "1", "--out", dir}
	code, _, errOut := run(t, append([]string{"ppl"}, args...)...)
	if code != cmdutil.ExitBadInput || !strings.Contains(errOut, "whose eval compare went with extra body") {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if n := len(p.BodyFields()); n != 0 {
		t.Fatalf("%d eval requests were sent", n)
	}
	if code, _, errOut := run(t, append([]string{"ppl", "--extra-body", thinkingOff}, args...)...); code != 0 {
		t.Fatalf("the verdict's own extra body: exit %d: %s", code, errOut)
	}
}

// A key the extra body carries under a credential's name (a gateway that
// reads it from the body) is hidden where the server quotes it back, as
// it is in the failure's request: a 400 that names the value (pydantic's
// validation errors quote a field's input) went into the failure's body
// and detail, report.json, report.md and stderr, only the endpoint's own
// key being redacted there. The truth: against a server that answers
// every request 400 quoting the body's api_key, triviaqa fails (exit 1)
// and neither stderr nor any file in --out holds the key, while its
// failure still shows the 400's message.
func TestAnExtraBodyKeyTheServerQuotesBackReachesNoOutput(t *testing.T) {
	t.Parallel()
	const key = "gw-body-key-0123456789"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body struct {
			APIKey string `json:"api_key"`
		}
		json.NewDecoder(r.Body).Decode(&body)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		fmt.Fprintf(w, `{"error":{"message":"[{'type': 'string_too_short', 'loc': ('body', 'api_key'), 'input': '%s'}]","type":"BadRequestError"}}`, body.APIKey)
	}))
	defer srv.Close()
	dir := t.TempDir()
	code, out, errOut := run(t, "triviaqa", "--endpoint", srv.URL+"/v1", "--model", "m", "--limit", "1",
		"--extra-body", `{"api_key": "`+key+`"}`, "--out", dir)
	if code != cmdutil.ExitFailed || strings.Contains(errOut+out, key) {
		t.Fatalf("exit %d; stdout %q stderr %q: want exit 1, the key nowhere", code, out, errOut)
	}
	files, _ := os.ReadDir(dir)
	for _, e := range files {
		if b, err := os.ReadFile(filepath.Join(dir, e.Name())); err != nil || strings.Contains(string(b), key) {
			t.Errorf("%s holds the key (%v)", e.Name(), err)
		}
	}
	r := readReport(t, dir)
	if len(r.Evals) != 1 || r.Evals[0].Failure == nil || !strings.Contains(r.Evals[0].Failure.Body, "string_too_short") || !strings.Contains(r.Evals[0].Failure.Detail, "string_too_short") {
		t.Errorf("evals %+v: want triviaqa's failure quoting the 400", r.Evals)
	}
}
