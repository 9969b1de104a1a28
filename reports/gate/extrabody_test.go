package gate

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/glmbench/glmbench/internal/badinput"
	"github.com/glmbench/glmbench/reports/schema"
	"github.com/glmbench/glmbench/reports/threshold"
)

// longExtra is an extra body of about 3 kB (a logit_bias over 200 tokens,
// a stop string in Japanese) whose last field is top_p.
func longExtra(topP string) string {
	var bias []string
	for i := range 200 {
		bias = append(bias, fmt.Sprintf(`"%d":-100`, 1000+i))
	}
	return `{"logit_bias":{` + strings.Join(bias, ",") + `},"stop":["終わり。終わり。"],"top_p":` + topP + `}`
}

// Two runs whose kilobytes of extra body differ only in their last field
// are refused in one line of bad input that stays short, is UTF-8, and
// shows each side's own value (clipped from the same start, both would
// read alike); run --baseline says the same before any load.
func TestTheGateShowsWhereLongExtraBodiesDiffer(t *testing.T) {
	t.Parallel()
	run := func(label, extra string) *schema.Report {
		r := &schema.Report{Label: label, Phases: []schema.PhaseResult{{Phase: "single", BatchSize: 8, InputLen: 512, OutputLen: 128, OutTput: 100}}}
		r.Options.ExtraBody = json.RawMessage(extra)
		return r
	}
	ths, err := threshold.ParseAll([]string{"single.out_tput > -5%"})
	if err != nil {
		t.Fatal(err)
	}
	base, cur := longExtra("0.9"), longExtra("0.95")
	_, gateErr := Evaluate([]*schema.Report{run("main", base)}, []*schema.Report{run("pr", cur)}, ths, Options{})
	planErr := (&Plan{Baseline: []*schema.Report{run("main", base)}}).RequireRequest("single", "chat", json.RawMessage(cur))
	for _, err := range []error{gateErr, planErr} {
		msg := fmt.Sprint(err)
		if !badinput.Is(err) || strings.Contains(msg, "\n") || !utf8.ValidString(msg) || len(msg) > 700 ||
			!strings.Contains(msg, `"top_p":0.9}`) || !strings.Contains(msg, `"top_p":0.95}`) {
			t.Errorf("%d bytes: %s", len(msg), msg)
		}
	}
	// A body clipped at the front is clipped at a character, as is one
	// whose difference comes early.
	early := `{"stop":["` + strings.Repeat("終", 300) + `"]}`
	_, err = Evaluate([]*schema.Report{run("main", early)}, []*schema.Report{run("pr", `{"a":1}`)}, ths, Options{})
	if msg := fmt.Sprint(err); !badinput.Is(err) || !utf8.ValidString(msg) || len(msg) > 700 || !strings.Contains(msg, `{"a":1}`) {
		t.Errorf("%d bytes: %s", len(msg), msg)
	}
}
