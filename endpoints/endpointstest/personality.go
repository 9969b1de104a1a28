package endpointstest

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"
)

// Personalities: fake servers that answer what glmbench sends as a named real
// server documents it (or, where marked, as issue 12 observed it). Each is an
// httptest server on loopback; BaseURL ends in /v1. The model behind them is
// the deterministic one of model.go. docs/SERVERS.md has the table, with
// sources; every behaviour below names its source in a comment.

// Personality names, for Start.
const (
	LlamaCpp = "llama.cpp"
	VLLM     = "vllm"
	SGLang   = "sglang"
	OpenAI   = "openai"
	Gateway  = "gateway"
	Ollama   = "ollama"
	TGI      = "tgi"
	LMStudio = "lmstudio"
	TRTLLM   = "trtllm"
	// ZAI is Z.ai's hosted GLM API (zai.go); its base is /api/paas/v4.
	ZAI = "zai"
	// LMDeploy is lmdeploy serve api_server (lmdeploy.go).
	LMDeploy = "lmdeploy"
	// SGLangRouter and Dynamo are routers in front of workers (router.go).
	SGLangRouter = "sglang-router"
	Dynamo       = "dynamo"
)

// Names lists the personalities.
func Names() []string {
	return []string{LlamaCpp, VLLM, SGLang, OpenAI, Gateway, Ollama, TGI, LMStudio, TRTLLM, SGLangRouter, Dynamo, ZAI, LMDeploy}
}

// LlamaOverflow is what llama.cpp does with a prompt of at least a slot's
// context; it changed across versions.
type LlamaOverflow int

const (
	// LlamaTruncate keeps the first n_keep (0) tokens and drops whole blocks
	// of n_ctx/2 from the start until the prompt fits, answering 200 with the
	// truncated usage.prompt_tokens (examples/server/server.cpp since PR
	// #3996, 2023, through 2024; what issue 12 saw with -c 65536 -np 16).
	LlamaTruncate LlamaOverflow = iota
	// LlamaReject answers 400 "the request exceeds the available context
	// size, try increasing it", type exceed_context_size_error, with
	// n_prompt_tokens and n_ctx (llama.cpp b7062, issue ggml-org/llama.cpp#17284).
	LlamaReject
	// LlamaRejectCounts answers 400 "request (N tokens) exceeds the available
	// context size (M tokens), try increasing it" with the same fields
	// (tools/server/server-context.cpp, 2026).
	LlamaRejectCounts
)

// Options configure a personality. Zero values take the defaults named.
type Options struct {
	// Model is the served model id (default per personality).
	Model string
	// Context is the context length in tokens: vLLM's max_model_len,
	// SGLang's context_len, llama.cpp's context per slot (-c / -np), the
	// OpenAI model's window (default 4096).
	Context int
	// Slots is llama.cpp's -np (default 1); /props total_slots.
	Slots int
	// LlamaOverflow picks llama.cpp's answer to an overlong prompt.
	LlamaOverflow LlamaOverflow
	// LlamaRoleChunk makes llama.cpp open a stream with {"role":"assistant",
	// "content":null} (seen from b6097); without it no role chunk, as issue
	// 12 saw.
	LlamaRoleChunk bool
	// LlamaUsageChunk makes llama.cpp send usage in a chunk of its own with
	// choices [] after the finish chunk, always (PR #15444, b6497, issue
	// #16048); without it usage rides on the finish chunk, as issue 12 saw.
	LlamaUsageChunk bool
	// LlamaNChoices makes llama.cpp serve n > 1 as current builds do (2026,
	// tools/server/server-task.cpp: n_cmpl from n, no longer refused in
	// oaicompat_*_params_parse): up to Slots choices, and past them 400
	// "n_cmpl cannot be greater than the number of slots, please increase
	// -np"; without it any n but 1 is 500 "Only one completion choice is
	// allowed", as older builds answer.
	LlamaNChoices bool
	// LlamaCompletionLogprobs makes llama.cpp answer a non-streamed
	// /v1/completions asked for logprobs N > 0 as current builds do (2026,
	// tools/server/server-task.cpp to_json_oaicompat: n_probs from the
	// request's logprobs): choices[].logprobs in the chat shape,
	// {"content": [{"id", "token", "bytes", "logprob", "top_logprobs"}]},
	// not the legacy tokens/token_logprobs lists; without it none at all,
	// as issue 12 saw. Echo is refused either way.
	LlamaCompletionLogprobs bool
	// LlamaUsageAsked makes llama.cpp send a chat stream's usage as current
	// builds do (2026, tools/server/server-task.cpp: params_from_json_cmpl
	// reads stream_options.include_usage, default false): a chunk of its own
	// with choices [] only when include_usage asks for it, timings on the
	// last chunk sent; without it, no usage at all. It overrides
	// LlamaUsageChunk.
	LlamaUsageAsked bool
	// Metrics turns on /metrics where the server gates it (llama.cpp
	// --metrics, SGLang --enable-metrics); vLLM always serves it.
	Metrics bool
	// VLLMFlatErrors answers errors in vLLM's flat shape before v0.10.1
	// ({"object":"error","message",...}; vllm PR #22099 nested them).
	VLLMFlatErrors bool
	// VLLMBefore018 answers a context overflow in the words of vLLM
	// 0.10.1 to 0.17 (vllm/entrypoints/openai/serving_engine.py
	// _validate_input: "'max_tokens' or 'max_completion_tokens' is too
	// large: M. ..." and "... However, your request has P input tokens.");
	// without it (and without VLLMFlatErrors) the renderer's words of 0.18
	// and later (checkVLLMRenderer).
	VLLMBefore018 bool
	// SGLangTokenize serves /tokenize and /v1/tokenize on SGLang (newer versions).
	SGLangTokenize bool
	// SGLangContextArg reports Context as /server_info's context_length
	// (set when SGLang runs with --context-length; otherwise null).
	SGLangContextArg bool
	// SGLangWithoutAliases is an SGLang build without the deprecated
	// aliases of its renamed routes: /server_info answers, /get_server_info
	// is a 404 (sgl-project/sglang #13607 removed the aliases, #14533 put
	// them back). Without it both names answer, as current builds do.
	SGLangWithoutAliases bool
	// VLLMProfiler serves vLLM's /start_profile and /stop_profile, as a
	// server started with its profiler configured does (else 404).
	VLLMProfiler bool
	// MaxRunning and MaxQueued are SGLang's --max-running-requests and
	// --max-queued-requests: past both, a request gets 503 "The request queue
	// is full." (0: unbounded).
	MaxRunning, MaxQueued int
	// MaxOutput is the OpenAI model's completion-token cap (default 16384).
	MaxOutput int
	// ReasoningModel makes the OpenAI model one of its reasoning models
	// (o-series, gpt-5): chat refuses max_tokens, asking for
	// max_completion_tokens (400 unsupported_parameter).
	ReasoningModel bool
	// LlamaNoMaxCompletionTokens makes llama.cpp read no
	// max_completion_tokens, as builds before PR 19831 (February 2026)
	// did: a request capped by it alone is uncapped (n_predict -1), and
	// generates until the slot's end, not the fake's usual 16 tokens.
	LlamaNoMaxCompletionTokens bool
	// HiddenReasoning is how many tokens a reasoning model thinks before
	// its answer, within max_completion_tokens: streamed as nothing (chat
	// sends no reasoning), counted in completion_tokens. A cap it uses up
	// ends with finish_reason "length" and no content at all, as o4-mini
	// is reported to do.
	HiddenReasoning int
	// APIKey, when set, is required as "Authorization: Bearer KEY".
	APIKey string
	// AdminAPIKey is SGLang's --admin-api-key: when set, its profiler
	// routes take only it (see sglangAdmin).
	AdminAPIKey string
	// Concurrency and RPM are the gateway's limiters: past Concurrency
	// requests in flight, or RPM requests in the last minute, a 429 with
	// Retry-After (default "1") and x-ratelimit-* headers.
	Concurrency, RPM int
	RetryAfter       string
	// HangEvery and Hang: every HangEvery-th request to the gateway (1:
	// all) is held for Hang (or until the client leaves) before anything;
	// with KeepAlive, a stream gets its headers at once and an SSE comment
	// ": OPENROUTER PROCESSING" every KeepAlive while held.
	HangEvery       int
	Hang, KeepAlive time.Duration
	// TTFT is the delay before the first content event, Gap the delay
	// between content events.
	TTFT, Gap time.Duration
	// EOSAfter makes the model end with finish_reason "stop" after that many
	// tokens unless ignore_eos is set (0: never).
	EOSAfter int
	// LoadingChecks makes the server start loading its model: it is ready
	// once its /health has answered 503 that many times (a clock-free stand-in
	// for a load that takes a while). llama.cpp, while loading, answers every
	// route but /models, /v1/models and /api/tags 503 {"error": {"code": 503,
	// "message": "Loading model", "type": "unavailable_error"}}, before it
	// checks the key (tools/server/server.cpp middleware_server_state); SGLang
	// answers /health 503 with no body while its server_status is Starting
	// and serves the rest (srt/entrypoints/http_server.py health_generate).
	// The other personalities have no such state (vLLM does not listen
	// until it is ready).
	LoadingChecks int
	// ToolCalls makes the model call the first of a chat request's tools
	// when tool_choice is "auto" or absent, as a model that chooses to
	// call does. Without it the model calls only when it must: tool_choice
	// "required" (the first tool) or a named function; "none" never. A
	// call is the generation itself: its first token is the function's
	// name, each later token a fragment of its arguments, streamed in the
	// server's shape (see toolDelta), usage counting every token.
	ToolCalls bool
	// Ollama holds the ollama personality's own settings (ollama.go).
	Ollama OllamaOptions
	// TGI configures the tgi personality (tgi.go); Context is its
	// --max-total-tokens.
	TGI TGIOptions
	// LMStudio configures the lmstudio personality (lmstudio.go); Context
	// is the context its model was loaded with.
	LMStudio LMStudioOptions
	// LiteLLM makes the gateway a LiteLLM proxy in front of vLLM (litellm.go).
	LiteLLM LiteLLMOptions
	// TRTLLM configures the trtllm personality (trtllm.go); Context is its
	// max_seq_len.
	TRTLLM TRTLLMOptions
	// Router configures the sglang-router and dynamo personalities (router.go).
	Router RouterOptions
	// ZAI configures the zai personality (zai.go); APIKey, Context,
	// MaxOutput, TTFT and Gap apply to it as to OpenAI's.
	ZAI ZAIOptions
	// LMDeploy configures the lmdeploy personality (lmdeploy.go); Context
	// is its --session-len, Metrics its --enable-metrics.
	LMDeploy LMDeployOptions
}

// Issue12LlamaCpp is the server issue 12 ran: llama.cpp with -c 65536 -np 16
// (4,096 tokens per slot), a build that truncates overlong prompts.
var Issue12LlamaCpp = Options{Context: 4096, Slots: 16, LlamaOverflow: LlamaTruncate}

// Personality is a running fake of one real server.
type Personality struct {
	*httptest.Server
	Kind string
	Opts Options

	vocab *vocabIDs
	mu    sync.Mutex
	// counters
	routes   map[string]int
	largest  int
	auth     []string
	prompts  []int
	fields   []map[string]json.RawMessage
	profiles []ProfileCall
	inflight int
	recent   []time.Time
	seq      int
	// loadingAsked counts the 503s /health gave while loading (LoadingChecks).
	loadingAsked int
	// whileLoading counts the requests other than /health answered while loading.
	whileLoading int
	// ollama is the ollama personality's model state (ollama.go).
	ollama *ollamaState
	// tgi counts what TGI's /metrics reports (tgi.go).
	tgi tgiCounters
	// litellm counts the LiteLLM proxy's own work (litellm.go).
	litellm litellmCounters
	// trtllm counts what trtllm-serve's metrics report (trtllm.go).
	trtllm trtllmCounters
	// router is a router's workers and counters (router.go).
	router *routerState
	// lmdeploy counts what LMDeploy's metrics report (lmdeploy.go).
	lmdeploy lmdeployCounters
}

// Start starts the personality name (one of Names) and closes it when the
// test ends.
func Start(t testing.TB, name string, o Options) *Personality {
	t.Helper()
	p, err := NewPersonality(name, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	return p
}

// NewPersonality starts the personality name; the caller closes it.
func NewPersonality(name string, o Options) (*Personality, error) {
	if !slices.Contains(Names(), name) {
		return nil, fmt.Errorf("no personality %q (have %s)", name, strings.Join(Names(), ", "))
	}
	if o.Context <= 0 {
		o.Context = 4096
	}
	if o.Slots <= 0 {
		o.Slots = 1
	}
	if o.MaxOutput <= 0 {
		o.MaxOutput = 16384
	}
	if o.RetryAfter == "" {
		o.RetryAfter = "1"
	}
	if o.Model == "" {
		o.Model = map[string]string{LlamaCpp: "tinyllama-random.gguf", VLLM: "meta-llama/Llama-3.1-8B-Instruct",
			SGLang: "meta-llama/Llama-3.1-8B-Instruct", OpenAI: "gpt-4o-mini", Gateway: "meta-llama/llama-3.1-8b-instruct", Ollama: "llama3.2:latest",
			TGI: "meta-llama/Llama-3.1-8B-Instruct", LMStudio: "meta-llama-3.1-8b-instruct", TRTLLM: "meta-llama/Llama-3.1-8B-Instruct",
			SGLangRouter: "meta-llama/Llama-3.1-8B-Instruct", Dynamo: "meta-llama/Llama-3.1-8B-Instruct", ZAI: "glm-4.6",
			LMDeploy: "zai-org/GLM-4.5-Air"}[name]
	}
	// Each personality's own options, defaulted only where they are its.
	switch name {
	case Ollama:
		o.Ollama.defaults()
	case TGI:
		o.TGI.defaults(o.Context)
	case LMStudio:
		o.LMStudio.defaults()
	case TRTLLM:
		o.TRTLLM.defaults()
	case SGLangRouter, Dynamo:
		o.Router.defaults(name)
	case ZAI:
		o.ZAI.defaults()
	}
	p := &Personality{Kind: name, Opts: o, vocab: newVocabIDs(), routes: map[string]int{}}
	if name == Ollama {
		p.ollama = newOllamaState(o.Ollama)
	}
	if name == SGLangRouter || name == Dynamo {
		if err := p.startRouter(); err != nil {
			return nil, err
		}
	}
	p.Server = httptest.NewServer(http.HandlerFunc(p.serve))
	return p, nil
}

// BaseURL is the API base to give a client: /v1, but Z.ai's own.
func (p *Personality) BaseURL() string {
	if p.Kind == ZAI {
		return p.URL + p.zaiBase()
	}
	return p.URL + "/v1"
}

// Requests is how many requests arrived for "METHOD /path" (e.g.
// "POST /v1/chat/completions").
func (p *Personality) Requests(route string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.routes[route]
}

// TotalRequests is how many requests arrived, on any route.
func (p *Personality) TotalRequests() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for _, c := range p.routes {
		n += c
	}
	return n
}

// LargestBody is the largest request body received, in bytes.
func (p *Personality) LargestBody() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.largest
}

// AuthHeaders are the Authorization values received, in order (empty when a
// request had none).
func (p *Personality) AuthHeaders() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.auth...)
}

// PromptTokens are the prompt counts of the generation requests received,
// as counted before any truncation, in order; a router's are its
// workers', worker by worker.
func (p *Personality) PromptTokens() []int {
	p.mu.Lock()
	out := append([]int(nil), p.prompts...)
	p.mu.Unlock()
	for _, wk := range p.Workers() {
		out = append(out, wk.PromptTokens()...)
	}
	return out
}

// BodyFields are the top-level fields of each generation request's body
// (POST /v1/chat/completions or /v1/completions), but its messages and
// prompt, in order of arrival; nil for a body that is no JSON object.
func (p *Personality) BodyFields() []map[string]json.RawMessage {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]map[string]json.RawMessage(nil), p.fields...)
}

// MaxPromptTokens is the largest of PromptTokens (0 when none).
func (p *Personality) MaxPromptTokens() int {
	m := 0
	for _, n := range p.PromptTokens() {
		m = max(m, n)
	}
	return m
}

// MaxBody bounds what a personality parses of one body, in bytes. It is the
// fake's own limit, not a server's: past it the body is read to its end (so
// LargestBody is its true size) and answered 413.
const MaxBody = 256 << 20

func (p *Personality) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(io.LimitReader(r.Body, MaxBody+1))
	size := len(body)
	if size > MaxBody {
		rest, _ := io.Copy(io.Discard, r.Body)
		size += int(rest)
	}
	var fields map[string]json.RawMessage
	generation := r.Method == http.MethodPost && (r.URL.Path == "/v1/chat/completions" || r.URL.Path == "/v1/completions" ||
		p.Kind == ZAI && r.URL.Path == p.zaiBase()+"/chat/completions")
	if generation && size <= MaxBody && json.Unmarshal(body, &fields) == nil {
		delete(fields, "messages")
		delete(fields, "prompt")
	}
	p.mu.Lock()
	p.routes[r.Method+" "+r.URL.Path]++
	p.largest = max(p.largest, size)
	p.auth = append(p.auth, r.Header.Get("Authorization"))
	if generation {
		p.fields = append(p.fields, fields)
	}
	p.mu.Unlock()
	if size > MaxBody {
		p.fail(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("the test fake parses no body over %d bytes (this one: %d)", MaxBody, size), nil)
		return
	}

	switch p.Kind {
	case Ollama:
		p.serveOllama(w, r, body)
		return
	case TGI:
		p.serveTGI(w, r, body)
		return
	case LMStudio:
		p.serveLMStudio(w, r, body)
		return
	case SGLangRouter, Dynamo:
		p.serveRouter(w, r, body)
		return
	case TRTLLM:
		p.serveTRTLLM(w, r, body)
		return
	case ZAI:
		p.serveZAI(w, r, body)
		return
	case LMDeploy:
		p.serveLMDeploy(w, r, body)
		return
	}
	if p.loading(w, r) {
		return
	}
	if p.liteLLM() && p.serveLiteLLM(w, r) {
		return
	}
	if !p.authorized(w, r) {
		return
	}
	path := r.URL.Path
	switch {
	case path == "/v1/models" && r.Method == http.MethodGet:
		p.models(w)
	case path == "/v1/chat/completions" && r.Method == http.MethodPost:
		p.generation(w, r, body, true)
	case path == "/v1/completions" && r.Method == http.MethodPost:
		p.generation(w, r, body, false)
	case path == "/health" && r.Method == http.MethodGet && p.Kind != OpenAI && p.Kind != Gateway:
		p.health(w)
	case path == "/props" && r.Method == http.MethodGet && p.Kind == LlamaCpp:
		p.props(w)
	case (path == "/server_info" || path == "/get_server_info" && !p.Opts.SGLangWithoutAliases) && p.Kind == SGLang:
		p.serverInfo(w)
	case path == "/metrics" && r.Method == http.MethodGet:
		p.metrics(w, r)
	case path == "/tokenize" && r.Method == http.MethodPost && (p.Kind == LlamaCpp || p.Kind == VLLM || (p.Kind == SGLang && p.Opts.SGLangTokenize)),
		path == "/v1/tokenize" && r.Method == http.MethodPost && p.Kind == SGLang && p.Opts.SGLangTokenize:
		p.tokenize(w, body)
	case p.profileRoute(path):
		p.profile(w, r)
	default:
		p.notFound(w, r)
	}
}

// writeJSON answers status with v as JSON.
func writeJSON(w http.ResponseWriter, status int, v any) {
	b, _ := json.Marshal(v)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(b)
}

// fail answers an error in this server's shape. typ is the OpenAI-style type
// where the server has one; extra fields go inside the error object.
func (p *Personality) fail(w http.ResponseWriter, status int, msg string, extra map[string]any) {
	writeJSON(w, status, p.errorBody(status, msg, extra))
}

// errorBody is an error object as this server writes it.
func (p *Personality) errorBody(status int, msg string, extra map[string]any) map[string]any {
	if p.liteLLM() {
		return litellmError(status, litellmMessage(status, msg), extra)
	}
	switch p.Kind {
	case LMStudio:
		return p.lmstudioError(msg)
	case LlamaCpp:
		// {"error":{"code","message","type"}}, the status equal to code
		// (tools/server/server-common.cpp format_error_response; error types
		// 400 invalid_request_error, 401 authentication_error, 404
		// not_found_error, 500 server_error, 501 not_supported_error, 503
		// unavailable_error).
		typ := map[int]string{400: "invalid_request_error", 401: "authentication_error", 403: "permission_error",
			404: "not_found_error", 500: "server_error", 501: "not_supported_error", 503: "unavailable_error"}[status]
		e := map[string]any{"code": status, "message": msg, "type": typ}
		for k, v := range extra {
			e[k] = v
		}
		return map[string]any{"error": e}
	case VLLM, SGLang, TRTLLM:
		// vLLM ≥ 0.10.1: {"error":{"message","type","param","code"}} (vllm
		// PR #22099); before, and SGLang: flat {"object":"error","message",
		// "type","param","code"} (sglang/srt/.../protocol.py ErrorResponse;
		// trtllm-serve's ErrorResponse alike, serve/openai_protocol.py).
		typ := map[int]string{400: "BadRequestError", 404: "NotFoundError", 500: "InternalServerError", 503: "ServiceUnavailableError"}[status]
		e := map[string]any{"message": msg, "type": typ, "param": nil, "code": status}
		for k, v := range extra {
			e[k] = v
		}
		if p.Kind == SGLang || p.Kind == TRTLLM || p.Opts.VLLMFlatErrors {
			e["object"] = "error"
			return e
		}
		return map[string]any{"error": e}
	default:
		// OpenAI: {"error":{"message","type","param","code"}}, code a string or null.
		e := map[string]any{"message": msg, "type": "invalid_request_error", "param": nil, "code": nil}
		for k, v := range extra {
			e[k] = v
		}
		return map[string]any{"error": e}
	}
}

func (p *Personality) notFound(w http.ResponseWriter, r *http.Request) {
	switch p.Kind {
	case VLLM, SGLang:
		// FastAPI's default for an unknown route.
		writeJSON(w, 404, map[string]any{"detail": "Not Found"})
	case LlamaCpp:
		// llama-server's error handler for cpp-httplib's 404
		// (tools/server/server-http.cpp set_error_handler):
		// {"error":{"message":"File Not Found","type":"not_found_error","code":404}}.
		p.fail(w, 404, "File Not Found", nil)
	default:
		// api.openai.com's answer to an unknown path (as widely reported).
		p.fail(w, 404, fmt.Sprintf("Invalid URL (%s %s)", r.Method, r.URL.Path), nil)
	}
}

// authorized checks the API key where one is set, answering 401 as the
// server does.
func (p *Personality) authorized(w http.ResponseWriter, r *http.Request) bool {
	if p.Kind == SGLang && p.Opts.AdminAPIKey != "" && p.profileRoute(r.URL.Path) {
		return p.sglangAdmin(w, r)
	}
	if p.Opts.APIKey == "" {
		return true
	}
	got := r.Header.Get("Authorization")
	if p.Kind == LlamaCpp {
		// /health and /models (with their /v1 twins) are public; X-Api-Key
		// is accepted when Authorization is empty; "Bearer " is stripped
		// (tools/server/server-http.cpp, get_public_endpoints and
		// middleware_validate_api_key).
		switch r.URL.Path {
		case "/health", "/v1/health", "/models", "/v1/models":
			return true
		}
		if got == "" {
			got = r.Header.Get("X-Api-Key")
		}
		if strings.TrimPrefix(got, "Bearer ") == p.Opts.APIKey {
			return true
		}
		p.fail(w, 401, "Invalid API Key", nil)
		return false
	}
	if got == "Bearer "+p.Opts.APIKey {
		return true
	}
	if p.liteLLM() {
		// user_api_key_auth (wording unverified): the key is not echoed.
		p.fail(w, 401, "Authentication Error, Invalid proxy server token passed. Received API Key = ****, Key Hash (Token) = none. Unable to find token in cache or `LiteLLM_VerificationTokenTable`", nil)
		return false
	}
	if p.Kind == SGLang && (strings.HasPrefix(r.URL.Path, "/health") || strings.HasPrefix(r.URL.Path, "/metrics")) {
		// SGLang's add_api_key_middleware lets paths starting /health or
		// /metrics through (sglang/srt/utils.py).
		return true
	}
	if p.Kind == VLLM && !strings.HasPrefix(r.URL.Path, "/v1") {
		// vLLM's --api-key guards only the /v1 routes (api_server.py's
		// middleware); /health, /metrics and /tokenize stay open.
		return true
	}
	switch p.Kind {
	case VLLM, SGLang:
		// vLLM's and SGLang's api-key middleware: {"error": "Unauthorized"}
		// (vllm/entrypoints/openai/api_server.py, sglang/srt/utils.py).
		writeJSON(w, 401, map[string]any{"error": "Unauthorized"})
	default:
		// OpenAI names the wrong key, masked to its first and last
		// characters, in the message: a partial secret in an error body.
		key := strings.TrimPrefix(got, "Bearer ")
		msg := "You didn't provide an API key. You need to provide your API key in an Authorization header using Bearer auth (i.e. Authorization: Bearer YOUR_KEY)."
		code := any(nil)
		if key != "" {
			msg = "Incorrect API key provided: " + maskKey(key) + ". You can find your API key at https://platform.openai.com/account/api-keys."
			code = "invalid_api_key"
		}
		p.fail(w, 401, msg, map[string]any{"code": code})
	}
	return false
}

// maskKey is OpenAI's masking of a key in its 401: the first three and last
// four characters around asterisks.
func maskKey(k string) string {
	if len(k) <= 8 {
		return strings.Repeat("*", len(k))
	}
	return k[:3] + strings.Repeat("*", len(k)-7) + k[len(k)-4:]
}

func (p *Personality) models(w http.ResponseWriter) {
	now := time.Now().Unix()
	m := p.Opts.Model
	switch p.Kind {
	case VLLM, Gateway:
		// vllm ModelCard: owned_by "vllm", root, parent, max_model_len, permission.
		card := map[string]any{"id": m, "object": "model", "created": now, "owned_by": "vllm", "root": m, "parent": nil,
			"max_model_len": p.Opts.Context, "permission": []any{map[string]any{"id": "modelperm-0", "object": "model_permission",
				"created": now, "allow_sampling": true, "allow_logprobs": true, "allow_view": true, "organization": "*", "is_blocking": false}}}
		if p.Kind == Gateway {
			// A gateway lists its own catalogue: no context length field
			// (LiteLLM: its model_list's names, owned_by "openai").
			card = map[string]any{"id": m, "object": "model", "created": now, "owned_by": "gateway"}
			if p.liteLLM() {
				card["owned_by"], card["created"] = "openai", 1677610602
			}
		}
		writeJSON(w, 200, map[string]any{"object": "list", "data": []any{card}})
	case SGLang:
		// sglang/srt/entrypoints/openai/protocol.py ModelCard; max_model_len
		// is model_config.context_len.
		writeJSON(w, 200, map[string]any{"object": "list", "data": []any{map[string]any{"id": m, "object": "model",
			"created": now, "owned_by": "sglang", "root": m, "parent": nil, "max_model_len": p.Opts.Context}}})
	case LlamaCpp:
		// tools/server/server-context.cpp get_res_models: Ollama-style models[]
		// and OpenAI-style data[] in one body; meta carries n_ctx_train (the
		// model's training context, not the slot's).
		writeJSON(w, 200, map[string]any{
			"models": []any{map[string]any{"name": m, "model": m, "modified_at": "", "size": "", "digest": "", "type": "model",
				"description": "", "tags": []any{""}, "capabilities": []any{"completion"}, "parameters": "", "details": map[string]any{"format": "gguf"}}},
			"object": "list",
			"data": []any{map[string]any{"id": m, "object": "model", "created": now, "owned_by": "llamacpp",
				"meta": map[string]any{"vocab_type": 2, "n_vocab": 32000, "n_ctx_train": 131072, "n_embd": 2048, "n_params": 1100048384, "size": 2200096768}}},
		})
	default:
		writeJSON(w, 200, map[string]any{"object": "list", "data": []any{map[string]any{"id": m, "object": "model", "created": 1721172741, "owned_by": "system"}}})
	}
}

// loading answers r as a server still loading its model does, and reports
// whether it did (see Options.LoadingChecks).
func (p *Personality) loading(w http.ResponseWriter, r *http.Request) bool {
	if p.Kind != LlamaCpp && p.Kind != SGLang {
		return false
	}
	path := r.URL.Path
	p.mu.Lock()
	loading := p.loadingAsked < p.Opts.LoadingChecks
	health := path == "/health" && r.Method == http.MethodGet
	switch {
	case !loading:
	case health:
		p.loadingAsked++
	case p.Kind == LlamaCpp && path != "/models" && path != "/v1/models" && path != "/api/tags":
		p.whileLoading++
	default:
		loading = false
	}
	p.mu.Unlock()
	switch {
	case !loading:
		return false
	case p.Kind == SGLang:
		w.WriteHeader(http.StatusServiceUnavailable)
	default:
		p.fail(w, http.StatusServiceUnavailable, "Loading model", nil)
	}
	return true
}

// LoadingAnswers returns how many times the server answered 503 while
// loading its model: on /health, and on every other route (llama.cpp).
func (p *Personality) LoadingAnswers() (health, other int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.loadingAsked, p.whileLoading
}

func (p *Personality) health(w http.ResponseWriter) {
	if p.Kind == LlamaCpp {
		// tools/server/server-context.cpp get_health.
		writeJSON(w, 200, map[string]any{"status": "ok"})
		return
	}
	// vLLM and SGLang: 200 with an empty body.
	w.WriteHeader(200)
}

func (p *Personality) props(w http.ResponseWriter) {
	// tools/server/server-context.cpp get_res_props: n_ctx is per slot.
	writeJSON(w, 200, map[string]any{
		"default_generation_settings": map[string]any{"n_ctx": p.Opts.Context, "params": map[string]any{"temperature": 0.8, "top_k": 40, "top_p": 0.95, "n_predict": -1}},
		"total_slots":                 p.Opts.Slots,
		"model_alias":                 p.Opts.Model,
		"model_path":                  "/models/" + p.Opts.Model,
		"modalities":                  map[string]any{"vision": false, "audio": false},
		"chat_template":               "{{ bos_token }}{% for m in messages %}...{% endfor %}",
		"bos_token":                   "<s>",
		"eos_token":                   "</s>",
		"build_info":                  "b6000-fake",
		"endpoint_slots":              true,
		"endpoint_props":              false,
		"endpoint_metrics":            p.Opts.Metrics,
	})
}

func (p *Personality) serverInfo(w http.ResponseWriter) {
	// SGLang's /server_info (and /get_server_info): the ServerArgs dataclass (context_length is
	// the --context-length argument, null when not given) merged with the
	// scheduler's info; api_key is included unredacted
	// (sglang/srt/entrypoints/http_server.py; reference dump
	// shared/reference/sglang_server_config.json).
	var ctx, key, queued any
	if p.Opts.SGLangContextArg {
		ctx = p.Opts.Context
	}
	if p.Opts.APIKey != "" {
		key = p.Opts.APIKey
	}
	if p.Opts.MaxQueued > 0 {
		queued = p.Opts.MaxQueued
	}
	running := p.Opts.MaxRunning
	if running == 0 {
		running = 1024
	}
	var admin any
	if p.Opts.AdminAPIKey != "" {
		admin = p.Opts.AdminAPIKey
	}
	args := func() map[string]any {
		return map[string]any{"model_path": p.Opts.Model, "served_model_name": p.Opts.Model, "context_length": ctx,
			"api_key": key, "admin_api_key": admin, "max_running_requests": running, "max_queued_requests": queued,
			"max_total_tokens": nil, "enable_metrics": p.Opts.Metrics}
	}
	// Each scheduler's (DP rank's) internal state is the resolved server
	// args again, api_key and admin_api_key in clear, with its throughput
	// and memory (srt/managers/scheduler_components/internal_state.py
	// get_internal_state, as the reference dump's four ranks are).
	rank := args()
	rank["last_gen_throughput"] = 0.0
	rank["memory_usage"] = map[string]any{"weight": 15.0, "kvcache": 30.0, "token_capacity": 2328128, "graph": 1.5}
	info := args()
	info["status"], info["max_total_num_tokens"], info["max_req_input_len"] = "ready", 2328128, p.Opts.Context-5
	info["internal_states"], info["version"] = []any{rank}, "0.5.6"
	writeJSON(w, 200, info)
}

func (p *Personality) metrics(w http.ResponseWriter, r *http.Request) {
	p.mu.Lock()
	running, total := p.inflight, 0
	for _, n := range p.prompts {
		total += n
	}
	p.mu.Unlock()
	switch {
	case p.Kind == VLLM:
		// vLLM always serves /metrics (vllm: prefix); prompt_tokens_total
		// counts prompt tokens, not requests (vllm/v1/metrics/loggers.py
		// counter_prompt_tokens, "Number of prefill tokens processed").
		w.Header().Set("Content-Type", "text/plain; version=0.0.4")
		fmt.Fprintf(w, "# TYPE vllm:num_requests_running gauge\nvllm:num_requests_running{model_name=%q} %d\n"+
			"# TYPE vllm:num_requests_waiting gauge\nvllm:num_requests_waiting{model_name=%q} 0\n"+
			"# TYPE vllm:prompt_tokens_total counter\nvllm:prompt_tokens_total{model_name=%q} %d\n", p.Opts.Model, running, p.Opts.Model, p.Opts.Model, total)
	case p.Kind == SGLang && p.Opts.Metrics:
		w.Header().Set("Content-Type", "text/plain; version=0.0.4")
		fmt.Fprintf(w, "# TYPE sglang:num_running_reqs gauge\nsglang:num_running_reqs{model_name=%q} %d\n"+
			"# TYPE sglang:num_queue_reqs gauge\nsglang:num_queue_reqs{model_name=%q} 0\n", p.Opts.Model, running, p.Opts.Model)
	case p.Kind == LlamaCpp && p.Opts.Metrics:
		w.Header().Set("Content-Type", "text/plain; version=0.0.4")
		fmt.Fprintf(w, "# TYPE llamacpp:requests_processing gauge\nllamacpp:requests_processing %d\n"+
			"# TYPE llamacpp:requests_deferred gauge\nllamacpp:requests_deferred 0\n", running)
	case p.Kind == LlamaCpp:
		// 501 without --metrics (server-context.cpp get_metrics).
		p.fail(w, 501, "This server does not support metrics endpoint. Start it with `--metrics`", nil)
	default:
		// SGLang without --enable-metrics mounts no /metrics: FastAPI 404.
		p.notFound(w, r)
	}
}

func (p *Personality) tokenize(w http.ResponseWriter, body []byte) {
	var req struct {
		Content *string `json:"content"`
		Prompt  *string `json:"prompt"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		p.fail(w, 400, "invalid JSON body", nil)
		return
	}
	if p.Kind == LlamaCpp {
		// llama.cpp's /tokenize reads "content"; without it the answer is an
		// empty token list (server-context.cpp handle_tokenize).
		ids := []int{}
		if req.Content != nil {
			ids = append(ids, p.vocab.encode(*req.Content)...)
		}
		writeJSON(w, 200, map[string]any{"tokens": ids})
		return
	}
	// vLLM's /tokenize: {"count","max_model_len","tokens"}.
	if req.Prompt == nil {
		p.fail(w, 400, "prompt is required", nil)
		return
	}
	ids := p.vocab.encode(*req.Prompt)
	writeJSON(w, 200, map[string]any{"count": len(ids), "max_model_len": p.Opts.Context, "tokens": ids})
}

// openAIChatParams are the chat parameters api.openai.com accepts; any other
// is a 400 "Unrecognized request argument supplied: X" (widely reported, e.g.
// davidmigloz/langchain_dart#712 for reasoning_effort, xlinx/…#29 for top_k).
var openAIChatParams = set("model", "messages", "max_tokens", "max_completion_tokens", "stream", "stream_options",
	"temperature", "top_p", "n", "stop", "seed", "logprobs", "top_logprobs", "presence_penalty", "frequency_penalty",
	"logit_bias", "user", "tools", "tool_choice", "parallel_tool_calls", "response_format", "service_tier", "store",
	"metadata", "reasoning_effort", "modalities", "audio", "prediction", "web_search_options", "functions",
	"function_call", "safety_identifier", "prompt_cache_key", "verbosity")

func set(xs ...string) map[string]bool {
	m := map[string]bool{}
	for _, x := range xs {
		m[x] = true
	}
	return m
}

// unrecognized names the keys of body outside known, sorted.
func unrecognized(body map[string]json.RawMessage, known map[string]bool) []string {
	var out []string
	for k := range body {
		if !known[k] {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}
