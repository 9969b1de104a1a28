package tokenizer

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

// parsed is a tool call as the tests compare it: name and arguments JSON.
type parsed struct{ name, args string }

func TestParseToolCalls(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name        string
		text        string
		tools       []Tool
		want        []parsed
		wantContent string
	}{
		{
			name:        "text without calls is all content",
			text:        "Just an answer, with <b>tags</b>.",
			wantContent: "Just an answer, with <b>tags</b>.",
		},
		{
			name:        "one call with typed values, text before and after",
			text:        `Checking.<tool_call>get_weather<arg_key>city</arg_key><arg_value>北京</arg_value><arg_key>date</arg_key><arg_value>2024-06-27</arg_value><arg_key>days</arg_key><arg_value>3</arg_value></tool_call> Done.`,
			want:        []parsed{{"get_weather", `{"city": "北京", "date": "2024-06-27", "days": 3}`}},
			wantContent: "Checking. Done.",
		},
		{
			name:        "two calls back to back, one without arguments",
			text:        `<tool_call>now</tool_call><tool_call>add<arg_key>xs</arg_key><arg_value>[1, 2.5]</arg_value><arg_key>opts</arg_key><arg_value>{"round":true}</arg_value></tool_call>`,
			want:        []parsed{{"now", `{}`}, {"add", `{"xs": [1, 2.5], "opts": {"round": true}}`}},
			wantContent: "",
		},
		{
			name:        "a JSON string value is that string; other text is raw",
			text:        `<tool_call>f<arg_key>a</arg_key><arg_value>"quoted"</arg_value><arg_key>b</arg_key><arg_value>say "hi"\n</arg_value></tool_call>`,
			want:        []parsed{{"f", `{"a": "quoted", "b": "say \"hi\"\\n"}`}},
			wantContent: "",
		},
		{
			name: "the tool's schema keeps a string argument a string",
			text: `<tool_call>get_weather<arg_key>city</arg_key><arg_value>42</arg_value><arg_key>days</arg_key><arg_value>42</arg_value></tool_call>`,
			tools: []Tool{{Name: "get_weather", Parameters: json.RawMessage(
				`{"type":"object","properties":{"city":{"type":["string","null"]},"days":{"type":"integer"}}}`)}},
			want:        []parsed{{"get_weather", `{"city": "42", "days": 42}`}},
			wantContent: "",
		},
		{
			name:        "white space of the newline variant is allowed between tags",
			text:        "<tool_call>f\n<arg_key> k </arg_key>\n<arg_value>v</arg_value>\n</tool_call>",
			want:        []parsed{{"f", `{"k": "v"}`}},
			wantContent: "",
		},
		{
			name:        "a repeated key keeps its first place and its last value",
			text:        "<tool_call>f<arg_key>a</arg_key><arg_value>1</arg_value><arg_key>b</arg_key><arg_value>2</arg_value><arg_key>a</arg_key><arg_value>3</arg_value></tool_call>",
			want:        []parsed{{"f", `{"a": 3, "b": 2}`}},
			wantContent: "",
		},
		{
			name:        "an unclosed block is content",
			text:        "x<tool_call>f<arg_key>a</arg_key><arg_value>1</arg_value>",
			wantContent: "x<tool_call>f<arg_key>a</arg_key><arg_value>1</arg_value>",
		},
		{
			name:        "an empty name is malformed",
			text:        "<tool_call> <arg_key>a</arg_key><arg_value>1</arg_value></tool_call>",
			wantContent: "<tool_call> <arg_key>a</arg_key><arg_value>1</arg_value></tool_call>",
		},
		{
			name:        "text between arguments is malformed",
			text:        "<tool_call>f<arg_key>a</arg_key><arg_value>1</arg_value>junk</tool_call>",
			wantContent: "<tool_call>f<arg_key>a</arg_key><arg_value>1</arg_value>junk</tool_call>",
		},
		{
			name:        "a key without a value is malformed",
			text:        "<tool_call>f<arg_key>a</arg_key></tool_call>",
			wantContent: "<tool_call>f<arg_key>a</arg_key></tool_call>",
		},
		{
			name:        "a tag inside a value is malformed",
			text:        "<tool_call>f<arg_key>a</arg_key><arg_value>1<arg_key></arg_value></tool_call>",
			wantContent: "<tool_call>f<arg_key>a</arg_key><arg_value>1<arg_key></arg_value></tool_call>",
		},
		{
			name:        "a malformed block does not hide a good one after it",
			text:        "<tool_call>broken<tool_call>ok<arg_key>k</arg_key><arg_value>v</arg_value></tool_call>tail",
			want:        []parsed{{"ok", `{"k": "v"}`}},
			wantContent: "<tool_call>brokentail",
		},
		{
			name:        "a stray closing tag stays content",
			text:        "a</tool_call>b<tool_call>g</tool_call>",
			want:        []parsed{{"g", `{}`}},
			wantContent: "a</tool_call>b",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			calls, content := ParseToolCalls(tt.text, tt.tools)
			var got []parsed
			for _, c := range calls {
				args, err := c.ArgumentsJSON()
				if err != nil {
					t.Fatal(err)
				}
				if !json.Valid([]byte(args)) {
					t.Fatalf("arguments %q are not JSON", args)
				}
				got = append(got, parsed{c.Name, args})
			}
			if len(got) != len(tt.want) {
				t.Fatalf("calls %q, want %q", got, tt.want)
			}
			for i := range got {
				if got[i] != tt.want[i] {
					t.Errorf("call %d = %q, want %q", i, got[i], tt.want[i])
				}
			}
			if content != tt.wantContent {
				t.Errorf("content %q, want %q", content, tt.wantContent)
			}
		})
	}
}

func TestFormatToolCallIsWhatTheParserReads(t *testing.T) {
	t.Parallel()
	tc := ToolCall{Name: "get_weather", Arguments: argsOf(`{"city":"北京","days":3,"opts":{"a":[1,"x"]}}`)}
	text, err := FormatToolCall(tc)
	if err != nil {
		t.Fatal(err)
	}
	want := `<tool_call>get_weather<arg_key>city</arg_key><arg_value>北京</arg_value><arg_key>days</arg_key><arg_value>3</arg_value>` +
		`<arg_key>opts</arg_key><arg_value>{"a": [1, "x"]}</arg_value></tool_call>`
	if text != want {
		t.Fatalf("FormatToolCall = %q, want %q", text, want)
	}
	calls, content := ParseToolCalls(text, nil)
	if len(calls) != 1 || content != "" {
		t.Fatalf("parsed %v, content %q", calls, content)
	}
	got, _ := calls[0].ArgumentsJSON()
	orig, _ := tc.ArgumentsJSON()
	if got != orig {
		t.Fatalf("arguments after a round trip %s, want %s", got, orig)
	}
}

// clean reports whether s can be a name, key, value or surrounding text in
// a well-formed block the fuzzer builds: no tag, and for names and keys no
// white space at the ends (the parser trims it).
func clean(s string, trimmed bool) bool {
	return !hasTag(s) && (!trimmed || strings.TrimFunc(s, unicode.IsSpace) == s)
}

func FuzzToolCallParser(f *testing.F) {
	f.Add("Checking.", "get_weather", "city", "北京", " Done.", "<tool_call>x<arg_key>a</arg_key><arg_value>1</arg_value></tool_call>")
	f.Add("", "f", "n", "42", "", "<tool_call><tool_call>f</tool_call>")
	f.Add("<tool", "f", "k", `{"a": [1]}`, "call>", "</arg_value></tool_call><arg_key>")
	f.Add("a", "b", "", "", "c", "<tool_call>f\n<arg_key>k</arg_key> <arg_value>v</arg_value>\n</tool_call>")
	f.Fuzz(func(t *testing.T, prefix, name, key, value, suffix, junk string) {
		// Any text: no panic, valid JSON arguments, content no longer than
		// the text, and nothing found without an opening tag.
		calls, content := ParseToolCalls(junk, nil)
		for _, c := range calls {
			if args, err := c.ArgumentsJSON(); err != nil || !json.Valid([]byte(args)) {
				t.Fatalf("arguments %q, %v from %q", args, err, junk)
			}
		}
		if len(content) > len(junk) || len(calls) > strings.Count(junk, tagToolCall) {
			t.Fatalf("%d calls and content %q from %q", len(calls), content, junk)
		}
		if len(calls) == 0 && content != junk {
			t.Fatalf("no calls but content %q differs from %q", content, junk)
		}

		// A well-formed block between clean text: the content is the text
		// around it, and re-rendering the call gives the block back exactly
		// (the schema says the value is a string, so it stays raw).
		// Model output reaches the parser through the detokenizer, so it is
		// valid UTF-8; other text would not survive re-rendering as JSON.
		for _, s := range []string{prefix, name, key, value, suffix} {
			if !utf8.ValidString(s) {
				return
			}
		}
		if name == "" || !clean(prefix, false) || !clean(suffix, false) || !clean(name, true) ||
			!clean(key, true) || !clean(value, false) || hasTag(prefix+suffix) {
			return
		}
		block := tagToolCall + name + tagArgKey + key + tagArgKeyEnd + tagArgValue + value + tagArgValueEnd + tagToolCallEnd
		tools := []Tool{{Name: name, Parameters: json.RawMessage(`{"properties": {` + string(appendPyString(nil, key)) + `: {"type": "string"}}}`)}}
		calls, content = ParseToolCalls(prefix+block+suffix, tools)
		if len(calls) != 1 || content != prefix+suffix {
			t.Fatalf("parsed %d calls, content %q, from %q", len(calls), content, prefix+block+suffix)
		}
		again, err := FormatToolCall(calls[0])
		if err != nil {
			t.Fatal(err)
		}
		if again != block {
			t.Fatalf("re-rendered %q, want %q", again, block)
		}
		// Without a schema, a value that is not JSON stays the raw string.
		calls, _ = ParseToolCalls(prefix+block+suffix, nil)
		if len(calls) != 1 {
			t.Fatalf("parsed %d calls without a schema", len(calls))
		}
		if !json.Valid([]byte(value)) {
			var s string
			if err := json.Unmarshal(calls[0].Arguments[0].Value, &s); err != nil || s != value {
				t.Fatalf("value %q came back as %s", value, calls[0].Arguments[0].Value)
			}
		}
	})
}

// BenchmarkParseToolCallsUnclosed measures the parser on output that is all
// opening tags (8192 of them, the longest decode of a phase), the case that
// would be quadratic without the jump to the last opening tag:
// go test ./engine/tokenizer -bench ParseToolCalls -benchmem
func BenchmarkParseToolCallsUnclosed(b *testing.B) {
	text := strings.Repeat(tagToolCall+"x", 8192) + tagToolCallEnd
	for b.Loop() {
		ParseToolCalls(text, nil)
	}
}
