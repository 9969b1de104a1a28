package workload

import (
	"cmp"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"

	"github.com/glmbench/glmbench/internal/badinput"
)

// Expand returns the requests the phase sends, in order, drawn with the
// phase's seed, or seed when it has none: the same phase and seed give the
// same requests. It checks the phase first (Validate), so a phase built in
// code rather than read by Load is safe too. A data set or trace is read
// here, up to the items the phase needs, so a malformed file is refused
// (bad input, FILE:LINE) before any load is sent. A multi-turn phase's
// later turns carry their session's start in At, so that sorting by At
// keeps a session's turns after its start.
func (p *Phase) Expand(seed int64) ([]Request, error) {
	reqs, _, err := p.ExpandWarn(seed)
	return reqs, err
}

// ExpandWarn is Expand, also returning warnings for the terminal, such as
// how many conversations of a ShareGPT file were skipped and why.
func (p *Phase) ExpandWarn(seed int64) ([]Request, []string, error) {
	if err := p.Validate(); err != nil {
		return nil, nil, err
	}
	if p.Seed != nil {
		seed = *p.Seed
	}
	r := rand.New(rand.NewPCG(uint64(seed), lengthStream))
	var reqs []Request
	var warns []string
	switch p.Kind {
	case Fixed, Random:
		in, out := fixedLen(p.InputTokens), fixedLen(p.OutputTokens)
		var inS, outS sampler = in, out
		if p.Kind == Random {
			inS, outS = p.lengths()
		}
		for i := range p.Requests {
			reqs = append(reqs, Request{I: i, Input: inS.draw(r), Output: outS.draw(r)})
		}
	case SharedPrefix:
		for i := range p.Requests {
			reqs = append(reqs, Request{I: i, Group: i%p.Groups + 1, Input: p.PrefixTokens + p.QuestionTokens,
				PrefixTokens: p.PrefixTokens, Output: p.OutputTokens})
		}
	case MultiTurn:
		starts := Arrivals(p.Arrival, p.Sessions, seed)
		u, a := p.UserTokens, p.OutputTokens
		for s := 1; s <= p.Sessions; s++ {
			for k := 1; k <= p.Turns; k++ {
				rq := Request{I: (s-1)*p.Turns + k - 1, At: starts[s-1], Session: s, Turn: k,
					Input: (k-1)*(u+a) + u, UserTokens: u, Output: a}
				if k > 1 {
					rq.Think = p.ThinkTime.Std()
				}
				reqs = append(reqs, rq)
			}
		}
		return reqs, nil, nil
	case Dataset:
		var err error
		if reqs, warns, err = p.expandDataset(); err != nil {
			return nil, nil, err
		}
	case Trace:
		ents, err := p.readTrace()
		if err != nil {
			return nil, nil, err
		}
		for i, e := range ents {
			reqs = append(reqs, Request{I: i, At: e.At, Input: e.Input, Output: e.Output, Line: e.Line})
		}
		if p.Arrival.Kind == OwnTimes {
			return reqs, nil, nil
		}
	default:
		return nil, nil, badinput.Errorf("phase %q: kind %q: want one of %s", p.Name, p.Kind, strings.Join(Kinds, ", "))
	}
	for i, at := range Arrivals(p.Arrival, len(reqs), seed) {
		reqs[i].At = at
	}
	return reqs, warns, nil
}

// expandDataset reads the phase's data set: its first Requests usable
// items (all when Requests is 0), refusing a set with fewer.
func (p *Phase) expandDataset() ([]Request, []string, error) {
	format, err := p.dataFormat()
	if err != nil {
		return nil, nil, badinput.Errorf("phase %q: %s", p.Name, err)
	}
	got, err := p.loadData(format)
	if err != nil {
		return nil, nil, err
	}
	var warns []string
	skips := "" // the warning's text, which a refusal says too: it is then never printed
	if n := sum(got.skipped); n > 0 {
		var why []string
		for _, k := range sortedKeys(got.skipped) {
			why = append(why, fmt.Sprintf("%d with %s", got.skipped[k], k))
		}
		skips = fmt.Sprintf("skipped %d unusable conversations (%s)", n, strings.Join(why, ", "))
		warns = append(warns, p.Path+": "+skips)
		skips = ": " + skips
	}
	if len(got.items) == 0 {
		return nil, nil, badinput.Errorf("%s: no usable items%s", p.Path, skips)
	}
	if len(got.items) < p.Requests {
		return nil, nil, badinput.Errorf("%s: %d usable items, phase %q asks for %d%s", p.Path, len(got.items), p.Name, p.Requests, skips)
	}
	reqs := make([]Request, len(got.items))
	for i, it := range got.items {
		out := it.MaxTokens
		if out == 0 {
			out = p.OutputTokens
		}
		if out == 0 && it.AnswerChars == 0 {
			file := cmp.Or(it.File, p.Path)
			where := fmt.Sprintf("%s:%d", file, it.Line)
			if format == Parquet {
				where = fmt.Sprintf("%s: row %d", file, it.Line)
			}
			return nil, nil, badinput.Errorf("%s: no max_tokens, and phase %q has no output_tokens", where, p.Name)
		}
		reqs[i] = Request{I: i, Messages: it.Messages, Output: out, AnswerChars: it.AnswerChars, Line: it.Line, File: it.File}
	}
	return reqs, warns, nil
}

// loadData reads the phase's data set of the given format, a file, or a
// folder or pattern of parquet shards, up to the items the phase needs.
func (p *Phase) loadData(format string) (*loaded, error) {
	if isDir(p.Path) || isGlob(p.Path) {
		return loadParquetDir(p.Path, p.Requests, p.OutputTokens == 0)
	}
	rc, err := OpenData(p.Path, "")
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	return loadDataset(rc, p.Path, format, p.Requests, p.OutputTokens == 0)
}

// readTrace reads the phase's trace: its first Requests entries (all
// when 0), refusing a trace with fewer.
func (p *Phase) readTrace() ([]traceEntry, error) {
	rc, err := OpenData(p.Path, "")
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	unit := 1e-3
	if p.TimeUnit == "s" {
		unit = 1
	}
	scale := p.TimeScale
	if scale == 0 {
		scale = 1
	}
	ents, err := loadTrace(rc, p.Path, p.Requests, unit, scale)
	if err != nil {
		return nil, err
	}
	if len(ents) == 0 {
		return nil, badinput.Errorf("%s: no requests", p.Path)
	}
	if len(ents) < p.Requests {
		return nil, badinput.Errorf("%s: %d requests, phase %q asks for %d", p.Path, len(ents), p.Name, p.Requests)
	}
	return ents, nil
}

// Describe says the phase in one line for terminals and reports, e.g.
// "shared-prefix: 32 requests, 4 groups, 512+32 tokens, out 8, poisson 8/s".
func (p *Phase) Describe() string {
	n := fmt.Sprintf("%d requests", p.Requests)
	if p.Requests == 0 {
		n = "all requests"
	}
	var parts []string
	switch p.Kind {
	case Fixed:
		parts = []string{n, fmt.Sprintf("%d tokens", p.InputTokens), fmt.Sprintf("out %d", p.OutputTokens)}
	case Random:
		side := func(what string, l int, d *Dist) string {
			if d != nil {
				return what + " " + d.String()
			}
			r := 1.0 // fixed, when a phase built in code gives none
			if p.RangeRatio != nil {
				r = *p.RangeRatio
			}
			s := rangeLen(l, r)
			if u, ok := s.(uniformLen); ok {
				return fmt.Sprintf("%s %d..%d", what, u.lo, u.hi)
			}
			return fmt.Sprintf("%s %d", what, l)
		}
		parts = []string{n, side("in", p.InputTokens, p.Input), side("out", p.OutputTokens, p.Output)}
	case Dataset:
		f, _ := p.dataFormat()
		out := "out from answers"
		switch {
		case p.OutputTokens > 0:
			out = fmt.Sprintf("out %d", p.OutputTokens)
		case f == Parquet || f == JSONL:
			out = "out from answers or max_tokens"
		case f != ShareGPT:
			out = "out from max_tokens"
		}
		parts = []string{n + " from " + p.Path + " (" + f + ")", out}
	case SharedPrefix:
		parts = []string{n, fmt.Sprintf("%d groups", p.Groups), fmt.Sprintf("%d+%d tokens", p.PrefixTokens, p.QuestionTokens),
			fmt.Sprintf("out %d", p.OutputTokens)}
	case MultiTurn:
		parts = []string{fmt.Sprintf("%d sessions × %d turns", p.Sessions, p.Turns), fmt.Sprintf("user %d tokens", p.UserTokens),
			fmt.Sprintf("out %d", p.OutputTokens), "think " + p.ThinkTime.String()}
	case Trace:
		scale := p.TimeScale
		if scale == 0 {
			scale = 1
		}
		parts = []string{n + " from " + p.Path, fmt.Sprintf("time ×%g", scale)}
	}
	return p.Kind + ": " + strings.Join(append(parts, p.Arrival.String()), ", ")
}

func sum(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}

func sortedKeys(m map[string]int) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}
