package reports

import (
	"fmt"
	"reflect"
	"slices"
	"strconv"
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

// blockFields maps "block.field" to the metric's field indexes, for every
// numeric field of a phase's blocks (cache, prompt_drift, server):
// cache.hit_rate, cache.expected_hit_rate, cache.ttft_med_hit,
// prompt_drift.abs_p99, server.accept_length, server.ttft_p50,
// server.running_max, …. Built from the struct tags like phaseFields, so a
// field added to a block, or a block added to the phase, is a metric at
// once. A phase without the block has none of its metrics, and a figure
// the block leaves nil (a series the server does not expose) is missing,
// never 0.
var blockFields = func() map[string][2]int {
	m := map[string][2]int{}
	t := reflect.TypeFor[schema.PhaseResult]()
	for i := range t.NumField() {
		f := t.Field(i)
		if f.Anonymous || f.Type.Kind() != reflect.Pointer || f.Type.Elem().Kind() != reflect.Struct {
			continue
		}
		block, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		bt := f.Type.Elem()
		for j := range bt.NumField() {
			g := bt.Field(j)
			name, _, _ := strings.Cut(g.Tag.Get("json"), ",")
			gt := g.Type
			if gt.Kind() == reflect.Pointer {
				gt = gt.Elem()
			}
			switch gt.Kind() {
			case reflect.Int, reflect.Float64:
				m[block+"."+name] = [2]int{i, j}
			}
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
// PhaseResult field, a numeric field of one of its blocks as block.field
// (cache.hit_rate, prompt_drift.abs_p99, server.accept_length), or an
// error class (its count).
func IsPhaseMetric(name string) bool {
	if _, ok := phaseFields[name]; ok {
		return true
	}
	if _, ok := blockFields[name]; ok {
		return true
	}
	return slices.Contains(schema.Classes, schema.Class(name))
}

// PhaseValue returns ph's metric name, or nil when the phase has none (an
// empty sample, a block it lacks, a hit rate the server did not report, a
// series its metrics do not expose) or name is not a phase metric.
func PhaseValue(ph *schema.PhaseResult, name string) *float64 {
	if slices.Contains(schema.Classes, schema.Class(name)) {
		v := float64(ph.ByClass[schema.Class(name)])
		return &v
	}
	if ij, ok := blockFields[name]; ok {
		b := reflect.ValueOf(ph).Elem().Field(ij[0])
		if b.IsNil() {
			return nil
		}
		return numeric(b.Elem().Field(ij[1]))
	}
	i, ok := phaseFields[name]
	if !ok {
		return nil
	}
	return numeric(reflect.ValueOf(ph).Elem().Field(i))
}

// numeric is the value of an int or float64 field, or of a pointer to one;
// nil for a nil pointer.
func numeric(f reflect.Value) *float64 {
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

// SweepMetrics are a sweep's own metrics, from its capacity: the load, and
// the out tok/s, goodput and tok/s per user at it.
var SweepMetrics = []string{"capacity", "capacity_out_tput", "capacity_goodput", "capacity_out_tput_per_user"}

// pointFields are a sweep point's metrics beside its PhaseResult's.
var pointFields = map[string]func(*schema.SweepPoint) *float64{
	"started":           func(p *schema.SweepPoint) *float64 { return fptr(float64(p.Started)) },
	"unfinished":        func(p *schema.SweepPoint) *float64 { return fptr(float64(p.Unfinished)) },
	"requests_per_sec":  func(p *schema.SweepPoint) *float64 { return fptr(p.RequestsPerSec) },
	"out_tput_per_user": func(p *schema.SweepPoint) *float64 { return p.OutTputPerUser },
	"send_lag_p99":      func(p *schema.SweepPoint) *float64 { return fptr(p.SendLagP99) },
}

func fptr(v float64) *float64 { return &v }

// IsSweepMetric reports whether name is a sweep metric: one of SweepMetrics,
// or METRIC@LOAD, a phase or point metric of the point at that load.
func IsSweepMetric(name string) bool {
	if slices.Contains(SweepMetrics, name) {
		return true
	}
	base, load, ok := strings.Cut(name, "@")
	if _, err := strconv.ParseFloat(load, 64); !ok || err != nil {
		return false
	}
	_, point := pointFields[base]
	return point || IsPhaseMetric(base)
}

// FindSweep returns r's sweep name, or nil.
func FindSweep(r *schema.Report, name string) *schema.SweepResult {
	for i := range r.Sweeps {
		if r.Sweeps[i].Name == name {
			return &r.Sweeps[i]
		}
	}
	return nil
}

// SweepValue returns the sweep metric of r's sweep name (IsSweepMetric), or
// nil when the sweep is absent, found no capacity, measured no point at
// that load, or the point has no such value.
func SweepValue(r *schema.Report, name, metric string) *float64 {
	s := FindSweep(r, name)
	if s == nil {
		return nil
	}
	if base, at, ok := strings.Cut(metric, "@"); ok {
		load, err := strconv.ParseFloat(at, 64)
		if err != nil {
			return nil
		}
		for i := range s.Points {
			if p := &s.Points[i]; p.Load == load {
				if f, ok := pointFields[base]; ok {
					return f(p)
				}
				return PhaseValue(&p.PhaseResult, base)
			}
		}
		return nil
	}
	c := s.Capacity
	if c == nil {
		return nil
	}
	switch metric {
	case "capacity":
		return fptr(c.Load)
	case "capacity_out_tput":
		return fptr(c.OutTput)
	case "capacity_goodput":
		return fptr(c.Goodput)
	case "capacity_out_tput_per_user":
		return c.OutTputPerUser
	}
	return nil
}

// SweepShape is what must agree before two runs' sweeps are compared: the
// request shape, the mode, the SLOs and the attainment target.
func SweepShape(s *schema.SweepResult) string {
	return fmt.Sprintf("%d/%d by %s, SLOs [%s] at attainment %g", s.InputLen, s.OutputLen, s.Mode, strings.Join(s.SLOs, ", "), s.Attainment)
}
