package server

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
)

// Faults make the server misbehave on purpose, the ways real endpoints do,
// so that harnesses (glmbench's own conformance suite and evals among them)
// can be tested against each failure. The zero value is a well-behaved server.
type Faults struct {
	// Echo, when "500", answers every echo request with the HTTP 500 a hosted
	// endpoint was seen to send; when "ignored", answers it as if echo were
	// not asked (no prompt text, no prompt logprobs).
	Echo string
	// Stall is the share (0–1) of streams that stop sending after their
	// first token, holding the connection open until the client leaves.
	Stall float64
	// DropDone ends streams without data: [DONE].
	DropDone bool
	// NoUsage leaves usage out of every answer, streamed or not.
	NoUsage bool
	// RateLimit answers 429 with Retry-After beyond this many requests in flight.
	RateLimit int

	mu      sync.Mutex
	streams int // streams begun, for choosing which ones stall
}

// echo500 is what a hosted endpoint answered echo requests with.
const echo500 = "ValidationError.__new__() missing 1 required positional argument: 'line_errors'"

// faultKinds are the --fault kinds, one row each: the switch of ParseFault,
// FaultHelp, FaultSynopsis and the unknown-kind error are made from them, so
// adding a fault is adding a row (and its field in Faults).
var faultKinds = []struct {
	name string
	// form is KIND[=VALUE] as the help shows it.
	form string
	help string
	// takes ends the error for a value set refuses: "<name> takes <takes>".
	takes string
	// set applies the value (hasValue: the spec had "="), or reports false
	// and leaves f as it was.
	set func(f *Faults, value string, hasValue bool) bool
}{
	{"echo", "echo=500|ignored", `echo requests answered with HTTP 500 ("` + echo500 + `"), or with no prompt logprobs`,
		"500 or ignored", func(f *Faults, v string, _ bool) bool {
			if v != "500" && v != "ignored" {
				return false
			}
			f.Echo = v
			return true
		}},
	{"stall", "stall=F", "that share (0-1) of streams stop sending after their first token",
		"a share from 0 to 1", func(f *Faults, v string, _ bool) bool {
			share, err := strconv.ParseFloat(v, 64)
			if err != nil || !(share >= 0 && share <= 1) { // NaN fails both
				return false
			}
			f.Stall = share
			return true
		}},
	{"drop-done", "drop-done", "streams end without data: [DONE]",
		"no value", flagFault(func(f *Faults) *bool { return &f.DropDone })},
	{"no-usage", "no-usage", "no usage anywhere",
		"no value", flagFault(func(f *Faults) *bool { return &f.NoUsage })},
	{"rate-limit", "rate-limit=N", "429 with Retry-After beyond N concurrent requests",
		"a number of requests ≥ 1", func(f *Faults, v string, _ bool) bool {
			n, err := strconv.Atoi(v)
			if err != nil || n < 1 {
				return false
			}
			f.RateLimit = n
			return true
		}},
}

// flagFault is the set of a fault that takes no value: it turns on the
// flag field picks.
func flagFault(field func(*Faults) *bool) func(*Faults, string, bool) bool {
	return func(f *Faults, _ string, hasValue bool) bool {
		if hasValue {
			return false
		}
		*field(f) = true
		return true
	}
}

// FaultHelp documents the faults, one line each, for `glmbench serve --help`.
var FaultHelp = faultHelp()

// FaultSynopsis lists the faults' forms on one line ("echo=500|ignored,
// stall=F, ..."), for the --fault flag's help.
var FaultSynopsis = faultSynopsis()

// FaultKinds are the --fault kinds' names, in the help's order.
func FaultKinds() []string {
	names := make([]string, len(faultKinds))
	for i, k := range faultKinds {
		names[i] = k.name
	}
	return names
}

func faultHelp() string {
	width := 0
	for _, k := range faultKinds {
		width = max(width, len(k.form))
	}
	lines := make([]string, len(faultKinds))
	for i, k := range faultKinds {
		lines[i] = fmt.Sprintf("%-*s%s", width+2, k.form, k.help)
	}
	return strings.Join(lines, "\n")
}

func faultSynopsis() string {
	forms := make([]string, len(faultKinds))
	for i, k := range faultKinds {
		forms[i] = k.form
	}
	return strings.Join(forms, ", ")
}

// ParseFault applies one --fault KIND[=VALUE] to f.
func ParseFault(spec string, f *Faults) error {
	kind, value, hasValue := strings.Cut(spec, "=")
	for _, k := range faultKinds {
		if k.name != kind {
			continue
		}
		if !k.set(f, value, hasValue) {
			return fmt.Errorf("--fault %q: %s takes %s", spec, kind, k.takes)
		}
		return nil
	}
	return fmt.Errorf("--fault %q: unknown kind (%s)", spec, strings.Join(FaultKinds(), ", "))
}

// stallNext says whether the stream beginning now is one that stalls: of
// every stream, floor(k·share) increases at exactly that share of them.
func (f *Faults) stallNext() bool {
	if f == nil || f.Stall <= 0 {
		return false
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	k := f.streams
	f.streams++
	return int(float64(k+1)*f.Stall) > int(float64(k)*f.Stall)
}

// echoFault answers an echo request as Faults.Echo says; it reports whether
// it wrote the answer.
func (f *Faults) echoFault(w http.ResponseWriter, spec *genSpec) bool {
	if f == nil || !spec.echo {
		return false
	}
	switch f.Echo {
	case "500":
		writeError(w, &apiError{Status: http.StatusInternalServerError, Message: echo500})
		return true
	case "ignored":
		spec.echo = false
		spec.params.PromptLogprobs, spec.params.PromptTopLogprobs = false, 0
	}
	return false
}

// usage is u, or nil when the server leaves usage out.
func (f *Faults) usage(u *usage) *usage {
	if f != nil && f.NoUsage {
		return nil
	}
	return u
}

// newSSE starts an event stream with the server's faults applied and, when
// the server records truth, the request's record (tl, which may be nil).
func (s *Server) newSSE(w http.ResponseWriter, tl *TruthLine) *sseWriter {
	out := newSSE(w)
	if f := s.opts.Faults; f != nil {
		out.dropDone = f.DropDone
		out.stall = f.stallNext()
	}
	if tl != nil {
		out.truth, out.line = s.opts.Truth, tl
	}
	return out
}

// afterToken is called after each chunk that carried output: it stamps the
// event for the truth record, and a stalling stream stops here, after its
// first, until the client goes away. It reports whether the stream must end.
func (s *sseWriter) afterToken(ctx context.Context) bool {
	if s.line != nil && s.err == nil {
		s.line.Events = append(s.line.Events, s.truth.stamp())
	}
	if !s.stall {
		return false
	}
	<-ctx.Done()
	return true
}

// end writes the request's truth record, if it has one.
func (s *sseWriter) end() {
	if s.line != nil {
		s.truth.write(s.line)
		s.line = nil
	}
}
