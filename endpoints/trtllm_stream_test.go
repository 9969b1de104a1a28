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

// trtllm-serve's worker refuses a prompt that leaves max_seq_len no room
// after the stream's 200: the generator raises before its first chunk and
// uvicorn drops the connection, the chunked body never ended. That is a
// stream cut (truncated), with the read error said, not an empty answer,
// which a server that ends its body cleanly with no event gives.
func TestAStreamDroppedBeforeAnyEventIsTruncatedNotEmpty(t *testing.T) {
	t.Parallel()
	p := endpointstest.Start(t, endpointstest.TRTLLM, endpointstest.Options{Context: 512})
	c := modelClient(t, p.BaseURL(), p.Opts.Model)
	body, _ := json.Marshal(endpoints.ChatRequest{Model: p.Opts.Model, Messages: []endpoints.Message{{Role: "user", Content: strings.Repeat("abcd", 600)}},
		MaxTokens: 4, Stream: true, StreamOptions: &endpoints.StreamOptions{IncludeUsage: true}})
	var res endpoints.StreamResult
	c.StreamAPI(context.Background(), endpoints.APIChat, body, endpoints.StreamLimits{MaxTokens: 4, Total: 10 * time.Second}, nil, &res)
	if res.Status != 200 || res.Class != schema.Truncated || !strings.Contains(res.Detail, "unexpected EOF") {
		t.Fatalf("status %d, class %q, detail %q; want 200, truncated, the cut said", res.Status, res.Class, res.Detail)
	}
}
