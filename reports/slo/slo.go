// Package slo reads service-level objectives and measures requests against
// them: which requests met every per-request objective, goodput and
// attainment, and whether a window's percentiles held. It is a leaf beside
// reports/summary, so a report can be re-made from requests.jsonl alone.
//
// An objective is written like a gate threshold without its scope:
//
//	slo    = metric operator value .
//	metric = base [ "_" stat ] .          (* no stat: each request's own value *)
//	base   = "ttft" | "tpot" | "lat" .
//	stat   = "mean" | "med" | "p50" | "p90" | "p99" | "p999" .
//	value  = duration | decimal .          (* "2s", "50ms", "1.5s"; a bare number is seconds *)
//
// with the gate's operators (<, <=, >, >=, ==, !=). "ttft < 2s" is met by each
// request whose own TTFT is under 2 s; "ttft_p99 < 2s" holds over a window
// when the p99 of its completed requests' TTFTs is under 2 s (window
// objectives may also name itl, the pooled inter-token gaps).
package slo

import (
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/glmbench/glmbench/internal/badinput"
	"github.com/glmbench/glmbench/reports/schema"
	"github.com/glmbench/glmbench/reports/threshold"
)

// SLO is one parsed objective.
type SLO struct {
	// Expr is the objective as given.
	Expr string
	// Base is ttft, tpot, lat (or itl, window objectives only).
	Base string
	// Stat is empty for a per-request objective, else the window statistic
	// (med for p50).
	Stat string
	Op   threshold.Op
	// Seconds is the bound.
	Seconds float64
}

// PerRequest reports whether each request is held to s (no statistic).
func (s SLO) PerRequest() bool { return s.Stat == "" }

// Metric is s's metric name as reports spell it: ttft, or ttft_p99.
func (s SLO) Metric() string {
	if s.Stat == "" {
		return s.Base
	}
	return s.Base + "_" + s.Stat
}

// String is s in canonical form: parsing it gives s back.
func (s SLO) String() string {
	return s.Metric() + " " + string(s.Op) + " " + time.Duration(math.Round(s.Seconds*1e9)).String()
}

func (s SLO) holds(x float64) bool {
	return threshold.Threshold{Op: s.Op, Value: s.Seconds}.Holds(x)
}

var (
	bases      = []string{"ttft", "tpot", "lat", "itl"}
	stats      = []string{"mean", "med", "p50", "p90", "p99", "p999"}
	operators  = []threshold.Op{threshold.LE, threshold.GE, threshold.EQ, threshold.NE, threshold.LT, threshold.GT}
	metricHelp = "ttft, tpot or lat for each request; ttft_p99, tpot_med, lat_p90, itl_p99, … (mean, med, p50, p90, p99, p999) over a window"
)

// Parse reads one objective. Its errors are bad input, in one line.
func Parse(expr string) (SLO, error) {
	bad := func(why string, args ...any) (SLO, error) {
		return SLO{}, badinput.Errorf("--slo %q: "+why, append([]any{expr}, args...)...)
	}
	i := strings.IndexAny(expr, "<>=!")
	if i < 0 {
		return bad("no operator (want e.g. 'ttft < 2s' or 'tpot_p99 <= 50ms')")
	}
	metric, rest := strings.TrimSpace(expr[:i]), expr[i:]
	var s SLO
	for _, op := range operators {
		if strings.HasPrefix(rest, string(op)) {
			s.Op, rest = op, rest[len(op):]
			break
		}
	}
	if s.Op == "" {
		return bad("unknown operator (want one of < <= > >= == !=)")
	}
	base, stat, _ := strings.Cut(metric, "_")
	if stat == "p50" {
		stat = "med"
	}
	switch {
	case !slices.Contains(bases, base) || stat != "" && !slices.Contains(stats, stat):
		return bad("unknown metric %q (%s)", metric, metricHelp)
	case base == "itl" && stat == "":
		return bad("itl has no per-request value; name a statistic over the window, e.g. itl_p99")
	}
	s.Expr, s.Base, s.Stat = expr, base, stat
	v, err := seconds(strings.TrimSpace(rest))
	if err != nil {
		return bad("%v", err)
	}
	s.Seconds = v
	return s, nil
}

// seconds reads a bound: a Go duration ("2s", "50ms") or plain seconds.
func seconds(v string) (float64, error) {
	if v == "" {
		return 0, errorString("no value after the operator")
	}
	if d, err := time.ParseDuration(v); err == nil {
		if d < 0 {
			return 0, errorString("the bound must not be negative")
		}
		return d.Seconds(), nil
	}
	x, err := strconv.ParseFloat(v, 64)
	if err != nil || math.IsInf(x, 0) || math.IsNaN(x) || strings.ContainsAny(v, "xXpP_") {
		return 0, errorString("bad value " + strconv.Quote(v) + " (want a duration such as 2s or 50ms, or seconds)")
	}
	if x < 0 {
		return 0, errorString("the bound must not be negative")
	}
	return x, nil
}

type errorString string

func (e errorString) Error() string { return string(e) }

// Set is every objective of a run or sweep.
type Set []SLO

// ParseAll reads every objective, stopping at the first bad one.
func ParseAll(exprs []string) (Set, error) {
	var out Set
	for _, e := range exprs {
		s, err := Parse(e)
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, nil
}

// Strings gives the objectives in canonical form, for a report.
func (set Set) Strings() []string {
	out := make([]string, len(set))
	for i, s := range set {
		out[i] = s.String()
	}
	return out
}

// Met reports whether rec completed and met every per-request objective. A
// failed, cancelled, unfinished or unsent request is a miss. A request with
// fewer than two output tokens has no TPOT and cannot miss a TPOT objective
// (vLLM's goodput counts its TPOT as 0).
func (set Set) Met(rec *schema.Record) bool {
	if !rec.Completed() {
		return false
	}
	for _, s := range set {
		if !s.PerRequest() {
			continue
		}
		var x float64
		switch s.Base {
		case "ttft":
			if rec.TFirst == nil {
				return false
			}
			x = *rec.TFirst
		case "tpot":
			v, ok := rec.TPOT()
			if !ok {
				continue
			}
			x = v
		case "lat":
			if rec.TEnd == nil {
				return false
			}
			x = *rec.TEnd
		}
		if !s.holds(x) {
			return false
		}
	}
	return true
}

// WindowHeld reports whether every window objective holds over r, and names
// the ones that did not. A statistic over an empty sample does not hold.
func (set Set) WindowHeld(r *schema.PhaseResult) (bool, []string) {
	var failed []string
	for _, s := range set {
		if s.PerRequest() {
			continue
		}
		v := stat(r, s.Base, s.Stat)
		if v == nil || !s.holds(*v) {
			failed = append(failed, s.Expr)
		}
	}
	return len(failed) == 0, failed
}

// stat is r's field <base>_<stat>.
func stat(r *schema.PhaseResult, base, st string) *float64 {
	fields := map[string][5]*float64{
		"ttft": {r.TTFTMean, r.TTFTMed, r.TTFTP90, r.TTFTP99, r.TTFTP999},
		"tpot": {r.TPOTMean, r.TPOTMed, r.TPOTP90, r.TPOTP99, r.TPOTP999},
		"lat":  {r.LatMean, r.LatMed, r.LatP90, r.LatP99, r.LatP999},
		"itl":  {r.ITLMean, r.ITLMed, r.ITLP90, r.ITLP99, r.ITLP999},
	}[base]
	k := slices.Index([]string{"mean", "med", "p90", "p99", "p999"}, st)
	if k < 0 {
		return nil
	}
	return fields[k]
}

// Apply sets r's SLO figures from records (the requests r counts): SLOMet,
// Goodput (met per second of wallSec) and SLOAttainment (met / records).
func (set Set) Apply(r *schema.PhaseResult, records []schema.Record, wallSec float64) {
	met := 0
	for i := range records {
		if set.Met(&records[i]) {
			met++
		}
	}
	r.SLOMet = &met
	g := 0.0
	if wallSec > 0 {
		g = float64(met) / wallSec
	}
	r.Goodput = &g
	if len(records) > 0 {
		a := float64(met) / float64(len(records))
		r.SLOAttainment = &a
	}
}
