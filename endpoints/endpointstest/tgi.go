package endpointstest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"
)

// Hugging Face Text Generation Inference (TGI), the router of 2.x and 3.x
// (router/src/server.rs, lib.rs, validation.rs, chat.rs, infer/mod.rs).
// Options.Context is its --max-total-tokens (prompt plus output); the rest
// is TGIOptions.

// TGIOptions configure the tgi personality. Zero values take the defaults
// named.
type TGIOptions struct {
	// MaxInput is --max-input-tokens, the longest prompt alone (default
	// Context-1, the launcher's default when only --max-total-tokens is
	// set; unverified for every version).
	MaxInput int
	// MaxConcurrent is --max-concurrent-requests (default 128): past it a
	// request is "Model is overloaded".
	MaxConcurrent int
	// LegacyInfo answers /info as 1.x did: max_input_length, no
	// max_input_tokens (lib.rs before the rename in 2.0).
	LegacyInfo bool
}

// tgiMaxTopN is --max-top-n-tokens' default, the most top_logprobs.
const tgiMaxTopN = 5

// serveTGI answers r as TGI's router does. Only the generation routes and
// /tokenize sit behind --api-key; /info, /health, /metrics and /v1/models
// are open, and a wrong key is a bare 401 (server.rs start: base_routes
// gets the auth layer, info_routes do not).
func (p *Personality) serveTGI(w http.ResponseWriter, r *http.Request, body []byte) {
	route := r.Method + " " + r.URL.Path
	guarded := route == "POST /v1/chat/completions" || route == "POST /v1/completions" || route == "POST /tokenize" ||
		route == "POST /generate" || route == "POST /generate_stream" || route == "POST /"
	if guarded && p.Opts.APIKey != "" && !strings.EqualFold(r.Header.Get("Authorization"), "Bearer "+p.Opts.APIKey) {
		w.WriteHeader(http.StatusUnauthorized)
		return
	}
	switch route {
	case "GET /v1/models":
		// openai_get_model_info: one card, created 0, owned_by the model id.
		writeJSON(w, 200, map[string]any{"object": "list", "data": []any{map[string]any{"id": p.Opts.Model, "object": "model", "created": 0, "owned_by": p.Opts.Model}}})
	case "GET /info":
		p.tgiInfo(w)
	case "GET /health", "GET /ping", "GET /":
		// 200 with an empty body once the shards answer; 503 {"error":
		// "unhealthy", "error_type": "healthcheck"} otherwise.
		w.WriteHeader(200)
	case "GET /metrics":
		p.tgiMetrics(w)
	case "POST /tokenize":
		p.tgiTokenize(w, body)
	case "POST /v1/chat/completions":
		p.tgiGenerate(w, r, body, true)
	case "POST /v1/completions":
		p.tgiGenerate(w, r, body, false)
	default:
		// axum's fallback: 404 with no body.
		w.WriteHeader(http.StatusNotFound)
	}
}

// defaults fills in the zero values' defaults; context is --max-total-tokens.
func (o *TGIOptions) defaults(context int) {
	if o.MaxInput <= 0 {
		o.MaxInput = context - 1
	}
	if o.MaxConcurrent <= 0 {
		o.MaxConcurrent = 128
	}
}

// tgiInfo is GET /info, lib.rs Info: the router's limits and the model id.
func (p *Personality) tgiInfo(w http.ResponseWriter) {
	o := p.Opts.TGI
	info := map[string]any{"model_id": p.Opts.Model, "model_sha": nil, "model_pipeline_tag": "text-generation",
		"max_concurrent_requests": o.MaxConcurrent, "max_best_of": 2, "max_stop_sequences": 4,
		"max_input_tokens": o.MaxInput, "max_total_tokens": p.Opts.Context, "validation_workers": 2,
		"max_client_batch_size": 4, "router": "text-generation-router", "version": "3.3.4", "sha": nil, "docker_label": nil}
	if o.LegacyInfo {
		delete(info, "max_input_tokens")
		delete(info, "router")
		delete(info, "max_client_batch_size")
		info["max_input_length"] = o.MaxInput
		info["version"] = "1.4.5"
		info["max_batch_total_tokens"] = 16000
		info["waiting_served_ratio"] = 1.2
		info["max_waiting_tokens"] = 20
	}
	writeJSON(w, 200, info)
}

// tgiCounters are the fake's account of what TGI's router counts: requests
// received, requests answered in full, and those answers' prompt and
// generated tokens.
type tgiCounters struct {
	received, succeeded, prompt, generated int
}

// tgiMetrics is /metrics, always served, in the names of
// endpoints/scrape/testdata/tgi.prom: counters without _total (the Rust
// exporter's way), per-request token histograms (one +Inf bucket here).
func (p *Personality) tgiMetrics(w http.ResponseWriter) {
	p.mu.Lock()
	running, c := p.inflight, p.tgi
	p.mu.Unlock()
	w.Header().Set("Content-Type", "text/plain; version=0.0.4")
	fmt.Fprintf(w, "# TYPE tgi_request_count counter\ntgi_request_count %d\n# TYPE tgi_request_success counter\ntgi_request_success %d\n"+
		"# TYPE tgi_queue_size gauge\ntgi_queue_size 0\n# TYPE tgi_batch_current_size gauge\ntgi_batch_current_size %d\n", c.received, c.succeeded, running)
	for _, h := range []struct {
		name string
		sum  int
	}{{"tgi_request_input_length", c.prompt}, {"tgi_request_generated_tokens", c.generated}} {
		fmt.Fprintf(w, "# TYPE %[1]s histogram\n%[1]s_bucket{le=\"+Inf\"} %[2]d\n%[1]s_sum %[3]d\n%[1]s_count %[2]d\n", h.name, c.succeeded, h.sum)
	}
}

// tgiCount adds one answer to the counters: received, and when it was
// answered in full, succeeded with its tokens.
func (p *Personality) tgiCount(ok bool, prompt, generated int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.tgi.received++
	if ok {
		p.tgi.succeeded++
		p.tgi.prompt += prompt
		p.tgi.generated += generated
	}
}

// tgiTokenize is POST /tokenize: a GenerateRequest in ({"inputs"}), a
// bare list of {"id", "text", "start", "stop"} out (server.rs tokenize).
func (p *Personality) tgiTokenize(w http.ResponseWriter, body []byte) {
	var req struct {
		Inputs *string `json:"inputs"`
	}
	if json.Unmarshal(body, &req) != nil || req.Inputs == nil {
		// axum's Json rejection.
		http.Error(w, "Failed to deserialize the JSON body into the target type: missing field `inputs`", http.StatusUnprocessableEntity)
		return
	}
	out := []any{}
	off := 0
	for _, piece := range Pieces(*req.Inputs) {
		n := len([]rune(piece))
		out = append(out, map[string]any{"id": p.vocab.id(piece), "text": piece, "start": off, "stop": off + n})
		off += n
	}
	writeJSON(w, 200, out)
}

// tgiFail answers TGI's ErrorResponse {"error", "error_type"}: as the
// status for a whole answer; for a stream as a 200 whose one event is the
// error, then [DONE], since the router validates and takes its concurrency
// permit inside the stream (generate_stream_internal yields
// Event::from(err); TGI issue 2749, huggingface_hub PR 2558).
func tgiFail(w http.ResponseWriter, stream bool, status int, msg, typ string) {
	body := map[string]any{"error": msg, "error_type": typ}
	if stream {
		streamRefusal(w, body)
		return
	}
	writeJSON(w, status, body)
}

// tgiGenerate answers /v1/chat/completions and /v1/completions.
func (p *Personality) tgiGenerate(w http.ResponseWriter, r *http.Request, body []byte, chat bool) {
	var f struct {
		Prompt json.RawMessage `json:"prompt"`
	}
	if err := json.Unmarshal(body, &f); err != nil {
		// axum's Json rejection: 400 for a body that is no JSON, plain text.
		http.Error(w, "Failed to parse the request body as JSON: "+err.Error(), http.StatusBadRequest)
		return
	}
	var prompts []string
	if !chat && len(f.Prompt) > 0 && f.Prompt[0] == '[' && json.Unmarshal(f.Prompt, &prompts) != nil {
		// lib.rs Prompt: a string or a list of strings (a batch, which
		// this fake does not serve), never token ids.
		http.Error(w, "Failed to deserialize the JSON body into the target type: prompt: data did not match any variant of untagged enum PromptDeserializer", http.StatusUnprocessableEntity)
		return
	}
	g, ref := p.parse(body, chat)
	if ref != nil {
		// JSON that does not deserialize: axum's 422, plain text.
		http.Error(w, "Failed to deserialize the JSON body into the target type: "+ref.msg, http.StatusUnprocessableEntity)
		return
	}
	promptN, budget, ref := p.checkTGI(g)
	if ref != nil {
		p.notePrompt(g)
		p.tgiCount(false, 0, 0)
		tgiFail(w, g.stream, ref.status, ref.msg, "validation")
		return
	}
	p.mu.Lock()
	if p.inflight >= p.Opts.TGI.MaxConcurrent {
		p.mu.Unlock()
		// infer/mod.rs: try_acquire_owned on the max_concurrent_requests
		// semaphore fails: InferError::Overloaded, 429.
		p.tgiCount(false, 0, 0)
		tgiFail(w, g.stream, http.StatusTooManyRequests, "Model is overloaded", "overloaded")
		return
	}
	p.seq++
	seq := p.seq
	defer p.enterLocked(g)()
	g.samp.nonce = uint64(seq)
	a := p.answer(g, budget, g.samp)
	a.finish = tgiFinish(a.finish, p.stoppedBySequence(g, budget, a), chat || !g.stream)
	if g.stream {
		if !p.tgiStream(w, r, g, promptN, a) {
			p.tgiCount(false, 0, 0)
		}
		return
	}
	if !p.wholeWait(r, a) {
		p.tgiCount(false, 0, 0)
		return
	}
	// Counted before the answer goes, as the router records its
	// metrics before it answers.
	p.tgiCount(true, promptN, a.n)
	p.tgiWhole(w, g, promptN, a)
}

// tgiFinish is a finish reason as TGI writes it, the fake's being fakes
// ("stop" for an EOS or a stop string, which bySequence tells apart):
// FinishReason::format(true) says "stop" for the end-of-sequence token and
// keeps "length" and "stop_sequence"; a completions stream's last chunk
// uses to_string, so "eos_token" there (server.rs completions; lib.rs
// FinishReason).
func tgiFinish(fakes string, bySequence, useStop bool) string {
	switch {
	case fakes == "length":
		return "length"
	case bySequence:
		return "stop_sequence"
	case useStop:
		return "stop"
	}
	return "eos_token"
}

// stoppedBySequence says whether a, an answer to g, ended at one of its
// stop strings: the same answer without them has more text (a stop string
// is cut from the text with what follows it).
func (p *Personality) stoppedBySequence(g *genRequest, budget int64, a answer) bool {
	if a.finish != "stop" || len(g.stop) == 0 {
		return false
	}
	free := *g
	free.stop = nil
	return len(joinText(p.answer(&free, budget, g.samp).toks)) > len(joinText(a.toks))
}

// checkTGI is validation.rs validate and validate_input: max_new_tokens 0,
// then top_n_tokens past --max-top-n-tokens, then the prompt is tokenized,
// max_new_tokens defaults (chat: all the total leaves, 3.x's auto
// max_new_tokens, PR #2803; 2.x chat took 100; the completions route:
// 100), then total > max_total_tokens, then prompt > max_input_tokens,
// each a 422 "Input validation error: ...". No prompt is
// truncated unless the request asks (truncate), which no OpenAI route does.
func (p *Personality) checkTGI(g *genRequest) (promptN int, budget int64, ref *refusal) {
	o := p.Opts.TGI
	P, L := g.promptN, p.Opts.Context
	M := g.maxTokens
	switch {
	case g.hasMax && (M < 0 || M > 1<<32-1):
		// max_tokens is a u32: serde refuses the body (axum's 422).
		return 0, 0, &refusal{422, fmt.Sprintf("Failed to deserialize the JSON body into the target type: max_tokens: invalid value: integer `%d`, expected u32", M), nil}
	case g.hasMax && M == 0:
		// validate: max_new_tokens == Some(0), checked before top_n_tokens.
		return 0, 0, &refusal{422, "Input validation error: `max_new_tokens` must be strictly positive", nil}
	case g.topK > tgiMaxTopN:
		return 0, 0, &refusal{422, fmt.Sprintf("Input validation error: `top_n_tokens` must be >= 0 and <= %d. Given: %d", tgiMaxTopN, g.topK), nil}
	case !g.hasMax && g.chat:
		M = int64(max(L-P, 0))
	case !g.hasMax:
		M = 100
	}
	if int64(P)+M > int64(L) {
		return 0, 0, &refusal{422, fmt.Sprintf("Input validation error: `inputs` tokens + `max_new_tokens` must be <= %d. Given: %d `inputs` tokens and %d `max_new_tokens`", L, P, M), nil}
	}
	if P > o.MaxInput {
		return 0, 0, &refusal{422, fmt.Sprintf("Input validation error: `inputs` must have less than %d tokens. Given: %d", o.MaxInput, P), nil}
	}
	return P, M, nil
}

// tgiChunk is one chunk of a TGI stream: id "", object, created, model,
// system_fingerprint ("VERSION-native"), choices and, on a chat stream,
// usage (null but on the usage chunk).
func (p *Personality) tgiChunk(g *genRequest, choices []any, usage any) map[string]any {
	c := map[string]any{"id": "", "created": time.Now().Unix(), "model": p.Opts.Model, "system_fingerprint": "3.3.4-native", "choices": choices}
	if g.chat {
		c["object"], c["usage"] = "chat.completion.chunk", usage
	} else {
		c["object"] = "text_completion"
	}
	return c
}

// tgiChoice is a chunk's choice: a chat delta {"role": "assistant",
// "content"} on every chunk (no role chunk opens the stream), or a
// completion's text, finish_reason "" until the last (lib.rs
// CompletionComplete).
func tgiChoice(g *genRequest, text string, finish any, lp any) map[string]any {
	if !g.chat {
		if finish == nil {
			finish = ""
		}
		return map[string]any{"index": 0, "text": text, "logprobs": nil, "finish_reason": finish}
	}
	return map[string]any{"index": 0, "delta": map[string]any{"role": "assistant", "content": text}, "logprobs": lp, "finish_reason": finish}
}

// tgiStream streams a: one chunk per token, the last token's chunk
// carrying the finish reason. A chat stream sends usage only when
// include_usage asks, in a chunk of its own with choices [] (chat.rs
// ChatState::push); a completions stream's last chunk always carries
// usage (server.rs completions: CompletionFinal). [DONE] ends both. It
// counts the answer before [DONE] and reports whether the stream was sent
// to its end (not the client gone).
func (p *Personality) tgiStream(w http.ResponseWriter, r *http.Request, g *genRequest, promptN int, a answer) bool {
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(200)
	rc := http.NewResponseController(w)
	if !sleep(r, p.Opts.TTFT) {
		return false
	}
	usage := p.usageOf(promptN, a.n, 0)
	for i, t := range a.toks {
		if i > 0 && !sleep(r, p.Opts.Gap) {
			return false
		}
		var finish, lp any
		if i == len(a.toks)-1 {
			finish = a.finish
		}
		if g.chat && g.logprobs {
			lp = map[string]any{"content": tgiLogprobs([]genToken{t})}
		}
		c := p.tgiChunk(g, []any{tgiChoice(g, t.Text, finish, lp)}, nil)
		if !g.chat && finish != nil {
			c["usage"] = usage
		}
		sseData(w, rc, c)
	}
	if g.chat && g.usage {
		sseData(w, rc, p.tgiChunk(g, []any{}, usage))
	}
	p.tgiCount(true, promptN, a.n)
	sseDone(w, rc)
	return true
}

// tgiWhole is a whole answer: id "", one choice, usage.
func (p *Personality) tgiWhole(w http.ResponseWriter, g *genRequest, promptN int, a answer) {
	text := joinText(a.toks)
	c := map[string]any{"index": 0, "logprobs": nil, "finish_reason": a.finish}
	obj := "text_completion"
	if g.chat {
		obj = "chat.completion"
		c["message"] = map[string]any{"role": "assistant", "content": text}
		if g.logprobs {
			c["logprobs"] = map[string]any{"content": tgiLogprobs(a.toks)}
		}
	} else {
		c["text"] = text
	}
	writeJSON(w, 200, map[string]any{"id": "", "object": obj, "created": time.Now().Unix(), "model": p.Opts.Model,
		"system_fingerprint": "3.3.4-native", "choices": []any{c},
		"usage": p.usageOf(promptN, a.n, 0)})
}

// tgiLogprobs is TGI's ChatCompletionLogprob list: token, logprob and
// top_logprobs of {token, logprob}, no bytes.
func tgiLogprobs(toks []genToken) []any {
	out := []any{}
	for _, t := range toks {
		top := []any{}
		for _, c := range t.Top {
			top = append(top, map[string]any{"token": c.Token, "logprob": c.Logprob})
		}
		out = append(out, map[string]any{"token": t.Text, "logprob": t.Logprob, "top_logprobs": top})
	}
	return out
}
