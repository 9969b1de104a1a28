package conform

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/glmbench/glmbench/endpoints"
)

// Checks of non-streamed chat completions.

func checkChat(ctx context.Context, s *suite) outcome {
	c, _, p := s.chatAnswer(ctx, s.chatBody(storyPrompt, 16, map[string]any{"temperature": 0}))
	if p != "" {
		return fail("%s", p)
	}
	var bad []string
	add := func(format string, args ...any) { bad = append(bad, fmt.Sprintf(format, args...)) }
	if c.ID == "" {
		add("no id")
	}
	if c.Object != "chat.completion" {
		add(`object %q, want "chat.completion"`, c.Object)
	}
	if c.Created <= 0 {
		add("no created time")
	}
	if c.Model == "" {
		add("no model")
	}
	if len(c.Choices) != 1 {
		add("%d choices, want 1", len(c.Choices))
	}
	ch := c.Choices[0]
	m := ch.Message
	if ch.Index != 0 {
		add("choices[0].index is %d", ch.Index)
	}
	if m.Role != "assistant" {
		add(`message.role %q, want "assistant"`, m.Role)
	}
	if m.Content == nil && len(m.ToolCalls) == 0 {
		add("message.content is null without tool calls")
	}
	if m.content() == "" && m.reasoning() == "" {
		add("no text in content or reasoning")
	}
	if f := deref(ch.FinishReason); f != "stop" && f != "length" {
		add(`finish_reason %q, want "stop" or "length"`, f)
	}
	if len(bad) > 0 {
		// A 200 with a choice: what the checks built on chats need.
		return fail("%s", strings.Join(bad, "; ")).butProvided()
	}
	return pass("finish_reason %s; %d characters of content, %d of reasoning", deref(ch.FinishReason),
		utf8.RuneCountInString(m.content()), utf8.RuneCountInString(m.reasoning()))
}

func checkUsage(ctx context.Context, s *suite) outcome {
	const maxTokens = 8
	var counts [2]*endpoints.Usage
	for i, prompt := range []string{storyPrompt, storyPrompt + strings.Repeat(longerPrompt, 8)} {
		c, _, p := s.chatAnswer(ctx, s.chatBody(prompt, maxTokens, map[string]any{"temperature": 0}))
		if p != "" {
			return fail("%s", p)
		}
		counts[i] = c.Usage
		if c.Usage == nil || c.Usage.PromptTokens <= 0 {
			return fail("%s in the answer", usageProblem(c.Usage, maxTokens))
		}
	}
	// Both answers count their prompts: what the checks built on usage
	// need, whatever else is wrong with the counts.
	for _, u := range counts {
		if p := usageProblem(u, maxTokens); p != "" {
			return fail("%s in the answer", p).butProvided()
		}
	}
	short, long := counts[0], counts[1]
	if long.PromptTokens <= short.PromptTokens {
		return fail("a prompt eight sentences longer counts %d prompt tokens, the shorter %d", long.PromptTokens, short.PromptTokens).butProvided()
	}
	return pass("prompt %d + completion %d = total %d; the longer prompt counts %d",
		short.PromptTokens, short.CompletionTokens, short.TotalTokens, long.PromptTokens)
}

// reply is the text of a chat answer, for comparing answers.
type reply struct {
	reasoning, content, finish string
}

func replyOf(c *chatCompletion) reply {
	m := c.Choices[0].Message
	return reply{m.reasoning(), m.content(), deref(c.Choices[0].FinishReason)}
}

func (r reply) text() string { return r.reasoning + r.content }

// differ says where two replies first differ.
func differ(a, b reply) string {
	if a.finish != b.finish {
		return fmt.Sprintf("finish_reason %q then %q", a.finish, b.finish)
	}
	x, y := []rune(a.text()), []rune(b.text())
	i := 0
	for i < len(x) && i < len(y) && x[i] == y[i] {
		i++
	}
	if a.reasoning != b.reasoning && i >= len([]rune(a.reasoning)) {
		return fmt.Sprintf("the same text, split otherwise between reasoning and content (%d and %d characters of reasoning)",
			len([]rune(a.reasoning)), len([]rune(b.reasoning)))
	}
	return fmt.Sprintf("at character %d: %q then %q", i, string(x[i:min(len(x), i+16)]), string(y[i:min(len(y), i+16)]))
}

// twice sends body twice and returns both replies.
func (s *suite) twice(ctx context.Context, body map[string]any) ([2]reply, string) {
	var out [2]reply
	for i := range out {
		c, _, p := s.chatAnswer(ctx, body)
		if p != "" {
			return out, p
		}
		out[i] = replyOf(c)
	}
	return out, ""
}

func checkTemperature0(ctx context.Context, s *suite) outcome {
	r, p := s.twice(ctx, s.chatBody(storyPrompt, 32, map[string]any{"temperature": 0}))
	if p != "" {
		return fail("%s", p)
	}
	if r[0] != r[1] {
		return fail("two answers at temperature 0 differ %s", differ(r[0], r[1]))
	}
	return pass("two answers of %d identical characters", utf8.RuneCountInString(r[0].text()))
}

func checkSeed(ctx context.Context, s *suite) outcome {
	body := func(seed int) map[string]any {
		return s.chatBody(storyPrompt, 32, map[string]any{"temperature": 1, "seed": seed})
	}
	r, p := s.twice(ctx, body(1234))
	if p != "" {
		return fail("%s", p)
	}
	if r[0] != r[1] {
		return fail("two answers with seed 1234 at temperature 1 differ %s", differ(r[0], r[1]))
	}
	c, _, p := s.chatAnswer(ctx, body(4321))
	if p != "" {
		return fail("seed 4321: %s", p)
	}
	// A server that ignores temperature (always greedy) gives one text for
	// every seed; that is worth saying, but it is not this check's failure.
	other := "seed 4321 gave another"
	if replyOf(c) == r[0] {
		other = "seed 4321 gave the same text too: sampling may be greedy"
	}
	return pass("seed 1234 gave the same %d characters twice; %s", utf8.RuneCountInString(r[0].text()), other)
}

// stopLen is how many characters a stop string taken from an answer has.
const stopLen = 3

// stopString picks a stop string from the middle of text: up to stopLen
// letters or digits. Not spaces, which a server may trim, nor the
// replacement character: a random-weight model's output is full of broken
// UTF-8, which a server matches as bytes but JSON hands over as U+FFFD. It
// returns "" when text has no letter or digit.
func stopString(text string) string {
	rs := []rune(text)
	usable := func(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) }
	start := -1
	for i := len(rs) / 2; i < len(rs); i++ {
		if usable(rs[i]) {
			start = i
			break
		}
	}
	for i := 0; start < 0 && i < len(rs)/2; i++ {
		if usable(rs[i]) {
			start = i
		}
	}
	if start < 0 {
		return ""
	}
	end := start
	for end < len(rs) && end-start < stopLen && usable(rs[end]) {
		end++
	}
	return string(rs[start:end])
}

func checkStop(ctx context.Context, s *suite) outcome {
	const maxTokens = 48
	c, _, p := s.chatAnswer(ctx, s.chatBody(storyPrompt, maxTokens, map[string]any{"temperature": 0}))
	if p != "" {
		return fail("%s", p)
	}
	full := replyOf(c)
	// The stop string comes from the longer of the two parts, and the
	// expected answer is cut at its first occurrence in that part's order:
	// reasoning first, then content.
	part := full.content
	if len(full.reasoning) > len(full.content) {
		part = full.reasoning
	}
	stop := stopString(part)
	if stop == "" {
		return skip("the temperature-0 answer (%d characters) has no printable character to take a stop string from", utf8.RuneCountInString(full.text()))
	}
	want := reply{reasoning: full.reasoning, finish: "stop"}
	if i := strings.Index(full.reasoning, stop); i >= 0 {
		want.reasoning = full.reasoning[:i]
	} else {
		want.content = full.content[:strings.Index(full.content, stop)]
	}
	never := "\u2603never-in-an-answer\u2603"
	c, _, p = s.chatAnswer(ctx, s.chatBody(storyPrompt, maxTokens, map[string]any{"temperature": 0, "stop": []string{stop, never}}))
	if p != "" {
		return fail("with stop %q: %s", stop, p)
	}
	got := replyOf(c)
	if got.finish == "stop" && got.reasoning == want.reasoning && got.content == want.content {
		return pass("stop %q ended the answer after %d of %d characters, finish_reason stop", stop,
			utf8.RuneCountInString(got.text()), utf8.RuneCountInString(full.text()))
	}
	if strings.Contains(got.text(), stop) {
		return fail("stop %q appears in the answer (finish_reason %q): the stop string was not applied", stop, got.finish)
	}
	return fail("with stop %q the answer should be the first %d characters, finish_reason stop; got %d characters, finish_reason %q (%s)",
		stop, utf8.RuneCountInString(want.text()), utf8.RuneCountInString(got.text()), got.finish, differ(want, got))
}

func checkLogprobs(ctx context.Context, s *suite) outcome {
	const top = 3
	c, _, p := s.chatAnswer(ctx, s.chatBody(storyPrompt, 8, map[string]any{"temperature": 0, "logprobs": true, "top_logprobs": top}))
	if p != "" {
		return fail("%s", p)
	}
	lp := c.Choices[0].Logprobs
	if lp == nil || len(lp.Content) == 0 {
		return fail("choices[0].logprobs.content is missing or empty")
	}
	// The tolerance covers float32 rounding between the sampled token's
	// logprob and the same number in its top list.
	const eps = 1e-3
	for i, e := range lp.Content {
		switch {
		case math.IsNaN(e.Logprob) || e.Logprob > eps:
			return fail("token %d has logprob %v", i, e.Logprob)
		case len(e.TopLogprobs) != top:
			return fail("token %d has %d top_logprobs, want %d", i, len(e.TopLogprobs), top)
		}
		for j, t := range e.TopLogprobs {
			if math.IsNaN(t.Logprob) || t.Logprob > eps || (j > 0 && t.Logprob > e.TopLogprobs[j-1].Logprob+eps) {
				return fail("token %d: top_logprobs are not logprobs in descending order: %v", i, topValues(e.TopLogprobs))
			}
		}
		if e.Logprob < e.TopLogprobs[0].Logprob-eps {
			return fail("token %d at temperature 0 has logprob %.4f below the top one's %.4f: it is not the most likely token",
				i, e.Logprob, e.TopLogprobs[0].Logprob)
		}
	}
	detail := fmt.Sprintf("%d entries, each with %d top_logprobs", len(lp.Content), top)
	if u := c.Usage; u != nil {
		if u.CompletionTokens != len(lp.Content) {
			return fail("%d logprob entries for usage.completion_tokens %d", len(lp.Content), u.CompletionTokens)
		}
		detail += ", one per completion token"
	}
	return pass("%s", detail)
}

func topValues(ts []tokenLogprob) []float64 {
	out := make([]float64, len(ts))
	for i, t := range ts {
		out[i] = t.Logprob
	}
	return out
}

func checkN(ctx context.Context, s *suite) outcome {
	a := s.post(ctx, "/chat/completions", s.chatBody(storyPrompt, 8, map[string]any{"n": 2}))
	if !a.ok() {
		msg, p := refusal(a)
		if p != "" {
			return fail("%s", p)
		}
		return pass("refused cleanly with HTTP %d: %s", a.Status, msg)
	}
	var c chatCompletion
	if err := a.decode(&c); err != nil {
		return fail("%s", err)
	}
	seen := map[int]bool{}
	for _, ch := range c.Choices {
		seen[ch.Index] = true
	}
	switch {
	case len(c.Choices) == 1:
		return fail("200 with one choice: n was ignored")
	case len(c.Choices) != 2 || !seen[0] || !seen[1]:
		return fail("200 with %d choices of indexes %v, want 0 and 1", len(c.Choices), seen)
	}
	return pass("served: two choices, index 0 and 1")
}

func checkReasoning(ctx context.Context, s *suite) outcome {
	// The switch is the endpoint's own: Z.ai's thinking.type, else the
	// chat template's enable_thinking (endpoints.ThinkingSwitch).
	field, _ := endpoints.ThinkingSwitch(s.cfg.Endpoint.BaseURL, true)
	ask := func(thinking bool) (*chatCompletion, *answer, string) {
		k, v := endpoints.ThinkingSwitch(s.cfg.Endpoint.BaseURL, thinking)
		return s.chatAnswer(ctx, s.chatBody(storyPrompt, 32, map[string]any{"temperature": 0, k: v}))
	}
	on, a, p := ask(true)
	if p != "" {
		if a.err == nil && a.Status == 400 && strings.Contains(string(a.Body), field) {
			return skip("the endpoint refuses %s: %s", field, a.describe())
		}
		return fail("thinking on: %s", p)
	}
	m := on.Choices[0].Message
	if tag := thinkTag(m.reasoning() + m.content()); tag != "" {
		return fail("thinking on: %s left in the text: the reasoning was not split out", tag)
	}
	if m.reasoning() == "" {
		return skip("no reasoning with thinking on: the model does not reason, or the server parses no reasoning")
	}
	off, _, p := ask(false)
	if p != "" {
		return fail("thinking off: %s", p)
	}
	mo := off.Choices[0].Message
	switch {
	case thinkTag(mo.reasoning()+mo.content()) != "":
		return fail("thinking off: %s in the text", thinkTag(mo.reasoning()+mo.content()))
	case mo.reasoning() != "":
		return fail("thinking off (%s), yet %d characters of reasoning: the switch is not honoured", field, utf8.RuneCountInString(mo.reasoning()))
	case mo.content() == "":
		return fail("thinking off, yet no content")
	}
	return pass("thinking on: %d characters of reasoning, %d of content; off (%s): %d of content and no reasoning",
		utf8.RuneCountInString(m.reasoning()), utf8.RuneCountInString(m.content()), field, utf8.RuneCountInString(mo.content()))
}

// thinkTag returns the first reasoning tag found in text, "" when none.
func thinkTag(text string) string {
	for _, t := range []string{"<think>", "</think>"} {
		if strings.Contains(text, t) {
			return t
		}
	}
	return ""
}

// weatherTool is the one function the tool-calls and tool-choice checks declare.
const weatherTool = "get_weather"

func checkToolCalls(ctx context.Context, s *suite) outcome {
	tools := weatherTools()
	c, _, p := s.chatAnswer(ctx, s.chatBody(weatherPrompt, 128, map[string]any{"temperature": 0, "tools": tools, "tool_choice": "auto"}))
	if p != "" {
		return fail("a request with tools: %s", p)
	}
	ch := c.Choices[0]
	m := ch.Message
	if len(m.ToolCalls) == 0 {
		// A model that meant to call the tool names it; the server left the
		// call in the text instead of parsing it.
		if strings.Contains(m.content(), weatherTool) || strings.Contains(m.content(), "<tool_call>") {
			return fail("message.tool_calls is empty, but the content holds a call: %s", s.redact().clip(m.content(), 80))
		}
		return skip("the model answered without calling the tool (a random-weight model cannot): no call to check")
	}
	for i, tc := range m.ToolCalls {
		var args map[string]any
		switch {
		case tc.shape != "":
			return fail("tool_calls[%d]: %s", i, tc.shape)
		case tc.ID == "":
			return fail("tool_calls[%d] has no id", i)
		case tc.Type != "function":
			return fail(`tool_calls[%d].type %q, want "function"`, i, tc.Type)
		case tc.Function.Name != weatherTool:
			return fail("tool_calls[%d] calls %q, which was not declared", i, tc.Function.Name)
		case json.Unmarshal([]byte(tc.Function.Arguments), &args) != nil:
			return fail("tool_calls[%d].function.arguments is not a JSON object: %s", i, s.redact().clip(tc.Function.Arguments, 60))
		}
	}
	if f := deref(ch.FinishReason); f != "tool_calls" {
		return fail(`finish_reason %q beside tool calls, want "tool_calls"`, f)
	}
	if strings.Contains(m.content(), "<tool_call>") {
		return fail("tool call markup left in content beside the parsed calls")
	}
	return pass("%d call(s) to %s with JSON arguments, finish_reason tool_calls", len(m.ToolCalls), weatherTool)
}
