package conform

import (
	"context"

	"github.com/glmbench/glmbench/endpoints"
	"github.com/glmbench/glmbench/evals"
	"github.com/glmbench/glmbench/reports/schema"
)

// Checks of the legacy /completions endpoint, which glmbench eval scores
// with.

func checkEcho(ctx context.Context, s *suite) outcome {
	// A 5xx costs the probe a second, plain request to tell an echo
	// failure from a server that fails everything: two time limits.
	ctx, cancel := context.WithTimeoutCause(ctx, 2*s.cfg.Timeout, errTimeout)
	defer cancel()
	p, f := evals.ProbeEcho(ctx, s.client, s.cfg.Endpoint.Model)
	if f != nil {
		if evals.KindOf(f) == evals.Interrupted && ctx.Err() != nil && context.Cause(ctx) == errTimeout {
			return fail("no answer within %s", s.cfg.Timeout)
		}
		return fail("%s", failureText(s.redact(), f))
	}
	return pass("%d prompt tokens scored, mean NLL %.3f nats per token", p.Echo.PromptTokens, p.MeanNLL)
}

// failureText names an eval failure by its kind first, as the check's
// detail must.
func failureText(r redactor, f *schema.EvalFailure) string {
	s := r(f.Short())
	if f.Detail != "" {
		s += ": " + r.clip(f.Detail, 200)
	}
	return s
}

func checkEchoMaxTokens0(ctx context.Context, s *suite) outcome {
	req := evals.EchoRequest(s.cfg.Endpoint.Model, evals.ProbeText)
	req["max_tokens"] = 0
	a := s.post(ctx, "/completions", req)
	if !a.ok() {
		msg, p := refusal(a)
		if p != "" {
			return fail("%s", p)
		}
		return pass("refused cleanly with HTTP %d: %s", a.Status, msg)
	}
	e, f := evals.CheckEcho(&a.Response, req)
	switch {
	case f != nil:
		return fail("%s", failureText(s.redact(), f))
	case e.CompletionTokens != 0:
		return fail("max_tokens 0 generated %d tokens", e.CompletionTokens)
	case e.Text != evals.ProbeText:
		return fail("the text is not the prompt alone: %q", s.redact().clip(e.Text, 80))
	}
	return pass("served: %d prompt tokens scored, nothing generated", e.PromptTokens)
}

// tokenIDs are the ids of the token-id prompt: ordinary tokens in every
// vocabulary glmbench has met (byte-level GLM, GPT-2 and Llama 3 BPE,
// SentencePiece), and bytes in the reference engine's.
func tokenIDs(n int) []int {
	ids := make([]int, n)
	for i := range ids {
		ids[i] = 100 + i
	}
	return ids
}

func checkPromptTokenIDs(ctx context.Context, s *suite) outcome {
	// A server that read the list as text would count its digits and
	// commas, not one token per id; two lengths rule out a constant.
	for _, n := range []int{32, 16} {
		a := s.post(ctx, "/completions", map[string]any{"model": s.cfg.Endpoint.Model, "prompt": tokenIDs(n), "max_tokens": 4, "temperature": 0})
		if !a.ok() {
			return fail("a prompt of %d token ids: %s", n, a.describe())
		}
		var c struct {
			Choices []struct {
				Text         *string `json:"text"`
				FinishReason *string `json:"finish_reason"`
			} `json:"choices"`
			Usage *endpoints.Usage `json:"usage"`
		}
		if err := a.decode(&c); err != nil {
			return fail("%s", err)
		}
		switch {
		case len(c.Choices) != 1 || c.Choices[0].Text == nil || c.Choices[0].FinishReason == nil:
			return fail("a prompt of %d token ids: the answer is not one completion with text and finish_reason", n)
		case c.Usage == nil:
			return fail("a prompt of %d token ids: no usage", n)
		case c.Usage.PromptTokens != n:
			return fail("a prompt of %d token ids counts %d prompt tokens: the ids were not read as tokens", n, c.Usage.PromptTokens)
		}
	}
	return pass("prompts of 32 and 16 token ids count 32 and 16 prompt tokens")
}
