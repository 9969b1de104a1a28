package endpoints

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// reasoningEvent is a vLLM reasoning delta (delta.reasoning, since late 2025).
const reasoningEvent = "data: {\"choices\":[{\"index\":0,\"delta\":{\"reasoning\":\"hm\"},\"finish_reason\":null}]}\n\n"

// A stream keeps the reasoning count of the usage it ends with and counts
// its reasoning events: 2 reasoning and 3 content events are 2 and 5; a
// later usage without the breakdown says 0; a count past completion_tokens
// or unsound drops the usage with a note, its reasoning count with it.
func TestStreamKeepsTheReasoningCountOfItsLastUsage(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name      string
		usages    []string
		usage     bool
		reasoning int
		note      string
	}{
		{"one usage with 2 reasoning tokens", []string{`{"prompt_tokens":8,"completion_tokens":5,"completion_tokens_details":{"reasoning_tokens":2}}`}, true, 2, ""},
		{"the last usage says nothing of reasoning", []string{
			`{"prompt_tokens":8,"completion_tokens":4,"completion_tokens_details":{"reasoning_tokens":2}}`,
			`{"prompt_tokens":8,"completion_tokens":5}`}, true, 0, ""},
		{"the last usage decides", []string{
			`{"prompt_tokens":8,"completion_tokens":4,"completion_tokens_details":{"reasoning_tokens":1}}`,
			`{"prompt_tokens":8,"completion_tokens":5,"completion_tokens_details":{"reasoning_tokens":2}}`}, true, 2, ""},
		{"more reasoning than completion tokens", []string{`{"prompt_tokens":8,"completion_tokens":5,"completion_tokens_details":{"reasoning_tokens":6}}`},
			false, 0, "usage.completion_tokens_details.reasoning_tokens 6 is more than completion_tokens 5"},
		{"a negative count", []string{`{"prompt_tokens":8,"completion_tokens":5,"completion_tokens_details":{"reasoning_tokens":-2}}`},
			false, 0, "usage.completion_tokens_details.reasoning_tokens -2 is not a token count"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				sseHeaders(w)
				io.WriteString(w, strings.Repeat(reasoningEvent, 2)+strings.Repeat(contentEvent, 3))
				io.WriteString(w, "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"length\"}]}\n\n")
				for _, u := range tc.usages {
					fmt.Fprintf(w, "data: {\"choices\":[],\"usage\":%s}\n\n", u)
				}
				io.WriteString(w, "data: [DONE]\n\n")
			}))
			defer srv.Close()
			res := stream(t, hostileEndpoint(srv.URL), StreamLimits{TTFT: 10 * time.Second, MaxTokens: 16})
			if res.Class != "" || len(res.Events) != 5 || res.ReasoningEvents != 2 {
				t.Fatalf("class %q, %d events (%d reasoning), want completed with 5 (2)", res.Class, len(res.Events), res.ReasoningEvents)
			}
			if res.Usage != tc.usage || res.ReasoningTokens != tc.reasoning || res.BadUsage != tc.note {
				t.Fatalf("usage %v, %d reasoning tokens, note %q; want %v, %d, %q", res.Usage, res.ReasoningTokens, res.BadUsage, tc.usage, tc.reasoning, tc.note)
			}
		})
	}
}
