package server

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/glmbench/glmbench/engine/sampler"
	"github.com/glmbench/glmbench/engine/sched"
	"github.com/glmbench/glmbench/engine/tokenizer"
)

// Limits on request fields.
const (
	// maxStops is OpenAI's limit on stop strings.
	maxStops = 4
	// maxStopBytes bounds one stop string, so matching stays cheap.
	maxStopBytes = 1024
	// maxTopLogprobs is OpenAI's chat limit; completions' logprobs (5 in
	// OpenAI) is allowed as far, as vLLM allows.
	maxTopLogprobs = 20
	// completionsDefaultMaxTokens is SGLang's, vLLM's and OpenAI's default
	// max_tokens for /v1/completions (chat defaults to the rest of the context).
	completionsDefaultMaxTokens = 16
)

// commonRequest holds the fields both endpoints share. Pointers tell an
// absent (or null) field from a zero one; fields that take several JSON
// types are raw and read by the parse functions. Unknown fields (and the
// penalties, which the engine does not implement) are ignored.
type commonRequest struct {
	Model         string `json:"model"`
	Stream        *bool  `json:"stream"`
	StreamOptions *struct {
		IncludeUsage *bool `json:"include_usage"`
	} `json:"stream_options"`
	MaxTokens              *int            `json:"max_tokens"`
	Temperature            *float64        `json:"temperature"`
	TopP                   *float64        `json:"top_p"`
	TopK                   *int            `json:"top_k"`
	MinP                   *float64        `json:"min_p"`
	Seed                   *int64          `json:"seed"`
	Stop                   json.RawMessage `json:"stop"`
	StopTokenIDs           stopTokenIDs    `json:"stop_token_ids"`
	IgnoreEOS              *bool           `json:"ignore_eos"`
	MinTokens              *int            `json:"min_tokens"`
	N                      *int            `json:"n"`
	SkipSpecialTokens      *bool           `json:"skip_special_tokens"`
	ReturnTokensAsTokenIDs *bool           `json:"return_tokens_as_token_ids"`
}

// chatRequest is the body of POST /v1/chat/completions.
type chatRequest struct {
	commonRequest
	Messages            []chatMessage   `json:"messages"`
	Tools               []chatTool      `json:"tools"`
	ToolChoice          json.RawMessage `json:"tool_choice"`
	MaxCompletionTokens *int            `json:"max_completion_tokens"`
	Logprobs            *bool           `json:"logprobs"`
	TopLogprobs         *int            `json:"top_logprobs"`
	ChatTemplateKwargs  *struct {
		EnableThinking *bool `json:"enable_thinking"`
	} `json:"chat_template_kwargs"`
}

type chatMessage struct {
	Role             string          `json:"role"`
	Content          json.RawMessage `json:"content"`
	ReasoningContent *string         `json:"reasoning_content"`
	ToolCalls        []struct {
		ID       string `json:"id"`
		Type     string `json:"type"`
		Function struct {
			Name      string          `json:"name"`
			Arguments json.RawMessage `json:"arguments"`
		} `json:"function"`
	} `json:"tool_calls"`
	ToolCallID string `json:"tool_call_id"`
}

type chatTool struct {
	Type     string `json:"type"`
	Function struct {
		Name        string          `json:"name"`
		Description string          `json:"description"`
		Parameters  json.RawMessage `json:"parameters"`
	} `json:"function"`
}

// completionRequest is the body of POST /v1/completions.
type completionRequest struct {
	commonRequest
	Prompt   json.RawMessage `json:"prompt"`
	Echo     *bool           `json:"echo"`
	Logprobs *int            `json:"logprobs"`
	BestOf   *int            `json:"best_of"`
	Suffix   *string         `json:"suffix"`
}

// genSpec is a validated request, ready for the scheduler and for the
// response writers.
type genSpec struct {
	model        string
	prompt       []int32
	params       sched.Params // logprobs asked: params.Logprobs, params.TopLogprobs
	stops        []string
	stream       bool
	includeUsage bool
	skipSpecial  bool
	names        tokenNamer

	// chat
	chat     bool
	thinking bool
	tools    []tokenizer.Tool

	// completions
	echo     bool
	echoText string
	// echoSkip says echoText is the prompt ids decoded skipping control
	// specials (an id prompt); a text prompt is echoed as given.
	echoSkip bool
}

// parseCommon validates the shared fields into spec (all but max_tokens,
// which needs the prompt's length).
func (s *Server) parseCommon(c *commonRequest, spec *genSpec) *apiError {
	if c.Model != "" && c.Model != s.opts.ModelName {
		return notFound("The model `%s` does not exist.", c.Model)
	}
	spec.model = s.opts.ModelName
	if c.N != nil && *c.N != 1 {
		return badRequest("n", "n > 1 is not supported; n must be 1, got %d.", *c.N)
	}
	spec.stream = c.Stream != nil && *c.Stream
	spec.includeUsage = spec.stream && c.StreamOptions != nil && c.StreamOptions.IncludeUsage != nil && *c.StreamOptions.IncludeUsage
	spec.skipSpecial = c.SkipSpecialTokens == nil || *c.SkipSpecialTokens
	spec.names = tokenNamer{tok: s.tok, asIDs: c.ReturnTokensAsTokenIDs != nil && *c.ReturnTokensAsTokenIDs}

	// OpenAI's default temperature and top_p are 1.
	sp := sampler.Params{Temperature: 1}
	if t := c.Temperature; t != nil {
		if !(*t >= 0 && *t <= 2) {
			return badRequest("temperature", "temperature must be in [0, 2], got %v.", *t)
		}
		sp.Temperature = float32(*t)
	}
	if p := c.TopP; p != nil {
		if !(*p > 0 && *p <= 1) {
			return badRequest("top_p", "top_p must be in (0, 1], got %v.", *p)
		}
		sp.TopP = float32(*p)
	}
	if k := c.TopK; k != nil {
		// 0 is off, as -1 is (SGLang and vLLM take both).
		if *k < -1 {
			return badRequest("top_k", "top_k must be -1 (off) or at least 1, got %d.", *k)
		}
		sp.TopK = max(*k, 0)
	}
	if p := c.MinP; p != nil {
		if !(*p >= 0 && *p <= 1) {
			return badRequest("min_p", "min_p must be in [0, 1], got %v.", *p)
		}
		sp.MinP = float32(*p)
	}
	spec.params.Sampling = sp
	if c.Seed != nil {
		spec.params.Seed, spec.params.HasSeed = uint64(*c.Seed), true
	}
	spec.params.IgnoreEOS = c.IgnoreEOS != nil && *c.IgnoreEOS
	if m := c.MinTokens; m != nil {
		if *m < 0 {
			return badRequest("min_tokens", "min_tokens must be at least 0, got %d.", *m)
		}
		spec.params.MinNewTokens = *m
	}
	for _, id := range c.StopTokenIDs {
		if id < 0 || id >= int64(s.tok.VocabSize()) {
			return badRequest("stop_token_ids", "stop_token_ids: token id %d is outside the vocabulary [0, %d).", id, s.tok.VocabSize())
		}
		spec.params.StopTokens = append(spec.params.StopTokens, int32(id))
	}
	stops, err := parseStop(c.Stop)
	if err != nil {
		return err
	}
	spec.stops = stops
	return nil
}

// parseStop reads `stop`: a string, a list of at most four strings, or
// null. A longer list is refused after its fifth element is seen.
func parseStop(raw json.RawMessage) ([]string, *apiError) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	bad := badRequest("stop", "stop must be a string or a list of strings.")
	var list []string
	switch raw[0] {
	case '"':
		var one string
		if json.Unmarshal(raw, &one) != nil {
			return nil, bad
		}
		list = []string{one}
	case '[':
		tooMany, ok := listPrefix(raw, maxStops, func(el json.RawMessage) bool {
			var s string
			if el = bytes.TrimSpace(el); len(el) == 0 || el[0] != '"' || json.Unmarshal(el, &s) != nil {
				return false
			}
			list = append(list, s)
			return true
		})
		if !ok {
			return nil, bad
		}
		if tooMany {
			return nil, badRequest("stop", "stop takes at most %d strings, got more.", maxStops)
		}
	default:
		return nil, bad
	}
	for _, s := range list {
		if s == "" {
			return nil, badRequest("stop", "stop strings must not be empty.")
		}
		if len(s) > maxStopBytes {
			return nil, badRequest("stop", "a stop string is at most %d bytes, got %d.", maxStopBytes, len(s))
		}
	}
	return list, nil
}

// setMaxTokens fixes the output budget once the prompt is known. Without
// max_tokens a chat request may use the rest of the context, as SGLang
// clamps max_new_tokens to max_req_len − prompt (max_req_len is the smaller
// of the context and the KV pool); a request past the context is refused
// by the scheduler with its own message.
func (s *Server) setMaxTokens(spec *genSpec, given *int, field string, allowZero bool) *apiError {
	if given == nil {
		if !spec.chat {
			spec.params.MaxNewTokens = completionsDefaultMaxTokens
			return nil
		}
		cfg := s.sched.Config()
		limit := min(s.contextLength(), cfg.MaxTotalTokens-cfg.PageSize)
		spec.params.MaxNewTokens = max(1, limit-len(spec.prompt))
		return nil
	}
	n := *given
	switch {
	case n < 0:
		return badRequest(field, "%s must be at least 0, got %d.", field, n)
	case n == 0 && !allowZero:
		if spec.chat {
			return badRequest(field, "%s must be at least 1, got 0.", field)
		}
		return badRequest(field, "%s must be at least 1, got 0 (0 is allowed only with echo).", field)
	}
	if spec.params.MinNewTokens > n {
		return badRequest("min_tokens", "min_tokens (%d) must not exceed %s (%d).", spec.params.MinNewTokens, field, n)
	}
	spec.params.MaxNewTokens = n
	return nil
}

// parseChat validates a chat request and renders its prompt.
func (s *Server) parseChat(req *chatRequest) (*genSpec, *apiError) {
	spec := &genSpec{chat: true}
	if err := s.parseCommon(&req.commonRequest, spec); err != nil {
		return nil, err
	}
	spec.thinking = true // GLM-5's default
	if k := req.ChatTemplateKwargs; k != nil && k.EnableThinking != nil {
		spec.thinking = *k.EnableThinking
	}
	if req.Logprobs != nil {
		spec.params.Logprobs = *req.Logprobs
	}
	if t := req.TopLogprobs; t != nil {
		if *t < 0 || *t > maxTopLogprobs {
			return nil, badRequest("top_logprobs", "top_logprobs must be in [0, %d], got %d.", maxTopLogprobs, *t)
		}
		if *t > 0 && !spec.params.Logprobs {
			return nil, badRequest("top_logprobs", "top_logprobs needs logprobs set to true.")
		}
		spec.params.TopLogprobs = *t
	}

	if len(req.Messages) == 0 {
		return nil, badRequest("messages", "messages must be a non-empty list.")
	}
	msgs := make([]tokenizer.Message, len(req.Messages))
	for i, m := range req.Messages {
		msg, err := convertMessage(i, m)
		if err != nil {
			return nil, err
		}
		msgs[i] = msg
	}
	tools, err := parseTools(req.Tools, req.ToolChoice)
	if err != nil {
		return nil, err
	}
	spec.tools = tools
	prompt, terr := s.tok.ApplyChatTemplate(msgs, tools, spec.thinking)
	if terr != nil {
		return nil, badRequest("messages", "%s", strings.TrimPrefix(terr.Error(), "tokenizer: "))
	}
	spec.prompt = prompt
	maxTokens, field := req.MaxTokens, "max_tokens"
	if req.MaxCompletionTokens != nil {
		// OpenAI's newer name wins, as in vLLM.
		maxTokens, field = req.MaxCompletionTokens, "max_completion_tokens"
	}
	if err := s.setMaxTokens(spec, maxTokens, field, false); err != nil {
		return nil, err
	}
	return spec, nil
}

// convertMessage reads one OpenAI message into the template's form.
func convertMessage(i int, m chatMessage) (tokenizer.Message, *apiError) {
	field := fmt.Sprintf("messages[%d]", i)
	switch m.Role {
	case "system", "developer", "user", "assistant", "tool":
	case "":
		return tokenizer.Message{}, badRequest(field+".role", "%s.role is missing.", field)
	default:
		return tokenizer.Message{}, badRequest(field+".role", "%s.role %q is not one of system, developer, user, assistant, tool.", field, m.Role)
	}
	content, err := messageText(m.Content, field+".content")
	if err != nil {
		return tokenizer.Message{}, err
	}
	msg := tokenizer.Message{Role: m.Role, Content: content}
	if m.ReasoningContent != nil {
		msg.ReasoningContent = *m.ReasoningContent
	}
	for j, tc := range m.ToolCalls {
		f := fmt.Sprintf("%s.tool_calls[%d]", field, j)
		if tc.Function.Name == "" {
			return tokenizer.Message{}, badRequest(f+".function.name", "%s.function.name is missing.", f)
		}
		args, aerr := toolArguments(tc.Function.Arguments)
		if aerr != nil {
			return tokenizer.Message{}, badRequest(f+".function.arguments", "%s.function.arguments: %s", f, strings.TrimPrefix(aerr.Error(), "tokenizer: "))
		}
		msg.ToolCalls = append(msg.ToolCalls, tokenizer.ToolCall{Name: tc.Function.Name, Arguments: args})
	}
	return msg, nil
}

// toolArguments reads function.arguments: OpenAI's JSON text in a string,
// or (leniently) the object itself.
func toolArguments(raw json.RawMessage) ([]tokenizer.Arg, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	if raw[0] == '"' {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, err
		}
		return tokenizer.ArgumentsFromJSON(s)
	}
	return tokenizer.ArgumentsFromJSON(string(raw))
}

// messageText reads a message's content: a string, null, or a list of text
// parts ({"type": "text", "text": …}), joined.
func messageText(raw json.RawMessage, field string) (string, *apiError) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return "", nil
	}
	var s string
	if raw[0] == '"' {
		if err := json.Unmarshal(raw, &s); err != nil {
			return "", badRequest(field, "%s is not a valid string.", field)
		}
		return s, nil
	}
	var parts []struct {
		Type string  `json:"type"`
		Text *string `json:"text"`
	}
	if raw[0] != '[' || json.Unmarshal(raw, &parts) != nil {
		return "", badRequest(field, "%s must be a string or a list of text parts.", field)
	}
	var b strings.Builder
	for j, p := range parts {
		if p.Type != "text" || p.Text == nil {
			return "", badRequest(fmt.Sprintf("%s[%d]", field, j), "%s[%d]: only text parts ({\"type\": \"text\", \"text\": ...}) are supported.", field, j)
		}
		b.WriteString(*p.Text)
	}
	return b.String(), nil
}

// parseTools reads the tool definitions; tool_choice "none" drops them (no
// tools block in the prompt, no parsing), any other choice is "auto".
func parseTools(defs []chatTool, choice json.RawMessage) ([]tokenizer.Tool, *apiError) {
	var c string
	if json.Unmarshal(choice, &c) == nil {
		switch c {
		case "none":
			return nil, nil
		case "auto", "required":
		default:
			return nil, badRequest("tool_choice", "tool_choice %q is not one of none, auto, required.", c)
		}
	}
	var tools []tokenizer.Tool
	for i, d := range defs {
		if d.Type != "" && d.Type != "function" {
			return nil, badRequest(fmt.Sprintf("tools[%d].type", i), "tools[%d].type must be \"function\", got %q.", i, d.Type)
		}
		if d.Function.Name == "" {
			return nil, badRequest(fmt.Sprintf("tools[%d].function.name", i), "tools[%d].function.name is missing.", i)
		}
		params := bytes.TrimSpace(d.Function.Parameters)
		if string(params) == "null" {
			params = nil
		}
		tools = append(tools, tokenizer.Tool{Name: d.Function.Name, Description: d.Function.Description, Parameters: params})
	}
	return tools, nil
}

// parseCompletion validates a completions request and reads its prompt.
func (s *Server) parseCompletion(req *completionRequest) (*genSpec, *apiError) {
	spec := &genSpec{}
	if err := s.parseCommon(&req.commonRequest, spec); err != nil {
		return nil, err
	}
	if req.BestOf != nil && *req.BestOf != 1 {
		return nil, badRequest("best_of", "best_of > 1 is not supported; best_of must be 1, got %d.", *req.BestOf)
	}
	if req.Suffix != nil && *req.Suffix != "" {
		return nil, badRequest("suffix", "suffix is not supported.")
	}
	spec.echo = req.Echo != nil && *req.Echo
	if lp := req.Logprobs; lp != nil {
		if *lp < 0 || *lp > maxTopLogprobs {
			return nil, badRequest("logprobs", "logprobs must be in [0, %d], got %d.", maxTopLogprobs, *lp)
		}
		spec.params.Logprobs, spec.params.TopLogprobs = true, *lp
		if spec.echo {
			// SGLang computes prompt logprobs from the start for echo
			// (logprob_start_len = 0), the first one null.
			spec.params.PromptLogprobs, spec.params.PromptTopLogprobs = true, *lp
		}
	}
	prompt, text, fromIDs, err := s.parsePrompt(req.Prompt)
	if err != nil {
		return nil, err
	}
	spec.prompt, spec.echoText, spec.echoSkip = prompt, text, fromIDs
	if err := s.setMaxTokens(spec, req.MaxTokens, "max_tokens", spec.echo); err != nil {
		return nil, err
	}
	return spec, nil
}

// parsePrompt reads a completions prompt: a string, a list of token ids,
// or a one-element list of either. It returns the ids and the prompt's
// text for echo (the string itself, or the ids decoded as output is) and
// whether it came as ids.
// Special-token texts in a string prompt become their ids, as a Hugging
// Face tokenizer reads a raw prompt.
func (s *Server) parsePrompt(raw json.RawMessage) (ids []int32, text string, fromIDs bool, err *apiError) {
	ids, text, err = s.readPrompt(raw)
	if err != nil {
		return nil, "", false, err
	}
	if text == "" && len(ids) > 0 {
		return ids, s.tok.DecodeSkipSpecial(ids), true, nil
	}
	return ids, text, false, nil
}

func (s *Server) readPrompt(raw json.RawMessage) ([]int32, string, *apiError) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil, "", badRequest("prompt", "prompt is missing.")
	}
	bad := badRequest("prompt", "prompt must be a string, a list of token ids, or a one-element list of either.")
	var text string
	switch raw[0] {
	case '"':
		if json.Unmarshal(raw, &text) != nil {
			return nil, "", bad
		}
		return s.textPrompt(text)
	case '[':
	default:
		return nil, "", bad
	}
	if inner := bytes.TrimSpace(raw[1:]); len(inner) > 0 && (inner[0] == '"' || inner[0] == '[') {
		// A one-element list of a string or of ids; only its first element
		// is decoded, so a batch of a million prompts costs nothing.
		var first json.RawMessage
		tooMany, ok := listPrefix(raw, 1, func(el json.RawMessage) bool { first = el; return true })
		switch {
		case !ok:
			return nil, "", bad
		case tooMany:
			return nil, "", badRequest("prompt", "a batch of prompts is not supported; send one prompt per request.")
		}
		first = bytes.TrimSpace(first)
		if first[0] == '"' {
			if json.Unmarshal(first, &text) != nil {
				return nil, "", bad
			}
			return s.textPrompt(text)
		}
		raw = first
	}
	return s.idPrompt(raw, bad)
}

// idPrompt reads a prompt of token ids. At most the context's length of
// them is kept; the rest are only counted, for the same refusal the
// scheduler gives a long text prompt (a 30 MB id prompt once cost 2.4 GB
// before its 400).
func (s *Server) idPrompt(raw json.RawMessage, bad *apiError) ([]int32, string, *apiError) {
	ctx := s.contextLength()
	ids, n, err := scanIDs(raw, ctx)
	switch {
	case err != nil:
		return nil, "", bad
	case n == 0:
		return nil, "", badRequest("prompt", "prompt is empty.")
	case n > ctx:
		return nil, "", badRequest("prompt", "%s", sched.PromptTooLong(ctx, n).Message)
	}
	out := make([]int32, len(ids))
	for i, id := range ids {
		if id < 0 || id >= int64(s.tok.VocabSize()) {
			return nil, "", badRequest("prompt", "prompt token %d is %d, outside the vocabulary [0, %d).", i, id, s.tok.VocabSize())
		}
		out[i] = int32(id)
	}
	return out, "", nil
}

func (s *Server) textPrompt(text string) ([]int32, string, *apiError) {
	if text == "" {
		return nil, "", badRequest("prompt", "prompt is empty.")
	}
	return s.tok.EncodeSpecial(text), text, nil
}
