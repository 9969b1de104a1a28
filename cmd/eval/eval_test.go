package eval

import (
	"context"
	"encoding/json"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/glmbench/glmbench/cmd/cmdtest"
	"github.com/glmbench/glmbench/cmd/cmdutil"
	"github.com/glmbench/glmbench/evals"
	"github.com/glmbench/glmbench/reports"
	"github.com/glmbench/glmbench/reports/schema"
)

func parse(t *testing.T, args ...string) (*Options, error) { return cmdtest.Parse(NewCmdEval, args...) }

func TestFlagsParseIntoOptions(t *testing.T) {
	t.Parallel()
	o, err := parse(t, "all", "--endpoint", "http://h/v1", "--dataset", "ppl=a.raw", "--dataset", "mmlu=dir", "--shots", "s.json",
		"--limit", "7", "--window", "512", "--gen-tokens", "256", "--concurrency", "3", "--label", "L", "--out", "o", "--api-key-env", "K")
	if err != nil {
		t.Fatal(err)
	}
	if o.Eval != "all" || o.Endpoint.Endpoint != "http://h/v1" || strings.Join(o.Datasets, " ") != "ppl=a.raw mmlu=dir" || o.Shots != "s.json" ||
		o.Limit != 7 || o.Window != 512 || o.GenTokens != 256 || o.Concurrency != 3 || o.Label != "L" || o.Out != "o" || !o.Endpoint.APIKeyEnvSet {
		t.Fatalf("%+v", o)
	}
	def, err := parse(t, "ppl")
	if err != nil {
		t.Fatal(err)
	}
	if def.Window != 2048 || def.GenTokens != 2048 || def.Concurrency != 16 || def.Limit != 0 || def.ConnectTimeout != 10*time.Second ||
		def.RequestTimeout != 10*time.Minute || def.Endpoint.APIKeyEnvSet {
		t.Fatalf("defaults: %+v", def)
	}
	if _, err := parse(t); cmdutil.ExitCode(err) != cmdutil.ExitBadInput {
		t.Errorf("no eval named: %v", err)
	}
}

func TestDatasetFlagsSayWhichEvalTheyFeed(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		eval   string
		values []string
		want   map[string]string
		bad    string
	}{
		{"a bare path feeds the one eval", "mmlu", []string{"data/x=y"}, map[string]string{"mmlu": "data/x=y"}, ""},
		{"a named path for the one eval", "ppl", []string{"ppl=wiki.test.raw"}, map[string]string{"ppl": "wiki.test.raw"}, ""},
		{"all takes one named path per eval", "all", []string{"long-ppl=a", "triviaqa=b"}, map[string]string{"long-ppl": "a", "triviaqa": "b"}, ""},
		{"all refuses a bare path", "all", []string{"wiki.test.raw"}, nil, "NAME=PATH"},
		{"a path named for another eval", "ppl", []string{"mmlu=x"}, nil, "names mmlu"},
		{"one eval given twice", "all", []string{"ppl=a", "ppl=b"}, nil, "twice"},
		{"a name without a path", "all", []string{"ppl="}, nil, "no path"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := datasetPaths(tc.eval, tc.values)
			if tc.bad != "" {
				if cmdutil.ExitCode(err) != cmdutil.ExitBadInput || !strings.Contains(err.Error(), tc.bad) {
					t.Fatalf("%v, want bad input saying %q", err, tc.bad)
				}
				return
			}
			if err != nil || len(got) != len(tc.want) {
				t.Fatalf("%v %v", got, err)
			}
			for k, v := range tc.want {
				if got[k] != v {
					t.Fatalf("%v, want %v", got, tc.want)
				}
			}
		})
	}
}

// run runs eval with args and returns the exit code, stdout and stderr.
func run(t *testing.T, args ...string) (int, string, string) {
	f, out, errOut := cmdutil.TestFactory(context.Background(), map[string]string{})
	err := cmdtest.Execute(f, NewCmdEval, args...)
	return cmdutil.ExitCode(err), out.String(), errOut.String()
}

func readReport(t *testing.T, dir string) *schema.Report {
	t.Helper()
	r, err := reports.ReadReport(filepath.Join(dir, reports.ReportJSON))
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestEvalAllRunsTheFourOnTheBuiltinEngine(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	code, out, errOut := run(t, "all", "--window", "128", "--gen-tokens", "64", "--limit", "2", "--concurrency", "4", "--out", dir)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	r := readReport(t, dir)
	if r.Label != "builtin" || !r.Endpoint.Builtin || len(r.Evals) != 4 {
		t.Fatalf("%+v", r)
	}
	for i, name := range evals.Names() {
		e := r.Evals[i]
		if e.Name != name || e.Status != evals.StatusOK || len(e.Metrics) == 0 || e.Failure != nil || e.Dataset != evals.SampleOrigin {
			t.Errorf("eval %d: %+v", i, e)
		}
	}
	if r.Evals[0].N != 2 || r.Evals[1].Metrics["tokens"] != 128 || r.Evals[2].N != 8 || r.Evals[3].N != 2 {
		t.Errorf("--limit: %+v", r.Evals)
	}
	for _, want := range []string{"| ppl ", "| long-ppl ", "| mmlu ", "| triviaqa ", "worst_seg=", "exact_match="} {
		if !strings.Contains(out, want) {
			t.Errorf("stdout lacks %q:\n%s", want, out)
		}
	}
	if md := cmdtest.ReadFile(t, dir, reports.ReportMD); !strings.Contains(md, "## Evals") {
		t.Errorf("report.md:\n%s", md)
	}
}

// fakeEndpoint is a completions server whose echo answers the hosted
// endpoint's 500 while plain generations work; it counts requests.
func fakeEndpoint(t *testing.T) (string, *atomic.Int64) {
	t.Helper()
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		if r.URL.Path == "/v1/models" {
			io.WriteString(w, `{"object":"list","data":[{"id":"hosted-glm","object":"model"}]}`)
			return
		}
		var req map[string]any
		json.NewDecoder(r.Body).Decode(&req)
		if req["echo"] == true {
			w.WriteHeader(500)
			io.WriteString(w, `{"error":{"message":"ValidationError.__new__() missing 1 required positional argument: 'line_errors'"}}`)
			return
		}
		io.WriteString(w, `{"choices":[{"index":0,"text":" A","logprobs":{"tokens":[" A"],"token_logprobs":[-0.1],"top_logprobs":[{" A":-0.1," B":-3}]}}],"usage":{"prompt_tokens":9,"completion_tokens":1,"total_tokens":10}}`)
	}))
	t.Cleanup(srv.Close)
	return srv.URL + "/v1", &n
}

func TestAnEndpointWithoutEchoGivesNoScoreAndExitsOne(t *testing.T) {
	t.Parallel()
	url, _ := fakeEndpoint(t)
	dir := t.TempDir()
	code, out, errOut := run(t, "all", "--endpoint", url, "--out", dir, "--gen-tokens", "1", "--limit", "1")
	if code != cmdutil.ExitFailed || !strings.Contains(errOut, "ppl (echo_server_error)") {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	r := readReport(t, dir)
	byName := map[string]schema.EvalResult{}
	for _, e := range r.Evals {
		byName[e.Name] = e
	}
	ppl := byName["ppl"]
	if ppl.Status != evals.StatusUnsupported || ppl.Metrics != nil || ppl.Failure.Kind != "echo_server_error" || ppl.Failure.HTTPStatus != 500 ||
		!strings.Contains(ppl.Failure.Body, "line_errors") || ppl.Failure.Request["echo"] != true {
		t.Errorf("ppl %+v", ppl)
	}
	if m := byName["mmlu"]; m.Status != evals.StatusOK || m.Method != evals.MethodTopLogprobs || m.Failure == nil || m.Failure.Kind != "echo_server_error" {
		t.Errorf("mmlu %+v", m)
	}
	if r.Label != "hosted-glm" || !strings.Contains(out, "echo_server_error (HTTP 500)") {
		t.Errorf("label %s, stdout:\n%s", r.Label, out)
	}
}

func TestABadDataSetExitsTwoBeforeAnyRequest(t *testing.T) {
	t.Parallel()
	url, n := fakeEndpoint(t)
	dir := t.TempDir()
	bad := filepath.Join(dir, "docs.jsonl")
	os.WriteFile(bad, []byte("{\"text\":\"fine\"}\n{\"text\": 3}\n"), 0o644)
	code, _, errOut := run(t, "all", "--endpoint", url, "--dataset", "ppl="+bad, "--out", filepath.Join(dir, "out"))
	if code != cmdutil.ExitBadInput || !strings.Contains(errOut, bad+":2:") {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	code, _, errOut = run(t, "mmlu", "--endpoint", url, "--dataset", filepath.Join(dir, "nothing"))
	if code != cmdutil.ExitBadInput || !strings.Contains(errOut, "nothing") {
		t.Fatalf("a missing data set: exit %d: %s", code, errOut)
	}
	if n.Load() != 0 {
		t.Errorf("%d requests were sent", n.Load())
	}
	if _, err := os.Stat(filepath.Join(dir, "out")); err == nil {
		t.Error("a report was written")
	}
}

func TestEvalIntoAFolderReplacesOnlyItsOwnEntries(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	old := &schema.Report{Schema: schema.ReportSchema, Label: "mine", Phases: []schema.PhaseResult{{Phase: "single", BatchSize: 1}},
		Evals:       []schema.EvalResult{{Name: "mmlu", Status: "ok", Metrics: map[string]float64{"acc": 0.9}}, {Name: "triviaqa", Status: "failed"}},
		Conformance: []schema.CheckResult{{ID: "c1", Status: "pass"}}}
	if err := reports.WriteDir(dir, old, nil); err != nil {
		t.Fatal(err)
	}
	code, _, errOut := run(t, "triviaqa", "--label", "mine", "--limit", "2", "--out", dir)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	r := readReport(t, dir)
	if len(r.Phases) != 1 || len(r.Conformance) != 1 || len(r.Evals) != 2 || r.Evals[0].Metrics["acc"] != 0.9 ||
		r.Evals[1].Name != "triviaqa" || r.Evals[1].Status != "ok" {
		t.Fatalf("%+v", r)
	}
}

func TestEvalIntoAFolderOfAnotherLabelExitsTwoBeforeAnyEvalRequest(t *testing.T) {
	t.Parallel()
	url, n := fakeEndpoint(t)
	dir := t.TempDir()
	old := &schema.Report{Schema: schema.ReportSchema, Label: "mine", Phases: []schema.PhaseResult{{Phase: "single", BatchSize: 1}}}
	if err := reports.WriteDir(dir, old, nil); err != nil {
		t.Fatal(err)
	}
	// The endpoint's model names the label (hosted-glm): not the folder's.
	code, _, errOut := run(t, "ppl", "--endpoint", url, "--out", dir)
	if code != cmdutil.ExitBadInput || !strings.Contains(errOut, `"mine"`) || !strings.Contains(errOut, "--out") {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if got := n.Load(); got > 2 { // the model list and the readiness route (GET /health) only
		t.Errorf("%d requests were sent", got)
	}
	if r := readReport(t, dir); r.Label != "mine" || len(r.Phases) != 1 || len(r.Evals) != 0 {
		t.Errorf("the folder's report was changed: %+v", r)
	}
}

func TestLinesSayWhatHappened(t *testing.T) {
	t.Parallel()
	r := schema.EvalResult{Name: "ppl", Status: "unsupported", Method: "echo",
		Failure: &schema.EvalFailure{Kind: "echo_rejected", HTTPStatus: 400, Detail: "HTTP 400: no"}}
	if got := resultLine(&r); got != "ppl unsupported (echo); echo_rejected (HTTP 400): HTTP 400: no" {
		t.Errorf("%q", got)
	}
	ok := schema.EvalResult{Name: "ppl", Status: "ok", Metrics: map[string]float64{"tokens": 100, "ppl": 2.9233, "bits_per_byte": 1.2}}
	if got := metricsText(&ok); got != "ppl=2.9233 bits_per_byte=1.2 tokens=100" {
		t.Errorf("%q", got)
	}
	p := &evals.Progress{}
	if got := progressLine(p, true); !strings.Contains(got, "[                        ] 0/0") {
		t.Errorf("%q", got)
	}
}

// llamaCppEndpoint answers as llama.cpp's server does (tools/server): echo
// on /v1/completions is a 500 "Only no echo is supported"; /v1/completions
// ignores logprobs (null); chat fills choices[0].logprobs.content, each
// token {id, token, bytes, logprob, top_logprobs}. Every answer is " A" /
// "A" with logprob −0.1.
func llamaCppEndpoint(t *testing.T) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req map[string]any
		json.NewDecoder(r.Body).Decode(&req)
		switch {
		case r.URL.Path == "/v1/models":
			io.WriteString(w, `{"object":"list","data":[{"id":"llama","object":"model"}]}`)
		case r.URL.Path == "/v1/completions" && req["echo"] == true:
			w.WriteHeader(500)
			io.WriteString(w, `{"error":{"code":500,"message":"Only no echo is supported","type":"server_error"}}`)
		case r.URL.Path == "/v1/completions":
			io.WriteString(w, `{"choices":[{"text":" A","index":0,"logprobs":null,"finish_reason":"length"}],"object":"text_completion","usage":{"completion_tokens":1,"prompt_tokens":9,"total_tokens":10}}`)
		case r.URL.Path == "/v1/chat/completions":
			lp := ""
			if req["logprobs"] == true {
				lp = `,"logprobs":{"content":[{"id":32,"token":"A","bytes":[65],"logprob":-0.1,"top_logprobs":[{"id":32,"token":"A","bytes":[65],"logprob":-0.1},{"id":33,"token":"B","bytes":[66],"logprob":-3}]}]}`
			}
			io.WriteString(w, `{"choices":[{"finish_reason":"length","index":0,"message":{"role":"assistant","content":"A"}`+lp+`}],"object":"chat.completion","usage":{"completion_tokens":1,"prompt_tokens":9,"total_tokens":10}}`)
		default:
			w.WriteHeader(404)
		}
	}))
	t.Cleanup(srv.Close)
	return srv.URL + "/v1"
}

func TestOnLlamaCppEvalsTakeTheChatRouteAndSayWhich(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	code, out, errOut := run(t, "all", "--endpoint", llamaCppEndpoint(t), "--out", dir, "--gen-tokens", "1", "--limit", "1")
	// ppl has no chat route: it is the one eval without a score.
	if code != cmdutil.ExitFailed || !strings.Contains(errOut, "ppl (echo_server_error)") || strings.Contains(errOut, "long-ppl (") {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	methods := map[string]string{}
	for _, e := range readReport(t, dir).Evals {
		methods[e.Name] = e.Status + " " + e.Method
	}
	want := map[string]string{"ppl": "unsupported echo", "long-ppl": "ok chat-logprobs", "mmlu": "ok chat-top-logprobs", "triviaqa": "ok generate"}
	for k, w := range want {
		if methods[k] != w {
			t.Errorf("%s: %q, want %q", k, methods[k], w)
		}
	}
	if !regexp.MustCompile(`\| long-ppl +\| ok +\| chat-logprobs +\|`).MatchString(out) {
		t.Errorf("stdout does not say the route:\n%s", out)
	}
}

func TestEvalWritesItsItemsBesideTheReportAndARerunReplacesItsOwn(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	count := func() map[string]int {
		t.Helper()
		in := cmdtest.Load(t, dir)
		n := map[string]int{}
		for _, it := range in.Items {
			n[it.Eval]++
		}
		return n
	}
	for _, step := range []struct {
		args []string
		want map[string]int
	}{
		// The sample has four subjects: --limit 1 is one question each.
		{[]string{"mmlu", "--limit", "1"}, map[string]int{"mmlu": 4}},
		{[]string{"triviaqa", "--limit", "2"}, map[string]int{"mmlu": 4, "triviaqa": 2}},
		// mmlu again, two each: its four lines become eight, triviaqa's stay.
		{[]string{"mmlu", "--limit", "2"}, map[string]int{"mmlu": 8, "triviaqa": 2}},
	} {
		code, _, errOut := run(t, append(step.args, "--out", dir)...)
		if code != 0 {
			t.Fatalf("%v: exit %d: %s", step.args, code, errOut)
		}
		if got := count(); !maps.Equal(got, step.want) {
			t.Errorf("after %v: items per eval %v, want %v", step.args, got, step.want)
		}
	}
	r := readReport(t, dir)
	if e := reports.FindEval(r, "mmlu"); e == nil || e.N != 8 {
		t.Errorf("report's mmlu %+v, want n 8 as its items", e)
	}
}
