package reports

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/glmbench/glmbench/internal/badinput"
	"github.com/glmbench/glmbench/reports/schema"
)

// report.json writes the extra body indented as an object; read back,
// Options.Extra gives it compact again, so report.md, the comparison and
// the gate see one text however often it was written and read. A body
// holding a backtick still makes one code span in report.md.
func TestTheExtraBodyReadsBackAsItWasRecorded(t *testing.T) {
	t.Parallel()
	rep := sampleReport()
	rep.Options.ExtraBody = json.RawMessage(`{"chat_template_kwargs":{"enable_thinking":false},"stop":["` + "``" + `"]}`)
	dir := t.TempDir()
	var js bytes.Buffer
	if err := WriteJSON(&js, rep); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(js.String(), "\"extra_body\": {\n") {
		t.Errorf("report.json does not hold the extra body as an object:\n%s", js.String())
	}
	if err := os.WriteFile(filepath.Join(dir, ReportJSON), js.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	in, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := in.Report.Options.Extra(), string(rep.Options.ExtraBody); got != want {
		t.Errorf("read back: %s, want %s", got, want)
	}
	var md bytes.Buffer
	if err := WriteMarkdown(&md, in.Report); err != nil {
		t.Fatal(err)
	}
	if want := "- extra body (--extra-body): ```" + string(rep.Options.ExtraBody) + "```\n"; !strings.Contains(md.String(), want) {
		t.Errorf("report.md lacks %q:\n%s", want, md.String())
	}
}

// Runs of one label are merged, so runs whose requests carried different
// extra bodies are refused, naming both; a column with one names it
// beside its endpoint, and one without says nothing more.
func TestOneLabelsRunsShareTheirExtraBody(t *testing.T) {
	t.Parallel()
	plain, thinkOff, thinkOff2 := sampleReport(), sampleReport(), sampleReport()
	thinkOff.Options.ExtraBody = json.RawMessage(`{"chat_template_kwargs":{"enable_thinking":false}}`)
	thinkOff2.Options.ExtraBody = json.RawMessage("{\n  \"chat_template_kwargs\": {\"enable_thinking\": false}\n}")
	_, err := Compare([]*Input{{Report: plain, Path: "a"}, {Report: thinkOff, Path: "b"}})
	if !badinput.Is(err) || !strings.Contains(err.Error(), `carried no extra body in a but extra body {"chat_template_kwargs":{"enable_thinking":false}} in b`) {
		t.Errorf("%v: want bad input naming both", err)
	}
	c, err := Compare([]*Input{{Report: thinkOff, Path: "b"}, {Report: thinkOff2, Path: "c"}})
	if err != nil || string(c.Columns[0].ExtraBody) != `{"chat_template_kwargs":{"enable_thinking":false}}` {
		t.Fatalf("one extra body, written two ways: %v, %+v", err, c)
	}
	plain.Label = "plain"
	c, err = Compare([]*Input{{Report: plain, Path: "a"}, {Report: thinkOff, Path: "b"}})
	if err != nil {
		t.Fatal(err)
	}
	var md bytes.Buffer
	if err := WriteComparisonMarkdown(&md, c); err != nil {
		t.Fatal(err)
	}
	if strings.Count(md.String(), `(extra body {"chat_template_kwargs":{"enable_thinking":false}})`) != 1 || strings.Count(md.String(), "extra body") != 1 {
		t.Errorf("want exactly the second column marked:\n%s", md.String())
	}
}

// GLM's and ChatML's stop strings hold "|" ("<|user|>"): in the sources
// table of a comparison each row still has its five cells, the pipes of
// the extra body escaped, so every line of the table has six unescaped |.
func TestAnExtraBodysPipesStayInTheirCell(t *testing.T) {
	t.Parallel()
	stops := sampleReport()
	stops.Options.ExtraBody = json.RawMessage(`{"stop":["<|user|>","<|observation|>"]}`)
	c, err := Compare([]*Input{{Report: stops, Path: "a|b"}})
	if err != nil {
		t.Fatal(err)
	}
	var md bytes.Buffer
	if err := WriteComparisonMarkdown(&md, c); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(md.String(), "\n")
	for i, l := range lines {
		if !strings.HasPrefix(l, "| label |") {
			continue
		}
		for _, row := range lines[i : i+3] {
			if n := strings.Count(row, "|") - strings.Count(row, `\|`); n != 6 {
				t.Errorf("%d unescaped | in %q, want 6", n, row)
			}
		}
		if !strings.Contains(lines[i+2], `<\|user\|>`) {
			t.Errorf("the row lost the stop string: %q", lines[i+2])
		}
		return
	}
	t.Fatalf("no sources table:\n%s", md.String())
}

// One label's runs whose long extra bodies differ only in their last
// field are refused in a short line showing each side's value, cut at a
// character; a column shows its long extra body cut short.
func TestOneLabelsLongExtraBodiesAreToldApart(t *testing.T) {
	t.Parallel()
	long := func(topP string) json.RawMessage {
		return json.RawMessage(`{"stop":["` + strings.Repeat("終", 100) + `"],"top_p":` + topP + `}`)
	}
	a, b := sampleReport(), sampleReport()
	a.Options.ExtraBody, b.Options.ExtraBody = long("0.9"), long("0.95")
	_, err := Compare([]*Input{{Report: a, Path: "a"}, {Report: b, Path: "b"}})
	msg := fmt.Sprint(err)
	if !badinput.Is(err) || len(msg) > 600 || !utf8.ValidString(msg) || !strings.Contains(msg, `"top_p":0.9} in a`) || !strings.Contains(msg, `"top_p":0.95} in b`) {
		t.Errorf("%d bytes: %s", len(msg), msg)
	}
	c, err := Compare([]*Input{{Report: a, Path: "a"}})
	if err != nil {
		t.Fatal(err)
	}
	if col := columnEndpoint(c.Columns[0]); len(col) > 200 || !utf8.ValidString(col) || !strings.Contains(col, `{"stop":["終`) {
		t.Errorf("%d bytes: %s", len(col), col)
	}
}

// A report's extra_body of null or {} (written by hand or by another
// tool) is no extra body, so it gates and merges with a run without one;
// one object written in two orders reads back as one text.
func TestAnEmptyExtraBodyReadsBackAsNone(t *testing.T) {
	t.Parallel()
	extra := func(field string) string {
		var o schema.Options
		if err := json.Unmarshal([]byte(`{"extra_body": `+field+`}`), &o); err != nil {
			t.Fatal(err)
		}
		return o.Extra()
	}
	for _, none := range []string{"null", "{}", "{ \n }"} {
		if got := extra(none); got != "" {
			t.Errorf("extra_body %s reads back as %q", none, got)
		}
	}
	if a, b := extra(`{"k": {"y": 1, "x": 2e0}, "a": "\u00e9"}`), extra(`{"a": "é", "k": {"x": 2e0, "y": 1}}`); a != b || a != `{"a":"é","k":{"x":2e0,"y":1}}` {
		t.Errorf("one object two ways: %s, %s", a, b)
	}
}

// report.md names the extra body of an evals-only report too (no load:
// no nonce), and how the endpoint's certificate was verified: not at all
// with --insecure, against a CA file beside the system's roots, or (the
// default) with no line.
func TestReportMDNamesTheExtraBodyOfEvalsAndTheTLSTrust(t *testing.T) {
	t.Parallel()
	md := func(edit func(*schema.Report)) string {
		rep := sampleReport()
		edit(rep)
		var b bytes.Buffer
		if err := WriteMarkdown(&b, rep); err != nil {
			t.Fatal(err)
		}
		return b.String()
	}
	evals := md(func(r *schema.Report) {
		r.Nonce, r.Phases = "", nil
		r.Options.ExtraBody = json.RawMessage(`{"reasoning_effort":"low"}`)
	})
	if !strings.Contains(evals, "- extra body (--extra-body): `{\"reasoning_effort\":\"low\"}`\n") {
		t.Errorf("an evals-only report.md lacks its extra body:\n%s", evals)
	}
	for _, tc := range []struct {
		edit func(*schema.Report)
		want string
	}{
		{func(r *schema.Report) { r.Endpoint.Insecure = true }, "- TLS: the certificate was **not** verified (--insecure)\n"},
		{func(r *schema.Report) { r.Endpoint.CACert = "/etc/ca/internal.pem" }, "- TLS: verified against `/etc/ca/internal.pem` beside the system's roots\n"},
		{func(r *schema.Report) { r.Endpoint.ClientCert = "/etc/tls/me.pem" }, "- TLS client certificate: `/etc/tls/me.pem`\n"},
		{func(r *schema.Report) {}, ""},
	} {
		got := md(tc.edit)
		if tc.want == "" && strings.Contains(got, "- TLS:") || tc.want != "" && !strings.Contains(got, tc.want) {
			t.Errorf("want %q:\n%s", tc.want, got)
		}
	}
}

// An evals-only report's extra body is its column's too: one label's eval
// runs with and without one are refused as a load's are, and a
// conformance report, which sends none of it, merges with either.
func TestOneLabelsEvalRunsShareTheirExtraBody(t *testing.T) {
	t.Parallel()
	evalsOnly := func(extra string) *schema.Report {
		r := sampleReport()
		r.Nonce, r.Phases = "", nil
		r.Evals = []schema.EvalResult{{Name: "mmlu", Status: "ok", Method: "chat-greedy", N: 10, Metrics: map[string]float64{"acc": 0.5}}}
		r.Options.ExtraBody = json.RawMessage(extra)
		return r
	}
	conform := sampleReport()
	conform.Nonce, conform.Phases = "", nil
	conform.Conformance = []schema.CheckResult{{ID: "stream", Title: "stream", Status: "pass"}}
	_, err := Compare([]*Input{{Report: evalsOnly(""), Path: "a"}, {Report: evalsOnly(`{"reasoning_effort":"low"}`), Path: "b"}})
	if !badinput.Is(err) || !strings.Contains(err.Error(), `carried no extra body in a but extra body {"reasoning_effort":"low"} in b`) {
		t.Errorf("%v: want bad input naming both", err)
	}
	equiv := sampleReport()
	equiv.Nonce, equiv.Phases, equiv.Equivalence = "", nil, &schema.Equivalence{}
	if _, err := Compare([]*Input{{Report: equiv, Path: "e"}, {Report: evalsOnly(`{"reasoning_effort":"low"}`), Path: "b"}}); !badinput.Is(err) {
		t.Errorf("an eval compare without an extra body and an eval run with one: %v, want refused", err)
	}
	c, err := Compare([]*Input{{Report: conform, Path: "c"}, {Report: evalsOnly(`{"reasoning_effort":"low"}`), Path: "b"}})
	if err != nil || string(c.Columns[0].ExtraBody) != `{"reasoning_effort":"low"}` {
		t.Fatalf("a conformance report with an eval run: %v, %+v", err, c)
	}
}
