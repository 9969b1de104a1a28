package evals

import (
	"context"
	"fmt"
	"maps"
	"math"
	"net/http"
	"strconv"
	"strings"

	"github.com/glmbench/glmbench/endpoints"
	"github.com/glmbench/glmbench/reports/schema"
	"github.com/glmbench/glmbench/reports/summary"
)

// ProbeText is the sentence the echo probe sends: plain natural text, long
// enough (dozens of tokens in any tokenizer) to tell a repeated
// distribution from a real one.
const ProbeText = "The capital of France is Paris. The capital of Germany is Berlin. Rivers run to the sea, and the sea gives back the rain."

// Echo thresholds.
const (
	// ClampedLogprob is vLLM's floor for a logprob of −Inf: a real prompt
	// token at or below it had probability zero, which no model gives text.
	ClampedLogprob = -9999.0
	// positiveSlack tolerates float32 rounding of a logprob of ~0.
	positiveSlack = 1e-4
	// minRepeatPositions is how many scored positions the repeated-
	// distribution check needs before it may call a probe implausible.
	minRepeatPositions = 4
)

// Echo is a checked echo answer, cut at usage.prompt_tokens.
type Echo struct {
	// PromptTokens is usage.prompt_tokens: the boundary between prompt and
	// generated entries. CompletionTokens is usage.completion_tokens.
	PromptTokens     int
	CompletionTokens int
	// Logprobs holds one logprob per prompt token, natural log; [0] is NaN
	// (the first token has no context; the answer's null).
	Logprobs []float64
	// Tokens are the prompt's token strings, as the server named them.
	Tokens []string
	// Top holds the prompt's top_logprobs maps (nil where absent).
	Top []map[string]float64
	// IDs are the prompt's token ids when every token came as "token_id:N"
	// (vLLM's return_tokens_as_token_ids); nil otherwise.
	IDs []int32
	// Text is the answer's text (the echoed prompt, then the generation).
	Text string
}

// EchoRequest is the probe's request shape, and every echo request's: the
// portable one. max_tokens is 1, not 0: SGLang and OpenAI reject 0 and some
// vLLM versions crash on it. logprobs is 1, not 0: SGLang reads 0 as "no
// prompt logprobs".
func EchoRequest(model string, prompt any) map[string]any {
	return map[string]any{"model": model, "prompt": prompt, "echo": true, "logprobs": 1, "max_tokens": 1, "temperature": 0}
}

// CheckEcho reads an echo request's 200 answer, checks it against the echo
// invariants and returns the prompt part. Its failure has exactly one kind:
// LogprobsMissing, EchoIgnored, EchoMisaligned, EchoImplausible, or
// BadResponse for a body that is no completion. Its body is clipped to
// endpoints.BodyLimit bytes and not redacted: whoever quotes it redacts it.
func CheckEcho(resp *endpoints.Response, req map[string]any) (*Echo, *schema.EvalFailure) {
	e, f := checkEcho(resp, req)
	return e, finishFailure(nil, f)
}

func checkEcho(resp *endpoints.Response, req map[string]any) (*Echo, *schema.EvalFailure) {
	c, f := parseCompletion(resp, req)
	if f != nil {
		return nil, f
	}
	fail := func(kind Kind, format string, args ...any) (*Echo, *schema.EvalFailure) {
		return nil, newFailure(kind, resp.Status, resp.Body, shape(req), fmt.Sprintf(format, args...))
	}
	ch := c.Choices[0]
	lp := ch.Logprobs
	if lp == nil || (len(lp.TokenLogprobs) == 0 && len(lp.Tokens) == 0) {
		return fail(LogprobsMissing, "choices[0].logprobs is null or empty")
	}
	if c.Usage == nil || c.Usage.PromptTokens <= 0 {
		return fail(EchoMisaligned, "no usage.prompt_tokens: the boundary between prompt and generated tokens is unknown")
	}
	p, g, n := c.Usage.PromptTokens, c.Usage.CompletionTokens, len(lp.TokenLogprobs)
	switch {
	case n <= g || (n < p && !strings.HasPrefix(ch.Text, promptText(req))):
		return fail(EchoIgnored, "%d logprob entries for %d prompt and %d generated tokens: only the generation was scored", n, p, g)
	case n != p+g && n != p:
		return fail(EchoMisaligned, "%d logprob entries, want usage.prompt_tokens + completion_tokens = %d + %d (or %d alone)", n, p, g, p)
	case len(lp.Tokens) != n:
		return fail(EchoMisaligned, "%d tokens but %d token_logprobs", len(lp.Tokens), n)
	case len(lp.TopLogprobs) != 0 && len(lp.TopLogprobs) != n:
		return fail(EchoMisaligned, "%d top_logprobs but %d token_logprobs", len(lp.TopLogprobs), n)
	case len(lp.TextOffset) != 0 && len(lp.TextOffset) != n:
		return fail(EchoMisaligned, "%d text_offset entries but %d token_logprobs", len(lp.TextOffset), n)
	case lp.TokenLogprobs[0] != nil:
		return fail(EchoMisaligned, "the first prompt token has logprob %v, want null: the list is shifted", *lp.TokenLogprobs[0])
	}
	if i := badOffset(lp.TextOffset[:min(len(lp.TextOffset), p)], len(ch.Text)); i >= 0 {
		return fail(EchoMisaligned, "text_offset[%d] = %d does not follow %v within the %d-byte text", i, lp.TextOffset[i], lp.TextOffset[max(0, i-1):i], len(ch.Text))
	}
	e := &Echo{PromptTokens: p, CompletionTokens: g, Logprobs: make([]float64, p), Tokens: lp.Tokens[:p], Text: ch.Text}
	e.Logprobs[0] = nan
	zeros := 0
	for i := 1; i < p; i++ {
		v := lp.TokenLogprobs[i]
		if why := badLogprob(v); why != "" {
			return fail(EchoImplausible, "prompt token %d %s", i, why)
		}
		if *v == 0 {
			zeros++
		}
		e.Logprobs[i] = *v
	}
	if p > 2 && zeros == p-1 {
		return fail(EchoImplausible, "every prompt logprob is 0: logprobs after sampling transforms, not the model's")
	}
	if len(lp.TopLogprobs) > 0 {
		e.Top = lp.TopLogprobs[:p]
		if repeated(e.Top[1:]) {
			return fail(EchoImplausible, "top_logprobs are the same at all %d prompt positions: one distribution for the whole prompt", p-1)
		}
	}
	e.IDs = tokenIDs(e.Tokens)
	return e, nil
}

// badLogprob says what is wrong with the logprob of a token the model read
// or sampled ("" if nothing): absent or NaN, positive (beyond float32
// rounding of 0), or at vLLM's clamp of −Inf, a probability of zero that no
// real prompt token nor sampled token has. The reason follows "token i".
func badLogprob(v *float64) string {
	switch {
	case v == nil || math.IsNaN(*v):
		return "has no logprob"
	case *v > positiveSlack:
		return fmt.Sprintf("has a positive logprob %v", *v)
	case *v <= ClampedLogprob:
		return fmt.Sprintf("has logprob %v: clamped, probability zero, which no real or sampled token has", *v)
	}
	return ""
}

// promptText is the request's prompt when it is text ("" otherwise).
func promptText(req map[string]any) string {
	s, _ := req["prompt"].(string)
	return s
}

// badOffset returns the first index where text_offset goes backwards or
// past the text, or −1. All −1 is SGLang's "not supported" and passes.
func badOffset(off []int, textLen int) int {
	all := true
	for _, o := range off {
		all = all && o == -1
	}
	if all {
		return -1
	}
	for i, o := range off {
		if o < 0 || o > textLen || (i > 0 && o < off[i-1]) {
			return i
		}
	}
	return -1
}

// repeated reports whether every map in tops is the same (keys and values),
// over enough positions to mean something.
func repeated(tops []map[string]float64) bool {
	if len(tops) < minRepeatPositions || tops[0] == nil {
		return false
	}
	for _, t := range tops[1:] {
		if !maps.Equal(t, tops[0]) {
			return false
		}
	}
	return true
}

// tokenIDs parses "token_id:N" token strings; nil unless all parse.
func tokenIDs(toks []string) []int32 {
	ids := make([]int32, len(toks))
	for i, s := range toks {
		rest, ok := strings.CutPrefix(s, "token_id:")
		if !ok {
			return nil
		}
		n, err := strconv.ParseInt(rest, 10, 32)
		if err != nil || n < 0 {
			return nil
		}
		ids[i] = int32(n)
	}
	return ids
}

// EchoProbe is a probe that passed.
type EchoProbe struct {
	// Echo is the checked answer.
	Echo *Echo
	// MeanNLL is the probe text's mean negative logprob per scored token, in nats.
	MeanNLL float64
}

// ProbeEcho sends one echo request of ProbeText (EchoRequest's shape) and
// checks the answer; before any echo-based eval it tells whether the
// endpoint gives prompt logprobs at all. On failure it returns the failure
// with its kind (one of EchoKinds, or HTTPError, Transport, BadResponse,
// Interrupted), the HTTP status, the body's first 200 bytes and the request.
// A 5xx costs one more, plain request to tell EchoServerError from a server
// that fails everything. Only requests that got no answer are retried.
func ProbeEcho(ctx context.Context, c *endpoints.Client, model string) (*EchoProbe, *schema.EvalFailure) {
	p, f := probeEcho(ctx, sender{c: c}, model)
	return p, finishFailure(c.Endpoint(), f)
}

func probeEcho(ctx context.Context, s sender, model string) (*EchoProbe, *schema.EvalFailure) {
	req := EchoRequest(model, ProbeText)
	e, f := s.echo(ctx, model, req)
	if f != nil {
		return nil, f
	}
	sum, n := 0.0, 0
	for _, v := range e.Logprobs[1:] {
		sum -= v
		n++
	}
	return &EchoProbe{Echo: e, MeanNLL: sum / float64(max(n, 1))}, nil
}

// echo sends an echo request and checks its answer; an error status is
// classed by classifyEchoStatus.
func (s sender) echo(ctx context.Context, model string, req map[string]any) (*Echo, *schema.EvalFailure) {
	resp, f := s.post(ctx, "/completions", req)
	if f != nil {
		return nil, f
	}
	if resp.Status != http.StatusOK {
		return nil, s.classifyEchoStatus(ctx, model, resp, req)
	}
	return checkEcho(resp, req)
}

// classifyEchoStatus classes an echo request's error status: a 4xx is
// EchoRejected (except the "not now" ones, HTTPError); a 5xx is
// EchoServerError when a plain generation (no echo, no logprobs) to the
// same endpoint succeeds, else HTTPError. A 404 or 405 is
// CompletionsMissing when a one-token chat request to the same model
// answers 200 (a chat-only endpoint); otherwise the 404 is about the model
// or the base URL (HTTPError).
func (s sender) classifyEchoStatus(ctx context.Context, model string, resp *endpoints.Response, req map[string]any) *schema.EvalFailure {
	msg := s.statusLine(resp)
	switch {
	case endpoints.NotThisRequest(resp.Status) || resp.Status < 400: // not an echo failure
		return newFailure(HTTPError, resp.Status, resp.Body, shape(req), msg)
	case len(s.refusedExtra(resp.Status, summary.ErrorMessage(resp.Body))) > 0:
		// The extra body's field, not echo, is refused: every request
		// carries it, so no route would do better.
		return newFailure(HTTPError, resp.Status, resp.Body, shape(req), msg)
	case resp.Status == http.StatusNotFound || resp.Status == http.StatusMethodNotAllowed:
		return s.classifyBy(ctx, crossCheck{
			path: "/chat/completions", body: chatRequest(model, ProbeText, map[string]any{"max_tokens": 1, "temperature": 0}),
			kind: CompletionsMissing, what: "a chat request",
			works:  "; /v1/chat/completions answers: a chat-only endpoint, which gives no prompt logprobs",
			failed: "; a chat request to the same model failed too (HTTP %d): check the base URL and the model",
		}, resp, req, msg)
	case resp.Status < 500:
		return newFailure(EchoRejected, resp.Status, resp.Body, shape(req), msg)
	}
	return s.classifyBy(ctx, crossCheck{
		path: "/completions", body: map[string]any{"model": model, "prompt": ProbeText, "max_tokens": 1, "temperature": 0},
		kind: EchoServerError, what: "a plain generation",
		works:  "; a plain generation to the same endpoint works",
		failed: "; a plain generation failed too (HTTP %d)",
	}, resp, req, msg)
}

// crossCheck is a request to the same endpoint that tells what a failed
// echo request means: when it answers 200, the echo failure is kind.
type crossCheck struct {
	path string
	body map[string]any
	kind Kind
	// what names the request in the detail; works is said when it answers
	// 200, failed (its status for the %d) when it answers another.
	what, works, failed string
}

// classifyBy classes a failed echo request (resp to req, msg its status
// line) by c: c.kind when c's request answers 200, else HTTPError, the
// detail saying what c's request got. An interrupt is returned as it is.
func (s sender) classifyBy(ctx context.Context, c crossCheck, resp *endpoints.Response, req map[string]any, msg string) *schema.EvalFailure {
	cr, f := s.post(ctx, c.path, c.body)
	switch {
	case f != nil && KindOf(f) == Interrupted:
		return f
	case f != nil:
		msg += "; " + c.what + " got no answer either"
	case cr.Status == http.StatusOK:
		return newFailure(c.kind, resp.Status, resp.Body, shape(req), msg+c.works)
	default:
		msg += fmt.Sprintf(c.failed, cr.Status)
		msg += s.extraRefusal(cr.Status, summary.ErrorMessage(cr.Body))
	}
	return newFailure(HTTPError, resp.Status, resp.Body, shape(req), msg)
}
