package gate

import (
	"strings"
	"testing"

	"github.com/glmbench/glmbench/reports/schema"
	"github.com/glmbench/glmbench/reports/threshold"
)

// inTputReport is a report of one completed phase decode_medium whose
// in_tput is v (nil: a stream without usage counted no prompt).
func inTputReport(label string, v *float64) *schema.Report {
	ph := schema.PhaseResult{Phase: "decode_medium", BatchSize: 8, InputLen: 256, OutputLen: 64, Completed: 8, OutTput: 100, InTput: v}
	return &schema.Report{Label: label, Phases: []schema.PhaseResult{ph}}
}

// A null in_tput (LM Studio's stream counts no prompt) on either side of a
// relative bound is a failed line that says which side lacks it, never a
// pass and never a 0 that reads as a −100% change; an old report's number
// beside a new one's number still compares.
func TestANullInTputFailsTheLineAndSaysWhichSideLacksIt(t *testing.T) {
	t.Parallel()
	ths, err := threshold.ParseAll([]string{"decode_medium.in_tput > -5%"})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name      string
		base, cur *float64
		passed    bool
		says      string
	}{
		{"null current", f(1000), nil, false, "in_tput missing in the current report (baseline 1000"},
		{"null baseline", nil, f(1000), false, "but missing in the baseline"},
		{"null both", nil, nil, false, "in_tput missing in the baseline and the current reports"},
		{"numbers both, 2% down", f(1000), f(980), true, "vs baseline 1000"},
	} {
		res, err := Evaluate([]*schema.Report{inTputReport("main", tc.base)}, []*schema.Report{inTputReport("pr", tc.cur)}, ths, Options{})
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		l := res.Lines[0]
		if l.Passed != tc.passed || !strings.Contains(l.Text(), tc.says) {
			t.Errorf("%s: passed %v, %q; want passed %v, saying %q", tc.name, l.Passed, l.Text(), tc.passed, tc.says)
		}
	}
}

// A run among several whose phase lacks in_tput leaves the mean to the
// others, and the line says how many runs lacked it, so a build whose
// usage went missing in one run of three is not compared in silence.
func TestALineSaysHowManyOfASidesRunsLackedTheMetric(t *testing.T) {
	t.Parallel()
	ths, err := threshold.ParseAll([]string{"decode_medium.in_tput > -5%"})
	if err != nil {
		t.Fatal(err)
	}
	base := []*schema.Report{inTputReport("main", f(1000))}
	cur := []*schema.Report{inTputReport("pr", f(990)), inTputReport("pr", nil), inTputReport("pr", f(1010))}
	res, err := Evaluate(base, cur, ths, Options{})
	if err != nil {
		t.Fatal(err)
	}
	l := res.Lines[0]
	if *l.Current != 1000 || l.CurrentLacking != 1 || l.BaselineLacking != 0 {
		t.Fatalf("current %v, lacking %d current and %d baseline runs; want the mean 1000 of the two runs with it, 1 and 0", *l.Current, l.CurrentLacking, l.BaselineLacking)
	}
	if want := "in_tput missing in 1 of 3 current runs"; !strings.Contains(l.Text(), want) {
		t.Errorf("%q lacks %q", l.Text(), want)
	}
	res, err = Evaluate(base, cur[:1], ths, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if l := res.Lines[0]; strings.Contains(l.Text(), "missing") || l.CurrentLacking != 0 {
		t.Errorf("a run with the metric: %q, lacking %d; want nothing said missing", l.Text(), l.CurrentLacking)
	}
}
