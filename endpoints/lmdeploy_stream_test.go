package endpoints_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/glmbench/glmbench/endpoints"
	"github.com/glmbench/glmbench/endpoints/endpointstest"
	"github.com/glmbench/glmbench/reports/schema"
)

// LMDeploy refuses a prompt past --session-len inside its 200: the stream's
// one chunk has finish_reason "error" and the engine's reason as its
// content (lmdeploy/serve/core/async_engine.py generate), then [DONE]. That
// is a stream_error with the server's words, not an answer of one content
// event; and a shape probe, which stops at the first content event, must
// not take that chunk for one.
func TestAStreamTheServerGaveUpOnIsAStreamErrorWithItsWords(t *testing.T) {
	t.Parallel()
	p := endpointstest.Start(t, endpointstest.LMDeploy, endpointstest.Options{Context: 64})
	ep, err := endpoints.Resolve(endpoints.Flags{Endpoint: p.BaseURL(), Model: p.Opts.Model}, env(nil))
	if err != nil {
		t.Fatal(err)
	}
	tr := endpoints.NewTransport(endpoints.TransportOptions{Conns: 1})
	defer tr.Close()
	c := endpoints.NewClient(ep, tr)
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
