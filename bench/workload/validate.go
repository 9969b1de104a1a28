package workload

import (
	"errors"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strings"

	"github.com/glmbench/glmbench/internal/badinput"
)

// Bounds of a phase's numbers.
const (
	MaxRequests = 999_999    // requests of a phase (multi-turn: sessions × turns)
	MaxTokens   = 10_000_000 // any token count, a multi-turn phase's last prompt included
	// minMass is the least share of a length distribution's mass that its
	// [Min, Max] must hold, so that bounding it by redrawing takes at most
	// about 1/minMass draws a length on average.
	minMass = 0.01
)

var nameRE = regexp.MustCompile(`^[a-z][a-z0-9_-]*$`)

// Kinds lists the phase kinds, in the order the docs give them.
var Kinds = []string{Fixed, Random, Dataset, SharedPrefix, MultiTurn, Trace}

// Dataset formats.
const (
	ShareGPT = "sharegpt"
	JSONL    = "jsonl"
	Text     = "text"
	Parquet  = "parquet"
)

// field is one optional field of a phase, for refusing those that do not
// apply to its kind.
type field struct {
	name string
	set  func(p *Phase) bool
}

var fields = []field{
	{"requests", func(p *Phase) bool { return p.Requests != 0 }},
	{"input_tokens", func(p *Phase) bool { return p.InputTokens != 0 }},
	{"output_tokens", func(p *Phase) bool { return p.OutputTokens != 0 }},
	{"range_ratio", func(p *Phase) bool { return p.RangeRatio != nil }},
	{"input", func(p *Phase) bool { return p.Input != nil }},
	{"output", func(p *Phase) bool { return p.Output != nil }},
	{"path", func(p *Phase) bool { return p.Path != "" }},
	{"format", func(p *Phase) bool { return p.Format != "" }},
	{"groups", func(p *Phase) bool { return p.Groups != 0 }},
	{"prefix_tokens", func(p *Phase) bool { return p.PrefixTokens != 0 }},
	{"question_tokens", func(p *Phase) bool { return p.QuestionTokens != 0 }},
	{"sessions", func(p *Phase) bool { return p.Sessions != 0 }},
	{"turns", func(p *Phase) bool { return p.Turns != 0 }},
	{"user_tokens", func(p *Phase) bool { return p.UserTokens != 0 }},
	{"think_time", func(p *Phase) bool { return p.ThinkTime != 0 }},
	{"time_scale", func(p *Phase) bool { return p.TimeScale != 0 }},
	{"time_unit", func(p *Phase) bool { return p.TimeUnit != "" }},
}

// applies lists, per kind, the optional fields it reads; the rest are
// refused. Required ones are checked in validate.
var applies = map[string][]string{
	Fixed:        {"requests", "input_tokens", "output_tokens"},
	Random:       {"requests", "input_tokens", "output_tokens", "range_ratio", "input", "output"},
	Dataset:      {"requests", "output_tokens", "path", "format"},
	SharedPrefix: {"requests", "output_tokens", "groups", "prefix_tokens", "question_tokens"},
	MultiTurn:    {"output_tokens", "sessions", "turns", "user_tokens", "think_time"},
	Trace:        {"requests", "path", "format", "time_scale", "time_unit"},
}

// only names the kinds a field applies to, for the refusal.
func only(name string) string {
	var ks []string
	for _, k := range Kinds {
		for _, f := range applies[k] {
			if f == name {
				ks = append(ks, k)
			}
		}
	}
	if len(ks) == 1 {
		return ks[0] + " phases only"
	}
	return strings.Join(ks[:len(ks)-1], ", ") + " and " + ks[len(ks)-1] + " phases only"
}

// Validate checks the phase as Load does (kind, fields that apply, bounds,
// arrival) and fills in its default arrival kind; its error is bad input
// naming the phase and the field. It does not open the phase's file.
func (p *Phase) Validate() error {
	if err := p.validate(); err != nil {
		return badinput.Errorf("phase %q: %s", p.Name, err)
	}
	return nil
}

// validate checks a decoded phase; its error names the field, and the
// caller adds the file and the phase. A valid phase's Arrival.Kind is
// filled in with its default.
func (p *Phase) validate() error {
	if !nameRE.MatchString(p.Name) {
		return fmt.Errorf("name %q: want lower-case letters, digits, - and _, starting with a letter", p.Name)
	}
	if len(applies[p.Kind]) == 0 {
		return fmt.Errorf("kind %q: want one of %s", p.Kind, strings.Join(Kinds, ", "))
	}
	for _, f := range fields {
		if f.set(p) && !slices.Contains(applies[p.Kind], f.name) {
			return fmt.Errorf("%s applies to %s", f.name, only(f.name))
		}
	}
	if p.Seed != nil && *p.Seed < 0 {
		return errors.New("seed: want 0 or more")
	}
	if (p.Kind == Dataset || p.Kind == Trace) && p.Path == "" {
		return errors.New("path: required")
	}
	n := p.Requests
	switch p.Kind {
	case Fixed:
		if err := firstErr(count("requests", n, 1), tokens("input_tokens", p.InputTokens), tokens("output_tokens", p.OutputTokens)); err != nil {
			return err
		}
	case Random:
		if err := p.validateRandom(); err != nil {
			return err
		}
	case Dataset:
		if err := firstErr(count("requests", n, 0), optTokens("output_tokens", p.OutputTokens)); err != nil {
			return err
		}
		if _, err := p.dataFormat(); err != nil {
			return err
		}
	case SharedPrefix:
		if err := firstErr(count("requests", n, 1), count("groups", p.Groups, 1), tokens("prefix_tokens", p.PrefixTokens),
			tokens("question_tokens", p.QuestionTokens), tokens("output_tokens", p.OutputTokens)); err != nil {
			return err
		}
		if p.Groups > n {
			return fmt.Errorf("groups %d: more than requests %d", p.Groups, n)
		}
		if p.PrefixTokens+p.QuestionTokens > MaxTokens {
			return fmt.Errorf("prefix_tokens + question_tokens: %d, over %d", p.PrefixTokens+p.QuestionTokens, MaxTokens)
		}
	case MultiTurn:
		if err := firstErr(count("sessions", p.Sessions, 1), count("turns", p.Turns, 1), tokens("user_tokens", p.UserTokens), tokens("output_tokens", p.OutputTokens)); err != nil {
			return err
		}
		if p.Sessions*p.Turns > MaxRequests {
			return fmt.Errorf("sessions × turns: %d requests, over %d", p.Sessions*p.Turns, MaxRequests)
		}
		if last := (p.Turns-1)*(p.UserTokens+p.OutputTokens) + p.UserTokens; last > MaxTokens {
			return fmt.Errorf("turn %d's prompt would be %d tokens, over %d", p.Turns, last, MaxTokens)
		}
		if p.ThinkTime < 0 {
			return fmt.Errorf("think_time %s: want 0 or more", p.ThinkTime)
		}
		n = p.Sessions
	case Trace:
		if err := count("requests", n, 0); err != nil {
			return err
		}
		if p.TimeScale < 0 || math.IsInf(p.TimeScale, 0) {
			return fmt.Errorf("time_scale %g: want a number over 0", p.TimeScale)
		}
		if p.TimeUnit != "" && p.TimeUnit != "ms" && p.TimeUnit != "s" {
			return fmt.Errorf("time_unit %q: want ms or s", p.TimeUnit)
		}
		if _, err := p.dataFormat(); err != nil {
			return err
		}
	}
	if p.Kind == Dataset || p.Kind == Trace {
		if name, ok := strings.CutPrefix(p.Path, embeddedPrefix); ok && embedded[name] == "" {
			return fmt.Errorf("path %q: no such embedded sample (there are embedded:sharegpt and embedded:trace)", p.Path)
		}
	}
	return p.Arrival.validate(p.Kind)
}

func (p *Phase) validateRandom() error {
	if err := count("requests", p.Requests, 1); err != nil {
		return err
	}
	for _, side := range []struct {
		name string
		l    int
		d    *Dist
	}{{"input", p.InputTokens, p.Input}, {"output", p.OutputTokens, p.Output}} {
		switch {
		case side.l != 0 && side.d != nil:
			return fmt.Errorf("%s_tokens and %s: give one, a length or a distribution", side.name, side.name)
		case side.d != nil:
			if err := side.d.validate(); err != nil {
				return fmt.Errorf("%s: %w", side.name, err)
			}
		default:
			if err := tokens(side.name+"_tokens", side.l); err != nil {
				return fmt.Errorf("%w (or %s: {dist: ...})", err, side.name)
			}
			if p.RangeRatio == nil {
				return fmt.Errorf("range_ratio: required with %s_tokens (SGLang's --random-range-ratio: 1 draws fixed lengths, 0 from 1 to the length)", side.name)
			}
		}
	}
	if r := p.RangeRatio; r != nil {
		if p.Input != nil && p.Output != nil {
			return errors.New("range_ratio applies to input_tokens and output_tokens, not to distributions")
		}
		if !(*r >= 0 && *r <= 1) {
			return fmt.Errorf("range_ratio %g: want 0 to 1", *r)
		}
	}
	return nil
}

// validate checks a length distribution, including that [Min, Max] holds
// at least minMass of it, so that redrawing ends.
func (d *Dist) validate() error {
	if d.Min < 1 || d.Max > MaxTokens {
		return fmt.Errorf("min %d, max %d: want 1 ≤ min ≤ max ≤ %d", d.Min, d.Max, MaxTokens)
	}
	if d.Min > d.Max {
		return fmt.Errorf("min %d over max %d", d.Min, d.Max)
	}
	switch d.Dist {
	case "uniform":
		if d.Mean != 0 || d.StdDev != 0 {
			return errors.New("uniform takes min and max only, not mean or stddev")
		}
		return nil
	case "normal", "lognormal":
	default:
		return fmt.Errorf("dist %q: want uniform, normal or lognormal", d.Dist)
	}
	if !(d.Mean > 0 && d.Mean <= MaxTokens) {
		return fmt.Errorf("%s mean %g: want over 0, at most %d", d.Dist, d.Mean, MaxTokens)
	}
	if !(d.StdDev > 0 && d.StdDev <= MaxTokens) {
		return fmt.Errorf("%s stddev %g: want over 0, at most %d", d.Dist, d.StdDev, MaxTokens)
	}
	if m := d.mass(); !(m >= minMass) {
		return fmt.Errorf("%s mean %g stddev %g puts %.2g%% of its mass in [%d, %d], under %g%%: widen the bounds",
			d.Dist, d.Mean, d.StdDev, 100*m, d.Min, d.Max, 100*minMass)
	}
	return nil
}

// validate checks an arrival process and fills in its default kind:
// trace for a trace phase, burst for the others.
func (a *Arrival) validate(kind string) error {
	if a.Kind == "" {
		a.Kind = Burst
		if kind == Trace {
			a.Kind = OwnTimes
		}
	}
	rate := func(name string, v float64) error {
		if !(v > 0) || math.IsInf(v, 0) {
			return fmt.Errorf("arrival: %s %g: want a number over 0", name, v)
		}
		return nil
	}
	unused := func(names ...string) error {
		vals := map[string]float64{"rate": a.Rate, "burstiness": a.Burstiness, "from": a.From, "to": a.To}
		for _, n := range []string{"rate", "burstiness", "from", "to"} {
			if vals[n] != 0 && !slices.Contains(names, n) {
				return fmt.Errorf("arrival: %s does not apply to %s arrivals", n, a.Kind)
			}
		}
		return nil
	}
	switch a.Kind {
	case Burst:
		return unused()
	case Poisson, Constant:
		return firstErr(unused("rate"), rate("rate", a.Rate))
	case Gamma:
		return firstErr(unused("rate", "burstiness"), rate("rate", a.Rate), rate("burstiness", a.Burstiness))
	case Ramp:
		if err := unused("from", "to"); err != nil {
			return err
		}
		if !(a.From >= 0) || math.IsInf(a.From, 0) {
			return fmt.Errorf("arrival: from %g: want 0 or more", a.From)
		}
		return rate("to", a.To)
	case OwnTimes:
		if kind != Trace {
			return errors.New("arrival: trace applies to trace phases only")
		}
		return unused()
	}
	return fmt.Errorf("arrival: kind %q: want burst, poisson, gamma, ramp, constant or trace", a.Kind)
}

// dataFormat is the phase's file format: Format, else guessed from the
// path's extension (a data set's; parquet for a folder or pattern, of
// shards) or jsonl (a trace's).
func (p *Phase) dataFormat() (string, error) {
	if p.Kind == Trace {
		if p.Format != "" && p.Format != JSONL {
			return "", fmt.Errorf("format %q: a trace is jsonl", p.Format)
		}
		return JSONL, nil
	}
	dir := isDir(p.Path)
	switch p.Format {
	case Parquet:
		return p.Format, nil
	case ShareGPT, JSONL, Text:
		if dir {
			return "", fmt.Errorf("path %q: a folder, and format %s: a folder data set is parquet shards", p.Path, p.Format)
		}
		if isGlob(p.Path) {
			return "", fmt.Errorf("path %q: a pattern, and format %s: a pattern's data set is parquet shards", p.Path, p.Format)
		}
		return p.Format, nil
	case "":
	default:
		return "", fmt.Errorf("format %q: want sharegpt, jsonl, text or parquet", p.Format)
	}
	if dir || isGlob(p.Path) {
		return Parquet, nil
	}
	name := p.Path
	if e, ok := embedded[strings.TrimPrefix(name, embeddedPrefix)]; ok && strings.HasPrefix(name, embeddedPrefix) {
		name = e
	}
	switch {
	case strings.HasSuffix(name, ".json"):
		return ShareGPT, nil
	case strings.HasSuffix(name, ".jsonl"):
		return JSONL, nil
	case strings.HasSuffix(name, ".txt"):
		return Text, nil
	case strings.HasSuffix(name, ".parquet"):
		return Parquet, nil
	}
	return "", fmt.Errorf("path %q: format: required (sharegpt, jsonl, text or parquet) unless the name ends in .json, .jsonl, .txt or .parquet", p.Path)
}

// count checks a count field: min (0 or 1) to MaxRequests.
func count(name string, v, min int) error {
	if v < min || v > MaxRequests {
		if min == 1 && v == 0 {
			return fmt.Errorf("%s: required", name)
		}
		return fmt.Errorf("%s %d: want %d to %d", name, v, min, MaxRequests)
	}
	return nil
}

// tokens checks a required token count.
func tokens(name string, v int) error {
	if v == 0 {
		return fmt.Errorf("%s: required", name)
	}
	return optTokens(name, v)
}

// optTokens checks an optional token count (0: absent).
func optTokens(name string, v int) error {
	if v < 0 || v > MaxTokens {
		return fmt.Errorf("%s %d: want 1 to %d", name, v, MaxTokens)
	}
	return nil
}

func firstErr(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}
