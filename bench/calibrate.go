package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/glmbench/glmbench/endpoints"
	"github.com/glmbench/glmbench/internal/badinput"
	"github.com/glmbench/glmbench/reports/schema"
	"github.com/glmbench/glmbench/reports/summary"
)

// Calibration is the filler length that brings a request's prompt to a
// target usage.prompt_tokens on one endpoint.
type Calibration struct {
	Target int
	// Chars is the filler length in bytes (the filler is ASCII).
	Chars int
	// PromptTokens is what the endpoint counted for that filler, -1 when it
	// reports no usage.
	PromptTokens int
	Probes       int
	// Warning says why the calibration is not within tolerance, if it is not.
	Warning string
}

// Tolerance is how far a calibrated prompt may be from its target:
// max(4 tokens, 1%).
func Tolerance(target int) int { return max(4, target/100) }

// maxProbes bounds the calibration search.
const maxProbes = 16

// charsPerTokenGuess starts the search; the search measures the real ratio.
const charsPerTokenGuess = 4

// ProbeError is an endpoint's refusal of a probe: bad input (Prepare
// returns it wrapped in a badinput.Error), said before any load is sent.
type ProbeError struct {
	Phase  string
	What   string
	Status int
	Class  schema.Class
	Msg    string
	// Limit is the probe's time limit, for a probe that ran past it.
	Limit time.Duration
	// Runaway is set for a probe that streamed past its max_tokens until
	// the limit: not a slow server, one that ignores max_tokens.
	Runaway bool
}

func (e *ProbeError) Error() string {
	where := "the endpoint"
	if e.Phase != "" {
		where = "phase " + e.Phase + ": the endpoint"
	}
	switch {
	case e.Status != 0 && e.Status != 200:
		return fmt.Sprintf("%s rejected the %s (HTTP %d: %s)", where, e.What, e.Status, e.Msg)
	case e.Class == schema.Connect:
		return fmt.Sprintf("%s is unreachable during the %s: %s", where, e.What, e.Msg)
	case e.Limit > 0 && e.Class == schema.Stalled:
		return fmt.Sprintf("%s went silent during the %s for its limit of %s (%s: %s; --stall-timeout sets it)", where, e.What, e.Limit, e.Class, e.Msg)
	case e.Limit > 0 && (e.Class == schema.TTFTTimeout || e.Class == schema.TotalTimeout):
		hint := "; --probe-timeout sets the limit, for a server that is only slow"
		if e.Runaway {
			hint = ": it does not honour max_tokens"
		}
		return fmt.Sprintf("%s did not finish the %s within its limit of %s (%s: %s%s)", where, e.What, e.Limit, e.Class, e.Msg, hint)
	default:
		return fmt.Sprintf("%s failed the %s (%s: %s)", where, e.What, e.Class, e.Msg)
	}
}

// ProbeIndex is the request index every probe's prefix carries, under a
// nonce of its own: same length as the load's prefixes, so the same token
// count, and no prefix the load could find cached.
const ProbeIndex = 999999

// prober sends calibration probes: requests of the load's exact shape,
// except max_tokens 1.
type prober struct {
	client *endpoints.Client
	shape  Shape
	nonce  string
	fill   *filler
	// lim bounds each probe: its time limit is lim.Total, and its
	// MaxTokens is 1, so content past it is the endpoint's fault.
	lim    endpoints.StreamLimits
	phase  string
	probes int
	// noUsage is set once the endpoint has shown it reports no usage.
	noUsage bool
	// sleep waits before retrying a probe answered 429 or 503.
	sleep func(context.Context, time.Duration)
}

var errNoUsage = errors.New("no usage reported")

// tokens returns usage.prompt_tokens for a prompt with chars of filler.
func (p *prober) tokens(ctx context.Context, chars int) (int, error) {
	p.probes++
	body := p.shape.chatBody(Prefix(p.nonce, ProbeIndex), p.fill.Text(chars), 1, true)
	var res endpoints.StreamResult
	for attempt := 0; ; attempt++ {
		res.Reset()
		p.client.StreamChat(ctx, body, p.lim, nil, &res)
		if res.Cancelled != nil {
			return 0, res.Cancelled
		}
		// A probe is not load: a busy endpoint gets two more chances.
		if (res.Class == schema.RateLimited || res.Class == schema.QueueFull) && attempt < 2 {
			p.sleep(ctx, retryWait(res.RetryAfter))
			continue
		}
		break
	}
	// A request cut off by max_tokens 1 may end with no content event; only
	// a real failure counts here.
	if res.Class != "" && res.Class != schema.Empty {
		return 0, p.fail("calibration probe (max_tokens 1)", &res)
	}
	if res.Usage && res.PromptTokens > 0 {
		return res.PromptTokens, nil
	}
	// No usage in the stream: ask the same thing without streaming, under
	// the same time limit.
	pctx, cancel := context.WithTimeoutCause(ctx, p.lim.Total, errProbeLimit)
	defer cancel()
	resp, err := p.client.Post(pctx, "/chat/completions", p.shape.chatBody(Prefix(p.nonce, ProbeIndex), p.fill.Text(chars), 1, false))
	switch {
	case err != nil && ctx.Err() != nil:
		return 0, context.Cause(ctx)
	case err != nil && errors.Is(context.Cause(pctx), errProbeLimit):
		return 0, &ProbeError{Phase: p.phase, What: "calibration probe (non-streamed)", Class: schema.TotalTimeout, Msg: "no whole answer", Limit: p.lim.Total}
	case err != nil:
		if status, ok := endpoints.Answered(err); ok {
			// A redirect (never followed) or an unreadable body: an answer.
			class := schema.StreamError
			if status >= 300 && status < 400 {
				class = schema.Redirect
			}
			return 0, &ProbeError{Phase: p.phase, What: "calibration probe (non-streamed)", Status: status, Class: class, Msg: short(err.Error())}
		}
		return 0, &ProbeError{Phase: p.phase, What: "calibration probe", Class: schema.Connect, Msg: err.Error()}
	}
	if resp.Status != 200 {
		// A 2xx body comes with only its long secrets redacted (it was for
		// parsing): redact all of them before the cut.
		msg := summary.ErrorMessage(p.client.Endpoint().RedactBytes(resp.Body))
		return 0, &ProbeError{Phase: p.phase, What: "calibration probe (non-streamed)", Status: resp.Status, Msg: short(msg)}
	}
	var v struct {
		Usage *endpoints.Usage `json:"usage"`
	}
	if json.Unmarshal(resp.Body, &v) != nil || v.Usage == nil || v.Usage.PromptTokens <= 0 {
		return 0, errNoUsage
	}
	return v.Usage.PromptTokens, nil
}

var errProbeLimit = errors.New("calibration probe ran past its time limit")

func (p *prober) fail(what string, res *endpoints.StreamResult) error {
	msg := res.Detail
	if len(res.Body) > 0 && res.Status != 200 {
		msg = summary.ErrorMessage(res.Body)
	}
	pe := &ProbeError{Phase: p.phase, What: what, Status: res.Status, Class: res.Class, Msg: short(msg)}
	switch res.Class {
	case schema.TTFTTimeout, schema.TotalTimeout, schema.Stalled:
		// A probe that outlived its limit: say what it got meanwhile.
		pe.Limit = p.lim.Total
		if res.Class == schema.Stalled {
			pe.Limit = p.lim.Stall
		}
		switch n := len(res.Events); {
		case n == 0:
			pe.Msg = "no content event"
		case p.lim.MaxTokens > 0 && n > p.lim.MaxTokens:
			pe.Msg = fmt.Sprintf("%s content events for max_tokens %d, and no end", count(n), p.lim.MaxTokens)
			pe.Runaway = true
		case res.Class == schema.Stalled:
			pe.Msg = fmt.Sprintf("silent after %s content events", count(n))
		default:
			pe.Msg = fmt.Sprintf("%s content events, and no end", count(n))
		}
	case schema.StreamError, schema.QueueFull:
		if len(res.Body) > 0 {
			pe.Msg = short(summary.ErrorMessage(res.Body))
		}
	}
	return pe
}

func short(s string) string {
	if len(s) > 160 {
		return s[:160] + "…"
	}
	return s
}

// retryWait reads Retry-After (seconds), bounded to [1s, 10s].
func retryWait(h string) time.Duration {
	if n, err := strconv.Atoi(h); err == nil {
		return min(max(time.Duration(n)*time.Second, time.Second), 10*time.Second)
	}
	return time.Second
}

// maxCharsPerToken bounds how many bytes of the filler one token holds:
// ordinary English words take 3 to 6 under any tokenizer, so a count that
// grows by less than one token per 16 bytes of filler is not counting it.
const maxCharsPerToken = 16

// calibrate finds the filler length whose prompt counts target tokens within
// Tolerance. The endpoint's count is close to a + b·chars, so a secant step
// inside a bracket that always holds the target converges in a few probes.
//
// It knows it is probing a real server. No probe is longer than the filler
// that the ratio measured so far calls for (the first assumes one byte per
// token, which cannot overshoot), so no prompt is more than about twice what
// the target needs. A server that truncates an over-long prompt and counts
// what it kept (llama.cpp with context shift, answering 200) shows as a count
// that stops growing with the filler: the search then stays below that
// length and, unless the target lies below the cut, ends in a few probes as
// bad input naming about where the count stops. A 400 for a prompt that the
// ratio puts below the target ends it at once.
func (p *prober) calibrate(ctx context.Context, target int) (Calibration, error) {
	tol := Tolerance(target)
	cal := Calibration{Target: target, PromptTokens: -1}
	done := func(chars, toks int) (Calibration, error) {
		cal.Chars, cal.PromptTokens, cal.Probes = chars, toks, p.probes
		if d := toks - target; d > tol || d < -tol {
			cal.Warning = fmt.Sprintf("calibrated prompt has %d tokens, %d from the target %d (tolerance %d)", toks, d, target, tol)
		}
		return cal, nil
	}
	base, err := p.tokens(ctx, 0)
	if errors.Is(err, errNoUsage) {
		p.noUsage = true
		cal.Chars, cal.Probes = target*charsPerTokenGuess, p.probes
		cal.Warning = fmt.Sprintf("the endpoint reports no usage, so prompts are not calibrated (%d characters of filler, about %d per token, assumed)", cal.Chars, charsPerTokenGuess)
		return cal, nil
	}
	if err != nil {
		return cal, err
	}
	if base > target+tol {
		return cal, badinput.Errorf("phase %s: an input of %d tokens is below the endpoint's smallest prompt of %d tokens (chat template and prefix)", p.phase, target, base)
	}
	if base >= target-tol {
		return done(0, base)
	}
	lo, tlo := 0, base // tlo < target
	hi, thi := -1, 0   // thi > target, or math.MaxInt for a refusal, once found
	best, tbest := 0, base
	// slope is tokens per filler byte, measured from the empty filler to lo.
	slope := func() float64 {
		if lo == 0 {
			return 0
		}
		return float64(tlo-base) / float64(lo)
	}
	// toward is the filler the measured ratio calls for; below a refused
	// length, halfway to it when the ratio points at or past it.
	toward := func() int {
		next := lo * 2
		if s := slope(); s > 0 {
			next = lo + int(float64(target-tlo)/s) + 1
		} else if hi >= 0 {
			next = hi
		}
		if hi >= 0 && next >= hi-1 {
			next = lo + (hi-lo)/2
		}
		return max(next, lo+1)
	}
	// cut is set once a probe's count fell short of the filler (firstC
	// characters counted firstT): the endpoint truncates. The search goes
	// on below that length, to reach the target if the cut was only an
	// overshoot, or else to narrow down where the count stops following.
	cut, firstC, firstT := false, 0, 0
	limit := maxProbes
	// First guess: one character per token. The filler is ASCII and no
	// tokenizer makes more than one token of a byte, so this cannot
	// overshoot (and so cannot ask for more than the context holds); the
	// probe then measures the real ratio.
	c := target - base
search:
	for p.probes < limit {
		t, err := p.tokens(ctx, c)
		if err != nil {
			var pe *ProbeError
			if !errors.As(err, &pe) || pe.Status != 400 {
				return cal, err
			}
			// Refused, as too long for the context, most likely. If the
			// ratio puts that prompt below the target, no prompt of the
			// target's length will do.
			if s := slope(); s > 0 {
				if at := tlo + int(s*float64(c-lo)); at < target-tol {
					return cal, badinput.Errorf("phase %s: the endpoint refuses a prompt of about %s tokens, below this phase's %s (HTTP 400: %s)", p.phase, count(at), count(target), pe.Msg)
				}
			}
			hi, thi = c, math.MaxInt
			if hi-lo <= 1 {
				return cal, err
			}
			c = toward()
			continue
		}
		// The count must grow with the filler: by one token per
		// maxCharsPerToken bytes at the least, and by half what the
		// measured ratio predicts. Two tokens of slack cover a word cut
		// in two at the filler's end.
		grew, want := float64(t-tlo), float64(c-lo)/maxCharsPerToken
		if s := slope(); s > 0 {
			want = max(want, s*float64(c-lo)/2)
		}
		if grew < want-2 {
			if !cut {
				cut, firstC, firstT = true, c, t
				limit = p.probes + narrowProbes
			}
			if lo == 0 {
				// Cut already at the first probe: no ratio to judge by.
				return cal, badinput.Errorf("phase %s: the endpoint's prompt count does not follow the prompt: %s characters of filler counted only %s tokens (a truncated prompt?), far below this phase's %s",
					p.phase, count(firstC), count(firstT), count(target))
			}
			hi, thi = c, math.MaxInt
			if hi-lo <= max(lo/100, 1) {
				break search
			}
			c = toward()
			continue
		}
		if abs(t-target) < abs(tbest-target) {
			best, tbest = c, t
		}
		if abs(t-target) <= tol {
			return done(c, t)
		}
		if t < target {
			lo, tlo = c, t
		} else {
			hi, thi = c, t
		}
		switch {
		case cut && thi == math.MaxInt && hi-lo <= max(lo/100, 1):
			break search // narrowed down to about 1%: lo is about where it cuts
		case hi >= 0 && hi-lo <= 1:
			return done(best, tbest)
		case hi < 0 || thi == math.MaxInt:
			c = toward()
		default:
			next := lo + int(float64(target-tlo)*float64(hi-lo)/float64(thi-tlo))
			c = min(max(next, lo+1), hi-1)
		}
	}
	if cut && thi == math.MaxInt {
		return cal, badinput.Errorf("phase %s: the endpoint truncates prompts at about %s tokens, below this phase's %s (%s characters of filler counted %s tokens; %s counted %s)",
			p.phase, count(tlo), count(target), count(lo), count(tlo), count(firstC), count(firstT))
	}
	return done(best, tbest)
}

// narrowProbes bounds the probes that narrow down where a truncating
// endpoint's count stops following the filler: each halves the gap, to
// about 1%.
const narrowProbes = 8

// count writes n with thousands separators: 8192 is "8,192".
func count(n int) string {
	s := strconv.Itoa(abs(n))
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	if n < 0 {
		return "-" + s
	}
	return s
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}

// DefaultProbeTimeout is the least time limit of a calibration probe when
// none is given; ProbeLimit adds time for long prompts.
const DefaultProbeTimeout = time.Minute

// probePrefillAllowance is the time ProbeLimit allows a prompt token by
// default: 50 tokens/s, a CPU llama.cpp's prefill of a mid-size model, so
// an 8,192-token probe on a slow but working server gets 164 s of prefill
// and a minute beside.
const probePrefillAllowance = 20 * time.Millisecond

// ProbeLimit is a calibration probe's time limit for a phase of in prompt
// tokens: given, when given (> 0); else DefaultProbeTimeout plus in × 20 ms,
// a minute of headroom beyond the prefill itself. The whole calibration
// gets five times the sum over the phases' distinct prompt lengths.
func ProbeLimit(given time.Duration, in int) time.Duration {
	if given > 0 {
		return given
	}
	return DefaultProbeTimeout + time.Duration(in)*probePrefillAllowance
}

// errCalibrationBudget ends a calibration that outlived its budget.
var errCalibrationBudget = errors.New("calibration budget spent")

// preflight checks each phase's IN+OUT against the context the server
// states, if it states one; a server that answers none of the questions
// in time has stated nothing.
func preflight(ctx context.Context, o *Options, client *endpoints.Client, specs []Spec) error {
	qctx, cancel := context.WithTimeout(ctx, o.ConnectTimeout+10*time.Second)
	defer cancel()
	n, source, _ := client.ContextLength(qctx)
	if ctx.Err() != nil {
		return context.Cause(ctx)
	}
	if n <= 0 {
		return nil
	}
	for _, s := range specs {
		if s.In+s.Out > n {
			return badinput.Errorf("phase %s: IN+OUT is %s+%s = %s tokens, more than the endpoint's context of %s tokens (%s)",
				s.Name, count(s.In), count(s.Out), count(s.In+s.Out), count(n), source)
		}
	}
	return nil
}
