package reports

import (
	"fmt"
	"reflect"
	"slices"
	"strings"

	"github.com/glmbench/glmbench/reports/schema"
)

// phaseFields maps a PhaseResult JSON name to its field index, for every
// numeric field (int, float64 and their pointers): the metrics a threshold
// may name. Built from the struct tags, so a field added to the schema is a
// metric at once.
var phaseFields = func() map[string]int {
	m := map[string]int{}
	t := reflect.TypeFor[schema.PhaseResult]()
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		ft := f.Type
		if ft.Kind() == reflect.Pointer {
			ft = ft.Elem()
		}
		switch ft.Kind() {
		case reflect.Int, reflect.Float64:
			m[name] = i
		}
	}
	return m
}()

// EvalMetrics are the metric names DESIGN.md gives the built-in evals, and
// no_answer (MMLU and TriviaQA questions that got no usable answer, issue 12).
var EvalMetrics = []string{
	"ppl", "nll_per_token", "word_perplexity", "byte_perplexity", "bits_per_byte", "tokens", "worst_seg",
	"acc", "acc_stem", "acc_humanities", "acc_social_sciences", "acc_other", "exact_match", "no_answer",
}

// IsPhaseMetric reports whether name is a phase metric: a numeric
// PhaseResult field or an error class (its count).
func IsPhaseMetric(name string) bool {
	if _, ok := phaseFields[name]; ok {
		return true
	}
	return slices.Contains(schema.Classes, schema.Class(name))
}

// PhaseValue returns ph's metric name, or nil when the phase has none (an
// empty sample) or name is not a phase metric.
func PhaseValue(ph *schema.PhaseResult, name string) *float64 {
	if slices.Contains(schema.Classes, schema.Class(name)) {
		v := float64(ph.ByClass[schema.Class(name)])
		return &v
	}
	i, ok := phaseFields[name]
	if !ok {
		return nil
	}
	f := reflect.ValueOf(ph).Elem().Field(i)
	if f.Kind() == reflect.Pointer {
		if f.IsNil() {
			return nil
		}
		f = f.Elem()
	}
	var v float64
	switch f.Kind() {
	case reflect.Int:
		v = float64(f.Int())
	case reflect.Float64:
		v = f.Float()
	}
	return &v
}

// FindPhase returns r's phase name, or nil.
func FindPhase(r *schema.Report, name string) *schema.PhaseResult {
	for i := range r.Phases {
		if r.Phases[i].Phase == name {
			return &r.Phases[i]
		}
	}
	return nil
}

// FindEval returns r's eval name, or nil; the last wins if a report repeats one.
func FindEval(r *schema.Report, name string) *schema.EvalResult {
	for i := len(r.Evals) - 1; i >= 0; i-- {
		if r.Evals[i].Name == name {
			return &r.Evals[i]
		}
	}
	return nil
}

// EvalValue returns the metric of r's eval, or nil when the eval is absent
// or gave no such score.
func EvalValue(r *schema.Report, eval, metric string) *float64 {
	e := FindEval(r, eval)
	if e == nil {
		return nil
	}
	v, ok := e.Metrics[metric]
	if !ok {
		return nil
	}
	return &v
}

// Shape is a phase's requests/input/output, the figures that must agree
// before two phases are compared.
func Shape(ph *schema.PhaseResult) [3]int { return [3]int{ph.BatchSize, ph.InputLen, ph.OutputLen} }

// ShapeString is a shape (Shape) as requests/input/output: "64/256/64".
func ShapeString(s [3]int) string {
	return fmt.Sprintf("%d/%d/%d", s[0], s[1], s[2])
}
