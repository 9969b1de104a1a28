package endpointstest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
)

// LM Studio's local server (`lms server start`, http://localhost:1234/v1),
// as its docs and issues state it: lmstudio-ai/docs
// 1_developer/3_openai-compat/{chat-completions,models}.md (the OpenAI
// routes and the payload fields read), 1_developer/2_rest/endpoints.mdx
// (GET /api/v0/models), 1_developer/2_rest/list.md (GET /api/v1/models,
// 0.4.0+), and lmstudio-ai/lmstudio-bug-tracker issues #713 (no usage in a
// stream, stream_options ignored, 0.3.8), #237, #546 (0.3.x: a prompt past
// the loaded context is a 400 "Trying to keep the first N tokens when
// context the overflows..."), #2322 (0.4.21: streamed, it is a 200
// text/event-stream whose one event is "event: error" with {"error":
// {"message": "Input does not fit in context length. ..."}, "message"}).
// Options.Context is the context the model was loaded with (lms load
// --context-length); LMStudioOptions the rest.

// LMStudioOptions configure the lmstudio personality. Zero values take the
// defaults named.
type LMStudioOptions struct {
	// MaxContext is the model's own maximum (max_context_length in
	// /api/v0/models and /api/v1/models; default 131072), which is not
	// what a request may use: that is the loaded Context.
	MaxContext int
	// JIT is "Just-in-Time model loading" (on by default in the app):
	// /v1/models lists every downloaded model, loaded or not, and a request
	// naming one loads it (models.md). The fake has one more downloaded,
	// not loaded model, JITModel.
	JIT bool
	// Before04 answers as builds before 0.4.0: no /api/v1/models (404),
	// errors {"error": "..."} (a string, as clients quote it from 0.3.x),
	// and a prompt past the loaded context a 400 "Trying to keep the first
	// N tokens..." streamed or not. Without it, errors are {"error":
	// {"message"}, "message"} (the shape #2322 quotes; for the errors
	// other than the stream's overflow, unverified) and an overflowing
	// stream is #2322's 200 with one error event.
	Before04 bool
}

// JITModel is the downloaded, not loaded model the lmstudio personality
// lists with LMStudioOptions.JIT.
const JITModel = "qwen2.5-7b-instruct"

// serveLMStudio answers r as LM Studio's server does. It has no API key by
// default and no /health route.
func (p *Personality) serveLMStudio(w http.ResponseWriter, r *http.Request, body []byte) {
	if !p.authorized(w, r) {
		return
	}
	switch r.Method + " " + r.URL.Path {
	case "GET /v1/models":
		// OpenAI's list; no context field (owned_by's value unverified).
		var data []any
		for _, m := range p.lmstudioModels() {
			data = append(data, map[string]any{"id": m, "object": "model", "owned_by": "organization_owner"})
		}
		writeJSON(w, 200, map[string]any{"object": "list", "data": data})
	case "GET /api/v0/models":
		p.lmstudioV0Models(w)
	case "GET /api/v1/models":
		if p.Opts.LMStudio.Before04 {
			p.lmstudioUnknown(w, r)
			return
		}
		p.lmstudioV1Models(w)
	case "POST /v1/chat/completions":
		p.generation(w, r, body, true)
	case "POST /v1/completions":
		p.generation(w, r, body, false)
	default:
		p.lmstudioUnknown(w, r)
	}
}

// lmstudioUnknown is LM Studio's answer to a route it does not serve: an
// error naming it (wording as widely quoted in its logs, "Unexpected
// endpoint or method"; the status is unverified, 404 here).
func (p *Personality) lmstudioUnknown(w http.ResponseWriter, r *http.Request) {
	p.fail(w, 404, fmt.Sprintf("Unexpected endpoint or method. (%s %s)", r.Method, r.URL.Path), nil)
}

// lmstudioModels are the ids /v1/models lists: the loaded model, and with
// JIT the downloaded one too.
func (p *Personality) lmstudioModels() []string {
	if p.Opts.LMStudio.JIT {
		return []string{p.Opts.Model, JITModel}
	}
	return []string{p.Opts.Model}
}

// defaults fills in the zero values' defaults.
func (o *LMStudioOptions) defaults() {
	if o.MaxContext <= 0 {
		o.MaxContext = 131072
	}
}

// lmstudioV0Models is GET /api/v0/models (endpoints.mdx): every downloaded
// model with its state and the model's max_context_length, not the loaded
// context.
func (p *Personality) lmstudioV0Models(w http.ResponseWriter) {
	data := []any{map[string]any{"id": p.Opts.Model, "object": "model", "type": "llm", "publisher": "lmstudio-community",
		"arch": "llama", "compatibility_type": "gguf", "quantization": "Q4_K_M", "state": "loaded", "max_context_length": p.Opts.LMStudio.MaxContext}}
	if p.Opts.LMStudio.JIT {
		data = append(data, map[string]any{"id": JITModel, "object": "model", "type": "llm", "publisher": "lmstudio-community",
			"arch": "qwen2", "compatibility_type": "gguf", "quantization": "Q4_K_M", "state": "not-loaded", "max_context_length": 32768})
	}
	writeJSON(w, 200, map[string]any{"object": "list", "data": data})
}

// lmstudioV1Models is GET /api/v1/models (list.md, 0.4.0+): each model's
// loaded_instances carry config.context_length, the context it was loaded
// with.
func (p *Personality) lmstudioV1Models(w http.ResponseWriter) {
	models := []any{map[string]any{"type": "llm", "publisher": "lmstudio-community", "key": p.Opts.Model, "display_name": p.Opts.Model,
		"architecture": "llama", "quantization": map[string]any{"name": "Q4_K_M", "bits_per_weight": 4}, "size_bytes": 4920739232,
		"params_string": "8B", "loaded_instances": []any{map[string]any{"id": p.Opts.Model, "config": map[string]any{"context_length": p.Opts.Context}}},
		"max_context_length": p.Opts.LMStudio.MaxContext, "format": "gguf"}}
	if p.Opts.LMStudio.JIT {
		models = append(models, map[string]any{"type": "llm", "publisher": "lmstudio-community", "key": JITModel, "display_name": JITModel,
			"loaded_instances": []any{}, "max_context_length": 32768, "format": "gguf"})
	}
	writeJSON(w, 200, map[string]any{"models": models})
}

// checkLMStudio is LM Studio's check: a prompt of at least the loaded
// context is refused in the words of issue #2322 (0.4), or of #237 and #546
// before 0.4 (the boundary, and whether the check counts the output, are
// unverified); max_tokens absent or -1, or past what the context leaves,
// generates until the context is full (unverified: a model whose runtime
// supports "mid-generation context overflow" may go on, issue #1251).
func (p *Personality) checkLMStudio(g *genRequest) (promptN int, budget int64, ref *refusal) {
	P, L := g.promptN, p.Opts.Context
	switch {
	case P >= L && p.Opts.LMStudio.Before04:
		return 0, 0, &refusal{400, fmt.Sprintf("Trying to keep the first %d tokens when context the overflows. However, the model is loaded with context length of only %d tokens, which is not enough. Try to load the model with a larger context length, or provide a shorter input", P, L), nil}
	case P >= L:
		return 0, 0, &refusal{400, fmt.Sprintf("Input does not fit in context length. The input has %d tokens, but the context length only supports %d tokens.", P, L), nil}
	}
	M := g.maxTokens
	if !g.hasMax || M < 0 {
		M = int64(L - P)
	}
	return P, min(M, int64(L-P)), nil
}

// lmstudioModelOK is whether LM Studio serves model: the loaded one, or
// with JIT a downloaded one it loads first.
func (p *Personality) lmstudioModelOK(model string) bool {
	for _, m := range p.lmstudioModels() {
		if strings.EqualFold(m, model) {
			return true
		}
	}
	return false
}

// lmstudioRead drops what LM Studio does not read of a parsed body. Its
// documented chat payload fields (chat-completions.md "Supported payload
// parameters": model, top_p, top_k, messages, temperature, max_tokens,
// stream, stop, presence_penalty, frequency_penalty, logit_bias,
// repeat_penalty, seed) have no max_completion_tokens, stream_options or
// ignore_eos; others are ignored, not refused. A stream has no usage
// whatever stream_options asks (issue #713); logprobs are accepted and not
// answered (lmstudio-ai/lms#60, open since 0.3.5: "no error are thrown when
// logprobs=True is passed"), on /v1/completions too (unverified there), and
// echo is not read (not among the fields).
func (g *genRequest) lmstudioRead() {
	g.usage, g.ignoreEOS = false, false
	g.logprobs, g.topK, g.compLP, g.echo = false, 0, false, false
}

// lmstudioError is an error body as LM Studio writes it (see Before04).
func (p *Personality) lmstudioError(msg string) map[string]any {
	if p.Opts.LMStudio.Before04 {
		return map[string]any{"error": msg}
	}
	return map[string]any{"error": map[string]any{"message": msg}, "message": msg}
}

// lmstudioStreamError answers a stream the check refused as 0.4.x does
// (#2322): 200, text/event-stream, one "event: error" whose data is the
// error body, and no [DONE]. False before 0.4, whose refusal is the 400.
func (p *Personality) lmstudioStreamError(w http.ResponseWriter, ref *refusal) bool {
	if p.Opts.LMStudio.Before04 {
		return false
	}
	b, _ := json.Marshal(p.lmstudioError(ref.msg))
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("X-Powered-By", "Express")
	w.WriteHeader(200)
	fmt.Fprintf(w, "event: error\ndata: %s\n\n", b)
	return true
}
