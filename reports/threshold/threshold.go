// Package threshold parses the gate's thresholds: a small k6-like language in
// which each expression bounds one metric of one phase or eval, either
// absolutely or relative to a baseline.
//
// Grammar (EBNF; blanks are allowed around the operator and before "%"):
//
//	threshold = selector operator value .
//	selector  = scope "." metric .
//	scope     = "*" | name .                 (* a phase or eval name; "*" is every one *)
//	name      = namechar { namechar } .      (* namechar: A–Z a–z 0–9 "_" "-" *)
//	metric    = word { "." word } [ "@" load ] . (* a block's field: cache.hit_rate *)
//	word      = lower { lower | digit | "_" } .
//	load      = decimal .                   (* a sweep point: its concurrency or request rate *)
//	operator  = "<=" | ">=" | "==" | "!=" | "<" | ">" .
//	value     = relative | absolute .
//	relative  = [ "+" | "-" ] decimal "%" .  (* bounds (current − baseline) / baseline × 100 *)
//	absolute  = [ "+" | "-" ] decimal .      (* bounds the current value itself *)
//	decimal   = digits [ "." [ digits ] ] [ exponent ] | "." digits [ exponent ] .
//	exponent  = ( "e" | "E" ) [ "+" | "-" ] digits .
//
// Metrics are the JSON field names of a report's phase results (out_tput,
// ttft_p99, tpot_med, error_rate, completed, …), an error class name
// (rate_limited, stalled, …: the count of that class), an eval metric
// (ppl.ppl, mmlu.acc, …), or a sweep's: its capacity (capacity,
// capacity_out_tput, capacity_goodput, capacity_out_tput_per_user) or any
// metric of its point at one load (goodput@64, ttft_p99@64). A field of a
// phase's block is named block.field: cache.hit_rate,
// cache.expected_hit_rate, cache.ttft_med_hit, prompt_drift.abs_p99. The
// scope ends at the first ".", since a name holds none. Examples:
//
//	single.tpot_med < 0.015
//	decode_medium.out_tput > -5%
//	*.error_rate <= 0.01
//	ppl.ppl < +1%
//	sweep.capacity > -5%
//	sweep.goodput@64 > -5%
//	chat.cache.hit_rate > -5%
package threshold

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/glmbench/glmbench/internal/text"
)

// Op is a comparison operator.
type Op string

// The operators, in the order the scanner tries them: two-character
// operators first, so "<=" is never read as "<" followed by "=".
const (
	LE Op = "<="
	GE Op = ">="
	EQ Op = "=="
	NE Op = "!="
	LT Op = "<"
	GT Op = ">"
)

var ops = []Op{LE, GE, EQ, NE, LT, GT}

// All is the scope that stands for every phase (or eval) that has the metric.
const All = "*"

// Threshold is one parsed expression.
type Threshold struct {
	// Scope is a phase or eval name, or All.
	Scope string
	// Metric is a phase field, an error class or an eval metric name.
	Metric string
	Op     Op
	// Value is the bound: the metric's own unit, or percent when Relative.
	Value float64
	// Relative bounds the change from the baseline, in percent, instead of
	// the current value.
	Relative bool
}

// ErrSyntax is wrapped by every parse error.
var ErrSyntax = errors.New("bad threshold")

// Parse reads one threshold expression.
func Parse(s string) (Threshold, error) {
	t, err := parse(s)
	if err != nil {
		return Threshold{}, fmt.Errorf("%w %q: %s", ErrSyntax, s, err)
	}
	return t, nil
}

// ParseAll reads every expression, stopping at the first bad one.
func ParseAll(exprs []string) ([]Threshold, error) {
	out := make([]Threshold, 0, len(exprs))
	for _, e := range exprs {
		t, err := Parse(e)
		if err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	return out, nil
}

func parse(s string) (Threshold, error) {
	var t Threshold
	// Scan: cut at the first operator character. Selectors never hold one.
	i := strings.IndexAny(s, "<>=!")
	if i < 0 {
		return t, errors.New(`no operator (one of <= >= == != < >)`)
	}
	sel, rest := strings.TrimSpace(s[:i]), s[i:]
	for _, op := range ops {
		if strings.HasPrefix(rest, string(op)) {
			t.Op, rest = op, rest[len(op):]
			break
		}
	}
	if t.Op == "" {
		return t, fmt.Errorf("unknown operator at %q (want one of <= >= == != < >)", first(rest, 2))
	}
	scope, metric, ok := strings.Cut(sel, ".")
	switch {
	case sel == "":
		return t, errors.New("no metric before the operator (want PHASE.METRIC, e.g. single.tpot_med)")
	case !ok:
		return t, fmt.Errorf("%q has no scope (want PHASE.METRIC or *.METRIC)", sel)
	case scope != All && !validName(scope):
		return t, fmt.Errorf("bad phase or eval name %q (letters, digits, _ and -, or *)", scope)
	case !validMetric(metric):
		return t, fmt.Errorf("bad metric name %q (lower-case letters, digits and _, starting with a letter; a block's field is block.field; a sweep point's metric takes @LOAD)", metric)
	}
	t.Scope, t.Metric = scope, metric
	val := strings.TrimSpace(rest)
	if pct, ok := strings.CutSuffix(val, "%"); ok {
		t.Relative = true
		val = strings.TrimSpace(pct)
	}
	if val == "" {
		return t, errors.New("no value after the operator")
	}
	num := val
	if num[0] == '+' || num[0] == '-' {
		num = num[1:]
	}
	if !validDecimal(num) {
		return t, fmt.Errorf("bad number %q", val)
	}
	v, err := strconv.ParseFloat(val, 64)
	if err != nil || math.IsInf(v, 0) {
		return t, fmt.Errorf("number %q out of range", val)
	}
	t.Value = v
	return t, nil
}

// String writes t in canonical form: parsing it gives t back.
func (t Threshold) String() string {
	return fmt.Sprintf("%s.%s %s %s", t.Scope, t.Metric, t.Op, t.ValueString())
}

// ValueString writes the bound: a relative one always with its sign and "%".
func (t Threshold) ValueString() string {
	v := strconv.FormatFloat(t.Value, 'g', -1, 64)
	if t.Relative {
		if !math.Signbit(t.Value) {
			v = "+" + v
		}
		return v + "%"
	}
	return v
}

// Holds reports whether x satisfies the threshold's comparison; x is the
// metric's value, or its change in percent for a relative threshold.
func (t Threshold) Holds(x float64) bool {
	switch t.Op {
	case LT:
		return x < t.Value
	case LE:
		return x <= t.Value
	case GT:
		return x > t.Value
	case GE:
		return x >= t.Value
	case EQ:
		return x == t.Value
	case NE:
		return x != t.Value
	}
	return false
}

// CrossedOver reports whether every value in [lo, hi] fails the comparison:
// the test a confidence interval must pass before noise may fail a gate.
func (t Threshold) CrossedOver(lo, hi float64) bool {
	switch t.Op {
	case LT:
		return lo >= t.Value
	case LE:
		return lo > t.Value
	case GT:
		return hi <= t.Value
	case GE:
		return hi < t.Value
	case EQ:
		return t.Value < lo || t.Value > hi
	case NE:
		return lo == t.Value && hi == t.Value
	}
	return true
}

// Defaults are the gate's thresholds when none is given, for every phase in
// both the baseline and the current reports: throughput may not drop by 5%,
// TTFT p99 may not grow by 10% (it is the noisiest of the three), and TPOT
// median may not grow by 5%.
func Defaults() []Threshold {
	return []Threshold{
		{Scope: All, Metric: "out_tput", Op: GT, Value: -5, Relative: true},
		{Scope: All, Metric: "ttft_p99", Op: LT, Value: 10, Relative: true},
		{Scope: All, Metric: "tpot_med", Op: LT, Value: 5, Relative: true},
	}
}

func validName(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range []byte(s) {
		if !(isLower(c) || c >= 'A' && c <= 'Z' || isDigit(c) || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

func validMetric(s string) bool {
	if name, load, ok := strings.Cut(s, "@"); ok {
		return validMetric(name) && validDecimal(load)
	}
	for _, w := range strings.Split(s, ".") {
		if !validWord(w) {
			return false
		}
	}
	return true
}

func validWord(s string) bool {
	if s == "" || !isLower(s[0]) {
		return false
	}
	for _, c := range []byte(s) {
		if !(isLower(c) || isDigit(c) || c == '_') {
			return false
		}
	}
	return true
}

// validDecimal accepts only plain decimals, so that ParseFloat's other forms
// (hex, "inf", "nan", underscores) never reach a threshold.
func validDecimal(s string) bool {
	i, n := 0, len(s)
	digits := func() int {
		j := i
		for i < n && isDigit(s[i]) {
			i++
		}
		return i - j
	}
	d := digits()
	if i < n && s[i] == '.' {
		i++
		d += digits()
	}
	if d == 0 {
		return false
	}
	if i < n && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < n && (s[i] == '+' || s[i] == '-') {
			i++
		}
		if digits() == 0 {
			return false
		}
	}
	return i == n
}

func isLower(c byte) bool { return c >= 'a' && c <= 'z' }
func isDigit(c byte) bool { return c >= '0' && c <= '9' }

func first(s string, n int) string { return text.Clip(s, n, "") }
