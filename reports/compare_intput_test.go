package reports

import (
	"bytes"
	"strings"
	"testing"

	"github.com/glmbench/glmbench/reports/schema"
)

// intputInput is a run labelled label of one completed phase p whose
// in_tput is v (nil: a stream without usage counted no prompt).
func intputInput(path, label string, v *float64) *Input {
	ph := schema.PhaseResult{Phase: "p", BatchSize: 4, InputLen: 64, OutputLen: 16, Completed: 4, OutTput: 100, InTput: v,
		ByClass: map[schema.Class]int{}, Status: schema.StatusComplete}
	return &Input{Path: path, Report: &schema.Report{Label: label, Phases: []schema.PhaseResult{ph}}}
}

// Runs merged under one label average the in_tput of those that have one,
// and the cell says how many lacked it: a label's 1,000 tok/s from one of
// two runs is not the figure of both.
func TestAMergedCellSaysHowManyRunsLackedInTput(t *testing.T) {
	t.Parallel()
	v := 1000.0
	c, err := Compare([]*Input{intputInput("a", "x", &v), intputInput("b", "x", nil), intputInput("c", "y", &v)})
	if err != nil {
		t.Fatal(err)
	}
	x, y := c.Phases[0].Cells[0], c.Phases[0].Cells[1]
	if x.Runs != 2 || x.InTput == nil || *x.InTput != 1000 || x.InTputLacking != 1 || y.InTputLacking != 0 {
		t.Fatalf("x: %d runs, in_tput %v, lacking %d; y lacking %d; want 2, 1000, 1; 0", x.Runs, x.InTput, x.InTputLacking, y.InTputLacking)
	}
	var md bytes.Buffer
	if err := WriteComparisonMarkdown(&md, c); err != nil {
		t.Fatal(err)
	}
	if want := "in 1000.0 tok/s (none in 1 of 2 runs)"; !strings.Contains(md.String(), want) {
		t.Errorf("the comparison lacks %q:\n%s", want, md.String())
	}
	if strings.Count(md.String(), "(none in") != 1 {
		t.Errorf("a label whose runs all counted the prompt is said to lack it:\n%s", md.String())
	}
}
