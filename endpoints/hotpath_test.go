package endpoints

import (
	"bufio"
	"bytes"
	"encoding/json"
	"runtime"
	"testing"
	"time"

	"github.com/glmbench/glmbench/endpoints/sse"
)

// sglangStream builds n content events as SGLang streams them, with the role
// chunk first and the usage chunk and [DONE] last.
func sglangStream(n int) []byte {
	var buf bytes.Buffer
	buf.WriteString("data: {\"id\":\"chatcmpl-1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"glm-5\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\"},\"logprobs\":null,\"finish_reason\":null}],\"usage\":null}\n\n")
	for range n {
		buf.WriteString("data: {\"id\":\"chatcmpl-1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"glm-5\",\"choices\":[{\"index\":0,\"delta\":{\"role\":null,\"content\":\" token\",\"reasoning_content\":null,\"tool_calls\":null},\"logprobs\":null,\"finish_reason\":null,\"matched_stop\":null}],\"usage\":null}\n\n")
	}
	buf.WriteString("data: {\"id\":\"chatcmpl-1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"glm-5\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"length\"}],\"usage\":null}\n\n")
	buf.WriteString("data: {\"id\":\"chatcmpl-1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"glm-5\",\"choices\":[],\"usage\":{\"prompt_tokens\":256,\"total_tokens\":512,\"completion_tokens\":256}}\n\ndata: [DONE]\n\n")
	return buf.Bytes()
}

// readAllocs is readEvents' allocations per read of stream, into a result
// reused each time, for an endpoint asking for glm-5, the model the
// streams name; t fails when a read is cut short, ok says its result is
// wrong, or the model a stream names is not read.
func readAllocs(t *testing.T, stream []byte, ok func(*StreamResult) bool) float64 {
	t.Helper()
	ep := &Endpoint{Model: "glm-5"}
	model := ""
	if bytes.Contains(stream, []byte(`"model":"glm-5"`)) {
		model = "glm-5"
	}
	rd := sse.NewReader(nil)
	res := &StreamResult{Events: make([]time.Duration, 0, 300)}
	src := bytes.NewReader(stream)
	return testing.AllocsPerRun(50, func() {
		src.Reset(stream)
		rd.Reset(src)
		res.Reset()
		res.T0 = time.Now()
		if _, over := readEvents(rd, res, nil, false, 0, ep, nil); over || !ok(res) || res.Model != model {
			t.Fatalf("%+v", res)
		}
	})
}

func TestReadEventsAllocatesNothingPerEvent(t *testing.T) {
	allocs := readAllocs(t, sglangStream(256), func(res *StreamResult) bool {
		return len(res.Events) == 256 && res.Done && res.CompletionTokens == 256
	})
	// One allocation per stream is the finish reason's string.
	if allocs > 1 {
		t.Fatalf("%.1f allocations per 256-event stream", allocs)
	}
	// Reasoning deltas and the reasoning count of usage cost nothing more.
	reasoning := bytes.Replace(sglangStream(256), []byte(`"content":" token","reasoning_content":null`), []byte(`"content":null,"reasoning_content":" hm"`), 100)
	reasoning = bytes.Replace(reasoning, []byte(`"completion_tokens":256}`), []byte(`"completion_tokens":256,"completion_tokens_details":{"reasoning_tokens":100}}`), 1)
	allocs = readAllocs(t, reasoning, func(res *StreamResult) bool {
		return len(res.Events) == 256 && res.ReasoningEvents == 100 && res.ReasoningTokens == 100 && res.CompletionTokens == 256
	})
	if allocs > 1 {
		t.Fatalf("%.1f allocations per 256-event stream with reasoning", allocs)
	}
}

// BenchmarkReadEvents measures the client's hot path alone: SSE framing,
// arrival stamps and chunk parsing of an SGLang stream from memory.
func BenchmarkReadEvents(b *testing.B) { benchReadEvents(b, sglangStream(1024), 1024) }

// benchReadEvents reads stream, of n events, from memory as the client's
// hot path does, once an iteration.
func benchReadEvents(b *testing.B, stream []byte, n int) {
	ep := &Endpoint{Model: "glm-5"} // the model the streams name, as a run asks
	rd := sse.NewReader(nil)
	res := &StreamResult{Events: make([]time.Duration, 0, n)}
	src := bytes.NewReader(stream)
	b.SetBytes(int64(len(stream)))
	LoopEvents(b, n, func() int {
		src.Reset(stream)
		rd.Reset(src)
		res.Reset()
		res.T0 = time.Now()
		readEvents(rd, res, nil, false, 0, ep, nil)
		return len(res.Events)
	})
}

// LoopEvents runs one stream a benchmark iteration, failing it when the
// stream gives other than n events, and reports events/s and allocations
// per event (from runtime.MemStats, so everything the process allocated
// meanwhile counts). It is exported for the endpoints_test benchmarks.
func LoopEvents(b *testing.B, n int, stream func() (events int)) {
	b.Helper()
	b.ReportAllocs()
	var m0, m1 runtime.MemStats
	runtime.ReadMemStats(&m0)
	for b.Loop() {
		if got := stream(); got != n {
			b.Fatalf("%d events", got)
		}
	}
	runtime.ReadMemStats(&m1)
	b.ReportMetric(float64(b.N*n)/b.Elapsed().Seconds(), "events/s")
	b.ReportMetric(float64(m1.Mallocs-m0.Mallocs)/float64(b.N*n), "allocs/event")
}

// BenchmarkReadEventsNaive is the reference for BenchmarkReadEvents: what a
// plain Go client does with the same stream (bufio.Scanner over lines,
// encoding/json into a struct with both reasoning fields), timed the same way.
func BenchmarkReadEventsNaive(b *testing.B) {
	const n = 1024
	stream := sglangStream(n)
	type delta struct {
		Content          *string `json:"content"`
		ReasoningContent *string `json:"reasoning_content"`
		Reasoning        *string `json:"reasoning"`
	}
	type chunk struct {
		Choices []struct {
			Delta        delta   `json:"delta"`
			FinishReason *string `json:"finish_reason"`
		} `json:"choices"`
		Usage *Usage `json:"usage"`
	}
	b.SetBytes(int64(len(stream)))
	LoopEvents(b, n, func() int {
		sc := bufio.NewScanner(bytes.NewReader(stream))
		t0 := time.Now()
		var events []time.Duration
		for sc.Scan() {
			line := sc.Bytes()
			if !bytes.HasPrefix(line, []byte("data: ")) {
				continue
			}
			at := time.Since(t0)
			data := line[6:]
			if string(data) == "[DONE]" {
				break
			}
			var c chunk
			if json.Unmarshal(data, &c) != nil {
				continue
			}
			for _, ch := range c.Choices {
				d := ch.Delta
				if (d.Content != nil && *d.Content != "") || (d.ReasoningContent != nil && *d.ReasoningContent != "") || (d.Reasoning != nil && *d.Reasoning != "") {
					events = append(events, at)
					break
				}
			}
		}
		return len(events)
	})
}
