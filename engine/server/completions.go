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
	ID      string             `json:"id"`
	Object  string             `json:"object"`
	Created int64              `json:"created"`
	Model   string             `json:"model"`
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
func (s *Server) handleCompletion(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	var req completionRequest
	if err := decodeBody(w, r, &req); err != nil {
		writeError(w, err)
		return
	}
	spec, err := s.parseCompletion(&req)
	if err != nil {
		writeError(w, err)
		return
	}
	if s.opts.Faults.echoFault(w, spec) {
		return
	}
	id := newID("cmpl-")
	st, err := s.submit(id, spec)
	if err != nil {
		writeError(w, err)
		return
	}
	defer st.Abort() // whatever ends the handler, the scheduler lets go of the request
	ctx, cancel := s.waitContext(r)
	defer cancel()
	g := &completionGen{srv: s, spec: spec, st: st, id: id, created: time.Now().Unix(), start: start,
		dec: newDecoder(s.tok, false, false, spec.skipSpecial, spec.stops, spec.params.MinNewTokens)}
	if spec.echo {
		g.dec.chars = utf8.RuneCountInString(spec.echoText)
	}
	if spec.stream {
		g.stream(ctx, w, r)
	} else {
		g.complete(ctx, w, r)
	}
}

// completionGen is one completions request being answered.
type completionGen struct {
	srv     *Server
	spec    *genSpec
	st      *sched.Stream
	dec     *decoder
	id      string
	created int64
	start   time.Time
}

// promptLogprobs returns the echoed prompt's logprob entries: the prompt
// tokens with their logprobs (the first null) and their offsets in the
// echoed text.
func (g *completionGen) promptLogprobs(lps []*sched.TokenLogprob) *completionLogprobs {
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

func (g *completionGen) outputLogprobs(dst *completionLogprobs, toks outTokens) *completionLogprobs {
	if dst == nil {
		dst = &completionLogprobs{}
	}
	g.spec.names.completion(dst, toks.ids, pointers(toks.lps), toks.offsets)
	return dst
}

// complete answers a non-streaming request once its output is over: with
// echo, the prompt's text and logprobs come first.
func (g *completionGen) complete(ctx context.Context, w http.ResponseWriter, r *http.Request) {
	var text strings.Builder
	var all outTokens
	var promptLPs []*sched.TokenLogprob
	for {
		evs, err := g.st.Next(ctx)
		if err != nil {
			if e := waitError(r); e != nil {
				writeError(w, e)
			}
			return
		}
		res := g.dec.consume(evs)
		if res.err != nil {
			writeError(w, g.srv.apiErrorOf(res.err))
			return
		}
		if res.promptLogprobs != nil {
			promptLPs = res.promptLogprobs
		}
		pieces, toks := g.dec.take()
		for _, p := range pieces {
			text.WriteString(p.text)
		}
		all.ids = append(all.ids, toks.ids...)
		all.lps = append(all.lps, toks.lps...)
		all.offsets = append(all.offsets, toks.offsets...)
		if res.finish == "" {
			continue
		}
		g.st.Abort() // a stop string ended it: free the KV now
		choice := completionChoice{Text: text.String(), FinishReason: &res.finish, MatchedStop: res.matched}
		if g.spec.echo {
			choice.Text = g.spec.echoText + choice.Text
		}
		if g.spec.params.Logprobs {
			var lp *completionLogprobs
			if g.spec.echo {
				lp = g.promptLogprobs(promptLPs)
			}
			choice.Logprobs = g.outputLogprobs(lp, all)
		}
		prompt := max(res.promptTokens, len(g.spec.prompt))
		g.srv.metrics.observeE2E(time.Since(g.start))
		writeJSON(w, http.StatusOK, completionResponse{ID: g.id, Object: "text_completion", Created: g.created,
			Model: g.spec.model, Choices: []completionChoice{choice}, Usage: g.srv.opts.Faults.usage(newUsage(prompt, g.dec.n, res.cachedTokens))})
		return
	}
}

// stream answers with text_completion chunks: with echo, the prompt's text
// (and logprobs) first; then the output's text as it is decided; a finish
// chunk; the usage chunk with choices [] when stream_options.include_usage;
// then [DONE].
func (g *completionGen) stream(ctx context.Context, w http.ResponseWriter, r *http.Request) {
	out := g.srv.newSSE(w, g.srv.truthFor(g.spec, g.start))
	defer out.end()
	echoed := !g.spec.echo
	var pending outTokens // tokens whose logprobs are not sent yet
	send := func(text string, finish *string, matched any, lp *completionLogprobs) error {
		c := completionChoice{Text: text, FinishReason: finish, MatchedStop: matched, Logprobs: lp}
		return out.send(completionResponse{ID: g.id, Object: "text_completion", Created: g.created,
			Model: g.spec.model, Choices: []completionChoice{c}})
	}
	takeLogprobs := func() *completionLogprobs {
		if !g.spec.params.Logprobs {
			return nil
		}
		lp := g.outputLogprobs(nil, pending)
		pending = outTokens{}
		return lp
	}
	for {
		evs, err := g.st.Next(ctx)
		if err != nil {
			if e := waitError(r); e != nil {
				out.fail(e)
			}
			return
		}
		res := g.dec.consume(evs)
		if res.err != nil {
			out.fail(g.srv.apiErrorOf(res.err))
			return
		}
		if !echoed {
			echoed = true
			var lp *completionLogprobs
			if g.spec.params.Logprobs {
				lp = g.promptLogprobs(res.promptLogprobs)
			}
			if send(g.spec.echoText, nil, nil, lp) != nil {
				return
			}
		}
		pieces, toks := g.dec.take()
		pending.ids = append(pending.ids, toks.ids...)
		pending.lps = append(pending.lps, toks.lps...)
		pending.offsets = append(pending.offsets, toks.offsets...)
		var text strings.Builder
		for _, p := range pieces {
			text.WriteString(p.text)
		}
		if text.Len() > 0 {
			if send(text.String(), nil, nil, takeLogprobs()) != nil || out.afterToken(ctx) {
				return
			}
		}
		if res.finish == "" {
			continue
		}
		g.st.Abort() // a stop string ended it: free the KV now
		var lp *completionLogprobs
		if pending.len() > 0 {
			lp = takeLogprobs()
		}
		if send("", &res.finish, res.matched, lp) != nil {
			return
		}
		if g.spec.includeUsage && g.srv.opts.Faults.usage(&usage{}) != nil {
			prompt := max(res.promptTokens, len(g.spec.prompt))
			if out.send(completionResponse{ID: g.id, Object: "text_completion", Created: g.created, Model: g.spec.model,
				Choices: []completionChoice{}, Usage: newUsage(prompt, g.dec.n, res.cachedTokens)}) != nil {
				return
			}
		}
		out.done()
		g.srv.metrics.observeE2E(time.Since(g.start))
		return
	}
}
