package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/glmbench/glmbench/bench/workload"
)

// newVLLMContext is a fake vLLM of a context of nCtx tokens that counts a
// chat as 12 template tokens and one per 4 bytes of its messages, and, as
// vLLM does (serving_engine's _validate_input), refuses with a 400 a
// request whose prompt plus max_tokens passes its context. refused counts
// the refusals.
func newVLLMContext(t *testing.T, nCtx int, refused *atomic.Int64) *httptest.Server {
	t.Helper()
	mux := http.NewServeMux()
	mux.HandleFunc("/v1/models", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, `{"object":"list","data":[{"id":"m","object":"model","owned_by":"vllm","max_model_len":%d}]}`, nCtx)
	})
	mux.HandleFunc("/v1/chat/completions", func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Messages []struct {
				Content string `json:"content"`
			} `json:"messages"`
			MaxTokens int `json:"max_tokens"`
		}
		b, _ := io.ReadAll(r.Body)
		if json.Unmarshal(b, &req) != nil {
			w.WriteHeader(400)
			return
		}
		n := 12
		for _, m := range req.Messages {
			n += (len(m.Content) + 3) / 4
		}
		out := max(req.MaxTokens, 1)
		if n+out > nCtx {
			refused.Add(1)
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(400)
			fmt.Fprintf(w, `{"object":"error","message":"This model's maximum context length is %d tokens. However, you requested %d tokens (%d in the messages, %d in the completion). Please reduce the length of the messages or completion.","type":"BadRequestError","param":null,"code":400}`, nCtx, n+out, n, out)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		for range out {
			io.WriteString(w, `data: {"id":"c","object":"chat.completion.chunk","model":"m","choices":[{"index":0,"delta":{"content":"a"},"finish_reason":null}]}`+"\n\n")
		}
		fmt.Fprintf(w, `data: {"id":"c","object":"chat.completion.chunk","model":"m","choices":[{"index":0,"delta":{},"finish_reason":"length"}],"usage":{"prompt_tokens":%d,"completion_tokens":%d,"total_tokens":%d}}`+"\n\ndata: [DONE]\n\n", n, out, n+out)
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

// A data set's item whose prompt is short but whose max_tokens is long can
// pass the context where the item of the longest prompt fits: the shape
// probe must pick the item a server's context check refuses (prompt plus
// max_tokens), found before any load, not the one of the most bytes.
func TestTheShapeProbeFindsTheDataSetItemThatOverflowsTheContext(t *testing.T) {
	t.Parallel()
	var refused atomic.Int64
	srv := newVLLMContext(t, 4000, &refused)
	o := llamaOptions(t, &llamaServer{Server: srv})
	path := filepath.Join(t.TempDir(), "d.jsonl")
	// Item 1: about 2,000 prompt tokens and 100 out, 2,100 in all (8,100
	// bytes and tokens together); item 2: about 1,000 and 3,100, 4,100
	// in all, past the context of 4,000 (7,100).
	line := func(words, maxTokens int) string {
		b, _ := json.Marshal(map[string]any{"prompt": strings.TrimSpace(strings.Repeat("abc ", words)), "max_tokens": maxTokens})
		return string(b) + "\n"
	}
	if err := os.WriteFile(path, []byte(line(2000, 100)+line(1000, 3100)), 0o644); err != nil {
		t.Fatal(err)
	}
	ph := workload.Phase{Name: "d", Kind: workload.Dataset, Path: path, Format: "jsonl"}
	reqs, err := ph.Expand(1)
	if err != nil {
		t.Fatal(err)
	}
	_, _, err = PrepareWorkload(context.Background(), o, []WorkPhase{{Phase: ph, Reqs: reqs}})
	if err == nil || !strings.Contains(err.Error(), "maximum context length is 4000") {
		t.Fatalf("err = %v, want the server's refusal of item 2 (prompt and max_tokens past its context) before any load", err)
	}
	t.Log(err)
	if refused.Load() != 1 {
		t.Errorf("%d requests refused, want only the probe of item 2", refused.Load())
	}
}
