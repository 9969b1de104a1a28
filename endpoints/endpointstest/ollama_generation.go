package endpointstest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"time"
)

// ollamaGenerate answers POST /v1/chat/completions (chat) or
// /v1/completions as Ollama does: parse in the middleware, queue in the
// scheduler, wait for the model's load and a slot, truncate the prompt to
// the context, generate.
func (p *Personality) ollamaGenerate(w http.ResponseWriter, r *http.Request, body []byte, chat bool) {
	g, ref := p.ollamaParse(body, chat)
	if ref != nil {
		p.ollamaFail(w, ref.status, ref.msg)
		return
	}
	release, seq, ok := p.ollamaAdmit(w, g)
	if !ok {
		return
	}
	defer release()
	st := p.ollama
	if !p.ollamaLoad(r, st) {
		return
	}
	select {
	case st.slots <- struct{}{}:
	case <-r.Context().Done():
		return
	}
	defer func() { <-st.slots }()
	promptN := p.ollamaKept(g.promptN)
	cached := p.ollamaCached(st, g, promptN)
	g.samp.nonce = uint64(seq)
	a := p.answer(g, p.ollamaBudget(g, promptN), g.samp)
	// The middleware's id: "chatcmpl-" and rand.Intn(999), so answers
	// share ids by chance (32 at once: about 2 in 5 times); the fake draws
	// it from the request's number, the same every run.
	id := fmt.Sprint(mix(hash64("ollama id"), uint64(seq)) % 999)
	if g.stream {
		p.ollamaStream(w, r, g, id, p.ollamaUsage(promptN, a.n, cached), a)
		return
	}
	if !p.wholeWait(r, a) {
		return
	}
	p.ollamaWhole(w, g, id, p.ollamaUsage(promptN, a.n, cached), a)
}

// ollamaUsage is an answer's usage: prompt_eval_count (what was kept of
// the prompt) and eval_count, and with CachedTokens the cached part.
func (p *Personality) ollamaUsage(promptN, completion, cached int) map[string]any {
	u := p.usageOf(promptN, completion, 0)
	if p.Opts.Ollama.CachedTokens {
		u["prompt_tokens_details"] = map[string]any{"cached_tokens": cached}
	}
	return u
}

// ollamaCached is how many of a prompt's promptN tokens a slot's cache
// holds: its longest common prefix with one of the recent prompts, all but
// the last token at most; the prompt then takes the place of the oldest.
func (p *Personality) ollamaCached(st *ollamaState, g *genRequest, promptN int) int {
	pieces := g.pieces
	if g.chat {
		pieces = Pieces(g.prompt)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	best := 0
	for _, r := range st.recent {
		n := 0
		for n < len(r) && n < len(pieces) && r[n] == pieces[n] {
			n++
		}
		best = max(best, n)
	}
	st.recent = append(st.recent, pieces)
	if len(st.recent) > p.Opts.Ollama.NumParallel {
		st.recent = st.recent[1:]
	}
	return min(best, max(promptN-1, 0))
}

// ollamaParse reads a body as Ollama's middleware and handler do; a
// refusal is what they answer instead.
func (p *Personality) ollamaParse(body []byte, chat bool) (*genRequest, *refusal) {
	var f struct {
		Model     string          `json:"model"`
		Messages  json.RawMessage `json:"messages"`
		Prompt    json.RawMessage `json:"prompt"`
		MaxTokens json.RawMessage `json:"max_tokens"`
	}
	if err := json.Unmarshal(body, &f); err != nil {
		// ShouldBindJSON's error, as it is.
		return nil, &refusal{400, err.Error(), nil}
	}
	var msgs []json.RawMessage
	var text string
	switch {
	case chat && (json.Unmarshal(f.Messages, &msgs) != nil || len(msgs) == 0):
		return nil, &refusal{400, "[] is too short - 'messages'", nil}
	case !chat && len(f.Prompt) > 0 && json.Unmarshal(f.Prompt, &text) != nil:
		// CompletionRequest.Prompt is a string (openai.go: a TODO for
		// []string and token ids).
		return nil, &refusal{400, "json: cannot unmarshal array into Go struct field CompletionRequest.prompt of type string", nil}
	case !p.ollamaServes(f.Model):
		// server/routes.go ChatHandler and GenerateHandler: GetModel's
		// os.ErrNotExist, before the scheduler (whose handleScheduleError
		// would say "try pulling it first") is asked.
		return nil, &refusal{404, fmt.Sprintf("model '%s' not found", f.Model), nil}
	}
	g, ref := p.parse(body, chat)
	if ref != nil {
		return nil, ref
	}
	// num_predict comes from max_tokens alone; ChatCompletionRequest has
	// no max_completion_tokens.
	g.maxTokens, g.hasMax = 0, false
	if ref := g.readMaxTokens(f.MaxTokens, nil); ref != nil {
		return nil, ref
	}
	return g, nil
}

// ollamaUnread drops what Ollama's request structs lack (parse's
// dropUnread): n, ignore_eos, echo and return_tokens_as_token_ids, and
// before logprobs support (NoLogprobs) logprobs.
func (p *Personality) ollamaUnread(g *genRequest) {
	g.n, g.ignoreEOS, g.echo, g.asIDs = 1, false, false, false
	if p.Opts.Ollama.NoLogprobs {
		g.logprobs, g.topK = false, 0
	}
	// FromCompleteRequest reads logprobs N, but ToCompletion and
	// ToCompleteChunk copy none into the answer (openai.go as read).
	g.compLP = false
}

// ollamaAdmit queues the request, or answers 503 past NumParallel +
// MaxQueue; release must be called after.
func (p *Personality) ollamaAdmit(w http.ResponseWriter, g *genRequest) (release func(), seq int, ok bool) {
	o := p.Opts.Ollama
	p.mu.Lock()
	p.seq++
	seq = p.seq
	if p.inflight >= o.NumParallel+o.MaxQueue {
		p.mu.Unlock()
		// server/sched.go ErrMaxQueue, answered 503 by handleScheduleError.
		p.ollamaFail(w, http.StatusServiceUnavailable, "server busy, please try again.  maximum pending requests exceeded")
		return nil, 0, false
	}
	return p.enterLocked(g), seq, true
}

// ollamaLoad waits for the model's load, which the first request starts;
// false when the client left first.
func (p *Personality) ollamaLoad(r *http.Request, st *ollamaState) bool {
	st.once.Do(func() {
		go func() {
			time.Sleep(p.Opts.Ollama.Load)
			p.mu.Lock()
			st.loaded = true
			p.mu.Unlock()
			close(st.ready)
		}()
	})
	select {
	case <-st.ready:
		return true
	case <-r.Context().Done():
		return false
	}
}

// ollamaNumKeep is num_keep, the tokens a truncation keeps at the
// prompt's start (api.DefaultOptions).
const ollamaNumKeep = 4

// ollamaKept is the prompt count Ollama reports for a prompt of P tokens:
// P when it fits num_ctx; past it, the runner keeps the first num_keep
// tokens and the end, num_ctx in all (WholeWindow) or num_keep +
// (num_ctx − num_keep)/2 (2026 builds' logs). An MLX model's runner cuts
// none (MLX). Whether 2026 builds cut a
// prompt between that half and num_ctx too is unverified; the fake does
// not.
func (p *Personality) ollamaKept(P int) int {
	L := p.ollamaNumCtx()
	if P <= L || p.Opts.Ollama.MLX {
		return P
	}
	keep := min(ollamaNumKeep, L-1)
	if p.Opts.Ollama.WholeWindow {
		return L
	}
	return keep + (L-keep)/2
}

// ollamaBudget is how many tokens Ollama generates after a prompt of
// promptN tokens: max_tokens exactly (context shift, on by default, goes on
// past the context's end); without it (num_predict -1) until EOS, which the
// fake puts where the context is full.
func (p *Personality) ollamaBudget(g *genRequest, promptN int) int64 {
	if g.hasMax && g.maxTokens > 0 {
		return g.maxTokens
	}
	return int64(max(p.ollamaNumCtx()-promptN, 1))
}

// ollamaThought is how many of an answer's tokens are its reasoning.
func (p *Personality) ollamaThought(g *genRequest, a answer) int {
	if !g.chat {
		return 0
	}
	return min(p.Opts.Ollama.Thinking, len(a.toks))
}

// ollamaStream streams an answer as the middleware's ChatWriter and
// CompleteWriter do: a chunk per token, each chat delta with role
// "assistant", the finish chunk with content "", then, asked, a usage
// chunk with choices []. Nothing is written before the first token.
func (p *Personality) ollamaStream(w http.ResponseWriter, r *http.Request, g *genRequest, id string, usage map[string]any, a answer) {
	rc := http.NewResponseController(w)
	w.Header().Set("Content-Type", "text/event-stream")
	now := time.Now().Unix()
	obj, prefix := "chat.completion.chunk", "chatcmpl-"
	if !g.chat {
		obj, prefix = "text_completion", "cmpl-"
	}
	var zero any
	if !g.chat && g.usage {
		// CompleteWriter sets Usage to &openai.Usage{} on every chunk.
		zero = p.usageOf(0, 0, 0)
	}
	send := func(choices []any, usage any) {
		v := map[string]any{"id": prefix + id, "object": obj, "created": now, "model": p.Opts.Model, "system_fingerprint": "fp_ollama", "choices": choices}
		if usage != nil {
			v["usage"] = usage
		}
		sseData(w, rc, v)
	}
	if !sleep(r, p.Opts.TTFT) {
		return
	}
	thought := p.ollamaThought(g, a)
	for i, t := range a.toks {
		if i > 0 && !sleep(r, p.Opts.Gap) {
			return
		}
		if t.Text != "" {
			send([]any{p.ollamaChoice(g, t.Text, i < thought, []genToken{t}, nil)}, zero)
		}
	}
	send([]any{p.ollamaChoice(g, "", false, nil, a.finish)}, zero)
	if g.usage {
		send([]any{}, usage)
	}
	sseDone(w, rc)
}

// ollamaChoice is a chunk's choice: a chat delta (role on every one; a
// thought's text as reasoning, content ""), or a completion's text.
func (p *Personality) ollamaChoice(g *genRequest, text string, thought bool, toks []genToken, finish any) map[string]any {
	c := map[string]any{"index": 0, "finish_reason": finish}
	if !g.chat {
		c["text"] = text
		return c
	}
	d := map[string]any{"role": "assistant", "content": text}
	if thought {
		d["content"], d["reasoning"] = "", text
	}
	c["delta"] = d
	if g.logprobs && len(toks) > 0 {
		c["logprobs"] = map[string]any{"content": chatLogprobs(toks)}
	}
	return c
}

// ollamaWhole writes a whole answer (ToChatCompletion, ToCompletion).
func (p *Personality) ollamaWhole(w http.ResponseWriter, g *genRequest, id string, usage map[string]any, a answer) {
	resp := map[string]any{"created": time.Now().Unix(), "model": p.Opts.Model, "system_fingerprint": "fp_ollama", "usage": usage}
	if !g.chat {
		resp["id"], resp["object"] = "cmpl-"+id, "text_completion"
		resp["choices"] = []any{map[string]any{"text": joinText(a.toks), "index": 0, "finish_reason": a.finish}}
		writeJSON(w, 200, resp)
		return
	}
	thought := p.ollamaThought(g, a)
	msg := map[string]any{"role": "assistant", "content": joinText(a.toks[thought:])}
	if thought > 0 {
		msg["reasoning"] = joinText(a.toks[:thought])
	}
	c := map[string]any{"index": 0, "message": msg, "finish_reason": a.finish}
	if g.logprobs {
		c["logprobs"] = map[string]any{"content": chatLogprobs(a.toks)}
	}
	resp["id"], resp["object"], resp["choices"] = "chatcmpl-"+id, "chat.completion", []any{c}
	writeJSON(w, 200, resp)
}
