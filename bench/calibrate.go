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
	"github.com/glmbench/glmbench/reports/schema"
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

// ProbeError is an endpoint's refusal of a probe: bad input, said before any
// load is sent.
type ProbeError struct {
	Phase  string
	What   string
	Status int
	Class  schema.Class
	Msg    string
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
	default:
		return fmt.Sprintf("%s failed the %s (%s: %s)", where, e.What, e.Class, e.Msg)
	}
}

// Unwrap makes a ProbeError bad input.
func (e *ProbeError) Unwrap() error { return endpoints.ErrBadInput }

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
		return 0, p.fail("calibration probe", &res)
	}
	if res.Usage && res.PromptTokens > 0 {
		return res.PromptTokens, nil
	}
	// No usage in the stream: ask the same thing without streaming.
	resp, err := p.client.Post(ctx, "/chat/completions", p.shape.chatBody(Prefix(p.nonce, ProbeIndex), p.fill.Text(chars), 1, false))
	if err != nil {
		return 0, &ProbeError{Phase: p.phase, What: "calibration probe", Class: schema.Connect, Msg: err.Error()}
	}
	if resp.Status != 200 {
		return 0, &ProbeError{Phase: p.phase, What: "calibration probe (non-streamed)", Status: resp.Status, Msg: short(endpoints.ErrorMessage(resp.Body))}
	}
	var v struct {
		Usage *endpoints.Usage `json:"usage"`
	}
	if json.Unmarshal(resp.Body, &v) != nil || v.Usage == nil || v.Usage.PromptTokens <= 0 {
		return 0, errNoUsage
	}
	return v.Usage.PromptTokens, nil
}

func (p *prober) fail(what string, res *endpoints.StreamResult) error {
	msg := res.Detail
	if len(res.Body) > 0 {
		msg = endpoints.ErrorMessage(res.Body)
	}
	return &ProbeError{Phase: p.phase, What: what, Status: res.Status, Class: res.Class, Msg: short(msg)}
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

// calibrate finds the filler length whose prompt counts target tokens within
// Tolerance. The endpoint's count is close to a + b·chars, so a secant step
// inside a bracket that always holds the target converges in a few probes.
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
		return cal, bad("phase %s: an input of %d tokens is below the endpoint's smallest prompt of %d tokens (chat template and prefix)", p.phase, target, base)
	}
	if base >= target-tol {
		return done(0, base)
	}
	lo, tlo := 0, base // tlo < target
	hi, thi := -1, 0   // thi > target, once found
	best, tbest := 0, base
	// First guess: one character per token. The filler is ASCII and no
	// tokenizer makes more than one token of a byte, so this cannot
	// overshoot (and so cannot ask for more than the context holds); the
	// probe then measures the real ratio.
	c := target - base
	for p.probes < maxProbes {
		t, err := p.tokens(ctx, c)
		if err != nil {
			var pe *ProbeError
			if !errors.As(err, &pe) || pe.Status != 400 {
				return cal, err
			}
			// Refused as too long: an overshoot past the context. Bisect down.
			hi, thi = c, math.MaxInt
			c = lo + (c-lo)/2
			if c <= lo {
				return cal, err
			}
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
		case hi < 0:
			// No upper bound yet: extrapolate along the measured slope.
			slope := float64(tlo-base) / float64(lo)
			next := lo * 2
			if slope > 0 {
				next = lo + int(float64(target-tlo)/slope) + 1
			}
			c = min(max(next, lo+1), lo*8+64)
		case hi-lo <= 1:
			return done(best, tbest)
		case thi == math.MaxInt:
			c = lo + (hi-lo)/2
		default:
			next := lo + int(float64(target-tlo)*float64(hi-lo)/float64(thi-tlo))
			c = min(max(next, lo+1), hi-1)
		}
	}
	return done(best, tbest)
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}
