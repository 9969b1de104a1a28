package endpoints

import (
	"bytes"
	"encoding/json"
	"math"
	"strconv"
	"testing"
	"unicode/utf8"
)

func TestParseChunkReadsWhatServersSend(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		in   string
		want Chunk
	}{
		{
			name: "SGLang role chunk has no content",
			in:   `{"id":"1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}],"usage":null}`,
			want: Chunk{Choices: 1},
		},
		{
			name: "content delta",
			in:   `{"choices":[{"index":0,"delta":{"content":"Hello"},"finish_reason":null}]}`,
			want: Chunk{Content: true, ContentBytes: 5, Choices: 1},
		},
		{
			name: "reasoning_content counts as content (SGLang, DeepSeek)",
			in:   `{"choices":[{"delta":{"content":null,"reasoning_content":"hm"}}]}`,
			want: Chunk{Content: true, Reasoning: true, ContentBytes: 2, Choices: 1},
		},
		{
			name: "reasoning counts as content (vLLM, ollama)",
			in:   `{"choices":[{"delta":{"reasoning":"abc"}}]}`,
			want: Chunk{Content: true, Reasoning: true, ContentBytes: 3, Choices: 1},
		},
		{
			name: "an empty reasoning beside content is no reasoning",
			in:   `{"choices":[{"delta":{"content":"a","reasoning_content":"","reasoning":null}}]}`,
			want: Chunk{Content: true, Answer: true, ContentBytes: 1, Choices: 1},
		},
		{
			name: "completions text",
			in:   `{"choices":[{"text":" x","index":0,"finish_reason":null}]}`,
			want: Chunk{Content: true, ContentBytes: 2, Choices: 1},
		},
		{
			name: "finish with usage in the same chunk",
			in:   `{"choices":[{"delta":{},"finish_reason":"length"}],"usage":{"prompt_tokens":256,"completion_tokens":255,"total_tokens":511}}`,
			want: Chunk{Choices: 1, Finish: []byte("length"), Usage: true, PromptTokens: 256, CompletionTokens: 255},
		},
		{
			name: "include_usage final chunk has empty choices",
			in:   `{"id":"x","choices":[],"usage":{"prompt_tokens":8,"completion_tokens":3,"total_tokens":11,"prompt_tokens_details":null}}`,
			want: Chunk{Usage: true, PromptTokens: 8, CompletionTokens: 3},
		},
		{
			name: "SGLang queue-full error event",
			in:   `{"error": {"object":"error","message":"The request queue is full.","type":"SERVICE_UNAVAILABLE","param":null,"code":503}}`,
			want: Chunk{Error: true, ErrorCode: 503, ErrorType: []byte("SERVICE_UNAVAILABLE")},
		},
		{
			name: "top-level object error (vLLM)",
			in:   `{"object":"error","message":"boom","type":"BadRequestError","param":null,"code":400}`,
			want: Chunk{Error: true, ErrorCode: 400, ErrorType: []byte("BadRequestError")},
		},
		{
			name: "string error (ollama)",
			in:   `{"error":"model not found"}`,
			want: Chunk{Error: true},
		},
		{
			name: "error code given as a string",
			in:   `{"error":{"message":"overloaded","code":"503"}}`,
			want: Chunk{Error: true, ErrorCode: 503},
		},
		{
			name: "null error is no error",
			in:   `{"error":null,"choices":[{"delta":{"content":"a"}}]}`,
			want: Chunk{Content: true, ContentBytes: 1, Choices: 1},
		},
		{
			name: "a key named content inside a string is not content",
			in:   `{"choices":[{"delta":{"role":"\"content\":\"x\""}}]}`,
			want: Chunk{Choices: 1},
		},
		{
			name: "escaped key is decoded",
			in:   `{"choices":[{"delta":{"c\u006fntent":"a"}}]}`,
			want: Chunk{Content: true, ContentBytes: 1, Choices: 1},
		},
		{
			name: "duplicate keys: last wins",
			in:   `{"choices":[{"delta":{"content":"a","content":""}}]}`,
			want: Chunk{Choices: 1},
		},
		{
			name: "several choices add up",
			in:   `{"choices":[{"delta":{"content":"ab"}},{"delta":{"content":"c"},"finish_reason":"stop"}]}`,
			want: Chunk{Content: true, ContentBytes: 3, Choices: 2, Finish: []byte("stop")},
		},
		{
			name: "a negative completion count is not a count",
			in:   `{"choices":[],"usage":{"prompt_tokens":8,"completion_tokens":-5}}`,
			want: Chunk{Usage: true, PromptTokens: 8, BadUsage: []byte("completion_tokens"), BadValue: []byte("-5")},
		},
		{
			name: "1e18 prompt tokens is not a count (it used to become 0 silently)",
			in:   `{"choices":[],"usage":{"prompt_tokens":1e18,"completion_tokens":3}}`,
			want: Chunk{Usage: true, CompletionTokens: 3, BadUsage: []byte("prompt_tokens"), BadValue: []byte("1e18")},
		},
		{
			name: "a fraction is not a count",
			in:   `{"usage":{"prompt_tokens":8,"completion_tokens":2.5}}`,
			want: Chunk{Usage: true, PromptTokens: 8, BadUsage: []byte("completion_tokens"), BadValue: []byte("2.5")},
		},
		{
			name: "a string is not a count",
			in:   `{"usage":{"prompt_tokens":"8","completion_tokens":2}}`,
			want: Chunk{Usage: true, CompletionTokens: 2, BadUsage: []byte("prompt_tokens"), BadValue: []byte(`"8"`)},
		},
		{
			name: "a count past MaxUsageCount is absurd",
			in:   `{"usage":{"prompt_tokens":8,"completion_tokens":100000001}}`,
			want: Chunk{Usage: true, PromptTokens: 8, BadUsage: []byte("completion_tokens"), BadValue: []byte("100000001")},
		},
		{
			name: "usage without completion_tokens",
			in:   `{"usage":{"prompt_tokens":8}}`,
			want: Chunk{Usage: true, PromptTokens: 8, BadUsage: []byte("completion_tokens")},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			wantChunk(t, tc.in, tc.want)
		})
	}
}

// usage.completion_tokens_details.reasoning_tokens is read as a count: a
// sound one is kept beside the usage it came in, null or a missing count or
// breakdown is no report (0, usage sound), and anything else names the
// nested field in BadUsage with its raw value, as an unsound count does.
func TestParseChunkReadsReasoningTokens(t *testing.T) {
	t.Parallel()
	const bad = "completion_tokens_details.reasoning_tokens"
	usage := func(details string) string {
		return `{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"o4-mini","choices":[],"usage":{"prompt_tokens":9,"completion_tokens":40,"total_tokens":49` + details + `}}`
	}
	for _, tc := range []struct {
		name string
		in   string
		want Chunk
	}{
		{"OpenAI's reasoning model: 16 of 40 hidden", usage(`,"completion_tokens_details":{"reasoning_tokens":16,"audio_tokens":0,"accepted_prediction_tokens":0,"rejected_prediction_tokens":0}`),
			Chunk{Usage: true, PromptTokens: 9, CompletionTokens: 40, ReasoningTokens: 16}},
		{"the breakdown before completion_tokens", `{"usage":{"completion_tokens_details":{"reasoning_tokens":3},"prompt_tokens":9,"completion_tokens":5}}`,
			Chunk{Usage: true, PromptTokens: 9, CompletionTokens: 5, ReasoningTokens: 3}},
		{"OpenAI's model that does not reason: 0", usage(`,"completion_tokens_details":{"reasoning_tokens":0}`),
			Chunk{Usage: true, PromptTokens: 9, CompletionTokens: 40}},
		{"null is no report", usage(`,"completion_tokens_details":{"reasoning_tokens":null}`),
			Chunk{Usage: true, PromptTokens: 9, CompletionTokens: 40}},
		{"a breakdown without it is no report", usage(`,"completion_tokens_details":{"audio_tokens":0}`),
			Chunk{Usage: true, PromptTokens: 9, CompletionTokens: 40}},
		{"a null breakdown (vLLM) is no report", usage(`,"completion_tokens_details":null`),
			Chunk{Usage: true, PromptTokens: 9, CompletionTokens: 40}},
		{"no breakdown is no report", usage(``),
			Chunk{Usage: true, PromptTokens: 9, CompletionTokens: 40}},
		{"SGLang's own usage.reasoning_tokens is not read", usage(`,"reasoning_tokens":16`),
			Chunk{Usage: true, PromptTokens: 9, CompletionTokens: 40}},
		{"the last of duplicate counts wins", usage(`,"completion_tokens_details":{"reasoning_tokens":3,"reasoning_tokens":16}`),
			Chunk{Usage: true, PromptTokens: 9, CompletionTokens: 40, ReasoningTokens: 16}},
		{"negative", usage(`,"completion_tokens_details":{"reasoning_tokens":-16}`),
			Chunk{Usage: true, PromptTokens: 9, CompletionTokens: 40, BadUsage: []byte(bad), BadValue: []byte("-16")}},
		{"a fraction", usage(`,"completion_tokens_details":{"reasoning_tokens":16.5}`),
			Chunk{Usage: true, PromptTokens: 9, CompletionTokens: 40, BadUsage: []byte(bad), BadValue: []byte("16.5")}},
		{"an exponent", usage(`,"completion_tokens_details":{"reasoning_tokens":1e3}`),
			Chunk{Usage: true, PromptTokens: 9, CompletionTokens: 40, BadUsage: []byte(bad), BadValue: []byte("1e3")}},
		{"a string", usage(`,"completion_tokens_details":{"reasoning_tokens":"16"}`),
			Chunk{Usage: true, PromptTokens: 9, CompletionTokens: 40, BadUsage: []byte(bad), BadValue: []byte(`"16"`)}},
		{"an object", usage(`,"completion_tokens_details":{"reasoning_tokens":{"n":16}}`),
			Chunk{Usage: true, PromptTokens: 9, CompletionTokens: 40, BadUsage: []byte(bad), BadValue: []byte(`{"n":16}`)}},
		{"past MaxUsageCount", usage(`,"completion_tokens_details":{"reasoning_tokens":100000001}`),
			Chunk{Usage: true, PromptTokens: 9, CompletionTokens: 40, BadUsage: []byte(bad), BadValue: []byte("100000001")}},
		{"a chunk without usage carries none", `{"choices":[{"delta":{"content":"a"}}],"usage":null}`,
			Chunk{Content: true, ContentBytes: 1, Choices: 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			wantChunk(t, tc.in, tc.want)
		})
	}
}

func TestParseChunkRejectsWhatIsNotAnObject(t *testing.T) {
	t.Parallel()
	for _, in := range []string{"", "[DONE]", "[]", `{"a":1}x`, `{"a":}`, `{"a":01}`, `{"a":"\x01"}`, `{"a" 1}`, `{"a":tru}`, `{"a":"\q"}`} {
		var c Chunk
		if err := ParseChunk([]byte(in), &c); err == nil {
			t.Errorf("ParseChunk(%q) accepted it", in)
		}
	}
}

func TestParseChunkDoesNotAllocate(t *testing.T) {
	for _, in := range []string{
		`{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":" token","reasoning_content":null},"logprobs":null,"finish_reason":null}],"usage":null}`,
		`{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"reasoning":" hm"},"finish_reason":null}]}`,
		`{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"m","choices":[],"usage":{"prompt_tokens":9,"completion_tokens":40,"completion_tokens_details":{"reasoning_tokens":16,"audio_tokens":0}}}`,
		`{"choices":[],"usage":{"prompt_tokens":9,"completion_tokens":40,"completion_tokens_details":{"reasoning_tokens":-1}}}`,
	} {
		var c Chunk
		b := []byte(in)
		allocs := testing.AllocsPerRun(200, func() {
			if err := ParseChunk(b, &c); err != nil {
				t.Fatal(err)
			}
		})
		if allocs != 0 {
			t.Fatalf("ParseChunk allocates %.1f times per event %s", allocs, in)
		}
	}
}

// wantChunk parses in and fails t unless it gives want.
func wantChunk(t *testing.T, in string, want Chunk) {
	t.Helper()
	var c Chunk
	if err := ParseChunk([]byte(in), &c); err != nil {
		t.Fatalf("ParseChunk: %v", err)
	}
	if !chunkEqual(c, want) {
		t.Fatalf("got %+v\nwant %+v", c, want)
	}
}

func chunkEqual(a, b Chunk) bool {
	return a.Content == b.Content && a.Reasoning == b.Reasoning && a.ContentBytes == b.ContentBytes && a.Choices == b.Choices &&
		a.ReasoningTokens == b.ReasoningTokens &&
		string(a.Finish) == string(b.Finish) && a.Usage == b.Usage && a.PromptTokens == b.PromptTokens &&
		a.CompletionTokens == b.CompletionTokens && a.Error == b.Error && a.ErrorCode == b.ErrorCode &&
		string(a.ErrorType) == string(b.ErrorType) &&
		string(a.BadUsage) == string(b.BadUsage) && string(a.BadValue) == string(b.BadValue) &&
		a.Cached == b.Cached && a.CachedReported == b.CachedReported
}

// refChunk derives the fields of Chunk that survive decoding from the
// encoding/json view m of the same input in.
func refChunk(m map[string]any, in []byte) (c Chunk) {
	if ch, ok := m["choices"].([]any); ok {
		c.Choices = len(ch)
		later := refLaterDeltas(in, len(ch))
		for i, e := range ch {
			o, ok := e.(map[string]any)
			if !ok {
				continue
			}
			n, answer, reasoning, tool := 0, 0, 0, 0
			if s, ok := o["text"].(string); ok {
				n += len(s)
				answer += len(s)
			}
			if key := later[i]; key != "" {
				d, _ := o[key].(map[string]any)
				for _, k := range []string{"content", "reasoning_content", "reasoning"} {
					if s, ok := d[k].(string); ok {
						n += len(s)
						if k == "content" {
							answer += len(s)
						} else {
							reasoning += len(s)
						}
					}
				}
				tool += refToolCalls(d)
			}
			n += tool
			answer += tool
			if tool > 0 {
				c.ToolCall = true
			}
			if n > 0 {
				c.Content = true
			}
			if answer > 0 {
				c.Answer = true
			}
			if reasoning > 0 {
				c.Reasoning = true
			}
			if s, ok := o["finish_reason"].(string); ok && s != "" {
				c.Finish = []byte(s)
			}
		}
	}
	if u, ok := m["usage"].(map[string]any); ok {
		c.Usage = true
		c.PromptTokens, c.CompletionTokens = refCount(u["prompt_tokens"]), refCount(u["completion_tokens"])
		_, hasCompletion := u["completion_tokens"]
		if !hasCompletion || !refSound(u["prompt_tokens"]) || !refSound(u["completion_tokens"]) {
			c.BadUsage = []byte("some")
		}
		if d, ok := u["completion_tokens_details"].(map[string]any); ok {
			c.ReasoningTokens = refCount(d["reasoning_tokens"])
			if !refSound(d["reasoning_tokens"]) {
				c.BadUsage = []byte("some")
			}
		}
		c.Cached, c.CachedReported = refCached(u, m)
	}
	switch e := m["error"].(type) {
	case string:
		c.Error = true
	case map[string]any:
		c.Error = true
		c.ErrorCode = refCode(e)
	case nil:
	default:
		c.Error = true
	}
	if o, _ := m["object"].(string); o == "error" {
		c.Error = true
		if _, isObj := m["error"].(map[string]any); !isObj {
			c.ErrorCode = refCode(m)
		}
	}
	return c
}

// refSound reports whether a decoded usage count is sound: absent, or a
// whole number from 0 to MaxUsageCount. (encoding/json cannot tell 5 from
// 5.0; the fuzz comparison accepts the scanner's stricter "5.0 is bad".)
func refSound(v any) bool {
	if v == nil {
		return true
	}
	f, ok := v.(float64)
	return ok && f >= 0 && f <= MaxUsageCount && f == math.Trunc(f)
}

// refCached is Chunk.Cached by the documented rule, read from the
// encoding/json view: the first of details.cached_tokens,
// prompt_cache_hit_tokens and timings.cache_n that is present and not null
// decides, reported when it and prompt_tokens are whole numbers from 0 to
// MaxUsageCount and it is no more than prompt_tokens.
func refCached(u, m map[string]any) (int, bool) {
	var candidates []any
	if d, ok := u["prompt_tokens_details"].(map[string]any); ok {
		candidates = append(candidates, d["cached_tokens"])
	}
	candidates = append(candidates, u["prompt_cache_hit_tokens"])
	if tm, ok := m["timings"].(map[string]any); ok {
		candidates = append(candidates, tm["cache_n"])
	}
	for _, v := range candidates {
		if v == nil {
			continue
		}
		p, hasPrompt := u["prompt_tokens"]
		if _, isNum := v.(float64); !isNum || !refSound(v) || !hasPrompt || p == nil || !refSound(p) || refCount(v) > refCount(p) {
			return 0, false
		}
		return refCount(v), true
	}
	return 0, false
}

func refCount(v any) int {
	if f, ok := v.(float64); ok && refSound(v) {
		return int(f)
	}
	return 0
}

func refInt(v any) int {
	if f, ok := v.(float64); ok && math.Abs(f) <= 1e15 {
		return int(f)
	}
	return 0
}

// refCode reads "code" or "status", whichever comes last in the scanner's
// order; the fuzz comparison only checks it when just one is present.
func refCode(m map[string]any) int {
	for _, k := range []string{"code", "status"} {
		switch v := m[k].(type) {
		case float64:
			return refInt(v)
		case string:
			if n, err := strconv.Atoi(v); err == nil && len(v) <= 15 {
				return n
			}
		}
	}
	return 0
}

// refLaterDeltas names, for each of the n entries of in's choices, the
// later of its keys delta and message ("" for neither): the scanner reads a choice's
// text from that one alone, as one field of two spellings whose last key
// wins. A map keeps no order, so the keys are read from the tokens.
func refLaterDeltas(in []byte, n int) []string {
	out := make([]string, n)
	var top map[string]json.RawMessage
	var choices []json.RawMessage
	if json.Unmarshal(in, &top) != nil || json.Unmarshal(top["choices"], &choices) != nil || len(choices) != n {
		return out
	}
	for i, raw := range choices {
		dec := json.NewDecoder(bytes.NewReader(raw))
		if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
			continue
		}
		for dec.More() {
			key, _ := dec.Token()
			var v json.RawMessage
			if dec.Decode(&v) != nil {
				break
			}
			if key == "delta" || key == "message" {
				out[i] = key.(string)
			}
		}
	}
	return out
}

// refToolCalls is the decoded length of the function names and arguments
// of a delta's tool_calls entries and function_call.
func refToolCalls(d map[string]any) int {
	fn := func(f any) int {
		m, _ := f.(map[string]any)
		n := 0
		for _, k := range []string{"name", "arguments"} {
			if s, ok := m[k].(string); ok {
				n += len(s)
			}
		}
		return n
	}
	n := fn(d["function_call"])
	calls, _ := d["tool_calls"].([]any)
	for _, e := range calls {
		if m, ok := e.(map[string]any); ok {
			n += fn(m["function"])
		}
	}
	return n
}

// FuzzParseChunk checks the scanner against encoding/json: whatever
// encoding/json accepts as an object, the scanner accepts and reads alike;
// whatever the scanner accepts is valid JSON.
func FuzzParseChunk(f *testing.F) {
	for _, s := range []string{
		`{"choices":[{"delta":{"content":"a"},"finish_reason":"stop"}],"usage":{"prompt_tokens":1,"completion_tokens":2}}`,
		`{"error":{"code":503,"type":"x"}}`, `{"object":"error","code":"429"}`, `{"choices":[{"text":"\u00e9"}]}`,
		`{"choices":null,"usage":null}`, `{"a":[1,-2.5e3,true,false,null,{"b":"c"}]}`,
		"{\"choices\":[{\"delta\":{\"content\":\"\xff\xfe\"}}]}", "{\"k\xc3\":1}", "{\"a\":1}\xe2\x82", `{"choices":[{"delta":{"content":"é ✓ 𝄞"}}]}`,
		`{"choices":[],"usage":{"prompt_tokens":2006,"completion_tokens":300,"prompt_tokens_details":{"cached_tokens":1920}}}`,
		`{"usage":{"prompt_tokens":8,"completion_tokens":1,"prompt_tokens_details":null,"prompt_cache_hit_tokens":4}}`,
		`{"usage":{"completion_tokens":1,"prompt_tokens":8},"timings":{"cache_n":9,"prompt_n":1}}`,
		`{"usage":{"prompt_tokens":8,"completion_tokens":1,"prompt_tokens_details":{"cached_tokens":"4"}},"timings":{"cache_n":4}}`,
		`{"choices":[],"usage":{"prompt_tokens":9,"completion_tokens":40,"completion_tokens_details":{"reasoning_tokens":16,"audio_tokens":0}}}`,
		`{"usage":{"completion_tokens":4,"completion_tokens_details":{"reasoning_tokens":-1}},"choices":[{"delta":{"reasoning":"x"}}]}`,
		// Tool calls: OpenAI's name chunk, SGLang's fragment, llama.cpp's
		// empty arguments, the legacy function_call, and odd values.
		`{"choices":[{"delta":{"content":null,"function_call":null,"role":"assistant","tool_calls":[{"index":0,"id":"call_1","function":{"arguments":"","name":"get_weather"},"type":"function"}]},"finish_reason":null,"index":0}]}`,
		`{"choices":[{"index":0,"delta":{"role":null,"content":null,"tool_calls":[{"id":null,"index":0,"type":"function","function":{"name":null,"arguments":"\"x\""}}]}}],"usage":null}`,
		`{"choices":[{"delta":{"tool_calls":[{"index":0,"function":{"arguments":""}},{"index":1,"function":{"name":"g"}}]},"finish_reason":"tool_calls"}]}`,
		`{"choices":[{"delta":{"function_call":{"name":"f","arguments":"{}"}}}]}`,
		`{"choices":[{"delta":{"tool_calls":[{"function":{"arguments":{"a":1}},"function":null},5,null],"tool_calls":{"function":{"name":"f"}}}}]}`,
		// A choice with both delta and message: the later one is read.
		`{"choices":[{"delta":{"tool_calls":[{"function":{"name":"f"}}]},"message":null}]}`,
		`{"choices":[{"message":{"content":"a"},"index":0,"delta":{"reasoning":"b"}},{"delta":{},"message":{"function_call":{"name":"f"}}}]}`,
		`{"usage":""}`, `{"choices":[{"delta":{"content":"a"}}],"usage":[1]}`, `{"choices":"","usage":{"completion_tokens":1}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		var c Chunk
		err := ParseChunk(in, &c)
		if err == nil && !json.Valid(in) {
			t.Fatalf("scanner accepted invalid JSON %q", in)
		}
		// encoding/json takes invalid UTF-8 (as U+FFFD); the scanner
		// refuses it, so the client counts such an event as malformed.
		if !utf8.Valid(in) {
			if err == nil {
				t.Fatalf("scanner accepted invalid UTF-8 %q", in)
			}
			return
		}
		var m map[string]any
		if json.Unmarshal(in, &m) != nil || m == nil {
			return
		}
		if err != nil {
			t.Fatalf("scanner rejected %q: %v", in, err)
		}
		want := refChunk(m, in)
		if c.Content != want.Content || c.Answer != want.Answer || c.Choices != want.Choices || c.Usage != want.Usage || c.Error != want.Error {
			t.Fatalf("%q: got %+v, want %+v", in, c, want)
		}
		// The reference cannot tell 5 from 5.0 (nor an explicit null from a
		// missing count), so it checks soundness one way: what it calls
		// unsound, the scanner must too; and counts the scanner took agree.
		if want.BadUsage != nil && c.BadUsage == nil {
			t.Fatalf("%q: usage taken as sound (%d/%d)", in, c.PromptTokens, c.CompletionTokens)
		}
		if c.Usage && c.BadUsage == nil && (c.PromptTokens != want.PromptTokens || c.CompletionTokens != want.CompletionTokens || c.ReasoningTokens != want.ReasoningTokens) {
			t.Fatalf("%q: usage %d/%d (%d reasoning), want %d/%d (%d)", in, c.PromptTokens, c.CompletionTokens, c.ReasoningTokens, want.PromptTokens, want.CompletionTokens, want.ReasoningTokens)
		}
		if c.ToolCall != want.ToolCall {
			t.Fatalf("%q: tool call %v, want %v", in, c.ToolCall, want.ToolCall)
		}
		if c.Reasoning != want.Reasoning {
			t.Fatalf("%q: reasoning %v, want %v", in, c.Reasoning, want.Reasoning)
		}
		// Cached tokens, one way for the same reason: what the scanner
		// reports, the reference reports alike.
		if c.CachedReported && (!want.CachedReported || c.Cached != want.Cached) {
			t.Fatalf("%q: cached %d reported, reference says %d (%v)", in, c.Cached, want.Cached, want.CachedReported)
		}
		if !c.Usage && c.CachedReported {
			t.Fatalf("%q: cached reported without usage", in)
		}
	})
}

func TestParseChunkBoundsNesting(t *testing.T) {
	t.Parallel()
	deep := make([]byte, 0, 40010)
	deep = append(deep, `{"a":`...)
	for range 20000 {
		deep = append(deep, '[')
	}
	var c Chunk
	if err := ParseChunk(deep, &c); err == nil {
		t.Fatal("accepted 20000 levels of nesting")
	}
}

// A usage that is not an object (a string, a number, an array) carries no
// count, as null does, and costs the event nothing: its tool call (or
// content) is still a content event, not a malformed line. Choices that
// are not an array are none, and leave the event its usage.
func TestAUsageOfAnotherKindLeavesTheEventItsContent(t *testing.T) {
	t.Parallel()
	for _, u := range []string{`""`, `0`, `[]`, `true`, `"{\"completion_tokens\":1}"`} {
		in := `{"choices":[{"delta":{"tool_calls":[{"index":0,"function":{"arguments":"x"}}]}}],"usage":` + u + `}`
		var ch Chunk
		if err := ParseChunk([]byte(in), &ch); err != nil || !ch.Content || !ch.ToolCall || ch.Usage || ch.BadUsage != nil {
			t.Errorf("usage %s: %v, content %v, tool call %v, usage %v (%s); want a tool-call event and no usage", u, err, ch.Content, ch.ToolCall, ch.Usage, ch.BadUsage)
		}
	}
	for _, v := range []string{`""`, `{}`, `1`} {
		var ch Chunk
		in := `{"choices":` + v + `,"usage":{"prompt_tokens":2,"completion_tokens":1}}`
		if err := ParseChunk([]byte(in), &ch); err != nil || ch.Choices != 0 || ch.Content || !ch.Usage || ch.CompletionTokens != 1 {
			t.Errorf("choices %s: %v, %d choices, usage %v %d; want none, usage 1", v, err, ch.Choices, ch.Usage, ch.CompletionTokens)
		}
	}
}
