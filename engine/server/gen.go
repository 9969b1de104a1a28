package server

import (
	"context"
	"net/http"
	"time"

	"github.com/glmbench/glmbench/engine/sched"
)

// gen is one generation request being answered, by either endpoint. The
// loop that reads the scheduler's events, decodes them and ends the output
// is the same for chat and completions, streamed or whole; the endpoint
// gives the shapes of what is sent (a streamer or a completer).
type gen struct {
	srv     *Server
	spec    *genSpec
	st      *sched.Stream
	dec     *decoder
	id      string
	created int64     // Unix seconds, every response's created
	start   time.Time // arrival, for the E2E latency
}

// decodeGen decodes a generation request's body as an R, in a parsing
// slot, and makes its spec with toSpec; on failure it answers the error
// and returns nil.
func decodeGen[R any](s *Server, w http.ResponseWriter, r *http.Request, b *body, toSpec func(*R) (*genSpec, *apiError)) *genSpec {
	var spec *genSpec
	err := s.parse(w, r, b, func(data []byte) (err *apiError) {
		var req R
		if err = decodeJSON(data, &req); err == nil {
			spec, err = toSpec(&req)
		}
		return err
	})
	if err != nil {
		writeError(w, err)
		return nil
	}
	return spec
}

// serveGen submits spec under a new ID (prefix and random hex) and hands
// the generation to answer, with a context that also ends at Shutdown's
// deadline; start is the request's arrival. A refused submit is answered
// here.
func (s *Server) serveGen(w http.ResponseWriter, r *http.Request, spec *genSpec, prefix string, start time.Time, answer func(context.Context, *gen)) {
	id := newID(prefix)
	st, err := s.submit(id, spec)
	if err != nil {
		writeError(w, err)
		return
	}
	defer st.Abort() // whatever ends the handler, the scheduler lets go of the request
	ctx, cancel := s.waitContext(r)
	defer cancel()
	answer(ctx, &gen{srv: s, spec: spec, st: st, id: id, created: time.Now().Unix(), start: start,
		dec: newDecoder(s.tok, spec.chat, spec.thinking, spec.skipSpecial, spec.stops, spec.params.MinNewTokens)})
}

// streamer is an endpoint's side of a streamed answer: the chunks it makes
// of the output. step and finish report false when the stream must end
// early (the client left, or a stall fault holds it).
type streamer interface {
	// step sends the chunks for one batch's released text and tokens.
	step(ctx context.Context, out *sseWriter, res *stepResult, pieces []piece, toks outTokens) bool
	// finish sends the chunks that end the output, finish_reason last.
	finish(out *sseWriter, res *stepResult) bool
	// usageChunk is the chunk after the finish that carries u.
	usageChunk(u *usage) any
}

// completer is an endpoint's side of a whole answer.
type completer interface {
	// step takes one batch's released text and tokens.
	step(res *stepResult, pieces []piece, toks outTokens)
	// response is the body once the output is over; u is nil when a fault
	// leaves usage out.
	response(res *stepResult, u *usage) any
}

// run reads the scheduler's events until the output is over, handing each
// batch's released text and tokens to step, and returns the last batch's
// result. It returns false when the request ended otherwise: with an
// error, which fail answers (a client that left gets none), or because
// step returned false.
func (g *gen) run(ctx context.Context, r *http.Request, fail func(*apiError), step func(*stepResult, []piece, outTokens) bool) (stepResult, bool) {
	for {
		evs, err := g.st.Next(ctx)
		if err != nil {
			if e := waitError(r); e != nil {
				fail(e)
			}
			return stepResult{}, false
		}
		res := g.dec.consume(evs)
		if res.err != nil {
			fail(g.srv.apiErrorOf(res.err))
			return res, false
		}
		pieces, toks := g.dec.take()
		if !step(&res, pieces, toks) {
			return res, false
		}
		if res.finish != "" {
			g.st.Abort() // a stop string ended it: free the KV now
			return res, true
		}
	}
}

// stream answers with an event stream: s's chunks as the output is
// decided and its finish; then, when stream_options.include_usage, the
// usage chunk; then [DONE]. An error after the 200 is an error event.
func (g *gen) stream(ctx context.Context, w http.ResponseWriter, r *http.Request, s streamer) {
	out := g.srv.newSSE(w, g.srv.truthFor(r, g.spec, g.start))
	defer out.end()
	res, ok := g.run(ctx, r, out.fail, func(res *stepResult, pieces []piece, toks outTokens) bool {
		return s.step(ctx, out, res, pieces, toks)
	})
	if !ok || !s.finish(out, &res) {
		return
	}
	if g.spec.includeUsage && g.srv.opts.Faults.usage(&usage{}) != nil {
		if out.send(s.usageChunk(g.tokenUsage(&res))) != nil {
			return
		}
	}
	// Recorded before [DONE]: a client that scrapes as soon as its stream
	// ends finds its request in the e2e histogram.
	g.srv.metrics.observeE2E(time.Since(g.start))
	out.done()
}

// complete answers with one response once the output is over.
func (g *gen) complete(ctx context.Context, w http.ResponseWriter, r *http.Request, c completer) {
	fail := func(e *apiError) { writeError(w, e) }
	res, ok := g.run(ctx, r, fail, func(res *stepResult, pieces []piece, toks outTokens) bool {
		c.step(res, pieces, toks)
		return true
	})
	if !ok {
		return
	}
	body := c.response(&res, g.srv.opts.Faults.usage(g.tokenUsage(&res)))
	g.srv.metrics.observeE2E(time.Since(g.start))
	writeJSON(w, http.StatusOK, body)
}

// tokenUsage is the request's token accounting once its output is over.
func (g *gen) tokenUsage(res *stepResult) *usage {
	prompt := max(res.promptTokens, len(g.spec.prompt))
	return newUsage(prompt, g.dec.n, res.cachedTokens)
}
