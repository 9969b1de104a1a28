package engine

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"testing"
)

// CompletionLogprobs are the logprobs of a /v1/completions answer's one
// choice. Exported so that this package's external tests (engine_test)
// post their completions with PostCompletion too.
type CompletionLogprobs struct {
	Tokens        []string             `json:"tokens"`
	TokenLogprobs []*float64           `json:"token_logprobs"`
	TopLogprobs   []map[string]float64 `json:"top_logprobs"`
}

// PostCompletion posts body to base's /completions and returns the one
// choice's logprobs (nil when the answer has none) and the answer's
// usage.completion_tokens. A request that fails, or an answer that is not
// a 200 with one choice, fails t.
func PostCompletion(t *testing.T, base string, body map[string]any) (lp *CompletionLogprobs, completionTokens int) {
	t.Helper()
	b, _ := json.Marshal(body)
	resp, err := http.Post(base+"/completions", "application/json", bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var out struct {
		Choices []struct {
			Logprobs *CompletionLogprobs `json:"logprobs"`
		} `json:"choices"`
		Usage struct {
			CompletionTokens int `json:"completion_tokens"`
		} `json:"usage"`
	}
	if resp.StatusCode != http.StatusOK || json.Unmarshal(raw, &out) != nil || len(out.Choices) != 1 {
		t.Fatalf("HTTP %d: %s", resp.StatusCode, raw)
	}
	return out.Choices[0].Logprobs, out.Usage.CompletionTokens
}
