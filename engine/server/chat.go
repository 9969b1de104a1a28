package server

import (
	"context"
	"net/http"
	"strings"
	"time"

	"github.com/glmbench/glmbench/engine/sched"
	"github.com/glmbench/glmbench/engine/tokenizer"
)

// usage is OpenAI's token accounting. completion_tokens counts every
// generated token: reasoning, content, and the EOS that ended it.
// prompt_tokens_details.cached_tokens is the part of the prompt the prefix
// cache served (SGLang reports it with --enable-cache-report, vLLM with
// --enable-prompt-tokens-details; here it is always on).
type usage struct {
	PromptTokens        int           `json:"prompt_tokens"`
	CompletionTokens    int           `json:"completion_tokens"`
	TotalTokens         int           `json:"total_tokens"`
	PromptTokensDetails promptDetails `json:"prompt_tokens_details"`
}

type promptDetails struct {
	CachedTokens int `json:"cached_tokens"`
}

func newUsage(prompt, completion, cached int) *usage {
	return &usage{PromptTokens: prompt, CompletionTokens: completion, TotalTokens: prompt + completion,
		PromptTokensDetails: promptDetails{CachedTokens: cached}}
}

// envelope is the fields every chat and completions response and chunk
// opens with; embedded first, they are encoded first, in this order.
type envelope struct {
	ID      string `json:"id"`
	Object  string `json:"object"`
	Created int64  `json:"created"`
	Model   string `json:"model"`
}

// envelope is the opening fields of g's responses of the given object.
func (g *gen) envelope(object string) envelope {
	return envelope{ID: g.id, Object: object, Created: g.created, Model: g.spec.model}
}

type chatResponse struct {
	envelope
	Choices []chatChoice `json:"choices"`
	Usage   *usage       `json:"usage"`
}

type chatChoice struct {
	Index        int           `json:"index"`
	Message      chatOutput    `json:"message"`
	Logprobs     *chatLogprobs `json:"logprobs"`
	FinishReason string        `json:"finish_reason"`
	// MatchedStop is SGLang's extra: the stop string or token id that
	// ended the output, null when none.
	MatchedStop any `json:"matched_stop"`
}

type chatOutput struct {
	Role             string        `json:"role"`
	Content          *string       `json:"content"`
	ReasoningContent string        `json:"reasoning_content,omitempty"`
	ToolCalls        []toolCallOut `json:"tool_calls,omitempty"`
}

type toolCallOut struct {
	// Index is set in streamed deltas only, as OpenAI does.
	Index    *int   `json:"index,omitempty"`
	ID       string `json:"id"`
	Type     string `json:"type"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

type chatChunk struct {
	envelope
	Choices []chatChunkChoice `json:"choices"`
	Usage   *usage            `json:"usage,omitempty"`
}

type chatChunkChoice struct {
	Index        int           `json:"index"`
	Delta        chatDelta     `json:"delta"`
	Logprobs     *chatLogprobs `json:"logprobs"`
	FinishReason *string       `json:"finish_reason"`
	MatchedStop  any           `json:"matched_stop,omitempty"`
}

type chatDelta struct {
	Role             string        `json:"role,omitempty"`
	Content          *string       `json:"content,omitempty"`
	ReasoningContent *string       `json:"reasoning_content,omitempty"`
	ToolCalls        []toolCallOut `json:"tool_calls,omitempty"`
}

// handleChat serves POST /v1/chat/completions.
func (s *Server) handleChat(w http.ResponseWriter, r *http.Request, b *body) {
	start := time.Now()
	spec := decodeGen(s, w, r, b, s.parseChat)
	if spec == nil {
		return
	}
	s.serveGen(w, r, spec, "chatcmpl-", start, func(ctx context.Context, g *gen) {
		if spec.stream {
			c := &chatStream{gen: g}
			if len(spec.tools) > 0 {
				c.tools = &toolDiverter{}
			}
			g.stream(ctx, w, r, c)
		} else {
			g.complete(ctx, w, r, &chatWhole{gen: g})
		}
	})
}

// chatWhole answers a non-streaming chat request once its output is over.
type chatWhole struct {
	*gen
	reasoning, content strings.Builder
	lps                []sched.TokenLogprob
}

func (c *chatWhole) step(_ *stepResult, pieces []piece, toks outTokens) {
	for _, p := range pieces {
		if p.kind == kindReasoning {
			c.reasoning.WriteString(p.text)
		} else {
			c.content.WriteString(p.text)
		}
	}
	c.lps = append(c.lps, toks.lps...)
}

func (c *chatWhole) response(res *stepResult, u *usage) any {
	msg := chatOutput{Role: "assistant", ReasoningContent: c.reasoning.String()}
	text := c.content.String()
	reason := res.finish
	if len(c.spec.tools) > 0 {
		var calls []tokenizer.ToolCall
		calls, text = tokenizer.ParseToolCalls(text, c.spec.tools)
		msg.ToolCalls = toolCallsOut(calls, false)
		if len(msg.ToolCalls) > 0 && reason == "stop" {
			reason = "tool_calls"
		}
	}
	if text != "" || len(msg.ToolCalls) == 0 {
		msg.Content = &text // OpenAI: content is null beside tool calls
	}
	choice := chatChoice{Message: msg, FinishReason: reason, MatchedStop: res.matched}
	if c.spec.params.Logprobs {
		choice.Logprobs = &chatLogprobs{Content: c.spec.names.chat(c.lps)}
	}
	return chatResponse{envelope: c.envelope("chat.completion"), Choices: []chatChoice{choice}, Usage: u}
}

// chatStream answers with SSE chunks: the role chunk, reasoning_content
// and content deltas, the finish chunk (delta {}), then the usage chunk
// with choices [] (OpenAI's spec) when stream_options.include_usage.
type chatStream struct {
	*gen
	sentRole bool
	tools    *toolDiverter        // nil without tools
	pending  []sched.TokenLogprob // logprobs of tokens not yet sent with text
}

// send writes one chunk of delta d, with the pending logprobs when asked.
func (c *chatStream) send(out *sseWriter, d chatDelta, finish *string, matched any) error {
	ch := chatChunkChoice{Delta: d, FinishReason: finish, MatchedStop: matched}
	if c.spec.params.Logprobs && len(c.pending) > 0 {
		ch.Logprobs = &chatLogprobs{Content: c.spec.names.chat(c.pending)}
		c.pending = nil
	}
	return out.send(c.chunk([]chatChunkChoice{ch}, nil))
}

func (c *chatStream) step(ctx context.Context, out *sseWriter, _ *stepResult, pieces []piece, toks outTokens) bool {
	if !c.sentRole {
		c.sentRole = true
		empty := ""
		if c.send(out, chatDelta{Role: "assistant", Content: &empty}, nil, nil) != nil {
			return false
		}
	}
	c.pending = append(c.pending, toks.lps...)
	for _, p := range pieces {
		text := p.text
		d := chatDelta{ReasoningContent: &text}
		if p.kind == kindContent {
			if c.tools != nil {
				if text = c.tools.feed(text); text == "" {
					continue
				}
			}
			d = chatDelta{Content: &text}
		}
		if c.send(out, d, nil, nil) != nil || out.afterToken(ctx) {
			return false
		}
	}
	return true
}

func (c *chatStream) finish(out *sseWriter, res *stepResult) bool {
	reason := res.finish
	if c.tools != nil {
		rest, calls := c.tools.end(c.spec.tools)
		if rest != "" && c.send(out, chatDelta{Content: &rest}, nil, nil) != nil {
			return false
		}
		// The calls go out whole in one delta once the output is over.
		if tc := toolCallsOut(calls, true); len(tc) > 0 {
			if c.send(out, chatDelta{ToolCalls: tc}, nil, nil) != nil {
				return false
			}
			if reason == "stop" {
				reason = "tool_calls"
			}
		}
	}
	return c.send(out, chatDelta{}, &reason, res.matched) == nil
}

func (c *chatStream) usageChunk(u *usage) any { return c.chunk([]chatChunkChoice{}, u) }

func (c *chatStream) chunk(choices []chatChunkChoice, u *usage) chatChunk {
	return chatChunk{envelope: c.envelope("chat.completion.chunk"), Choices: choices, Usage: u}
}

// toolCallsOut writes parsed calls in OpenAI's shape; streamed deltas
// carry an index per call.
func toolCallsOut(calls []tokenizer.ToolCall, indexed bool) []toolCallOut {
	var out []toolCallOut
	for _, c := range calls {
		args, err := c.ArgumentsJSON()
		if err != nil {
			continue // ParseToolCalls gives valid JSON values; a failure is no call
		}
		tc := toolCallOut{ID: newID("call_")[:29], Type: "function"}
		tc.Function.Name, tc.Function.Arguments = c.Name, args
		if indexed {
			idx := len(out)
			tc.Index = &idx
		}
		out = append(out, tc)
	}
	return out
}

// toolDiverter holds back streamed content from the first <tool_call> on,
// so that the calls can be parsed when the output is over (SGLang converts
// them incrementally; one delta at the end is allowed by the API). Text
// that could be the start of the tag is held until it is decided.
type toolDiverter struct {
	held     string
	diverted bool
	buf      strings.Builder
}

const toolCallTag = "<tool_call>"

// feed takes released content and returns what may be streamed now.
func (t *toolDiverter) feed(s string) string {
	if t.diverted {
		t.buf.WriteString(s)
		return ""
	}
	t.held += s
	if i := strings.Index(t.held, toolCallTag); i >= 0 {
		out := t.held[:i]
		t.buf.WriteString(t.held[i:])
		t.held, t.diverted = "", true
		return out
	}
	k := partialTail(t.held, []string{toolCallTag})
	out := t.held[:len(t.held)-k]
	t.held = t.held[len(t.held)-k:]
	return out
}

// end parses the held output: the calls, and the content that is not part
// of one (a malformed block stays content).
func (t *toolDiverter) end(tools []tokenizer.Tool) (rest string, calls []tokenizer.ToolCall) {
	calls, content := tokenizer.ParseToolCalls(t.buf.String(), tools)
	return t.held + content, calls
}
