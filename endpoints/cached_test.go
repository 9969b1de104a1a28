package endpoints

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/glmbench/glmbench/endpoints/sse"
)

// The usage each server sends, written here by hand from the sources named
// in docs/SERVERS.md ("Cached prompt tokens"); want is the count and whether
// it is reported.
var cachedUsageCases = []struct {
	name     string
	in       string
	cached   int
	reported bool
}{
	{
		name:   "OpenAI's final usage chunk with a cache hit",
		in:     `{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"gpt-4o-2024-08-06","system_fingerprint":"fp_1","choices":[],"usage":{"prompt_tokens":2006,"completion_tokens":300,"total_tokens":2306,"prompt_tokens_details":{"cached_tokens":1920,"audio_tokens":0},"completion_tokens_details":{"reasoning_tokens":0,"audio_tokens":0,"accepted_prediction_tokens":0,"rejected_prediction_tokens":0}}}`,
		cached: 1920, reported: true,
	},
	{
		name:   "OpenAI below 1024 prompt tokens reports 0 cached, and 0 is a report",
		in:     `{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"gpt-4o-mini","choices":[],"usage":{"prompt_tokens":12,"completion_tokens":5,"total_tokens":17,"prompt_tokens_details":{"cached_tokens":0,"audio_tokens":0}}}`,
		cached: 0, reported: true,
	},
	{
		name:   "vLLM with --enable-prompt-tokens-details",
		in:     `{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"m","choices":[],"usage":{"prompt_tokens":150383,"total_tokens":150687,"completion_tokens":304,"prompt_tokens_details":{"cached_tokens":149936}}}`,
		cached: 149936, reported: true,
	},
	{
		name: "vLLM without the flag sends no details (exclude_none)",
		in:   `{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"m","choices":[],"usage":{"prompt_tokens":512,"total_tokens":528,"completion_tokens":16}}`,
	},
	{
		name:   "SGLang with --enable-cache-report and a hit",
		in:     `{"id":"1","object":"chat.completion.chunk","created":1,"model":"m","choices":[],"usage":{"prompt_tokens":1040,"total_tokens":1056,"completion_tokens":16,"prompt_tokens_details":{"cached_tokens":1024},"reasoning_tokens":0}}`,
		cached: 1024, reported: true,
	},
	{
		name: "SGLang without the flag, or with it and nothing cached: details null",
		in:   `{"id":"1","object":"chat.completion.chunk","created":1,"model":"m","choices":[],"usage":{"prompt_tokens":1040,"total_tokens":1056,"completion_tokens":16,"prompt_tokens_details":null,"reasoning_tokens":0}}`,
	},
	{
		name:   "llama.cpp since PR 19361: details in usage, cache_n in timings",
		in:     `{"choices":[],"created":1,"id":"chatcmpl-x","model":"m","system_fingerprint":"b8000-1","object":"chat.completion.chunk","usage":{"completion_tokens":35,"prompt_tokens":237,"total_tokens":272,"prompt_tokens_details":{"cached_tokens":236}},"timings":{"cache_n":236,"prompt_n":1,"prompt_ms":30.9,"prompt_per_token_ms":30.9,"prompt_per_second":32.3,"predicted_n":35,"predicted_ms":661.0,"predicted_per_token_ms":18.8,"predicted_per_second":52.9}}`,
		cached: 236, reported: true,
	},
	{
		name:   "llama.cpp from PR 15827 to PR 19361: timings.cache_n only",
		in:     `{"choices":[],"created":1,"id":"chatcmpl-x","model":"m","system_fingerprint":"b6500-1","object":"chat.completion.chunk","usage":{"completion_tokens":35,"prompt_tokens":237,"total_tokens":272},"timings":{"cache_n":236,"prompt_n":1,"prompt_ms":30.9,"predicted_n":35,"predicted_ms":661.0}}`,
		cached: 236, reported: true,
	},
	{
		name: "llama.cpp b6097: usage and timings on the finish chunk, no cache count",
		in:   `{"choices":[{"finish_reason":"length","index":0,"delta":{}}],"created":1,"id":"chatcmpl-x","model":"m","system_fingerprint":"b6097-1","object":"chat.completion.chunk","usage":{"completion_tokens":16,"prompt_tokens":64,"total_tokens":80},"timings":{"prompt_n":64,"prompt_ms":40.1,"predicted_n":16,"predicted_ms":200.0}}`,
	},
	{
		name: "llama.cpp's per-token timings without usage report nothing",
		in:   `{"choices":[{"finish_reason":null,"index":0,"delta":{"content":"a"}}],"object":"chat.completion.chunk","timings":{"cache_n":236,"prompt_n":1,"predicted_n":3}}`,
	},
	{
		name:   "DeepSeek's prompt_cache_hit_tokens",
		in:     `{"id":"1","object":"chat.completion.chunk","created":1,"model":"deepseek-chat","system_fingerprint":"fp_1","choices":[],"usage":{"prompt_tokens":2006,"completion_tokens":300,"total_tokens":2306,"prompt_cache_hit_tokens":1920,"prompt_cache_miss_tokens":86}}`,
		cached: 1920, reported: true,
	},
	{
		name:   "glmbench's engine always sends details",
		in:     `{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"glm","choices":[],"usage":{"prompt_tokens":1100,"completion_tokens":16,"total_tokens":1116,"prompt_tokens_details":{"cached_tokens":1024}}}`,
		cached: 1024, reported: true,
	},
	{
		name: "details without cached_tokens (SGLang's multimodal breakdown)",
		in:   `{"choices":[],"usage":{"prompt_tokens":300,"completion_tokens":3,"prompt_tokens_details":{"image_tokens":256}}}`,
	},
	{
		name: "cached_tokens null",
		in:   `{"choices":[],"usage":{"prompt_tokens":300,"completion_tokens":3,"prompt_tokens_details":{"cached_tokens":null}}}`,
	},
	{
		name: "a string count is not reported",
		in:   `{"choices":[],"usage":{"prompt_tokens":300,"completion_tokens":3,"prompt_tokens_details":{"cached_tokens":"256"}}}`,
	},
	{
		name: "a negative count is not reported",
		in:   `{"choices":[],"usage":{"prompt_tokens":300,"completion_tokens":3,"prompt_tokens_details":{"cached_tokens":-1}}}`,
	},
	{
		name: "a fraction is not reported",
		in:   `{"choices":[],"usage":{"prompt_tokens":300,"completion_tokens":3,"prompt_tokens_details":{"cached_tokens":256.0}}}`,
	},
	{
		name: "more cached than prompt tokens is not reported",
		in:   `{"choices":[],"usage":{"prompt_tokens":300,"completion_tokens":3,"prompt_tokens_details":{"cached_tokens":301}}}`,
	},
	{
		name:   "all of the prompt cached is reported",
		in:     `{"choices":[],"usage":{"prompt_tokens":300,"completion_tokens":3,"prompt_tokens_details":{"cached_tokens":300}}}`,
		cached: 300, reported: true,
	},
	{
		name: "a prompt_tokens that is no count leaves nothing to check against",
		in:   `{"choices":[],"usage":{"prompt_tokens":"300","completion_tokens":3,"prompt_tokens_details":{"cached_tokens":3}}}`,
	},
	{
		name: "no prompt_tokens leaves nothing to check against",
		in:   `{"choices":[],"usage":{"completion_tokens":3,"prompt_tokens_details":{"cached_tokens":3}}}`,
	},
	{
		name:   "details come first when a server sends both",
		in:     `{"choices":[],"usage":{"prompt_tokens":300,"completion_tokens":3,"prompt_cache_hit_tokens":128,"prompt_tokens_details":{"cached_tokens":256}},"timings":{"cache_n":64}}`,
		cached: 256, reported: true,
	},
	{
		name: "the first count given decides, even when it is not sound",
		in:   `{"choices":[],"usage":{"prompt_tokens":300,"completion_tokens":3,"prompt_tokens_details":{"cached_tokens":-5}},"timings":{"cache_n":64}}`,
	},
	{
		name:   "null details fall through to DeepSeek's count",
		in:     `{"choices":[],"usage":{"prompt_tokens":300,"completion_tokens":3,"prompt_tokens_details":null,"prompt_cache_hit_tokens":128}}`,
		cached: 128, reported: true,
	},
	{
		name:   "keys in any order: cached before prompt_tokens",
		in:     `{"usage":{"prompt_tokens_details":{"cached_tokens":7},"completion_tokens":3,"prompt_tokens":8},"choices":[]}`,
		cached: 7, reported: true,
	},
	{
		name: "duplicate usage: the last one wins, and it has no count",
		in:   `{"usage":{"prompt_tokens":8,"completion_tokens":3,"prompt_tokens_details":{"cached_tokens":7}},"usage":{"prompt_tokens":8,"completion_tokens":3}}`,
	},
}

func TestParseChunkReadsEachServersCachedTokens(t *testing.T) {
	t.Parallel()
	for _, tc := range cachedUsageCases {
		t.Run(tc.name, func(t *testing.T) {
			var c Chunk
			if err := ParseChunk([]byte(tc.in), &c); err != nil {
				t.Fatalf("ParseChunk: %v", err)
			}
			if c.Cached != tc.cached || c.CachedReported != tc.reported {
				t.Fatalf("cached %d reported %v, want %d %v", c.Cached, c.CachedReported, tc.cached, tc.reported)
			}
		})
	}
}

// An unsound cached count spoils only itself: the usage around it stays
// sound, with its counts.
func TestParseChunkKeepsTheUsageAroundABadCachedCount(t *testing.T) {
	t.Parallel()
	for _, v := range []string{`"256"`, `-1`, `256.5`, `1e3`, `301`, `true`, `{}`, `[1]`, `100000001`} {
		in := `{"choices":[],"usage":{"prompt_tokens":300,"completion_tokens":3,"prompt_tokens_details":{"cached_tokens":` + v + `}}}`
		var c Chunk
		if err := ParseChunk([]byte(in), &c); err != nil {
			t.Fatalf("%s: %v", v, err)
		}
		if !c.Usage || c.BadUsage != nil || c.PromptTokens != 300 || c.CompletionTokens != 3 || c.CachedReported || c.Cached != 0 {
			t.Fatalf("cached_tokens %s: %+v, want sound usage 300/3 with no cached count", v, c)
		}
	}
}

// The non-streamed Usage, decoded by encoding/json from the same bodies,
// says what the scanner says (llama.cpp's timings sit outside usage, so
// Usage.Cached does not read them), and never fails to decode for an odd
// count.
func TestUsageCachedAgreesWithTheScanner(t *testing.T) {
	t.Parallel()
	for _, tc := range cachedUsageCases {
		t.Run(tc.name, func(t *testing.T) {
			var body struct {
				Usage   *Usage          `json:"usage"`
				Timings json.RawMessage `json:"timings"`
			}
			switch {
			case strings.Contains(tc.name, "prompt_tokens that is no count"):
				t.Skip(`prompt_tokens is an int: encoding/json refuses "300" whatever the cached count`)
			case strings.HasPrefix(tc.name, "duplicate usage"):
				t.Skip("encoding/json merges a duplicate object into the same struct, where the scanner takes the last whole")
			}
			if err := json.Unmarshal([]byte(tc.in), &body); err != nil {
				t.Fatalf("decode: %v", err)
			}
			n, ok := body.Usage.Cached()
			want, wantOK := tc.cached, tc.reported
			if strings.HasPrefix(tc.name, "llama.cpp from PR 15827") {
				want, wantOK = 0, false
			}
			if n != want || ok != wantOK {
				t.Fatalf("Usage.Cached() = %d %v, want %d %v", n, ok, want, wantOK)
			}
		})
	}
}

func TestTokenCountRoundTrips(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{`12`: `12`, `0`: `0`, `"12"`: `null`, `-1`: `null`, `1.5`: `null`, `null`: `null`} {
		var tc TokenCount
		if err := json.Unmarshal([]byte(in), &tc); err != nil {
			t.Fatalf("%s: %v", in, err)
		}
		out, err := json.Marshal(tc)
		if err != nil || string(out) != want {
			t.Fatalf("%s → %s %v, want %s", in, out, err, want)
		}
	}
}

// usageStream is an SGLang-shaped stream of n content events and then
// the given usage chunks, each as its own event, and [DONE].
func usageStream(n int, usages ...string) []byte {
	var buf bytes.Buffer
	for range n {
		buf.WriteString(contentEvent)
	}
	buf.WriteString("data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"length\"}],\"usage\":null}\n\n")
	for _, u := range usages {
		fmt.Fprintf(&buf, "data: {\"choices\":[],\"usage\":%s}\n\n", u)
	}
	buf.WriteString("data: [DONE]\n\n")
	return buf.Bytes()
}

func TestReadEventsKeepsTheLastCachedCount(t *testing.T) {
	t.Parallel()
	const (
		with    = `{"prompt_tokens":1040,"completion_tokens":3,"prompt_tokens_details":{"cached_tokens":1024}}`
		without = `{"prompt_tokens":1040,"completion_tokens":3}`
		null    = `{"prompt_tokens":1040,"completion_tokens":3,"prompt_tokens_details":null}`
		other   = `{"prompt_tokens":1040,"completion_tokens":3,"prompt_tokens_details":{"cached_tokens":512}}`
		bad     = `{"prompt_tokens":1040,"completion_tokens":3,"prompt_tokens_details":{"cached_tokens":2048}}`
	)
	for _, tc := range []struct {
		name     string
		usages   []string
		cached   int
		reported bool
	}{
		{"the final usage chunk carries it", []string{with}, 1024, true},
		{"no usage at all", nil, 0, false},
		{"usage without it", []string{without}, 0, false},
		{"usage with null details", []string{null}, 0, false},
		{"an earlier count stays when the last usage has none", []string{with, without}, 1024, true},
		{"a later count replaces an earlier one", []string{with, other}, 512, true},
		{"an unsound later count is not used", []string{other, bad}, 512, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rd := sse.NewReader(bytes.NewReader(usageStream(3, tc.usages...)))
			res := &StreamResult{T0: time.Now()}
			if _, over := readEvents(rd, res, nil, false, 16, nil, nil); over || !res.Done || len(res.Events) != 3 {
				t.Fatalf("over %v done %v events %d", over, res.Done, len(res.Events))
			}
			if res.CachedTokens != tc.cached || res.CachedReported != tc.reported {
				t.Fatalf("cached %d reported %v, want %d %v", res.CachedTokens, res.CachedReported, tc.cached, tc.reported)
			}
			if len(tc.usages) > 0 && (!res.Usage || res.PromptTokens != 1040 || res.BadUsage != "") {
				t.Fatalf("usage %v %d note %q, want the sound usage kept", res.Usage, res.PromptTokens, res.BadUsage)
			}
			res.Reset()
			if res.CachedTokens != 0 || res.CachedReported {
				t.Fatalf("Reset left cached %d %v", res.CachedTokens, res.CachedReported)
			}
		})
	}
}

// The whole client path, over HTTP, keeps the cached count of a vLLM-shaped
// stream, and keeps it when checkUsage drops the completion count.
func TestStreamChatKeepsCachedTokens(t *testing.T) {
	for _, tc := range []struct {
		name, usage string
		usage0      bool
	}{
		{"a sound usage", `{"prompt_tokens":1040,"total_tokens":1043,"completion_tokens":3,"prompt_tokens_details":{"cached_tokens":1024}}`, true},
		{"completion_tokens 0 beside content (usage dropped, prompt side kept)", `{"prompt_tokens":1040,"total_tokens":1040,"completion_tokens":0,"prompt_tokens_details":{"cached_tokens":1024}}`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				sseHeaders(w)
				w.Write(usageStream(3, tc.usage))
			}))
			defer srv.Close()
			res := stream(t, hostileEndpoint(srv.URL), StreamLimits{TTFT: 10 * time.Second, MaxTokens: 16})
			if res.Class != "" || res.Usage != tc.usage0 || res.PromptTokens != 1040 || res.CachedTokens != 1024 || !res.CachedReported {
				t.Fatalf("class %q usage %v prompt %d cached %d %v", res.Class, res.Usage, res.PromptTokens, res.CachedTokens, res.CachedReported)
			}
		})
	}
}

// Cached counts cost the hot path nothing: a stream whose usage carries
// details, DeepSeek's count and llama.cpp's timings allocates no more than
// the plain one (the finish reason's string).
func TestReadEventsWithCachedCountsAllocatesNothingPerEvent(t *testing.T) {
	stream := usageStream(256)
	final := "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":1040,\"completion_tokens\":256,\"prompt_cache_hit_tokens\":512,\"prompt_tokens_details\":{\"cached_tokens\":1024,\"audio_tokens\":0}},\"timings\":{\"cache_n\":1024,\"prompt_n\":16}}\n\ndata: [DONE]\n\n"
	stream = append(bytes.TrimSuffix(stream, []byte("data: [DONE]\n\n")), final...)
	allocs := readAllocs(t, stream, func(res *StreamResult) bool {
		return len(res.Events) == 256 && res.CachedReported && res.CachedTokens == 1024
	})
	if allocs > 1 {
		t.Fatalf("%.1f allocations per 256-event stream", allocs)
	}
	var c Chunk
	in := []byte(`{"choices":[],"usage":{"prompt_tokens":237,"completion_tokens":35,"prompt_tokens_details":{"cached_tokens":236}},"timings":{"cache_n":236,"prompt_n":1}}`)
	if a := testing.AllocsPerRun(200, func() { _ = ParseChunk(in, &c) }); a != 0 || !c.CachedReported {
		t.Fatalf("ParseChunk of a cached usage: %.1f allocations, reported %v", a, c.CachedReported)
	}
}
