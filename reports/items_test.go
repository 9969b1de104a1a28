package reports

import (
	"reflect"
	"strings"
	"testing"

	"github.com/glmbench/glmbench/internal/badinput"
	"github.com/glmbench/glmbench/reports/schema"
)

func boolp(b bool) *bool      { return &b }
func f64p(v float64) *float64 { return &v }

func TestEvalItemsRoundTripThroughEvalsJSONL(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	rep := &schema.Report{Schema: schema.ReportSchema, Label: "a", Evals: []schema.EvalResult{{Name: "mmlu", Status: "ok"}}}
	if err := WriteDir(dir, rep, nil); err != nil {
		t.Fatal(err)
	}
	items := []schema.EvalItem{
		{Eval: "mmlu", ID: "anatomy/0", Prediction: "B", Answer: "B", Score: 1, Correct: boolp(true), Logprobs: []float64{-2, -0.1, -3, -4}},
		{Eval: "ppl", ID: "3", Score: 0.5, NLL: f64p(50), Tokens: 100},
	}
	if err := MergeEvalItemsFile(dir, []string{"mmlu", "ppl"}, items); err != nil {
		t.Fatal(err)
	}
	in, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(in.Items, items) {
		t.Fatalf("read back %+v, want %+v", in.Items, items)
	}
	// ppl runs again with one document: its line is replaced, mmlu's kept.
	again := []schema.EvalItem{{Eval: "ppl", ID: "0", Score: 1, NLL: f64p(10), Tokens: 10}}
	if err := MergeEvalItemsFile(dir, []string{"ppl"}, again); err != nil {
		t.Fatal(err)
	}
	in, err = Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if want := []schema.EvalItem{items[0], again[0]}; !reflect.DeepEqual(in.Items, want) {
		t.Fatalf("after the rerun %+v, want %+v", in.Items, want)
	}
}

func TestBadEvalsJSONLIsBadInputNamingItsLine(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, body, want string
	}{
		{"not JSON", `{"eval":"mmlu","id":"a/0","score":1}` + "\n{oops\n", "item 2"},
		{"no id", `{"eval":"mmlu","score":1}` + "\n", "item 1: no eval or no id"},
		{"an id twice", `{"eval":"mmlu","id":"a/0"}` + "\n" + `{"eval":"mmlu","id":"a/0"}` + "\n", `item 2: mmlu id "a/0" again`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			err := loadBeside(t, "a", EvalsJSONL, tc.body)
			if !badinput.Is(err) || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), EvalsJSONL) {
				t.Errorf("error %v, want bad input naming %s and %q", err, EvalsJSONL, tc.want)
			}
		})
	}
}
