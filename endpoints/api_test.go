package endpoints_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/glmbench/glmbench/endpoints"
	"github.com/glmbench/glmbench/endpoints/endpointstest"
	"github.com/glmbench/glmbench/internal/badinput"
	"github.com/glmbench/glmbench/reports/schema"
)

func TestParseAPIKnowsChatAndCompletionsAndRefusesTheRestInOneLine(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]endpoints.API{"chat": endpoints.APIChat, "": endpoints.APIChat, "completions": endpoints.APICompletions} {
		if got, err := endpoints.ParseAPI(in); err != nil || got != want {
			t.Errorf("ParseAPI(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, bad := range []string{"bogus", "Chat", "responses", "chat,completions"} {
		_, err := endpoints.ParseAPI(bad)
		if !badinput.Is(err) || strings.Contains(err.Error(), "\n") || !strings.Contains(err.Error(), "chat or completions") {
			t.Errorf("ParseAPI(%q): %v; want one line of bad input", bad, err)
		}
	}
	if endpoints.API("").Name() != "chat" || endpoints.API("").Path() != "/chat/completions" || endpoints.APICompletions.Path() != "/completions" {
		t.Error("the zero API is not chat, or a path is wrong")
	}
}

func TestATranscriptJoinsTheContentsWithBlankLinesSoASharedStartStaysAPrefix(t *testing.T) {
	t.Parallel()
	sys := endpoints.Message{Role: "system", Content: "be brief"}
	a := endpoints.Transcript([]endpoints.Message{sys, {Role: "user", Content: "q1"}})
	b := endpoints.Transcript([]endpoints.Message{sys, {Role: "user", Content: "q1"}, {Role: "assistant", Content: "a1"}, {Role: "user", Content: "q2"}})
	if a != "be brief\n\nq1" || b != "be brief\n\nq1\n\na1\n\nq2" || !strings.HasPrefix(b, a) {
		t.Fatalf("transcripts %q and %q", a, b)
	}
	if endpoints.Transcript([]endpoints.Message{{Role: "user", Content: "x"}}) != "x" || endpoints.Transcript(nil) != "" {
		t.Fatal("a single message is its content; none is empty")
	}
}

// Completions chunks as the servers send them: the text is the content,
// the final chunk's usage is read wherever it rides.
func TestParseChunkReadsCompletionsChunksAsEachServerSendsThem(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name                       string
		in                         string
		content, answer            bool
		finish                     string
		usage                      bool
		prompt, completion, cached int
		cachedReported             bool
	}{
		{name: "vLLM and SGLang text chunk",
			in:      `{"id":"cmpl-1","object":"text_completion","created":1,"model":"m","choices":[{"index":0,"text":" the","logprobs":null,"finish_reason":null}]}`,
			content: true, answer: true},
		{name: "vLLM's last text chunk carries the finish reason",
			in:      `{"id":"cmpl-1","object":"text_completion","created":1,"model":"m","choices":[{"index":0,"text":" end","logprobs":null,"finish_reason":"length","stop_reason":null}]}`,
			content: true, answer: true, finish: "length"},
		{name: "vLLM and SGLang include_usage chunk: choices []",
			in:    `{"id":"cmpl-1","object":"text_completion","created":1,"model":"m","choices":[],"usage":{"prompt_tokens":40,"total_tokens":56,"completion_tokens":16,"prompt_tokens_details":{"cached_tokens":32}}}`,
			usage: true, prompt: 40, completion: 16, cached: 32, cachedReported: true},
		{name: "an empty text is no content event",
			in: `{"choices":[{"index":0,"text":"","logprobs":null,"finish_reason":null}]}`},
		{name: "llama.cpp partial chunk",
			in:      `{"choices":[{"text":"ab","index":0,"logprobs":null,"finish_reason":null}],"created":1,"model":"m","system_fingerprint":"b6000","object":"text_completion","id":"chatcmpl-x"}`,
			content: true, answer: true},
		{name: "llama.cpp final chunk: empty text, finish, usage and timings together",
			in:     `{"choices":[{"text":"","index":0,"logprobs":null,"finish_reason":"length"}],"created":1,"model":"m","system_fingerprint":"b6000","object":"text_completion","usage":{"completion_tokens":16,"prompt_tokens":40,"total_tokens":56,"prompt_tokens_details":{"cached_tokens":8}},"id":"chatcmpl-x","timings":{"cache_n":8,"prompt_n":32,"predicted_n":16}}`,
			finish: "length", usage: true, prompt: 40, completion: 16, cached: 8, cachedReported: true},
		{name: "ik_llama.cpp: a running usage on every chunk",
			in:      `{"choices":[{"text":"a","index":0,"logprobs":null,"finish_reason":null}],"created":1,"model":"","object":"text_completion","usage":{"completion_tokens":3,"prompt_tokens":13,"total_tokens":16},"id":""}`,
			content: true, answer: true, usage: true, prompt: 13, completion: 3},
	} {
		var c endpoints.Chunk
		if err := endpoints.ParseChunk([]byte(tc.in), &c); err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if c.Content != tc.content || c.Answer != tc.answer || string(c.Finish) != tc.finish || c.Usage != tc.usage || c.BadUsage != nil ||
			c.PromptTokens != tc.prompt || c.CompletionTokens != tc.completion || c.CachedReported != tc.cachedReported || c.Cached != tc.cached {
			t.Errorf("%s: got %+v", tc.name, c)
		}
	}
}

// completionBody is a streamed completions body of max_tokens n with ignore_eos.
func completionBody(t *testing.T, model, prompt string, n int) []byte {
	t.Helper()
	yes := true
	b, err := json.Marshal(endpoints.CompletionRequest{Model: model, Prompt: prompt, MaxTokens: n, Stream: true,
		StreamOptions: &endpoints.StreamOptions{IncludeUsage: true}, IgnoreEOS: &yes})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestACompletionsStreamIsMeasuredAlikeOnEveryServerThatServesIt(t *testing.T) {
	t.Parallel()
	for _, name := range []string{endpointstest.LlamaCpp, endpointstest.VLLM, endpointstest.SGLang} {
		for _, usageChunk := range []bool{false, true} {
			p := endpointstest.Start(t, name, endpointstest.Options{LlamaUsageChunk: usageChunk})
			c := modelClient(t, p.BaseURL(), p.Opts.Model)
			const n = 24
			var res endpoints.StreamResult
			c.StreamAPI(context.Background(), endpoints.APICompletions, completionBody(t, p.Opts.Model, "the quick brown fox jumps", n), endpoints.StreamLimits{MaxTokens: n, Total: 10 * time.Second}, nil, &res)
			// The model emits one piece per token: n content events, n by usage.
			if res.Class != "" || !res.Done || res.Finish != "length" || !res.Usage || res.CompletionTokens != n || len(res.Events) == 0 || len(res.Events) > n {
				t.Errorf("%s (usage chunk %t): %+v", name, usageChunk, res)
			}
			if res.PromptTokens != endpointstest.Tokens("the quick brown fox jumps") {
				t.Errorf("%s: prompt_tokens %d; the raw text has %d tokens", name, res.PromptTokens, endpointstest.Tokens("the quick brown fox jumps"))
			}
			if p.Requests("POST /v1/completions") != 1 || p.Requests("POST /v1/chat/completions") != 0 {
				t.Errorf("%s: the request went to the wrong route", name)
			}
		}
	}
}

func TestOpenAIAnswersAChatModelsCompletionsWith404(t *testing.T) {
	t.Parallel()
	p := endpointstest.Start(t, endpointstest.OpenAI, endpointstest.Options{})
	c := modelClient(t, p.BaseURL(), p.Opts.Model)
	var res endpoints.StreamResult
	c.StreamAPI(context.Background(), endpoints.APICompletions, completionBody(t, p.Opts.Model, "hi", 4), endpoints.StreamLimits{MaxTokens: 4, Total: 10 * time.Second}, nil, &res)
	if res.Status != 404 || res.Class != schema.HTTP4xx || !strings.Contains(string(res.Body), "not supported in the v1/completions endpoint") {
		t.Fatalf("%+v", res)
	}
}
