package endpoints_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/glmbench/glmbench/endpoints"
	"github.com/glmbench/glmbench/endpoints/endpointstest"
	"github.com/glmbench/glmbench/reports/schema"
)

// trtllm-serve's worker refuses a prompt that leaves max_seq_len no room
// after the stream's 200: the generator raises before its first chunk and
// uvicorn drops the connection, the chunked body never ended. That is a
// stream cut (truncated), with the read error said, not an empty answer,
// which a server that ends its body cleanly with no event gives.
func TestAStreamDroppedBeforeAnyEventIsTruncatedNotEmpty(t *testing.T) {
	t.Parallel()
	p, c := personalityClient(t, endpointstest.TRTLLM, endpointstest.Options{Context: 512})
	body, _ := json.Marshal(endpoints.ChatRequest{Model: p.Opts.Model, Messages: []endpoints.Message{{Role: "user", Content: strings.Repeat("abcd", 600)}},
		MaxTokens: 4, Stream: true, StreamOptions: &endpoints.StreamOptions{IncludeUsage: true}})
	var res endpoints.StreamResult
	c.StreamAPI(context.Background(), endpoints.APIChat, body, endpoints.StreamLimits{MaxTokens: 4, Total: 10 * time.Second}, nil, &res)
	if res.Status != 200 || res.Class != schema.Truncated || !strings.Contains(res.Detail, "unexpected EOF") {
		t.Fatalf("status %d, class %q, detail %q; want 200, truncated, the cut said", res.Status, res.Class, res.Detail)
	}
}

// LMDeploy refuses a prompt past --session-len inside its 200: the stream's
// one chunk has finish_reason "error" and the engine's reason as its
// content (lmdeploy/serve/core/async_engine.py generate), then [DONE]. That
// is a stream_error with the server's words, not an answer of one content
// event; and a shape probe, which stops at the first content event, must
// not take that chunk for one.
func TestAStreamTheServerGaveUpOnIsAStreamErrorWithItsWords(t *testing.T) {
	t.Parallel()
	p, c := personalityClient(t, endpointstest.LMDeploy, endpointstest.Options{Context: 64})
	lim := endpoints.StreamLimits{MaxTokens: 4, Total: 10 * time.Second}
	send := func(words int, untilFirst bool) endpoints.StreamResult {
		body, _ := json.Marshal(endpoints.ChatRequest{Model: p.Opts.Model, Messages: []endpoints.Message{{Role: "user", Content: strings.Repeat("word ", words)}},
			MaxTokens: 4, Stream: true, StreamOptions: &endpoints.StreamOptions{IncludeUsage: true}})
		var res endpoints.StreamResult
		if untilFirst {
			c.StreamUntilFirst(context.Background(), endpoints.APIChat, body, lim, &res)
		} else {
			c.StreamAPI(context.Background(), endpoints.APIChat, body, lim, nil, &res)
		}
		return res
	}
	for _, untilFirst := range []bool{false, true} {
		res := send(200, untilFirst)
		if res.Status != 200 || res.Class != schema.StreamError || res.Finish != "error" ||
			!strings.Contains(res.Detail, `finish_reason "error"`) || !strings.Contains(res.Detail, "ResponseType.INPUT_LENGTH_ERROR") {
			t.Errorf("until first %v: status %d, class %q, finish %q, detail %q; want 200, stream_error, the server's text", untilFirst, res.Status, res.Class, res.Finish, res.Detail)
		}
	}
	// A prompt that fits is an answer as before.
	if res := send(5, false); res.Class != "" || res.Finish != "length" || len(res.Events) != 4 || res.CompletionTokens != 4 {
		t.Errorf("a prompt that fits: class %q, finish %q, %d events, %d tokens", res.Class, res.Finish, len(res.Events), res.CompletionTokens)
	}
}

// personalityClient starts the personality name and a client of it on
// one connection, both closed when the test ends.
func personalityClient(t *testing.T, name string, o endpointstest.Options) (*endpointstest.Personality, *endpoints.Client) {
	t.Helper()
	p := endpointstest.Start(t, name, o)
	return p, modelClient(t, p.BaseURL(), p.Opts.Model)
}

// LMDeploy's GenOut.finish_reason "abort" (a session stopped by the
// server: stop_all_session, sleep) ends a stream of empty content: a
// stream_error too, not an empty answer.
func TestAStreamTheServerAbortedIsAStreamError(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, `data: {"id":"7","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":"abort"}],"usage":null}`+"\n\ndata: [DONE]\n\n")
	}))
	defer srv.Close()
	ep, err := endpoints.Resolve(endpoints.Flags{Endpoint: srv.URL + "/v1", Model: "m"}, env(nil))
	if err != nil {
		t.Fatal(err)
	}
	tr := endpoints.NewTransport(endpoints.TransportOptions{Conns: 1})
	defer tr.Close()
	var res endpoints.StreamResult
	endpoints.NewClient(ep, tr).StreamAPI(context.Background(), endpoints.APIChat, []byte(`{"model":"m","stream":true}`), endpoints.StreamLimits{MaxTokens: 4, Total: 10 * time.Second}, nil, &res)
	if res.Class != schema.StreamError || res.Detail != `the server gave up on the answer (finish_reason "abort" inside a 200 stream)` {
		t.Fatalf("class %q, detail %q; want stream_error saying abort", res.Class, res.Detail)
	}
}
