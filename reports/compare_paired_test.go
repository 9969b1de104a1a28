package reports

import (
	"bytes"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/glmbench/glmbench/reports/schema"
)

// accuracyItems are n mmlu items, the first right of them right.
func accuracyItems(n, right int) []schema.EvalItem {
	out := make([]schema.EvalItem, n)
	for i := range out {
		ok := i < right
		score := 0.0
		if ok {
			score = 1
		}
		out[i] = schema.EvalItem{Eval: "mmlu", ID: fmt.Sprintf("s/%d", i), Score: score, Correct: &ok}
	}
	return out
}

// evalInput is a report of label with one eval result and its items.
func evalInput(label, eval string, metrics map[string]float64, items []schema.EvalItem) *Input {
	return &Input{Path: label + "/report.json", Items: items, Report: &schema.Report{Schema: schema.ReportSchema, Label: label,
		Evals: []schema.EvalResult{{Name: eval, Status: "ok", Method: "echo", N: len(items), Metrics: metrics}}}}
}

func TestPairedComparisonOfTenMoreRightAnswers(t *testing.T) {
	t.Parallel()
	// A gets 50 of 100 right; B those 50 and 10 more, none fewer: +10
	// points, and McNemar's exact test on 10 discordant items all one way
	// is 2·(1/2)^10 = 2/1024.
	a := evalInput("a", "mmlu", map[string]float64{"acc": 0.5}, accuracyItems(100, 50))
	b := evalInput("b", "mmlu", map[string]float64{"acc": 0.6}, accuracyItems(100, 60))
	c, err := Compare([]*Input{a, b})
	if err != nil {
		t.Fatal(err)
	}
	row := c.Evals[0]
	if row.Cells[0].Paired != nil {
		t.Errorf("the first column is the reference; it has no paired change: %+v", row.Cells[0].Paired)
	}
	p := row.Cells[1].Paired
	if p == nil {
		t.Fatal("no paired change with items on both sides")
	}
	if p.Items != 100 || math.Abs(p.Delta-0.10) > 1e-12 || p.Reference != 0.5 || p.OnlyThis != 10 || p.OnlyRef != 0 {
		t.Errorf("%+v, want 100 items, delta +0.10 over a reference of 0.5, 10 right only in b", p)
	}
	if p.McNemar == nil || math.Abs(*p.McNemar-2.0/1024) > 1e-12 {
		t.Errorf("McNemar p %v, want 2/1024", p.McNemar)
	}
	if !(p.Lo > 0 && p.Lo < 0.1 && p.Hi > 0.1) {
		t.Errorf("interval [%v, %v]: want it around +0.10 and excluding 0", p.Lo, p.Hi)
	}
	if mean, lo, _, ok := p.ChangePct(); !ok || math.Abs(mean-20) > 1e-9 || math.Abs(lo-p.Lo*200) > 1e-9 {
		t.Errorf("change %v%% from %v%%, want +20%% of the reference's 0.5", mean, lo)
	}
	for _, format := range []string{FormatText, FormatMarkdown} {
		var buf bytes.Buffer
		if err := WriteComparison(&buf, c, format); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(buf.String(), "paired over 100 items: acc +10.0 pts, 95% CI [") || !strings.Contains(buf.String(), "McNemar p 0.00195") {
			t.Errorf("%s output lacks the paired line:\n%s", format, buf.String())
		}
	}
}

func TestPairedComparisonPairsByIDNotByPosition(t *testing.T) {
	t.Parallel()
	// b has a's items in reverse order and two of its own: only the 4
	// shared IDs pair, and they agree, so the change is exactly 0.
	ai := accuracyItems(4, 2)
	bi := []schema.EvalItem{ai[3], ai[2], ai[1], ai[0], {Eval: "mmlu", ID: "x/0", Score: 1}, {Eval: "mmlu", ID: "x/1", Score: 1}}
	p := PairEval("mmlu", ai, bi)
	if p == nil || p.Items != 4 || p.Delta != 0 || p.Lo != 0 || p.Hi != 0 || p.McNemar == nil || *p.McNemar != 1 {
		t.Errorf("%+v, want 4 items, no change, McNemar p 1", p)
	}
	if PairEval("mmlu", ai, nil) != nil || PairEval("other", ai, ai) != nil {
		t.Error("nothing to pair, or an eval without a paired metric, must give no paired change")
	}
}

func TestPairedPPLIsARatio(t *testing.T) {
	t.Parallel()
	// Every document's log-ppl is 0.05 higher in b: the ratio is
	// exp(0.05) exactly, and the interval of a constant difference is a point.
	var a, b []schema.EvalItem
	for i := range 4 {
		nllA, tokens := float64(100+10*i), 50+i
		nllB := nllA + 0.05*float64(tokens)
		a = append(a, schema.EvalItem{Eval: "ppl", ID: fmt.Sprint(i), Score: nllA / float64(tokens), NLL: &nllA, Tokens: tokens})
		b = append(b, schema.EvalItem{Eval: "ppl", ID: fmt.Sprint(i), Score: nllB / float64(tokens), NLL: &nllB, Tokens: tokens})
	}
	p := PairEval("ppl", a, b)
	want := math.Exp(0.05)
	if p == nil || !p.Ratio || p.Items != 4 || math.Abs(p.Delta-want) > 1e-12 || math.Abs(p.Lo-want) > 1e-12 || math.Abs(p.Hi-want) > 1e-12 || p.McNemar != nil {
		t.Fatalf("%+v, want ratio %v", p, want)
	}
	if mean, _, _, _ := p.ChangePct(); math.Abs(mean-(want-1)*100) > 1e-9 {
		t.Errorf("change %v%%, want %v%%", mean, (want-1)*100)
	}
	if got := PairedText(p); got != "paired over 4 items: ppl ×1.0513, 95% CI [×1.0513, ×1.0513]" {
		t.Errorf("text %q", got)
	}
}

func TestComparisonWithoutItemsIsUnpaired(t *testing.T) {
	t.Parallel()
	a := evalInput("a", "mmlu", map[string]float64{"acc": 0.5}, nil)
	b := evalInput("b", "mmlu", map[string]float64{"acc": 0.6}, accuracyItems(10, 6))
	c, err := Compare([]*Input{a, b})
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := WriteComparisonText(&buf, c); err != nil {
		t.Fatal(err)
	}
	if c.Evals[0].Cells[1].Paired != nil || strings.Contains(buf.String(), "paired") {
		t.Errorf("one side without items: want today's unpaired comparison, got\n%s", buf.String())
	}
}

func TestReportsOnDiskPairByTheirEvalsJSONL(t *testing.T) {
	t.Parallel()
	var ins []*Input
	for _, side := range []struct {
		label string
		right int
	}{{"a", 50}, {"b", 60}} {
		dir := t.TempDir()
		in := evalInput(side.label, "mmlu", map[string]float64{"acc": float64(side.right) / 100}, accuracyItems(100, side.right))
		if err := WriteDir(dir, in.Report, nil); err != nil {
			t.Fatal(err)
		}
		if err := MergeEvalItemsFile(dir, []string{"mmlu"}, in.Items); err != nil {
			t.Fatal(err)
		}
		loaded, err := Load(dir)
		if err != nil {
			t.Fatal(err)
		}
		ins = append(ins, loaded)
	}
	c, err := Compare(ins)
	if err != nil {
		t.Fatal(err)
	}
	if p := c.Evals[0].Cells[1].Paired; p == nil || p.Items != 100 || math.Abs(p.Delta-0.1) > 1e-12 {
		t.Errorf("paired %+v, want 100 items, +0.10", p)
	}
}
