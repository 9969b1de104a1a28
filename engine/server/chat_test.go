package server

import (
	"encoding/json"
	"math"
	"net/http"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/glmbench/glmbench/engine/tokenizer"
)

// chunk is a streamed chat chunk as a client reads it.
type chunk struct {
	ID      string `json:"id"`
	Object  string `json:"object"`
	Created int64  `json:"created"`
	Model   string `json:"model"`
	Choices []struct {
		Index int `json:"index"`
		Delta map[string]json.RawMessage
		// Logprobs and FinishReason are raw so that null can be checked.
		Logprobs     json.RawMessage `json:"logprobs"`
		FinishReason *string         `json:"finish_reason"`
	} `json:"choices"`
	Usage *usageResult    `json:"usage"`
	Error json.RawMessage `json:"error"`
}

// usageResult is a response's usage as a client reads it.
type usageResult struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
	TotalTokens      int `json:"total_tokens"`
}

func str(raw json.RawMessage) string {
	var s string
	json.Unmarshal(raw, &s)
	return s
}

// streamedChat is what a chat stream said, checked for shape on the way.
type streamedChat struct {
	reasoning, content string
	finish             string
	usage              *[3]int
	chunks             int
	toolCalls          json.RawMessage
}

// readChatStream checks a chat stream's shape (one id, created and model;
// the role chunk first; the finish chunk with delta {}; the usage chunk
// with choices [] last when asked; then [DONE]) and returns its text.
func readChatStream(t *testing.T, payloads []string, wantUsage bool) streamedChat {
	t.Helper()
	if n := len(payloads); n < 3 || payloads[n-1] != "[DONE]" {
		t.Fatalf("stream does not end with [DONE]: %q", payloads)
	}
	var out streamedChat
	var first chunk
	for i, p := range payloads[:len(payloads)-1] {
		c := decode[chunk](t, []byte(p))
		if i == 0 {
			first = c
			if c.Object != "chat.completion.chunk" || !strings.HasPrefix(c.ID, "chatcmpl-") || c.Model != "glmbench-nano" || c.Created == 0 {
				t.Fatalf("first chunk %s: want object chat.completion.chunk, a chatcmpl- id, the model and created", p)
			}
		} else if c.ID != first.ID || c.Created != first.Created || c.Model != first.Model || c.Object != first.Object {
			t.Fatalf("chunk %d %s: id, created, model or object differ from the first chunk's", i, p)
		}
		last := i == len(payloads)-2
		if wantUsage && last {
			if c.Choices == nil || len(c.Choices) != 0 || c.Usage == nil {
				t.Fatalf("usage chunk %s: want choices [] and usage", p)
			}
			if !strings.Contains(p, `"choices":[]`) {
				t.Fatalf("usage chunk %s: choices must be an empty array", p)
			}
			out.usage = &[3]int{c.Usage.PromptTokens, c.Usage.CompletionTokens, c.Usage.TotalTokens}
			continue
		}
		if c.Usage != nil {
			t.Fatalf("chunk %d %s carries usage", i, p)
		}
		if len(c.Choices) != 1 {
			t.Fatalf("chunk %d %s: want one choice", i, p)
		}
		ch := c.Choices[0]
		if i == 0 {
			if str(ch.Delta["role"]) != "assistant" || string(ch.Delta["content"]) != `""` || ch.FinishReason != nil {
				t.Fatalf("first chunk %s: want the role chunk {role: assistant, content: \"\"}", p)
			}
			continue
		}
		if out.finish != "" {
			t.Fatalf("chunk %d %s after the finish chunk", i, p)
		}
		if ch.FinishReason != nil {
			if len(ch.Delta) != 0 {
				t.Fatalf("finish chunk %s: want delta {}", p)
			}
			out.finish = *ch.FinishReason
			continue
		}
		out.chunks++
		r, c2 := str(ch.Delta["reasoning_content"]), str(ch.Delta["content"])
		if !utf8.ValidString(r) || !utf8.ValidString(c2) {
			t.Fatalf("chunk %s carries invalid UTF-8", p)
		}
		if tc, ok := ch.Delta["tool_calls"]; ok {
			out.toolCalls = tc
			continue
		}
		if r == "" && c2 == "" {
			t.Fatalf("chunk %d %s carries no text", i, p)
		}
		if r != "" && out.content != "" {
			t.Fatalf("reasoning %q after content %q", r, out.content)
		}
		out.reasoning += r
		out.content += c2
	}
	if out.finish == "" {
		t.Fatalf("no finish chunk in %q", payloads)
	}
	if wantUsage && out.usage == nil {
		t.Fatal("no usage chunk")
	}
	return out
}

type chatResult struct {
	ID      string `json:"id"`
	Object  string `json:"object"`
	Model   string `json:"model"`
	Choices []struct {
		Message struct {
			Role             string          `json:"role"`
			Content          *string         `json:"content"`
			ReasoningContent *string         `json:"reasoning_content"`
			ToolCalls        json.RawMessage `json:"tool_calls"`
		} `json:"message"`
		Logprobs *struct {
			Content []struct {
				Token       string  `json:"token"`
				Logprob     float64 `json:"logprob"`
				Bytes       []int   `json:"bytes"`
				TopLogprobs []struct {
					Token   string  `json:"token"`
					Logprob float64 `json:"logprob"`
					Bytes   []int   `json:"bytes"`
				} `json:"top_logprobs"`
			} `json:"content"`
		} `json:"logprobs"`
		FinishReason string `json:"finish_reason"`
		MatchedStop  any    `json:"matched_stop"`
	} `json:"choices"`
	Usage usageResult `json:"usage"`
}

func (e *env) chat(body map[string]any) chatResult {
	e.t.Helper()
	code, _, b := e.post("/v1/chat/completions", body)
	if code != http.StatusOK {
		e.t.Fatalf("chat: status %d: %s", code, b)
	}
	r := decode[chatResult](e.t, b)
	if r.Object != "chat.completion" || !strings.HasPrefix(r.ID, "chatcmpl-") || len(r.Choices) != 1 || r.Choices[0].Message.Role != "assistant" {
		e.t.Fatalf("chat response %s: want object chat.completion, a chatcmpl- id, one assistant choice", b)
	}
	return r
}

func TestChatStreamMatchesNonStreamOnTheModel(t *testing.T) {
	e := newEnv(t, envConfig{})
	body := chatBody("Tell me a story.", map[string]any{"max_tokens": 8, "temperature": 0, "ignore_eos": true})
	whole := e.chat(body)

	body["stream"] = true
	body["stream_options"] = map[string]any{"include_usage": true}
	s := readChatStream(t, e.stream("/v1/chat/completions", body), true)

	msg := whole.Choices[0].Message
	reasoning := ""
	if msg.ReasoningContent != nil {
		reasoning = *msg.ReasoningContent
	}
	if s.reasoning != reasoning || msg.Content == nil || s.content != *msg.Content {
		t.Errorf("stream gave reasoning %q content %q; non-stream %q %v", s.reasoning, s.content, reasoning, msg.Content)
	}
	prompt, _ := e.tok.ApplyChatTemplate([]tokenizer.Message{{Role: "user", Content: "Tell me a story."}}, nil, true)
	want := [3]int{len(prompt), 8, len(prompt) + 8}
	if *s.usage != want {
		t.Errorf("stream usage %v, want %v", *s.usage, want)
	}
	if u := whole.Usage; [3]int{u.PromptTokens, u.CompletionTokens, u.TotalTokens} != want {
		t.Errorf("non-stream usage %+v, want %v", u, want)
	}
	if s.finish != "length" || whole.Choices[0].FinishReason != "length" {
		t.Errorf("finish %q / %q, want length", s.finish, whole.Choices[0].FinishReason)
	}
}

func TestChatReasoningSplit(t *testing.T) {
	tok, _ := tokenizer.New(tokenizer.MinVocabSize)
	tests := []struct {
		name            string
		script          []int32
		thinking        *bool
		reasoning, text string
	}{
		{"thinking on: text before </think> is reasoning_content, the rest content",
			ids("Let me think.", tok.ThinkEnd(), "The answer is 4.", tok.EndOfText()), nil, "Let me think.", "The answer is 4."},
		{"thinking off: everything is content",
			ids("The answer is 4.", tok.EndOfText()), ptr(false), "", "The answer is 4."},
		{"thinking on without </think>: everything is reasoning",
			ids("Still thinking", tok.EndOfText()), ptr(true), "Still thinking", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, envConfig{script: newScript(tc.script, tok.EndOfText())})
			extra := map[string]any{"temperature": 0, "max_tokens": 64}
			if tc.thinking != nil {
				extra["chat_template_kwargs"] = map[string]any{"enable_thinking": *tc.thinking}
			}
			body := chatBody("What is 2+2?", extra)
			r := e.chat(body)
			msg := r.Choices[0].Message
			if tc.reasoning == "" && msg.ReasoningContent != nil {
				t.Errorf("reasoning_content %q present, want it left out", *msg.ReasoningContent)
			}
			if tc.reasoning != "" && (msg.ReasoningContent == nil || *msg.ReasoningContent != tc.reasoning) {
				t.Errorf("reasoning_content %v, want %q", msg.ReasoningContent, tc.reasoning)
			}
			if msg.Content == nil || *msg.Content != tc.text {
				t.Errorf("content %v, want %q", msg.Content, tc.text)
			}
			if r.Choices[0].FinishReason != "stop" {
				t.Errorf("finish_reason %q, want stop (EOS)", r.Choices[0].FinishReason)
			}
			if got, want := r.Usage.CompletionTokens, len(tc.script); got != want {
				t.Errorf("completion_tokens %d, want %d (the EOS counts)", got, want)
			}

			body["stream"] = true
			body["stream_options"] = map[string]any{"include_usage": true}
			s := readChatStream(t, e.stream("/v1/chat/completions", body), true)
			if s.reasoning != tc.reasoning || s.content != tc.text || s.finish != "stop" {
				t.Errorf("stream: reasoning %q content %q finish %q", s.reasoning, s.content, s.finish)
			}
			if s.usage[1] != len(tc.script) {
				t.Errorf("stream usage %v, want %d completion tokens", s.usage, len(tc.script))
			}
		})
	}
}

func ptr[T any](v T) *T { return &v }

func TestChatStopStrings(t *testing.T) {
	tok, _ := tokenizer.New(tokenizer.MinVocabSize)
	script := ids("Hello world. More text", tok.EndOfText())
	tests := []struct {
		name    string
		stop    any
		content string
		matched string
	}{
		{"a stop string truncates before it", "world", "Hello ", "world"},
		{"the earliest of several stop strings wins", []string{"text", "o w"}, "Hell", "o w"},
		{"a stop string spanning many one-token chunks is held back", "lo wor", "Hel", "lo wor"},
		{"a stop string that never occurs changes nothing", []string{"xyz"}, "Hello world. More text", ""},
		{"a prefix of a stop string at the end is released", "text!", "Hello world. More text", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			// A forward pass of a millisecond makes every token its own event,
			// so the stream's chunk boundaries fall inside the stop strings.
			x := newScript(script, tok.EndOfText())
			x.delay = time.Millisecond
			e := newEnv(t, envConfig{script: x})
			body := chatBody("hi", map[string]any{"temperature": 0, "max_tokens": 64, "stop": tc.stop,
				"chat_template_kwargs": map[string]any{"enable_thinking": false}})
			r := e.chat(body)
			if c := r.Choices[0].Message.Content; c == nil || *c != tc.content {
				t.Errorf("content %v, want %q", c, tc.content)
			}
			if r.Choices[0].FinishReason != "stop" {
				t.Errorf("finish_reason %q, want stop", r.Choices[0].FinishReason)
			}
			if tc.matched != "" && r.Choices[0].MatchedStop != tc.matched {
				t.Errorf("matched_stop %v, want %q", r.Choices[0].MatchedStop, tc.matched)
			}
			body["stream"] = true
			s := readChatStream(t, e.stream("/v1/chat/completions", body), false)
			if s.content != tc.content || s.finish != "stop" {
				t.Errorf("stream: content %q finish %q, want %q stop", s.content, s.finish, tc.content)
			}
			if s.chunks < 2 {
				t.Errorf("stream: %d text chunks; the test needs several to cross a boundary", s.chunks)
			}
			// The scheduler let go of the request: its KV is free again.
			waitFor(t, "the KV pool to be free", func() bool { return e.sched.Stats().KVUsedTokens == 0 })
		})
	}
}

func TestChatLogprobsShape(t *testing.T) {
	e := newEnv(t, envConfig{})
	body := chatBody("Hi", map[string]any{"max_tokens": 5, "temperature": 0, "ignore_eos": true, "logprobs": true, "top_logprobs": 3})
	r := e.chat(body)
	lp := r.Choices[0].Logprobs
	if lp == nil || len(lp.Content) != r.Usage.CompletionTokens {
		t.Fatalf("logprobs %+v: want one entry per completion token (%d)", lp, r.Usage.CompletionTokens)
	}
	for i, c := range lp.Content {
		if c.Logprob > 0 || math.IsNaN(c.Logprob) || len(c.TopLogprobs) != 3 {
			t.Errorf("entry %d %+v: want a logprob ≤ 0 and 3 alternatives", i, c)
		}
		if c.TopLogprobs[0].Logprob < c.Logprob-1e-6 {
			t.Errorf("entry %d: greedy token's logprob %v below the best alternative's %v", i, c.Logprob, c.TopLogprobs[0].Logprob)
		}
		if c.Token == "" || c.Bytes == nil {
			t.Errorf("entry %d %+v: want token and bytes", i, c)
		}
	}

	body["stream"] = true
	var n int
	for _, p := range e.stream("/v1/chat/completions", body) {
		if p == "[DONE]" {
			continue
		}
		c := decode[chunk](t, []byte(p))
		if len(c.Choices) == 1 && string(c.Choices[0].Logprobs) != "null" && len(c.Choices[0].Logprobs) > 0 {
			var l struct{ Content []json.RawMessage }
			json.Unmarshal(c.Choices[0].Logprobs, &l)
			n += len(l.Content)
		}
	}
	if n != 5 {
		t.Errorf("stream carried %d logprob entries, want 5", n)
	}
}

func TestChatToolCalls(t *testing.T) {
	tok, _ := tokenizer.New(tokenizer.MinVocabSize)
	sp := func(s string) int32 {
		id, ok := tok.SpecialID(s)
		if !ok {
			t.Fatalf("no special %s", s)
		}
		return id
	}
	script := ids("Checking.", tok.ThinkEnd(), "Sure. ", sp("<tool_call>"), "get_weather", sp("<arg_key>"), "city", sp("</arg_key>"),
		sp("<arg_value>"), "Paris", sp("</arg_value>"), sp("<arg_key>"), "days", sp("</arg_key>"), sp("<arg_value>"), "3",
		sp("</arg_value>"), sp("</tool_call>"), tok.Observation())
	e := newEnv(t, envConfig{script: newScript(script, tok.EndOfText())})
	tools := []map[string]any{{"type": "function", "function": map[string]any{
		"name": "get_weather", "description": "Weather by city",
		"parameters": map[string]any{"type": "object", "properties": map[string]any{
			"city": map[string]any{"type": "string"}, "days": map[string]any{"type": "integer"}}},
	}}}
	body := chatBody("Weather in Paris?", map[string]any{"temperature": 0, "max_tokens": 64, "tools": tools})
	r := e.chat(body)
	ch := r.Choices[0]
	if ch.FinishReason != "tool_calls" {
		t.Errorf("finish_reason %q, want tool_calls", ch.FinishReason)
	}
	var calls []struct {
		ID       string `json:"id"`
		Type     string `json:"type"`
		Function struct{ Name, Arguments string }
	}
	if err := json.Unmarshal(ch.Message.ToolCalls, &calls); err != nil || len(calls) != 1 {
		t.Fatalf("tool_calls %s: want one call (%v)", ch.Message.ToolCalls, err)
	}
	c := calls[0]
	if c.Type != "function" || c.Function.Name != "get_weather" || !strings.HasPrefix(c.ID, "call_") {
		t.Errorf("call %+v", c)
	}
	var args map[string]any
	if err := json.Unmarshal([]byte(c.Function.Arguments), &args); err != nil || args["city"] != "Paris" || args["days"] != 3.0 {
		t.Errorf("arguments %q: want {city: Paris, days: 3}", c.Function.Arguments)
	}
	if ch.Message.Content == nil || *ch.Message.Content != "Sure. " {
		t.Errorf("content %v, want the text outside the call", ch.Message.Content)
	}

	body["stream"] = true
	s := readChatStream(t, e.stream("/v1/chat/completions", body), false)
	if s.finish != "tool_calls" || s.content != "Sure. " || !strings.Contains(string(s.toolCalls), `"get_weather"`) {
		t.Errorf("stream: finish %q content %q tool_calls %s", s.finish, s.content, s.toolCalls)
	}
	if strings.Contains(s.content, "<tool_call>") {
		t.Errorf("stream content %q shows the call markup", s.content)
	}
}

func TestChatStreamNeverSplitsACharacter(t *testing.T) {
	tok, _ := tokenizer.New(tokenizer.MinVocabSize)
	// "é" and "€" arrive as one byte token each.
	script := ids("café €5", tok.EndOfText())
	e := newEnv(t, envConfig{script: newScript(script, tok.EndOfText())})
	body := chatBody("hi", map[string]any{"temperature": 0, "stream": true,
		"chat_template_kwargs": map[string]any{"enable_thinking": false}})
	payloads := e.stream("/v1/chat/completions", body)
	for _, p := range payloads {
		if strings.Contains(p, `\ufffd`) || strings.ContainsRune(p, utf8.RuneError) {
			t.Errorf("chunk %s holds a replacement character", p)
		}
	}
	if s := readChatStream(t, payloads, false); s.content != "café €5" {
		t.Errorf("content %q, want café €5", s.content)
	}
}

func TestChatTemperatureZeroAndSeedsRepeat(t *testing.T) {
	e := newEnv(t, envConfig{})
	text := func(extra map[string]any) string {
		extra["max_tokens"], extra["ignore_eos"] = 12, true
		m := e.chat(chatBody("Once upon a time", extra)).Choices[0].Message
		out := *m.Content
		if m.ReasoningContent != nil {
			out = *m.ReasoningContent + "|" + out
		}
		return out
	}
	if a, b := text(map[string]any{"temperature": 0}), text(map[string]any{"temperature": 0}); a != b {
		t.Errorf("temperature 0 gave %q then %q", a, b)
	}
	if a, b := text(map[string]any{"temperature": 1, "seed": 42}), text(map[string]any{"temperature": 1, "seed": 42}); a != b {
		t.Errorf("seed 42 at temperature 1 gave %q then %q", a, b)
	}
	if a, b := text(map[string]any{"temperature": 1, "seed": -7}), text(map[string]any{"temperature": 1, "seed": -7}); a != b {
		t.Errorf("a negative seed gave %q then %q", a, b)
	}
}

func TestChatConversationWithToolTurnsRendersTheTemplate(t *testing.T) {
	e := newEnv(t, envConfig{})
	body := map[string]any{
		"model": "glmbench-nano", "max_tokens": 1,
		"tools": []map[string]any{{"type": "function", "function": map[string]any{"name": "get_weather",
			"parameters": map[string]any{"type": "object", "properties": map[string]any{"city": map[string]any{"type": "string"}}}}}},
		"messages": []map[string]any{
			{"role": "system", "content": "Be brief."},
			{"role": "user", "content": []map[string]any{{"type": "text", "text": "Weather in "}, {"type": "text", "text": "Paris?"}}},
			{"role": "assistant", "content": nil, "reasoning_content": "Call the tool.", "tool_calls": []map[string]any{{
				"id": "call_1", "type": "function", "function": map[string]any{"name": "get_weather", "arguments": `{"city": "Paris"}`}}}},
			{"role": "tool", "tool_call_id": "call_1", "content": "Sunny"},
		},
		"chat_template_kwargs": map[string]any{"enable_thinking": false},
	}
	r := e.chat(body)
	want, err := e.tok.ApplyChatTemplate([]tokenizer.Message{
		{Role: "system", Content: "Be brief."},
		{Role: "user", Content: "Weather in Paris?"},
		{Role: "assistant", ReasoningContent: "Call the tool.", ToolCalls: []tokenizer.ToolCall{{Name: "get_weather",
			Arguments: []tokenizer.Arg{{Key: "city", Value: json.RawMessage(`"Paris"`)}}}}},
		{Role: "tool", Content: "Sunny"},
	}, []tokenizer.Tool{{Name: "get_weather", Parameters: json.RawMessage(`{"type": "object", "properties": {"city": {"type": "string"}}}`)}}, false)
	if err != nil {
		t.Fatal(err)
	}
	if r.Usage.PromptTokens != len(want) {
		t.Errorf("prompt_tokens %d, want %d (the GLM template of the same conversation)", r.Usage.PromptTokens, len(want))
	}
}
