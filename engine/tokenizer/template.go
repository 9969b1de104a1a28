package tokenizer

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
)

// Message is one chat message, as OpenAI's chat API gives it.
type Message struct {
	// Role is "system", "user", "assistant" or "tool"; "developer" (OpenAI's
	// newer name for system) renders as system.
	Role string
	// Content is the message text; for role tool, the tool's result.
	Content string
	// ReasoningContent is an assistant turn's reasoning, as a reasoning
	// parser returned it (without <think> tags).
	ReasoningContent string
	// ToolCalls are the calls an assistant turn made.
	ToolCalls []ToolCall
}

// ToolCall is one function call. Arguments are ordered pairs, not a map,
// so a call renders in one deterministic order: the order in which the
// client's JSON object (ArgumentsFromJSON) or the model's output
// (ParseToolCalls) listed them, which is the order Python's dict keeps
// when a Hugging Face template renders the same call.
type ToolCall struct {
	Name      string
	Arguments []Arg
}

// Arg is one argument of a ToolCall: its name and its JSON value.
type Arg struct {
	Key string
	// Value is one JSON value. A JSON string renders raw in the template,
	// any other value as JSON; an empty Value means null.
	Value json.RawMessage
}

// Tool is one function the model may call, as in an OpenAI tools entry.
type Tool struct {
	Name        string
	Description string
	// Parameters is the JSON Schema of the arguments; empty means none.
	Parameters json.RawMessage
}

// toolsPreamble and toolsPostamble frame the tool definitions in the
// <|system|> block GLM-4.7/GLM-5 templates emit when tools are given. Unlike
// message turns, this block keeps its newlines (§3.8 of the engine notes).
const (
	toolsPreamble = "<|system|>\n# Tools\n\nYou may call one or more functions to assist with the user query.\n\n" +
		"You are provided with function signatures within <tools></tools> XML tags:\n<tools>\n"
	toolsPostamble = "</tools>\n\nFor each function call, output the function name and arguments within the following XML format:\n" +
		"<tool_call>{function-name}<arg_key>{arg-key-1}</arg_key><arg_value>{arg-value-1}</arg_value>" +
		"<arg_key>{arg-key-2}</arg_key><arg_value>{arg-value-2}</arg_value>...</tool_call>"
)

// piece is one part of a rendered prompt: a special token, template text
// (trusted: special texts in it become specials), or client text (bytes only).
type piece struct {
	special int32 // a special id, or 0 for text
	text    string
	trusted bool
}

// ApplyChatTemplate renders msgs (and tools, when any) with the GLM-5 chat
// template and returns the prompt's token ids, ending with the generation
// prompt: <|assistant|><think> when enableThinking (GLM's default), else
// <|assistant|><think></think>. It fails on an unknown role or on JSON it
// cannot read (tool parameters, argument values).
//
// The layout (engine notes §3.8): [gMASK]<sop>, the tools block, then per
// message the role token and its content with no newline between. An
// assistant turn after the last user turn renders <think>reasoning</think>;
// an earlier one <think></think> (GLM-5 clears old reasoning). Reasoning and
// assistant content are trimmed of surrounding space, as the template's
// strip() does. Consecutive tool results share one <|observation|>.
func (t *Tokenizer) ApplyChatTemplate(msgs []Message, tools []Tool, enableThinking bool) ([]int32, error) {
	pieces, err := templatePieces(msgs, tools, enableThinking)
	if err != nil {
		return nil, err
	}
	var ids []int32
	for _, p := range pieces {
		switch {
		case p.special != 0:
			ids = append(ids, p.special)
		case p.trusted:
			ids = t.appendEncodeSpecial(ids, p.text)
		default:
			ids = t.AppendEncode(ids, p.text)
		}
	}
	return ids, nil
}

// RenderChatTemplate returns the prompt ApplyChatTemplate encodes, as text
// (for tests and debugging). EncodeSpecial of it gives the same ids unless a
// client-supplied string contains a special token's text, which
// ApplyChatTemplate keeps as bytes.
func RenderChatTemplate(msgs []Message, tools []Tool, enableThinking bool) (string, error) {
	pieces, err := templatePieces(msgs, tools, enableThinking)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	for _, p := range pieces {
		if p.special != 0 {
			b.WriteString(specialTexts[p.special-NumByteTokens])
		} else {
			b.WriteString(p.text)
		}
	}
	return b.String(), nil
}

func templatePieces(msgs []Message, tools []Tool, enableThinking bool) ([]piece, error) {
	var out []piece
	sp := func(id int32) { out = append(out, piece{special: id}) }
	lit := func(s string) { out = append(out, piece{text: s, trusted: true}) }
	txt := func(s string) {
		if s != "" {
			out = append(out, piece{text: s})
		}
	}

	sp(idGMask)
	sp(idSop)
	if len(tools) > 0 {
		lit(toolsPreamble)
		for _, tool := range tools {
			js, err := toolJSON(tool)
			if err != nil {
				return nil, err
			}
			txt(js)
			lit("\n")
		}
		lit(toolsPostamble)
	}

	lastUser := -1
	for i, m := range msgs {
		if m.Role == "user" {
			lastUser = i
		}
	}
	for i, m := range msgs {
		switch m.Role {
		case "system", "developer":
			sp(idSystem)
			txt(m.Content)
		case "user":
			sp(idUser)
			txt(m.Content)
		case "assistant":
			sp(idAssistant)
			reasoning, content := m.ReasoningContent, m.Content
			if reasoning == "" && strings.Contains(content, "</think>") {
				// A client that sent the raw output back: split it as the
				// template does.
				before, _, _ := strings.Cut(content, "</think>")
				if j := strings.LastIndex(before, "<think>"); j >= 0 {
					before = before[j+len("<think>"):]
				}
				reasoning = strings.TrimLeft(strings.TrimRight(before, "\n"), "\n")
				after := content[strings.LastIndex(content, "</think>")+len("</think>"):]
				content = strings.TrimLeft(after, "\n")
			}
			sp(idThink)
			if i > lastUser {
				txt(strings.TrimSpace(reasoning))
			}
			sp(idThinkEnd)
			txt(strings.TrimSpace(content))
			for _, tc := range m.ToolCalls {
				sp(idToolCall)
				txt(tc.Name)
				for _, a := range tc.Arguments {
					v, err := argValueText(a.Value)
					if err != nil {
						return nil, fmt.Errorf("tokenizer: tool call %q argument %q: %w", tc.Name, a.Key, err)
					}
					sp(idArgKey)
					txt(a.Key)
					sp(idArgKeyEnd)
					sp(idArgValue)
					txt(v)
					sp(idArgValueEnd)
				}
				sp(idToolCallEnd)
			}
		case "tool":
			if i == 0 || msgs[i-1].Role != "tool" {
				sp(idObservation)
			}
			sp(idToolResponse)
			txt(m.Content)
			sp(idToolResponseEnd)
		default:
			return nil, fmt.Errorf("tokenizer: message %d has unknown role %q", i, m.Role)
		}
	}
	sp(idAssistant)
	sp(idThink)
	if !enableThinking {
		sp(idThinkEnd)
	}
	return out, nil
}

// toolJSON renders a tool definition as the template's tojson does: the
// OpenAI tools entry {"type": "function", "function": {...}} in Python's
// json.dumps style (", " and ": " separators, non-ASCII kept), with the
// description and parameters left out when empty.
func toolJSON(tool Tool) (string, error) {
	b := []byte(`{"type": "function", "function": {"name": `)
	b = appendPyString(b, tool.Name)
	if tool.Description != "" {
		b = append(b, `, "description": `...)
		b = appendPyString(b, tool.Description)
	}
	if len(tool.Parameters) > 0 {
		b = append(b, `, "parameters": `...)
		var err error
		if b, err = appendPyJSON(b, tool.Parameters); err != nil {
			return "", fmt.Errorf("tokenizer: tool %q parameters: %w", tool.Name, err)
		}
	}
	b = append(b, "}}"...)
	return string(b), nil
}

// argValueText is the text of an argument value inside <arg_value>: a JSON
// string raw, anything else as JSON in Python's style (the template's
// `v | tojson(ensure_ascii=False) if v is not string else v`).
func argValueText(v json.RawMessage) (string, error) {
	if len(v) == 0 {
		return "null", nil
	}
	if t := bytes.TrimLeft(v, " \t\r\n"); len(t) > 0 && t[0] == '"' {
		var s string
		if err := json.Unmarshal(v, &s); err != nil {
			return "", err
		}
		return s, nil
	}
	b, err := appendPyJSON(nil, v)
	return string(b), err
}
