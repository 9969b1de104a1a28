package bench

import (
	"context"
	"errors"
	"fmt"
	"sort"

	"github.com/glmbench/glmbench/internal/badinput"
)

// curve is the filler's token count on one endpoint as a function of its
// length: after a prompt prefix, chars bytes of whole filler words add
// tokens(chars) tokens to usage.prompt_tokens. A workload's lengths are
// mapped onto it, so that every sampled length is in the endpoint's own
// tokens, with one calibration for the whole run instead of one per length.
type curve struct {
	// base is usage.prompt_tokens of a prompt of the prefix alone: the chat
	// template and the prefix.
	base int
	// pts are measured points, chars and tokens both increasing; the first
	// is (0, 0).
	pts []curvePoint
	// noUsage is set for an endpoint that reports no usage: lengths are
	// then charsPerTokenGuess bytes a token, uncalibrated.
	noUsage bool
}

type curvePoint struct{ chars, tokens int }

// curveSpan is how many tokens, at the least, one probe of the curve adds
// to the last; past 8 times that, each adds an eighth. A straight line
// between two points then stays within a token or two of the filler's
// count, inside the calibration's max(4, 1%), however long the prompt.
const curveSpan = 24

// firstCurveChars is the curve's first probe past the prefix alone.
const firstCurveChars = 32

// maxCurveProbes bounds the curve's probes: 192 tokens in steps of 24,
// then ×1.125 each, pass a million.
const maxCurveProbes = 96

// chars returns the filler length that adds tokens tokens after a prefix
// (0 for tokens ≤ 0): between two measured points on the line through them,
// past the last on the line through the origin and it.
func (c *curve) chars(tokens int) int {
	if tokens <= 0 {
		return 0
	}
	if c.noUsage || len(c.pts) < 2 {
		return tokens * charsPerTokenGuess
	}
	k := sort.Search(len(c.pts), func(i int) bool { return c.pts[i].tokens >= tokens })
	if k == len(c.pts) {
		last := c.pts[len(c.pts)-1]
		return int(float64(tokens) * float64(last.chars) / float64(last.tokens))
	}
	hi, lo := c.pts[k], c.pts[max(k-1, 0)]
	if hi.tokens == lo.tokens {
		return hi.chars
	}
	return lo.chars + int(float64(tokens-lo.tokens)*float64(hi.chars-lo.chars)/float64(hi.tokens-lo.tokens)+0.5)
}

// estimate is the tokens chars bytes of filler add, by the curve so far
// (one a byte before any point: no tokenizer makes more).
func (c *curve) estimate(chars int) int {
	if len(c.pts) < 2 {
		return chars
	}
	return int(float64(chars) * c.tokensPerChar())
}

// tokensPerChar is the filler's mean ratio over the measured curve, to
// estimate the tokens of text that is not the filler (a data set's answer).
func (c *curve) tokensPerChar() float64 {
	if c.noUsage || len(c.pts) < 2 {
		return 1.0 / charsPerTokenGuess
	}
	last := c.pts[len(c.pts)-1]
	return float64(last.tokens) / float64(last.chars)
}

// measure probes the filler from the prefix alone up to a length that adds
// need tokens, each probe adding curveSpan tokens or an eighth to the last,
// so that no probe is much longer than the longest prompt the workload
// sends. An
// endpoint that refuses a probe with a 400, or whose count stops following
// the filler (it truncates), is bad input when it stops short of need.
func (p *prober) measure(ctx context.Context, need int) (*curve, error) {
	base, err := p.tokens(ctx, 0)
	if errors.Is(err, errNoUsage) {
		p.noUsage = true
		return &curve{noUsage: true}, nil
	}
	if err != nil {
		return nil, err
	}
	c := &curve{base: base, pts: []curvePoint{{0, 0}}}
	chars := firstCurveChars
	for probes := 0; need > 0 && probes < maxCurveProbes; probes++ {
		text := p.fill.Words(chars)
		t, err := p.count(ctx, p.userMessage(text))
		var pe *ProbeError
		switch {
		case errors.As(err, &pe) && pe.Status == 400:
			return nil, badinput.Errorf("phase %s: the endpoint refuses a prompt of about %s tokens, and the workload needs prompts of up to %s (HTTP 400: %s)",
				p.phase, count(base+c.estimate(len(text))), count(base+need), pe.Msg)
		case err != nil:
			return nil, err
		}
		last := c.pts[len(c.pts)-1]
		t -= base
		if grew, want := t-last.tokens, (len(text)-last.chars)/maxCharsPerToken; grew < want-2 {
			return nil, badinput.Errorf("phase %s: the endpoint's prompt count stops following the prompt at about %s tokens (a truncated prompt?), below the %s the workload needs (%s bytes of filler counted %s tokens)",
				p.phase, count(base+last.tokens), count(base+need), count(len(text)), count(base+t))
		}
		if len(text) > last.chars && t >= last.tokens {
			c.pts = append(c.pts, curvePoint{len(text), t})
		}
		if t >= need {
			return c, nil
		}
		// The next point adds max(curveSpan, t/8) tokens by the ratio so
		// far, but ends a couple of tokens past need: a probe well past it
		// could find the endpoint's context, which the workload never
		// reaches, and fail a workload that fits.
		step := min(max(curveSpan, t/8), need-t+2)
		chars = len(text) + max(int(float64(step)*float64(len(text))/float64(max(t, 1))), 8)
	}
	if need > 0 {
		return nil, badinput.Errorf("phase %s: %d probes did not reach the %s prompt tokens the workload needs", p.phase, maxCurveProbes, count(base+need))
	}
	return c, nil
}

// String says what the curve measured, for a warning or a log.
func (c *curve) String() string {
	if c.noUsage {
		return fmt.Sprintf("the endpoint reports no usage, so prompts are not calibrated (about %d characters per token assumed)", charsPerTokenGuess)
	}
	last := c.pts[len(c.pts)-1]
	return fmt.Sprintf("%d points up to %s bytes = %s tokens past a %d-token prefix", len(c.pts), count(last.chars), count(last.tokens), c.base)
}
