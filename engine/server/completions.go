package server

import (
	"context"
	"net/http"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/glmbench/glmbench/engine/sched"
)

type completionResponse struct {
	envelope
	Choices []completionChoice `json:"choices"`
	Usage   *usage             `json:"usage,omitempty"`
}

type completionChoice struct {
	Index        int                 `json:"index"`
	Text         string              `json:"text"`
	Logprobs     *completionLogprobs `json:"logprobs"`
	FinishReason *string             `json:"finish_reason"`
	// MatchedStop is SGLang's extra: the stop string or token id that
	// ended the output.
	MatchedStop any `json:"matched_stop,omitempty"`
}

// handleCompletion serves POST /v1/completions.
func (s *Server) handleCompletion(w http.ResponseWriter, r *http.Request, b *body) {
	start := time.Now()
	spec := decodeGen(s, w, r, b, s.parseCompletion)
	if spec == nil || s.opts.Faults.echoFault(w, spec) {
		return
	}
	s.serveGen(w, r, spec, "cmpl-", start, func(ctx context.Context, g *gen) {
		if spec.params.Logprobs {
			g.dec.keepTokens = true
			if spec.echo {
				g.dec.chars = utf8.RuneCountInString(spec.echoText) // text_offset counts the echoed prompt
			}
		}
		if spec.stream {
			g.stream(ctx, w, r, &completionStream{gen: g, echoed: !spec.echo})
		} else {
			g.complete(ctx, w, r, &completionWhole{gen: g})
		}
	})
}

// promptLogprobs returns a completion's echoed prompt logprob entries: the
// prompt tokens with their logprobs (the first null) and their offsets in
// the echoed text.
func (g *gen) promptLogprobs(lps []*sched.TokenLogprob) *completionLogprobs {
	offsets := make([]int, len(g.spec.prompt))
	d := g.srv.tok.NewDetokenizer(g.spec.echoSkip)
	chars := 0
	for i, id := range g.spec.prompt {
		offsets[i] = chars
		chars += utf8.RuneCountInString(d.Add(id))
	}
	out := &completionLogprobs{}
	g.spec.names.completion(out, g.spec.prompt, lps, offsets)
	return out
}

// outputLogprobs appends a completion's output tokens' logprob entries to
// dst (nil: a new one).
func (g *gen) outputLogprobs(dst *completionLogprobs, toks outTokens) *completionLogprobs {
	if dst == nil {
		dst = &completionLogprobs{}
	}
	g.spec.names.completion(dst, toks.ids, pointers(toks.lps), toks.offsets)
	return dst
}

// completionWhole answers a non-streaming completions request once its
// output is over: with echo, the prompt's text and logprobs come first.
type completionWhole struct {
	*gen
	text      strings.Builder
	all       outTokens
	promptLPs []*sched.TokenLogprob
}

func (c *completionWhole) step(res *stepResult, pieces []piece, toks outTokens) {
	if res.promptLogprobs != nil {
		c.promptLPs = res.promptLogprobs
	}
	for _, p := range pieces {
		c.text.WriteString(p.text)
	}
	c.all.ids = append(c.all.ids, toks.ids...)
	c.all.lps = append(c.all.lps, toks.lps...)
	c.all.offsets = append(c.all.offsets, toks.offsets...)
}

func (c *completionWhole) response(res *stepResult, u *usage) any {
	choice := completionChoice{Text: c.text.String(), FinishReason: &res.finish, MatchedStop: res.matched}
	if c.spec.echo {
		choice.Text = c.spec.echoText + choice.Text
	}
	if c.spec.params.Logprobs {
		var lp *completionLogprobs
		if c.spec.echo {
			lp = c.promptLogprobs(c.promptLPs)
		}
		choice.Logprobs = c.outputLogprobs(lp, c.all)
	}
	return completionResponse{envelope: c.envelope("text_completion"), Choices: []completionChoice{choice}, Usage: u}
}

// completionStream answers with text_completion chunks: with echo, the
// prompt's text (and logprobs) first; then the output's text as it is
// decided; a finish chunk; then the usage chunk with choices [] when
// stream_options.include_usage.
type completionStream struct {
	*gen
	echoed  bool      // the echo is sent, or none was asked
	pending outTokens // tokens whose logprobs are not sent yet
}

func (c *completionStream) send(out *sseWriter, text string, finish *string, matched any, lp *completionLogprobs) error {
	ch := completionChoice{Text: text, FinishReason: finish, MatchedStop: matched, Logprobs: lp}
	return out.send(completionResponse{envelope: c.envelope("text_completion"), Choices: []completionChoice{ch}})
}

// takeLogprobs returns the pending tokens' logprob entries, when asked.
func (c *completionStream) takeLogprobs() *completionLogprobs {
	if !c.spec.params.Logprobs {
		return nil
	}
	lp := c.outputLogprobs(nil, c.pending)
	c.pending = outTokens{}
	return lp
}

func (c *completionStream) step(ctx context.Context, out *sseWriter, res *stepResult, pieces []piece, toks outTokens) bool {
	if !c.echoed {
		c.echoed = true
		var lp *completionLogprobs
		if c.spec.params.Logprobs {
			lp = c.promptLogprobs(res.promptLogprobs)
		}
		if c.send(out, c.spec.echoText, nil, nil, lp) != nil {
			return false
		}
	}
	c.pending.ids = append(c.pending.ids, toks.ids...)
	c.pending.lps = append(c.pending.lps, toks.lps...)
	c.pending.offsets = append(c.pending.offsets, toks.offsets...)
	var text strings.Builder
	for _, p := range pieces {
		text.WriteString(p.text)
	}
	if text.Len() > 0 {
		if c.send(out, text.String(), nil, nil, c.takeLogprobs()) != nil || out.afterToken(ctx) {
			return false
		}
	}
	return true
}

func (c *completionStream) finish(out *sseWriter, res *stepResult) bool {
	var lp *completionLogprobs
	if c.pending.len() > 0 {
		lp = c.takeLogprobs()
	}
	return c.send(out, "", &res.finish, res.matched, lp) == nil
}

func (c *completionStream) usageChunk(u *usage) any {
	return completionResponse{envelope: c.envelope("text_completion"), Choices: []completionChoice{}, Usage: u}
}
