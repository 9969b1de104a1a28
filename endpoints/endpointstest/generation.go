package endpointstest

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// genRequest is what a personality read of a chat or completions body.
type genRequest struct {
	chat      bool
	prompt    string   // the chat messages' contents joined, or the completion prompt's text
	pieces    []string // the completion prompt's tokens
	promptN   int      // usage.prompt_tokens before truncation
	maxTokens int64    // requested (max_completion_tokens, else max_tokens)
	hasMax    bool     // maxTokens was given
	maxName   string   // the field that gave maxTokens
	stream    bool
	usage     bool // stream_options.include_usage
	ignoreEOS bool
	n         int
	stop      []string
	samp      sampling
	logprobs  bool // chat logprobs
	topK      int  // chat top_logprobs, or completions logprobs
	compLP    bool // completions logprobs given (0 counts)
	echo      bool
	asIDs     bool // return_tokens_as_token_ids
	// sentHeader: the stream's 200 is already written (a held gateway stream).
	sentHeader bool
	// tool is the function the model calls ("" for none); choice is how
	// tool_choice chose it: "auto", "required" or "named".
	tool   string
	choice string
}

// genBody is the fields of a chat or completions body that a personality reads.
type genBody struct {
	Model               string          `json:"model"`
	Messages            []genMessage    `json:"messages"`
	Prompt              json.RawMessage `json:"prompt"`
	MaxTokens           json.RawMessage `json:"max_tokens"`
	MaxCompletionTokens json.RawMessage `json:"max_completion_tokens"`
	Stream              bool            `json:"stream"`
	StreamOptions       *struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options"`
	IgnoreEOS   bool            `json:"ignore_eos"`
	N           *int            `json:"n"`
	Stop        json.RawMessage `json:"stop"`
	Temperature *float64        `json:"temperature"`
	Seed        *int64          `json:"seed"`
	Logprobs    json.RawMessage `json:"logprobs"`
	TopLogprobs *int            `json:"top_logprobs"`
	Echo        bool            `json:"echo"`
	AsIDs       bool            `json:"return_tokens_as_token_ids"`
	Tools       []struct {
		Function struct {
			Name string `json:"name"`
		} `json:"function"`
	} `json:"tools"`
	ToolChoice json.RawMessage `json:"tool_choice"`
}

// genMessage is one chat message.
type genMessage struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
}

// parse reads a chat (or, with chat false, completions) body the way the
// personality's server does; a refusal is the error it answers instead.
func (p *Personality) parse(body []byte, chat bool) (*genRequest, *refusal) {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(body, &raw); err != nil {
		return nil, p.badJSON(err)
	}
	g := &genRequest{chat: chat, n: 1}
	var f genBody
	if err := json.Unmarshal(body, &f); err != nil {
		return nil, &refusal{400, "invalid request: " + err.Error(), nil}
	}
	if ref := p.checkFields(raw, f.Model, chat); ref != nil {
		return nil, ref
	}
	var ref *refusal
	if chat {
		ref = g.readMessages(f.Messages)
	} else {
		ref = p.readPrompt(g, f.Prompt)
	}
	if ref != nil {
		return nil, ref
	}
	mct := f.MaxCompletionTokens
	// TGI's ChatRequest has max_tokens alone (lib.rs), unknown fields ignored.
	if p.Kind == LlamaCpp && p.Opts.LlamaNoMaxCompletionTokens || p.Kind == TGI || p.Kind == LMStudio {
		mct = nil
	}
	if ref := g.readMaxTokens(f.MaxTokens, mct); ref != nil {
		return nil, ref
	}
	g.readOptions(&f)
	p.dropUnread(g)
	if chat {
		g.tool, g.choice = p.readTools(&f)
	}
	return g, nil
}

// dropUnread drops the options of a parsed request that the server does
// not read: fields its request struct lacks, which it ignores unrefused.
func (p *Personality) dropUnread(g *genRequest) {
	switch p.Kind {
	case TGI:
		// n is read and unused (lib.rs ChatRequest: "UNUSED"): one choice;
		// ignore_eos is no field of its requests (serde ignores it): the
		// model stops at its EOS.
		g.n, g.ignoreEOS = 1, false
	case Ollama:
		p.ollamaUnread(g)
	case LMStudio:
		g.lmstudioRead()
	}
}

// readTools is the function a chat request's model calls, "" for none,
// and how tool_choice chose it: {"type": "function", "function": {"name":
// N}} calls N ("named"), "required" the first tool, "auto" or none the
// first tool only with Options.ToolCalls ("auto"), "none" nothing; no
// tools, nothing.
func (p *Personality) readTools(f *genBody) (tool, how string) {
	var choice string
	var fn struct {
		Function struct {
			Name string `json:"name"`
		} `json:"function"`
	}
	switch {
	case len(f.Tools) == 0:
		return "", ""
	case json.Unmarshal(f.ToolChoice, &choice) == nil:
	case json.Unmarshal(f.ToolChoice, &fn) == nil && fn.Function.Name != "":
		return fn.Function.Name, "named"
	}
	switch {
	case choice == "required":
		return f.Tools[0].Function.Name, "required"
	case (choice == "" || choice == "auto") && p.Opts.ToolCalls:
		return f.Tools[0].Function.Name, "auto"
	}
	return "", ""
}

// badJSON is the refusal of a body that is not JSON.
func (p *Personality) badJSON(err error) *refusal {
	switch p.Kind {
	case LlamaCpp:
		// nlohmann's parse_error is no std::invalid_argument: ex_wrapper
		// answers 500 (tools/server/server.cpp; read from source, unverified on the wire).
		return &refusal{500, "[json.exception.parse_error.101] parse error: " + err.Error(), nil}
	case OpenAI, Gateway:
		return &refusal{400, "We could not parse the JSON body of your request. (HINT: This likely means you aren't using your HTTP library correctly. The OpenAI API expects a JSON payload, but what was sent was not valid JSON.)", nil}
	}
	return &refusal{400, "JSON decode error: " + err.Error(), nil}
}

// checkFields refuses the parameters OpenAI's chat does not know and a
// model the server does not serve.
func (p *Personality) checkFields(raw map[string]json.RawMessage, model string, chat bool) *refusal {
	if p.Kind == OpenAI && chat {
		if bad := unrecognized(raw, openAIChatParams); len(bad) == 1 {
			return &refusal{400, "Unrecognized request argument supplied: " + bad[0], nil}
		} else if len(bad) > 1 {
			return &refusal{400, "Unrecognized request arguments supplied: " + strings.Join(bad, ", "), nil}
		}
		if _, ok := raw["max_tokens"]; ok && p.Opts.ReasoningModel {
			// As widely reported for o1, o3 and gpt-5 (param max_tokens).
			return &refusal{400, "Unsupported parameter: 'max_tokens' is not supported with this model. Use 'max_completion_tokens' instead.",
				map[string]any{"param": "max_tokens", "code": "unsupported_parameter"}}
		}
	}
	if p.Kind == VLLM && truthy(raw["stream_options"]) && !truthy(raw["stream"]) {
		// ChatCompletionRequest's and CompletionRequest's
		// validate_stream_options (chat_completion/protocol.py,
		// completion/protocol.py): Python truthiness, so {} passes. The
		// text is the VLLMValidationError's; the framing pydantic's
		// validation error gives it is unverified.
		return &refusal{400, "Stream options can only be defined when `stream=True`. (parameter=stream_options)", map[string]any{"param": "stream_options"}}
	}
	if p.Kind == LMStudio && !p.lmstudioModelOK(model) {
		// Unverified wording and status.
		return &refusal{404, "Model \"" + model + "\" not found. Load it first, or turn on Just-in-Time model loading.", nil}
	}
	if (p.Kind == VLLM || p.Kind == OpenAI || p.Kind == Gateway) && model != p.Opts.Model {
		// vLLM: 404 "The model `X` does not exist." (serving_engine
		// _check_model); OpenAI: 404 model_not_found. llama.cpp, SGLang and
		// TGI (single model) answer whatever the model field says; Ollama
		// checks it before parse (ollamaParse), LM Studio above.
		if p.liteLLM() {
			// The router's refusal of a name outside its model_list: a 400
			// (wording as widely quoted; unverified for every version).
			return &refusal{400, "Invalid model name passed in model=" + model + ". Call `/v1/models` to view available models for your key.", map[string]any{"param": "model"}}
		}
		if p.Kind == OpenAI || p.Kind == Gateway {
			return &refusal{404, "The model `" + model + "` does not exist or you do not have access to it.", nil}
		}
		return &refusal{404, "The model `" + model + "` does not exist.", nil}
	}
	return nil
}

// truthy is Python's truth of a JSON value: absent, null, false, 0, "",
// [] and {} are false.
func truthy(v json.RawMessage) bool {
	var x any
	if len(v) == 0 || json.Unmarshal(v, &x) != nil {
		return false
	}
	switch y := x.(type) {
	case nil:
		return false
	case bool:
		return y
	case float64:
		return y != 0
	case string:
		return y != ""
	case []any:
		return len(y) > 0
	case map[string]any:
		return len(y) > 0
	}
	return true
}

// readMessages sets the prompt and its count from the chat messages.
func (g *genRequest) readMessages(messages []genMessage) *refusal {
	if len(messages) == 0 {
		return &refusal{400, "messages must not be empty", nil}
	}
	var contents []string
	for _, m := range messages {
		var s string
		if err := json.Unmarshal(m.Content, &s); err != nil {
			return &refusal{400, "message content must be a string", nil}
		}
		contents = append(contents, s)
	}
	g.prompt = strings.Join(contents, "\n")
	g.promptN = ChatPromptTokens(contents)
	return nil
}

// readPrompt sets the prompt, its pieces and its count from a completion
// prompt: a string or a list of token ids.
func (p *Personality) readPrompt(g *genRequest, prompt json.RawMessage) *refusal {
	var s string
	var ids []int
	switch {
	case json.Unmarshal(prompt, &s) == nil:
		g.prompt, g.pieces = s, Pieces(s)
	case json.Unmarshal(prompt, &ids) == nil && len(ids) > 0:
		for _, id := range ids {
			g.pieces = append(g.pieces, p.vocab.piece(id))
		}
		g.prompt = strings.Join(g.pieces, "")
	default:
		return &refusal{400, "prompt must be a string or a list of token ids", nil}
	}
	if len(g.pieces) == 0 {
		return &refusal{400, "prompt must not be empty", nil}
	}
	g.promptN = len(g.pieces)
	return nil
}

// readMaxTokens sets the requested maximum: max_completion_tokens, else
// max_tokens, when either is given and not null.
func (g *genRequest) readMaxTokens(maxTokens, maxCompletionTokens json.RawMessage) *refusal {
	mt, name := maxTokens, "max_tokens"
	if len(maxCompletionTokens) > 0 && string(maxCompletionTokens) != "null" {
		mt, name = maxCompletionTokens, "max_completion_tokens"
	}
	if len(mt) == 0 || string(mt) == "null" {
		return nil
	}
	// Exact as an integer (Python servers keep 2⁶³−1 exact); an
	// integral float is read as one; anything else is a 400.
	n, err := strconv.ParseInt(string(mt), 10, 64)
	if err != nil {
		x, xerr := strconv.ParseFloat(string(mt), 64)
		if xerr != nil || x != math.Trunc(x) || math.Abs(x) >= 1<<63 {
			return &refusal{400, "max_tokens must be an integer", nil}
		}
		n = int64(x)
	}
	g.maxTokens, g.hasMax, g.maxName = n, true, name
	return nil
}

// readOptions sets the options no server refuses at parse time: streaming,
// n, stop, sampling and logprobs.
func (g *genRequest) readOptions(f *genBody) {
	g.stream, g.ignoreEOS, g.echo, g.asIDs = f.Stream, f.IgnoreEOS, f.Echo, f.AsIDs
	g.usage = f.StreamOptions != nil && f.StreamOptions.IncludeUsage
	if f.N != nil {
		g.n = *f.N
	}
	if len(f.Stop) > 0 {
		var one string
		if json.Unmarshal(f.Stop, &one) == nil {
			g.stop = []string{one}
		} else {
			_ = json.Unmarshal(f.Stop, &g.stop)
		}
	}
	if f.Temperature != nil {
		g.samp.Temperature = *f.Temperature
	} else {
		g.samp.Temperature = 1
	}
	g.samp.Seed = f.Seed
	if g.chat {
		_ = json.Unmarshal(f.Logprobs, &g.logprobs)
		if f.TopLogprobs != nil {
			g.topK = *f.TopLogprobs
		}
	} else if len(f.Logprobs) > 0 && string(f.Logprobs) != "null" {
		g.compLP = json.Unmarshal(f.Logprobs, &g.topK) == nil
	}
}

// refusal is a request the server answers with an error status.
type refusal struct {
	status int
	msg    string
	extra  map[string]any
}

// check applies the server's rules to a parsed request: its limits and
// context check. It returns the prompt count the server will report and the
// number of tokens it may generate.
func (p *Personality) check(g *genRequest) (promptN int, budget int64, ref *refusal) {
	switch p.Kind {
	case LlamaCpp:
		return p.checkLlamaCpp(g)
	case VLLM, Gateway:
		return p.checkVLLM(g)
	case SGLang:
		return p.checkSGLang(g)
	case LMStudio:
		return p.checkLMStudio(g)
	default: // OpenAI
		return p.checkOpenAI(g)
	}
}

// checkLlamaCpp is llama.cpp's check.
func (p *Personality) checkLlamaCpp(g *genRequest) (promptN int, budget int64, ref *refusal) {
	switch {
	case g.n != 1 && !p.Opts.LlamaNChoices:
		// oaicompat_*_params_parse throws std::runtime_error: 500
		// (tools/server/utils.hpp, server-common.cpp).
		return 0, 0, &refusal{500, "Only one completion choice is allowed", nil}
	case g.n > p.Opts.Slots:
		// Current builds: one slot per choice (server-task.cpp).
		return 0, 0, &refusal{400, "n_cmpl cannot be greater than the number of slots, please increase -np", nil}
	}
	if !g.chat && g.echo {
		// "Only no echo is supported", a runtime_error: 500 (same file).
		return 0, 0, &refusal{500, "Only no echo is supported", nil}
	}
	if g.chat && g.topK > 0 && !g.logprobs {
		return 0, 0, &refusal{400, "top_logprobs requires logprobs to be set to true", nil}
	}
	promptN, ref = p.llamaContext(g.promptN)
	if ref != nil {
		return 0, 0, ref
	}
	return promptN, p.llamaBudget(g, promptN), nil
}

// llamaContext is the prompt count llama.cpp reports for a prompt of P
// tokens: P when it fits the slot, else truncated or refused as
// LlamaOverflow says.
func (p *Personality) llamaContext(P int) (promptN int, ref *refusal) {
	o := p.Opts
	L := o.Context
	if P < L {
		return P, nil
	}
	switch o.LlamaOverflow {
	case LlamaTruncate:
		// n_keep 0: keep none, drop erased_blocks blocks of n_ctx/2
		// (examples/server/server.cpp, "input truncated").
		block := L / 2
		erased := (P - block) / block
		return P - erased*block, nil
	case LlamaReject:
		return 0, &refusal{400, "the request exceeds the available context size, try increasing it",
			map[string]any{"type": "exceed_context_size_error", "n_prompt_tokens": P, "n_ctx": L}}
	default:
		return 0, &refusal{400, fmt.Sprintf("request (%d tokens) exceeds the available context size (%d tokens), try increasing it", P, L),
			map[string]any{"type": "exceed_context_size_error", "n_prompt_tokens": P, "n_ctx": L}}
	}
}

// llamaBudget is how many tokens llama.cpp generates after a prompt of
// promptN tokens.
func (p *Personality) llamaBudget(g *genRequest, promptN int) int64 {
	o := p.Opts
	L, M := o.Context, g.maxTokens
	budget := M
	if !g.hasMax || M < 0 {
		// n_predict -1: until the slot's end (the fake: 16 tokens,
		// but for a build that reads no max_completion_tokens).
		budget = 16
		if o.LlamaNoMaxCompletionTokens {
			budget = int64(L)
		}
	}
	if o.LlamaOverflow != LlamaTruncate {
		// Without context shift (the default since 2025) generation
		// stops when the slot is full.
		return min(budget, int64(L-promptN))
	}
	// With context shift the real server would go on past the
	// slot's end; the fake stops after one slot's worth.
	return min(budget, int64(L))
}

// checkVLLM is vLLM's check, which the gateway shares.
func (p *Personality) checkVLLM(g *genRequest) (promptN int, budget int64, ref *refusal) {
	o := p.Opts
	P, L := g.promptN, o.Context
	M := g.maxTokens
	if g.hasMax && (M == 0 && !(g.echo && !g.chat) || M < 0) {
		return 0, 0, &refusal{400, fmt.Sprintf("max_tokens must be at least 1, got %d.", M), nil}
	}
	if g.topK > 20 {
		// --max-logprobs defaults to 20 (vllm/v1/engine/processor.py
		// _validate_logprobs; now vllm/sampling_params.py, a
		// VLLMValidationError whose parameter, "logprobs", is the param and
		// is written after the message with the value, vllm/exceptions.py).
		msg := fmt.Sprintf("Requested sample logprobs of %d, which is greater than max allowed: 20", g.topK)
		if o.VLLMFlatErrors || o.VLLMBefore018 {
			return 0, 0, &refusal{400, msg, nil}
		}
		return 0, 0, &refusal{400, fmt.Sprintf("%s (parameter=logprobs, value=%d)", msg, g.topK), map[string]any{"param": "logprobs"}}
	}
	if !o.VLLMFlatErrors && !o.VLLMBefore018 {
		return p.checkVLLMRenderer(g)
	}
	if P > L {
		// vllm/entrypoints/openai/serving_engine.py (_validate_input).
		if o.VLLMFlatErrors {
			return 0, 0, &refusal{400, fmt.Sprintf("This model's maximum context length is %d tokens. However, you requested %d tokens in the messages, Please reduce the length of the messages.", L, P), nil}
		}
		return 0, 0, &refusal{400, fmt.Sprintf("This model's maximum context length is %d tokens. However, your request has %d input tokens. Please reduce the length of the input messages.", L, P), nil}
	}
	if !g.hasMax {
		M = int64(L - P)
	}
	if M > int64(L-P) {
		if o.VLLMFlatErrors {
			return 0, 0, &refusal{400, fmt.Sprintf("This model's maximum context length is %d tokens. However, you requested %d tokens (%d in the messages, %d in the completion). Please reduce the length of the messages or completion.", L, uint64(P)+uint64(M), P, M), nil}
		}
		return 0, 0, &refusal{400, fmt.Sprintf("'max_tokens' or 'max_completion_tokens' is too large: %d. This model's maximum context length is %d tokens and your request has %d input tokens (%d > %d - %d).", M, L, P, M, L, P), nil}
	}
	return P, M, nil
}

// checkVLLMRenderer is the context check of vLLM 0.18 and later, done by
// its renderer while it tokenizes (vllm/renderers/params.py TokenizeParams:
// __post_init__ and _token_len_check; the "(parameter=..., value=...)"
// suffix is VLLMValidationError's, vllm/exceptions.py, and its parameter is
// the error's param). The output budget is the cap asked for, 0 when none
// was, so a request without one fits while its prompt does. A cap past the
// context is refused by itself, named by the field that carried it. A
// prompt is tokenized to at most L - M + 1 tokens, so the refusal of one
// that does not fit beside the cap counts that many, "at least", never the
// prompt's own length (as seen on the wire in 2026, e.g. "you requested
// 4096 output tokens and your prompt contains at least 28673 input tokens"
// for L 32768).
func (p *Personality) checkVLLMRenderer(g *genRequest) (promptN int, budget int64, ref *refusal) {
	P, L := g.promptN, p.Opts.Context
	var M int64
	if g.hasMax {
		M = g.maxTokens
	}
	if M > int64(L) {
		return 0, 0, &refusal{400, fmt.Sprintf("%s=%d cannot be greater than max_model_len=max_total_tokens=%d. Please request fewer output tokens. (parameter=%s, value=%d)", g.maxName, M, L, g.maxName, M),
			map[string]any{"param": g.maxName}}
	}
	if int64(P) > int64(L)-M {
		n := int64(L) - M + 1
		return 0, 0, &refusal{400, fmt.Sprintf("This model's maximum context length is %d tokens. However, you requested %d output tokens and your prompt contains at least %d input tokens, for a total of at least %d tokens. Please reduce the length of the input prompt or the number of requested output tokens. (parameter=input_tokens, value=%d)", L, M, n, n+M, n),
			map[string]any{"param": "input_tokens"}}
	}
	if !g.hasMax {
		M = int64(L - P)
	}
	return P, M, nil
}

// checkSGLang is SGLang's check.
func (p *Personality) checkSGLang(g *genRequest) (promptN int, budget int64, ref *refusal) {
	P, L := g.promptN, p.Opts.Context
	M := g.maxTokens
	if g.hasMax && M <= 0 {
		// SGLang refuses max_tokens 0, echo or not (evals/echo.go's
		// note; the wording is unverified).
		return 0, 0, &refusal{400, "max_tokens must be at least 1", nil}
	}
	// tokenizer_manager.py _validate_one_request: both checks use >=.
	if P >= L {
		return 0, 0, &refusal{400, fmt.Sprintf("The input (%d tokens) is longer than the model's context length (%d tokens).", P, L), nil}
	}
	if !g.hasMax {
		M = 128
	}
	if M >= int64(L-P) {
		return 0, 0, &refusal{400, fmt.Sprintf("Requested token count exceeds the model's maximum context length of %d tokens. You requested a total of %d tokens: %d tokens from the input messages and %d tokens for the completion. Please reduce the number of tokens in the input messages or the completion to fit within the limit.", L, uint64(M)+uint64(P), P, M), nil}
	}
	return P, M, nil
}

// checkOpenAI is OpenAI's check.
func (p *Personality) checkOpenAI(g *genRequest) (promptN int, budget int64, ref *refusal) {
	o := p.Opts
	P, L := g.promptN, o.Context
	M := g.maxTokens
	if g.topK > 20 {
		return 0, 0, &refusal{400, fmt.Sprintf("Invalid 'top_logprobs': integer above maximum value. Expected a value <= 20, but got %d instead.", g.topK),
			map[string]any{"param": "top_logprobs", "code": "integer_above_max_value"}}
	}
	if P > L {
		return 0, 0, &refusal{400, fmt.Sprintf("This model's maximum context length is %d tokens. However, your messages resulted in %d tokens. Please reduce the length of the messages.", L, P),
			map[string]any{"param": "messages", "code": "context_length_exceeded"}}
	}
	if g.hasMax && M < 1 {
		return 0, 0, &refusal{400, fmt.Sprintf("Invalid 'max_tokens': integer below minimum value. Expected a value >= 1, but got %d instead.", M),
			map[string]any{"param": "max_tokens", "code": "integer_below_min_value"}}
	}
	if M > int64(o.MaxOutput) {
		return 0, 0, &refusal{400, fmt.Sprintf("max_tokens is too large: %d. This model supports at most %d completion tokens, whereas you provided %d.", M, o.MaxOutput, M),
			map[string]any{"param": "max_tokens"}}
	}
	if !g.hasMax {
		// Chat has no default cap of its own: the model's output cap, or
		// what the context leaves (16 is the legacy /v1/completions
		// default, a route this fake answers 404).
		M = min(int64(o.MaxOutput), int64(L-P))
	}
	return P, M, nil
}

// admit applies the server's load limits; release must be called after.
func (p *Personality) admit(w http.ResponseWriter, g *genRequest) (release func(), seq int, ok bool) {
	p.mu.Lock()
	p.seq++
	seq = p.seq
	now := time.Now()
	o := p.Opts
	if p.Kind == Gateway {
		cut := 0
		for cut < len(p.recent) && now.Sub(p.recent[cut]) > time.Minute {
			cut++
		}
		p.recent = p.recent[cut:]
		if o.Concurrency > 0 && p.inflight >= o.Concurrency || o.RPM > 0 && len(p.recent) >= o.RPM {
			p.mu.Unlock()
			if p.liteLLM() {
				p.litellmLimited(w)
				return nil, 0, false
			}
			// OpenAI's 429: type "requests", code rate_limit_exceeded, and
			// the x-ratelimit-* headers (platform.openai.com/docs/guides/rate-limits).
			h := w.Header()
			h.Set("Retry-After", o.RetryAfter)
			h.Set("x-ratelimit-limit-requests", strconv.Itoa(max(o.RPM, o.Concurrency)))
			h.Set("x-ratelimit-remaining-requests", "0")
			h.Set("x-ratelimit-reset-requests", o.RetryAfter+"s")
			p.fail(w, 429, fmt.Sprintf("Rate limit reached for %s on requests per min (RPM): Limit %d, Used %d, Requested 1. Please try again in %ss.",
				o.Model, max(o.RPM, o.Concurrency), max(o.RPM, o.Concurrency), o.RetryAfter), map[string]any{"type": "requests", "code": "rate_limit_exceeded"})
			return nil, 0, false
		}
		p.recent = append(p.recent, now)
	}
	if p.Kind == SGLang && o.MaxQueued > 0 {
		running := o.MaxRunning
		if running <= 0 {
			running = 1024
		}
		if p.inflight >= running+o.MaxQueued {
			p.mu.Unlock()
			// SGLang rejects at admission with "The request queue is full.":
			// 503 for a JSON request, a 503 error event on a 200 stream.
			if g.stream {
				streamRefusal(w, map[string]any{"error": p.errorBody(503, "The request queue is full.", nil)})
				return nil, 0, false
			}
			p.fail(w, 503, "The request queue is full.", nil)
			return nil, 0, false
		}
	}
	return p.enterLocked(g), seq, true
}

// enterLocked counts g in flight and its prompt as arrived, and unlocks
// p.mu, which the caller holds; the func it returns counts g out.
func (p *Personality) enterLocked(g *genRequest) (release func()) {
	p.inflight++
	p.prompts = append(p.prompts, g.promptN)
	p.mu.Unlock()
	return func() {
		p.mu.Lock()
		p.inflight--
		p.mu.Unlock()
	}
}

// notePrompt counts the prompt of g, which the server refused, as arrived.
func (p *Personality) notePrompt(g *genRequest) {
	p.mu.Lock()
	p.prompts = append(p.prompts, g.promptN)
	p.mu.Unlock()
}

// wholeWait waits as long as the server takes to generate a before it
// answers it whole: TTFT, and Gap for each token after the first; false
// when the client left.
func (p *Personality) wholeWait(r *http.Request, a answer) bool {
	return sleep(r, p.Opts.TTFT+time.Duration(max(a.n-1, 0))*p.Opts.Gap)
}

// maxN is the most choices a personality generates for one request; a
// stream carries only the first.
const maxN = 16

func (p *Personality) generation(w http.ResponseWriter, r *http.Request, body []byte, chat bool) {
	if !chat && (p.Kind == OpenAI || p.Kind == Gateway && !p.liteLLM()) {
		if p.Kind == OpenAI {
			// Chat models on the legacy route: 404, param "model" (widely
			// reported, e.g. sashabaranov/go-openai#126).
			p.fail(w, 404, "This is a chat model and not supported in the v1/completions endpoint. Did you mean to use v1/chat/completions?", map[string]any{"param": "model"})
			return
		}
		// A chat-only hosted gateway.
		p.notFound(w, r)
		return
	}
	g, ref := p.parse(body, chat)
	if ref != nil {
		p.fail(w, ref.status, ref.msg, ref.extra)
		return
	}
	promptN, budget, ref := p.check(g)
	if ref == nil && (g.n < 1 || g.n > maxN) {
		// The fake's own bound (real servers differ): no answer of a
		// million choices.
		ref = &refusal{400, fmt.Sprintf("n must be between 1 and %d", maxN), nil}
	}
	if ref != nil {
		p.notePrompt(g)
		if p.Kind == LMStudio && g.stream && p.lmstudioStreamError(w, ref) {
			return
		}
		p.fail(w, ref.status, ref.msg, ref.extra)
		return
	}
	release, seq, ok := p.admit(w, g)
	if !ok {
		return
	}
	defer release()
	if !p.hang(w, r, g, seq) || !p.litellmRetry(w, r, seq) {
		return
	}
	choices := p.answers(g, budget, seq)
	// Every answer has an id of its own.
	id := fmt.Sprintf("%x%06x", time.Now().UnixNano(), seq)
	if g.stream {
		p.streamAnswer(w, r, g, id, promptN, choices[0])
		return
	}
	if !p.wholeWait(r, choices[0]) {
		return
	}
	p.wholeAnswer(w, g, id, promptN, choices)
}

// hang holds the gateway's every HangEvery-th request; false when the client left.
func (p *Personality) hang(w http.ResponseWriter, r *http.Request, g *genRequest, seq int) bool {
	o := p.Opts
	if p.Kind != Gateway || o.HangEvery <= 0 || o.Hang <= 0 || (seq-1)%o.HangEvery != 0 {
		return true
	}
	deadline := time.NewTimer(o.Hang)
	defer deadline.Stop()
	var tick <-chan time.Time
	if g.stream && o.KeepAlive > 0 {
		// OpenRouter sends SSE comments while it waits
		// (openrouter.ai/docs/api_reference/streaming).
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(200)
		http.NewResponseController(w).Flush()
		g.sentHeader = true
		t := time.NewTicker(o.KeepAlive)
		defer t.Stop()
		tick = t.C
	}
	for {
		select {
		case <-deadline.C:
			return true
		case <-tick:
			fmt.Fprint(w, ": OPENROUTER PROCESSING\n\n")
			http.NewResponseController(w).Flush()
		case <-r.Context().Done():
			return false
		}
	}
}

// answer is one choice's generation.
type answer struct {
	toks   []genToken
	n      int // completion tokens, hidden ones included
	hidden int // reasoning tokens before toks, never sent
	finish string
}

func (p *Personality) answer(g *genRequest, budget int64, s sampling) answer {
	n := int(min(budget, 1<<20))
	finish := "length"
	if p.Opts.EOSAfter > 0 && !g.ignoreEOS && n > p.Opts.EOSAfter {
		n, finish = p.Opts.EOSAfter, "stop"
	}
	k := g.topK
	if g.chat && !g.logprobs {
		k = 0
	}
	hidden := 0
	if p.Opts.ReasoningModel && g.chat {
		hidden = min(p.Opts.HiddenReasoning, n)
	}
	toks := generate(g.prompt, n-hidden, k, s)
	if cut, ok := stopAt(toks, g.stop); ok {
		toks, finish = cut, "stop"
	}
	return answer{toks: toks, n: hidden + len(toks), hidden: hidden, finish: finish}
}

// chatLogprobs is an OpenAI chat logprobs entry list.
func chatLogprobs(toks []genToken) []any {
	var out []any
	for _, t := range toks {
		var top []any
		for _, c := range t.Top {
			top = append(top, map[string]any{"token": c.Token, "logprob": c.Logprob, "bytes": []byte(c.Token)})
		}
		if top == nil {
			top = []any{}
		}
		out = append(out, map[string]any{"token": t.Text, "logprob": t.Logprob, "bytes": bytesOf(t.Text), "top_logprobs": top})
	}
	return out
}

// bytesOf is a token's bytes as a JSON array of integers (not base64).
func bytesOf(s string) []int {
	out := make([]int, len(s))
	for i := range len(s) {
		out[i] = int(s[i])
	}
	return out
}

// usageOf is the usage object of an answer whose completion counts
// reasoning hidden tokens. OpenAI breaks completion_tokens down on every
// model, reasoning_tokens 0 on those that do not reason; the others send
// no breakdown.
func (p *Personality) usageOf(prompt, completion, reasoning int) map[string]any {
	u := map[string]any{"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}
	switch p.Kind {
	case OpenAI:
		u["completion_tokens_details"] = map[string]any{"reasoning_tokens": reasoning, "audio_tokens": 0,
			"accepted_prediction_tokens": 0, "rejected_prediction_tokens": 0}
	case SGLang:
		// UsageInfo dumped whole (srt/entrypoints/openai/protocol.py):
		// prompt_tokens_details null without --enable-cache-report, and
		// reasoning_tokens beside completion_tokens, 0 for a model that
		// does not reason.
		u["prompt_tokens_details"], u["reasoning_tokens"] = nil, reasoning
	}
	return u
}

// timings is llama.cpp's per-response timing object.
func timings(prompt, completion int) map[string]any {
	return map[string]any{"cache_n": 0, "prompt_n": prompt, "prompt_ms": 1.0, "prompt_per_token_ms": 0.1, "prompt_per_second": 1000.0,
		"predicted_n": completion, "predicted_ms": 1.0, "predicted_per_token_ms": 1.0, "predicted_per_second": 1000.0}
}

func (p *Personality) wholeAnswer(w http.ResponseWriter, g *genRequest, id string, promptN int, choices []answer) {
	now := time.Now().Unix()
	total, hidden := 0, 0
	var cs []any
	for i, a := range choices {
		total += a.n
		hidden += a.hidden
		c := map[string]any{"index": i, "finish_reason": a.finish, "logprobs": nil}
		if g.chat {
			msg := map[string]any{"role": "assistant", "content": joinText(a.toks)}
			if g.tool != "" {
				c["finish_reason"] = p.toolFinish(g, a.finish)
				msg["content"], msg["tool_calls"] = nil, []any{map[string]any{"id": p.toolCallID(id), "type": "function",
					"function": map[string]any{"name": g.tool, "arguments": toolArguments(a.toks, a.finish != "length")}}}
			}
			if p.Kind == OpenAI {
				msg["refusal"] = nil
			}
			c["message"] = msg
			if g.logprobs {
				c["logprobs"] = map[string]any{"content": chatLogprobs(a.toks)}
			}
		} else {
			c["text"], c["logprobs"] = p.completionText(g, a)
		}
		cs = append(cs, c)
	}
	obj, id := "chat.completion", "chatcmpl-"+id
	if !g.chat {
		obj, id = "text_completion", "cmpl-"+id
	}
	resp := map[string]any{"id": id, "object": obj, "created": now, "model": p.Opts.Model, "choices": cs, "usage": p.usageOf(promptN, total, hidden)}
	if p.Kind == LlamaCpp {
		resp["timings"] = timings(promptN, total)
		resp["system_fingerprint"] = "b6000-fake"
	}
	writeJSON(w, 200, resp)
}

// completionText is a completion choice's text and logprobs, with the
// prompt's when echo is set (vLLM, SGLang: the first prompt token's logprob
// and top_logprobs null).
func (p *Personality) completionText(g *genRequest, a answer) (string, any) {
	text := joinText(a.toks)
	if g.echo {
		text = g.prompt + text
	}
	// llama.cpp gives no logprobs on /v1/completions (issue 12), or, in
	// current builds, the chat shape for logprobs N > 0; SGLang reads
	// logprobs 0 as none.
	if g.compLP && p.Kind == LlamaCpp && p.Opts.LlamaCompletionLogprobs && g.topK > 0 {
		return text, map[string]any{"content": chatLogprobs(a.toks)}
	}
	if !g.compLP || p.Kind == LlamaCpp || p.Kind == SGLang && g.topK == 0 {
		return text, nil
	}
	var tokens []string
	var lps []any
	var tops []any
	var offsets []int
	off := 0
	name := func(piece string) string {
		if g.asIDs && p.Kind == VLLM {
			return "token_id:" + strconv.Itoa(p.vocab.id(piece))
		}
		return piece
	}
	if g.echo {
		ctx := prefixHashes(g.pieces)
		for i, piece := range g.pieces {
			tokens = append(tokens, name(piece))
			offsets = append(offsets, off)
			off += utf8.RuneCountInString(piece)
			if i == 0 {
				lps, tops = append(lps, nil), append(tops, nil)
				continue
			}
			lp := promptLogprob(ctx[i], piece)
			lps = append(lps, lp)
			top := map[string]float64{name(piece): lp}
			rest := 1 - math.Exp(lp)
			for j, c := range ranked(ctx[i], i, g.topK) {
				if len(top) >= g.topK {
					break
				}
				if _, dup := top[name(c.Token)]; !dup {
					top[name(c.Token)] = math.Log(rest * math.Pow(2, -float64(j+1)))
				}
			}
			tops = append(tops, top)
		}
	}
	for _, t := range a.toks {
		tokens = append(tokens, name(t.Text))
		offsets = append(offsets, off)
		off += utf8.RuneCountInString(t.Text)
		lps = append(lps, t.Logprob)
		top := map[string]float64{name(t.Text): t.Logprob}
		for _, c := range t.Top {
			if len(top) >= max(g.topK, 1) {
				break
			}
			top[name(c.Token)] = c.Logprob
		}
		tops = append(tops, top)
	}
	return text, map[string]any{"tokens": tokens, "token_logprobs": lps, "top_logprobs": tops, "text_offset": offsets}
}

func (p *Personality) streamAnswer(w http.ResponseWriter, r *http.Request, g *genRequest, id string, promptN int, a answer) {
	cw := &chunkWriter{p: p, g: g, w: w, rc: http.NewResponseController(w), id: "chatcmpl-" + id, obj: "chat.completion.chunk", now: time.Now().Unix()}
	if !g.chat {
		cw.id, cw.obj = "cmpl-"+id, "text_completion"
	}
	if !g.sentHeader {
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(200)
	}
	if delta := p.roleDelta(g); delta != nil {
		cw.send(map[string]any{"choices": []any{cw.choice(delta, nil)}})
	}
	if !sleep(r, p.Opts.TTFT+time.Duration(a.hidden)*p.Opts.Gap) {
		return
	}
	for i, t := range a.toks {
		if i > 0 && !sleep(r, p.Opts.Gap) {
			return
		}
		if t.Text == "" {
			continue
		}
		delta := map[string]any{"content": t.Text}
		if g.tool != "" {
			delta = p.toolDelta(g, cw.id, i, t.Text, i == lastSent(a.toks) && a.finish != "length")
		}
		c := cw.choice(delta, nil)
		if g.chat && g.logprobs {
			c["logprobs"] = map[string]any{"content": chatLogprobs([]genToken{t})}
		}
		cw.send(map[string]any{"choices": []any{c}})
	}
	cw.end(promptN, a)
	sseDone(w, cw.rc)
}

// sseData writes v as one server-sent event's data and flushes it.
func sseData(w io.Writer, rc *http.ResponseController, v any) {
	b, _ := json.Marshal(v)
	fmt.Fprintf(w, "data: %s\n\n", b)
	rc.Flush()
}

// sseDone ends a stream with data: [DONE] and flushes it.
func sseDone(w io.Writer, rc *http.ResponseController) {
	fmt.Fprint(w, "data: [DONE]\n\n")
	rc.Flush()
}

// streamRefusal answers a refused stream as a 200 whose one event is body,
// then [DONE].
func streamRefusal(w http.ResponseWriter, body any) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(200)
	b, _ := json.Marshal(body)
	fmt.Fprintf(w, "data: %s\n\ndata: [DONE]\n\n", b)
}

// roleDelta is the delta of the chunk a chat stream opens with, nil for
// none.
func (p *Personality) roleDelta(g *genRequest) map[string]any {
	switch {
	case !g.chat:
		return nil
	case p.Kind == LlamaCpp && p.Opts.LlamaRoleChunk:
		return map[string]any{"role": "assistant", "content": nil}
	case p.Kind == LlamaCpp:
		return nil // no role chunk (issue 12)
	case p.Kind == OpenAI && g.tool != "":
		return nil // a tool call's first chunk carries the role (toolDelta)
	case p.Kind == OpenAI:
		return map[string]any{"role": "assistant", "content": "", "refusal": nil}
	}
	// vLLM and SGLang open with a role chunk of empty content.
	return map[string]any{"role": "assistant", "content": ""}
}

// chunkWriter writes one stream's chunks in its server's shape.
type chunkWriter struct {
	p       *Personality
	g       *genRequest
	w       http.ResponseWriter
	rc      *http.ResponseController
	id, obj string
	now     int64
	// deltas counts the delta chunks sent (OpenAI's obfuscation).
	deltas int
}

// send writes v as one chunk, with the stream's id, object, created and model.
func (cw *chunkWriter) send(v map[string]any) {
	p, g := cw.p, cw.g
	v["id"], v["object"], v["created"], v["model"] = cw.id, cw.obj, cw.now, p.Opts.Model
	if p.Kind == OpenAI && g.usage {
		// With include_usage every chunk carries "usage": null but the last.
		if _, ok := v["usage"]; !ok {
			v["usage"] = nil
		}
	}
	if cs, _ := v["choices"].([]any); p.Kind == OpenAI && g.chat && len(cs) > 0 {
		// A delta chunk carries random characters that pad its length
		// (stream_options.include_obfuscation, on by default: OpenAI's
		// API reference), a key no client should read.
		cw.deltas++
		v["obfuscation"] = "Zx9qL2vR7mKp3TfW"[:1+cw.deltas*7%16]
	}
	sseData(cw.w, cw.rc, v)
}

// choice is a chunk's choice 0: a chat delta, or a completion's text.
func (cw *chunkWriter) choice(delta map[string]any, finish any) map[string]any {
	c := map[string]any{"index": 0, "finish_reason": finish, "logprobs": nil}
	if !cw.g.chat {
		// A completions chunk's text is a string, "" on the finish chunk
		// (llama.cpp's to_json_oaicompat; vLLM and SGLang).
		text, _ := delta["content"].(string)
		c["text"] = text
		return c
	}
	if _, ok := delta["reasoning_content"]; cw.p.Kind == SGLang && !ok && cw.g.tool == "" {
		// SGLang's msgspec StreamDelta writes reasoning_content even when
		// there is none: null (srt/entrypoints/openai/sse_utils.py), a key
		// that must not count as reasoning.
		delta["reasoning_content"] = nil
	}
	c["delta"] = delta
	return c
}

// end writes the finish chunk and the usage, where and when the server
// sends them.
func (cw *chunkWriter) end(promptN int, a answer) {
	p, g := cw.p, cw.g
	finish := a.finish
	if g.tool != "" {
		finish = p.toolFinish(g, a.finish)
	}
	fin := map[string]any{"choices": []any{cw.choice(map[string]any{}, finish)}}
	usage := p.usageOf(promptN, a.n, a.hidden)
	own := map[string]any{"choices": []any{}, "usage": usage}
	if p.Kind != LlamaCpp {
		cw.send(fin)
		if g.usage {
			cw.send(own)
		}
		return
	}
	own["timings"] = timings(promptN, a.n)
	switch {
	case p.Opts.LlamaUsageAsked && g.chat && g.usage:
		cw.send(fin)
		cw.send(own)
	case p.Opts.LlamaUsageAsked && g.chat:
		fin["timings"] = own["timings"]
		cw.send(fin)
	case p.Opts.LlamaUsageChunk && g.chat:
		// b6497+: a usage chunk of its own, with timings, include_usage or not.
		cw.send(fin)
		cw.send(own)
	default:
		// Usage and timings on the finish chunk (issue 12; a b6097 trace),
		// as every version sends a completions stream's final chunk,
		// include_usage or not (server-task.cpp to_json_oaicompat: text "",
		// finish_reason, usage, timings).
		fin["usage"], fin["timings"] = usage, own["timings"]
		cw.send(fin)
	}
}

// toolDelta is the delta of a tool call's token i (text): the first names
// the function, with id, type and arguments "", each later one is a
// fragment of the arguments (a JSON object of one string, "text", closed
// by the last token when the call ends before max_tokens). Each server
// writes it its own way:
//   - OpenAI: the first chunk also carries role "assistant", content null
//     and refusal null, and no role chunk comes before it; fragments are
//     {"index", "function": {"arguments"}} (an Azure gpt-5-mini stream
//     recorded by llama-stack's tests).
//   - vLLM: DeltaToolCall dumped with exclude_unset: {"id", "type",
//     "index", "function": {"name", "arguments"}} first, then {"index",
//     "function": {"arguments"}} (serving_chat.py; for a named tool_choice
//     vLLM's first chunk holds the first token's arguments too, which the
//     fake leaves to the next chunk).
//   - SGLang: model_dump_json writes every field: role, content and
//     reasoning_content null, and each entry {"id", "index", "type",
//     "function": {"name", "arguments"}}, id and name null after the
//     first (serving_chat.py _process_tool_call_stream; the detector sends
//     the name with parameters "").
//   - llama.cpp: {"index", "id", "type", "function": {"name",
//     "arguments"}} first, then {"index", "function": {"arguments"}}
//     (common/chat.cpp common_chat_msg_diff_to_json_oaicompat).
func (p *Personality) toolDelta(g *genRequest, id string, i int, text string, last bool) map[string]any {
	fn := map[string]any{"arguments": ""}
	entry := map[string]any{"index": 0, "function": fn}
	if i == 0 {
		fn["name"] = g.tool
		entry["id"], entry["type"] = p.toolCallID(id), "function"
	} else {
		fn["arguments"] = toolFragment(text, i == 1, last)
	}
	delta := map[string]any{"tool_calls": []any{entry}}
	switch p.Kind {
	case OpenAI:
		if i == 0 {
			delta["role"], delta["content"], delta["refusal"] = "assistant", nil, nil
		}
	case SGLang:
		delta["role"], delta["content"], delta["reasoning_content"] = nil, nil, nil
		entry["type"] = "function"
		if i > 0 {
			entry["id"], fn["name"] = nil, nil
		}
	}
	return delta
}

// toolFragment is a token's text as a fragment of the arguments
// {"text": "..."}: escaped as a JSON string's contents, the object opened
// before the first and closed after the last.
func toolFragment(text string, first, last bool) string {
	b, _ := json.Marshal(text)
	frag := string(b[1 : len(b)-1])
	if first {
		frag = `{"text": "` + frag
	}
	if last {
		frag += `"}`
	}
	return frag
}

// toolArguments is the arguments of a whole answer's tool call: the
// fragments a stream sends, of every token but the first (the name) up to
// the last with text, joined.
func toolArguments(toks []genToken, closed bool) string {
	var b strings.Builder
	last := lastSent(toks)
	for i := 1; i <= last; i++ {
		b.WriteString(toolFragment(toks[i].Text, i == 1, closed && i == last))
	}
	return b.String()
}

// lastSent is the index of the last token with text (a stop string cuts
// the text of those from the one it starts in), 0 when none after the
// first has any: the fragment that closes a call's arguments.
func lastSent(toks []genToken) int {
	last := len(toks) - 1
	for last > 0 && toks[last].Text == "" {
		last--
	}
	return max(last, 0)
}

// toolCallID is a tool call's id as the server makes it: "call_" and 24
// hex digits (OpenAI, SGLang), "chatcmpl-tool-" and hex (vLLM); llama.cpp
// draws 32 alphanumerics (gen_tool_call_id).
func (p *Personality) toolCallID(id string) string {
	id = strings.TrimPrefix(id, "chatcmpl-")
	switch p.Kind {
	case VLLM, Gateway:
		return "chatcmpl-tool-" + id
	case LlamaCpp:
		return fmt.Sprintf("%032s", id)
	}
	return "call_" + fmt.Sprintf("%024s", id)
}

// toolFinish is a tool call's finish_reason, the model's own being finish.
// vLLM (serving_chat.py, 2025: is_finish_reason_tool_calls, alike in the
// stream and the full answer) says "tool_calls" for "auto"
// (auto_tools_called) and for "required" the engine stopped, and the
// engine's reason otherwise: "stop" for a named function, "length" for a
// call max_tokens cut (newer builds with tools_streamed say "tool_calls"
// in a stream for any call; this fake keeps the one version). OpenAI says
// "stop" for a named one; SGLang says "tool_calls" for a call the engine
// stopped and the engine's reason otherwise ("length" for one max_tokens
// cut: serving_chat.py, has_tool_calls and finish_reason_type == "stop");
// llama.cpp says "length" when max_tokens ended it and "tool_calls" at
// the end of generation (server-task.cpp to_json_oaicompat_chat).
func (p *Personality) toolFinish(g *genRequest, finish string) string {
	switch {
	case (p.Kind == LlamaCpp || p.Kind == LMStudio) && finish == "length":
		return "length"
	case p.Kind == VLLM || p.Kind == Gateway:
		if g.choice == "auto" || g.choice == "required" && finish == "stop" {
			return "tool_calls"
		}
		return finish
	case g.choice == "named" && p.Kind == OpenAI:
		return "stop"
	case p.Kind == SGLang && finish != "stop":
		return finish
	}
	return "tool_calls"
}

// answers are request seq's choices: n of them (one for a stream), each
// sampled as its own choice. Seeded and temperature-0 answers are the same
// every time; unseeded sampling varies between requests.
func (p *Personality) answers(g *genRequest, budget int64, seq int) []answer {
	g.samp.nonce = uint64(seq)
	choices := make([]answer, max(g.n, 1))
	if g.stream {
		choices = choices[:1]
	}
	for i := range choices {
		s := g.samp
		s.Choice = i
		choices[i] = p.answer(g, budget, s)
	}
	return choices
}
