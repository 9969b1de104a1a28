package run

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/glmbench/glmbench/cmd/cmdtest"
	"github.com/glmbench/glmbench/cmd/cmdutil"
	"github.com/glmbench/glmbench/endpoints/endpointstest"
	"github.com/glmbench/glmbench/engine/enginetest"
	"github.com/glmbench/glmbench/reports"
	"github.com/glmbench/glmbench/reports/gate"
	"github.com/glmbench/glmbench/reports/schema"
	"github.com/glmbench/glmbench/reports/threshold"
)

const thinkingOff = `{"top_p": 0.9, "chat_template_kwargs": {"enable_thinking": false}}`

// thinkingOffJSON is thinkingOff as the report records it: compact, its
// fields in name order.
const thinkingOffJSON = `{"chat_template_kwargs":{"enable_thinking":false},"top_p":0.9}`

// --extra-body's fields reach every request vLLM's fake receives, the
// calibration probes' included, beside exactly the fields a run without it
// sends; the report records the object and report.md shows it.
func TestExtraBodyFieldsGoInEveryRequestAndTheReport(t *testing.T) {
	t.Parallel()
	fieldSets := func(extra ...string) (map[string]bool, *reports.Input, string) {
		p := endpointstest.Start(t, endpointstest.VLLM, endpointstest.Options{})
		dir := t.TempDir()
		in := runOK(t, dir, append([]string{"--endpoint", p.BaseURL(), "--phase", "p=3/40/6", "--no-metrics"}, extra...)...)
		bodies := p.BodyFields()
		if len(bodies) != p.Requests("POST /v1/chat/completions") || len(bodies) < 3+2 {
			t.Fatalf("%d bodies for %d chat requests: want the 3 load requests and the probes", len(bodies), p.Requests("POST /v1/chat/completions"))
		}
		names := map[string]bool{}
		for i, b := range bodies {
			if len(extra) > 0 && (string(b["top_p"]) != "0.9" || string(b["chat_template_kwargs"]) != `{"enable_thinking":false}`) {
				t.Errorf("request %d carried top_p %s, chat_template_kwargs %s", i, b["top_p"], b["chat_template_kwargs"])
			}
			for k := range b {
				names[k] = true
			}
		}
		return names, in, cmdtest.ReadFile(t, dir, reports.ReportMD)
	}
	plain, in, _ := fieldSets()
	if in.Report.Options.ExtraBody != nil {
		t.Errorf("a run without --extra-body records %s", in.Report.Options.ExtraBody)
	}
	extra, in, md := fieldSets("--extra-body", thinkingOff)
	delete(extra, "top_p")
	delete(extra, "chat_template_kwargs")
	if len(extra) != len(plain) {
		t.Errorf("fields besides the extra body %v, without it %v", extra, plain)
	}
	for k := range plain {
		if !extra[k] {
			t.Errorf("with --extra-body the bodies lost %s", k)
		}
	}
	if got := in.Report.Options.Extra(); got != thinkingOffJSON {
		t.Errorf("options.extra_body %s, want %s", got, thinkingOffJSON)
	}
	if !strings.Contains(md, "- extra body (--extra-body): `"+thinkingOffJSON+"`") {
		t.Errorf("report.md does not show the extra body:\n%s", md)
	}
}

// What --extra-body may not be is said in one line, exit 2, before the
// endpoint is asked anything (port 1 answers nothing).
func TestABadExtraBodyExitsTwoInOneLineBeforeTheEndpoint(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ body, want string }{
		{`{"max_tokens": 5}`, `--extra-body sets "max_tokens", which glmbench writes itself: the phase's OUT is the cap`},
		{`{"stream": false}`, `--extra-body sets "stream", which glmbench writes itself: every request streams`},
		{`{"ignore_eos": false}`, `--extra-body sets "ignore_eos", which glmbench writes itself: --ignore-eos sets it`},
		{`{"n": 2}`, `--extra-body sets "n"`},
		// llama.cpp reads n_predict before max_tokens, so it would replace
		// the phase's cap there.
		{`{"n_predict": 512}`, `--extra-body sets "n_predict", which glmbench writes itself: llama.cpp reads it before max_tokens`},
		{`{"Max_Tokens": 5}`, `--extra-body sets "Max_Tokens", which glmbench writes itself as "max_tokens"`},
		{`temperature=0.6`, `--extra-body must be a JSON object such as '{"temperature": 0.6}', not "temperature=0.6"`},
		{`[{"top_p": 1}]`, `--extra-body must be a JSON object`},
		{`null`, `--extra-body must be a JSON object`},
		{`{"top_p": 1} {"top_k": 2}`, `--extra-body must be one JSON object`},
		{`{"top_p": `, `--extra-body must be a JSON object`},
	} {
		code, stderr := execute(t, context.Background(), "--endpoint", "http://127.0.0.1:1/v1", "--phase", "p=1/8/2", "--extra-body", tc.body)
		if code != cmdutil.ExitBadInput || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, tc.want) || strings.Contains(stderr, "127.0.0.1:1") {
			t.Errorf("--extra-body %s: exit %d, stderr %q; want exit 2 in one line saying %q", tc.body, code, stderr, tc.want)
		}
	}
}

// OpenAI refuses a parameter it does not know ("Unrecognized request
// argument supplied: top_k"): the first probe stops the run with exit 2,
// naming --extra-body as what added it, after that one request.
func TestAFieldTheEndpointRefusesIsNamedAsTheExtraBodys(t *testing.T) {
	t.Parallel()
	p := endpointstest.Start(t, endpointstest.OpenAI, endpointstest.Options{})
	code, stderr := execute(t, context.Background(), "--endpoint", p.BaseURL(), "--model", p.Opts.Model, "--phase", "p=3/40/6",
		"--ignore-eos=false", "--no-metrics", "--extra-body", `{"top_k": 40, "top_p": 0.9}`, "--out", t.TempDir())
	if code != cmdutil.ExitBadInput || !strings.Contains(stderr, "Unrecognized request argument supplied: top_k") ||
		!strings.Contains(stderr, "the endpoint refuses a field: --extra-body adds top_k") || strings.Contains(stderr, "adds top_p") {
		t.Fatalf("exit %d, stderr %q: want exit 2 naming top_k, and only it, as --extra-body's", code, stderr)
	}
	if n := p.Requests("POST /v1/chat/completions"); n != 1 {
		t.Errorf("%d chat requests, want the one refused probe", n)
	}
}

// The built-in engine reads chat_template_kwargs.enable_thinking as GLM-5's
// template does: by default the prompt ends with <think>, so what the model
// generates streams as reasoning_content; with enable_thinking false it
// ends with <think></think> and every token streams as content. So the
// default run's records have reasoning events and the extra body's none,
// and calibration lands both on the phase's 64 prompt tokens.
func TestEnableThinkingFalseReachesTheEnginesTemplate(t *testing.T) {
	t.Parallel()
	e := enginetest.Start(t)
	_, thinking, _ := runEngine(t, e, "--phase", "p=2/64/8")
	_, plain, _ := runEngine(t, e, "--phase", "p=2/64/8", "--extra-body", `{"chat_template_kwargs": {"enable_thinking": false}}`)
	for _, r := range thinking {
		if r.ReasoningEvents == 0 || r.Prompt != 64 {
			t.Errorf("default request %d: %d reasoning events, %d prompt tokens; want reasoning streamed, 64 tokens", r.I, r.ReasoningEvents, r.Prompt)
		}
	}
	for _, r := range plain {
		if r.ReasoningEvents != 0 || len(r.Events) == 0 || r.Prompt != 64 {
			t.Errorf("enable_thinking false, request %d: %d reasoning of %d events, %d prompt tokens; want content only, 64 tokens", r.I, r.ReasoningEvents, len(r.Events), r.Prompt)
		}
	}
}

// A baseline run without an extra body and a run with one send different
// requests: the gate refuses to compare them, and run --baseline says so
// before any load; the same extra body gates as usual.
func TestTheGateRefusesRunsOfDifferentExtraBodies(t *testing.T) {
	t.Parallel()
	p := endpointstest.Start(t, endpointstest.VLLM, endpointstest.Options{})
	dir := t.TempDir()
	base := []string{"--endpoint", p.BaseURL(), "--phase", "p=2/32/4", "--no-metrics"}
	runOK(t, dir, base...)
	baseline := filepath.Join(dir, reports.ReportJSON)
	before := p.TotalRequests()
	code, stderr := execute(t, context.Background(), append(base, "--extra-body", thinkingOff, "--baseline", baseline, "--out", t.TempDir())...)
	want := "phase p's load goes to /chat/completions with --extra-body " + thinkingOffJSON + " here but went to /chat/completions in the baseline"
	if code != cmdutil.ExitBadInput || !strings.Contains(stderr, want) || strings.Count(stderr, "\n") != 1 {
		t.Fatalf("exit %d, stderr %q; want exit 2 saying %q", code, stderr, want)
	}
	if p.TotalRequests() != before {
		t.Errorf("%d requests sent before the refusal", p.TotalRequests()-before)
	}
	dir2 := t.TempDir()
	runOK(t, dir2, append(base, "--extra-body", thinkingOff)...)
	current := filepath.Join(dir2, reports.ReportJSON)
	ths, err := threshold.ParseAll([]string{"p.out_tput > -50%"})
	if err != nil {
		t.Fatal(err)
	}
	for _, pair := range [][2]string{{baseline, current}, {current, baseline}} {
		b, c := load(t, pair[0]), load(t, pair[1])
		_, err := gate.Evaluate(b, c, ths, gate.Options{})
		if err == nil || !strings.Contains(err.Error(), "extra body fields (--extra-body) send different requests") {
			t.Errorf("gate %s against %s: %v", pair[1], pair[0], err)
		}
	}
	if _, err := gate.Evaluate(load(t, current), load(t, current), ths, gate.Options{}); err != nil {
		t.Errorf("one extra body against itself: %v", err)
	}
	// The baseline's extra body is read back from its report.json, where
	// it is indented: the same fields still gate (exit 0, or 99 where the
	// fake's sub-millisecond timings cross a threshold).
	code, stderr = execute(t, context.Background(), append(base, "--extra-body", `{"top_p":0.9,  "chat_template_kwargs":{"enable_thinking":false}}`, "--baseline", current, "--out", t.TempDir())...)
	if code != cmdutil.ExitOK && code != cmdutil.ExitThresholds || !strings.Contains(stderr, "glmbench: gate") {
		t.Errorf("the same extra body against its baseline: exit %d, stderr %q; want it gated", code, stderr)
	}
}

// Agents send the coordinator's extra body: every request vLLM's fake
// receives, the agents' and the probes', carries it.
func TestAgentsSendTheExtraBody(t *testing.T) {
	t.Parallel()
	p := endpointstest.Start(t, endpointstest.VLLM, endpointstest.Options{})
	in := runThroughAgents(t, p, "--extra-body", thinkingOff)
	agents := map[string]int{}
	for _, r := range in.Records {
		agents[r.Agent]++
	}
	bodies := p.BodyFields()
	if len(agents) != 2 || len(in.Records) != 6 || len(bodies) < 6+2 || in.Report.Options.Extra() != thinkingOffJSON {
		t.Fatalf("requests by agent %v, %d records, %d bodies, extra body %s", agents, len(in.Records), len(bodies), in.Report.Options.Extra())
	}
	for i, b := range bodies {
		if string(b["top_p"]) != "0.9" || string(b["chat_template_kwargs"]) != `{"enable_thinking":false}` {
			t.Errorf("request %d carried top_p %s, chat_template_kwargs %s", i, b["top_p"], b["chat_template_kwargs"])
		}
	}
}

func load(t *testing.T, path string) []*schema.Report {
	t.Helper()
	in := cmdtest.Load(t, path)
	return []*schema.Report{in.Report}
}

// A gateway that reads its key from the body gets it in every request,
// but no file of the report and no line of stderr shows it: the record
// has "***" for the value of api_key. A run with another key sends the
// same requests otherwise, so it gates against the first (exit 0, or 99
// where the fake's timings cross a threshold), not exit 2.
func TestAKeyInTheExtraBodyReachesTheServerAndNoOutput(t *testing.T) {
	t.Parallel()
	const key = "sk-body-0123456789abcdef"
	p := endpointstest.Start(t, endpointstest.VLLM, endpointstest.Options{})
	dir := t.TempDir()
	base := []string{"--endpoint", p.BaseURL(), "--phase", "p=2/32/4", "--no-metrics"}
	code, stderr := execute(t, context.Background(), append(base, "--extra-body", `{"api_key": "`+key+`", "top_p": 0.9}`, "--out", dir)...)
	if code != cmdutil.ExitOK || strings.Contains(stderr, key) {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
	for i, b := range p.BodyFields() {
		if string(b["api_key"]) != `"`+key+`"` {
			t.Errorf("request %d carried api_key %s", i, b["api_key"])
		}
	}
	entries, err := os.ReadDir(dir)
	if err != nil || len(entries) == 0 {
		t.Fatal(entries, err)
	}
	for _, e := range entries {
		if b, err := os.ReadFile(filepath.Join(dir, e.Name())); err != nil || strings.Contains(string(b), key) {
			t.Errorf("%s holds the key (%v)", e.Name(), err)
		}
	}
	in, err := reports.Load(filepath.Join(dir, reports.ReportJSON))
	if err != nil || in.Report.Options.Extra() != `{"api_key":"***","top_p":0.9}` {
		t.Fatalf("%v: extra body recorded as %s", err, in.Report.Options.Extra())
	}
	code, stderr = execute(t, context.Background(), append(base, "--extra-body", `{"api_key": "sk-another-key-9876543210", "top_p": 0.9}`,
		"--baseline", filepath.Join(dir, reports.ReportJSON), "--out", t.TempDir())...)
	if code != cmdutil.ExitOK && code != cmdutil.ExitThresholds || !strings.Contains(stderr, "glmbench: gate") {
		t.Errorf("another key against the baseline: exit %d, stderr %q; want it gated", code, stderr)
	}
}

// The endpoint's own API key put in the extra body under an ordinary name
// (a gateway reading it from "user", say) is hidden as the key is
// everywhere: the requests carry it, report.json records "***", and run
// --baseline against that report, which resolves the key before opening
// the endpoint, gates it rather than refusing it as another body (a
// refusal would print the key).
func TestTheEndpointsKeyInTheExtraBodyIsHiddenUnderAnyName(t *testing.T) {
	t.Parallel()
	const key = "sk-endpoint-key-0123456789"
	p := endpointstest.Start(t, endpointstest.VLLM, endpointstest.Options{APIKey: key})
	execute := func(args ...string) (int, string) {
		f, _, errOut := cmdutil.TestFactory(context.Background(), map[string]string{"OPENAI_API_KEY": key})
		return cmdutil.ExitCode(cmdtest.Execute(f, NewCmdRun, args...)), errOut.String()
	}
	dir := t.TempDir()
	args := []string{"--endpoint", p.BaseURL(), "--phase", "p=2/32/4", "--no-metrics", "--extra-body", `{"user": "` + key + `"}`}
	code, stderr := execute(append(args, "--out", dir)...)
	if code != cmdutil.ExitOK || strings.Contains(stderr, key) {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
	for i, b := range p.BodyFields() {
		if string(b["user"]) != `"`+key+`"` {
			t.Errorf("request %d carried user %s", i, b["user"])
		}
	}
	in, err := reports.Load(filepath.Join(dir, reports.ReportJSON))
	if err != nil || in.Report.Options.Extra() != `{"user":"***"}` {
		t.Fatalf("%v: extra body recorded as %s", err, in.Report.Options.Extra())
	}
	code, stderr = execute(append(args, "--baseline", filepath.Join(dir, reports.ReportJSON), "--out", t.TempDir())...)
	if code != cmdutil.ExitOK && code != cmdutil.ExitThresholds || !strings.Contains(stderr, "glmbench: gate") || strings.Contains(stderr, key) {
		t.Errorf("against its own baseline: exit %d, stderr %q; want it gated, the key never shown", code, stderr)
	}
}

// A gateway's key sent in the body under a credential's name, quoted back
// by a server's validation error (pydantic quotes a field's input, as
// Mistral's 422 extra_forbidden does), reaches no output: the first probe
// is refused, and the one line that says so shows "***" where the key was.
func TestAKeyInTheBodyQuotedBackInAnErrorIsHidden(t *testing.T) {
	t.Parallel()
	const key = "sk-gateway-0123456789abcdef"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v1/models" {
			w.Write([]byte(`{"object":"list","data":[{"id":"m","object":"model"}]}`))
			return
		}
		var body map[string]any
		json.NewDecoder(r.Body).Decode(&body)
		w.WriteHeader(http.StatusUnprocessableEntity)
		json.NewEncoder(w).Encode(map[string]any{"detail": []any{map[string]any{"type": "extra_forbidden", "loc": []string{"body", "gateway_api_key"}, "msg": "Extra inputs are not permitted", "input": body["gateway_api_key"]}}})
	}))
	defer srv.Close()
	code, stderr := execute(t, context.Background(), "--endpoint", srv.URL+"/v1", "--phase", "p=1/32/4", "--no-metrics",
		"--extra-body", `{"gateway_api_key": "`+key+`"}`, "--out", t.TempDir())
	if code != cmdutil.ExitBadInput || strings.Contains(stderr, key) || !strings.Contains(stderr, "***") {
		t.Fatalf("exit %d, stderr %q: want exit 2, the key shown as ***", code, stderr)
	}
}
