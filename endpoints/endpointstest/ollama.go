package endpointstest

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"
)

// Ollama (`ollama serve`, http://localhost:11434) answers the OpenAI routes
// through a middleware that translates each request into its native
// /api/chat or /api/generate and each answer back (middleware/openai.go,
// openai/openai.go). What that means for what glmbench sends, as those
// files read (ollama/ollama, 2025–2026), is reproduced below:
//
//   - only max_tokens caps the output (num_predict); max_completion_tokens,
//     n, ignore_eos, echo and any other field the request struct lacks are
//     dropped without a word (Go's JSON decoding), so a request ends at the
//     model's EOS and there is one choice;
//   - every chunk's delta carries role "assistant" (ToChunk), no chunk
//     opens the stream on its own, a thinking model's text goes as
//     delta.reasoning, and the finish chunk has content "";
//   - with stream_options.include_usage, a chat stream ends with a chunk of
//     choices [] and the usage; a completions stream also writes
//     "usage": {all 0} on every chunk before it;
//   - usage.prompt_tokens is prompt_eval_count: what the runner kept of a
//     prompt past num_ctx, which it truncates (keeping the first num_keep,
//     4, tokens and the end) rather than refuse;
//   - errors are {"error": {"message", "type", "param": null, "code":
//     null}}; type is "invalid_request_error" for the middleware's own 400s
//     and "api_error" for everything the handler answers (writeError),
//     whatever the status: 404 "model 'X' not found" for a model not
//     pulled, 503 "server busy" past OLLAMA_MAX_QUEUE;
//   - the first request waits for the model to load, with no byte sent;
//   - answer ids are "chatcmpl-" and rand.Intn(999): they repeat;
//   - no /health, no /metrics, no API key: GET / says "Ollama is running",
//     unknown routes get gin's 404 "404 page not found" (text/plain), a
//     known one by another method 405, and the context a request gets is
//     stated only by GET /api/ps, for a model that is loaded
//     (context_length).

// OllamaOptions are the ollama personality's own settings (Options.Ollama).
// Zero values take the defaults named.
type OllamaOptions struct {
	// NumParallel is OLLAMA_NUM_PARALLEL, the requests one loaded model
	// generates at once (default 1); the rest wait, with no byte sent.
	NumParallel int
	// MaxQueue is OLLAMA_MAX_QUEUE (default 512, envconfig/config.go): past
	// NumParallel+MaxQueue requests in flight, a 503 "server busy, please
	// try again.  maximum pending requests exceeded" (server/sched.go
	// ErrMaxQueue; the fake counts the queue as the requests beyond those
	// generating, which Ollama's scheduler channel only approximates).
	MaxQueue int
	// Load is how long the model takes to load: the first generation
	// request (and any that arrive meanwhile) waits that long before any
	// byte. /api/ps lists the model once it is loaded.
	Load time.Duration
	// Loaded starts the server with its model loaded (a warm server whose
	// model was used within OLLAMA_KEEP_ALIVE): /api/ps lists it at once.
	Loaded bool
	// WholeWindow truncates an overlong prompt to num_ctx tokens, as the
	// 2025 runner logged it ("truncating input prompt" limit=8192 …
	// new=8192); without it to num_keep + (num_ctx − num_keep)/2, as 2026
	// builds log it (limit=2050 new=2050 with num_ctx 4096).
	WholeWindow bool
	// Thinking makes the model a thinking one (qwen3, deepseek-r1,
	// gpt-oss): the first Thinking tokens of each answer are its reasoning,
	// streamed as delta.reasoning and counted in completion_tokens.
	Thinking int
	// NoLogprobs stands for builds before logprobs support (late 2025):
	// logprobs and top_logprobs are dropped like any unknown field.
	NoLogprobs bool
	// CachedTokens stands for builds with ollama/ollama PR #17943 (August
	// 2026): usage carries prompt_tokens_details.cached_tokens, the prompt's
	// tokens its llama-server runner found in a slot's cache (the fake:
	// the longest prefix shared with one of the last NumParallel prompts,
	// at most all but the last token), prompt_tokens still the whole count.
	// Without it, no cached count (issue #8008).
	CachedTokens bool
	// MLX makes the model an MLX one (a "-mlx" tag: details.format
	// "safetensors", which is what Model.IsMLX tests, run by Ollama's MLX
	// runner, 2026): /api/ps states Context, the scheduler's num_ctx (PR
	// #16918), but the runner holds a prompt only to the model's maximum
	// and cuts none (the chat handler sets truncate false for MLX models;
	// issue #18125, open in 0.33): a prompt past Context is served whole.
	// The runner's refusal past the model's maximum is not modelled (its
	// wording is unverified).
	MLX bool
	// PsRequested stands for late-2025 builds, whose /api/ps stated the
	// num_ctx asked for (PsHandler: runnerRef.Options.NumCtx) rather than
	// the runner's, which NewLlamaServer caps at TrainedContext (current
	// builds: llama.ContextLength()). Either way a prompt is held to the
	// capped one.
	PsRequested bool
	// TrainedContext is the model's trained context, /api/show's
	// model_info "<arch>.context_length" (default 131072), which is not the
	// context a request gets.
	TrainedContext int
}

// ollamaVersion is what the fake's GET /api/version says.
const ollamaVersion = "0.13.0"

// ollamaState is the ollama personality's model: loading, loaded, and its
// generation slots.
type ollamaState struct {
	once   sync.Once
	ready  chan struct{} // closed once the model is loaded
	loaded bool          // under Personality.mu
	slots  chan struct{} // NumParallel
	// recent are the last NumParallel prompts' pieces (under
	// Personality.mu): what the runner's slots hold (CachedTokens).
	recent [][]string
}

// defaults fills in the zero values' defaults.
func (o *OllamaOptions) defaults() {
	if o.NumParallel <= 0 {
		o.NumParallel = 1
	}
	if o.MaxQueue <= 0 {
		o.MaxQueue = 512
	}
	if o.TrainedContext <= 0 {
		o.TrainedContext = 131072
	}
}

// newOllamaState is the model's state at start (o with its defaults):
// loaded with Loaded, else waiting for the first request to load it.
func newOllamaState(o OllamaOptions) *ollamaState {
	st := &ollamaState{ready: make(chan struct{}), slots: make(chan struct{}, o.NumParallel)}
	if o.Loaded {
		st.loaded = true
		st.once.Do(func() { close(st.ready) })
	}
	return st
}

// serveOllama answers every route as `ollama serve` does.
func (p *Personality) serveOllama(w http.ResponseWriter, r *http.Request, body []byte) {
	st := p.ollama
	path, get := r.URL.Path, r.Method == http.MethodGet
	switch {
	case path == "/" && (get || r.Method == http.MethodHead):
		// server/routes.go: GET and HEAD / answer "Ollama is running".
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		io.WriteString(w, "Ollama is running")
	case path == "/api/version" && get:
		writeJSON(w, 200, map[string]any{"version": ollamaVersion})
	case path == "/api/tags" && get:
		writeJSON(w, 200, map[string]any{"models": []any{p.ollamaModel(false)}})
	case path == "/api/ps" && get:
		p.mu.Lock()
		loaded := st.loaded
		p.mu.Unlock()
		models := []any{}
		if loaded {
			models = append(models, p.ollamaModel(true))
		}
		writeJSON(w, 200, map[string]any{"models": models})
	case path == "/api/show" && r.Method == http.MethodPost:
		p.ollamaShow(w, body)
	case path == "/v1/models" && get:
		writeJSON(w, 200, map[string]any{"object": "list", "data": []any{p.ollamaCard(p.Opts.Model)}})
	case strings.HasPrefix(path, "/v1/models/") && get:
		name := strings.TrimPrefix(path, "/v1/models/")
		if !p.ollamaServes(name) {
			p.ollamaFail(w, 404, fmt.Sprintf("model '%s' not found", name))
			return
		}
		writeJSON(w, 200, p.ollamaCard(name))
	case path == "/v1/chat/completions" && r.Method == http.MethodPost:
		p.ollamaGenerate(w, r, body, true)
	case path == "/v1/completions" && r.Method == http.MethodPost:
		p.ollamaGenerate(w, r, body, false)
	case ollamaRoutes[path]:
		// A known route by another method: gin's 405, as GenerateRoutes
		// sets HandleMethodNotAllowed.
		w.Header().Set("Content-Type", "text/plain")
		w.WriteHeader(405)
		io.WriteString(w, "405 method not allowed")
	default:
		// gin's default 404: no /health, /metrics or /props.
		w.Header().Set("Content-Type", "text/plain")
		w.WriteHeader(404)
		io.WriteString(w, "404 page not found")
	}
}

// ollamaRoutes are the fake's routes (server/routes.go GenerateRoutes has
// more, none of which glmbench asks).
var ollamaRoutes = set("/", "/api/version", "/api/tags", "/api/ps", "/api/show", "/v1/models", "/v1/chat/completions", "/v1/completions")

// ollamaName is a model name with Ollama's default tag: "llama3.2" is
// "llama3.2:latest".
func ollamaName(s string) string {
	if i := strings.LastIndex(s, "/"); !strings.Contains(s[i+1:], ":") {
		return s + ":latest"
	}
	return s
}

// ollamaServes says whether the model name is the one pulled.
func (p *Personality) ollamaServes(name string) bool {
	return name != "" && ollamaName(name) == ollamaName(p.Opts.Model)
}

// ollamaCard is a /v1/models entry (openai.go ToListCompletion): owned_by
// is the name's namespace, "library" for Ollama's own models; no context.
func (p *Personality) ollamaCard(name string) map[string]any {
	owner := "library"
	if parts := strings.Split(name, "/"); len(parts) > 1 {
		owner = parts[len(parts)-2]
	}
	return map[string]any{"id": name, "object": "model", "created": 1733000000, "owned_by": owner}
}

// ollamaModel is an /api/tags entry, or with ps an /api/ps one, whose
// context_length is the context the loaded model's requests get.
func (p *Personality) ollamaModel(ps bool) map[string]any {
	m := map[string]any{"name": p.Opts.Model, "model": p.Opts.Model, "size": 2019393189, "digest": "a80c4f17acd55265feec403c7aef86be0c25983ab279d83f3bcd3abbcb5b8b72",
		"details": map[string]any{"format": p.ollamaFormat(), "family": "llama", "parameter_size": "3.2B", "quantization_level": "Q4_K_M"}}
	if ps {
		stated := p.ollamaNumCtx()
		if p.Opts.Ollama.PsRequested {
			stated = p.Opts.Context
		}
		m["size_vram"], m["expires_at"], m["context_length"] = 2019393189, time.Now().Add(5*time.Minute).Format(time.RFC3339), stated
	} else {
		m["modified_at"] = "2024-12-01T00:00:00Z"
	}
	return m
}

// ollamaNumCtx is the runner's num_ctx: Options.Context (num_ctx asked
// for) capped at the trained context (llm/server.go NewLlamaServer).
func (p *Personality) ollamaNumCtx() int {
	return min(p.Opts.Context, p.Opts.Ollama.TrainedContext)
}

// ollamaFormat is the model's details.format: "safetensors" for an MLX
// model, "gguf" for the rest.
func (p *Personality) ollamaFormat() string {
	if p.Opts.Ollama.MLX {
		return "safetensors"
	}
	return "gguf"
}

// ollamaShow answers POST /api/show: model_info holds the trained context,
// not the one a request gets.
func (p *Personality) ollamaShow(w http.ResponseWriter, body []byte) {
	var req struct {
		Model string `json:"model"`
		Name  string `json:"name"`
	}
	_ = json.Unmarshal(body, &req)
	name := req.Model
	if name == "" {
		name = req.Name
	}
	if !p.ollamaServes(name) {
		writeJSON(w, 404, map[string]any{"error": fmt.Sprintf("model '%s' not found", name)})
		return
	}
	writeJSON(w, 200, map[string]any{"parameters": "", "template": "{{ .Prompt }}", "capabilities": []any{"completion"},
		"details":    map[string]any{"format": p.ollamaFormat(), "family": "llama"},
		"model_info": map[string]any{"general.architecture": "llama", "llama.context_length": p.Opts.Ollama.TrainedContext}})
}

// ollamaFail answers an error through the OpenAI middleware: its own
// refusals, the 400s, are invalid_request_error, everything the handler
// answered api_error (writeError calls NewError with 500 whatever the
// status).
func (p *Personality) ollamaFail(w http.ResponseWriter, status int, msg string) {
	typ := "api_error"
	if status == http.StatusBadRequest {
		typ = "invalid_request_error"
	}
	writeJSON(w, status, map[string]any{"error": map[string]any{"message": msg, "type": typ, "param": nil, "code": nil}})
}
