package evals

import (
	"context"
	"fmt"
	"maps"
	"math"
	"net/http"
	"strings"

	"github.com/glmbench/glmbench/endpoints"
	"github.com/glmbench/glmbench/reports/schema"
)

// long-ppl settings.
const (
	// SegmentTokens is the length of the segments worst_seg is the highest ppl of.
	SegmentTokens = 256
	// LongPromptBytes bounds a long-ppl prompt: a document's text, cut at a
	// line end. 8 KiB is about 2,000 tokens for a BPE tokenizer and leaves
	// room for 2,048 generated tokens in the built-in engine's 16,384.
	LongPromptBytes = 8 << 10
	// DefaultLongPrompts is how many prompts long-ppl sends by default, as
	// many as the decode_long phase.
	DefaultLongPrompts = 16
	// longSeed seeds prompt i's sampling with longSeed+i, so reruns draw alike
	// where the server honours seeds.
	longSeed = 1234
)

// SegmentPPLs splits one generation's per-token nlls (nats) into segments
// of SegmentTokens and returns each segment's ppl = exp(mean nll). A
// trailing segment shorter than half a segment joins the one before it, so
// no tiny tail decides worst_seg.
func SegmentPPLs(nll []float64) []float64 {
	var out []float64
	for _, seg := range segments(nll) {
		out = append(out, math.Exp(sum(seg)/float64(len(seg))))
	}
	return out
}

// segments splits nll as SegmentPPLs does.
func segments(nll []float64) [][]float64 {
	var out [][]float64
	for lo := 0; lo < len(nll); {
		hi := min(lo+SegmentTokens, len(nll))
		if rest := len(nll) - hi; rest > 0 && rest < SegmentTokens/2 {
			hi = len(nll)
		}
		out = append(out, nll[lo:hi])
		lo = hi
	}
	return out
}

// worstSegment is the highest ppl of any segment (SegmentPPLs) of at least
// minTokens tokens, false when there is none: a generation that stopped at
// EOS after a few tokens is no segment, and its ppl over those few would
// decide worst_seg.
func worstSegment(nlls [][]float64, minTokens int) (float64, bool) {
	worst, found := 0.0, false
	for _, nll := range nlls {
		for _, seg := range segments(nll) {
			if len(seg) >= minTokens {
				worst, found = math.Max(worst, math.Exp(sum(seg)/float64(len(seg)))), true
			}
		}
	}
	return worst, found
}

// LongPrompt is the prompt long-ppl builds from a document.
func LongPrompt(text string) string {
	if len(text) <= LongPromptBytes {
		return text
	}
	return pieces(text, LongPromptBytes)[0]
}

// LongPPL generates Config.GenTokens tokens at temperature 1, top_p 1 from
// each document's opening (LongPrompt), with logprobs of the generated
// tokens, and reports ppl = exp(Σ nll / Σ tokens) over every generated
// token and worst_seg, the highest ppl of any segment (SegmentPPLs). At
// temperature 1 and top_p 1 the sampled distribution is the model's own,
// so the logprobs are the model's whether a server reports them before or
// after its sampling transforms. Config.Limit caps the prompts (default 16).
//
// The first prompt goes to /v1/completions (method generate). When that
// route lacks what long-ppl needs (routeLacks: no logprobs, as llama.cpp
// answers; a 404, as a chat-only provider answers) the first prompt and
// every other go to /v1/chat/completions instead, the opening as one user
// message, with logprobs: true (method chat-logprobs). Either way
// ignore_eos is sent, so every generation runs to GenTokens. Where the
// route refuses it (a 400 naming ignore_eos: the OpenAI API's
// "Unrecognized request argument supplied: ignore_eos"), the first prompt is
// sent again without it, and so is every other: the model may then stop
// early, metric tokens counts what was scored, and the method gets the
// suffix UntilEOS (generate-until-eos, chat-logprobs-until-eos), so that
// reports never compare it unmarked with a generation that ran to GenTokens.
// A generation that stopped at once there scores nothing (no generation at
// all fails the eval). worst_seg is over segments of at least
// min(SegmentTokens/2, GenTokens) tokens, so that a generation that stopped
// early decides nothing there; with none, there is no worst_seg.
func LongPPL(ctx context.Context, r *Runner, docs *Docs) schema.EvalResult {
	res, _ := longPPL(ctx, r, docs)
	return r.finish(res)
}

// longPPL is LongPPL with its items: one per prompt whose generation
// scored a token (docItem over the generated tokens).
func longPPL(ctx context.Context, r *Runner, docs *Docs) (schema.EvalResult, []schema.EvalItem) {
	const name = "long-ppl"
	list := docs.Docs
	if n := r.limit(DefaultLongPrompts); n < len(list) {
		list = list[:n]
	}
	if len(list) == 0 {
		return noScore(name, MethodGenerate, newFailure(BadResponse, 0, nil, nil, "no document to prompt with")), nil
	}
	// untilEOS is set on the first prompt, before any other is sent, when
	// the route it is asked by refuses ignore_eos.
	untilEOS := false
	gen := func() map[string]any {
		g := map[string]any{"max_tokens": r.cfg.GenTokens, "temperature": 1, "top_p": 1}
		if !untilEOS {
			g["ignore_eos"] = true
		}
		return g
	}
	byCompletions := func(ctx context.Context, i int, prompt string) ([]float64, *schema.EvalFailure) {
		req := map[string]any{"model": r.model, "prompt": prompt, "logprobs": 1, "seed": longSeed + i}
		maps.Copy(req, gen())
		return generatedNLL(ctx, r.sender(i), req, untilEOS)
	}
	byChat := func(ctx context.Context, i int, prompt string) ([]float64, *schema.EvalFailure) {
		req := chatRequest(r.model, prompt, gen())
		// top_logprobs 1, not absent: llama.cpp would compute and send its
		// default 20 per token (megabytes for 2,048 tokens), and not 0: it
		// reads n_probs 0 as "no logprobs at all".
		req["logprobs"], req["top_logprobs"], req["seed"] = true, 1, longSeed+i
		return chatNLL(ctx, r.sender(i), req, untilEOS)
	}
	nlls := make([][]float64, len(list))
	r.cfg.Progress.begin(name, len(list))
	// asking makes a route's asker of by. The first prompt finds the route
	// and whether it takes ignore_eos: each route is asked it with
	// ignore_eos (one route's refusal says nothing of the next's), and where
	// the route refuses it, the first prompt is sent again without
	// (untilEOS), and so is every other.
	asking := func(by func(context.Context, int, string) ([]float64, *schema.EvalFailure)) asker[[]float64] {
		return func(ctx context.Context, i int, prompt string) ([]float64, *schema.EvalFailure, *schema.EvalFailure) {
			if i == 0 {
				untilEOS = false
			}
			nll, f := by(ctx, i, prompt)
			if i == 0 && !untilEOS && refusesIgnoreEOS(f) {
				untilEOS = true
				nll, f = by(ctx, i, prompt)
			}
			return nll, nil, f
		}
	}
	rt, f := askEach(ctx, r, len(list), func(i int) string { return LongPrompt(list[i].Text) }, nil,
		func(_ context.Context, _ string, i int, nll []float64, _ *schema.EvalFailure) *schema.EvalFailure {
			nlls[i] = nll
			return nil
		},
		route[[]float64]{method: MethodGenerate, ask: asking(byCompletions)},
		route[[]float64]{method: MethodChatLogprobs, ask: asking(byChat), name: "chat logprobs"})
	method := rt.method
	if untilEOS {
		method += UntilEOS
	}
	if f != nil {
		return noScore(name, method, f), nil
	}
	total, n := 0.0, 0
	var items []schema.EvalItem
	for i, nll := range nlls {
		total += sum(nll)
		n += len(nll)
		if len(nll) > 0 {
			items = append(items, docItem(name, i, sum(nll), len(nll)))
		}
	}
	if n == 0 {
		return noScore(name, method, newFailure(BadResponse, 0, nil, nil, fmt.Sprintf(
			"no generated token: each of the %d generations stopped at once", len(list)))), nil
	}
	metrics := map[string]float64{"ppl": math.Exp(total / float64(n)), "tokens": float64(n)}
	if worst, ok := worstSegment(nlls, min(SegmentTokens/2, r.cfg.GenTokens)); ok {
		metrics["worst_seg"] = worst
	}
	return schema.EvalResult{Name: name, Status: StatusOK, Method: method, N: len(list), Metrics: metrics}, items
}

// refusesIgnoreEOS reports whether f is a 400 refusing ignore_eos: the
// OpenAI API answers an unknown field with 400 "Unrecognized request
// argument supplied: ignore_eos" (docs/SERVERS.md).
func refusesIgnoreEOS(f *schema.EvalFailure) bool {
	return KindOf(f) == HTTPError && f.HTTPStatus == http.StatusBadRequest &&
		(strings.Contains(f.Body, "ignore_eos") || strings.Contains(f.Detail, "ignore_eos"))
}

// generatedNLL sends a generation with logprobs and returns the nll of each
// generated token, checked as echo logprobs are: present (LogprobsMissing),
// one per usage.completion_tokens (EchoMisaligned), finite and ≤ 0
// (EchoImplausible) — the same kinds, since the same server faults cause them.
// With emptyOK (a generation without ignore_eos), one that stopped at once
// (finish_reason stop, no text, no logprobs, no completion token) is an
// empty generation with nothing to score, not missing logprobs.
func generatedNLL(ctx context.Context, s sender, req map[string]any, emptyOK bool) ([]float64, *schema.EvalFailure) {
	resp, c, f := s.complete(ctx, req)
	if f != nil {
		return nil, f
	}
	ch := c.Choices[0]
	var lps []*float64
	if ch.Logprobs != nil {
		lps = ch.Logprobs.TokenLogprobs
	}
	stopped := ch.Text == "" && ch.FinishReason != nil && *ch.FinishReason == "stop"
	return tokenNLL(resp, req, "generated tokens", "choices[0].logprobs", lps, c.Usage, emptyOK && stopped)
}

// tokenNLL checks a generation's token logprobs as echo logprobs are
// checked, and returns their nll: present (LogprobsMissing, where says
// which field was empty), one per usage.completion_tokens when usage came
// (EchoMisaligned), finite and ≤ 0 (EchoImplausible). what names the
// route in the failure's detail. With stoppedOK (a generation without
// ignore_eos whose answer has no text and finish_reason stop), no logprobs
// and no completion token is a generation that stopped at EOS at once:
// empty, with nothing to score, not missing logprobs.
func tokenNLL(resp *endpoints.Response, req map[string]any, what, where string, lps []*float64, usage *endpoints.Usage, stoppedOK bool) ([]float64, *schema.EvalFailure) {
	fail := func(kind Kind, format string, args ...any) ([]float64, *schema.EvalFailure) {
		return nil, newFailure(kind, resp.Status, resp.Body, shape(req), what+": "+fmt.Sprintf(format, args...))
	}
	if stoppedOK && len(lps) == 0 && (usage == nil || usage.CompletionTokens == 0) {
		return []float64{}, nil
	}
	if len(lps) == 0 {
		return fail(LogprobsMissing, "%s is null or empty", where)
	}
	if usage != nil && usage.CompletionTokens != len(lps) {
		return fail(EchoMisaligned, "%d logprob entries for usage.completion_tokens %d", len(lps), usage.CompletionTokens)
	}
	nll := make([]float64, len(lps))
	for i, v := range lps {
		if why := badLogprob(v); why != "" {
			return fail(EchoImplausible, "token %d %s", i, why)
		}
		nll[i] = -*v
	}
	return nll, nil
}
