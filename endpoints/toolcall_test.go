package endpoints

import (
	"bytes"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/glmbench/glmbench/endpoints/sse"
	"github.com/glmbench/glmbench/reports/schema"
)

// Each server's tool-call chunks, as its source writes them, give a content
// event that is the answer and a tool call, with ContentBytes the raw length
// of the name and arguments strings (escapes included); a chunk that opens a
// call with neither (arguments "" and no name) gives no event.
func TestToolCallChunksAreAnswerEvents(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name    string
		chunk   string
		content bool // and Answer and ToolCall alike
		bytes   int
	}{
		// OpenAI (a gpt-5-mini stream as the openai SDK dumps it): the
		// first chunk carries id, type, the name and arguments "".
		{"openai, the name chunk", `{"choices":[{"delta":{"content":null,"function_call":null,"refusal":null,"role":"assistant","tool_calls":[{"index":0,"id":"call_TM","function":{"arguments":"","name":"get_weather"},"type":"function"}]},"finish_reason":null,"index":0}],"usage":null}`, true, len("get_weather")},
		{"openai, an arguments fragment", `{"choices":[{"delta":{"content":null,"function_call":null,"refusal":null,"role":null,"tool_calls":[{"index":0,"id":null,"function":{"arguments":"{\"","name":null},"type":null}]},"finish_reason":null,"index":0}]}`, true, len(`{\"`)},
		{"openai, the finish chunk", `{"choices":[{"delta":{},"finish_reason":"tool_calls","index":0}]}`, false, 0},
		// vLLM (DeltaToolCall, dumped with exclude_unset): a named
		// tool_choice's first chunk holds the name and the first token.
		{"vllm, the name chunk", `{"id":"chatcmpl-1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"tool_calls":[{"id":"chatcmpl-tool-1","type":"function","index":0,"function":{"name":"f","arguments":"{\""}}]},"logprobs":null,"finish_reason":null}]}`, true, len(`f{\"`)},
		{"vllm, an arguments fragment", `{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"city"}}]},"finish_reason":null}]}`, true, 4},
		// SGLang (model_dump_json: every field written, null or not).
		{"sglang, the name chunk", `{"choices":[{"index":0,"delta":{"role":null,"content":null,"reasoning_content":null,"tool_calls":[{"id":"call_0","index":0,"type":"function","function":{"name":"f","arguments":""}}]},"logprobs":null,"finish_reason":null,"matched_stop":null}],"usage":null}`, true, 1},
		{"sglang, an arguments fragment", `{"choices":[{"index":0,"delta":{"role":null,"content":null,"reasoning_content":null,"tool_calls":[{"id":null,"index":0,"type":"function","function":{"name":null,"arguments":"\"x\""}}]},"finish_reason":null}],"usage":null}`, true, len(`\"x\"`)},
		{"sglang, a content chunk with tool_calls null", `{"choices":[{"index":0,"delta":{"role":null,"content":"hi","reasoning_content":null,"tool_calls":null},"finish_reason":null}]}`, true, 2},
		// llama.cpp (common_chat_msg_diff_to_json_oaicompat: arguments
		// always written).
		{"llama.cpp, the name chunk", `{"choices":[{"finish_reason":null,"index":0,"delta":{"tool_calls":[{"index":0,"id":"abc","type":"function","function":{"name":"f","arguments":""}}]}}],"object":"chat.completion.chunk"}`, true, 1},
		{"llama.cpp, an arguments fragment", `{"choices":[{"finish_reason":null,"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"}"}}]}}]}`, true, 1},
		// The legacy function_call.
		{"function_call, the name", `{"choices":[{"delta":{"role":"assistant","content":null,"function_call":{"name":"f","arguments":""}}}]}`, true, 1},
		{"function_call, arguments", `{"choices":[{"delta":{"function_call":{"arguments":"{}"}}}]}`, true, 2},
		// Nothing to count.
		{"no name and arguments empty", `{"choices":[{"delta":{"tool_calls":[{"index":0,"function":{"arguments":""}}]}}]}`, false, 0},
		{"function null", `{"choices":[{"delta":{"tool_calls":[{"index":0,"id":"x","type":"function","function":null}]}}]}`, false, 0},
		{"arguments not a string", `{"choices":[{"delta":{"tool_calls":[{"index":0,"function":{"arguments":{"a":1}}}]}}]}`, false, 0},
		{"tool_calls not an array", `{"choices":[{"delta":{"tool_calls":{"function":{"name":"f"}}}}]}`, false, 0},
		{"the last tool_calls key wins", `{"choices":[{"delta":{"tool_calls":[{"function":{"name":"f"}}],"tool_calls":[]}}]}`, false, 0},
		{"the last function key wins", `{"choices":[{"delta":{"tool_calls":[{"function":{"name":"abc"},"function":{"name":"f"}}]}}]}`, true, 1},
	} {
		var ch Chunk
		if err := ParseChunk([]byte(c.chunk), &ch); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		tool := c.content && c.name != "sglang, a content chunk with tool_calls null"
		if ch.Content != c.content || ch.Answer != c.content || ch.ToolCall != tool || ch.Reasoning || ch.ContentBytes != c.bytes {
			t.Errorf("%s: content %v answer %v tool call %v reasoning %v, %d bytes; want %v, %v, %v, false, %d",
				c.name, ch.Content, ch.Answer, ch.ToolCall, ch.Reasoning, ch.ContentBytes, c.content, c.content, tool, c.bytes)
		}
	}
}

// Two choices' tool calls and a parallel call's two entries add up.
func TestToolCallBytesAddUpOverEntriesAndChoices(t *testing.T) {
	t.Parallel()
	var ch Chunk
	in := `{"choices":[{"delta":{"tool_calls":[{"index":0,"function":{"name":"ab","arguments":"1"}},{"index":1,"function":{"name":"c"}}]}},{"delta":{"content":"xy","function_call":{"arguments":"z"}}}]}`
	if err := ParseChunk([]byte(in), &ch); err != nil {
		t.Fatal(err)
	}
	if !ch.ToolCall || !ch.Answer || ch.ContentBytes != 3+1+2+1 || ch.Choices != 2 {
		t.Fatalf("%+v", ch)
	}
}

// sglangToolStream is sglangStream's stream with every content delta a
// tool call's: the name first, then n-1 argument fragments, as SGLang
// writes them.
func sglangToolStream(n int) []byte {
	s := sglangStream(n)
	s = bytes.Replace(s, []byte(`"content":" token","reasoning_content":null,"tool_calls":null`),
		[]byte(`"content":null,"reasoning_content":null,"tool_calls":[{"id":"call_0","index":0,"type":"function","function":{"name":"get_weather","arguments":""}}]`), 1)
	return bytes.ReplaceAll(s, []byte(`"content":" token","reasoning_content":null,"tool_calls":null`),
		[]byte(`"content":null,"reasoning_content":null,"tool_calls":[{"id":null,"index":0,"type":"function","function":{"name":null,"arguments":" tok"}}]`))
}

// A stream of tool-call chunks is read without an allocation per event, as
// content is; each chunk is a content event and a tool-call event.
func TestReadEventsOfToolCallsAllocatesNothingPerEvent(t *testing.T) {
	allocs := readAllocs(t, sglangToolStream(256), func(res *StreamResult) bool {
		return len(res.Events) == 256 && res.ToolCallEvents == 256 && res.ReasoningEvents == 0 && res.Done && res.CompletionTokens == 256
	})
	if allocs > 1 {
		t.Fatalf("%.1f allocations per 256-event tool-call stream", allocs)
	}
}

// BenchmarkReadEventsToolCalls is BenchmarkReadEvents over a stream of
// tool-call chunks (SGLang's shape): the name chunk, then argument
// fragments.
func BenchmarkReadEventsToolCalls(b *testing.B) { benchReadEvents(b, sglangToolStream(1024), 1024) }

// readToolStream reads an SSE body of data lines through readEvents with
// max_tokens maxTokens.
func readToolStream(t *testing.T, maxTokens int, lines ...string) *StreamResult {
	t.Helper()
	var b strings.Builder
	for _, l := range lines {
		b.WriteString("data: " + l + "\n\n")
	}
	res := &StreamResult{T0: time.Now()}
	readEvents(sse.NewReader(strings.NewReader(b.String())), res, nil, false, maxTokens, nil, nil)
	return res
}

// Streams as servers send tool calls, read whole: OpenAI's two parallel
// calls (each its name chunk, then fragments), SGLang's reasoning before
// the call, a gateway's whole call in one chunk with its finish_reason,
// and arguments holding escapes and non-ASCII text. Each tool-call chunk
// is one content event, reasoning ones are not tool-call events, and all
// complete (no class) with the stream's usage.
func TestToolCallStreamsAreReadAsServersSendThem(t *testing.T) {
	t.Parallel()
	frag := func(i int, args string) string {
		return `{"choices":[{"index":0,"delta":{"tool_calls":[{"index":` + string(rune('0'+i)) + `,"function":{"arguments":"` + args + `"}}]},"finish_reason":null}],"usage":null}`
	}
	name := func(i int, fn string) string {
		return `{"choices":[{"index":0,"delta":{"role":"assistant","content":null,"tool_calls":[{"index":` + string(rune('0'+i)) + `,"id":"call_` + fn + `","type":"function","function":{"name":"` + fn + `","arguments":""}}]},"finish_reason":null}],"usage":null}`
	}
	reason := `{"choices":[{"index":0,"delta":{"role":null,"content":null,"reasoning_content":" think","tool_calls":null},"finish_reason":null}],"usage":null}`
	finish := `{"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}],"usage":null}`
	usage := func(n int) string {
		return `{"choices":[],"usage":{"prompt_tokens":9,"completion_tokens":` + strconv.Itoa(n) + `}}`
	}
	for _, c := range []struct {
		name                       string
		lines                      []string
		events, tool, reasoning, n int
	}{
		{"openai, two parallel calls", []string{name(0, "a"), frag(0, `{\"x\"`), frag(0, `:1}`), name(1, "b"), frag(1, `{}`), finish, usage(12), "[DONE]"}, 5, 5, 0, 12},
		{"sglang, reasoning then a call", []string{reason, reason, reason, name(0, "f"), frag(0, `{\"q\":`), frag(0, `\"é\\u00e9\\n\"}`), finish, usage(9), "[DONE]"}, 6, 3, 3, 9},
		{"a gateway, the whole call in one chunk", []string{`{"choices":[{"index":0,"delta":{"role":"assistant","tool_calls":[{"index":0,"id":"c","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Paris\"}"}}]},"finish_reason":"tool_calls"}]}`, usage(11), "[DONE]"}, 1, 1, 0, 11},
	} {
		res := readToolStream(t, 16, c.lines...)
		if res.Class != "" || !res.Done || len(res.Events) != c.events || res.ToolCallEvents != c.tool || res.ReasoningEvents != c.reasoning || !res.Usage || res.CompletionTokens != c.n || res.Finish != "tool_calls" || res.Malformed != 0 {
			t.Errorf("%s: class %q (%s), done %v, %d events (%d tool, %d reasoning), usage %v %d, finish %q, %d malformed; want %d (%d, %d), usage %d, tool_calls",
				c.name, res.Class, res.Detail, res.Done, len(res.Events), res.ToolCallEvents, res.ReasoningEvents, res.Usage, res.CompletionTokens, res.Finish, res.Malformed, c.events, c.tool, c.reasoning, c.n)
		}
	}
}

// A server that streams tool-call fragments past max_tokens is ended at
// AnswerBound as one that streams content is: tool calls are the answer.
// A fragment in invalid UTF-8 is a malformed line, not an event.
func TestAToolCallPastMaxTokensIsARunawayAndInvalidUTF8IsMalformed(t *testing.T) {
	t.Parallel()
	lines := []string{`{"choices":[{"delta":{"tool_calls":[{"index":0,"function":{"arguments":"\xff"}}]}}]}`}
	for range AnswerBound(4) + 10 {
		lines = append(lines, `{"choices":[{"delta":{"tool_calls":[{"index":0,"function":{"arguments":"x"}}]}}]}`)
	}
	res := readToolStream(t, 4, lines...)
	if res.Class != schema.StreamError || !strings.Contains(res.Detail, "answer events") || len(res.Events) != AnswerBound(4) || res.ToolCallEvents != AnswerBound(4) || res.Malformed != 1 {
		t.Fatalf("class %q (%s), %d events (%d tool), %d malformed; want stream_error at %d answer events, 1 malformed", res.Class, res.Detail, len(res.Events), res.ToolCallEvents, res.Malformed, AnswerBound(4))
	}
}
