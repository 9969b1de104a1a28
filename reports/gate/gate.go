// Package gate is the CI performance-regression gate: thresholds (package
// reports/threshold) applied to current reports against a baseline, with
// bootstrap confidence intervals over several runs, and its ✓/✗ lines,
// Markdown and JUnit XML. glmbench gate and run --baseline both use it.
package gate

import (
	"fmt"
	"hash/fnv"
	"math"
	"math/rand/v2"
	"slices"
	"strings"

	"gonum.org/v1/gonum/stat"

	"github.com/glmbench/glmbench/internal/badinput"
	"github.com/glmbench/glmbench/reports"
	"github.com/glmbench/glmbench/reports/schema"
	"github.com/glmbench/glmbench/reports/threshold"
)

// Options tune the gate's noise handling. The zero value means the
// defaults.
type Options struct {
	// MinRuns is the number of runs on each side from which a threshold is
	// decided by a bootstrap confidence interval instead of the point value
	// (default 3).
	MinRuns int
	// Resamples is the number of bootstrap resamples (default 10000).
	Resamples int
	// Confidence is the interval's coverage (default 0.95).
	Confidence float64
	// Seed seeds the resampling, so a gate over the same files always
	// decides the same way (default 1).
	Seed uint64
	// BaselineItems and CurrentItems are each side's eval items
	// (reports.Input.Items, one list per report: reports.ItemsOf). Where
	// exactly one report of each side has items of an eval, a relative
	// threshold on its paired metric (reports.PairedMetrics: mmlu.acc,
	// triviaqa.exact_match, ppl.ppl, long-ppl.ppl) is decided by the paired
	// interval over the items both scored, whatever the number of runs.
	BaselineItems, CurrentItems [][]schema.EvalItem
}

func (o Options) withDefaults() Options {
	if o.MinRuns <= 0 {
		o.MinRuns = 3
	}
	if o.Resamples <= 0 {
		o.Resamples = 10000
	}
	if o.Confidence <= 0 || o.Confidence >= 1 {
		o.Confidence = 0.95
	}
	if o.Seed == 0 {
		o.Seed = 1
	}
	return o
}

// Result is every line a gate decided, in threshold order.
type Result struct {
	// Lines are the decisions; their JSON key stays "checks", as before the
	// gate had its own package.
	Lines []Line `json:"checks"`
	// Defaulted is set when no threshold was given and the defaults were used.
	Defaulted bool `json:"defaulted,omitempty"`
	// BaselineLabels and CurrentLabels are the labels of each side's runs.
	BaselineLabels []string `json:"baseline_labels"`
	CurrentLabels  []string `json:"current_labels"`
}

// Line is one threshold applied to one phase or eval: one ✓/✗ line.
type Line struct {
	// Threshold is the expression as given; Expr is it with the scope
	// resolved ("*.out_tput > -5%" becomes "single.out_tput > -5%").
	Threshold threshold.Threshold `json:"-"`
	Expr      string              `json:"expr"`
	Scope     string              `json:"scope"`
	Metric    string              `json:"metric"`
	// Baseline and Current are the metric's means over each side's runs
	// (Baseline is unset for an absolute threshold).
	Baseline *float64 `json:"baseline,omitempty"`
	Current  *float64 `json:"current,omitempty"`
	// BaselineRuns and CurrentRuns are the per-run values behind the means.
	BaselineRuns []float64 `json:"baseline_runs,omitempty"`
	CurrentRuns  []float64 `json:"current_runs,omitempty"`
	// Change is (current − baseline) / baseline in percent, for a relative
	// threshold.
	Change *float64 `json:"change_pct,omitempty"`
	// CI is the bootstrap confidence interval of the compared quantity (the
	// change in percent, or the current mean), when both sides had enough
	// runs, or the paired interval (PairedItems); the line is crossed only
	// when all of it is past the bound.
	CI *[2]float64 `json:"ci,omitempty"`
	// PairedItems is, for an eval metric decided item by item, how many
	// items both sides scored: CI is then the paired bootstrap interval of
	// the change (reports.PairEval, PairedDelta.ChangePct).
	PairedItems int `json:"paired_items,omitempty"`
	// Missing says which side lacked the metric ("baseline", "current",
	// "both"), or which phase or eval none had.
	Missing string `json:"missing,omitempty"`
	// BaselineLacking and CurrentLacking count each side's runs that had
	// the phase, eval or sweep but not the metric (a null in_tput: a
	// stream without usage), left out of the mean; the line says so.
	BaselineLacking int `json:"baseline_lacking,omitempty"`
	CurrentLacking  int `json:"current_lacking,omitempty"`
	// BaselineMethods and CurrentMethods are, for an eval metric, the
	// distinct methods (EvalResult.Method) of the runs behind each side's
	// values, in the order first met.
	BaselineMethods []string `json:"baseline_methods,omitempty"`
	CurrentMethods  []string `json:"current_methods,omitempty"`
	// MethodMismatch says why the values were not compared: the sides'
	// methods differ (a relative bound), or one side's runs mix methods. The
	// line then fails, whatever the values: a number by chat-greedy against
	// an echo baseline is no regression and no improvement, and a gate that
	// passed it would compare them in silence; the fix is a baseline by the
	// same method.
	MethodMismatch string `json:"method_mismatch,omitempty"`
	Passed         bool   `json:"passed"`
}

// Passed reports whether every line passed.
func (g *Result) Passed() bool { return len(g.Crossed()) == 0 }

// Crossed returns the lines that failed.
func (g *Result) Crossed() []Line {
	var out []Line
	for _, c := range g.Lines {
		if !c.Passed {
			out = append(out, c)
		}
	}
	return out
}

// Evaluate gates current against baseline. Each side is one or more runs
// (reports) of one build. With no thresholds, threshold.Defaults() apply to
// every phase in both sides.
//
// A threshold on "*" ranges over the phases (or, for an eval metric, the
// evals): for an absolute bound, those of the current side; for a relative
// one, those present on both sides. A named phase or eval whose metric is
// missing on a side it needs is a failed line, not an error.
//
// On each side the point value is the mean over the runs that have the
// metric. When both sides have at least MinRuns runs (for an absolute bound:
// the current side), the line fails only when the whole bootstrap
// confidence interval is past the bound, so run-to-run noise alone does not
// fail a gate.
//
// An eval metric got by different methods on the two sides (EvalResult.Method:
// echo against chat-greedy), or by several methods among one side's runs,
// is a failed line that says so (Line.MethodMismatch), whatever the values.
//
// Errors (bad input) are: an empty side, a metric no report could have, and
// a phase whose shape (batch_size/input_len/output_len) differs between the
// runs it would compare.
func Evaluate(baseline, current []*schema.Report, ths []threshold.Threshold, opts Options) (*Result, error) {
	opts = opts.withDefaults()
	if len(baseline) == 0 {
		return nil, badinput.Errorf("gate: no baseline report")
	}
	if len(current) == 0 {
		return nil, badinput.Errorf("gate: no current report")
	}
	res := &Result{}
	for _, r := range baseline {
		res.BaselineLabels = append(res.BaselineLabels, r.Label)
	}
	for _, r := range current {
		res.CurrentLabels = append(res.CurrentLabels, r.Label)
	}
	if len(ths) == 0 {
		ths, res.Defaulted = threshold.Defaults(), true
	}
	known := knownEvalMetrics(baseline, current)
	for _, t := range ths {
		k := kindOf(t.Metric, known)
		if k == unknown {
			return nil, badinput.Errorf("threshold %q: unknown metric %q (a phase field such as out_tput, ttft_p99, tpot_med, error_rate; a block field such as cache.hit_rate, prompt_drift.abs_p99; an error class; an eval metric such as ppl.ppl; or a sweep's capacity, capacity_goodput, goodput@64)",
				t.String(), t.Metric)
		}
		scopes := []string{t.Scope}
		if t.Scope == threshold.All {
			scopes = expandAll(t, k, baseline, current)
			if len(scopes) == 0 {
				where := "the current reports"
				if t.Relative {
					where = "both the baseline and the current reports"
				}
				kind := map[metricKind]string{phase: "phase", eval: "eval with metric " + t.Metric, sweep: "sweep"}[k]
				res.Lines = append(res.Lines, Line{Threshold: t, Expr: t.String(), Scope: t.Scope, Metric: t.Metric,
					Missing: "no " + kind + " in " + where})
				continue
			}
		}
		for _, scope := range scopes {
			if k != eval {
				if err := sameShape(scope, k, t.Relative, baseline, current); err != nil {
					return nil, err
				}
			}
			res.Lines = append(res.Lines, decide(t, scope, k, baseline, current, opts))
		}
	}
	return res, nil
}

// metricKind is what a threshold's metric is read from.
type metricKind int

const (
	unknown metricKind = iota
	phase
	eval
	sweep
)

// kindOf tells a metric's kind: a sweep's (capacity, goodput@64) before a
// phase's, since a point metric names a phase field; known are the eval
// metrics.
func kindOf(metric string, known map[string]bool) metricKind {
	switch {
	case reports.IsSweepMetric(metric):
		return sweep
	case reports.IsPhaseMetric(metric):
		return phase
	case known[metric]:
		return eval
	}
	return unknown
}

// decide applies t to one scope (a phase, an eval or a sweep) of both sides.
func decide(t threshold.Threshold, scope string, k metricKind, baseline, current []*schema.Report, opts Options) Line {
	resolved := t
	resolved.Scope = scope
	c := Line{Threshold: t, Expr: resolved.String(), Scope: scope, Metric: t.Metric}
	c.CurrentRuns, c.CurrentMethods, c.CurrentLacking = sideValues(current, k, scope, t.Metric)
	if t.Relative {
		c.BaselineRuns, c.BaselineMethods, c.BaselineLacking = sideValues(baseline, k, scope, t.Metric)
	}
	c.MethodMismatch = methodMismatch(c.BaselineMethods, c.CurrentMethods)
	switch {
	case len(c.CurrentRuns) == 0 && t.Relative && len(c.BaselineRuns) == 0:
		c.Missing = "both"
	case len(c.CurrentRuns) == 0:
		c.Missing = "current"
	case t.Relative && len(c.BaselineRuns) == 0:
		c.Missing = "baseline"
	}
	if len(c.CurrentRuns) > 0 {
		m := stat.Mean(c.CurrentRuns, nil)
		c.Current = &m
	}
	if len(c.BaselineRuns) > 0 {
		m := stat.Mean(c.BaselineRuns, nil)
		c.Baseline = &m
	}
	if c.Missing != "" {
		return c
	}
	point := *c.Current
	if t.Relative {
		ch := relChange(*c.Baseline, *c.Current)
		c.Change, point = &ch, ch
	}
	if c.MethodMismatch != "" {
		return c // not passed, whatever the values: shown, never compared
	}
	if k == eval && t.Relative {
		if pd := pairedChange(scope, t.Metric, opts); pd != nil {
			if _, lo, hi, ok := pd.ChangePct(); ok {
				c.CI, c.PairedItems = &[2]float64{lo, hi}, pd.Items
				c.Passed = !t.CrossedOver(lo, hi)
				return c
			}
		}
	}
	enough := len(c.CurrentRuns) >= opts.MinRuns && (!t.Relative || len(c.BaselineRuns) >= opts.MinRuns)
	if !enough {
		c.Passed = t.Holds(point)
		return c
	}
	// Each line draws from its own stream, seeded by its expression, so
	// adding a threshold never changes how another one is decided.
	h := fnv.New64a()
	h.Write([]byte(c.Expr))
	rng := rand.New(rand.NewPCG(opts.Seed, h.Sum64()))
	lo, hi := bootstrapCI(c.BaselineRuns, c.CurrentRuns, t.Relative, opts, rng)
	c.CI = &[2]float64{lo, hi}
	c.Passed = !t.CrossedOver(lo, hi)
	return c
}

// sideValues are metric's values of scope over one side's runs rs, the
// distinct methods behind an eval metric's, and how many runs had the
// scope but not the metric.
func sideValues(rs []*schema.Report, k metricKind, scope, metric string) (out []float64, methods []string, lacking int) {
	for _, r := range rs {
		var v *float64
		has := false
		switch k {
		case phase:
			if ph := reports.FindPhase(r, scope); ph != nil {
				has, v = true, reports.PhaseValue(ph, metric)
			}
		case sweep:
			has, v = reports.FindSweep(r, scope) != nil, reports.SweepValue(r, scope, metric)
		case eval:
			has = reports.FindEval(r, scope) != nil
			if v = reports.EvalValue(r, scope, metric); v != nil {
				if m := evalMethod(r, scope); !slices.Contains(methods, m) {
					methods = append(methods, m)
				}
			}
		}
		switch {
		case v != nil:
			out = append(out, *v)
		case has:
			lacking++
		}
	}
	return out, methods, lacking
}

// pairedChange is the paired change of eval's metric from the baseline's
// items to the current's, or nil: the metric is not the one the items make,
// or a side has no single report with items of the eval.
func pairedChange(eval, metric string, opts Options) *reports.PairedDelta {
	if reports.PairedMetrics[eval] != metric {
		return nil
	}
	base, cur := reports.OneRunItems(eval, opts.BaselineItems), reports.OneRunItems(eval, opts.CurrentItems)
	if base == nil || cur == nil {
		return nil
	}
	return reports.PairEval(eval, base, cur)
}

// evalMethod is how r scored its eval scope, as the gate compares it: the
// eval's method, and the fields --extra-body added to its requests, since
// an MMLU answered without thinking ({"chat_template_kwargs":
// {"enable_thinking": false}}) is another measurement than one that
// thought. Without an extra body it is the method alone, as before.
func evalMethod(r *schema.Report, scope string) string {
	m := reports.FindEval(r, scope).Method
	if extra := r.Options.Extra(); extra != "" {
		return reports.MethodName(m) + " with --extra-body " + extra
	}
	return m
}

// methodMismatch says why an eval metric's values are not comparable, or
// "": a side whose runs mix methods, or a baseline whose method is not the
// current's. A side without values (base for an absolute bound) has no
// say. An empty method (a report that does not state one) is a method of
// its own, so it never passes for echo.
func methodMismatch(base, cur []string) string {
	switch {
	case len(cur) > 1:
		return "not compared: the current runs mix methods " + strings.Join(quoteMethods(cur), ", ")
	case len(base) > 1:
		return "not compared: the baseline runs mix methods " + strings.Join(quoteMethods(base), ", ")
	case len(base) == 1 && len(cur) == 1 && base[0] != cur[0]:
		return fmt.Sprintf("not compared: baseline by %s, current by %s", quoteMethods(base)[0], quoteMethods(cur)[0])
	}
	return ""
}

func quoteMethods(ms []string) []string {
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = reports.MethodName(m)
	}
	return out
}

// relChange is (cur − base) / base in percent; from a zero baseline it is 0
// when nothing changed, else ±Inf, which fails any finite bound.
func relChange(base, cur float64) float64 {
	if base == 0 {
		switch {
		case cur == 0:
			return 0
		case cur > 0:
			return math.Inf(1)
		}
		return math.Inf(-1)
	}
	return (cur - base) / math.Abs(base) * 100
}

// bootstrapCI is the percentile bootstrap interval of the relative change of
// means (or, when !relative, of the current mean): each resample draws each
// side's runs with replacement.
func bootstrapCI(base, cur []float64, relative bool, opts Options, rng *rand.Rand) (lo, hi float64) {
	stats := make([]float64, opts.Resamples)
	rb, rc := make([]float64, len(base)), make([]float64, len(cur))
	for b := range stats {
		for i := range rc {
			rc[i] = cur[rng.IntN(len(cur))]
		}
		mc := stat.Mean(rc, nil)
		if !relative {
			stats[b] = mc
			continue
		}
		for i := range rb {
			rb[i] = base[rng.IntN(len(base))]
		}
		stats[b] = relChange(stat.Mean(rb, nil), mc)
	}
	slices.Sort(stats)
	tail := (1 - opts.Confidence) / 2
	// Empirical quantiles never interpolate, so infinite changes stay ordered
	// instead of turning into NaN.
	return stat.Quantile(tail, stat.Empirical, stats, nil), stat.Quantile(1-tail, stat.Empirical, stats, nil)
}

// expandAll lists the phases (or evals, or sweeps) a "*" threshold covers,
// in the order the current reports have them.
func expandAll(t threshold.Threshold, k metricKind, baseline, current []*schema.Report) []string {
	names := func(rs []*schema.Report) []string {
		var out []string
		add := func(name string) {
			if !slices.Contains(out, name) {
				out = append(out, name)
			}
		}
		for _, r := range rs {
			switch k {
			case phase:
				for _, ph := range r.Phases {
					add(ph.Phase)
				}
			case sweep:
				for _, s := range r.Sweeps {
					add(s.Name)
				}
			case eval:
				for _, e := range r.Evals {
					if _, ok := e.Metrics[t.Metric]; ok {
						add(e.Name)
					}
				}
			}
		}
		return out
	}
	cur := names(current)
	if !t.Relative {
		return cur
	}
	base := names(baseline)
	return slices.DeleteFunc(cur, func(n string) bool { return !slices.Contains(base, n) })
}

// sameShape refuses to compare a phase (or a sweep) whose runs differ in
// shape: a gate over different loads (or a sweep's other request shape,
// mode, SLOs or attainment target) would report a regression that is not
// one. Runs whose load went to different APIs (--api: chat against
// completions, whose prompts carry no chat template) are refused alike.
func sameShape(name string, k metricKind, relative bool, baseline, current []*schema.Report) error {
	type seen struct {
		shape, api, extra string
		where             string
	}
	shapeOf := func(r *schema.Report) (string, bool) {
		if k == sweep {
			if s := reports.FindSweep(r, name); s != nil {
				return reports.SweepShape(s), true
			}
			return "", false
		}
		if ph := reports.FindPhase(r, name); ph != nil {
			return reports.ShapeString(reports.Shape(ph)), true
		}
		return "", false
	}
	type side struct {
		name string
		rs   []*schema.Report
	}
	what, legend := "phase", " (requests/input/output)"
	if k == sweep {
		what, legend = "sweep", ""
	}
	var first *seen
	sides := []side{{"current", current}}
	if relative {
		sides = append([]side{{"baseline", baseline}}, sides...)
	}
	for _, side := range sides {
		for i, r := range side.rs {
			s, ok := shapeOf(r)
			if !ok {
				continue
			}
			where := fmt.Sprintf("%s %d (label %s)", side.name, i+1, r.Label)
			api, extra := route(r.Options.APIName()), r.Options.Extra()
			if first == nil {
				first = &seen{s, api, extra, where}
				continue
			}
			if api != first.api || extra != first.extra {
				return badinput.Errorf("%s %s's load went to %s in %s but to %s in %s; %s",
					what, name, requestOf(first.api, first.extra, extra), first.where, requestOf(api, extra, first.extra), where, notCompared)
			}
			if s != first.shape {
				return badinput.Errorf("%s %s is %s%s in %s but %s in %s; %ss of different shapes are not compared",
					what, name, first.shape, legend, first.where, s, where, what)
			}
		}
	}
	return nil
}

// notCompared says why loads of different requests are not gated.
const notCompared = "runs of different APIs (--api) or extra body fields (--extra-body) send different requests and are not compared"

// requestOf names what each request of a load was sent as, for a message
// that sets it against a load whose extra body was other: its route
// (route's) and the fields --extra-body added (schema.Options.Extra),
// shown as reports.ExtraBodyShown shows them.
func requestOf(route, extra, other string) string {
	if extra == "" {
		return route
	}
	return route + " with --extra-body " + reports.ExtraBodyShown(extra, other)
}

// route is the route a load of api (schema.Options.APIName) went to.
func route(api string) string {
	if api == "completions" {
		return "/completions"
	}
	return "/chat/completions"
}

// knownEvalMetrics is every eval metric a threshold may name: DESIGN.md's
// and any an input report carries.
func knownEvalMetrics(sides ...[]*schema.Report) map[string]bool {
	known := map[string]bool{}
	for _, m := range reports.EvalMetrics {
		known[m] = true
	}
	for _, rs := range sides {
		for _, r := range rs {
			for _, e := range r.Evals {
				for k := range e.Metrics {
					known[k] = true
				}
			}
		}
	}
	return known
}

// unit is the unit a metric's value is printed in.
func unit(metric string) string {
	metric, _, _ = strings.Cut(metric, "@") // a sweep point's: its metric's unit
	switch {
	case strings.HasSuffix(metric, "_tput"):
		return " tok/s"
	case metric == "wall_sec" || metric == "max_send_lag_sec":
		return " s"
	}
	for _, p := range []string{"lat_", "ttft_", "tpot_", "itl_"} {
		if strings.HasPrefix(metric, p) {
			return " s"
		}
	}
	return ""
}
