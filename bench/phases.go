// Package bench runs glmbench's load phases against an endpoint: it
// calibrates prompts to a target token count, sends each phase's requests
// (all at once, at a Poisson rate, or under a concurrency limit), keeps one
// record per request, and computes the phase's metrics from those records.
// It neither prints nor writes files.
package bench

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/glmbench/glmbench/internal/badinput"
)

// Spec is one phase's shape.
type Spec struct {
	Name string
	// N is the number of requests (batch_size).
	N int
	// In is the target usage.prompt_tokens of each request.
	In int
	// Out is each request's max_tokens.
	Out int
}

func (s Spec) String() string { return fmt.Sprintf("%s=%d/%d/%d", s.Name, s.N, s.In, s.Out) }

// Builtin lists the fixed phases in the order `all` runs them.
var Builtin = []Spec{
	{Name: "single", N: 1, In: 256, Out: 256},
	{Name: "decode_medium", N: 512, In: 256, Out: 256},
	{Name: "decode_long", N: 16, In: 8192, Out: 256},
	{Name: "throughput_8k", N: 929, In: 8192, Out: 1024},
}

func builtin(name string) (Spec, bool) {
	for _, s := range Builtin {
		if s.Name == name {
			return s, true
		}
	}
	return Spec{}, false
}

var phaseName = regexp.MustCompile(`^[a-z][a-z0-9_-]*$`)

// Bounds on a custom phase, so a typo cannot ask for billions. Request
// indexes are six digits in the prompt prefix.
const (
	maxRequests = 999_999
	maxTokens   = 10_000_000
)

// ParsePhase parses a custom phase "NAME=N/IN/OUT". Errors are bad input
// (badinput.Error) and say what is wrong in one line.
func ParsePhase(s string) (Spec, error) {
	name, rest, ok := strings.Cut(s, "=")
	if !ok {
		return Spec{}, badinput.Errorf("--phase %q: want NAME=N/IN/OUT, e.g. burst=64/1024/128", s)
	}
	name = strings.TrimSpace(name)
	if !phaseName.MatchString(name) {
		return Spec{}, badinput.Errorf("--phase %q: name must match [a-z][a-z0-9_-]*", s)
	}
	if _, isBuiltin := builtin(name); isBuiltin || name == "all" {
		return Spec{}, badinput.Errorf("--phase %q: %q is a built-in name; pick another", s, name)
	}
	parts := strings.Split(rest, "/")
	if len(parts) != 3 {
		return Spec{}, badinput.Errorf("--phase %q: want NAME=N/IN/OUT with three numbers", s)
	}
	v, err := parseCounts("--phase", s, parts, counts[:])
	if err != nil {
		return Spec{}, err
	}
	return Spec{Name: name, N: v[0], In: v[1], Out: v[2]}, nil
}

// ParseShape parses a request shape "IN/OUT" (sweep's --shape) within a
// custom phase's bounds. Errors are bad input, in one line.
func ParseShape(s string) (in, out int, err error) {
	parts := strings.Split(s, "/")
	if len(parts) != 2 {
		return 0, 0, badinput.Errorf("--shape %q: want IN/OUT, e.g. 256/128", s)
	}
	v, err := parseCounts("--shape", s, parts, counts[1:])
	if err != nil {
		return 0, 0, err
	}
	return v[0], v[1], nil
}

// phaseCount is one number of NAME=N/IN/OUT: what it is, and its bound.
type phaseCount struct {
	what  string
	limit int
}

// counts are the numbers of NAME=N/IN/OUT.
var counts = [3]phaseCount{{"N (requests)", maxRequests}, {"IN (input tokens)", maxTokens}, {"OUT (output tokens)", maxTokens}}

// parseCounts reads parts as the whole numbers cs describe, each from 1 to
// its bound; an error names flag and the whole value s.
func parseCounts(flag, s string, parts []string, cs []phaseCount) ([]int, error) {
	v := make([]int, len(parts))
	for i, p := range parts {
		n, err := strconv.Atoi(strings.TrimSpace(p))
		if err != nil || n < 1 || n > cs[i].limit {
			return nil, badinput.Errorf("%s %q: %s must be a whole number from 1 to %d", flag, s, cs[i].what, cs[i].limit)
		}
		v[i] = n
	}
	return v, nil
}

// Select returns the phases to run: the built-in ones named by phases (a
// comma list, or "all"), then the custom ones in flag order. With custom
// phases and no --phases, only the custom ones run; with neither, all four.
func Select(phases string, phasesGiven bool, custom []string) ([]Spec, error) {
	var out []Spec
	seen := map[string]bool{}
	add := func(s Spec) error {
		if seen[s.Name] {
			return badinput.Errorf("phase %q is named twice", s.Name)
		}
		seen[s.Name] = true
		out = append(out, s)
		return nil
	}
	if phasesGiven || len(custom) == 0 {
		if strings.TrimSpace(phases) == "" {
			phases = "all"
		}
		for _, name := range strings.Split(phases, ",") {
			name = strings.TrimSpace(name)
			if name == "all" {
				for _, s := range Builtin {
					if err := add(s); err != nil {
						return nil, err
					}
				}
				continue
			}
			s, ok := builtin(name)
			if !ok {
				return nil, badinput.Errorf("--phases: unknown phase %q (known: all, %s; custom ones go in --phase NAME=N/IN/OUT)", name, builtinNames())
			}
			if err := add(s); err != nil {
				return nil, err
			}
		}
	}
	for _, c := range custom {
		s, err := ParsePhase(c)
		if err != nil {
			return nil, err
		}
		if err := add(s); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func builtinNames() string {
	names := make([]string, len(Builtin))
	for i, s := range Builtin {
		names[i] = s.Name
	}
	return strings.Join(names, ", ")
}
