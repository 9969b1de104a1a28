package reports

import (
	"bytes"
	"strings"
	"testing"

	"github.com/glmbench/glmbench/reports/schema"
)

func TestEvalTablesListMetricsInOrderAndSubjectsApart(t *testing.T) {
	t.Parallel()
	evals := []schema.EvalResult{
		{Name: "mmlu", Status: "ok", Method: "echo", N: 8, Metrics: map[string]float64{
			"acc_stem": 0.5, "acc": 0.375, "acc_subject_astronomy": 0.5, "acc_subject_formal_logic": 0.25}},
		{Name: "ppl", Status: "unsupported", Failure: &schema.EvalFailure{Kind: "echo_server_error", HTTPStatus: 500}},
		{Name: "long-ppl", Status: "ok", N: 4, Metrics: map[string]float64{"tokens": 8192, "ppl": 165.4567, "worst_seg": 192.5}},
	}
	if text, subjects := MetricsText(&evals[0]); text != "acc=0.375 acc_stem=0.5" || subjects != 2 {
		t.Errorf("mmlu: %q, %d subjects", text, subjects)
	}
	if text, _ := MetricsText(&evals[2]); text != "ppl=165.46 worst_seg=192.5 tokens=8192" {
		t.Errorf("long-ppl: %q", text)
	}
	var b bytes.Buffer
	if err := WriteEvals(&b, evals); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{
		"acc=0.375 acc_stem=0.5 (and 2 subjects, below)", "echo_server_error (HTTP 500)",
		"### Accuracy by subject", "| mmlu | astronomy    | 0.5  |", "formal_logic",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("missing %q in\n%s", want, out)
		}
	}
	// report.md shows the same tables.
	if md := markdown(t, &schema.Report{Schema: schema.ReportSchema, Label: "x", Evals: evals}); !strings.Contains(md, out) {
		t.Errorf("report.md's evals differ from WriteEvals':\n%s", md)
	}
}

func TestCheckTableEscapesCells(t *testing.T) {
	t.Parallel()
	var b bytes.Buffer
	checks := []schema.CheckResult{{ID: "usage", Status: "fail", Title: "usage adds up", Detail: "prompt | completion\nmismatch"}}
	if err := WriteChecks(&b, checks); err != nil {
		t.Fatal(err)
	}
	if out := b.String(); !strings.Contains(out, `prompt \| completion mismatch`) || !strings.Contains(out, "usage adds up") {
		t.Errorf("%s", out)
	}
}
