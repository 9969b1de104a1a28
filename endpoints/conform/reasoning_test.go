package conform

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/glmbench/glmbench/endpoints"
)

// A reasoning model's chunks, shaped as DeepSeek's reasoner streams them:
// its thinking in reasoning_content with content null, then the answer in
// content, bounded by max_tokens while the thinking is not ("max_tokens:
// the maximum length of the final response after the CoT output is
// completed ... the CoT output can reach up to 32K tokens", DeepSeek's
// API docs, reasoning model).
const (
	thinkerRole   = `data: {"id":"chatcmpl-r","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}` + "\n\n"
	thinkerChunk  = `data: {"id":"chatcmpl-r","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":null,"reasoning_content":"hmm "},"finish_reason":null}]}` + "\n\n"
	thinkerAnswer = `data: {"id":"chatcmpl-r","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"tide "},"finish_reason":null}]}` + "\n\n"
	thinkerFinish = `data: {"id":"chatcmpl-r","object":"chat.completion.chunk","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}` + "\n\n"
)

// thinker answers every chat with a stream of a role chunk, thoughts
// chunks of reasoning alone, a three-token answer, its finish_reason, a
// usage chunk with choices [] (its completion_tokens counting the
// thinking, as DeepSeek's do) and [DONE].
func thinker(thoughts int) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		var b strings.Builder
		b.WriteString(thinkerRole)
		for range thoughts {
			b.WriteString(thinkerChunk)
		}
		b.WriteString(strings.Repeat(thinkerAnswer, 3))
		b.WriteString(thinkerFinish)
		fmt.Fprintf(&b, `data: {"id":"chatcmpl-r","object":"chat.completion.chunk","choices":[],"usage":{"prompt_tokens":20,"completion_tokens":%d,"total_tokens":%d}}`+"\n\n", thoughts+3, 20+thoughts+3)
		b.WriteString("data: [DONE]\n\n")
		w.Write([]byte(b.String()))
	})
}

// thinkerThoughts is past chunkBound(8) (16,512), the bound that once cut
// such a stream, and within endpoints.EventBound(8), which glmbench run
// lets through.
const thinkerThoughts = 20000

// A reasoning model that thinks for 20,000 chunks before an answer within
// max_tokens passes the stream check, as glmbench run accepts the stream:
// before, conform kept each chunk whole and cut the stream at chunkBound,
// failing it as "the stream did not end", which gated every check built
// on streams. Reading one such stream keeps a count of its thinking, not
// the chunks: what it holds after the read is a few chunks, and what it
// allocated on the way is bounded.
func TestAReasoningModelsLongThinkingPassesTheStreamCheckInBoundedMemory(t *testing.T) {
	// Not parallel: the memory counted is this test's alone.
	if thinkerThoughts <= chunkBound(streamCheckTokens) || thinkerThoughts > endpoints.EventBound(streamCheckTokens) {
		t.Fatalf("%d thoughts is not between chunkBound %d and EventBound %d", thinkerThoughts, chunkBound(streamCheckTokens), endpoints.EventBound(streamCheckTokens))
	}
	srv := httptest.NewServer(thinker(thinkerThoughts))
	defer srv.Close()
	cfg := testConfig(srv.URL, "m")
	cfg.Only = []string{"stream"}
	res := run(t, cfg)
	want := fmt.Sprintf("%d chunks of reasoning alone", streamsInARow*thinkerThoughts)
	wantResult(t, res, "stream", Pass, want)

	s, done := newSuite(cfg)
	defer done()
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	st := s.stream(context.Background(), s.streamBody(storyPrompt, streamCheckTokens, nil), nil)
	runtime.GC()
	runtime.ReadMemStats(&after)
	// TotalAlloc counts every byte allocated, freed or not (the fake's
	// too); HeapAlloc after a collection is what the stream still holds.
	alloc := after.TotalAlloc - before.TotalAlloc
	held := int64(after.HeapAlloc) - int64(before.HeapAlloc)
	t.Logf("%d chunks of reasoning alone (%d bytes): allocated %.1f MiB reading them, %d chunks and %.1f KiB held after",
		st.reasoningChunks, st.reasoningBytes, float64(alloc)/(1<<20), len(st.chunks), float64(held)/(1<<10))
	if p := streamShape(st); p != "" {
		t.Errorf("the stream: %q, want its shape right", p)
	}
	// Kept: the role chunk, the three answer chunks, the finish and the
	// usage chunk; the thinking counted.
	if st.reasoningChunks != thinkerThoughts || st.reasoningBytes != int64(len("hmm "))*thinkerThoughts ||
		len(st.chunks) != 6 || st.total != thinkerThoughts+6 || st.contentEvents != thinkerThoughts+3 {
		t.Errorf("%d reasoning chunks (%d bytes), %d kept of %d, %d content events; want %d (%d bytes), 6 kept of %d, %d",
			st.reasoningChunks, st.reasoningBytes, len(st.chunks), st.total, st.contentEvents,
			thinkerThoughts, 4*thinkerThoughts, thinkerThoughts+6, thinkerThoughts+3)
	}
	// Kept whole, the 20,000 chunks would hold some 5 MiB (about 260 bytes
	// each, small as these are).
	if held > 1<<20 {
		t.Errorf("the read stream holds %d KiB, want under 1 MiB", held>>10)
	}
	if alloc > 64<<20 {
		t.Errorf("reading %d chunks of reasoning allocated %d MiB, want under 64 MiB", thinkerThoughts, alloc>>20)
	}
	runtime.KeepAlive(st)
}

// Chunks of reasoning alone are bounded as glmbench run bounds content
// events, by endpoints.EventBound of the request's own max_tokens (the
// stream check's 8 is TestAStreamThatNeverEndsIsCutAtItsBoundWithBoundedMemory's;
// the disconnect check asks for 1024), not by chunkBound, which is lower,
// and a stream that thinks without end is cut there, its failure naming
// the bound and the thinking; the one chunk kept is the first, where the
// role belongs.
func TestEndlessReasoningIsCutAtRunsEventBound(t *testing.T) {
	t.Parallel()
	srv := endlessStream(t, thinkerChunk)
	cfg := testConfig(srv.URL, "m")
	// The bound ends the stream; the limit only guards a regression.
	cfg.Timeout = 30 * time.Second
	s, done := newSuite(cfg)
	defer done()
	for _, n := range []int{1024} {
		if chunkBound(n) >= endpoints.EventBound(n) {
			t.Fatalf("chunkBound(%d) %d is not below EventBound %d", n, chunkBound(n), endpoints.EventBound(n))
		}
		st := s.stream(context.Background(), s.streamBody(storyPrompt, n, nil), nil)
		want := fmt.Sprintf("the stream did not end: more than %d content events for max_tokens %d, glmbench run's bound (%d of them chunks of reasoning alone, %d KiB of reasoning)",
			endpoints.EventBound(n), n, endpoints.EventBound(n), 4*endpoints.EventBound(n)>>10)
		if st.problem() != want || st.contentEvents != endpoints.EventBound(n) || len(st.chunks) != 1 {
			t.Errorf("max_tokens %d: %q after %d content events, %d chunks kept; want %q, 1 kept", n, st.problem(), st.contentEvents, len(st.chunks), want)
		}
	}
}

// Only what no check tells from a kept chunk is summarized: a chunk of
// reasoning under another id, after the finish_reason, or first in the
// stream is kept whole, so the stream check still names the fault.
func TestReasoningChunksThatTheShapeJudgesAreKept(t *testing.T) {
	t.Parallel()
	other := strings.Replace(thinkerChunk, "chatcmpl-r", "chatcmpl-other", 1)
	for _, tc := range []struct {
		name, stream, want string
	}{
		{"another id", thinkerRole + thinkerChunk + other + thinkerAnswer + thinkerFinish, "the chunks carry 2 different ids"},
		{"after the finish_reason", thinkerRole + thinkerAnswer + thinkerFinish + thinkerChunk, "content in chunk 3 after the finish_reason"},
		{"opening the stream", thinkerChunk + thinkerChunk + thinkerAnswer + thinkerFinish, `the stream opens with text ("hmm")`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "text/event-stream")
				w.Write([]byte(tc.stream + "data: [DONE]\n\n"))
			}))
			defer srv.Close()
			s, done := newSuite(testConfig(srv.URL, "m"))
			defer done()
			st := s.stream(context.Background(), s.streamBody(storyPrompt, streamCheckTokens, nil), nil)
			if p := streamShape(st); !strings.Contains(p, tc.want) {
				t.Errorf("%q, want the shape's fault %q", p, tc.want)
			}
		})
	}
}
