package reports

import (
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/glmbench/glmbench/reports/schema"
)

// metricOrder is the order an eval's metrics are listed in; others follow
// by name.
var metricOrder = []string{"acc", "acc_stem", "acc_humanities", "acc_social_sciences", "acc_other", "exact_match",
	"ppl", "nll_per_token", "worst_seg", "word_perplexity", "byte_perplexity", "bits_per_byte", "tokens"}

// MetricsText lists an eval's metrics on one line ("acc=0.25 acc_stem=0"),
// in metricOrder, five significant digits (tokens whole). Per-subject
// accuracies (57 for MMLU) are too many for a line: they are left out and
// counted in subjects, for the caller to say where they are.
func MetricsText(e *schema.EvalResult) (text string, subjects int) {
	keys := make([]string, 0, len(e.Metrics))
	for k := range e.Metrics {
		if strings.HasPrefix(k, schema.SubjectMetricPrefix) {
			subjects++
			continue
		}
		keys = append(keys, k)
	}
	rank := func(k string) int {
		if i := slices.Index(metricOrder, k); i >= 0 {
			return i
		}
		return len(metricOrder)
	}
	slices.SortFunc(keys, func(a, b string) int {
		if d := rank(a) - rank(b); d != 0 {
			return d
		}
		return strings.Compare(a, b)
	})
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + "=" + metricValue(k, e.Metrics[k])
	}
	return strings.Join(parts, " "), subjects
}

func metricValue(name string, v float64) string {
	if name == "tokens" {
		return strconv.FormatFloat(v, 'f', 0, 64)
	}
	return strconv.FormatFloat(v, 'g', 5, 64)
}

// WriteEvals writes evals as report.md shows them: a Markdown table of one
// row per eval, then one of the per-subject accuracies if any.
func WriteEvals(w io.Writer, evals []schema.EvalResult) error {
	p := &printer{w: w}
	p.evalTables(evals)
	return p.err
}

// WriteChecks writes conformance checks as report.md shows them: a Markdown
// table of one row per check.
func WriteChecks(w io.Writer, checks []schema.CheckResult) error {
	p := &printer{w: w}
	p.checkTable(checks)
	return p.err
}

func (p *printer) evalTables(evals []schema.EvalResult) {
	var bySubject [][]string
	p.table([]string{"eval", "status", "method", "n", "metrics", "failure"}, func(add func(...string)) {
		for _, e := range evals {
			text, subjects := MetricsText(&e)
			if subjects > 0 {
				text += fmt.Sprintf(" (and %d subjects, below)", subjects)
				for _, k := range sortedKeys(e.Metrics) {
					if s, ok := strings.CutPrefix(k, schema.SubjectMetricPrefix); ok {
						bySubject = append(bySubject, []string{e.Name, s, metricValue(k, e.Metrics[k])})
					}
				}
			}
			fail := ""
			if e.Failure != nil {
				fail = e.Failure.Short()
			}
			add(e.Name, e.Status, e.Method, strconv.Itoa(e.N), strings.TrimSpace(text), fail)
		}
	})
	if len(bySubject) > 0 {
		p.f("\n### Accuracy by subject\n\n")
		p.table([]string{"eval", "subject", "acc"}, func(add func(...string)) {
			for _, row := range bySubject {
				add(row...)
			}
		})
	}
}

func (p *printer) checkTable(checks []schema.CheckResult) {
	p.table([]string{"check", "status", "title", "detail"}, func(add func(...string)) {
		for _, c := range checks {
			add(c.ID, c.Status, c.Title, c.Detail)
		}
	})
}
