package gate

import (
	"strings"
	"testing"

	"github.com/glmbench/glmbench/internal/badinput"
	"github.com/glmbench/glmbench/reports/schema"
	"github.com/glmbench/glmbench/reports/threshold"
)

// A chat baseline and a completions current send different prompts (the
// latter with no chat template) of the same shape: the gate refuses them
// as it refuses phases of different shapes, naming both routes, instead of
// comparing them in silence. A report without options.api (written before
// --api) is a chat run, so it gates against a chat run as before.
func TestTheGateRefusesRunsOfDifferentAPIs(t *testing.T) {
	t.Parallel()
	run := func(label, api string, tput float64) *schema.Report {
		r := &schema.Report{Label: label, Phases: []schema.PhaseResult{{Phase: "single", BatchSize: 8, InputLen: 512, OutputLen: 128, OutTput: tput}}}
		r.Options.API = api
		return r
	}
	ths, err := threshold.ParseAll([]string{"single.out_tput > -5%"})
	if err != nil {
		t.Fatal(err)
	}
	_, err = Evaluate([]*schema.Report{run("main", "chat", 100)}, []*schema.Report{run("pr", "completions", 100)}, ths, Options{})
	if !badinput.Is(err) || !strings.Contains(err.Error(), "phase single's load went to /chat/completions in baseline 1 (label main) but to /completions in current 1 (label pr)") {
		t.Fatalf("err %v", err)
	}
	res, err := Evaluate([]*schema.Report{run("old", "", 100)}, []*schema.Report{run("pr", "chat", 90)}, ths, Options{})
	if err != nil || res.Passed() || *res.Lines[0].Change != -10 {
		t.Fatalf("an old report against a chat run: %+v, %v", res, err)
	}
	res, err = Evaluate([]*schema.Report{run("main", "completions", 100)}, []*schema.Report{run("pr", "completions", 100)}, ths, Options{})
	if err != nil || !res.Passed() {
		t.Fatalf("two completions runs: %+v, %v", res, err)
	}
}
