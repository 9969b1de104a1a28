package tokenizer

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"unicode"
)

// The tags of the glm47 tool-call format (SGLang Glm47MoeDetector, "GLM-4.7
// and GLM-5"): <tool_call>name<arg_key>k</arg_key><arg_value>v</arg_value>…</tool_call>,
// without newlines. Each tag is one special token in the model's output.
const (
	tagToolCall    = "<tool_call>"
	tagToolCallEnd = "</tool_call>"
	tagArgKey      = "<arg_key>"
	tagArgKeyEnd   = "</arg_key>"
	tagArgValue    = "<arg_value>"
	tagArgValueEnd = "</arg_value>"
)

var toolCallTags = [...]string{tagToolCall, tagToolCallEnd, tagArgKey, tagArgKeyEnd, tagArgValue, tagArgValueEnd}

// ParseToolCalls finds the glm47-format tool calls in finished content text
// and returns them, in order, with the content left outside them (every
// piece of text between and around the calls, concatenated; the text itself
// when there are none).
//
// A block is well-formed when it is <tool_call>, a non-empty name, then zero
// or more <arg_key>k</arg_key><arg_value>v</arg_value> pairs, then
// </tool_call>, with only white space between the pairs, between
// </arg_key> and <arg_value>, and before </tool_call>, and no tag inside a
// name, key or value. The name and keys are trimmed of white space; values
// are kept exactly. A malformed block is left in the content, and the search
// goes on after it.
//
// A value becomes a JSON string when tools declares the argument's type as
// "string" (SGLang types values by the tool's schema the same way);
// otherwise it is the JSON value it parses as, or a JSON string of its raw
// text when it does not parse. tools may be nil. A key given twice keeps its
// first position and its last value, as a Python dict does. Calls to names
// not in tools are returned too; rejecting them is the caller's choice.
func ParseToolCalls(text string, tools []Tool) (calls []ToolCall, content string) {
	if !strings.Contains(text, tagToolCall) {
		return nil, text
	}
	stringArgs := stringArguments(tools)
	var b strings.Builder
	rest := text
	for {
		i := strings.Index(rest, tagToolCall)
		if i < 0 {
			break
		}
		e := strings.Index(rest[i:], tagToolCallEnd)
		if e < 0 {
			break // no block can close: the rest is content
		}
		// Only the last opening tag before this close can start a
		// well-formed block (the others would hold it); jumping to it keeps
		// the scan linear on output full of unclosed tags.
		end := i + e + len(tagToolCallEnd)
		start := i + strings.LastIndex(rest[i:i+e], tagToolCall)
		b.WriteString(rest[:start])
		if call, ok := parseToolCallBody(rest[start+len(tagToolCall):i+e], stringArgs); ok {
			calls = append(calls, call)
		} else {
			b.WriteString(rest[start:end])
		}
		rest = rest[end:]
	}
	if len(calls) == 0 {
		return nil, text
	}
	b.WriteString(rest)
	return calls, b.String()
}

// parseToolCallBody parses what lies between <tool_call> and </tool_call>,
// or returns ok = false when it is malformed.
func parseToolCallBody(body string, stringArgs map[string]map[string]bool) (call ToolCall, ok bool) {
	name, args := body, ""
	if k := strings.Index(body, tagArgKey); k >= 0 {
		name, args = body[:k], body[k:]
	}
	name = strings.TrimSpace(name)
	if name == "" || hasTag(name) {
		return ToolCall{}, false
	}
	call.Name = name
	for {
		args = strings.TrimLeftFunc(args, unicode.IsSpace)
		if args == "" {
			break
		}
		var key, val string
		if key, args, ok = cutTagged(args, tagArgKey, tagArgKeyEnd); !ok {
			return ToolCall{}, false
		}
		args = strings.TrimLeftFunc(args, unicode.IsSpace)
		if val, args, ok = cutTagged(args, tagArgValue, tagArgValueEnd); !ok {
			return ToolCall{}, false
		}
		key = strings.TrimSpace(key)
		call.Arguments = setArg(call.Arguments, key, argValue(val, stringArgs[name][key]))
	}
	return call, true
}

// cutTagged cuts open + inner + close off the front of s; inner holds no tag.
func cutTagged(s, open, close string) (inner, rest string, ok bool) {
	if !strings.HasPrefix(s, open) {
		return "", "", false
	}
	s = s[len(open):]
	j := strings.Index(s, close)
	if j < 0 || hasTag(s[:j]) {
		return "", "", false
	}
	return s[:j], s[j+len(close):], true
}

func hasTag(s string) bool {
	for _, tag := range toolCallTags {
		if strings.Contains(s, tag) {
			return true
		}
	}
	return false
}

// argValue types one raw argument value (see ParseToolCalls).
func argValue(raw string, isString bool) json.RawMessage {
	if !isString && json.Valid([]byte(raw)) {
		var b bytes.Buffer
		_ = json.Compact(&b, []byte(raw)) // cannot fail: raw is valid
		return b.Bytes()
	}
	return appendPyString(nil, raw)
}

// setArg sets key to v, keeping the first position of a repeated key.
func setArg(args []Arg, key string, v json.RawMessage) []Arg {
	for i := range args {
		if args[i].Key == key {
			args[i].Value = v
			return args
		}
	}
	return append(args, Arg{Key: key, Value: v})
}

// stringArguments returns, per tool name, the arguments whose schema type is
// "string" (alone or with "null"): their values are never JSON-parsed.
func stringArguments(tools []Tool) map[string]map[string]bool {
	var m map[string]map[string]bool
	for _, tool := range tools {
		var schema struct {
			Properties map[string]struct {
				Type json.RawMessage `json:"type"`
			} `json:"properties"`
		}
		if len(tool.Parameters) == 0 || json.Unmarshal(tool.Parameters, &schema) != nil {
			continue
		}
		for key, prop := range schema.Properties {
			if isStringType(prop.Type) {
				if m == nil {
					m = map[string]map[string]bool{}
				}
				if m[tool.Name] == nil {
					m[tool.Name] = map[string]bool{}
				}
				m[tool.Name][key] = true
			}
		}
	}
	return m
}

func isStringType(t json.RawMessage) bool {
	var one string
	if json.Unmarshal(t, &one) == nil {
		return one == "string"
	}
	var many []string
	if json.Unmarshal(t, &many) != nil {
		return false
	}
	str := false
	for _, s := range many {
		switch s {
		case "string":
			str = true
		case "null":
		default:
			return false
		}
	}
	return str
}

// ArgumentsJSON returns the call's arguments as one JSON object, in order,
// in Python's json.dumps style (`{"city": "北京", "days": 3}`), as SGLang
// writes OpenAI's function.arguments.
func (tc ToolCall) ArgumentsJSON() (string, error) {
	b := []byte{'{'}
	for i, a := range tc.Arguments {
		if i > 0 {
			b = append(b, ", "...)
		}
		b = appendPyString(b, a.Key)
		b = append(b, ": "...)
		if len(a.Value) == 0 {
			b = append(b, "null"...)
			continue
		}
		var err error
		if b, err = appendPyJSON(b, a.Value); err != nil {
			return "", fmt.Errorf("tokenizer: argument %q: %w", a.Key, err)
		}
	}
	return string(append(b, '}')), nil
}

// FormatToolCall returns tc in the glm47 text format, as the chat template
// renders it in an assistant turn.
func FormatToolCall(tc ToolCall) (string, error) {
	var b strings.Builder
	b.WriteString(tagToolCall)
	b.WriteString(tc.Name)
	for _, a := range tc.Arguments {
		v, err := argValueText(a.Value)
		if err != nil {
			return "", fmt.Errorf("tokenizer: tool call %q argument %q: %w", tc.Name, a.Key, err)
		}
		b.WriteString(tagArgKey + a.Key + tagArgKeyEnd + tagArgValue + v + tagArgValueEnd)
	}
	b.WriteString(tagToolCallEnd)
	return b.String(), nil
}

// ArgumentsFromJSON reads OpenAI's function.arguments string (one JSON
// object) into ordered pairs, in the order the object lists them. Empty or
// blank text means no arguments. A repeated key keeps its first position and
// its last value.
func ArgumentsFromJSON(s string) ([]Arg, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	dec := json.NewDecoder(strings.NewReader(s))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, errors.New("tokenizer: tool call arguments are not a JSON object")
	}
	var args []Arg
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, fmt.Errorf("tokenizer: tool call arguments: %w", err)
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, fmt.Errorf("tokenizer: tool call arguments: %w", err)
		}
		args = setArg(args, tok.(string), v)
	}
	if _, err := dec.Token(); err != nil {
		return nil, fmt.Errorf("tokenizer: tool call arguments: %w", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("tokenizer: tool call arguments: trailing data after the object")
	}
	return args, nil
}
