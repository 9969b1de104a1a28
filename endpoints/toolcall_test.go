package endpoints

import (
	"bytes"
	"testing"
	"time"

	"github.com/glmbench/glmbench/endpoints/sse"
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
func BenchmarkReadEventsToolCalls(b *testing.B) {
	const n = 1024
	stream := sglangToolStream(n)
	rd := sse.NewReader(nil)
	res := &StreamResult{Events: make([]time.Duration, 0, n)}
	src := bytes.NewReader(stream)
	b.SetBytes(int64(len(stream)))
	LoopEvents(b, n, func() int {
		src.Reset(stream)
		rd.Reset(src)
		res.Reset()
		res.T0 = time.Now()
		readEvents(rd, res, nil, false, 0, nil, nil)
		return len(res.Events)
	})
}
