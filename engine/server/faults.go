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

// FaultHelp documents the faults, for `glmbench serve --help`.
const FaultHelp = `echo=500|ignored  echo requests answered with HTTP 500 ("` + echo500 + `"), or with no prompt logprobs
stall=F           that share (0-1) of streams stop sending after their first token
drop-done         streams end without data: [DONE]
no-usage          no usage anywhere
rate-limit=N      429 with Retry-After beyond N concurrent requests`

// ParseFault applies one --fault KIND[=VALUE] to f.
func ParseFault(spec string, f *Faults) error {
	kind, value, hasValue := strings.Cut(spec, "=")
	switch kind {
	case "echo":
		if value != "500" && value != "ignored" {
			return fmt.Errorf("--fault %q: echo takes 500 or ignored", spec)
		}
		f.Echo = value
	case "stall":
		v, err := strconv.ParseFloat(value, 64)
		if err != nil || v < 0 || v > 1 {
			return fmt.Errorf("--fault %q: stall takes a share from 0 to 1", spec)
		}
		f.Stall = v
	case "drop-done", "no-usage":
		if hasValue {
			return fmt.Errorf("--fault %q: %s takes no value", spec, kind)
		}
		if kind == "drop-done" {
			f.DropDone = true
		} else {
			f.NoUsage = true
		}
	case "rate-limit":
		n, err := strconv.Atoi(value)
		if err != nil || n < 1 {
			return fmt.Errorf("--fault %q: rate-limit takes a number of requests ≥ 1", spec)
		}
		f.RateLimit = n
	default:
		return fmt.Errorf("--fault %q: unknown kind (echo, stall, drop-done, no-usage, rate-limit)", spec)
	}
	return nil
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
