package gate

import (
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/glmbench/glmbench/reports"
	"github.com/glmbench/glmbench/reports/schema"
	"github.com/glmbench/glmbench/reports/threshold"
)

// mmluRun is a report of one mmlu run over 200 items whose acc is that of
// its items: item i is right when right(i).
func mmluRun(label string, right func(i int) bool) (*schema.Report, []schema.EvalItem) {
	items := make([]schema.EvalItem, 200)
	n := 0
	for i := range items {
		ok := right(i)
		score := 0.0
		if ok {
			score, n = 1, n+1
		}
		items[i] = schema.EvalItem{Eval: "mmlu", ID: fmt.Sprintf("s/%d", i), Score: score, Correct: &ok}
	}
	r := &schema.Report{Schema: schema.ReportSchema, Label: label, Evals: []schema.EvalResult{
		{Name: "mmlu", Status: "ok", Method: "echo", N: len(items), Metrics: map[string]float64{"acc": float64(n) / float64(len(items))}}}}
	return r, items
}

func TestPairedGateFailsARealDropOnlyAndSaysItPaired(t *testing.T) {
	t.Parallel()
	th, err := threshold.Parse("mmlu.acc > -1%")
	if err != nil {
		t.Fatal(err)
	}
	base, baseItems := mmluRun("base", func(i int) bool { return i < 100 })
	// Noise: 4 answers lost, 2 gained: acc 0.49, a -2% point change, but
	// the paired interval (about -7% to +3%) holds -1% well inside it.
	noisy, noisyItems := mmluRun("noisy", func(i int) bool { return (i < 100 && i >= 4) || i == 100 || i == 101 })
	// A real drop: 30 answers lost, none gained: acc 0.35, -30%.
	worse, worseItems := mmluRun("worse", func(i int) bool { return i < 70 })
	for _, tc := range []struct {
		name   string
		cur    *schema.Report
		items  []schema.EvalItem
		paired bool
		pass   bool
	}{
		{"a drop inside the noise passes, paired", noisy, noisyItems, true, true},
		{"the same drop without items fails by today's point rule", noisy, nil, false, false},
		{"a real drop fails, paired", worse, worseItems, true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			opts := Options{BaselineItems: [][]schema.EvalItem{baseItems}}
			if tc.items != nil {
				opts.CurrentItems = [][]schema.EvalItem{tc.items}
			}
			res, err := Evaluate([]*schema.Report{base}, []*schema.Report{tc.cur}, []threshold.Threshold{th}, opts)
			if err != nil {
				t.Fatal(err)
			}
			l := res.Lines[0]
			if l.Passed != tc.pass || (l.PairedItems == 200) != tc.paired {
				t.Fatalf("%s: passed %v over %d paired items, want %v (paired %v)", l.Text(), l.Passed, l.PairedItems, tc.pass, tc.paired)
			}
			if tc.paired {
				if !strings.Contains(l.Text(), "paired over 200 items, 95% CI [") || l.CI == nil || !(l.CI[0] < *l.Change && *l.Change < l.CI[1]) {
					t.Errorf("%s: want the paired interval around the change %v", l.Text(), *l.Change)
				}
			}
		})
	}
}

func TestPairedGateNeedsOneRunWithItemsPerSide(t *testing.T) {
	t.Parallel()
	th, _ := threshold.Parse("mmlu.acc > -1%")
	base, baseItems := mmluRun("base", func(i int) bool { return i < 100 })
	cur, curItems := mmluRun("cur", func(i int) bool { return i < 70 })
	// Two baseline runs with items: not pooled, so the paired rule is not used.
	res, err := Evaluate([]*schema.Report{base, base}, []*schema.Report{cur}, []threshold.Threshold{th},
		Options{BaselineItems: [][]schema.EvalItem{baseItems, baseItems}, CurrentItems: [][]schema.EvalItem{curItems}})
	if err != nil {
		t.Fatal(err)
	}
	if l := res.Lines[0]; l.PairedItems != 0 || l.Passed {
		t.Errorf("%s: want today's rule (a -30%% point change fails), not a paired one", l.Text())
	}
	// A metric the items do not make (acc_stem) keeps today's rule too.
	th2, _ := threshold.Parse("mmlu.acc_stem > -1%")
	base.Evals[0].Metrics["acc_stem"], cur.Evals[0].Metrics["acc_stem"] = 0.5, 0.5
	res, err = Evaluate([]*schema.Report{base}, []*schema.Report{cur}, []threshold.Threshold{th2},
		Options{BaselineItems: [][]schema.EvalItem{baseItems}, CurrentItems: [][]schema.EvalItem{curItems}})
	if err != nil {
		t.Fatal(err)
	}
	if l := res.Lines[0]; l.PairedItems != 0 || !l.Passed {
		t.Errorf("%s: want an unpaired pass of an unchanged acc_stem", l.Text())
	}
}

func TestPrepareReadsTheBaselinesItems(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	base, items := mmluRun("base", func(i int) bool { return i%2 == 0 })
	if err := reports.WriteDir(dir, base, nil); err != nil {
		t.Fatal(err)
	}
	if err := reports.MergeEvalItemsFile(dir, []string{"mmlu"}, items); err != nil {
		t.Fatal(err)
	}
	p, err := Prepare(Spec{Baseline: []string{dir}, Thresholds: []string{"mmlu.acc > -1%"}}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Options.BaselineItems) != 1 || len(p.Options.BaselineItems[0]) != 200 {
		t.Errorf("baseline items %d lists, want one of 200", len(p.Options.BaselineItems))
	}
	cur, curItems := mmluRun("cur", func(i int) bool { return i%2 == 0 && i >= 60 })
	p.Options.CurrentItems = [][]schema.EvalItem{curItems}
	res, err := p.Evaluate([]*schema.Report{cur})
	if err != nil {
		t.Fatal(err)
	}
	t.Log(res.Lines[0].Text())
	if l := res.Lines[0]; l.PairedItems != 200 || l.Passed {
		t.Errorf("%s: want a paired fail of 30 lost answers", l.Text())
	}
}
